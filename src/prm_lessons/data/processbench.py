"""ProcessBench: the loader (Hub, a directory of {subset}.json, or pinned files), case validation, and a
ProcessBench-format set built by construction from gold solutions with one error injected at a known step
(the injection itself lives in :mod:`prm_lessons.labels.construction`).
"""
from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..errors import InputError
from ..fields import FieldError, read_error_index, read_flag, read_id, read_question, read_steps
from ..labels.construction import CorruptionError, construction_plan, corrupt_solution
from ..tables import read_records, read_table
from .problems import check_rows, load_problems
from .sources import DOWNLOAD_DIR, url_suffix, verify_checksums

log = logging.getLogger(__name__)

PROCESSBENCH_COLUMNS = ["id", "subset", "generator", "problem", "steps", "final_answer_correct", "label"]
PROCESSBENCH_SUBSETS = ["gsm8k", "math", "olympiadbench", "omnimath"]
CONSTRUCTED_GENERATOR = "constructed"


def processbench_paths(spec: dict) -> dict[str, str]:
    """subset -> where rule `processbench_file` keeps its copy (source url; `url` holds `{subset}`)."""
    url = spec.get("url") or ""
    if "{subset}" not in url:
        raise ValueError("processbench source url needs `url` with a {subset} placeholder")
    subsets = list(spec.get("subsets") or PROCESSBENCH_SUBSETS)
    return {s: f"{DOWNLOAD_DIR}/processbench/{s}{url_suffix(url.format(subset=s))}" for s in subsets}





def _case_fields(rec, cid: str, n: int | None = None) -> tuple[dict | None, list[str]]:
    """A case's problem, steps, label, answer flag and generator, each through its checked reader
    (prm_lessons.fields): (the fields, []) or (None, one line per bad field, naming the case)."""
    where = f"ProcessBench case {cid}"
    out, why = {}, []
    for key, read in (("problem", lambda v: read_question(v, where, "problem")),
                      ("steps", lambda v: read_steps(v, where)),
                      ("final_answer_correct", lambda v: read_flag(v, where))):
        try:
            out[key] = read(rec[key])
        except FieldError as exc:
            why.append(str(exc))
    try:
        out["label"] = read_error_index(rec["label"], where, len(out["steps"]) if "steps" in out else None)
    except FieldError as exc:
        why.append(str(exc))
    gen = rec.get("generator")
    try:  # free text; absent or null: none given
        out["generator"] = "" if gen is None or gen == "" or gen != gen else read_question(gen, where, "generator")
    except FieldError as exc:
        why.append(str(exc))
    return (None, why) if why else (out, [])


def _validate_cases(df: pd.DataFrame, where: str | None = None) -> pd.DataFrame:
    """Every case's id, problem, steps, label and flag (the checked readers), and unique ids; InputError
    with one line per problem."""
    problems = []
    cols = set(df.columns)
    for n, row in enumerate(df.to_dict("records")):
        try:
            cid = read_id(row["id"], f"ProcessBench case at row {n + 1}")
        except FieldError as exc:
            problems.append(str(exc))
            cid = f"at row {n + 1}"
        rec = {"final_answer_correct": True, **{k: row[k] for k in cols}}  # a flag-less table: not checked
        problems += _case_fields(rec, cid)[1]
    problems += _duplicate_case_problems(df)
    if problems:
        raise InputError(problems, where)
    return df


def _duplicate_case_problems(df: pd.DataFrame) -> list[str]:
    counts = df["id"].astype(str).value_counts(sort=False)
    subsets = df["subset"] if "subset" in df.columns else pd.Series([""] * len(df), index=df.index)
    return [f"duplicate ProcessBench case id {i}: {n} cases (subsets "
            f"{', '.join(sorted(set(map(str, subsets[df['id'].astype(str) == i]))))})"
            for i, n in counts[counts > 1].items()]


