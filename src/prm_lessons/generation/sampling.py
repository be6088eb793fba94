"""Policy sampling: N responses per problem (sharded by contiguous rows), split into steps. Grading against
the gold answer is a separate CPU step (`grading/samples`, rule grade_samples), so a grading fix re-samples and
rescores nothing. The Best-of-N baselines that need no reward model (pass@N, maj@N) are in `metrics`."""
from __future__ import annotations

import logging
import time

import pandas as pd

from ..errors import InputError
from ..steps import COT_SYSTEM_PROMPT, split_steps
from ..tables import SCHEMAS
from .engine import SamplingSpec, derive_seed, render_chat

log = logging.getLogger(__name__)

LONG_QUESTIONS = ("error", "skip")  # sampling.long_questions


def prompt_tokens(tokenizer, prompts: list[str]) -> list[int]:
    """Tokens of each rendered prompt as vLLM counts them (a text prompt is encoded with the tokenizer's
    special tokens; for chat-templated Qwen / SmolLM prompts that adds none)."""
    return [len(tokenizer.encode(p, add_special_tokens=True)) for p in prompts]


def long_prompts(tokenizer, problem_ids, prompts: list[str], max_model_len: int, max_tokens: int) -> dict[str, int]:
    """problem_id -> prompt tokens, for each prompt that leaves less than `max_tokens` of `max_model_len`
    to generate: vLLM refuses a prompt of max_model_len tokens or more, and the whole batch (the shard)
    dies with an error naming no problem; a shorter one that still eats into the budget gets responses
    cut short of sampling.max_tokens. Either way the problem is not sampled as configured."""
    return {str(pid): n for pid, n in zip(problem_ids, prompt_tokens(tokenizer, prompts))
            if n + max_tokens > max_model_len}


def shard_rows(df: pd.DataFrame, shard: int, nshards: int) -> pd.DataFrame:
    """Contiguous shard `shard` of `nshards` (0-based); every row lands in exactly one shard."""
    if not 0 <= shard < nshards:
        raise ValueError(f"shard {shard} out of range for {nshards} shards")
    bounds = [round(i * len(df) / nshards) for i in range(nshards + 1)]
    return df.iloc[bounds[shard]:bounds[shard + 1]]


def user_turns(problems: pd.DataFrame) -> list[str]:
    """The policy's user turn per problem: the problems table's ``prompt`` column where the dataset has
    one (harness few-shot demonstrations, :mod:`prm_lessons.generation.fewshot`), else the question."""
    if "prompt" not in problems.columns:
        return list(problems["question"])
    return [q if p is None or (isinstance(p, float) and p != p) else p
            for q, p in zip(problems["question"], problems["prompt"])]


def sample_problems(engine, problems: pd.DataFrame, *, n: int, sampling: dict, max_model_len: int | None = None,
                    model_name: str = "policy") -> pd.DataFrame:
    """Sample n responses per problem and split them into steps: a `responses` table (no grading:
    :func:`prm_lessons.grading.samples.grade_samples` adds it). One seed per problem (derived from its id), so
    results do not depend on how problems are sharded or batched.

    With ``max_model_len`` (the policy's), every prompt is measured before any generation
    (:func:`long_prompts`); ``sampling.long_questions`` decides: ``error`` (default) raises InputError
    naming each problem, its prompt tokens and the limit; ``skip`` samples the rest and reports the
    skipped problems in ``out.attrs["long_questions"]`` (the rule records them in the table's metadata).
    Checked here, in the job, not in the problems rule: the problems table is shared by the policy,
    the completer and the judge (different models and limits), and the problems rule has no model."""
    spec = SamplingSpec(n=n, temperature=sampling["temperature"], top_p=sampling["top_p"],
                        max_tokens=sampling["max_tokens"])
    system = sampling.get("system_prompt", COT_SYSTEM_PROMPT)
    policy = sampling.get("long_questions", "error")
    if policy not in LONG_QUESTIONS:
        raise ValueError(f"sampling.long_questions {policy!r}: one of {', '.join(LONG_QUESTIONS)}")
    prompts = [render_chat(engine.tokenizer, system, u) for u in user_turns(problems)]
    skipped: dict[str, int] = {}
    if max_model_len is not None and len(problems):
        skipped = long_prompts(engine.tokenizer, problems["problem_id"], prompts, int(max_model_len),
                               int(spec.max_tokens))
        if skipped and policy == "error":
            # what to change first: InputError shows 20 lines, then a count
            raise InputError([f"{len(skipped)} problem(s) too long for the policy: shorten or drop them, raise "
                              f"models.{model_name}.max_model_len or lower sampling.max_tokens, or set "
                              "sampling.long_questions: skip"]
                             + [f"problem {pid}: prompt of {k} tokens + sampling.max_tokens {spec.max_tokens} > "
                                f"models.{model_name}.max_model_len {max_model_len}" for pid, k in skipped.items()],
                             f"dataset '{problems['dataset'].iloc[0]}'")
        if skipped:
            log.warning("%d of %d problems skipped (sampling.long_questions: skip): prompt + max_tokens %d > "
                        "max_model_len %d: %s", len(skipped), len(problems), spec.max_tokens, max_model_len,
                        ", ".join(f"{pid} ({k} tokens)" for pid, k in skipped.items()))
            keep = ~problems["problem_id"].astype(str).isin(list(skipped))
            problems = problems[keep.to_numpy()]
            prompts = [p for p, k in zip(prompts, keep) if k]
    report = {"policy": policy, "max_model_len": max_model_len, "max_tokens": spec.max_tokens,
              "n_skipped": len(skipped), "skipped": skipped}
    rows = []
    batch = int(sampling.get("batch_size", 256))
    t0 = time.perf_counter()
    for start in range(0, len(problems), batch):
        chunk = problems.iloc[start:start + batch]
        seeds = [derive_seed(sampling["seed"], pid) for pid in chunk["problem_id"]]
        outs = engine.generate(prompts[start:start + batch], spec, seeds=seeds)
        for (_, prob), comps in zip(chunk.iterrows(), outs):
            for k, c in enumerate(comps):
                rows.append({"problem_id": prob["problem_id"], "sample_idx": k, "dataset": prob["dataset"],
                             "question": prob["question"], "answer": prob["answer"], "response": c.text,
                             "steps": split_steps(c.text, sampling["step_separator"]),
                             "n_tokens": c.n_tokens, "finish_reason": c.finish_reason})
        done = min(start + batch, len(problems))
        log.info("sampled %d/%d problems (%d tokens, %.1f tokens/s)", done, len(problems),
                 engine.stats.generated_tokens, engine.stats.generated_tokens / max(time.perf_counter() - t0, 1e-9))
    if not rows:  # every problem skipped: an empty shard, as with more shards than problems
        out = pd.DataFrame(columns=SCHEMAS["responses"])
        out.attrs["long_questions"] = report
        return out
    out = pd.DataFrame(rows, columns=SCHEMAS["responses"])
    out.attrs["long_questions"] = report
    return out

