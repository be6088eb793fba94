"""Figure 6's human path: an annotation sheet of the policy's correct-answer responses and the labels
it comes back with.

The paper (§3.2.1): "we randomly choose correct-answer responses from them and conduct thorough manual
annotations". :func:`sample_sheet` draws, per benchmark, `per_benchmark` responses at random (seeded: an
order by a SHA-256 hash of (seed, benchmark, problem, sample), independent of row order) among the
correct-answer responses of the first N samples; each row shows the problem and the numbered steps, with
empty label columns. :func:`read_labels` reads the sheet back, every row checked (errors name the row's
id); a row left blank is unlabelled and not counted. The cells are read by the checked readers of
`prm_lessons.fields` (`read_id`, `read_mark`, `read_step_number`), which take the text a spreadsheet writes
and cast nothing else. The rates: prm_lessons.evaluation.bias_analysis.human_flaw_rates.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Mapping

import pandas as pd

from ..fields import FieldError, read_id, read_mark, read_step_number
from ..tables import read_plain_csv, write_plain_csv
from . import clean_steps

SHEET_COLUMNS = ["id", "benchmark", "problem_id", "sample_idx", "n_steps", "problem", "steps",
                 "process_flawed", "first_error_step", "notes"]
LABEL_COLUMNS = ["process_flawed", "first_error_step", "notes"]


def numbered_steps(steps) -> str:
    """The steps as annotators read them: `[k] text`, 1-based, blank line between."""
    return "\n\n".join(f"[{k}] {s}" for k, s in enumerate(clean_steps(steps), start=1))


def _order(seed: int, benchmark: str, pid, idx) -> str:
    return hashlib.sha256(f"{seed}\x00{benchmark}\x00{pid}\x00{int(idx)}".encode()).hexdigest()


def sample_sheet(samples: Mapping[str, pd.DataFrame], per_benchmark: int, seed: int,
                 n: int | None = None) -> pd.DataFrame:
    """SHEET_COLUMNS rows: per benchmark (samples' keys, in order) at most `per_benchmark` random
    correct-answer responses with steps among sample_idx < n (None: all)."""
    if per_benchmark < 1:
        raise ValueError(f"analysis.fig6_annotation.per_benchmark: {per_benchmark}; the sheet needs at least 1")
    rows = []
    for bench, df in samples.items():
        need = [c for c in ("problem_id", "sample_idx", "question", "steps", "correct") if c not in df.columns]
        if need:
            raise ValueError(f"annotation sheet: the samples of '{bench}' lack column(s) {need}")
        d = df[df["correct"].fillna(False).astype(bool)]
        if n is not None:
            d = d[d["sample_idx"] < int(n)]
        # a boolean Series, not a list: an empty list would select no columns (a set with no correct answer)
        d = d[d["steps"].map(lambda s: bool(clean_steps(s))).astype(bool)]
        keys = [_order(seed, bench, p, i) for p, i in zip(d["problem_id"], d["sample_idx"])]
        d = d.assign(_key=keys).sort_values("_key").head(per_benchmark)
        for r in d.itertuples():
            rows.append({"id": f"{bench}/{r.problem_id}/{int(r.sample_idx)}", "benchmark": bench,
                         "problem_id": str(r.problem_id), "sample_idx": int(r.sample_idx),
                         "n_steps": len(clean_steps(r.steps)), "problem": str(r.question),
                         "steps": numbered_steps(r.steps), "process_flawed": "", "first_error_step": "",
                         "notes": ""})
    return pd.DataFrame(rows, columns=SHEET_COLUMNS)


def write_sheet(sheet: pd.DataFrame, path: str | Path) -> None:
    write_plain_csv(sheet, path)


def read_sheet(path: str | Path) -> pd.DataFrame:
    """A sheet as written (or filled in): every column as text, blanks as ''."""
    return read_plain_csv(path, dtype=str, keep_default_na=False)


def read_labels(path: str | Path, sheet: pd.DataFrame) -> pd.DataFrame:
    """The filled-in sheet at `path`, checked row by row against `sheet` (the exported one): ids known and
    unique, `process_flawed` yes/no (or blank: unlabelled), `first_error_step` blank or a step number
    1..n_steps, and only on a flawed row. Every error names its row's id; all of them in one ValueError.
    Returns id, benchmark, problem_id, sample_idx, labelled (bool), flawed (bool or None), first_error_step
    (Int64, 1-based)."""
    got = read_sheet(path)
    missing = [c for c in ("id", "process_flawed") if c not in got.columns]
    if missing:
        raise ValueError(f"{path}: no column(s) {missing} (the sheet's label columns: {LABEL_COLUMNS})")
    known = {str(r.id): r for r in sheet.itertuples()}
    errors, rows, seen = [], [], set()
    for k, r in enumerate(got.to_dict("records"), start=2):  # line 1 is the header
        cell = r["id"]
        rid = cell.strip() if isinstance(cell, str) else str(cell)
        where = f"row id {rid!r} (line {k})"
        try:
            rid = read_id(cell, where).strip()
        except FieldError as bad:
            errors.append(str(bad))
            continue
        if rid not in known:
            errors.append(f"{where}: not in the exported sheet")
            continue
        if rid in seen:
            errors.append(f"{where}: labelled twice")
            continue
        seen.add(rid)
        src = known[rid]
        try:  # a column the sheet lacks is a blank cell (first_error_step may be dropped)
            flawed = read_mark(r.get("process_flawed", ""), where, "process_flawed")
            first = read_step_number(r.get("first_error_step", ""), where, int(src.n_steps), "first_error_step")
        except FieldError as bad:
            errors.append(str(bad))
            continue
        if first is not None and flawed is not True:  # a first error only on a flawed process
            errors.append(f"{where}: first_error_step {first} on a row not marked process_flawed yes")
            continue
        rows.append({"id": rid, "benchmark": src.benchmark, "problem_id": src.problem_id,
                     "sample_idx": int(src.sample_idx), "labelled": flawed is not None,
                     "flawed": flawed, "first_error_step": first})
    if errors:
        raise ValueError(f"Figure 6 human labels {path}: {len(errors)} bad row(s):\n  " + "\n  ".join(errors[:20])
                         + (f"\n  … and {len(errors) - 20} more" if len(errors) > 20 else ""))
    out = pd.DataFrame(rows, columns=["id", "benchmark", "problem_id", "sample_idx", "labelled", "flawed",
                                      "first_error_step"])
    out["first_error_step"] = out["first_error_step"].astype("Int64")
    return out