def _cases_from_records(records: Iterable[dict], subset: str, where: str | None = None) -> list[dict]:
    """Rows of one subset's file as cases; every field read by its checked reader, never cast (a label
    "two" or 1.7, steps that are not strings, a problem or id that is null or not text): InputError naming
    each case and `where`."""
    out, problems = [], []
    for n, rec in enumerate(records):
        try:  # absent: the subset and row; present, it must be an id (null or "" is not)
            cid = read_id(rec["id"], f"ProcessBench {subset} row {n + 1}") if "id" in rec else f"{subset}-{n}"
        except FieldError as exc:
            problems.append(str(exc))
            continue
        missing = [k for k in ("problem", "steps", "final_answer_correct", "label") if k not in rec]
        if missing:
            problems.append(f"ProcessBench case {cid}: missing field(s) {missing}")
            continue
        case, why = _case_fields(rec, cid)
        if why:
            problems += why
            continue
        out.append({"id": cid, "subset": subset, **case})
    if problems:
        raise InputError(problems, where)
    return out


def load_processbench(spec: dict, files: dict[str, str | Path] | None = None) -> pd.DataFrame:
    """ProcessBench cases: from the Hub (``Qwen/ProcessBench``, one split per subset), a directory
    of the official ``{subset}.json`` files, or pinned files (``source: url``, copies made by rule
    `processbench_file`; ``files`` maps subset -> copy, default :func:`processbench_paths`).
    Columns: id, subset, generator, problem, steps (list), final_answer_correct (bool), label (int;
    −1 = no erroneous step, else the 0-based first error).

    spec: ``source`` (hub | local | url), ``id``/``revision`` (hub), ``path`` (local directory),
    ``url`` (with ``{subset}``), ``sha256``/``git_blob_sha1``/``rows`` (subset -> value; checked
    before ``limit``, an error names the subset), ``subsets`` (default all four), ``limit`` (first N
    cases per subset, or null).
    """
    source = spec.get("source", "hub")
    subsets = list(spec.get("subsets") or PROCESSBENCH_SUBSETS)
    limit = spec.get("limit")
    rows: list[dict] = []
    for subset in subsets:
        what = f"ProcessBench subset '{subset}'"
        checks = {k: (spec.get(k) or {}).get(subset) for k in ("sha256", "git_blob_sha1")}
        if source == "hub":
            import datasets  # lazy: heavy, and only Hub sources need it

            where = f"{spec.get('id', 'Qwen/ProcessBench')} split {subset}"
            kwargs = {"revision": spec["revision"]} if spec.get("revision") else {}
            records = [dict(r) for r in datasets.load_dataset(spec.get("id", "Qwen/ProcessBench"), split=subset,
                                                              **kwargs)]
        elif source in ("local", "url"):
            if source == "url":
                file = Path((files or processbench_paths(spec))[subset])
            else:
                if not spec.get("path"):
                    raise ValueError("processbench source local needs `path` (a directory of {subset}.json files)")
                path = Path(spec["path"])
                found = [p for p in (path / f"{subset}.json", path / f"{subset}.jsonl", path / f"{subset}.parquet")
                         if p.exists()]
                if not found:
                    raise FileNotFoundError(f"{path}: no {subset}.json (or .jsonl/.parquet) "
                                            f"for ProcessBench subset '{subset}'")
                file = found[0]
            verify_checksums(file, checks, what)
            where = str(file)
            records = read_records(file)
        else:
            raise ValueError(f"processbench: unknown source {source!r} (hub, local, url or constructed)")
        check_rows(len(records), (spec.get("rows") or {}).get(subset), what)
        if limit:
            records = records[: int(limit)]
        rows += _cases_from_records(records, subset, where)
    df = pd.DataFrame(rows, columns=PROCESSBENCH_COLUMNS)
    return _validate_cases(df)  # ids across subsets (each file's rows were checked above)


