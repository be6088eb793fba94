"""Monte Carlo estimation of step labels (Math-Shepherd style; the paper's §2.1, §3.1.2, §3.1.4).

For a response with steps s_0..s_{n-1} and a step i, the completer continues the prefix
(question, s_0..s_i) K times; ``mc_value_i`` = share of the K completions whose final answer is the
gold answer. Hard label at threshold t: ``mc_value > t`` (paper: t = 0, "any completion succeeds");
soft label: ``mc_value``. Steps after the first negative step are dropped.

The table keeps raw counts per step (``n_success``, ``n_total``; null where a step was not rolled
out) so any threshold the counts decide can be applied later without regenerating.

Cost (MC is the paper's dominant compute). Completions are generated for a step only while they can
still change a label the configuration needs (:class:`Needs`, derived from the training-set
variants):

* hard labels at threshold t are *decided* once ``s > t·K`` (positive) or ``s + (K - n) ≤ t·K``
  (negative): for t = 0 a step stops at its first success;
* soft labels need all K completions of every step up to the first zero step;
* steps after the first negative step are never rolled out;
* protocol ``binary`` searches the first negative step by bisection (OmegaPRM, Luo et al. 2024).
  It ASSUMES MONOTONE LABELS (a positive step implies every earlier step is positive): steps it
  skips before the first error are marked ``inferred`` and get a positive hard label; it decides
  one threshold only and gives no soft labels.

Rounds batch across responses: with ``lanes`` 1 each round makes ONE engine call holding every pending
completion of every active response (``round_size`` completions per active step); with ``lanes`` L ≥ 2
(mc.lanes) the responses are pipelined in about L calls, so a call's grading (CPU) runs while the engine
generates the next call and the engine does not wait between rounds (:func:`run_mc`). Each completion is its own
request with a fixed seed derived from (seed, problem_id, sample_idx, step, j), so the naive
protocol (K completions for every step) and the early-stopped one draw identical completions and
give identical hard labels; the engine shares the common prefix through prefix caching (vLLM
``enable_prefix_caching``), which is what ``n`` completions per request would buy, while keeping
the per-completion seed. Under sampling.seed_mode per_batch a completion depends on its call's batch, so
these identities (protocols, lanes) hold only for per_request.
"""
from __future__ import annotations

import atexit
import logging
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Callable, Sequence

from ..generation.engine import SamplingSpec, derive_seed, render_chat
from ..grading import pool as grading_pool
from . import clean_steps

log = logging.getLogger(__name__)

PROTOCOLS = ("early", "naive", "binary")


class LabelError(ValueError):
    """Labels that the stored counts cannot decide (names the response and what is missing)."""


def as_fraction(t: float | str | Fraction) -> Fraction:
    """Thresholds as exact fractions (0.125 → 1/8) so ``s > t·K`` has no float edge cases."""
    return Fraction(str(t)).limit_denominator(1000) if not isinstance(t, Fraction) else t


def decide(s: int, n: int, k: int, t: Fraction) -> bool | None:
    """Hard label at threshold t from s successes in n of K completions; None if still undecided."""
    if s > t * k:
        return True
    if s + (k - n) <= t * k:
        return False
    return None


@dataclass(frozen=True)
class Needs:
    """What the configured training sets need from MC: hard labels at these thresholds, and/or
    exact counts (soft labels)."""

    thresholds: tuple[Fraction, ...] = (Fraction(0),)
    soft: bool = False

    @classmethod
    def from_params(cls, d: dict | None) -> "Needs":
        d = d or {}
        ts = tuple(sorted({as_fraction(t) for t in d.get("thresholds", [0])}))
        return cls(thresholds=ts, soft=bool(d.get("soft", False)))

    def to_params(self) -> dict:
        return {"thresholds": [float(t) for t in self.thresholds], "soft": self.soft}


@dataclass
class MCInput:
    problem_id: str
    sample_idx: int
    question: str
    answer: str
    steps: list[str]
    correct: bool | None = None  # the response's own grade (for last_step="answer")


