"""The model-token budget of a finished run, per rule, from the sidecars its jobs wrote
(logs/<rule>/<job>.tokens.json, prm_lessons.jobs.budget): prefill and decode tokens, the dtypes they ran in,
the model seconds measured on this host, and the time they would take at the slowest 2-core host's
~350 tokens/s (AVX2 only, float32 ceiling for a 135M model; --rate to change it). `cached`: the part of
prefill vLLM served from its prefix cache (MC's and the audit's K completions of one step repeat its
prompt), counted in prefill and in the time column, so that column is an upper bound. `slow host s`:
the estimate that separates them, uncached prefill at --rate and decode at --decode-rate (~105 tokens/s,
measured under bench/slow_host.sh: decoding runs well below the float32 ceiling).

    python bench/token_budget.py [--logs logs] [--rate 350] [--decode-rate 105]
    python bench/token_budget.py --ratio [--slice 16] [--model resources/models/smollm2]

--ratio also measures the bf16 / float32 time ratio of the heaviest rule's work on this host, side by side:
a slice of the run's own policy samples (results/samples/*.parquet) shaped as that rule's requests (its mean
prompt and decode tokens per request), run by the same engine in each dtype, each in a fresh process.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from prm_lessons.jobs.budget import SLOW_HOST_DECODE_TOKENS_PER_S, SLOW_HOST_TOKENS_PER_S, SUFFIX  # noqa: E402


def read_sidecars(logs: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(logs.rglob(f"*{SUFFIX}"))]


def per_rule(records: list[dict]) -> dict[str, dict]:
    """rule → jobs, prefill, decode, tokens, prompts, model seconds, dtypes, and the request shape."""
    out: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "prefill": 0, "decode": 0, "cached": 0, "prompts": 0,
                                                "seconds": 0.0, "dtypes": set(), "generate": False})
    for r in records:
        row = out[r["rule"]]
        row["jobs"] += 1
        row["prefill"] += r["prefill_tokens"]
        row["decode"] += r["decode_tokens"]
        row["seconds"] += r["model_seconds"]
        row["dtypes"].update(r["dtypes"])
        for p in r["parts"]:
            row["generate"] = row["generate"] or p["kind"] == "generate"
            row["prompts"] += p.get("prompts", 0)
            row["cached"] += p.get("cached_prefill_tokens") or 0  # vLLM prefix-cache hits, counted in prefill
    for row in out.values():
        row["tokens"] = row["prefill"] + row["decode"]
    return dict(out)


def slow_host_seconds(r: dict, rate: float, decode_rate: float) -> float:
    return (r["prefill"] - r["cached"]) / rate + r["decode"] / decode_rate


def table(rules: dict[str, dict], rate: float, decode_rate: float = SLOW_HOST_DECODE_TOKENS_PER_S) -> str:
    total = sum(r["tokens"] for r in rules.values()) or 1
    lines = [f"{'rule':<26}{'jobs':>5}{'prefill':>11}{'decode':>10}{'cached':>10}{'share':>7}{'measured s':>12}"
             f"{f'at {rate:g} tok/s':>16}{'slow host s':>13}  dtype"]
    for name, r in sorted(rules.items(), key=lambda kv: -kv[1]["tokens"]):
        lines.append(f"{name:<26}{r['jobs']:>5}{r['prefill']:>11,}{r['decode']:>10,}{r['cached']:>10,}"
                     f"{r['tokens'] / total:>7.1%}{r['seconds']:>12.1f}{r['tokens'] / rate:>15.0f}s"
                     f"{slow_host_seconds(r, rate, decode_rate):>12.0f}s  {'/'.join(sorted(r['dtypes']))}")
    tot = {k: sum(r[k] for r in rules.values()) for k in ("jobs", "prefill", "decode", "cached", "seconds")}
    lines.append(f"{'total':<26}{tot['jobs']:>5}{tot['prefill']:>11,}{tot['decode']:>10,}{tot['cached']:>10,}"
                 f"{1:>7.0%}{tot['seconds']:>12.1f}{(tot['prefill'] + tot['decode']) / rate:>15.0f}s"
                 f"{slow_host_seconds(tot, rate, decode_rate):>12.0f}s")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ bf16 / float32

def _prompts(n: int) -> list[tuple[str, str]]:
    """(question, response) of the first n policy samples of the run (results/samples/*.parquet)."""
    import pandas as pd

    files = sorted(Path("results/samples").glob("*.parquet"))
    if not files:
        raise SystemExit("--ratio needs a finished run's results/samples/*.parquet (make run)")
    df = pd.concat([pd.read_parquet(f, columns=["question", "response"]) for f in files]).head(n)
    return list(zip(df["question"].astype(str), df["response"].astype(str)))


def measure(dtype: str, model: str, n: int, prompt_tokens: int, decode_tokens: int, generate: bool) -> dict:
    """One dtype, in this process: seconds for n requests of the rule's shape (prompt cut to prompt_tokens;
    decode_tokens greedy tokens, or one forward of the prompt when the rule only runs forwards)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model, trust_remote_code=False)
    texts = [q + "\n\n" + r for q, r in _prompts(n)]
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    ids = [(x * (prompt_tokens // max(len(x), 1) + 1))[:prompt_tokens] for x in ids]  # the rule's prompt length
    prompts = [tok.decode(x) for x in ids]
    entry = {"dtype": dtype, "max_model_len": 2048, "gpu_memory_utilization": 0.5}
    if generate:
        from prm_lessons.generation.engine import SamplingSpec, load_engine

        engine = load_engine(model, entry)
        spec = SamplingSpec(n=1, temperature=0.0, top_p=1.0, max_tokens=max(1, decode_tokens), seed=0)
        engine.generate(prompts[:1], spec)  # warm-up, not timed
        t0 = time.perf_counter()
        outs = engine.generate(prompts, spec)
        secs = time.perf_counter() - t0
        decoded = sum(c.n_tokens for cs in outs for c in cs)
    else:
        import torch
        from transformers import AutoModel

        m = AutoModel.from_pretrained(model, dtype=getattr(torch, dtype), trust_remote_code=False).eval()
        with torch.no_grad():
            m(input_ids=torch.tensor([ids[0]]))  # warm-up (kernel selection), not timed
        t0 = time.perf_counter()
        with torch.no_grad():
            for x in ids:
                m(input_ids=torch.tensor([x]))
        secs, decoded = time.perf_counter() - t0, 0
    tokens = sum(len(x) for x in ids) + decoded
    return {"dtype": dtype, "seconds": secs, "tokens": tokens, "tokens_per_s": tokens / secs}


def ratio(rules: dict[str, dict], model: str, n: int) -> str:
    name, r = max(rules.items(), key=lambda kv: kv[1]["tokens"])
    reqs = max(r["prompts"], 1)  # generation requests, or texts of a forward-only rule
    prompt, decode = max(1, int(r["prefill"] / reqs)), int(r["decode"] / reqs)
    res = {}
    for dtype in ("bfloat16", "float32"):  # a fresh process each: one vLLM engine per process
        cmd = [sys.executable, __file__, "--_measure", dtype, "--model", model, "--slice", str(n),
               "--_shape", str(prompt), str(decode), str(int(r["generate"]))]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        res[dtype] = json.loads(out.strip().splitlines()[-1])
    b, f = res["bfloat16"], res["float32"]
    per_b, per_f = b["seconds"] / b["tokens"], f["seconds"] / f["tokens"]
    return (f"heaviest rule: {name} ({r['tokens']:,} tokens; requests of ~{prompt} prompt + {decode} decode tokens), "
            f"{n} requests from results/samples:\n"
            f"  bfloat16 {b['tokens_per_s']:.0f} tokens/s ({b['seconds']:.1f} s), float32 {f['tokens_per_s']:.0f} "
            f"tokens/s ({f['seconds']:.1f} s): bf16 / float32 time per token = {per_b / per_f:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logs", default="logs", type=Path)
    ap.add_argument("--rate", default=SLOW_HOST_TOKENS_PER_S, type=float, help="tokens/s of the host to estimate")
    ap.add_argument("--decode-rate", default=SLOW_HOST_DECODE_TOKENS_PER_S, type=float,
                    help="decoded tokens/s of that host (the slow-host column)")
    ap.add_argument("--ratio", action="store_true", help="measure bf16 / float32 of the heaviest rule here")
    ap.add_argument("--slice", default=16, type=int, help="requests per dtype for --ratio")
    ap.add_argument("--model", default="resources/models/smollm2")
    ap.add_argument("--_measure", help=argparse.SUPPRESS)
    ap.add_argument("--_shape", nargs=3, type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._measure:
        print(json.dumps(measure(a._measure, a.model, a.slice, a._shape[0], a._shape[1], bool(a._shape[2]))))
        return 0
    records = read_sidecars(a.logs)
    if not records:
        print(f"no {SUFFIX} sidecars under {a.logs}/: run the workflow first (make run)", file=sys.stderr)
        return 1
    rules = per_rule(records)
    print(table(rules, a.rate, a.decode_rate))
    if a.ratio:
        if not Path(a.model).is_dir():
            print(f"--ratio: no model at {a.model} (make run converts it)", file=sys.stderr)
            return 1
        print(ratio(rules, a.model, a.slice))
    return 0


if __name__ == "__main__":
    sys.exit(main())
