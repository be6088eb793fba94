"""vLLM's KV-cache block size on CPU: MC-shaped and sampling-shaped work at two block sizes, side by side.

vLLM's prefix cache reuses whole blocks only. MC (and the label audit) send each step's prompt (~100-120
tokens) as K separately seeded requests; with vLLM-CPU's default 128-token blocks no block of such a
prompt is ever full, so each of the K requests prefills it again. Smaller blocks let the K-1 repeats hit
the cache. This measures both workloads at each block size, each run in a fresh process (alternating
order over rounds, the fastest round kept): seconds, prefill tokens sent and served from the cache,
decode tokens/s, and the time ratio against the first block size.

    python bench/prefix_cache_block.py [--blocks 128 32] [--rounds 2] [--mc-prompts 24] [--k 8]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def worker(args) -> None:
    """One engine at one block size; both workloads; one JSON line on stdout."""
    import time

    from prm_lessons.data.problems import load_problems
    from prm_lessons.generation.engine import SamplingSpec, VLLMEngine, derive_seed, render_chat
    from prm_lessons.steps import COT_SYSTEM_PROMPT

    entry = {"dtype": args.dtype, "max_model_len": 2048, "threads": 2}
    if args.block:
        entry["block_size"] = args.block
    eng = VLLMEngine(args.model_dir, entry)
    probs = load_problems("mc_bench", {"source": "reasoning_gym", "generator": "basic_arithmetic",
                           "size": args.mc_prompts, "seed": 4242,
                           "params": {"min_terms": 3, "max_terms": 4, "min_digits": 1, "max_digits": 2}})
    tok = eng.tokenizer
    prompts = [render_chat(tok, COT_SYSTEM_PROMPT, q) + "Step 1: " for q in probs["question"]]
    out = {"block": args.block}
    # MC-shaped: each prompt as K requests with their own seeds (as labels.mc sends a step's completions)
    mc_prompts = [p for p in prompts for _ in range(args.k)]
    seeds = [derive_seed(7, i) for i in range(len(mc_prompts))]
    spec = SamplingSpec(n=1, temperature=0.7, top_p=0.8, max_tokens=args.mc_tokens, seed=7)
    s0 = eng.stats.prompt_tokens, eng.stats.cached_prompt_tokens, eng.stats.generated_tokens
    t0 = time.perf_counter()
    eng.generate(mc_prompts, spec, seeds)
    out["mc_s"] = time.perf_counter() - t0
    out["mc_prefill"] = eng.stats.prompt_tokens - s0[0]
    out["mc_cached"] = eng.stats.cached_prompt_tokens - s0[1]
    out["mc_decode"] = eng.stats.generated_tokens - s0[2]
    # sampling-shaped: decode-bound, n samples per prompt in one request
    spec = SamplingSpec(n=4, temperature=0.7, top_p=0.8, max_tokens=args.sample_tokens, seed=11)
    g0 = eng.stats.generated_tokens
    t0 = time.perf_counter()
    eng.generate(prompts[: args.sample_prompts], spec)
    out["sample_s"] = time.perf_counter() - t0
    out["sample_decode"] = eng.stats.generated_tokens - g0
    print("RESULT " + json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, nargs="+", default=[128, 32])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--mc-prompts", type=int, default=24)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--mc-tokens", type=int, default=48)
    ap.add_argument("--sample-prompts", type=int, default=12)
    ap.add_argument("--sample-tokens", type=int, default=128)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--model-dir", default=str(ROOT / "resources/models/smollm2"))
    ap.add_argument("--block", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if not Path(args.model_dir).exists():
        sys.exit(f"{args.model_dir} missing: run `snakemake --cores 1 resources/models/smollm2` first")
    best: dict[int, dict] = {}
    for r in range(args.rounds):
        order = args.blocks if r % 2 == 0 else list(reversed(args.blocks))
        for b in order:
            cmd = [sys.executable, __file__, "--worker", "--block", str(b), "--model-dir", args.model_dir,
                   "--dtype", args.dtype, "--mc-prompts", str(args.mc_prompts), "--k", str(args.k),
                   "--mc-tokens", str(args.mc_tokens), "--sample-prompts", str(args.sample_prompts),
                   "--sample-tokens", str(args.sample_tokens)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            line = next((x for x in res.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                sys.exit(f"block {b}: worker failed\n{res.stderr[-3000:]}")
            got = json.loads(line[7:])
            print(f"round {r} block {b}: MC {got['mc_s']:.1f} s ({got['mc_cached']:,}/{got['mc_prefill']:,} prefill "
                  f"cached), sampling {got['sample_s']:.1f} s", flush=True)
            for key in ("mc_s", "sample_s"):
                if b not in best or got[key] < best[b].get(key, float("inf")):
                    best.setdefault(b, dict(got))[key] = got[key]
    base = args.blocks[0]
    print(f"\nfastest of {args.rounds} rounds, {args.dtype}; ratio = time at block / time at block {base}")
    print(f"{'block':>6}{'MC s':>8}{'prefill':>10}{'cached':>9}{'MC ratio':>10}{'sample s':>10}{'decode tok/s':>14}"
          f"{'sample ratio':>14}")
    for b in args.blocks:
        x = best[b]
        print(f"{b:>6}{x['mc_s']:>8.1f}{x['mc_prefill']:>10,}{x['mc_cached']:>9,}"
              f"{x['mc_s'] / best[base]['mc_s']:>10.2f}"
              f"{x['sample_s']:>10.1f}{x['sample_decode'] / x['sample_s']:>14.1f}"
              f"{x['sample_s'] / best[base]['sample_s']:>14.2f}")


if __name__ == "__main__":
    main()
