"""One-pass step scoring vs per-prefix scoring (one forward per step prefix), side by side in one run.

Model: the embedded SmolLM2-135M at resources/models/smollm2 (if converted) with a fresh 2-class step
head — the architecture and size of the embedded trained PRMs; otherwise a random-weight model of
the same config. Responses: 8 steps each. Prints responses/s of both and the ratio (goal ≥ 5×), and
checks both give the same scores.

Usage: python bench/scoring_speed.py [--responses 16] [--steps 8] [--threads 2]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def build(model_dir: Path):
    import torch
    from transformers import AutoModel, AutoTokenizer, LlamaConfig

    from prm_lessons.scoring.adapters import StepHeadAdapter
    from prm_lessons.scoring.heads import build_head_model
    from prm_lessons.steps import COT_SYSTEM_PROMPT, StepFormat

    if (model_dir / "config.json").exists():
        tok = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)
        base = AutoModel.from_pretrained(model_dir, dtype=torch.float32, trust_remote_code=False)
        source = f"{model_dir} (SmolLM2-135M weights)"
    else:
        sys.path.insert(0, str(ROOT / "tests"))
        from conftest import scoring_tokenizer  # the scoring tests' tiny tokenizer

        tok = scoring_tokenizer()
        cfg = LlamaConfig(vocab_size=len(tok), hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                          num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048)
        torch.manual_seed(0)
        base = AutoModel.from_config(cfg)
        source = "random weights, SmolLM2-135M config"
    if "<extra_0>" not in tok.get_vocab():
        tok.add_special_tokens({"additional_special_tokens": ["<extra_0>"]})
        base.resize_token_embeddings(len(tok), mean_resizing=False)
    torch.manual_seed(0)
    model = build_head_model(base, "qwen_prm").eval()
    fmt = StepFormat("<extra_0>", COT_SYSTEM_PROMPT, tok.chat_template is not None)
    return StepHeadAdapter(model, tok, step_format=fmt), source


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--responses", type=int, default=16)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    import random

    import torch

    from prm_lessons.scoring.batch import score_naive_per_prefix, score_responses

    torch.set_num_threads(args.threads)
    adapter, source = build(ROOT / "resources" / "models" / "smollm2")
    rnd = random.Random(0)
    qs, steps = [], []
    for i in range(args.responses):
        a, b = rnd.randint(10, 99), rnd.randint(10, 99)
        qs.append(f"What is {a} + {b} + {i}?")
        steps.append([f"Step {k + 1}: we add {a} and {b + k} to get {a + b + k}, then carry on with the sum."
                      for k in range(args.steps)])
    score_responses(adapter, qs[:2], steps[:2])  # warm-up
    t0 = time.perf_counter()
    one = score_responses(adapter, qs, steps, batch_size=args.batch_size)
    t_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    naive = [score_naive_per_prefix(adapter, q, s) for q, s in zip(qs, steps)]
    t_naive = time.perf_counter() - t0
    diff = max(abs(x - y) for a, b in zip(one, naive) for x, y in zip(a, b))
    r1, r2 = args.responses / t_one, args.responses / t_naive
    print(f"model: {source}; {args.responses} responses x {args.steps} steps, {args.threads} threads")
    print(f"one pass (batched, length-sorted): {r1:8.2f} responses/s  ({t_one:.2f} s)")
    print(f"per prefix (one forward per step): {r2:8.2f} responses/s  ({t_naive:.2f} s)")
    print(f"speed-up: {r1 / r2:.1f}x (goal >= 5x); max |score difference| {diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
