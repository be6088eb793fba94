"""LLMs as Best-of-N verifiers (the paper's App. B.5, Tables 11-12): a prompted judge picks one of each
problem's N responses instead of a PRM, pointwise or pairwise.

Pointwise. The judge reads one response at a time, its steps tagged ``<paragraph_1>`` … (1-indexed,
`labels.judge.tag_steps`), and labels every step correct or incorrect: the answer ends with
``Verdicts:`` and one line ``Paragraph i: correct|incorrect`` per step (read after the last
``Verdicts:``, anywhere when there is none; the last line for a paragraph counts). A response's score
is its fraction of steps judged correct; the highest score wins, ties → the lowest sample_idx
(`metrics.best_index`, as product-scored Best-of-N). Unparsable: a step without a readable verdict
counts as INCORRECT (a response with no readable verdict scores 0) and is counted (``n_unreadable``
steps; ``n_unparsable`` responses with any unread step). A response without steps gets no call and no
score: it is never chosen (a problem none of whose responses has a score has no choice and counts wrong).

Pairwise. A single-elimination tournament over the N responses in sample_idx order: N − 1
comparisons, the judge naming the better of two each time (``\\boxed{A}`` / ``\\boxed{B}``). Byes
(`bracket_round`): with P the largest power of two ≤ N, the first round plays N − P matches between
the last 2(N − P) entrants, paired in order, and the first 2P − N entrants (the lowest sample indices)
get a bye; every later round has a power-of-two field and pairs neighbours. N = 6: round 1 (2 v 3),
(4 v 5), byes 0 and 1; round 2 (0 v 1), (w23 v w45); final. Position: entrants stay in sample_idx
order, so in every comparison the LOWER sample index is "Response A". Unparsable verdict: Response A
(the lower index) advances, and the comparison is counted (``n_unparsable``).

Batching: every pointwise prompt of every problem (all benchmarks) is one engine call; pairwise, all
comparisons of one round across all problems are one call (rounds are sequential). Judgements without a
complete verdict then get one forced continuation call (per round), as `labels.judge` forces: the judge's
own text is continued with the verdict opening (``\\n\\nVerdicts:\\n`` / ``…\\boxed{``) greedily, for a
few tokens, regex-constrained where the engine is vLLM (pointwise: exactly one line per step). Only a
judgement the model ended itself is forced; one cut off at max_tokens is forced only with
``force_truncated``. A forced verdict replaces the text when it reads more than the original (counted,
``n_forced``). ``max_tokens`` 0 asks for the verdict straight away: no free text, every verdict
forced (a small judge's free text is noise; the embedded run). ``tokens_generated`` counts the judge's
tokens, forced continuations re-tokenised.

Seeds: every request has its own, derived from (seed, mode, problem id, the responses' positions in
sample_idx order), so a judgement does not depend on what else is in the batch. The prompts are the
project's (the paper does not print them): package data ``prompts/bon_judge_{pointwise,pairwise}.txt``,
replaceable by a file (config ``bon_judges.pointwise_template`` / ``pairwise_template``; placeholders
below).
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from ..generation.engine import SamplingSpec, derive_seed, render_chat
from ..jobs.shards import in_shard
from ..labels import clean_steps
from ..labels.judge import guided_generate, last_closed_boxed, tag_steps
from ..metrics.bon import bon_metrics
from ..metrics.select import best_or_none
from ..steps import join_steps
from ..templates import TEMPLATE_KINDS, read_template

log = logging.getLogger(__name__)

MODES = ("pointwise", "pairwise")
# placeholders each template may use ({{ and }} for literal braces, as str.format): templates.TEMPLATE_KINDS
PLACEHOLDERS = {m: TEMPLATE_KINDS[m][0] for m in MODES}

POINTWISE_FORCE = "\n\nVerdicts:\n"
PAIRWISE_FORCE = "\n\nThe better response is \\boxed{"
PAIRWISE_REGEX = r"[AB]\}"
# forced-verdict budgets: "Paragraph 12: incorrect\n" is 6-8 tokens in the Qwen and SmolLM vocabularies; twice
# that, as a guided judge may spell the fixed text in smaller pieces (the rehearsal's random weights do). The
# regex ends the continuation at its last character, so an unused budget costs nothing.
FORCE_TOKENS_PER_STEP = 16
PAIRWISE_FORCE_TOKENS = 8


def template_file(mode: str) -> Path:
    """The built-in prompt of a mode (package data)."""
    if mode not in MODES:
        raise ValueError(f"judge mode must be one of {MODES}, not {mode!r}")
    return Path(str(resources.files("prm_lessons") / "prompts" / f"bon_judge_{mode}.txt"))


def load_template(mode: str, path: str | None = None) -> str:
    """The prompt of a mode: the file at `path`, else the built-in one. A template with an unknown
    placeholder or without a needed one is an error naming it (templates.read_template; config
    validation checks the same before any job)."""
    if mode not in MODES:
        raise ValueError(f"judge mode must be one of {MODES}, not {mode!r}")
    return read_template(path or template_file(mode), mode)


def render_pointwise(question: str, steps: Sequence[str], template: str) -> str:
    return template.format(problem=question, tagged_response=tag_steps(steps, 1), n_steps=len(steps))


def render_pairwise(question: str, steps_a: Sequence[str], steps_b: Sequence[str], template: str) -> str:
    return template.format(problem=question, response_a=join_steps(list(steps_a)),
                           response_b=join_steps(list(steps_b)))


# ------------------------------------------------------------------------------------------------
# Verdict parsing (never raises)
# ------------------------------------------------------------------------------------------------

_VERDICTS_HEAD = re.compile(r"verdicts?\s*:", re.I)
_STEP_VERDICT = re.compile(r"paragraph[_\s]*(\d+)\W{0,6}(correct|incorrect)\b", re.I)


def parse_step_verdicts(text: str | None, n_steps: int) -> list[bool | None]:
    """Per step: True (correct), False (incorrect), None (no readable verdict)."""
    out: list[bool | None] = [None] * n_steps
    if not text:
        return out
    heads = list(_VERDICTS_HEAD.finditer(text))
    body = text[heads[-1].end():] if heads else text
    for m in _STEP_VERDICT.finditer(body):
        i = int(m.group(1)) - 1
        if 0 <= i < n_steps:
            out[i] = m.group(2).lower() == "correct"
    return out


def pointwise_score(verdicts: Sequence[bool | None]) -> float | None:
    """Fraction of steps judged correct; an unreadable step counts as incorrect; None without steps."""
    return sum(v is True for v in verdicts) / len(verdicts) if len(verdicts) else None


def parse_preference(text: str | None) -> str | None:
    """'A' or 'B' from the last closed ``\\boxed{}`` (``\\text{B}``, ``Response A`` accepted); None otherwise."""
    content = last_closed_boxed(text or "")
    if content is None:
        return None
    c = re.sub(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}", r"\1", content.strip().strip("$")).strip()
    c = re.sub(r"^response\s*", "", c, flags=re.I).strip().upper()
    return c if c in ("A", "B") else None


def pointwise_regex(n_steps: int) -> str:
    """The forced verdict block of a response with n_steps steps: exactly one line per step."""
    return r"\n".join(f"Paragraph {i}: (correct|incorrect)" for i in range(1, n_steps + 1))


# ------------------------------------------------------------------------------------------------
# One batch of judgements: generate, then force the ones without a complete verdict
# ------------------------------------------------------------------------------------------------

@dataclass
class JudgeSettings:
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    seed: int = 0
    system_prompt: str | None = None
    force_answer: bool = True
    force_truncated: bool = False
    guided: bool = True

    def spec(self) -> SamplingSpec:
        return SamplingSpec(n=1, temperature=self.temperature, top_p=self.top_p if self.temperature > 0 else 1.0,
                            max_tokens=self.max_tokens, seed=None)


def _judge_batch(engine, prompts: list[str], seeds: list[int], st: JudgeSettings, *,
                 readable: Callable[[int, str], int], needed: list[int], suffix: str,
                 regexes: list[str], force_max_tokens: int) -> list[dict]:
    """{text, tokens, cut, forced} per prompt: one engine call, then one forced continuation call for the
    prompts whose verdict reads fewer than `needed[i]` units (`readable(i, text)`). max_tokens 0: no
    free text, every verdict is forced from the start of the answer (the opening without its blank line)."""
    if not prompts:
        return []
    if st.max_tokens == 0:
        res = [{"text": "", "tokens": 0, "cut": False, "forced": False} for _ in prompts]
    else:
        outs = engine.generate_logged(prompts, st.spec(), seeds, "judged")
        res = [{"text": o[0].text, "tokens": int(o[0].n_tokens), "cut": o[0].finish_reason == "length",
                "forced": False} for o in outs]
    if not st.force_answer:
        return res
    retry = [i for i, r in enumerate(res)
             if readable(i, r["text"]) < needed[i] and (not r["cut"] or st.force_truncated)]
    if retry:
        opening = [suffix if res[i]["text"] else suffix.lstrip() for i in retry]
        conts = guided_generate(engine, [prompts[i] + res[i]["text"] + o for i, o in zip(retry, opening)],
                                 force_max_tokens, [regexes[i] for i in retry] if st.guided else None)
        for i, o, cont in zip(retry, opening, conts):
            full = res[i]["text"] + o + cont
            if readable(i, full) > readable(i, res[i]["text"]):
                res[i].update(text=full, forced=True, tokens=res[i]["tokens"] + _n_tokens(engine, cont))
    return res


def _n_tokens(engine, text: str) -> int:
    """Tokens of a forced continuation, by re-tokenising it (the guided path returns text only); 0 for a
    tokenizer without `encode`."""
    encode = getattr(engine.tokenizer, "encode", None)
    return len(encode(text, add_special_tokens=False)) if encode and text else 0


# ------------------------------------------------------------------------------------------------
# Pointwise
# ------------------------------------------------------------------------------------------------

def judge_pointwise(engine, questions: Sequence[str], steps_lists: Sequence[Sequence[str]], ids: Sequence[str],
                    settings: JudgeSettings, template: str | None = None) -> list[dict]:
    """One row per response: verdicts (list[bool | None] per step), score (fraction correct; None
    without steps), n_steps, n_unreadable, forced, truncated (cut off and left with unread steps),
    tokens_generated, text. All responses are one engine call."""
    template = template if template is not None else load_template("pointwise")
    steps_lists = [clean_steps(s) for s in steps_lists]
    todo = [i for i, s in enumerate(steps_lists) if s]
    prompts = [render_chat(engine.tokenizer, settings.system_prompt,
                           render_pointwise(questions[i], steps_lists[i], template)) for i in todo]
    n_of = [len(steps_lists[i]) for i in todo]
    res = _judge_batch(engine, prompts, [derive_seed("bon_judge", "pointwise", settings.seed, ids[i]) for i in todo],
                       settings, readable=lambda k, t: sum(v is not None for v in parse_step_verdicts(t, n_of[k])),
                       needed=n_of, suffix=POINTWISE_FORCE, regexes=[pointwise_regex(n) for n in n_of],
                       force_max_tokens=FORCE_TOKENS_PER_STEP * max(n_of, default=1) + 8)
    rows = [{"verdicts": [], "score": None, "n_steps": 0, "n_unreadable": 0, "forced": False, "truncated": False,
             "tokens_generated": 0, "text": None} for _ in steps_lists]
    for k, i in enumerate(todo):
        v = parse_step_verdicts(res[k]["text"], n_of[k])
        unread = sum(x is None for x in v)
        rows[i] = {"verdicts": v, "score": pointwise_score(v), "n_steps": n_of[k], "n_unreadable": unread,
                   "forced": res[k]["forced"], "truncated": res[k]["cut"] and unread > 0,
                   "tokens_generated": res[k]["tokens"], "text": res[k]["text"]}
    return rows


def pointwise_choice(scores: Sequence[float | None]) -> int | None:
    """Position of the best score (ties → the lowest position, metrics.select.best_index); None when no
    response has a score (the rule of a PRM's Best-of-N choice, metrics.select.best_or_none)."""
    return best_or_none(scores)


# ------------------------------------------------------------------------------------------------
# Pairwise: the tournament
# ------------------------------------------------------------------------------------------------

def bracket_round(entrants: Sequence[int]) -> tuple[list[int], list[tuple[int, int]]]:
    """(byes, pairs) of one round over `entrants` in order (module docstring): a power-of-two field pairs
    neighbours; otherwise the first 2P − N entrants get a bye and the rest play N − P matches."""
    n = len(entrants)
    if n < 2:
        return list(entrants), []
    p = 1 << (n.bit_length() - 1)
    k = n // 2 if p == n else n - p
    byes = list(entrants[: n - 2 * k])
    rest = list(entrants[n - 2 * k:])
    return byes, list(zip(rest[0::2], rest[1::2]))


def run_tournaments(fields: Sequence[Sequence[int]],
                    decide: Callable[[list[tuple[int, int, int]]], list[dict]]) -> list[dict]:
    """Single-elimination tournaments of every problem, round by round. `fields[p]`: problem p's entrants
    in order. `decide` gets every comparison of one round across all problems as (problem, a, b), a
    before b (Response A), and returns one dict per comparison with "verdict" ('A', 'B' or None) and any
    extra keys to record. None → A advances (counted). Returns per problem {"winner" (None for an empty
    field), "bracket" (the comparisons with round, a, b, winner and decide's keys), "n_unparsable"}."""
    alive = [list(f) for f in fields]
    out = [{"winner": None, "bracket": [], "n_unparsable": 0} for _ in fields]
    rnd = 0
    while True:
        plan = [bracket_round(a) for a in alive]
        matches = [(p, a, b) for p, (_, pairs) in enumerate(plan) for a, b in pairs]
        if not matches:
            break
        verdicts = decide(matches)
        if len(verdicts) != len(matches):
            raise ValueError(f"decide returned {len(verdicts)} verdicts for {len(matches)} comparisons")
        winners: dict[tuple[int, int, int], int] = {}
        for (p, a, b), v in zip(matches, verdicts):
            verdict = v.get("verdict")
            win = b if verdict == "B" else a
            winners[(p, a, b)] = win
            out[p]["n_unparsable"] += verdict not in ("A", "B")
            out[p]["bracket"].append({"round": rnd, "a": a, "b": b, "winner": win, **v})
        alive = [byes + [winners[(p, a, b)] for a, b in pairs] for p, (byes, pairs) in enumerate(plan)]
        rnd += 1
    for p, a in enumerate(alive):
        out[p]["winner"] = a[0] if a else None
    return out


def judge_pairwise(engine, questions: Sequence[str], responses: Sequence[Sequence[Sequence[str]]],
                   ids: Sequence[str], settings: JudgeSettings, template: str | None = None) -> list[dict]:
    """One row per problem (responses[p]: its N responses' steps, in sample_idx order): winner (position),
    bracket, n_comparisons, n_unparsable, n_forced, n_truncated, tokens_generated. One engine call per
    round for all problems (plus its forced continuations)."""
    template = template if template is not None else load_template("pairwise")
    steps = [[clean_steps(s) for s in rs] for rs in responses]

    def decide(matches):
        prompts = [render_chat(engine.tokenizer, settings.system_prompt,
                               render_pairwise(questions[p], steps[p][a], steps[p][b], template))
                   for p, a, b in matches]
        seeds = [derive_seed("bon_judge", "pairwise", settings.seed, ids[p], a, b) for p, a, b in matches]
        res = _judge_batch(engine, prompts, seeds, settings,
                           readable=lambda k, t: int(parse_preference(t) is not None), needed=[1] * len(matches),
                           suffix=PAIRWISE_FORCE, regexes=[PAIRWISE_REGEX] * len(matches),
                           force_max_tokens=PAIRWISE_FORCE_TOKENS)
        return [{"verdict": parse_preference(r["text"]), "forced": r["forced"],
                 "truncated": r["cut"] and parse_preference(r["text"]) is None, "tokens": r["tokens"],
                 "text": r["text"]} for r in res]

    rows = []
    for t in run_tournaments([range(len(rs)) for rs in responses], decide):
        br = t["bracket"]
        rows.append({"winner": t["winner"], "bracket": br, "n_comparisons": len(br),
                     "n_unparsable": t["n_unparsable"], "n_forced": sum(m["forced"] for m in br),
                     "n_truncated": sum(m["truncated"] for m in br),
                     "tokens_generated": sum(m["tokens"] for m in br)})
    return rows


# ------------------------------------------------------------------------------------------------
# Best-of-N sets: the judged table and its metrics
# ------------------------------------------------------------------------------------------------

JUDGED_COLUMNS = ["dataset", "problem_id", "n", "sample_idxs", "selected_idx", "scores",
                  "verdicts", "bracket", "n_requests", "n_unparsable", "n_unreadable_steps", "n_forced",
                  "n_truncated", "tokens_generated", "texts"]


def first_responses(samples: pd.DataFrame, n: int | None, limit: int | None = None) -> pd.DataFrame:
    """The first n responses (by sample_idx) of the first `limit` problems (by problem_id) of every
    dataset; a problem with fewer than n responses is an error naming it."""
    df = samples.sort_values(["dataset", "problem_id", "sample_idx"], kind="stable")
    if limit is not None:
        keep = {p for _, g in df.groupby("dataset", sort=False) for p in sorted(g["problem_id"].unique())[:limit]}
        df = df[df["problem_id"].isin(keep)]
    if n is not None:
        counts = df.groupby("problem_id").size()
        short = counts[counts < n]
        if len(short):
            raise ValueError(f"problems with fewer than N={n} responses: "
                             + ", ".join(f"{p} ({c})" for p, c in short.items()))
        df = df.groupby("problem_id", sort=False, group_keys=False).head(n)
    return df.reset_index(drop=True)


def shard_responses(df: pd.DataFrame, shard: int, nshards: int) -> pd.DataFrame:
    """The rows of `df` (first_responses' output) whose problem falls in shard `shard` of `nshards` of its
    dataset (prm_lessons.jobs.shards.in_shard per benchmark, as the scoring jobs split each table), in order."""
    keep = pd.Series(False, index=df.index)
    for _, g in df.groupby("dataset", sort=False):
        keep[g.index] = in_shard(g["problem_id"], shard, nshards)
    return df[keep.to_numpy()].reset_index(drop=True)


def judge_best_of_n(engine, samples: pd.DataFrame, mode: str, settings: JudgeSettings, *, n: int | None,
                    limit: int | None = None, template: str | None = None) -> pd.DataFrame:
    """Judge the Best-of-N sets of `samples` (a responses table, graded or not: the judge reads no grade;
    any number of datasets) → one row per problem (JUDGED_COLUMNS): the chosen sample_idx (`selected_idx`,
    null when nothing could be chosen; judge_metrics looks up its correctness), the pointwise scores and step
    verdicts (JSON) or the pairwise bracket (JSON, in sample indices), counts of unparsable verdicts, forced
    and truncated judgements, tokens generated."""
    if mode not in MODES:
        raise ValueError(f"judge mode must be one of {MODES}, not {mode!r}")
    df = first_responses(samples, n, limit)
    groups = [g for _, g in df.groupby(["dataset", "problem_id"], sort=False)]
    rows = []
    if mode == "pointwise":
        res = judge_pointwise(engine, df["question"].tolist(), [list(s) if s is not None else [] for s in df["steps"]],
                              [f"{p}#{int(s)}" for p, s in zip(df["problem_id"], df["sample_idx"])], settings,
                              template)
        start = 0
        for g in groups:
            mine, start = res[start:start + len(g)], start + len(g)
            pos = pointwise_choice([r["score"] for r in mine])
            rows.append(_row(g, pos, scores=[r["score"] for r in mine],
                             verdicts=json.dumps([r["verdicts"] for r in mine]), bracket=None,
                             n_requests=sum(r["n_steps"] > 0 for r in mine),
                             n_unparsable=sum(r["n_unreadable"] > 0 for r in mine),
                             n_unreadable_steps=sum(r["n_unreadable"] for r in mine),
                             n_forced=sum(r["forced"] for r in mine), n_truncated=sum(r["truncated"] for r in mine),
                             tokens_generated=sum(r["tokens_generated"] for r in mine),
                             texts=[r["text"] for r in mine]))
    else:
        res = judge_pairwise(engine, [g["question"].iloc[0] for g in groups],
                             [[list(s) if s is not None else [] for s in g["steps"]] for g in groups],
                             [str(g["problem_id"].iloc[0]) for g in groups], settings, template)
        for g, r in zip(groups, res):
            sidx = [int(s) for s in g["sample_idx"]]
            bracket = [{"round": m["round"], "a": sidx[m["a"]], "b": sidx[m["b"]], "winner": sidx[m["winner"]],
                        "verdict": m["verdict"], "forced": m["forced"]} for m in r["bracket"]]
            rows.append(_row(g, r["winner"], scores=None, verdicts=None, bracket=json.dumps(bracket),
                             n_requests=r["n_comparisons"], n_unparsable=r["n_unparsable"], n_unreadable_steps=0,
                             n_forced=r["n_forced"], n_truncated=r["n_truncated"],
                             tokens_generated=r["tokens_generated"], texts=[m["text"] for m in r["bracket"]]))
    return pd.DataFrame(rows, columns=JUDGED_COLUMNS)


def _row(g: pd.DataFrame, pos: int | None, **fields) -> dict:
    sidx = [int(s) for s in g["sample_idx"]]
    return {"dataset": str(g["dataset"].iloc[0]), "problem_id": str(g["problem_id"].iloc[0]), "n": len(g),
            "sample_idxs": sidx, "selected_idx": None if pos is None else sidx[pos],
            **fields}


COUNTS = ("n_requests", "n_unparsable", "n_unreadable_steps", "n_forced", "n_truncated", "tokens_generated")


def judge_metrics(samples: pd.DataFrame, judged: pd.DataFrame, *, n: int | None, maj_grouping: str = "normalized",
                  bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95, workers: int = 2) -> dict:
    """Best-of-N metrics of a judge's choices, on the judged problems only: `metrics.bon_metrics` with the
    judge's choice as the selector ``judge`` (score 1 for the chosen response, 0 for the others; a
    problem without a choice counts wrong and is listed under ``unscored``), beside pass@N and maj@N
    of the same problems, with bootstrap intervals and the paired difference judge − maj@N
    (``vs_maj``). Adds ``judging``: the COUNTS per benchmark and in total."""
    chosen = {(str(d), str(p)): s for d, p, s in zip(judged["dataset"], judged["problem_id"], judged["selected_idx"])}
    df = samples[[(str(d), str(p)) in chosen for d, p in zip(samples["dataset"], samples["problem_id"])]].copy()
    df = first_responses(df, n)
    sel = [chosen[(str(d), str(p))] for d, p in zip(df["dataset"], df["problem_id"])]
    df["judge_score"] = [None if pd.isna(c) else float(int(c) == int(s)) for c, s in zip(sel, df["sample_idx"])]
    df["benchmark"] = df["dataset"].astype(str)
    m = bon_metrics(df, [], n=n, maj_grouping=maj_grouping, orm_column="judge_score", bootstrap=bootstrap,
                            seed=seed, confidence=confidence, workers=workers, orm_name="judge")
    m["settings"].pop("orm", None)  # no ORM here: the judge is the selector
    by = {str(b): {c: int(g[c].sum()) for c in COUNTS} for b, g in judged.groupby("dataset", sort=True)}
    m["judging"] = {"benchmarks": by, "total": {c: int(judged[c].sum()) for c in COUNTS}}
    return m