def build_constructed_processbench(problems: pd.DataFrame, n_per_subset: int = 12, seed: int = 0,
                                   error_fraction: float = 0.5, keep_answer_fraction: float = 0.3,
                                   subset_column: str = "dataset", id_prefix: str = "") -> pd.DataFrame:
    """A ProcessBench-format set built by construction from problems with gold steps, balanced so that
    structure does not solve it.

    Per subset (one per value of ``subset_column``, e.g. one per generator), up to ``n_per_subset``
    cases, planned by :func:`construction_plan` over the solution lengths: within every length, a share
    ``error_fraction`` gets one injected error (:func:`corrupt_solution` at the planned position, the
    last step included: a wrong final answer written down), spread evenly over the positions; of the
    errors before the last step a share ``keep_answer_fraction`` keeps the correct final answer (the
    "correct answer, flawed process" case); the rest are untouched gold solutions (label −1). A problem
    where the planned error cannot be placed is replaced by the next spare problem of the same length
    (never by another kind or position). Deterministic for a given seed; ids ``{id_prefix}{subset}-{k}``.
    """
    if problems.empty:
        raise ValueError("constructed ProcessBench: no problems")
    rnd = random.Random(seed)
    rows = []
    for subset, group in problems.groupby(subset_column, sort=True):
        group = group[group["gold_steps"].map(lambda s: s is not None and len(s) > 0)]
        if group.empty:
            raise ValueError(f"constructed ProcessBench: subset '{subset}' has no problems with gold steps")
        picked, spare = group.iloc[:n_per_subset], group.iloc[n_per_subset:]
        if len(picked) < n_per_subset:
            log.info("constructed ProcessBench: subset %s has %d problems with gold steps (asked %d)",
                     subset, len(picked), n_per_subset)
        spares: dict[int, list] = {}
        for row in spare.itertuples(index=False):
            spares.setdefault(len(row.gold_steps), []).append(row)
        plan = construction_plan([len(s) for s in picked["gold_steps"]], error_fraction, keep_answer_fraction, rnd)
        k = 0
        for row, (kind, pos) in zip(picked.itertuples(index=False), plan):
            candidates = [row] + spares.get(len(row.gold_steps), [])
            for cand in candidates:
                gold = list(cand.gold_steps)
                if kind == "clean":
                    steps, label = gold, -1
                else:
                    try:
                        steps, label = corrupt_solution(gold, str(cand.answer), rnd, keep_final_answer=kind == "keep",
                                                        position=pos)
                    except CorruptionError as exc:
                        log.info("constructed ProcessBench: %s: no %s error at step %d (%s); next problem",
                                 cand.problem_id, "answer-keeping" if kind == "keep" else "answer-changing", pos, exc)
                        continue
                if cand is not row:
                    spares[len(row.gold_steps)].remove(cand)
                rows.append({"id": f"{id_prefix}{subset}-{k}", "subset": str(subset),
                             "generator": CONSTRUCTED_GENERATOR, "problem": cand.question, "steps": steps,
                             "final_answer_correct": kind != "error", "label": int(label),
                             "problem_id": cand.problem_id})
                k += 1
                break
            else:
                log.warning("constructed ProcessBench: subset %s: slot (%s, step %d) left empty, no problem allows it",
                            subset, kind, pos)
    df = pd.DataFrame(rows)
    return _validate_cases(df[PROCESSBENCH_COLUMNS + ["problem_id"]])


def constructed_balance(cases: pd.DataFrame) -> pd.DataFrame:
    """Case counts by (subset, n_steps, label, final_answer_correct): the constructed set's balance."""
    view = cases.assign(n_steps=cases["steps"].map(len))
    return (view.groupby(["subset", "n_steps", "label", "final_answer_correct"]).size()
            .rename("n").reset_index())


def _subset_problems(subsets: dict, prefix: str, seen: set, what: str) -> list[pd.DataFrame]:
    frames = []
    for subset, sub in subsets.items():
        problems = load_problems(f"{prefix}{subset}", sub)
        problems["subset"] = subset
        overlap = problems["question"].isin(seen)
        if overlap.any():
            log.info("%s subset %s: %d problem(s) also among held-out questions, dropped", what, subset,
                     int(overlap.sum()))
        frames.append(problems[~overlap])
    return frames


