"""TRL's stepwise-supervision datasets as a training source, and every training set out in that format.

The format (TRL docs, "Dataset formats and types", stepwise supervision, standard format; e.g.
trl-lib/prm800k, trl-lib/math_shepherd, built by huggingface/trl examples/datasets/*.py): one row per
labelled solution,

* ``prompt``: the problem text (str);
* ``completions``: the solution's steps, in order (list of str);
* ``labels``: one boolean per step, whether that step is correct (list of bool, as long as
  ``completions``).

Other columns are ignored. Conversion (one instance per row, id ``{variant}-{row:07d}``, the 0-based row
of the file or split): labels True → 1, False → 0, cut after the first False (the paper's rule for every
source; TRL's PRM800K converter keeps the steps after a negative one), steps cut to match. A row whose
``completions`` is empty gives no instance (counted as ``no_steps``; TRL's PRM800K converter emits such
rows). Every other departure from the format is a malformed row: an error naming the row (``malformed:
error``, the default) or, with ``malformed: skip``, counted under its reason and named by id in the report
(`MALFORMED_REASONS`), as for Math-Shepherd.

`to_stepwise` writes a trainset table back in this format (labels ≥ 0.5 → True for hard labels; soft
labels need a threshold, as the MC hard labels: positive iff label > threshold).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd

from ..fields import FieldError, read_question, read_step_flags, read_step_labels, read_steps
from ..tables import atomic_path
from .human import deduplicate
from .math_shepherd import iter_rows

FIELDS = ("prompt", "completions", "labels")
MALFORMED_POLICIES = ("error", "skip")
MALFORMED_REASONS = {
    "not_an_object": "the row is not an object (a JSON line that does not parse, or not a mapping)",
    "missing_field": "a field of prompt / completions / labels is missing",
    "prompt_not_text": "`prompt` is not a non-empty string (a conversational prompt is not read)",
    "completions_not_list": "`completions` is not a list of strings",
    "labels_not_list": "`labels` is not a list",
    "label_not_bool": "a label is not a boolean (true / false)",
    "length_mismatch": "len(labels) != len(completions)",
    "empty_step": "a step (completion) without text",
}
MAX_IDS_PER_REASON = 1000  # ids kept in the report per reason (all are counted)


class StepwiseRowError(ValueError):
    """A row that is not in TRL's stepwise-supervision format; names the row and the reason."""

    def __init__(self, reason: str, where: str, detail: str = ""):
        super().__init__(f"{where}: {MALFORMED_REASONS[reason]}" + (f" ({detail})" if detail else ""))
        self.reason = reason


def row_id(name: str, row: int) -> str:
    return f"{name}-{int(row):07d}"


def check_row(rec, where: str) -> tuple[str, list[str], list[bool]]:
    """One row → (prompt, completions, labels), each field through its checked reader (prm_lessons.fields);
    raises StepwiseRowError naming `where` and the reason."""
    if not isinstance(rec, dict):
        raise StepwiseRowError("not_an_object", where)
    missing = [f for f in FIELDS if f not in rec or rec[f] is None]
    if missing:
        raise StepwiseRowError("missing_field", where, f"missing: {', '.join(missing)}")
    try:
        prompt = read_question(rec["prompt"], "", "prompt")
    except FieldError as exc:
        raise StepwiseRowError("prompt_not_text", where, str(exc)) from None
    try:
        steps = read_steps(rec["completions"], "", "completions", empty_ok=True)
    except FieldError as exc:
        raise StepwiseRowError("empty_step" if exc.blank else "completions_not_list", where, str(exc)) from None
    try:
        labels = read_step_flags(rec["labels"], "", "labels")
    except FieldError as exc:
        reason = "labels_not_list" if str(exc).startswith("labels is") else "label_not_bool"
        raise StepwiseRowError(reason, where, str(exc)) from None
    if len(labels) != len(steps):
        raise StepwiseRowError("length_mismatch", where, f"{len(labels)} labels, {len(steps)} completions")
    return prompt, steps, labels


