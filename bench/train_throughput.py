"""PRM training throughput: tokens/s of the training step, and MFU on a GPU.

GPU (CUDA visible): a random-weight Qwen2-architecture model of ~0.5B parameters (Qwen2.5-0.5B's config,
built from Qwen2Config, nothing downloaded) + the 2-class step head, bf16, on realistic step-labelled
sequences (lengths 384-2048 tokens, a step token every 40-160 tokens, hard 0/1 labels); full fine-tuning
steps (forward + backward + AdamW) of prm_lessons.models.prm.ProcessRewardModel with the training
collator. Prints tokens/s and MFU = achieved model FLOP/s / peak bf16 FLOP/s of the card (goal >= 35% on
H100/H200), and HFU (with the forward that gradient checkpointing recomputes), from the FLOPs per token of
prm_lessons.training.flops (6 x matmul weights without the embedding + causal attention + the step head).

CPU (no GPU): the embedded default's training step, side by side in one run on the embedded SmolLM2-135M
(resources/models/smollm2 if converted, else a random model of its config): `head` mode (what the
embedded config uses: one bf16 forward of the frozen base per instance + head steps) vs one `lora` and
one `full` fp32 training step on the same batch; tokens/s of each and the ratios. The GPU MFU number is
skipped with a note. `--tiny` runs the GPU code path on a tiny config (CPU smoke test of this script).

Usage: python bench/train_throughput.py [--steps 10] [--batch 8] [--seq 1024] [--threads 2] [--tiny]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


QWEN25_05B = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                  num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                  rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)
TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
SMOLLM2_135M = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                    num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                    tie_word_embeddings=True)


def synthetic_instances(n: int, vocab: int, step_id: int, seq_lo: int, seq_hi: int, seed: int = 0) -> list[dict]:
    """Step-labelled sequences shaped like PRM training data: a ~60-token prompt, then steps of 40-160
    tokens each closed by the step token, labels 1 up to a first error (then 0, and the response ends)."""
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        length = rnd.randint(seq_lo, seq_hi)
        ids = [rnd.randrange(10, vocab) for _ in range(60)]
        pos, targets = [], []
        first_error = rnd.random() < 0.5
        while len(ids) + 41 < length:
            ids.extend(rnd.randrange(10, vocab) for _ in range(min(rnd.randint(40, 160), length - len(ids) - 1)))
            pos.append(len(ids))
            ids.append(step_id)
            bad = first_error and rnd.random() < 0.25
            targets.append(0.0 if bad else 1.0)
            if bad:
                break
        out.append({"input_ids": ids, "step_pos": pos, "step_targets": targets})
    return out


def gpu_bench(args) -> dict:
    import torch
    from transformers import AutoModel, Qwen2Config

    from prm_lessons.models.prm import ProcessRewardModel, StepCollator, StepHead
    from prm_lessons.training import flops as F

    device = torch.device("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    cfg = Qwen2Config(**(TINY if args.tiny else QWEN25_05B), attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device(device):
        backbone = AutoModel.from_config(cfg, dtype=torch.bfloat16)
        head = StepHead(cfg.hidden_size).to(torch.bfloat16)
    if args.grad_ckpt:
        backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model = ProcessRewardModel(backbone, head, "hard").to(device).train()
    n_params = sum(p.numel() for p in model.parameters())
    # pure-bf16 weights + AdamW (fused on GPU): the usual throughput setup; the workflow's Trainer keeps fp32
    # master weights under bf16 autocast, which costs memory, not matmul FLOPs
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device.type == "cuda")
    seq_lo, seq_hi = (64, 256) if args.tiny else (max(384, args.seq // 2), args.seq * 2)
    inst = synthetic_instances(args.batch * (args.steps + args.warmup), cfg.vocab_size, 3, seq_lo, seq_hi)
    inst.sort(key=lambda x: len(x["input_ids"]))  # length-grouped batches (as group_by_length)
    batches = [inst[i:i + args.batch] for i in range(0, len(inst), args.batch)]
    random.Random(1).shuffle(batches)
    collate = StepCollator(0)
    step_tokens, t_total, pad_tokens = 0, 0.0, 0
    lengths: list[int] = []  # of the measured sequences: the attention term's context (flops.attention_context)
    for k, items in enumerate(batches):
        b = {key: v.to(device, non_blocking=True) for key, v in collate(items).items()}
        n_tok = int(b.pop("n_tokens"))
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = model(**b)["loss"]
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if k >= args.warmup:
            t_total += time.perf_counter() - t0
            step_tokens += n_tok
            pad_tokens += b["input_ids"].numel()
            lengths += [len(x["input_ids"]) for x in items]
    tps = step_tokens / t_total
    mean_seq = step_tokens / (len(batches) - args.warmup) / args.batch
    shape = F.shape_of(cfg)  # the PRM: no LM head, the step head counted
    context = F.attention_context(lengths)
    model_flops = F.train_flops(shape, context) * tps
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"
    peak = F.peak_bf16(name)
    util = F.training_utilisation(shape, tps, context, peak, args.grad_ckpt) if peak else {}
    return {"device": name, "params": n_params, "matmul_weights": F.matmul_weights(shape), "tokens_per_second": tps,
            "mean_seq_len": mean_seq, "attention_context": context, "padding_share": 1 - step_tokens / pad_tokens,
            "model_tflops": model_flops / 1e12, "mfu": util.get("mfu"), "hfu": util.get("hfu"),
            "grad_ckpt": args.grad_ckpt, "batch": args.batch, "last_loss": loss.item()}


def cpu_bench(args) -> dict:
    import torch
    from transformers import AutoModel, AutoTokenizer, LlamaConfig

    from prm_lessons.steps import StepFormat, build_prm_input
    from prm_lessons.training import train as T

    torch.set_num_threads(args.threads)
    model_dir = ROOT / "resources" / "models" / "smollm2"
    if (model_dir / "config.json").exists():
        tok = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)
        load = lambda dt: AutoModel.from_pretrained(model_dir, dtype=dt, trust_remote_code=False)  # noqa: E731
        source = str(model_dir.relative_to(ROOT))
    else:
        tok = None
        cfg = LlamaConfig(**SMOLLM2_135M)
        load = lambda dt: AutoModel.from_config(cfg, dtype=dt)  # noqa: E731
        source = "random SmolLM2-135M config"
    # realistic embedded instances: SmolLM2's chat format with the step token, 3-5 short arithmetic steps
    if tok is not None:
        T.ensure_step_token(tok, None, "<extra_0>")
        fmt = StepFormat()
        rnd = random.Random(0)
        inst = []
        for i in range(args.batch):
            a, b, c = (rnd.randint(1, 99) for _ in range(3))
            steps = [f"First, we add {a} and {b}: {a} + {b} = {a + b}.",
                     f"Next, we subtract {c}: {a + b} - {c} = {a + b - c}.",
                     f"So the result of the expression {a} + {b} - {c} is {a + b - c}.",
                     f"The final answer is \\boxed{{{a + b - c}}}."][: rnd.randint(3, 4)]
            e = build_prm_input(tok, f"Calculate {a} + {b} - {c}.", steps, fmt, 1024)
            inst.append({"input_ids": e.input_ids, "step_pos": e.step_positions,
                         "step_targets": [1.0] * len(e.step_positions)})
        vocab = len(tok)
    else:
        inst = synthetic_instances(args.batch, SMOLLM2_135M["vocab_size"], 3, 120, 200)
        vocab = SMOLLM2_135M["vocab_size"]
    collate = T.StepCollator(0)
    batch = collate(inst)
    n_tok = int(batch.pop("n_tokens"))
    res = {"model": source, "instances": len(inst), "tokens": n_tok, "threads": args.threads}

    # head mode (embedded default): frozen bf16 base, one forward; then head steps on the features
    backbone = load(torch.bfloat16)
    backbone.resize_token_embeddings(max(vocab, backbone.get_input_embeddings().num_embeddings))
    t0 = time.perf_counter()
    feats = T.step_features(backbone, inst, 0, args.batch, torch.device("cpu"))
    t_feat = time.perf_counter() - t0
    head_model = T.HeadOnlyModel(T.StepHead(backbone.config.hidden_size), "hard")
    opt = torch.optim.AdamW(head_model.parameters(), lr=1e-3)
    hb = collate(feats)
    hb.pop("n_tokens")
    t0 = time.perf_counter()
    for _ in range(20):
        head_model(**hb)["loss"].backward()
        opt.step()
        opt.zero_grad()
    t_head = (time.perf_counter() - t0) / 20
    res["head"] = {"feature_pass_s": t_feat, "feature_tokens_per_second": n_tok / t_feat,
                   "head_step_s": t_head}
    del backbone

    # one lora and one full fp32 training step on the same batch (what head mode avoids on CPU)
    half = {k: v for k, v in collate(inst[: max(1, args.batch // 4)]).items()}
    n_half = int(half.pop("n_tokens"))
    for mode in ("lora", "full"):
        backbone = load(torch.float32)
        backbone.resize_token_embeddings(max(vocab, backbone.get_input_embeddings().num_embeddings))
        if mode == "lora":
            from peft import LoraConfig, get_peft_model

            backbone = get_peft_model(backbone, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
        model = T.ProcessRewardModel(backbone, T.StepHead(backbone.config.hidden_size), "hard").train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        t0 = time.perf_counter()
        model(**half)["loss"].backward()
        opt.step()
        dt = time.perf_counter() - t0
        res[mode] = {"step_s": dt, "tokens": n_half, "tokens_per_second": n_half / dt}
        del model, backbone, opt
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10, help="measured steps (GPU)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024, help="typical sequence length (GPU: lengths seq/2..2*seq)")
    ap.add_argument("--grad-ckpt", action="store_true", help="gradient checkpointing (GPU)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tiny", action="store_true", help="run the GPU code path on a tiny model on CPU")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    import torch

    if torch.cuda.is_available() or args.tiny:
        r = gpu_bench(args)
        print(f"device: {r['device']}   model: Qwen2 config, {r['params'] / 1e6:.0f}M params (random), bf16, "
              f"batch {r['batch']}, mean length {r['mean_seq_len']:.0f} tokens, padding {r['padding_share']:.1%}, "
              f"gradient checkpointing {'on' if r['grad_ckpt'] else 'off'}")
        mfu = (f"MFU {r['mfu']:.1%}   HFU {r['hfu']:.1%}" if r["mfu"] is not None
               else "MFU n/a (unknown peak for this device)")
        print(f"training step: {r['tokens_per_second']:,.0f} tokens/s   model {r['model_tflops']:.1f} TFLOP/s   {mfu}")
    else:
        r = cpu_bench(args)
        h = r["head"]
        print(f"CPU ({r['threads']} threads), {r['model']}: {r['instances']} embedded-style instances, "
              f"{r['tokens']} tokens")
        print(f"  head (embedded default): feature pass {h['feature_tokens_per_second']:,.0f} tokens/s "
              f"({h['feature_pass_s']:.2f} s), head step {h['head_step_s'] * 1e3:.2f} ms")
        for mode in ("lora", "full"):
            m = r[mode]
            print(f"  {mode:4s} fp32 training step: {m['tokens_per_second']:,.0f} tokens/s ({m['step_s']:.2f} s for "
                  f"{m['tokens']} tokens)   head-mode feature pass is "
                  f"{h['feature_tokens_per_second'] / m['tokens_per_second']:.0f}x faster per token")
        print("GPU MFU: skipped (no GPU visible). On a GPU this script builds a random Qwen2 ~0.5B model and "
              "reports tokens/s and MFU.")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2, default=str))


if __name__ == "__main__":
    main()
