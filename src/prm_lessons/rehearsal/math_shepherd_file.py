"""A small Math-Shepherd file in the released format (`labels.math_shepherd` describes it), for the
rehearsal: config/rehearsal.yaml points `math_shepherd` at it, so rule math_shepherd_labels and the
math_shepherd variant run the paper path offline. Its labels are made by a fixed rule, NOT by Math-
Shepherd's MC estimation."""
from __future__ import annotations

import json
from pathlib import Path

from ..labels.math_shepherd import TAG
from ..steps import split_steps
from ..tables import write_text_atomic


def shepherd_row(question: str, steps: list[str], marks: str, task: str = "MATH") -> dict:
    """One row: `input` with the tag after every `Step k:` step, `label` with each tag replaced by its mark."""
    body = [f"Step {k}: {s} {TAG}" for k, s in enumerate(steps, 1)]
    text = question + " " + "\n".join(body)
    it = iter(marks)
    label = "".join(next(it) if i % 2 else piece for i, piece in enumerate(_with_tags(text)))
    return {"input": text, "label": label, "task": task}


def _with_tags(text: str) -> list[str]:
    """text cut around every tag: [piece, TAG, piece, TAG, ..., piece]."""
    pieces = text.split(TAG)
    out = [pieces[0]]
    for p in pieces[1:]:
        out += [TAG, p]
    return out


def write_math_shepherd(path: Path, source: Path, first: int = 80, count: int = 20) -> int:
    """math-shepherd.jsonl from `source` (../shared/data/bon/math_cot_100_samples.jsonl): problems `first`
    .. `first+count-1` (not those of the PRM800K stand-in, and past the few MATH problems a rehearsal
    evaluates) with their first two sampled responses split into steps at blank lines.

    Marks: a response graded correct is `+` throughout; an incorrect one `+` before its middle step, `-`
    there and alternating after it (Math-Shepherd's estimates need not stay negative; the reader cuts
    after the first `-`). One more row has a mark that is neither, so the malformed-row count runs.
    Returns the rows written."""
    rows = [json.loads(line) for line in Path(source).read_text().splitlines() if line.strip()]
    rows = rows[first:first + count]
    if not rows:
        raise ValueError(f"{source}: no problems at index {first}..{first + count - 1}")
    out = []
    for row in rows:
        for resp, ok in list(zip(row.get("code") or [], row.get("score") or []))[:2]:
            steps = split_steps(resp)
            if not steps:
                continue
            if ok:
                marks = "+" * len(steps)
            else:
                bad = len(steps) // 2
                marks = "+" * bad + "".join("-+"[i % 2] for i in range(len(steps) - bad))
            out.append(shepherd_row(row["question"], steps, marks))
    at = out[0]["input"].index(TAG)  # the first step's mark
    out.append({**out[0], "label": out[0]["label"][:at] + "?" + out[0]["label"][at + 1:]})
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out))
    return len(out)
