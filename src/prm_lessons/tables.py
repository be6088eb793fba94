"""Intermediate tables and the package's file I/O: Parquet with a documented schema
(docs/architecture.md), checked on read and write so a stage fails with the offending file and column,
not three rules later; the one record reader (JSONL / JSON / Parquet), JSON writer and shard merger."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

# kind -> required columns (extra columns are allowed and kept)
SCHEMAS: dict[str, list[str]] = {
    "problems": ["problem_id", "dataset", "question", "answer", "gold_steps"],
    "samples": ["problem_id", "sample_idx", "dataset", "question", "answer", "response", "steps",
                "pred", "correct", "grade_status", "n_tokens", "finish_reason"],
    "processbench": ["id", "subset", "generator", "problem", "steps", "final_answer_correct", "label"],
    "mc": ["problem_id", "sample_idx", "n_success", "n_total", "tokens_generated"],
    "judge": ["problem_id", "sample_idx", "first_error", "verdicts", "parsed"],
    "trainset": ["instance_id", "question", "steps", "labels"],
    "step_scores": ["problem_id", "sample_idx", "step_scores"],
    "pb_scores": ["id", "subset", "step_scores"],
}
# kind -> columns that identify a row (must be unique)
KEYS: dict[str, list[str]] = {
    "problems": ["problem_id"],
    "samples": ["problem_id", "sample_idx"],
    "processbench": ["id"],
    "mc": ["problem_id", "sample_idx"],
    "judge": ["problem_id", "sample_idx"],
    "trainset": ["instance_id"],
    "step_scores": ["problem_id", "sample_idx"],
    "pb_scores": ["id"],
}


class TableError(ValueError):
    pass


def check_table(df: pd.DataFrame, kind: str, where: str = "") -> pd.DataFrame:
    if kind not in SCHEMAS:
        raise TableError(f"unknown table kind '{kind}'")
    missing = [c for c in SCHEMAS[kind] if c not in df.columns]
    if missing:
        raise TableError(f"{where or kind}: missing column(s) {missing} for a '{kind}' table")
    dup = df.duplicated(KEYS[kind], keep=False)
    if dup.any():
        first = df.loc[dup, KEYS[kind]].iloc[0].to_dict()
        raise TableError(f"{where or kind}: duplicate row id {first} in a '{kind}' table")
    return df


def write_table(df: pd.DataFrame, path: str | Path, kind: str, meta: dict | None = None) -> None:
    """Validate and write atomically (tmp file + rename), so a killed job leaves no half-written table."""
    check_table(df, kind, str(path))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    df.to_parquet(tmp, index=False)
    if meta is not None:

        table = pq.read_table(tmp)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               b"prm_lessons": json.dumps(meta, default=str).encode()})
        pq.write_table(table, tmp)
    os.replace(tmp, path)


def read_table(path: str | Path, kind: str | None) -> pd.DataFrame:
    """A Parquet table with list columns as Python lists, checked against `kind`'s schema (None: any
    Parquet file, unchecked)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such table")
    df = pd.read_parquet(path)
    # Parquet gives numpy arrays for list columns; the contract is Python lists
    for col in df.columns:
        if df[col].dtype == object and any(isinstance(v, np.ndarray) for v in df[col].head(20)):
            df[col] = df[col].map(lambda v: v.tolist() if isinstance(v, np.ndarray) else v)
    return df if kind is None else check_table(df, kind, str(path))


def merge_shards(paths, kind: str) -> tuple[pd.DataFrame, dict]:
    """Shard tables of one kind → one table sorted by its key (a row in two shards is an error, raised
    by check_table), and the first shard's metadata."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    frames = [read_table(p, kind) for p in paths]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SCHEMAS[kind])
    df = df.sort_values(KEYS[kind]).reset_index(drop=True)
    return check_table(df, kind, f"merge of {len(paths)} '{kind}' shards"), (table_meta(paths[0]) if paths else {})


def table_meta(path: str | Path) -> dict:
    md = pq.read_schema(path).metadata or {}
    raw = md.get(b"prm_lessons")
    return json.loads(raw) if raw else {}


def _suffix(path: Path) -> str:
    return "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix


def iter_records(path: str | Path):
    """Rows of a .jsonl(.gz) file one at a time (PRM800K is too large to hold as dicts); a bad line
    names its file and line number."""

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}: line {n} is not valid JSON ({exc.msg})") from None


def read_records(path: str | Path) -> list[dict]:
    """Rows of a local .jsonl(.gz) / .json (list of objects, or {"data": [...]}) / .parquet file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    suffix = _suffix(path)
    if suffix in (".jsonl", ".jsonl.gz"):
        return list(iter_records(path))
    if suffix == ".json":
        with open(path) as fh:
            data = json.load(fh)
        if isinstance(data, dict):
            data = data.get("data", data.get("rows"))
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of objects (or {{'data': [...]}})")
        return data
    if suffix == ".parquet":
        return pd.read_parquet(path).to_dict("records")
    raise ValueError(f"{path}: unsupported file type '{suffix}' (use .jsonl, .json or .parquet)")


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)  # paths, timestamps: provenance records them as text


def write_json(obj, path: str | Path) -> None:
    """Indented JSON (numpy scalars as numbers, NaN kept as NaN) with a trailing newline."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=_json_default, allow_nan=True) + "\n")
