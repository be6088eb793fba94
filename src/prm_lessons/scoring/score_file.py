"""Scoring a file of (problem, steps) rows with any PRM, outside the workflow: the logic of the
`prm-lessons score` command.

Rows: `{id?, problem, steps: [...]}` (this project's form) or TRL's stepwise form `{prompt, completions:
[...]}` (its `labels`, if any, pass through, checked as the workflow's `trl_labels` checks them: one
boolean per completion, `labels.stepwise.check_row`). Every row is checked before a model is loaded; each
problem is one line naming the row. The PRM: a directory written by this workflow's training (its
prm.json says so: adapter `trained`), or a released-format checkpoint with the adapter named by the
caller (`ADAPTERS`); a Hub id is snapshotted through huggingface_hub (`heads.resolve_dir`). Scores come
from the workflow's own loader and batch scorer (`load.load_adapter`, `batch.score_responses`), so a
file scored here gets the scores the workflow's scoring jobs give.
"""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Callable

from ..errors import InputError, json_type
from ..fields import FieldError, read_id, read_question, read_steps
from ..labels.stepwise import StepwiseRowError, check_row
from ..models.prm import FORMAT_FILE
from ..tables import atomic_path, read_json
from .adapters import ADAPTERS
from .batch import ScoreStats, score_responses
from .heads import resolve_dir
from .load import load_adapter
from .options import check_declared_params, check_token_classification_params

ROW_FORMS = "{id?, problem, steps: [..]} or TRL's {prompt, completions: [..]}"
# huggingface_hub's repo id rule (as the config schema's $defs/hub_id): [org/]name
HUB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
CHUNK_ROWS = 256  # rows per scoring call: one progress line each


def parse_rows(rows: list) -> list[tuple[str, list[str]]]:
    """(problem, steps) of every row, in order; InputError with one line per bad row (row number and id)."""
    problems, out, seen = [], [], {}
    for k, r in enumerate(rows, 1):
        where = f"row {k}" + (f" (id={r.get('id')!r})" if isinstance(r, dict) and "id" in r else "")
        if not isinstance(r, dict):
            problems.append(f"row {k}: a JSON {json_type(r)}, not an object")
            continue
        ours, trl = {"problem", "steps"} & set(r), {"prompt", "completions"} & set(r)
        if ours and trl:
            problems.append(f"{where}: has both {sorted(ours)} and {sorted(trl)}; give one form: {ROW_FORMS}")
            continue
        qk, sk = ("prompt", "completions") if trl else ("problem", "steps")
        miss = [c for c in (qk, sk) if c not in r]
        if miss:
            problems.append(f"{where}: lacks field(s) {miss} (rows are {ROW_FORMS})")
            continue
        before = len(problems)
        q, steps = r[qk], r[sk]
        if hasattr(steps, "tolist") and not isinstance(steps, str):  # a .parquet list column: a numpy array
            steps = steps.tolist()
        if not isinstance(q, str):
            problems.append(f"{where}: `{qk}` is a JSON {json_type(q)}, not a string")
        if not isinstance(steps, list):
            problems.append(f"{where}: `{sk}` is a JSON {json_type(steps)}, not a list of strings")
        else:
            bad = [i for i, s in enumerate(steps) if not isinstance(s, str)]
            if bad:
                problems.append(f"{where}: `{sk}[{bad[0]}]` is a JSON {json_type(steps[bad[0]])}, not a string"
                                + (f" ({len(bad)} such steps)" if len(bad) > 1 else ""))
        # the types above, the meaning by the checked readers: a blank (or only invisible) problem or step
        for read, value, what in ((read_question, q, f"`{qk}`"), (read_steps, steps, f"`{sk}`")):
            if len(problems) == before:
                try:
                    read(value, where, what, **({"empty_ok": True} if read is read_steps else {}))
                except FieldError as exc:
                    problems.append(str(exc))
        if trl and "labels" in r and len(problems) == before:
            try:  # labels are passed through: checked as rule trl_labels checks them (one per step, booleans)
                check_row(r, where)
            except StepwiseRowError as exc:
                problems.append(f"{exc} (TRL's stepwise format)")
        if "id" in r:
            if r["id"] is None or isinstance(r["id"], (dict, list)):
                problems.append(f"{where}: `id` is a JSON {json_type(r['id'])} (give a string or a number, or no id)")
            else:
                try:  # text or an integer, as every id is read (1.5, true, a control character are not)
                    ident = read_id(r["id"], where, "`id`")
                except FieldError as exc:
                    problems.append(str(exc))
                    ident = None
                if ident is not None and ident in seen:  # 1 and "1" are one id where predictions meet cases
                    problems.append(f"{where}: duplicate id (also row {seen[ident]})")
                elif ident is not None:
                    seen[ident] = k
        out.append((q, steps))
    if problems:
        raise InputError(problems)
    if not out:
        raise InputError(["no rows"])
    return out