def convert_stepwise(rows: Iterable, name: str, malformed: str = "error", limit: int | None = None,
                     dedupe: bool = False) -> tuple[list[dict], dict]:
    """Rows → (instances in trainset form, report). The report counts rows, instances, rows cut at a
    negative step, rows without steps, duplicates removed (`dedupe`: identical (question, steps), the
    first kept) and, with malformed ``skip``, malformed rows by reason with their ids."""
    if malformed not in MALFORMED_POLICIES:
        raise ValueError(f"malformed must be one of {MALFORMED_POLICIES}, not {malformed!r}")
    out: list[dict] = []
    counts: dict[str, int] = {}
    ids: dict[str, list[str]] = {}
    report = {"rows": 0, "instances": 0, "truncated": 0, "no_steps": 0, "malformed": 0}
    for i, rec in enumerate(rows):
        if limit is not None and i >= int(limit):
            break
        report["rows"] += 1
        where = f"{name}: row {i} (0-based, id {row_id(name, i)})"
        try:
            prompt, steps, labels = check_row(rec, where)
        except StepwiseRowError as bad:
            if malformed == "error":
                raise
            counts[bad.reason] = counts.get(bad.reason, 0) + 1
            kept = ids.setdefault(bad.reason, [])
            if len(kept) < MAX_IDS_PER_REASON:
                kept.append(row_id(name, i))
            continue
        if not steps:
            report["no_steps"] += 1
            continue
        cut = labels.index(False) + 1 if False in labels else len(labels)
        report["truncated"] += int(cut < len(labels))
        out.append({"instance_id": row_id(name, i), "question": prompt, "steps": steps[:cut],
                    "labels": [1.0 if v else 0.0 for v in labels[:cut]]})
    if dedupe:
        out, dup = deduplicate(out)
        report.update(dup)
    report["instances"] = len(out)
    report["malformed"] = sum(counts.values())
    report["malformed_by_reason"] = counts
    report["malformed_ids"] = ids
    return out, report


def malformed_lines(name: str, report: dict, show: int = 20) -> list[str]:
    """One log line per malformed reason: count, meaning and the first ids."""
    lines = []
    for reason, n in sorted(report.get("malformed_by_reason", {}).items()):
        some = report["malformed_ids"].get(reason, [])[:show]
        lines.append(f"{name}: {n} malformed row(s) skipped, {MALFORMED_REASONS[reason]}: {', '.join(some)}"
                     + (" …" if n > len(some) else ""))
    return lines


def stepwise_rows(spec: dict) -> Iterator:
    """The rows of a variant's `trl` spec: a local .jsonl(.gz) / .parquet file, or a Hub dataset split at
    the pinned revision (`datasets.load_dataset`; downloaded once into the datasets cache)."""
    if spec["source"] == "local":
        return iter_rows(spec["path"])
    import datasets  # lazy: heavy, and only the Hub source needs it

    ds = datasets.load_dataset(spec["id"], spec.get("config"), split=spec["split"], revision=spec["revision"])
    return iter(ds)


# -- export --------------------------------------------------------------------------------------------

def to_stepwise(df: pd.DataFrame, soft_threshold: float | None = None, where: str = "") -> list[dict]:
    """A trainset table → TRL stepwise rows {prompt, completions, labels}; question, steps and labels read by
    the checked readers (a null question is not written "None", a step that is not text not stringified),
    errors naming `where` (the file) and the instance. Hard labels (each 0 or 1) map to booleans; a table
    with any other label needs `soft_threshold` (True iff label > threshold, the MC hard-label rule), else a
    ValueError names the first such instance."""
    out = []
    for r in df.itertuples():
        at = f"{where + ': ' if where else ''}instance {r.instance_id}"
        question = read_question(r.question, at)
        steps = read_steps(r.steps, at)
        labels = read_step_labels(r.labels, at)
        if len(labels) != len(steps):
            raise ValueError(f"{at}: {len(labels)} labels, {len(steps)} steps")
        if soft_threshold is None:
            soft = [v for v in labels if v not in (0.0, 1.0)]
            if soft:
                raise ValueError(f"{at}: soft label {soft[0]:g}; TRL's labels are booleans: "
                                 "give a threshold (a step is positive iff its label > threshold)")
            marks = [v == 1.0 for v in labels]
        else:
            marks = [v > float(soft_threshold) for v in labels]
        out.append({"prompt": question, "completions": steps, "labels": marks})
    return out


def write_stepwise(rows: list[dict], path: str | Path) -> None:
    """Rows to a .jsonl or .parquet file (by suffix), written whole then moved into place."""
    path = Path(path)
    if path.suffix not in (".jsonl", ".parquet"):
        raise ValueError(f"{path}: the output must end in .jsonl or .parquet")
    with atomic_path(path) as tmp:
        if path.suffix == ".parquet":
            pd.DataFrame(rows, columns=list(FIELDS)).to_parquet(tmp, index=False)
        else:
            with open(tmp, "w") as fh:
                fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
