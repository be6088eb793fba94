"""The rehearsal's stand-in of the Qwen2.5-Math harness's evaluation/examples.py (the few-shot
demonstrations of the Chinese multiple-choice sets and of MMLU STEM, `prompt.fewshot` in config/paper.yaml).

The real file is fetched from GitHub at a pinned commit; the rehearsal runs offline, so
config/rehearsal.yaml points `prompt.fewshot.url` at this file (checksums off). It has the harness's
layout (``examples["gaokao"] = [(question, answer), ...]``, ``examples["mmlu_stem"] = ...``, read by
prm_lessons.generation.fewshot as data) but the PROJECT's own two short demonstrations per key, not the
harness's text. Each key's demos follow the layout of the harness's list they stand in for: Chinese options
and "答案是 X" for gaokao, "\\nAnswer Choices: (A) …" and "The answer is (X)." for mmlu_stem.
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
STANDIN_MMLU_DEMOS = [
    ("What is the value of $3^2 + 4^2$?\nAnswer Choices: (A) 7 (B) 14 (C) 25 (D) 49",
     "Squaring gives $3^2=9$ and $4^2=16$, and $9+16=25$. The answer is (C)."),
    ("Which quantity is measured in newtons?\nAnswer Choices: (A) Force (B) Energy (C) Power (D) Mass",
     "A newton is a kilogram metre per second squared, the unit of mass times acceleration, which is "
     "force. The answer is (A)."),
]
STANDIN = {"gaokao": STANDIN_DEMOS, "mmlu_stem": STANDIN_MMLU_DEMOS}  # key -> demos, as examples[key]


def write_fewshot_examples(path: Path) -> Path:
    """Write the stand-in examples.py (keys ``gaokao`` and ``mmlu_stem``, two demonstrations each) and
    return its path."""
    lists = "".join(f"    examples[\"{key}\"] = [\n" + "".join(f"        ({q!r}, {a!r}),\n" for q, a in demos)
                    + "    ]\n" for key, demos in STANDIN.items())
    write_text_atomic(path, "# rehearsal stand-in of the harness's evaluation/examples.py (the project's demos)\n"
                    "def get_examples():\n    examples = {}\n" + lists + "    return examples\n")
    return path
