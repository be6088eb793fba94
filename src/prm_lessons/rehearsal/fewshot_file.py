"""The rehearsal's stand-in of the Qwen2.5-Math harness's evaluation/examples.py (the few-shot
demonstrations of the Chinese multiple-choice sets, `prompt.fewshot` in config/paper.yaml).

The real file is fetched from GitHub at a pinned commit; the rehearsal runs offline, so
config/rehearsal.yaml points `prompt.fewshot.url` at this file (checksums off). It has the harness's
layout (``examples["gaokao"] = [(question, answer), ...]``, read by prm_lessons.generation.fewshot as data) but
the PROJECT's own two short demonstrations, not the harness's text.
"""
from __future__ import annotations

from pathlib import Path

from ..tables import write_text_atomic

STANDIN_DEMOS = [
    ("计算 $2+3\\times 4$ 的值是 ( )\n从以下选项中选择:\n(A) 14\n(B) 20\n(C) 24\n(D) 9",
     "先算乘法: $3\\times 4=12$, 再算加法: $2+12=14$。\n答案是 A"),
    ("方程 $2x-6=0$ 的解是 ( )\n从以下选项中选择:\n(A) $x=2$\n(B) $x=3$\n(C) $x=-3$\n(D) $x=6$",
     "移项得 $2x=6$, 两边除以 2 得 $x=3$。\n答案是 B"),
]


def write_fewshot_examples(path: Path) -> Path:
    """Write the stand-in examples.py (key ``gaokao``, two demonstrations) and return its path."""
    body = "".join(f"        ({q!r}, {a!r}),\n" for q, a in STANDIN_DEMOS)
    write_text_atomic(path, "# rehearsal stand-in of the harness's evaluation/examples.py (the project's demos)\n"
                    "def get_examples():\n    examples = {}\n"
                    f"    examples[\"gaokao\"] = [\n{body}    ]\n    return examples\n")
    return path
