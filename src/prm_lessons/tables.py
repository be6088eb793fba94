"""Intermediate tables and the package's file I/O: Parquet with a documented schema
(docs/architecture.md), checked on read and write so a stage fails with the offending file and column,
not three rules later; the one record reader (JSONL / JSON / Parquet), JSON writer and shard merger.

Integrity: every table is written with Parquet's own page checksums (CRC32 per data page, the format's
content checksum; pyarrow verifies them on read) and records its kind and row count in the file's
metadata. A truncated file (no footer), a flipped byte in a data page, a row count or a kind that differs
from what was recorded: read_table raises CorruptTableError naming the file and what is wrong. The rule
adapter (workflow/scripts/run.py) then moves a corrupt input that a rule wrote (under results/) aside, so
the next run regenerates it with its producer rule instead of feeding it to consumers; a file of the
user's (anywhere else, or one the config names) is never moved: the job stops naming it (quarantine).

The CSV stage tables (results/tables/{bon,judge_bon,search,bon_baselines,processbench,trainsets,
process_check,process_check_bon,label_audit}.csv) go through write_csv / read_csv: the same column and key checks
plus dtypes (CSV_DTYPES; fractions, never percent), an atomic write, and a sidecar <table>.csv.integrity.json
with the kind, row count and SHA-256. Every CSV the package writes (these and write_plain_csv's: the
artifacts' cells, the annotation sheet) holds no spreadsheet formula: a text cell starting with =, +, -, @
is written with a leading apostrophe, which the readers drop (prm_lessons.text_rule, CSV).

Every table, CSV, JSON, text and figure file that the package writes goes through atomic_path (or
write_table / write_csv / write_plain_csv / write_json / write_text_atomic on it): a killed job or a full
disk leaves the old file or none, never a part. Not through it: model weights and tokenizers saved by
transformers, peft, safetensors or torch (save_pretrained, save_file, torch.save), and the few writes that
tests/workflow/test_claims.py allows by name, each with its own temporary file or a reason (that test
fails on any other direct write). read_json names the file it could not read."""
from __future__ import annotations

import codecs
import contextlib
import errno
import gzip
import hashlib
import json
import os
import re
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from prm_lessons.text_rule import csv_frame, csv_frame_read, csv_write_options

