"""Sampling rule vs a bare engine call: generated tokens/s on the same prompts and parameters.

The rule's path (`prm_lessons.generation.sampling.sample_problems`: chat rendering, per-problem seeds, step
splitting; no grading: rule grade_samples grades on CPU) must keep ≥ 0.9× the tokens/s of calling vLLM
directly.
Both run in this process on one engine (start-up excluded from both, reported apart), alternating
order over several rounds so machine noise hits both alike.

    python bench/sampling_throughput.py [--problems 16] [--n 4] [--max-tokens 128] [--rounds 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=16)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--model-dir", default=str(ROOT / "resources/models/smollm2"))
    args = ap.parse_args()

    from vllm import SamplingParams

    from prm_lessons.data.problems import load_problems
    from prm_lessons.generation.engine import derive_seed, load_engine, render_chat
    from prm_lessons.generation.sampling import sample_problems
    from prm_lessons.steps import COT_SYSTEM_PROMPT

    if not Path(args.model_dir).exists():
        sys.exit(f"{args.model_dir} missing: run `make run` (or snakemake resources/models/smollm2) first")
    problems = load_problems("bench", {"source": "reasoning_gym", "generator": "basic_arithmetic",
                                       "size": args.problems, "seed": 7, "params": {}})
    sampling = {"temperature": 0.7, "top_p": 0.8, "max_tokens": args.max_tokens, "seed": 0,
                "step_separator": "\n\n", "system_prompt": COT_SYSTEM_PROMPT, "batch_size": 256}
    t0 = time.perf_counter()
    engine = load_engine(args.model_dir, {"dtype": "bfloat16", "max_model_len": 2048,
                                          "gpu_memory_utilization": 0.5}, "vllm")
    startup = time.perf_counter() - t0

    def bare() -> tuple[int, float]:
        prompts = [render_chat(engine.tokenizer, COT_SYSTEM_PROMPT, q) for q in problems["question"]]
        params = [SamplingParams(n=args.n, temperature=0.7, top_p=0.8, max_tokens=args.max_tokens,
                                 seed=derive_seed(0, pid)) for pid in problems["problem_id"]]
        t = time.perf_counter()
        outs = engine.llm.generate(prompts, params, use_tqdm=False)
        dt = time.perf_counter() - t
        return sum(len(o.token_ids) for r in outs for o in r.outputs), dt

    def rule() -> tuple[int, float]:
        t = time.perf_counter()
        df = sample_problems(engine, problems, n=args.n, sampling=sampling)  # ungraded, as rule `sample`
        dt = time.perf_counter() - t
        return int(df["n_tokens"].sum()), dt

    totals = {"bare": [0, 0.0], "rule": [0, 0.0]}
    for r in range(args.rounds):
        order = [("bare", bare), ("rule", rule)] if r % 2 == 0 else [("rule", rule), ("bare", bare)]
        for name, fn in order:
            tok, dt = fn()
            totals[name][0] += tok
            totals[name][1] += dt
            print(f"round {r} {name:4s}: {tok} tokens in {dt:.1f} s = {tok / dt:.1f} tokens/s", flush=True)
    bare_tps = totals["bare"][0] / totals["bare"][1]
    rule_tps = totals["rule"][0] / totals["rule"][1]
    print(f"engine start-up: {startup:.1f} s (same for both; excluded)")
    print(f"bare engine: {bare_tps:.1f} tokens/s; sampling rule: {rule_tps:.1f} tokens/s")
    print(f"ratio rule/bare = {rule_tps / bare_tps:.3f} (goal >= 0.9); identical tokens: "
          f"{totals['bare'][0] == totals['rule'][0]}")


if __name__ == "__main__":  # vLLM spawns worker processes
    main()