@dataclass
class _State:
    """Per-response rollout state machine (one of the three protocols)."""

    n_steps: int
    k: int
    needs: Needs
    protocol: str
    s: list = field(default_factory=list)
    n: list = field(default_factory=list)
    inferred: list = field(default_factory=list)
    tokens: int = 0
    completions: int = 0
    truncated: int = 0

    def __post_init__(self):
        self.s = [None] * self.n_steps
        self.n = [None] * self.n_steps
        self.inferred = [False] * self.n_steps
        self.live = set(self.needs.thresholds)
        self.soft_live = self.needs.soft
        self.cur = 0  # linear protocols: the step being rolled out
        self.lo, self.hi = 0, self.n_steps  # binary: first negative lies in [lo, hi]
        self.done = self.n_steps == 0
        if self.protocol == "binary":
            if self.needs.soft:
                raise ValueError("mc.protocol 'binary' decides hard labels at one threshold only; "
                                 "soft labels (mc_soft / consensus_soft variants) need 'early' or 'naive'")
            self.t = min(self.needs.thresholds)

    # -- which completions to request ------------------------------------------------------------
    def _counts(self, i: int) -> tuple[int, int]:
        return (self.s[i] or 0), (self.n[i] or 0)

    def _needs_more(self, i: int) -> bool:
        s, n = self._counts(i)
        if n >= self.k:
            return False
        if self.protocol == "naive" or (self.protocol == "early" and self.soft_live):
            return True
        live = [self.t] if self.protocol == "binary" else self.live
        return any(decide(s, n, self.k, t) is None for t in live)

    def pending(self, round_size: int) -> list[tuple[int, int]]:
        """(step, number of completions) to generate in the next round."""
        if self.done:
            return []
        if self.protocol == "naive":  # every step, all K at once
            return [(i, self.k - (self.n[i] or 0)) for i in range(self.n_steps) if (self.n[i] or 0) < self.k]
        i = self.active_step()
        left = self.k - self._counts(i)[1]
        if self.protocol == "early" and self.soft_live:
            return [(i, left)]  # exact counts needed: every remaining completion at once
        return [(i, min(round_size, left))]

    def active_step(self) -> int:
        return (self.lo + self.hi) // 2 if self.protocol == "binary" else self.cur

    # -- results -----------------------------------------------------------------------------------
    def record(self, i: int, successes: int, total: int) -> None:
        self.s[i] = (self.s[i] or 0) + successes
        self.n[i] = (self.n[i] or 0) + total
        if self._needs_more(i):
            return
        if self.protocol == "naive":
            self.done = all((x or 0) >= self.k for x in self.n)
        elif self.protocol == "early":
            s, n = self._counts(i)
            for t in list(self.live):
                if decide(s, n, self.k, t) is False:
                    self.live.discard(t)
            if self.soft_live and s == 0:
                self.soft_live = False
            self.cur += 1
            self.done = (not self.live and not self.soft_live) or self.cur >= self.n_steps
        else:  # binary
            s, n = self._counts(i)
            if decide(s, n, self.k, self.t):
                for j in range(self.lo, i):
                    if self.n[j] is None:
                        self.inferred[j] = True
                self.lo = i + 1
            else:
                self.hi = i
            self.done = self.lo >= self.hi


def spec_from_config(mc: dict):
    return SamplingSpec(n=1, temperature=float(mc.get("temperature", 0.7)), top_p=float(mc.get("top_p", 0.8)),
                        max_tokens=int(mc.get("max_tokens", 512)), seed=None)


def completion_seed(base_seed: int, problem_id: str, sample_idx: int, step: int, j: int) -> int:
    return derive_seed("mc", base_seed, problem_id, int(sample_idx), int(step), int(j))