# kind -> required columns (extra columns are allowed and kept)
SCHEMAS: dict[str, list[str]] = {
    "problems": ["problem_id", "dataset", "question", "answer", "gold_steps"],
    # a policy's responses as sampled (rule sample, merge_samples): what the scoring jobs read
    "responses": ["problem_id", "sample_idx", "dataset", "question", "answer", "response", "steps",
                  "n_tokens", "finish_reason"],
    # the responses graded (rule grade_samples): what the metrics and labels read
    "samples": ["problem_id", "sample_idx", "dataset", "question", "answer", "response", "steps",
                "pred", "correct", "grade_status", "n_tokens", "finish_reason"],
    "processbench": ["id", "subset", "generator", "problem", "steps", "final_answer_correct", "label"],
    "mc": ["problem_id", "sample_idx", "n_success", "n_total", "tokens_generated"],
    "judge": ["problem_id", "sample_idx", "first_error", "verdicts", "parsed"],
    "trainset": ["instance_id", "question", "steps", "labels"],
    # keys and scores only: a consumer joins them with the samples (join_scores), so a regrade rescores nothing
    "step_scores": ["problem_id", "sample_idx", "step_scores"],
    "pb_scores": ["id", "subset", "step_scores"],
    # PRMBench cases (data.prmbench): 0-based steps and error steps, `correct` = an original process
    "prmbench": ["id", "pair_id", "classification", "problem", "steps", "error_steps"],
    "bon_judge": ["dataset", "problem_id", "sample_idxs", "selected_idx", "n_unparsable", "tokens_generated"],
    "critic": ["id", "subset", "label", "prediction", "status", "verdicts"],
    # the arithmetic process checker's verdicts on a policy's samples (rule process_check_labels)
    "checker": ["problem_id", "sample_idx", "n_steps", "step_verdicts", "first_error", "n_checkable"],
    # CSV stage tables (results/tables/<stem>.csv, written and read by write_csv / read_csv): the columns
    # a consumer needs; CSV_DTYPES lists every column they may hold, FRACTIONS those in fractions
    "bon_csv": ["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high"],
    "judge_bon_csv": ["prm", "judge", "mode", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high",
                      "n_problems"],
    "search_csv": ["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high", "n_problems"],
    "bon_baselines_csv": ["benchmark", "n_problems", "n", "pass", "maj", "mean_acc"],
    "processbench_csv": ["prm", "subset", "n", "error_acc", "correct_acc", "f1"],
    # PRMScore per PRM and column (overall, error type, dimension), the published one beside it
    "prmbench_csv": ["prm", "column", "n", "f1", "negative_f1", "prmscore", "published"],
    # head-only PRMs with resample heads: F1 with training variance and paired differences (metrics.resampled)
    "processbench_paired_csv": ["prm_a", "prm_b", "subset", "n_cases", "n_resamples", "value", "ci_low", "ci_high"],
    # the labelling judge as a ProcessBench critic, per setting (judge.reference off / on)
    "judge_processbench_csv": ["judge", "subset", "n", "error_acc", "correct_acc", "f1", "delta_f1_structure",
                               "delta_ci_low", "delta_ci_high"],
    "trainsets_csv": ["variant", "source", "label_type", "n_instances", "n_steps", "positive_rate",
                      "retained_fraction"],
    "process_check_csv": ["subset", "kind", "metric", "k", "n", "rate", "ci_low", "ci_high"],
    "process_check_bon_csv": ["benchmark", "metric", "n", "count", "total", "value", "ci_low", "ci_high"],
    # the label audit (labels.audit_slice, labels.audit): constructed solutions with exact step truth, and
    # their MC completions (every K kept: outcomes) with the judge's verdict
    "audit_slice": ["problem_id", "sample_idx", "generator", "kind", "question", "answer", "steps", "error_index"],
    "audit_labels": ["problem_id", "sample_idx", "n_steps", "k", "n_success", "n_total", "outcomes",
                     "judge_first_error", "tokens_generated"],
    "label_audit_csv": ["section", "source", "generator", "kind", "metric", "n", "value", "ci_low", "ci_high"],
}
# kind -> columns that identify a row (must be unique)
KEYS: dict[str, list[str]] = {
    "problems": ["problem_id"],
    "responses": ["problem_id", "sample_idx"],
    "samples": ["problem_id", "sample_idx"],
    "processbench": ["id"],
    "mc": ["problem_id", "sample_idx"],
    "judge": ["problem_id", "sample_idx"],
    "trainset": ["instance_id"],
    "step_scores": ["problem_id", "sample_idx"],
    "pb_scores": ["id"],
    "prmbench": ["id"],
    "bon_judge": ["problem_id"],
    "critic": ["id"],
    "checker": ["problem_id", "sample_idx"],
    # `policy` is optional in these (a table without it holds one policy's rows) and a key where present
    "bon_csv": ["policy", "prm", "benchmark", "metric", "n"],
    "judge_bon_csv": ["policy", "prm", "benchmark", "metric", "n"],
    "search_csv": ["prm", "benchmark", "metric", "n"],
    "bon_baselines_csv": ["policy", "benchmark", "n"],
    "processbench_csv": ["prm", "subset"],
    "prmbench_csv": ["prm", "column"],
    "processbench_paired_csv": ["prm_a", "prm_b", "subset"],
    "judge_processbench_csv": ["judge", "subset"],
    "trainsets_csv": ["variant"],
    "process_check_csv": ["subset", "kind", "metric"],
    "process_check_bon_csv": ["benchmark", "metric"],
    "audit_slice": ["problem_id", "sample_idx"],
    "audit_labels": ["problem_id", "sample_idx"],
    "label_audit_csv": ["section", "source", "generator", "kind", "threshold", "k_used", "metric"],
}
# CSV kind -> {column: "str" | "int" | "float" | "fraction"} for every column the table may hold: "int"
# and "float" must parse as numbers (empty = missing), "int" be whole, "fraction" lie in [-1, 1]
# (accuracies, rates and their intervals in [0, 1]; paired differences in [-1, 1]). A fraction column is
# never percent: percent exists only where numbers are rendered (artifacts/cells, the report, LaTeX).
# `n` is the Best-of-N N in the Best-of-N tables, the number of cases in processbench_csv.
CSV_DTYPES: dict[str, dict[str, str]] = {
    "bon_csv": {"policy": "str", "prm": "str", "benchmark": "str", "metric": "str", "n": "int",
                "accuracy": "fraction", "ci_low": "fraction", "ci_high": "fraction", "run": "str"},
    "judge_bon_csv": {"policy": "str", "prm": "str", "judge": "str", "mode": "str", "model": "str",
                      "benchmark": "str", "metric": "str", "n": "int", "accuracy": "fraction",
                      "ci_low": "fraction", "ci_high": "fraction", "n_problems": "int", "n_unparsable": "int",
                      "run": "str"},
    "search_csv": {"run": "str", "prm": "str", "benchmark": "str", "metric": "str", "n": "int",
                   "accuracy": "fraction", "ci_low": "fraction", "ci_high": "fraction", "n_problems": "int"},
    "bon_baselines_csv": {"policy": "str", "run": "str", "benchmark": "str", "n_problems": "int", "n": "int",
                          "pass": "fraction", "maj": "fraction", "mean_acc": "fraction"},
    "processbench_csv": {"prm": "str", "subset": "str", "n": "int", "error_acc": "fraction",
                         "correct_acc": "fraction", "f1": "fraction", "f1_ci_low": "fraction",
                         "f1_ci_high": "fraction", "n_unparsed": "int", "threshold": "str",
                         "tuned_on": "str", "delta_f1_structure": "fraction", "delta_ci_low": "fraction",
                         "delta_ci_high": "fraction", "setting": "str", "run": "str"},
    # published: the PRMBench paper's PRMScore as a fraction (empty: no published row, or a stand-in set)
    "prmbench_csv": {"prm": "str", "column": "str", "classification": "str", "n": "int", "f1": "fraction",
                     "negative_f1": "fraction", "prmscore": "fraction", "published": "fraction",
                     "published_label": "str", "threshold": "float", "data": "str", "run": "str"},
    # value: an average F1 (prm_b empty) or a paired F1 difference (prm_a − prm_b)
    "processbench_paired_csv": {"prm_a": "str", "prm_b": "str", "subset": "str", "n_cases": "int",
                                "n_resamples": "int", "value": "fraction", "ci_low": "fraction",
                                "ci_high": "fraction", "run": "str"},
    "judge_processbench_csv": {"judge": "str", "reference": "str", "configured": "str", "subset": "str", "n": "int",
                               "error_acc": "fraction", "correct_acc": "fraction", "f1": "fraction",
                               "f1_ci_low": "fraction", "f1_ci_high": "fraction", "n_unparsed": "int",
                               "delta_f1_structure": "fraction", "delta_ci_low": "fraction",
                               "delta_ci_high": "fraction", "tokens_generated": "int", "setting": "str", "run": "str"},
    "trainsets_csv": {"variant": "str", "source": "str", "label_type": "str", "threshold": "float",
                      "n_instances": "int", "paper_n_instances": "int", "n_steps": "int",
                      "positive_rate": "fraction", "retained_fraction": "fraction", "run": "str"},
    # k of n (rate = k / n): the checker's validation on the constructed ProcessBench set
    "process_check_csv": {"subset": "str", "kind": "str", "metric": "str", "k": "int", "n": "int",
                          "rate": "fraction", "ci_low": "fraction", "ci_high": "fraction", "run": "str"},
    # n = the Best-of-N N; count of total (value = count / total)
    "process_check_bon_csv": {"benchmark": "str", "metric": "str", "n": "int", "count": "int", "total": "int",
                              "value": "fraction", "ci_low": "fraction", "ci_high": "fraction", "run": "str"},
    # value: a share (accuracy, precision, share kept, truth rate), a Brier score / ECE, or a token count
    "label_audit_csv": {"section": "str", "source": "str", "generator": "str", "kind": "str", "threshold": "float",
                        "k_used": "int", "metric": "str", "n": "int", "successes": "int", "value": "float",
                        "ci_low": "fraction", "ci_high": "fraction", "run": "str"},
}
FRACTIONS: dict[str, list[str]] = {k: [c for c, t in d.items() if t == "fraction"] for k, d in CSV_DTYPES.items()}