def resolve_prm(prm: str, revision: str | None = None, trust_remote_code: bool = False) -> str:
    """A local PRM directory as is; a Hub id (org/name) snapshotted into the Hugging Face cache."""
    if Path(prm).exists():
        if not Path(prm).is_dir():
            raise ValueError(f"--prm {prm}: not a directory (give a model directory or a Hub id org/name)")
        return str(prm)
    if not HUB_ID_RE.match(prm):
        raise FileNotFoundError(f"--prm {prm}: no such directory, and not a Hub id (org/name)")
    return resolve_dir(prm, trust_remote_code, revision)


def _num_labels(prm_dir: str) -> int | None:
    cfg = Path(prm_dir) / "config.json"
    if not cfg.exists():
        return None
    c = read_json(cfg)
    return int(c["num_labels"]) if "num_labels" in c else (len(c["id2label"]) if c.get("id2label") else None)


def prm_spec(prm_dir: str, adapter: str | None = None, params: dict | None = None, *, dtype: str | None = None,
             max_length: int | None = None, trust_remote_code: bool = False, ref_model: str | None = None) -> dict:
    """The spec `load.load_adapter` takes, for a local PRM directory: adapter `trained` for a directory
    this workflow wrote (its prm.json), else the adapter given (required: a released checkpoint does not
    say which family it is). Options are checked here, before any weight is read."""
    params = dict(params or {})
    trained = (Path(prm_dir) / FORMAT_FILE).exists()
    if trained:
        if adapter not in (None, "trained"):
            raise ValueError(f"--prm {prm_dir}: a PRM trained by prm-lessons ({FORMAT_FILE}) is scored with "
                             f"adapter trained, not {adapter!r} (leave --adapter out)")
        if params:
            raise ValueError("--params: adapter trained takes no options (its step format is in "
                             f"{FORMAT_FILE})")
        adapter = "trained"
    elif adapter is None:
        raise ValueError(f"--prm {prm_dir}: no {FORMAT_FILE}, so not a PRM trained by prm-lessons; name its "
                         f"family with --adapter ({', '.join(a for a in ADAPTERS if a != 'trained')})")
    elif adapter == "trained":
        raise ValueError(f"--adapter trained: {prm_dir} has no {FORMAT_FILE} (not a PRM trained by prm-lessons)")
    elif adapter not in ADAPTERS:
        raise ValueError(f"--adapter {adapter!r}: unknown (allowed: {', '.join(ADAPTERS)})")
    if adapter in ("token_classification", "declared"):
        try:
            if adapter == "declared":
                mc = params.get("model_class")
                check_declared_params(params, _num_labels(prm_dir) if mc == "token_classification" else
                                      (2 if mc == "process_reward" and not trust_remote_code else None))
            else:
                check_token_classification_params(params, _num_labels(prm_dir))
        except ValueError as e:
            raise ValueError(f"--{e}") from None
    if adapter == "eurus" and not ref_model:
        raise ValueError("--adapter eurus needs --ref-model (the reference model of the implicit PRM)")
    spec = {"adapter": adapter, "path": str(prm_dir), "dtype": dtype, "trust_remote_code": trust_remote_code,
            "max_length": max_length, "params": params}
    if adapter == "eurus":
        spec.update(ref_path=ref_model, ref_dtype=dtype)
    return spec


