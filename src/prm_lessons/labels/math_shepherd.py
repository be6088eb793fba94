"""Math-Shepherd's released step labels (Wang et al. 2024; Hub dataset `peiyi9979/Math-Shepherd`, ~445k
rows) as a training source: the "MC estimation (Math-Shepherd)" / Qwen2.5-Math-7B-Math-Shepherd rows of
the paper (Tables 3-7 and 13, Figures 7-9).

The format, as verified (2026-11) against the dataset card at revision ae6b0c54 (README.md: fields
`input`, `label`, `task`; its example shows each tag replaced by one character) and against TRL's
converter (huggingface/trl examples/datasets/math_shepherd.py, run over all rows to build
trl-lib/math_shepherd, which indexes `label` at each tag's position once the two-character tag is one
character): one JSON object per line of `math-shepherd.jsonl`,

* ``input``: the question, then the solution; its steps start ``Step k:`` and each ends with the tag
  ``ки`` (the question carries no tag, so the first step begins at the last ``Step 1:`` before the
  first tag);
* ``label``: the same text with each tag replaced by one character, ``+`` (the step can still reach
  the gold answer: Math-Shepherd's hard MC estimate) or ``-``;
* ``task``: ``GSM8K`` or ``MATH``.

Conversion (one instance per row, id ``math_shepherd-{row:07d}``, the 0-based row of the file):
labels ``+`` → 1, ``-`` → 0, cut after the first 0 (the paper's rule for every source), steps cut to
match; the ``Step k:`` prefix is removed from each step unless ``strip_step_prefix`` is off (INFERRED:
the paper does not say how it formatted this data; the policy responses its PRMs score have no such
prefixes). The steps then go through the same step-format contract as every source
(`steps.build_prm_input`, at training time). A row that does not read this way is never an error: it is
counted under its reason and named by id in the report (`MALFORMED_REASONS`).

The fields are read by the checked readers of `prm_lessons.fields` (a refusal is the row's reason):
``input`` and ``label`` are non-blank text (`read_text`; null, a number, an object, a bool or a blank text
is `missing_field`); ``task`` is optional text (`read_text(optional=True)`): absent or null (NaN in a
parquet copy) is no task (``dataset`` None), any other value that is not non-blank text (a number, a bool,
an object, a blank text) is `bad_task`, never silently dropped to None.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable, Iterator

from ..fields import FieldError, read_text
from ..tables import RowError, iter_lines, loads_strict

TAG = "ки"
LABEL_CHARS = {"+": 1.0, "-": 0.0}
SOURCE = "math_shepherd"
MALFORMED_REASONS = {
    "not_an_object": "the line is not a JSON object",
    "missing_field": "`input` or `label` is missing, null, blank or not text",
    "bad_task": "`task` is given but is not text (or is blank)",
    "no_tag": "`input` has no step tag",
    "label_mismatch": "`label` is not `input` with each tag replaced by + or -",
    "no_first_step": "no `Step 1:` before the first tag (question and steps cannot be told apart)",
    "empty_question": "no question text before `Step 1:`",
    "empty_step": "a step without text",
}
MAX_IDS_PER_REASON = 1000  # ids kept in the report per reason (all are counted)
_FIRST_STEP = re.compile(r"step\s*1\s*:", re.IGNORECASE)
_STEP_PREFIX = re.compile(r"^\s*step\s*\d+\s*:\s*", re.IGNORECASE)


class MalformedRow(ValueError):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(MALFORMED_REASONS[reason] + (f" ({detail})" if detail else ""))
        self.reason = reason


def row_id(row: int) -> str:
    return f"{SOURCE}-{int(row):07d}"


def _field(rec: dict, key: str, reason: str, where: str, optional: bool = False):
    """rec[key] through the checked text reader; a refusal is the row's `reason` (the reader's message its
    detail)."""
    try:
        return read_text(rec.get(key), f"{where}field '{key}'", key, optional=optional)
    except FieldError as bad:
        raise MalformedRow(reason, str(bad)) from None


def convert_row(rec, strip_step_prefix: bool = True, where: str = "") -> dict:
    """One Math-Shepherd row → {question, steps, labels, task} (labels cut after the first negative);
    raises MalformedRow with the reason. `where`: the row's name in a refusal's detail."""
    if not isinstance(rec, dict):
        raise MalformedRow("not_an_object")
    where = f"{where} " if where else ""
    text = _field(rec, "input", "missing_field", where)
    label = _field(rec, "label", "missing_field", where)
    task = _field(rec, "task", "bad_task", where, optional=True)
    pieces = text.split(TAG)
    n = len(pieces) - 1
    if n == 0:
        raise MalformedRow("no_tag")
    # label = input with each (two-character) tag replaced by one character
    if len(label) != len(text) - n * (len(TAG) - 1):
        raise MalformedRow("label_mismatch")
    marks, at = [], 0
    for piece in pieces[:-1]:
        at += len(piece)
        ch = label[at]
        if ch not in LABEL_CHARS:
            raise MalformedRow("label_mismatch")
        marks.append(LABEL_CHARS[ch])
        at += 1
    head = pieces[0]
    starts = list(_FIRST_STEP.finditer(head))
    if not starts:
        raise MalformedRow("no_first_step")
    cut = starts[-1].start()
    question = head[:cut].strip()
    if not question:
        raise MalformedRow("empty_question")
    steps = [head[cut:]] + pieces[1:-1]  # the text after the last tag is not a step
    steps = [(_STEP_PREFIX.sub("", s, count=1) if strip_step_prefix else s).strip() for s in steps]
    if not all(steps):
        raise MalformedRow("empty_step")
    labels: list[float] = []
    for v in marks:  # truncated after the first negative step
        labels.append(v)
        if v == 0.0:
            break
    return {"question": question, "steps": steps[: len(labels)], "labels": labels, "task": task}


def convert_math_shepherd(rows: Iterable, strip_step_prefix: bool = True,
                          limit: int | None = None) -> tuple[list[dict], dict]:
    """Rows (objects; anything else is a malformed row) → (instances, report). The report counts rows,
    instances, rows cut at a negative step, and malformed rows by reason with their ids."""
    out: list[dict] = []
    counts: dict[str, int] = {}
    ids: dict[str, list[str]] = {}
    report = {"rows": 0, "instances": 0, "truncated": 0, "malformed": 0}
    for i, rec in enumerate(rows):
        if limit is not None and i >= int(limit):
            break
        report["rows"] += 1
        try:
            inst = convert_row(rec, strip_step_prefix, where=row_id(i))
        except MalformedRow as bad:
            counts[bad.reason] = counts.get(bad.reason, 0) + 1
            kept = ids.setdefault(bad.reason, [])
            if len(kept) < MAX_IDS_PER_REASON:
                kept.append(row_id(i))
            continue
        report["truncated"] += int(inst["labels"][-1] == 0.0)
        out.append({"instance_id": row_id(i), "question": inst["question"], "steps": inst["steps"],
                    "labels": inst["labels"], "dataset": inst["task"]})
    report["instances"] = len(out)
    report["malformed"] = sum(counts.values())
    report["malformed_by_reason"] = counts
    report["malformed_ids"] = ids
    return out, report


def malformed_lines(report: dict, show: int = 20) -> list[str]:
    """One log line per malformed reason: count, meaning and the first ids."""
    lines = []
    for reason, n in sorted(report.get("malformed_by_reason", {}).items()):
        some = report["malformed_ids"].get(reason, [])[:show]
        lines.append(f"math_shepherd: {n} malformed row(s), {MALFORMED_REASONS[reason]}: {', '.join(some)}"
                     + (" …" if n > len(some) else ""))
    return lines


def iter_rows(path: str | Path) -> Iterator:
    """Rows of a .jsonl(.gz) or .parquet file one at a time; a line that is not JSON is yielded as None
    (a malformed row), so one bad line costs one row, not the run."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # lazy: only a parquet copy needs it

        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
            yield from batch.to_pylist()
        return
    for _, raw in iter_lines(path):  # a damaged .gz names the file and line
        if not raw.strip():
            continue
        try:  # loads_strict: a repeated key, NaN/Infinity or deep nesting is a malformed row too
            yield loads_strict(raw.decode("utf-8"), constants=False)
        except (UnicodeDecodeError, json.JSONDecodeError, RowError):
            yield None


def math_shepherd_file(spec: dict) -> str:
    """The local path of the Math-Shepherd file (`math_shepherd` config section; downloaded at the pinned
    revision when `source: hub`)."""
    if spec["source"] == "local":
        return str(spec["path"])
    from huggingface_hub import hf_hub_download  # lazy: only the Hub source needs the Hub client

    return hf_hub_download(spec["id"], filename=spec["file"], repo_type="dataset", revision=spec.get("revision"))