META_KEY = b"prm_lessons"  # the producer's metadata (JSON), table_meta
INTEGRITY_KEY = b"prm_lessons.integrity"  # {"kind", "rows"} recorded by write_table, checked by read_table


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """The one atomic writer: yields a temporary file `.<name>.<random>.tmp` in path's folder for the caller
    to write (unique: two writers to one output never share it, so the file left is one writer's whole
    output); on success the bytes are flushed to disk and moved onto `path` (os.replace: a reader sees the
    old file or the new one), on any error the temporary file is removed. An existing path that is not a
    regular file (/dev/stdout, a FIFO, /dev/full) cannot be replaced: it is yielded itself. An OSError of
    the write names `path`."""
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        try:
            yield path
        except OSError as exc:
            raise _named(exc, path) from None
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        try:
            fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError as exc:  # it names the random name tried: _named names the output instead
            raise _named(exc, path, exc.filename) from None
        tmp = Path(name)
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would make the output private
        finally:
            os.close(fd)
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # the bytes on disk before the name: a crash leaves the old file, not an empty one
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise (exc if tmp is None and exc.filename == str(path) else _named(exc, path, tmp)) from None
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask, without changing it where /proc says it (os.umask alone must set one)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _named(exc: OSError, path: Path, tmp: Path | None = None) -> OSError:
    """exc about `path` (its temporary file or no file at all: ENOSPC at close names none)."""
    if exc.filename not in (None, str(tmp), tmp, str(path), path) or exc.errno is None:
        return exc  # another file's error (an input read inside the block)
    return type(exc)(exc.errno, f"cannot write: {exc.strerror or exc}", str(path))


