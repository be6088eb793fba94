"""PRM-guided greedy step search (paper App. A, Table 8) and its metrics.

From each problem the policy proposes K candidate next steps (sampling stops at the step separator),
the PRM scores the prefix plus each candidate, the best-scored candidate is kept (ties: the lowest
candidate index), and this repeats until the kept candidate ends the response (EOS, not the separator)
or a limit is hit. Every problem ends with a status:

| status         | meaning |
|----------------|---------|
| `ended`        | the kept candidate ended the response (the policy's EOS) |
| `max_steps`    | `max_steps` steps kept without an end |
| `max_tokens`   | the kept path reached `max_tokens` policy tokens without an end |
| `context`      | prompt + path + `max_step_tokens` no longer fit the policy's max_model_len |
| `no_candidate` | every candidate of a depth was empty (nothing to score) |

Efficiency: at each depth the candidates of ALL unfinished problems go to the engine as ONE
`engine.generate` call (prompt = chat-rendered question + the kept steps, n = K, seed
`derive_seed(seed, problem_id, depth)`; vLLM's prefix caching shares the prompt), and ONE scorer call
scores every candidate (`search_scorers.candidate_scorer`: incremental on a KV-cached prefix where the PRM
allows it). The kept path follows the step-format contract: its steps are the kept candidates
(stripped, as `steps.split_steps` makes them), the response is their `join_steps`, and
`split_steps(response) == steps`.

This module imports no torch: the scorer is passed in (rule glue builds it), and the metrics run in the
analysis environment.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from ..generation.engine import EngineStats, SamplingSpec, derive_seed, log_progress, render_chat
from ..generation.sampling import long_prompts
from ..grading.pool import grade_many
from ..metrics.bon import bon_problem_table
from ..steps import COT_SYSTEM_PROMPT, DEFAULT_SEPARATOR, join_steps

log = logging.getLogger(__name__)

STATUSES = ("ended", "max_steps", "max_tokens", "context", "no_candidate")
SEARCH_COLUMNS = ["problem_id", "dataset", "question", "answer", "response", "steps", "status", "n_depths",
                  "candidates", "candidate_scores", "candidate_ended", "chosen", "tokens_generated",
                  "tokens_path", "tokens_scored", "pred", "correct", "grade_status"]


@dataclass
class SearchSettings:
    candidates: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    max_step_tokens: int = 512
    max_steps: int = 40
    max_tokens: int = 2048
    seed: int = 0
    separator: str = DEFAULT_SEPARATOR
    system_prompt: str | None = COT_SYSTEM_PROMPT
    batch_size: int = 64  # problems searched together (one engine call per depth holds batch_size × K prompts)

    @classmethod
    def from_config(cls, search: dict, sampling: dict) -> "SearchSettings":
        """From the validated `search` section and the sampling section (separator, system prompt)."""
        return cls(candidates=int(search["candidates"]), temperature=float(search["temperature"]),
                   top_p=float(search["top_p"]), max_step_tokens=int(search["max_step_tokens"]),
                   max_steps=int(search["max_steps"]), max_tokens=int(search["max_tokens"]),
                   seed=int(search["seed"]), separator=sampling.get("step_separator", DEFAULT_SEPARATOR),
                   system_prompt=sampling.get("system_prompt", COT_SYSTEM_PROMPT),
                   batch_size=int(search.get("batch_size", 64)))


def pick(scores) -> int | None:
    """Index of the best score; ties go to the lowest index; NaN / None never win; None if none is finite."""
    best, arg = -math.inf, None
    for i, s in enumerate(scores):
        if s is not None and not (isinstance(s, float) and math.isnan(s)) and (arg is None or s > best):
            best, arg = s, i
    return arg


class _State:
    __slots__ = ("pid", "question", "steps", "path_tokens", "generated", "status", "depths")

    def __init__(self, pid: str, question: str):
        self.pid, self.question = pid, question
        self.steps: list[str] = []
        self.path_tokens = self.generated = 0
        self.status: str | None = None
        self.depths: list[dict] = []


def greedy_search(engine, scorer, problems: pd.DataFrame, settings: SearchSettings,
                  max_model_len: int | None = None, what: str = "search") -> list[dict]:
    """Greedy search for every problem (rows with problem_id, question); one record per problem, in
    order (SEARCH_COLUMNS up to tokens_scored; grading is `grade_records`). Problems are searched
    `settings.batch_size` at a time; within a batch every depth is one engine call and one scorer call,
    after which a progress line (`what`: problems finished / total, depth, tokens/s, ETA) is logged, so a
    long job shows it is alive every depth (a minute or two of 72B work) and a killed one how far it got."""
    out: list[dict] = []
    t0, total = time.perf_counter(), len(problems)
    for start in range(0, len(problems), max(1, settings.batch_size)):
        chunk = problems.iloc[start:start + max(1, settings.batch_size)]
        states = [_State(str(p), str(q)) for p, q in zip(chunk["problem_id"], chunk["question"])]
        before = (len(out), sum(r["tokens_generated"] for r in out))

        def progress(depth: int, batch: list[_State], start=start, before=before) -> None:
            done = before[0] + sum(st.status is not None for st in batch)
            tokens = before[1] + sum(st.generated for st in batch)
            log_progress(log, f"{what}, depth {depth} of problems {start + 1}-{start + len(batch)}", done, total,
                         EngineStats(generated_tokens=tokens, seconds=time.perf_counter() - t0))

        _search_batch(engine, scorer, states, settings, max_model_len, progress)
        by_key = getattr(scorer, "tokens_by_key", {})
        for st, (_, row) in zip(states, chunk.iterrows()):
            out.append({"problem_id": st.pid, "dataset": row.get("dataset"), "question": st.question,
                        "answer": row.get("answer"), "response": join_steps(st.steps, settings.separator),
                        "steps": list(st.steps), "status": st.status, "n_depths": len(st.depths),
                        "candidates": [d["candidates"] for d in st.depths],
                        "candidate_scores": [d["scores"] for d in st.depths],
                        "candidate_ended": [d["ended"] for d in st.depths],
                        "chosen": [d["chosen"] for d in st.depths], "tokens_generated": st.generated,
                        "tokens_path": st.path_tokens, "tokens_scored": int(by_key.get(st.pid, 0))})
        log.info("searched %d/%d problems (%d generated tokens, %d scored tokens)", len(out), len(problems),
                 sum(r["tokens_generated"] for r in out), sum(r["tokens_scored"] for r in out))
    return out


def _search_batch(engine, scorer, states: list[_State], s: SearchSettings, max_model_len: int | None,
                  progress=None) -> None:
    spec = SamplingSpec(n=s.candidates, temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_step_tokens,
                        stop=[s.separator])
    depth = 0
    while True:
        active = [st for st in states if st.status is None]
        if not active:
            return
        prompts = []
        for st in active:
            prefix = join_steps(st.steps, s.separator) + s.separator if st.steps else ""
            prompts.append(render_chat(engine.tokenizer, s.system_prompt, st.question, prefix))
        if max_model_len is not None:  # vLLM refuses a prompt that leaves no room: stop that problem first
            long = long_prompts(engine.tokenizer, [st.pid for st in active], prompts, max_model_len,
                                s.max_step_tokens)
            fits = [st.pid not in long for st in active]
            for st, ok in zip(active, fits):
                if not ok:
                    st.status = "context"
            prompts = [p for p, ok in zip(prompts, fits) if ok]
            active = [st for st, ok in zip(active, fits) if ok]
            if not active:
                return
        outs = engine.generate(prompts, spec, seeds=[derive_seed(s.seed, st.pid, depth) for st in active])
        requests, valid = [], []
        for st, comps in zip(active, outs):
            st.generated += sum(int(c.n_tokens) for c in comps)
            # a step is stripped text; an empty candidate (the separator or EOS at once) is not a step
            ok = [j for j, c in enumerate(comps) if c.text.strip()]
            valid.append(ok)
            requests.append((st.pid, st.question, list(st.steps), [comps[j].text.strip() for j in ok]))
        scored = scorer.score([r for r, ok in zip(requests, valid) if ok])
        it = iter(scored)
        for st, comps, ok in zip(active, outs, valid):
            scores = [math.nan] * len(comps)
            if ok:
                for j, v in zip(ok, next(it)):
                    scores[j] = float(v)
            j = pick(scores)  # an empty candidate's score is NaN: never picked
            st.depths.append({"candidates": [c.text.strip() for c in comps], "scores": scores,
                              "ended": [bool(c.ended) for c in comps], "chosen": -1 if j is None else j})
            if j is None:
                st.status = "no_candidate"
            else:
                c = comps[j]
                st.steps.append(c.text.strip())
                st.path_tokens += int(c.n_tokens)
                if c.ended is None:
                    raise ValueError(f"engine {getattr(engine, 'backend', engine)!r} does not report whether a "
                                     "completion ended (Completion.ended): step search cannot tell an end "
                                     "from the separator")
                if c.ended:
                    st.status = "ended"
                elif len(st.steps) >= s.max_steps:
                    st.status = "max_steps"
                elif st.path_tokens >= s.max_tokens:
                    st.status = "max_tokens"
            if st.status is not None and hasattr(scorer, "release"):
                scorer.release(st.pid)
        if progress is not None:
            progress(depth, states)
        depth += 1


def grade_records(records: list[dict], grading: dict, answer_format: str = "plain",
                  keep_units: bool = False) -> pd.DataFrame:
    """The search records as a table (SEARCH_COLUMNS), each kept path graded against the gold answer by
    `grading.grader` (``keep_units``: as grading.pool.grade_many)."""
    df = pd.DataFrame(records, columns=SEARCH_COLUMNS[:-3])
    if len(df):
        res = grade_many(df["response"].tolist(), df["answer"].astype(str).tolist(),
                         timeout_s=grading.get("timeout_s", 5.0), workers=grading.get("workers", 1),
                         answer_format=answer_format, grader=grading.get("grader", "math_verify"),
                         keep_units=keep_units)
    else:
        res = []
    df["pred"] = [r.pred for r in res]
    df["correct"] = [bool(r.correct) for r in res]
    df["grade_status"] = [r.status for r in res]
    return df


def merge_shards(shards: Sequence[tuple[str, pd.DataFrame]], expected: Sequence[str], where: str) -> pd.DataFrame:
    """(path, table) of every problem shard of one benchmark's search → the table one unsharded job writes:
    one row per expected problem id, in `expected`'s order (the problems table's). Raises InputError
    naming each problem found in two shards (or twice in one), each expected problem in none (a lost row:
    rerun its shard job) and each problem no shard should hold (a stale shard of another split or limit)."""
    owners: dict[str, list[str]] = {}
    for path, df in shards:
        for pid in df["problem_id"].astype(str):
            owners.setdefault(pid, []).append(path)
    want = [str(p) for p in expected]
    wanted = set(want)
    problems = [f"problem_id {p} is in {len(ps)} shard rows: {', '.join(ps)}"
                for p, ps in owners.items() if len(ps) > 1]
    problems += [f"problem_id {p} is in no shard (a shard table is missing it: rerun its search job)"
                 for p in want if p not in owners]
    problems += [f"problem_id {p} (in {', '.join(ps)}) is not a searched problem (a stale shard?)"
                 for p, ps in owners.items() if p not in wanted]
    if problems:
        raise InputError(problems, where)
    frames = [df for _, df in shards if len(df)]
    if not frames:  # no problem at all: the empty table the unsharded job writes
        return shards[0][1].iloc[:0] if shards else grade_records([], {})
    df = pd.concat(frames, ignore_index=True)
    order = {p: i for i, p in enumerate(want)}
    return df.iloc[np.argsort([order[str(p)] for p in df["problem_id"]], kind="stable")].reset_index(drop=True)


def summary(df: pd.DataFrame) -> dict:
    """Counts a log and the table metadata report: statuses, tokens, accuracy."""
    return {"problems": int(len(df)), "status": {k: int((df["status"] == k).sum()) for k in STATUSES},
            "accuracy": float(df["correct"].mean()) if len(df) else float("nan"),
            "tokens_generated": int(df["tokens_generated"].sum()), "tokens_scored": int(df["tokens_scored"].sum()),
            "grade_status": {str(k): int(v) for k, v in df["grade_status"].value_counts().items()}}


# ----------------------------------------------------------------------------------------------
# metrics: greedy search beside pass@1 / pass@N / maj@N / orm@N of the same policy
# ----------------------------------------------------------------------------------------------

def problem_table(searches: dict[str, pd.DataFrame], samples: pd.DataFrame, n: int | None,
                  maj_grouping: str = "normalized", orm_scores: pd.Series | None = None,
                  pass1_samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (benchmark, problem) of the search problems: 0/1 columns pass, maj, pass1 (mean
    correctness of the N samples: the expected pass@1; with `pass1_samples`, the correctness of that
    table's one response per problem, e.g. greedy: search.pass1), orm (when `orm_scores` is given: one score
    per sample row) and greedy_<prm> per searched PRM. `samples` has the Best-of-N columns (benchmark,
    problem_id, sample_idx, pred, correct); problems not searched are dropped."""
    searched = set()
    for df in searches.values():
        searched |= set(zip(df["benchmark"], df["problem_id"].astype(str)))
    samples = samples[[(b, str(p)) in searched for b, p in zip(samples["benchmark"], samples["problem_id"])]]
    if orm_scores is not None:
        samples = samples.assign(orm_score=orm_scores.loc[samples.index])
    table, _ = bon_problem_table(samples, [], n, maj_grouping, "orm_score" if orm_scores is not None else None)
    sel = samples.sort_values("sample_idx", kind="stable").groupby(["benchmark", "problem_id"], sort=False)
    p1 = {k: float((g.head(n) if n else g)["correct"].mean()) for k, g in sel}
    if pass1_samples is not None:  # its first response per problem; a searched problem without one: NaN
        first = pass1_samples.sort_values("sample_idx", kind="stable").groupby(["benchmark", "problem_id"], sort=False)
        one = {(b, str(p)): float(bool(g["correct"].iloc[0])) for (b, p), g in first}
        p1 = {(b, p): one.get((b, str(p)), np.nan) for b, p in p1}
    table["pass1"] = [p1[(b, p)] for b, p in zip(table["benchmark"], table["problem_id"])]
    for prm, df in searches.items():
        got = {(b, str(p)): float(c) for b, p, c in zip(df["benchmark"], df["problem_id"], df["correct"])}
        table[f"greedy_{prm}"] = [got.get((b, str(p)), np.nan) for b, p in zip(table["benchmark"], table["problem_id"])]
    return table


