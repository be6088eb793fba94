"""PRMBench (Song et al. 2025, arXiv 2501.03124; github.com/ssmisya/PRMBench): the loader of the published
file (``prmbench_preview.jsonl`` of the Hub dataset ``hitsmy/PRMBench_Preview``, pinned by rule
`prmbench_file`, or a local copy) and a PRMBench-format stand-in built by construction for offline runs.

A PRMBench record holds an original solution and a modified one with its error steps (1-based) and a
classification (the error type). As the repository's default task (``prmtest_classified``) builds its
cases, every record is one case (the modified question and process, its error steps) and every record of
class ``redundency`` (the benchmark's spelling) adds one case of its original, untouched process, class
``correct``. The cases table holds steps and error steps 0-based.
"""
from __future__ import annotations

import logging
import random
from pathlib import Path

import pandas as pd

from ..errors import InputError, as_int, is_bool, json_type
from ..fields import FieldError, read_question, read_steps
from ..labels.construction import CorruptionError, corrupt_solution
from ..tables import read_records
from .problems import blank_or_missing, check_rows, load_problems
from .sources import DOWNLOAD_DIR, url_suffix, verify_checksums

log = logging.getLogger(__name__)

PRMBENCH_COLUMNS = ["id", "pair_id", "classification", "problem", "steps", "error_steps"]
# the error types and their abbreviations as the PRMBench paper's table heads print them, grouped by the
# paper's three dimensions (the repository's notebook mr_visualize/eval_res_view/form_latex_strs.ipynb)
DIMENSIONS = {
    "simplicity": {"redundency": "NR", "circular": "NCL"},
    "soundness": {"counterfactual": "ES", "step_contradiction": "SC", "domain_inconsistency": "DC",
                  "confidence": "CI"},
    "sensitivity": {"missing_condition": "PS", "deception": "DR", "multi_solutions": "MS"},
}
CLASSIFICATIONS = [c for d in DIMENSIONS.values() for c in d]
ABBREVIATIONS = {c: a for d in DIMENSIONS.values() for c, a in d.items()}
CORRECT = "correct"
# the class whose records also give the original process as a correct case (the repository's task)
CORRECT_FROM = "redundency"
# the stand-in's classes: one error at a known step that changes the final answer, or that keeps it
STANDIN_CLASSES = ("constructed_error", "constructed_keep_answer")
REQUIRED_FIELDS = ("idx", "classification", "modified_question", "modified_process", "error_steps")


def prmbench_path(spec: dict) -> str:
    """Where rule `prmbench_file` keeps its copy of the pinned file (source url)."""
    if not spec.get("url"):
        raise ValueError("prmbench source url needs `url`")
    return f"{DOWNLOAD_DIR}/prmbench/prmbench{url_suffix(spec['url'])}"


def _steps(value, what: str, problems: list[str]) -> list[str] | None:
    """A process: prm_lessons.fields' steps reader (a list of non-blank texts, never a decoded string)."""
    try:
        return read_steps(value, "", what)
    except FieldError as e:
        problems.append(str(e))
        return None


def _error_steps(value, n_steps: int, problems: list[str], cid: str) -> list[int] | None:
    """PRMBench's 1-based error steps as 0-based ints, each within the process; a boolean, a fraction or
    a string is refused, never cast."""
    raw = value.tolist() if hasattr(value, "tolist") and not isinstance(value, str) else value  # a parquet list
    if not isinstance(raw, (list, tuple)):
        problems.append(f"PRMBench case {cid}: error_steps is a JSON {json_type(raw)}, not a list")
        return None
    out = []
    for v in raw:
        k = None if is_bool(v) else as_int(v)
        if k is None or not 1 <= k <= n_steps:
            problems.append(f"PRMBench case {cid}: error step {v!r} is not a step number in 1..{n_steps}")
            return None
        out.append(k - 1)
    return sorted(set(out))


def cases_from_records(records: list[dict], where: str | None = None) -> pd.DataFrame:
    """PRMBench records -> cases (PRMBENCH_COLUMNS): each record's modified process, and the original
    process of each `redundency` record as a `correct` case; every field checked (InputError naming
    each case and `where`), ids unique."""
    rows, problems, seen = [], [], set()
    for n, rec in enumerate(records):
        cid = str(rec.get("idx", f"record {n}"))
        missing = [k for k in REQUIRED_FIELDS if k not in rec]
        if missing:
            problems.append(f"PRMBench case {cid}: missing field(s) {missing}")
            continue
        cls = rec["classification"]
        if not isinstance(cls, str) or blank_or_missing(cls):
            problems.append(f"PRMBench case {cid}: classification {cls!r} is not a name")
            continue
        before = len(problems)
        steps = _steps(rec["modified_process"], f"PRMBench case {cid}: modified_process", problems)
        try:
            question = read_question(rec["modified_question"], f"PRMBench case {cid}", "modified_question")
        except FieldError as e:
            problems.append(str(e))
        errors = _error_steps(rec["error_steps"], len(steps), problems, cid) if steps else None
        if len(problems) > before:
            continue
        rows.append({"id": f"{cls}_{cid}", "pair_id": cid, "classification": cls, "problem": question,
                     "steps": steps, "error_steps": errors})
        if cls == CORRECT_FROM and f"{CORRECT}_{cid}" not in seen:
            original = _steps(rec.get("original_process"), f"PRMBench case {cid}: original_process", problems)
            oq = rec.get("original_question", rec.get("question"))
            if original and isinstance(oq, str) and not blank_or_missing(oq):
                rows.append({"id": f"{CORRECT}_{cid}", "pair_id": cid, "classification": CORRECT,
                             "problem": oq, "steps": original, "error_steps": []})
                seen.add(f"{CORRECT}_{cid}")
            elif original:
                problems.append(f"PRMBench case {cid}: empty original_question")
    df = pd.DataFrame(rows, columns=PRMBENCH_COLUMNS)
    dup = df["id"].value_counts()
    problems += [f"duplicate PRMBench case id {i}: {k} cases" for i, k in dup[dup > 1].items()]
    if problems:
        raise InputError(problems, where)
    return df