def write_text_atomic(path: str | Path, text: str) -> None:
    """`text` (UTF-8) to `path` through atomic_path."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)


def read_json(path: str | Path):
    """A JSON file written by this workflow (or a model's config.json); a missing, unreadable or invalid
    file is an error naming it (ValueError, or FileNotFoundError)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply") from None
    except ValueError as exc:  # a number of more than 4,300 digits
        raise ValueError(f"{path}: {str(exc).split(';')[0]}") from None


def _to_csv(df: pd.DataFrame, path: Path) -> None:
    """The one place the package writes CSV: no formula cell, a carriage return kept in its cell (text_rule)."""
    out = csv_frame(df)
    out.to_csv(path, index=False, **csv_write_options(out))


def write_plain_csv(df: pd.DataFrame, path: str | Path) -> None:
    """A CSV of any columns (a report table, an annotation sheet) through atomic_path, no cell a spreadsheet
    formula (text_rule.csv_frame); stage tables with a kind go through write_csv."""
    with atomic_path(path) as tmp:
        _to_csv(df, tmp)


def read_plain_csv(path: str | Path, **read_csv_kw) -> pd.DataFrame:
    """pd.read_csv with an unreadable file named (ValueError / FileNotFoundError), its text cells as
    write_plain_csv was given them (text_rule.csv_frame_read)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        return csv_frame_read(pd.read_csv(path, **read_csv_kw))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise ValueError(f"{path}: not a readable CSV file "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None


class TableError(ValueError):
    pass


class CorruptTableError(TableError):
    """A table whose bytes are not what its producer wrote (unreadable, a page checksum, the recorded
    row count or kind); `path` is the file."""

    def __init__(self, path: str | Path, what: str):
        self.path = str(path)
        super().__init__(f"{path}: corrupt table ({what})")


def check_table(df: pd.DataFrame, kind: str, where: str = "") -> pd.DataFrame:
    if kind not in SCHEMAS:
        raise TableError(f"unknown table kind '{kind}'")
    missing = [c for c in SCHEMAS[kind] if c not in df.columns]
    if missing:
        raise TableError(f"{where or kind}: missing column(s) {missing} for a '{kind}' table")
    # a CSV table's optional key column (policy) counts where present
    keys = [k for k in KEYS[kind] if k in df.columns] if kind in CSV_DTYPES else KEYS[kind]
    dup = df.duplicated(keys, keep=False)
    if dup.any():
        first = df.loc[dup, keys].iloc[0].to_dict()
        raise TableError(f"{where or kind}: duplicate row id {first} in a '{kind}' table")
    return df


def write_table(df: pd.DataFrame, path: str | Path, kind: str | None, meta: dict | None = None) -> None:
    """Validate (kind None: any columns) and write atomically (tmp file + rename), so a killed job leaves
    no half-written table; with page checksums and the recorded kind and row count (module docstring)."""
    if kind is not None:
        check_table(df, kind, str(path))
    table = pa.Table.from_pandas(df, preserve_index=False)
    md = dict(table.schema.metadata or {})
    md[INTEGRITY_KEY] = json.dumps({"kind": kind, "rows": len(df)}).encode()
    if meta is not None:
        md[META_KEY] = json.dumps(meta, default=str).encode()
    with atomic_path(path) as tmp:
        pq.write_table(table.replace_schema_metadata(md), tmp, write_page_checksum=True)


def read_table(path: str | Path, kind: str | None, columns: list[str] | None = None) -> pd.DataFrame:
    """A Parquet table with list columns as Python lists, its integrity checked (module docstring) and its
    columns against `kind`'s schema (None: any columns). CorruptTableError names the file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such table")
    try:
        table = pq.read_table(path, columns=columns, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as exc:  # no footer, a bad page checksum, undecodable pages
        raise CorruptTableError(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    recorded = json.loads((table.schema.metadata or {}).get(INTEGRITY_KEY, b"{}"))
    if "rows" in recorded and recorded["rows"] != table.num_rows:
        raise CorruptTableError(path, f"{table.num_rows} rows, {recorded['rows']} written")
    if kind is not None and recorded.get("kind") not in (None, kind):
        raise TableError(f"{path}: a '{recorded['kind']}' table where a '{kind}' table is expected")
    df = table.to_pandas()
    # Parquet gives numpy arrays for list columns; the contract is Python lists
    for col in df.columns:
        if df[col].dtype == object and any(isinstance(v, np.ndarray) for v in df[col].head(20)):
            df[col] = df[col].map(lambda v: v.tolist() if isinstance(v, np.ndarray) else v)
    return df if kind is None else check_table(df, kind, str(path))


CSV_SIDECAR = ".integrity.json"  # <table>.csv.integrity.json: {"kind", "rows", "sha256"} of the CSV's bytes


def check_csv(df: pd.DataFrame, kind: str, where: str = "") -> pd.DataFrame:
    """check_table (required columns, unique keys) and CSV_DTYPES: a number column that holds text, an
    "int" column that holds 2.5, a fraction column that holds 45.0 (percent) raise TableError naming the
    file, the column, the row and the value."""
    if kind not in CSV_DTYPES:
        raise TableError(f"'{kind}' is no CSV table kind (one of {sorted(CSV_DTYPES)})")
    check_table(df, kind, where)
    where = where or kind
    for col, typ in CSV_DTYPES[kind].items():
        if col not in df.columns or typ == "str":
            continue
        raw = df[col]
        num = pd.to_numeric(raw, errors="coerce")
        bad = num.isna() & raw.notna() & (raw.astype(str).str.strip() != "")
        what = None
        if bad.any():
            what = "is not a number"
        elif typ == "int" and (bad := num.notna() & (num != num.round())).any():
            what = "is not a whole number"
        elif typ == "fraction" and (bad := num.abs() > 1 + 1e-9).any():
            what = "is outside [-1, 1]: the column is a fraction, not percent"
        if what:
            i = bad.to_numpy().nonzero()[0][0]
            value = raw.iloc[i].item() if hasattr(raw.iloc[i], "item") else raw.iloc[i]  # 50.0, not np.float64(50.0)
            raise TableError(f"{where}: column '{col}' row {i + 1}: {value!r} {what} (a '{kind}' table)")
    return df


def write_csv(df: pd.DataFrame, path: str | Path, kind: str) -> None:
    """A CSV stage table (kind in CSV_DTYPES): checked (check_csv), written atomically (tmp file + rename),
    with a sidecar <path>.integrity.json recording its kind, row count and SHA-256 (CSV has no footer or
    checksum of its own; a sidecar keeps the file plain CSV for every other reader)."""
    check_csv(df, kind, str(path))
    path = Path(path)
    with atomic_path(path) as tmp:
        _to_csv(df, tmp)
        digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    write_text_atomic(path.with_name(path.name + CSV_SIDECAR),
                      json.dumps({"kind": kind, "rows": len(df), "sha256": digest}) + "\n")


def read_csv(path: str | Path, kind: str) -> pd.DataFrame:
    """A CSV stage table written by write_csv, checked as written (check_csv). With its sidecar, the bytes
    must hash to the recorded SHA-256 and hold the recorded kind and row count (else CorruptTableError
    naming the file); a table without one (written by hand) gets the column checks only."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such table")
    side = path.with_name(path.name + CSV_SIDECAR)
    recorded = {}
    if side.exists():
        try:
            recorded = json.loads(side.read_text())
        except ValueError:
            raise CorruptTableError(path, f"{side.name} is not JSON") from None
        if recorded.get("sha256") not in (None, hashlib.sha256(path.read_bytes()).hexdigest()):
            raise CorruptTableError(path, f"its bytes differ from those written (SHA-256 in {side.name})")
        if recorded.get("kind") not in (None, kind):
            raise TableError(f"{path}: a '{recorded['kind']}' table where a '{kind}' table is expected")
    try:
        df = csv_frame_read(pd.read_csv(path))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if recorded:  # written by write_csv, so damaged since
            raise CorruptTableError(path, what) from None
        raise TableError(f"{path}: not a readable CSV table ({what})") from None
    if "rows" in recorded and recorded["rows"] != len(df):
        raise CorruptTableError(path, f"{len(df)} rows, {recorded['rows']} written")
    return check_csv(df, kind, str(path))


# The folder of the working directory that only rules write: a corrupt table in it is a rule's output,
# which the next run writes again. Nothing outside it is ever moved (a user's `source: local` file, a
# model directory, a downloaded set the user pointed a config key at).
OWN_OUTPUT_DIR = "results"


def quarantine(path: str | Path, inputs: list[str], user_files=(), workdir: str | Path = ".") -> str:
    """Move a corrupt table to `<path>.corrupt` (kept for inspection) when it is one of the job's inputs,
    lies under the working directory's results/ (OWN_OUTPUT_DIR, where only rules write) and is not a
    file the config names (`user_files`: a user's file there is still the user's); what was done, as a
    line for the job's log. Any other file is left untouched, and the line says whose it is."""
    path = Path(path)
    own = (Path(workdir) / OWN_OUTPUT_DIR).resolve()
    resolved = path.resolve()
    if not any(Path(f).resolve() == resolved for f in inputs) or not path.exists():
        return f"{path}: corrupt, not an input of this job: left in place"
    if own not in resolved.parents or any((Path(workdir) / str(f)).resolve() == resolved for f in user_files):
        return (f"{path}: corrupt, and not a table this workflow writes under {OWN_OUTPUT_DIR}/ (a file of yours "
                "the config names): left untouched; repair or replace it, then run the same command again")
    dest = path.with_name(path.name + ".corrupt")
    os.replace(path, dest)
    return (f"{path}: corrupt input moved to {dest}; run the same command again and its producer rule "
            "writes it anew")


def merge_shards(paths, kind: str) -> tuple[pd.DataFrame, dict]:
    """Shard tables of one kind → one table sorted by its key (a row in two shards is an error, raised
    by check_table), and the first shard's metadata."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    frames = [read_table(p, kind) for p in paths]
    # an empty shard (more shards than problems) has no values to type its columns: it must not turn the
    # others' int or bool columns into object ones
    frames = [f for f in frames if len(f)] or frames[:1]
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SCHEMAS[kind])
    df = df.sort_values(KEYS[kind]).reset_index(drop=True)
    return check_table(df, kind, f"merge of {len(paths)} '{kind}' shards"), (table_meta(paths[0]) if paths else {})


def join_scores(samples: pd.DataFrame, scores: pd.DataFrame, where: str = "") -> pd.DataFrame:
    """The samples (in their order) with a score table's own columns (step_scores, n_steps_scored, ...)
    added by key (problem_id, sample_idx). Both must hold the same responses: a response without a
    score row, or a score row without a response (a stale table), raises TableError naming one."""
    def ids(df):
        return list(zip(df["problem_id"].astype(str), df["sample_idx"].astype(int)))

    pos = {k: i for i, k in enumerate(ids(scores))}
    want = ids(samples)
    missing = [k for k in want if k not in pos]
    if missing or len(pos) != len(want) or len(pos) != len(scores):
        extra = sorted(set(pos) - set(want))
        what = (f"response {missing[0]} has no score row" if missing
                else f"score row {extra[0]} is no response of the samples" if extra else "duplicate score rows")
        raise TableError(f"{where or 'join of samples and scores'}: {what} ({len(want)} responses, "
                         f"{len(scores)} score rows); the score table is stale: score the samples again")
    take = [pos[k] for k in want]
    out = samples.reset_index(drop=True).copy()
    for col in scores.columns:
        if col not in out.columns:
            out[col] = scores[col].iloc[take].to_numpy()
    return out


def table_meta(path: str | Path) -> dict:
    try:
        md = pq.read_schema(path).metadata or {}
    except (pa.ArrowException, OSError) as exc:
        raise CorruptTableError(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    raw = md.get(META_KEY)
    return json.loads(raw) if raw else {}


def _suffix(path: Path) -> str:
    return "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix


class RowError(ValueError):
    """A JSON row that parses but is not data: a repeated key, NaN / Infinity, nesting past the bound."""


MAX_JSON_DEPTH = 100  # rows of every source nest a few levels; deeper is a damaged or hostile file


def _no_repeated_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:  # a 100,000-character key is shown by its start and length
            shown = repr(k) if len(k) <= 60 else f"{k[:40]!r}…({len(k):,} characters)"
            raise RowError(f"key {shown} appears twice in one object (JSON would keep the last silently)")
        out[k] = v
    return out


def _no_constant(name):
    raise RowError(f"{name} is not a JSON value (a number must be finite)")


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def _depth_ok(text: str) -> bool:
    """Whether brackets nest at most MAX_JSON_DEPTH deep, brackets inside strings not counted (a string
    of "[[[" is data, not nesting). Invalid JSON is json.loads's to report."""
    depth = 0
    for c in _BRACKETS.findall(_JSON_STRING.sub("", text)):
        if c in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return False
        else:
            depth -= 1
    return True


# a \uD800-\uDFFF escape: JSON lets a string hold one unpaired, which is no Unicode text (no file, table or
# tokenizer can encode it: the write three stages later would fail without naming the row)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate(value) -> str | None:
    """The first string (a key or a value, at any depth) holding an unpaired surrogate, or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError as exc:
                return f"U+{ord(v[exc.start]):04X} at character {exc.start + 1} of {v[:40]!r}"
        elif isinstance(v, dict):
            stack += [*v.keys(), *v.values()]
        elif isinstance(v, list):
            stack += v
    return None


def loads_strict(text: str, constants: bool = True):
    """json.loads for input rows: a key repeated in one object, nesting deeper than MAX_JSON_DEPTH, a
    string holding an unpaired surrogate escape (\\ud800) and a number json.loads refuses to convert
    (an integer of more than 4,300 digits) raise RowError (json.loads would take the last key, end in a
    RecursionError, hand on text no file can hold, or raise a ValueError naming no row); invalid JSON
    raises json.JSONDecodeError as before. NaN / Infinity are read as floats unless `constants` is
    false: a score file may hold them (each field's check decides, naming the row: a NaN step score
    counts wrong, a NaN gold is refused)."""
    if not _depth_ok(text):
        raise RowError(f"nested more than {MAX_JSON_DEPTH} levels deep")
    if not text.isascii():  # text from a command line holds undecodable bytes as lone surrogates
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise RowError(f"character {exc.start + 1} (U+{ord(text[exc.start]):04X}) is no Unicode text "
                           "(bytes that are not UTF-8)") from None
    kwargs = {} if constants else {"parse_constant": _no_constant}
    try:
        value = json.loads(text, object_pairs_hook=_no_repeated_keys, **kwargs)
    except (json.JSONDecodeError, RowError):
        raise
    except ValueError as exc:  # int("9" * 5000): Python's digit limit
        raise RowError(str(exc).split(";")[0]) from None
    if _SURROGATE_ESCAPE.search(text):  # only then walk the value (a paired escape matches too)
        where = _lone_surrogate(value)
        if where:
            raise RowError(f"a string holds an unpaired surrogate escape ({where}): not Unicode text")
    return value


def iter_lines(path: str | Path):
    """(line number, bytes) of a text file, gunzipped when it ends in .gz: the one line reader of JSONL
    inputs. A file that is not gzip although named so, a truncated or damaged stream, or a read error
    raises ValueError naming the file and the line where it broke (gzip reports them as EOFError,
    BadGzipFile, zlib.error: a traceback otherwise)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    gz = path.suffix == ".gz"
    n = 0
    try:
        with (gzip.open if gz else open)(path, "rb") as fh:
            for n, raw in enumerate(fh, 1):
                yield n, raw
    except (EOFError, OSError, zlib.error) as exc:
        no_header = "not a gzipped file" in str(exc).lower()  # where a gzip member's header should start
        if n > 0 and no_header:  # after whole members: bytes appended, or a damaged later member
            what = "bytes after the end of the compressed data that are not gzip (an appended or damaged file)"
        elif no_header or (gz and n == 0 and "gzip" in str(exc).lower()):
            what = "not a gzip file (named .gz)"
        elif isinstance(exc, gzip.BadGzipFile):  # a CRC or length check, an unknown method
            what = f"damaged compressed data ({exc})"
        elif isinstance(exc, EOFError):
            what = "the compressed file is truncated"
        elif isinstance(exc, zlib.error):
            what = f"damaged compressed data ({exc})"
        else:
            what = f"cannot read ({getattr(exc, 'strerror', None) or exc})"
        raise ValueError(f"{path}: line {n + 1}: {what}") from None


def iter_records(path: str | Path):
    """Rows of a .jsonl(.gz) file one at a time (PRM800K is too large to hold as dicts); a line that is not
    JSON, not UTF-8 or not an object, and a damaged compressed file, name the file and line number."""
    path = Path(path)
    for n, raw in iter_lines(path):
        if n == 1 and raw.startswith(codecs.BOM_UTF8):  # a byte order mark, which JSON readers may ignore
            raw = raw[len(codecs.BOM_UTF8):]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: line {n} is not UTF-8 (byte {exc.object[exc.start]:#x} at column "
                             f"{exc.start + 1})") from None
        if line.strip():
            try:
                rec = loads_strict(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {n} is not valid JSON ({exc.msg})") from None
            except RowError as exc:
                raise ValueError(f"{path}: line {n}: {exc}") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path}: line {n} is a JSON {type(rec).__name__}, not an object")
            yield rec


def read_records(path: str | Path) -> list[dict]:
    """Rows of a local .jsonl(.gz) / .json (list of objects, or {"data": [...]}) / .parquet file; every row
    is an object (a row that is not names its line or index)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    suffix = _suffix(path)
    if suffix in (".jsonl", ".jsonl.gz"):
        return list(iter_records(path))
    if suffix == ".json":
        raw = path.read_bytes()
        raw = raw[len(codecs.BOM_UTF8):] if raw.startswith(codecs.BOM_UTF8) else raw  # as iter_records
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise ValueError(f"{path}: line {line} is not UTF-8 (byte {exc.object[exc.start]:#x})") from None
        try:
            data = loads_strict(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg})") from None
        except RowError as exc:
            raise ValueError(f"{path}: {exc}") from None
        if isinstance(data, dict):
            data = data.get("data", data.get("rows"))
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of objects (or {{'data': [...]}})")
        bad = [i for i, rec in enumerate(data) if not isinstance(rec, dict)]
        if bad:
            raise ValueError(f"{path}: element(s) {', '.join(map(str, bad[:20]))}{' …' if len(bad) > 20 else ''} "
                             f"of the list {'is' if len(bad) == 1 else 'are'} not an object "
                             f"(element {bad[0]}: a JSON {type(data[bad[0]]).__name__})")
        return data
    if suffix == ".parquet":
        return read_table(path, None).to_dict("records")
    raise ValueError(f"{path}: unsupported file type '{suffix}' (use .jsonl, .json or .parquet)")


@contextlib.contextmanager
def open_safetensors(path: str | Path):
    """safetensors' safe_open (framework pt) whose every error names the file: a header that lies (a
    dtype that does not exist, offsets past the end, a shape its bytes do not fit, a key twice), a
    truncated or empty file, a header length of petabytes, and a path that is no regular file (a FIFO
    would block safe_open, a link to /dev/zero map nothing) are a ValueError `<path>: ...`, raised at
    the open or at any get_tensor inside the block. The one reader of .safetensors files."""
    from safetensors import SafetensorError, safe_open  # lazy: tables is imported where no weights are read

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if not path.is_file():
        raise ValueError(f"{path}: not a regular file (a safetensors file is read by mapping it)")
    try:
        with safe_open(str(path), framework="pt") as fh:
            yield fh
    except SafetensorError as exc:
        what = str(exc).split(", expected one of")[0]  # a dtype error lists every dtype
        raise ValueError(f"{path}: not a readable safetensors file ({what})") from None


def check_safetensors_dir(path: str | Path) -> None:
    """Open every .safetensors file of a model directory (safetensors checks each header against the file's
    size; no tensor is read): a damaged one is a ValueError naming it before transformers loads the
    directory (its SafetensorError names no file). A Hub id or a missing path: nothing to check."""
    d = Path(path)
    if d.is_dir():
        for f in sorted(d.glob("*.safetensors")):
            with open_safetensors(f):
                pass


def read_safetensors(path: str | Path, keep=None) -> dict:
    """Every tensor of a .safetensors file (those whose name `keep(name)` accepts), through
    open_safetensors: errors name the file."""
    with open_safetensors(path) as fh:
        return {k: fh.get_tensor(k) for k in fh.keys() if keep is None or keep(k)}


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)  # paths, timestamps: provenance records them as text


def write_json(obj, path: str | Path, **dumps) -> None:
    """Indented JSON (numpy scalars as numbers, NaN kept as NaN) with a trailing newline, written
    atomically; `dumps` overrides json.dumps's options (indent, sort_keys, default)."""
    opts = {"indent": 2, "default": _json_default, "allow_nan": True, **dumps}
    write_text_atomic(path, json.dumps(obj, **opts) + "\n")
