"""Policy sampling stage: N responses per problem (sharded), merge, and the Best-of-N baselines
pass@N / maj@N that need no reward model."""
from __future__ import annotations

import logging
import os
import time

import pandas as pd

from .generation import COT_SYSTEM_PROMPT, SamplingSpec, derive_seed, load_engine, render_chat
from .steps import split_steps
from .tables import SCHEMAS, read_table, table_meta, write_table

log = logging.getLogger(__name__)


def shard_rows(df: pd.DataFrame, shard: int, nshards: int) -> pd.DataFrame:
    """Contiguous shard `shard` of `nshards` (0-based); every row lands in exactly one shard."""
    if not 0 <= shard < nshards:
        raise ValueError(f"shard {shard} out of range for {nshards} shards")
    bounds = [round(i * len(df) / nshards) for i in range(nshards + 1)]
    return df.iloc[bounds[shard]:bounds[shard + 1]]


def samples_per_problem(config: dict, dataset: str) -> int:
    """Benchmarks are sampled bon.n times (N of Best-of-N); training problems sampling.n times."""
    if dataset in config.get("benchmarks", {}):
        return int(config.get("bon", {}).get("n", config["sampling"]["n"]))
    return int(config["sampling"]["n"])


def sample_problems(engine, problems: pd.DataFrame, *, n: int, sampling: dict, grading: dict,
                    answer_format: str = "plain") -> pd.DataFrame:
    """Sample n responses per problem, split them into steps and grade them (``answer_format``: the
    dataset's, so multiple choice is graded as the harness does). One seed per problem (derived from
    its id), so results do not depend on how problems are sharded or batched."""
    from .grading import grade_many

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


def rule_sample_shard(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `sample`: one shard of one problem set → results/samples/{dataset}/shard{i}of{n}.parquet."""
    problems = read_table(inputs["problems"], "problems")
    part = shard_rows(problems, int(wildcards["shard"]), int(wildcards["nshards"]))
    entry = params["model"]
    if len(part) == 0:  # more shards than problems: an empty shard is valid
        df = pd.DataFrame(columns=SCHEMAS["samples"])
    else:
        engine = load_engine(params["model_dir"], entry)
        # the dataset's answer format travels in the problems table's metadata (its config entry)
        fmt = (table_meta(inputs["problems"]).get("spec") or {}).get("answer_format", "plain")
        df = sample_problems(engine, part, n=int(params["n"]), sampling=params["sampling"],
                             grading=params["grading"], answer_format=fmt)
        log.info("engine: %s backend, %d tokens in %.1f s", engine.backend, engine.stats.generated_tokens,
                 engine.stats.seconds)
    write_table(df, outputs["samples"], "samples",
                meta={"policy": entry["name"], "sampling": params["sampling"]})


def rule_merge_samples(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `merge_samples`: shards → results/samples/{dataset}.parquet (duplicates are an error)."""
    shards = inputs["shards"] if isinstance(inputs["shards"], list) else [inputs["shards"]]
    df = pd.concat([read_table(p, "samples") for p in shards], ignore_index=True)
    df = df.sort_values(["problem_id", "sample_idx"]).reset_index(drop=True)
    write_table(df, outputs["samples"], "samples")
    log.info("%s: %d responses over %d problems", wildcards["dataset"], len(df), df["problem_id"].nunique())


def baselines(samples: pd.DataFrame, n: int | None = None, grouping: str = "normalized") -> dict:
    """pass@N (any of the first N correct) and maj@N (metrics.majority_index: most frequent extracted
    answer among the first N, ties to the answer seen first; responses without an answer do not vote)."""
    from .metrics import majority_index

    per_problem = []
    for _, grp in samples.sort_values("sample_idx").groupby("problem_id", sort=True):
        g = grp.head(n) if n else grp
        winner = majority_index(list(g["pred"]), grouping)
        per_problem.append({"pass": bool(g["correct"].any()),
                            "maj": winner is not None and bool(g["correct"].iloc[winner]),
                            "n": len(g), "mean_acc": float(g["correct"].mean())})
    pp = pd.DataFrame(per_problem, columns=["pass", "maj", "n", "mean_acc"])
    empty = len(pp) == 0
    return {"n_problems": len(pp), "N": 0 if empty else int(pp["n"].max()),
            **{k: float("nan") if empty else float(pp[k].mean()) for k in ("pass", "maj", "mean_acc")}}


def rule_bon_baselines(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `bon_baselines`: pass@N and maj@N per benchmark and their unweighted average →
    results/tables/bon_baselines.csv."""
    rows = []
    for path in inputs["samples"]:
        df = read_table(path, "samples")
        name = df["dataset"].iloc[0] if len(df) else os.path.basename(path).removesuffix(".parquet")
        rows.append({"benchmark": name, **baselines(df, params.get("n"))})
    table = pd.DataFrame(rows)
    avg = {"benchmark": "average", "n_problems": int(table["n_problems"].sum()), "N": int(table["N"].max())}
    for col in ("pass", "maj", "mean_acc"):
        avg[col] = float(table[col].mean())
    table = pd.concat([table, pd.DataFrame([avg])], ignore_index=True)
    table.insert(0, "run", params.get("run_label", ""))
    for col in ("pass", "maj", "mean_acc"):
        table[col] = (100 * table[col]).round(1)
    os.makedirs(os.path.dirname(outputs["table"]), exist_ok=True)
    table.to_csv(outputs["table"], index=False)
    log.info("\n%s", table.to_string(index=False))