def _limit_per_class(records: list[dict], limit: int | None) -> list[dict]:
    """The first `limit` records of each classification, in file order (null: all)."""
    if not limit:
        return records
    count: dict = {}
    out = []
    for rec in records:
        cls = rec.get("classification")
        count[cls] = count.get(cls, 0) + 1
        if count[cls] <= limit:
            out.append(rec)
    return out


def load_prmbench(spec: dict, file: str | Path | None = None) -> pd.DataFrame:
    """PRMBench cases from the pinned file (source url: `file`, default :func:`prmbench_path`, the copy
    rule prmbench_file made and checked) or a local copy (source local: `path`, its checksums checked
    here). ``rows`` (the file's record count) is checked before ``limit`` (records per classification)."""
    source = spec.get("source")
    if source == "url":
        path = Path(file or prmbench_path(spec))
    elif source == "local":
        if not spec.get("path"):
            raise ValueError("prmbench source local needs `path` (a prmbench_preview.jsonl file)")
        path = Path(spec["path"])
        if not path.is_file():
            raise FileNotFoundError(f"prmbench.path {path}: no such file")
        verify_checksums(path, spec, "PRMBench file (prmbench.path)")
    else:
        raise ValueError(f"prmbench: source {source!r} is not a file source (url or local)")
    records = read_records(path)
    check_rows(len(records), spec.get("rows"), "PRMBench file")
    return cases_from_records(_limit_per_class(records, spec.get("limit")), str(path))


def build_standin(problems: pd.DataFrame, n_cases: int, seed: int = 0,
                  keep_answer_fraction: float = 0.5) -> pd.DataFrame:
    """A PRMBench-format STAND-IN built by construction (never compared with the published numbers): for
    each of up to ``n_cases`` problems with gold steps, the gold solution is the original process (a
    `correct` case) and the same solution with one injected error (:func:`corrupt_solution`) is the
    modified one, its error step known exactly; the error keeps the final answer in a share
    ``keep_answer_fraction`` (class constructed_keep_answer), else changes it (constructed_error). A
    problem where the drawn kind of error cannot be placed is skipped. Deterministic for a seed."""
    rnd = random.Random(seed)
    rows = []
    pairs = 0
    for row in problems.itertuples(index=False):
        if pairs >= n_cases:
            break
        gold = list(row.gold_steps) if row.gold_steps is not None else []
        if not gold:
            continue
        keep = rnd.random() < keep_answer_fraction
        try:
            steps, label = corrupt_solution(gold, str(row.answer), rnd, keep_final_answer=keep)
        except CorruptionError as exc:
            log.info("PRMBench stand-in: %s: no %s error (%s); next problem", row.problem_id,
                     "answer-keeping" if keep else "answer-changing", exc)
            continue
        pid = f"standin_{pairs}"
        cls = STANDIN_CLASSES[1] if keep else STANDIN_CLASSES[0]
        rows.append({"id": f"{cls}_{pid}", "pair_id": pid, "classification": cls, "problem": row.question,
                     "steps": steps, "error_steps": [int(label)]})
        rows.append({"id": f"{CORRECT}_{pid}", "pair_id": pid, "classification": CORRECT,
                     "problem": row.question, "steps": gold, "error_steps": []})
        pairs += 1
    if pairs < n_cases:
        log.warning("PRMBench stand-in: %d pairs built (asked %d): too few problems allow an error", pairs, n_cases)
    if not rows:
        raise ValueError("PRMBench stand-in: no problem allows an injected error")
    return pd.DataFrame(rows, columns=PRMBENCH_COLUMNS)


def constructed_prmbench(spec: dict, pool: dict, exclude: dict | None = None) -> pd.DataFrame:
    """The stand-in of the config's `prmbench.constructed` section, from the problems of `pool` (name ->
    dataset entry: processbench.constructed.subsets, the held-out pool the constructed ProcessBench uses),
    a question that also appears among the problem sets of `exclude` (the training problems) dropped."""
    if not pool:
        raise ValueError("prmbench source constructed draws its problems from processbench.constructed.subsets, "
                         "which is empty")
    seen = set()
    for name, train_spec in (exclude or {}).items():
        seen |= set(load_problems(name, train_spec)["question"])
    frames = []
    for name, sub in pool.items():
        p = load_problems(f"prmbench-{name}", sub)
        frames.append(p[~p["question"].isin(seen)])
    problems = pd.concat(frames, ignore_index=True)
    # interleave the subsets so a small n_cases draws from each
    problems = problems.assign(_k=problems.groupby("dataset").cumcount()).sort_values(["_k", "dataset"],
                                                                                        kind="stable")
    con = spec.get("constructed") or {}
    return build_standin(problems.drop(columns="_k"), int(con.get("n_cases", 24)), int(con.get("seed", 0)),
                         float(con.get("keep_answer_fraction", 0.5)))


def is_standin(cases: pd.DataFrame) -> bool:
    """Whether a cases table is the constructed stand-in (its classes are the stand-in's)."""
    return bool(set(cases["classification"]) & set(STANDIN_CLASSES))
