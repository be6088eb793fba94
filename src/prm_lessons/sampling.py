"""Policy sampling: N responses per problem (sharded by contiguous rows), each graded against the gold
answer. The Best-of-N baselines that need no reward model (pass@N, maj@N) are in `metrics`."""
from __future__ import annotations

import logging
import time

import pandas as pd

from .generation import SamplingSpec, derive_seed, render_chat
from .grading import grade_many
from .steps import COT_SYSTEM_PROMPT, split_steps

log = logging.getLogger(__name__)


def shard_rows(df: pd.DataFrame, shard: int, nshards: int) -> pd.DataFrame:
    """Contiguous shard `shard` of `nshards` (0-based); every row lands in exactly one shard."""
    if not 0 <= shard < nshards:
        raise ValueError(f"shard {shard} out of range for {nshards} shards")
    bounds = [round(i * len(df) / nshards) for i in range(nshards + 1)]
    return df.iloc[bounds[shard]:bounds[shard + 1]]


def sample_problems(engine, problems: pd.DataFrame, *, n: int, sampling: dict, grading: dict,
                    answer_format: str = "plain") -> pd.DataFrame:
    """Sample n responses per problem, split them into steps and grade them (``answer_format``: the
    dataset's, so multiple choice is graded as the harness does). One seed per problem (derived from
    its id), so results do not depend on how problems are sharded or batched."""
    spec = SamplingSpec(n=n, temperature=sampling["temperature"], top_p=sampling["top_p"],
                        max_tokens=sampling["max_tokens"])
    system = sampling.get("system_prompt", COT_SYSTEM_PROMPT)
    rows = []
    batch = int(sampling.get("batch_size", 256))
    t0 = time.perf_counter()
    for start in range(0, len(problems), batch):
        chunk = problems.iloc[start:start + batch]
        prompts = [render_chat(engine.tokenizer, system, q) for q in chunk["question"]]
        seeds = [derive_seed(sampling["seed"], pid) for pid in chunk["problem_id"]]
        outs = engine.generate(prompts, spec, seeds=seeds)
        for (_, prob), comps in zip(chunk.iterrows(), outs):
            for k, c in enumerate(comps):
                rows.append({"problem_id": prob["problem_id"], "sample_idx": k, "dataset": prob["dataset"],
                             "question": prob["question"], "answer": prob["answer"], "response": c.text,
                             "steps": split_steps(c.text, sampling["step_separator"]),
                             "n_tokens": c.n_tokens, "finish_reason": c.finish_reason})
        done = min(start + batch, len(problems))
        log.info("sampled %d/%d problems (%d tokens, %.1f tokens/s)", done, len(problems),
                 engine.stats.generated_tokens, engine.stats.generated_tokens / max(time.perf_counter() - t0, 1e-9))
    out = pd.DataFrame(rows, columns=["problem_id", "sample_idx", "dataset", "question", "answer", "response",
                                      "steps", "n_tokens", "finish_reason"])
    results = grade_many(list(out["response"]), list(out["answer"]), timeout_s=grading["timeout_s"],
                         workers=grading.get("workers", 1), answer_format=answer_format)
    out["pred"] = [r.pred for r in results]
    out["correct"] = [bool(r.correct) for r in results]
    out["grade_status"] = [r.status for r in results]
    counts = out["grade_status"].value_counts().to_dict()
    log.info("grading: %s; accuracy %.3f", counts, out["correct"].mean() if len(out) else float("nan"))
    if counts.get("timeout"):
        log.warning("%d responses hit the grading time limit and count as incorrect", counts["timeout"])
    return out