def score_parsed(adapter, items: list[tuple[str, list[str]]], batch_tokens: int = 16384, batch_size: int = 64,
                 progress: Callable[[int, int, float], None] | None = None):
    """Scores of every (problem, steps) item, CHUNK_ROWS at a time (progress(done, total, seconds) after
    each): per item the list the adapter returns (a PRM: the scores of the steps that fit max_length;
    an ORM: one score), and the ScoreStats."""
    stats, out, t0 = ScoreStats(), [], time.perf_counter()
    for start in range(0, len(items), CHUNK_ROWS):
        chunk = items[start:start + CHUNK_ROWS]
        out += score_responses(adapter, [q for q, _ in chunk], [s for _, s in chunk], batch_tokens, batch_size, stats)
        if progress:
            progress(len(out), len(items), time.perf_counter() - t0)
    return out, stats


def output_rows(rows: list[dict], items: list[tuple[str, list[str]]], scores: list[list[float]],
                outcome: bool) -> tuple[list[dict], dict]:
    """Every input row plus its scores: a PRM's `step_scores` (one per step; null for a step past
    max_length, or a non-finite score) and `n_steps_scored`; an outcome RM's `outcome_score`. Returns the
    rows and counts (rows with cut steps, non-finite scores)."""
    counts = {"rows": len(rows), "rows_truncated": 0, "steps": 0, "steps_scored": 0, "nonfinite": 0}
    out = []
    for r, (_, steps), s in zip(rows, items, scores):
        finite = [x if math.isfinite(x) else None for x in s]
        counts["nonfinite"] += sum(x is None for x in finite)
        if outcome:
            out.append({**r, "outcome_score": finite[0] if finite else None})
            continue
        counts["steps"] += len(steps)
        counts["steps_scored"] += len(s)
        counts["rows_truncated"] += len(s) < len(steps)
        out.append({**r, "step_scores": finite + [None] * (len(steps) - len(s)), "n_steps_scored": len(s)})
    return out, counts


def _json_safe(value):
    """NaN/inf (a .parquet input's missing values) as null: JSON has no NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value.tolist() if hasattr(value, "tolist") else value  # numpy arrays and scalars of a .parquet row


def write_jsonl(rows: list[dict], path: str) -> None:
    with atomic_path(path) as tmp, open(tmp, "w") as fh:  # a failed run leaves no half file
        fh.writelines(json.dumps(_json_safe(r), ensure_ascii=False, allow_nan=False, default=str) + "\n"
                      for r in rows)


def score_file(rows: list, prm: str, output: str, *, adapter: str | None = None, params: dict | None = None,
               revision: str | None = None, dtype: str | None = None, max_length: int | None = None,
               trust_remote_code: bool = False, ref_model: str | None = None, batch_tokens: int = 16384,
               batch_size: int = 64, progress: Callable[[int, int, float], None] | None = None) -> dict:
    """Check the rows, load the PRM (`prm`: a directory or a Hub id), score every step of every row,
    write `output` (JSONL, one row per input row, in order). Returns a summary."""
    items = parse_rows(rows)
    prm_dir = resolve_prm(prm, revision, trust_remote_code)
    spec = prm_spec(prm_dir, adapter, params, dtype=dtype, max_length=max_length,
                    trust_remote_code=trust_remote_code,
                    ref_model=resolve_prm(ref_model, None, trust_remote_code) if ref_model else None)
    model = load_adapter(spec)
    scores, stats = score_parsed(model, items, batch_tokens, batch_size, progress)
    out, counts = output_rows(rows, items, scores, model.outcome)
    write_jsonl(out, output)
    return {**counts, "adapter": spec["adapter"], "prm_dir": prm_dir, "outcome": model.outcome,
            "max_length": model.max_length, "forward_passes": stats.forward_passes, "tokens": stats.tokens,
            "seconds": stats.seconds, "token_info": model.token_info()}