def constructed_processbench(con: dict, exclude: dict | None = None, split: str = "eval") -> pd.DataFrame:
    """The constructed ProcessBench set of the config's `processbench.constructed` section, held out
    from the training problems: a problem whose question also appears among the problem sets of
    ``exclude`` (name -> dataset spec) is dropped. ``split="dev"``: the dev split of ``con["dev"]``
    (its own problems; questions of the evaluation subsets are dropped too), ids ``dev-{subset}-{k}``."""
    if split not in ("eval", "dev"):
        raise ValueError(f"constructed ProcessBench: split {split!r} is not 'eval' or 'dev'")
    seen = set()
    for name, train_spec in (exclude or {}).items():
        seen |= set(load_problems(name, train_spec)["question"])
    if not con.get("subsets"):
        raise ValueError("processbench.constructed.subsets: no subsets defined")
    if split == "dev":
        dev = con.get("dev") or {}
        if not dev.get("subsets"):
            raise ValueError("processbench.constructed.dev: the dev split needs `subsets` (own seeds)")
        for sub in _subset_problems(con["subsets"], "processbench-", set(), "processbench"):
            seen |= set(sub["question"])
        frames = _subset_problems(dev["subsets"], "processbench-dev-", seen, "processbench dev")
        n, prefix, seed = int(dev.get("n_per_subset", 100)), "dev-", int(con.get("seed", 0)) + 1
    else:
        frames = _subset_problems(con["subsets"], "processbench-", seen, "processbench")
        n, prefix, seed = int(con.get("n_per_subset", 12)), "", int(con.get("seed", 0))
    return build_constructed_processbench(
        pd.concat(frames, ignore_index=True), subset_column="subset", n_per_subset=n, seed=seed,
        error_fraction=float(con.get("error_fraction", 0.5)),
        keep_answer_fraction=float(con.get("keep_answer_fraction", 0.3)), id_prefix=prefix)


def load_processbench_cases(source: str) -> pd.DataFrame:
    """ProcessBench cases (id, subset, label, steps, …) from a directory of {subset}.json/.jsonl/
    .parquet files (every file is a subset), a cases.parquet table, or a Hub dataset id
    (Qwen/ProcessBench) — through `load_processbench`."""
    p = Path(source)
    if p.is_file() and p.suffix == ".parquet":
        df = read_table(p, None)  # integrity checked; rows below
    elif p.is_dir():
        subsets = sorted({f.stem for f in p.iterdir() if f.suffix in (".json", ".jsonl", ".parquet")})
        if not subsets:
            raise FileNotFoundError(f"{source}: no ProcessBench {{subset}}.json files")
        df = load_processbench({"source": "local", "path": str(p), "subsets": subsets})
    elif p.exists() or source.count("/") != 1:
        raise FileNotFoundError(f"{source}: not a ProcessBench directory, cases.parquet or Hub id")
    else:
        df = load_processbench({"source": "hub", "id": source})
    for c in ("id", "subset", "label"):
        if c not in df.columns:
            raise ValueError(f"{source}: ProcessBench data lacks column '{c}'")
    df = df.copy()
    if p.is_file():  # the loaders above checked their rows; a cases table is checked here, as they do
        if {"problem", "steps"} <= set(df.columns):
            _validate_cases(df, source)
        else:
            problems = []
            for n, (cid, lab) in enumerate(zip(df["id"], df["label"])):
                try:
                    read_error_index(lab, f"ProcessBench case {read_id(cid, f'ProcessBench case at row {n + 1}')}")
                except FieldError as exc:
                    problems.append(str(exc))
            problems += _duplicate_case_problems(df)
            if problems:
                raise InputError(problems, source)
        df["id"] = [read_id(v, source) for v in df["id"]]  # checked above: an integral float id reads "3"
        df["label"] = [int(v) for v in df["label"]]
    else:
        df["id"] = df["id"].astype(str)  # the loaders' ids are text already
    return df
