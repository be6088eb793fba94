"""Two project choices measured side by side in one run on one engine (MC grading overlap; seed_mode):

1. MC grading overlapped with generation: ``run_mc`` with ``lanes`` 1 (sequential rounds: the engine waits
   for each round's grading) vs ``--lanes`` L (responses pipelined, a call's grading in a background thread
   while the engine generates the next). Per run: wall, generate, grade and wait seconds, the engine's
   idle share (1 - generate / wall) and whether the labels equal the sequential run's.
2. ``sampling.seed_mode``: per_request (a seed per request) vs per_batch (one seed per engine call) decode
   tokens/s on the same MC-shaped requests.

The engine is started once with the per_batch worker extension (prm_lessons.generation.vllm_seed) and its
``seed_mode`` switched between runs; the prefix cache is emptied before every run, and the runs alternate
their order over ``--repeats`` (ABBA) so warm-up and machine noise hit both alike; each run line gives the
1-minute load average after it (other work on the host shows there). Prints the host's CPU flags, a
line per run, the ratios, and one JSON line with every number (for docs/measurements.md).

Responses: the embedded run's graded training responses (results/samples/train.parquet), the config's
completer (the embedded SmolLM2-135M) and its mc / grading settings unless overridden.

    python bench/mc_overlap.py [--samples results/samples/train.parquet] [--model-dir DIR] [--responses 12]
        [--k K] [--max-tokens N] [--lanes 2] [--repeats 2] [--decode-requests 48] [--decode-tokens 96]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def reset_cache(engine) -> None:
    llm = getattr(engine, "llm", None)
    if llm is not None and hasattr(llm, "reset_prefix_cache"):
        llm.reset_prefix_cache()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    ap.add_argument("--samples", default=str(ROOT / "results" / "samples" / "train.parquet"))
    ap.add_argument("--model-dir", default=None, help="default: the completer of --config")
    ap.add_argument("--backend", default="auto", choices=["auto", "vllm", "transformers"])
    ap.add_argument("--responses", type=int, default=12)
    ap.add_argument("--k", type=int, default=None, help="completions per step (default: mc.completions)")
    ap.add_argument("--max-tokens", type=int, default=None, help="tokens per completion (default: mc.max_tokens)")
    ap.add_argument("--lanes", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--decode-requests", type=int, default=48)
    ap.add_argument("--decode-tokens", type=int, default=96)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import pandas as pd

    from prm_lessons.config import load_config, model_entry, model_path
    from prm_lessons.generation.engine import load_engine
    from prm_lessons.jobs.hardware import host_summary
    from prm_lessons.labels.mc import (
        MCInput,
        Needs,
        completion_seed,
        make_grade_fn,
        make_prompt_fn,
        run_mc,
        spec_from_config,
    )
    from prm_lessons.plan import label_needs, mc_completer
    from prm_lessons.tables import read_table

    config = load_config(args.config)
    completer = mc_completer(config)  # the model that completes the embedded run's MC (rule audit_labels)
    model_dir = args.model_dir or str(ROOT / model_path(config, completer))
    if not Path(model_dir).exists():
        print(f"model directory {model_dir} not found (build it with the workflow's embedded_model rule)")
        return 1
    if not Path(args.samples).exists():
        print(f"{args.samples} not found (the embedded run's graded training responses: `make run`)")
        return 1
    host = host_summary()
    print(f"host: {host['cpu']}; {len(os.sched_getaffinity(0))} usable cores; CPU flags {' '.join(host['cpu_flags'])}"
          f"; GPUs {host['gpus']}")
    mc = dict(config["mc"])
    if args.max_tokens:
        mc["max_tokens"] = args.max_tokens
    k = args.k or int(mc["completions"])
    entry = model_entry(config, completer)
    t0 = time.perf_counter()
    engine = load_engine(model_dir, entry, args.backend, seed_mode="per_batch")
    print(f"engine: {engine.backend} ({engine.dtype}), loaded in {time.perf_counter() - t0:.0f}s")

    df = read_table(args.samples, "samples")
    df = df[df["steps"].map(len) > 0].sort_values(["problem_id", "sample_idx"]).head(args.responses)
    items = [MCInput(r.problem_id, int(r.sample_idx), r.question, str(r.answer), list(r.steps),
                     None if pd.isna(r.correct) else bool(r.correct)) for r in df.itertuples()]
    needs = Needs.from_params(label_needs(config))
    prompt_fn = make_prompt_fn(engine.tokenizer, config["sampling"]["system_prompt"])
    grade_fn = make_grade_fn(config["grading"]["timeout_s"], config["grading"].get("workers"))
    spec = spec_from_config(mc)
    print(f"MC: {len(items)} responses, {sum(len(it.steps) for it in items)} steps; K={k}, max_tokens "
          f"{mc['max_tokens']}, protocol {mc['protocol']}, needs {needs.to_params()}, grading workers "
          f"{config['grading'].get('workers')}")

    # warm-up: one small call in each seed mode (first-call costs out of the measured runs)
    warm = [prompt_fn(items[0].question, items[0].steps[0])] * 4
    for mode in ("per_request", "per_batch"):
        engine.seed_mode = mode
        engine.generate(warm, spec, [1, 2, 3, 4])

    # -- 1. sequential vs overlapped MC (per-request seeds: the labels must not move) -------------------
    engine.seed_mode = "per_request"
    mc_runs: dict[int, list[dict]] = {1: [], args.lanes: []}
    first_rows: dict[int, list] = {}
    for rep in range(args.repeats):
        for lanes in ((1, args.lanes) if rep % 2 == 0 else (args.lanes, 1)):
            reset_cache(engine)
            timing: dict = {}
            tokens0 = engine.stats.generated_tokens
            rows = run_mc(items, engine, k=k, needs=needs, protocol=mc["protocol"], round_size=int(mc["round_size"]),
                          seed=int(mc["seed"]), spec=spec, prompt_fn=prompt_fn, grade_fn=grade_fn,
                          separator=config["sampling"]["step_separator"], last_step=mc.get("last_step", "answer"),
                          lanes=lanes, timing=timing)
            timing["tokens"] = engine.stats.generated_tokens - tokens0
            first_rows.setdefault(lanes, rows)
            mc_runs[lanes].append(timing)
            timing["load1"] = round(os.getloadavg()[0], 2)
            print(f"MC lanes {lanes} (repeat {rep}): wall {timing['wall_seconds']:.1f}s, generate "
                  f"{timing['generate_seconds']:.1f}s, grade {timing['grade_seconds']:.1f}s, engine waited "
                  f"{timing['wait_seconds']:.1f}s, idle share {timing['engine_idle_share']:.3f}, "
                  f"{timing['calls']} engine calls, {timing['tokens']} tokens; load {timing['load1']}")
    same = sum(a == b for a, b in zip(first_rows[1], first_rows[args.lanes]))
    counts_same = sum((a["n_success"], a["n_total"]) == (b["n_success"], b["n_total"])
                      for a, b in zip(first_rows[1], first_rows[args.lanes]))

    # -- 2. per_request vs per_batch decode tokens/s -------------------------------------------------------
    dspec = spec_from_config({**mc, "max_tokens": args.decode_tokens})
    dprompts, dseeds = [], []
    for n in range(args.decode_requests):  # MC-shaped: K completions of each response's first steps
        it = items[(n // k) % len(items)]
        step = (n // (k * len(items))) % len(it.steps)
        dprompts.append(prompt_fn(it.question, config["sampling"]["step_separator"].join(it.steps[:step + 1])))
        dseeds.append(completion_seed(int(mc["seed"]), it.problem_id, it.sample_idx, step, n % k))
    decode: dict[str, list[dict]] = {"per_request": [], "per_batch": []}
    for rep in range(args.repeats):
        for mode in (("per_request", "per_batch") if rep % 2 == 0 else ("per_batch", "per_request")):
            engine.seed_mode = mode
            reset_cache(engine)
            tok0, s0 = engine.stats.generated_tokens, engine.stats.seconds
            engine.generate(dprompts, dspec, dseeds)
            tok, sec = engine.stats.generated_tokens - tok0, engine.stats.seconds - s0
            decode[mode].append({"tokens": tok, "seconds": round(sec, 3), "tokens_per_s": round(tok / sec, 1),
                                 "load1": round(os.getloadavg()[0], 2)})
            print(f"decode {mode} (repeat {rep}): {len(dprompts)} requests, {tok} tokens in {sec:.1f}s = "
                  f"{tok / sec:.1f} tokens/s; load {decode[mode][-1]['load1']}")

    grade_fn.close()

    def total(runs, key):
        return sum(r[key] for r in runs)

    seq, par = mc_runs[1], mc_runs[args.lanes]
    wall_ratio = total(par, "wall_seconds") / total(seq, "wall_seconds")
    idle = {lanes: 1 - total(r, "generate_seconds") / total(r, "wall_seconds") for lanes, r in mc_runs.items()}
    tps = {m: total(r, "tokens") / total(r, "seconds") for m, r in decode.items()}
    print(f"MC wall overlapped/sequential: {wall_ratio:.3f} (engine idle share sequential {idle[1]:.3f}, "
          f"overlapped {idle[args.lanes]:.3f}; grading {total(seq, 'grade_seconds') / total(seq, 'wall_seconds'):.3f} "
          f"of the sequential wall)")
    print(f"MC labels of lanes {args.lanes} equal to the sequential run's: {same}/{len(items)} rows "
          f"(counts {counts_same}/{len(items)}; per-request seeds on a batched engine: numerics may vary with "
          "the batch)")
    print(f"decode tokens/s per_batch/per_request: {tps['per_batch'] / tps['per_request']:.3f} "
          f"({tps['per_request']:.1f} vs {tps['per_batch']:.1f})")
    print("JSON " + json.dumps({"host": host, "backend": engine.backend, "dtype": engine.dtype, "k": k,
                                "max_tokens": mc["max_tokens"], "responses": len(items), "lanes": args.lanes,
                                "mc": {str(lanes): r for lanes, r in mc_runs.items()},
                                "mc_wall_ratio": round(wall_ratio, 4),
                                "idle_share": {str(lanes): round(v, 4) for lanes, v in idle.items()},
                                "labels_equal_rows": same, "decode": decode,
                                "decode_ratio": round(tps["per_batch"] / tps["per_request"], 4)}))
    return 0


if __name__ == "__main__":  # vLLM may spawn worker processes
    sys.exit(main())