def search_metrics(table: pd.DataFrame, prms: list[str], n: int, candidates: int, bootstrap: int = 1000,
                   seed: int = 0, confidence: float = 0.95) -> list[dict]:
    """Long rows of results/tables/search.csv (as bon.csv): prm, benchmark, metric, n, accuracy, ci_low,
    ci_high, n_problems; fractions. Baselines (metric pass1 / pass / maj / orm) under prm "_policy";
    greedy search under its PRM (metric greedy, n = candidates); the paired difference greedy − maj@N
    (metric greedy-maj) resamples the same problems for both. Intervals: percentile bootstrap over the
    problems of each benchmark; the average row resamples every benchmark and averages, replicate by
    replicate (as metrics.bon_metrics)."""
    base = [m for m in ("pass1", "pass", "maj", "orm") if m in table.columns]
    cols = base + [f"greedy_{p}" for p in prms]
    rng = np.random.default_rng(seed)
    q = [50 * (1 - confidence), 100 - 50 * (1 - confidence)]
    reps: dict[str, list] = {c: [] for c in cols + [f"diff_{p}" for p in prms]}
    means: dict[str, list[float]] = {c: [] for c in reps}  # per-benchmark accuracies, for the average row
    rows = []

    def emit(bench, col, val, rep, n_problems):
        lo, hi = (np.nanpercentile(rep, q) if rep is not None else (np.nan, np.nan))
        if col.startswith("diff_"):
            prm, metric, nn = col[len("diff_"):], "greedy-maj", n
        elif col.startswith("greedy_"):
            prm, metric, nn = col[len("greedy_"):], "greedy", candidates
        else:
            prm, metric, nn = "_policy", col, n  # pass1 too: the N of its table (mean of N, or greedy: search.pass1)
        rows.append({"prm": prm, "benchmark": bench, "metric": metric, "n": nn, "accuracy": float(val),
                     "ci_low": float(lo), "ci_high": float(hi), "n_problems": int(n_problems)})
        if bench != "average":
            means[col].append(float(val))

    benches = list(dict.fromkeys(table["benchmark"]))
    for bench in benches:
        g = table[table["benchmark"] == bench]
        idx = rng.integers(0, len(g), size=(bootstrap, len(g))) if bootstrap else None
        here = {}
        for c in cols:
            v = g[c].to_numpy(dtype=float)
            here[c] = v[idx].mean(axis=1) if bootstrap else None
            reps[c].append(here[c])
            emit(bench, c, np.nanmean(v) if len(v) else np.nan, here[c], len(g))
        for p in prms:
            d = g[f"greedy_{p}"].to_numpy(dtype=float) - g["maj"].to_numpy(dtype=float)
            r = here[f"greedy_{p}"] - here["maj"] if bootstrap else None
            reps[f"diff_{p}"].append(r)
            emit(bench, f"diff_{p}", np.nanmean(d) if len(d) else np.nan, r, len(g))
    if benches:
        for c in reps:
            rep = np.mean(np.stack(reps[c]), axis=0) if bootstrap else None
            emit("average", c, float(np.mean(means[c])), rep, len(table))
    return rows