def run_mc(items: Sequence[MCInput], engine, *, k: int, needs: Needs, protocol: str = "early",
           round_size: int = 1, seed: int = 0, spec=None,
           prompt_fn: Callable[[str, str], str], grade_fn: Callable[[list[str], list[str]], list[bool]],
           separator: str = "\n\n", last_step: str = "answer", keep_outcomes: bool = False, lanes: int = 1,
           timing: dict | None = None) -> list[dict]:
    """Label every response in `items`; return one row per response (the `mc` table's columns).

    last_step: "answer" (default): the last step, which states the final answer, is labelled by the
    response's own grade (K successes if correct, 0 if not; no generation), since a step that states a wrong
    final answer is wrong, whatever completions from it might do; a response whose grade is unknown
    (``correct`` None) has its last step rolled out. "rollout": the last step is completed like any other,
    which only measures whether the completer overwrites a stated answer (a wrong one can come out positive).

    keep_outcomes: each row also gets ``outcomes``, per step the 0/1 grade of every completion in
    completion-index order (the label audit reads K' < K and every threshold from them).

    prompt_fn(question, assistant_prefix) renders the completer prompt (chat template, assistant turn
    prefilled with the prefix); grade_fn(full_texts, gold_answers) → correct flags. The engine gets
    `generate` calls with one request per completion (n=1, its own seed).

    lanes (mc.lanes): 1 = sequential, each round's grading done before the next round is generated (every
    response's next round depends on its grades). L ≥ 2 pipelines across responses: an engine call takes
    at most ceil(active / L) of the responses whose grades are in, its grading runs in a background thread
    while the next call generates for the others, and the oldest grading is waited for only when L calls
    are outstanding or no response is ready. The calls' composition depends only on the responses' states
    (blocking waits, never polling), and a completion only on its seed, so the labels are the same for
    every L (with per-request seeds: sampling.seed_mode per_request).

    timing: a dict filled with the run's seconds: generate (engine calls), grade (grade_fn, wherever it
    ran), wait (the engine waiting for grades), wall, engine_idle_share (1 - generate / wall), calls.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"mc.protocol must be one of {PROTOCOLS}, not {protocol!r}")
    if k < 1 or round_size < 1:
        raise ValueError("mc.completions and mc.round_size must be ≥ 1")
    if last_step not in ("rollout", "answer"):
        raise ValueError(f"mc.last_step must be 'rollout' or 'answer', not {last_step!r}")
    if int(lanes) < 1:
        raise ValueError(f"mc.lanes must be ≥ 1, not {lanes!r}")
    lanes = int(lanes)
    spec = spec if spec is not None else spec_from_config({})
    items = [MCInput(it.problem_id, int(it.sample_idx), it.question, str(it.answer), clean_steps(it.steps),
                     it.correct) for it in items]
    states = [_State(len(it.steps), k, needs, protocol) for it in items]
    outcomes = [[[] for _ in range(st.n_steps)] for st in states]
    prefixes: dict[tuple[int, int], str] = {}

    def prefix(r: int, i: int) -> str:
        key = (r, i)
        if key not in prefixes:
            prefixes[key] = separator.join(items[r].steps[: i + 1]) + separator
        return prefixes[key]

    def requests_of(r: int) -> list[tuple[int, int, int]]:
        """Response r's next round, (r, step, completion index j); [] once it is done. A last step labelled
        by the response's own grade is recorded here (no generation), then its next round is asked for."""
        st = states[r]
        while True:
            reqs, progressed = [], False
            for i, m in st.pending(round_size):
                if last_step == "answer" and i == st.n_steps - 1 and items[r].correct is not None:
                    rest = st.k - (st.n[i] or 0)
                    st.record(i, rest if items[r].correct else 0, rest)
                    outcomes[r][i].extend([int(bool(items[r].correct))] * rest)  # as if every completion kept it
                    progressed = True
                    continue
                j0 = st.n[i] or 0
                reqs.extend((r, i, j) for j in range(j0, j0 + m))
            if reqs or not progressed:
                return reqs

    def grade_call(texts: list[str], golds: list[str]) -> tuple[list[bool], float]:
        t = time.perf_counter()
        ok = grade_fn(texts, golds)
        return ok, time.perf_counter() - t

    clock = {"generate": 0.0, "grade": 0.0, "wait": 0.0}

    def collect(call: dict) -> None:
        """Wait for a call's grades (the engine's idle time) and record them."""
        t = time.perf_counter()
        ok, grade_s = call["graded"].result() if pool else call["graded"]()  # sequential: grade now
        waited = time.perf_counter() - t
        clock["wait"] += waited
        clock["grade"] += grade_s
        requests, comps = call["requests"], call["comps"]
        if len(ok) != len(requests):
            raise RuntimeError(f"grader returned {len(ok)} results for {len(requests)} completions")
        agg: dict[tuple[int, int], list[int]] = {}
        for (r, i, _), c, good in zip(requests, comps, ok):
            a = agg.setdefault((r, i), [0, 0])
            a[0] += int(bool(good))
            a[1] += 1
            outcomes[r][i].append(int(bool(good)))  # a response's requests run in completion-index order
            st = states[r]
            st.tokens += int(c.n_tokens)
            st.completions += 1
            st.truncated += int(c.finish_reason == "length")
        for (r, i), (succ, tot) in agg.items():
            states[r].record(i, succ, tot)
        log.info("mc call %d: graded %d completions in %.1fs; the engine waited %.1fs for them",
                 call["index"], len(requests), grade_s, waited)

    pool = ThreadPoolExecutor(1, thread_name_prefix="mc-grading") if lanes > 1 else None
    outstanding: deque[dict] = deque()  # calls generated, grades not yet recorded (oldest first)
    active = [r for r, st in enumerate(states) if not st.done]  # in index order
    rounds = 0
    t_start = time.perf_counter()
    try:
        while True:
            while len(outstanding) >= lanes:
                collect(outstanding.popleft())
            active = [r for r in active if not states[r].done]
            busy = {r for call in outstanding for r in call["responses"]}
            cap = -(-len(active) // lanes)  # ceil: the ready responses split into about `lanes` calls
            requests: list[tuple[int, int, int]] = []
            taken: list[int] = []
            for r in active:
                if len(taken) >= cap:
                    break
                if r in busy:
                    continue
                reqs = requests_of(r)
                if reqs:
                    requests.extend(reqs)
                    taken.append(r)
            if not requests:
                if not outstanding:
                    break
                collect(outstanding.popleft())  # nothing ready: the engine waits for the oldest grades
                continue
            rounds += 1
            prompts = [prompt_fn(items[r].question, prefix(r, i)) for r, i, _ in requests]
            seeds = [completion_seed(seed, items[r].problem_id, items[r].sample_idx, i, j) for r, i, j in requests]
            t0 = time.perf_counter()
            outs = engine.generate(prompts, spec, seeds)
            gen_s = time.perf_counter() - t0
            clock["generate"] += gen_s
            if len(outs) != len(prompts):
                raise RuntimeError(f"engine returned {len(outs)} results for {len(prompts)} prompts")
            comps = [o[0] for o in outs]
            texts = [prefix(r, i) + c.text for (r, i, _), c in zip(requests, comps)]
            golds = [items[r].answer for r, _, _ in requests]
            log.info("mc call %d: %d completions for %d responses, %d tokens, generated in %.1fs", rounds,
                     len(requests), len(taken), sum(c.n_tokens for c in comps), gen_s)
            call = {"index": rounds, "requests": requests, "comps": comps, "responses": taken,
                    "graded": pool.submit(grade_call, texts, golds) if pool else partial(grade_call, texts, golds)}
            outstanding.append(call)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    wall = time.perf_counter() - t_start
    summary = {"lanes": lanes, "calls": rounds, "wall_seconds": round(wall, 3),
               "generate_seconds": round(clock["generate"], 3), "grade_seconds": round(clock["grade"], 3),
               "wait_seconds": round(clock["wait"], 3),
               "engine_idle_share": round(1.0 - clock["generate"] / wall, 4) if wall > 0 and rounds else None}
    if timing is not None:
        timing.update(summary)
    log.info("mc done: %d responses, %d engine calls, %d completions, %d tokens, %.1fs (generate %.1fs, grade "
             "%.1fs, engine waited %.1fs for grades; idle share %s)", len(items), rounds,
             sum(st.completions for st in states), sum(st.tokens for st in states), wall, clock["generate"],
             clock["grade"], clock["wait"], summary["engine_idle_share"])
    return [{
        "problem_id": it.problem_id, "sample_idx": it.sample_idx, "n_steps": st.n_steps, "k": k,
        "n_success": list(st.s), "n_total": list(st.n), "inferred": list(st.inferred),
        "tokens_generated": st.tokens, "n_completions": st.completions, "n_truncated": st.truncated,
        **({"outcomes": oc} if keep_outcomes else {}),
    } for it, st, oc in zip(items, states, outcomes)]


# -- labels from counts ------------------------------------------------------------------------------

def hard_labels(n_success: Sequence, n_total: Sequence, k: int, threshold, inferred: Sequence | None = None,
                where: str = "") -> list[float] | None:
    """Hard labels at `threshold`, truncated after the first negative step; None for 0 steps.

    Raises LabelError when a needed step was not rolled out far enough to decide (the MC run was
    configured for other thresholds)."""
    t = as_fraction(threshold)
    labels: list[float] = []
    for i in range(len(n_total)):
        if inferred is not None and inferred[i]:
            labels.append(1.0)
            continue
        s, n = n_success[i], n_total[i]
        verdict = None if n is None else decide(int(s), int(n), k, t)
        if verdict is None:
            raise LabelError(f"{where}: MC hard label of step {i} at threshold {float(t):g} is undecided "
                             f"({s}/{n} of K={k}); rerun MC with this threshold among the needed ones")
        labels.append(1.0 if verdict else 0.0)
        if not verdict:
            break
    return labels or None


def soft_labels(n_success: Sequence, n_total: Sequence, k: int, where: str = "") -> list[float] | None:
    """Soft labels (mc_value = s/K) up to and including the first zero step; None for 0 steps."""
    labels: list[float] = []
    for i in range(len(n_total)):
        s, n = n_success[i], n_total[i]
        if n is None or int(n) < k:
            raise LabelError(f"{where}: MC soft label of step {i} needs all K={k} completions, has {n}; "
                             "soft labels need mc.protocol 'early' or 'naive' with a soft variant configured")
        labels.append(int(s) / k)
        if int(s) == 0:
            break
    return labels or None


def first_error(n_success: Sequence, n_total: Sequence, k: int, threshold, inferred: Sequence | None = None,
                where: str = "") -> int | None:
    """0-based first negative step at `threshold` (-1: none); None for a response with no steps."""
    labels = hard_labels(n_success, n_total, k, threshold, inferred, where)
    if labels is None:
        return None
    return len(labels) - 1 if labels[-1] == 0.0 else -1


# -- the engine and grader behind run_mc ---------------------------------------------------------------

def make_prompt_fn(tokenizer, system_prompt: str | None):
    return lambda question, prefix: render_chat(tokenizer, system_prompt, question, prefix)


def make_grade_fn(timeout_s: float, workers: int | None = None):
    """grade_fn for run_mc: grading_pool.grade_many on ONE pool of worker processes kept across rounds (started
    at the first call; ``grade_fn.close()`` or the process's exit stops it), not a pool started and stopped
    every round: each worker start imports math-verify and SymPy, which on a CPU host takes cores from the
    engine generating meanwhile."""
    size = max(1, int(workers)) if workers is not None else 2
    pool: list[grading_pool.GradingPool] = []

    def grade_fn(texts, golds):
        if not pool:
            pool.append(grading_pool.GradingPool(size))
            atexit.register(pool[0].close)
        res = grading_pool.grade_many(texts, golds, timeout_s=timeout_s, pool=pool[0])
        return [bool(getattr(g, "correct", g)) for g in res]

    def close() -> None:
        while pool:
            pool.pop().close()

    grade_fn.close = close
    return grade_fn
