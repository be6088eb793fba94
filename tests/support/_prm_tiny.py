"""Tiny random-weight base models (with conftest.tiny_tokenizer) for the training tests (no downloads), a
trainset with a learnable signal (a step containing "wrong" is labelled 0, every other step 1), and
`score_steps`, the reference scorer of a trained PRM that the scoring paths are checked against."""
from __future__ import annotations

import json
import random
from pathlib import Path

from conftest import tiny_tokenizer


def tiny_base(path: Path, with_step_token: bool = False, arch: str = "llama", seed: int = 0,
              spare_rows: int | None = None) -> Path:
    """Save a random-weight causal LM (hidden 32, 2 layers) + tokenizer to `path`, as a base model dir.
    Qwen-like bases get spare embedding rows (as the real Qwen checkpoints: more rows than tokens)."""
    import torch
    import transformers

    tok = tiny_tokenizer(with_step_token)
    cfg_cls = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config}[arch]
    spare = (8 if arch == "qwen2" else 0) if spare_rows is None else spare_rows
    cfg = cfg_cls(vocab_size=len(tok) + spare, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                  pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def signal_rows(n: int = 24, seed: int = 0, soft: bool = False) -> list[dict]:
    """Instances whose step labels are learnable from the text: "wrong" steps are bad, others good."""
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = rnd.randint(1, 9), rnd.randint(1, 9)
        k = rnd.randint(2, 4)
        steps, labels = [], []
        for j in range(k):
            bad = rnd.random() < 0.4
            steps.append(f"Step {j + 1}: {a} + {b} = {a + b + (1 if bad else 0)}, this step is "
                         f"{'wrong' if bad else 'right'}.")
            good = 0.0 if bad else 1.0
            labels.append(good if not soft else (0.125 if bad else 0.875))
        rows.append({"instance_id": f"t-{i:03d}", "question": f"What is {a} + {b}?", "steps": steps,
                     "labels": labels})
    return rows


def write_trainset(path: Path, rows: list[dict]) -> Path:
    import pandas as pd

    from prm_lessons.tables import write_table

    write_table(pd.DataFrame(rows), path, "trainset")
    return path


def score_steps(model, tokenizer, fmt, batch, max_length: int | None = None, batch_size: int = 8) -> list[list[float]]:
    """Reference oracle for a trained PRM (prm.ProcessRewardModel): P(good step) for every step of every
    (question, steps) pair, one forward pass per response, read at the step positions through
    `step_logits` (the training path), independently of the scoring adapters.

    Returns one list per response, as long as its steps; steps cut off by max_length (default: the
    PRM's training max_length) get NaN, so the caller sees and counts them."""
    import torch

    from prm_lessons.models.prm import StepCollator, pad_id
    from prm_lessons.steps import build_prm_input

    max_length = max_length if max_length is not None else getattr(model, "max_length", None)
    device = next(model.parameters()).device
    encs = [build_prm_input(tokenizer, q, list(steps), fmt, max_length) for q, steps in batch]
    results: list[list[float]] = [[float("nan")] * e.n_steps for e in encs]
    collate = StepCollator(pad_id(tokenizer))
    order = sorted((i for i, e in enumerate(encs) if e.n_steps_kept > 0), key=lambda i: len(encs[i].input_ids))
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            items = [{"input_ids": encs[i].input_ids, "step_pos": encs[i].step_positions[:encs[i].n_steps_kept],
                      "step_targets": [0.0] * encs[i].n_steps_kept} for i in idx]
            b = collate(items)
            logits = model.step_logits(b["input_ids"].to(device), b["attention_mask"].to(device),
                                       b["step_batch"].to(device), b["step_pos"].to(device))
            probs = torch.softmax(logits.float(), dim=-1)[:, 1].cpu().tolist()
            offset = 0
            for i in idx:
                k = encs[i].n_steps_kept
                results[i][:k] = probs[offset:offset + k]
                offset += k
    return results


def qwen2_prm(path: Path, kind: str, *, hidden: int, layers: int, heads: int, kv: int, inter: int) -> Path:
    """A random-weight Qwen2ForProcessRewardModel / Qwen2ForRewardModel in the released layout (bf16
    weights, as the Hub repos), with the real Qwen2.5-Math-PRM tokenizer (<extra_0> = 151651)."""
    from prm_lessons.rehearsal import hub_cache as H
    from prm_lessons.rehearsal.tokenizers import save_tokenizer

    repo = {"qwen_prm": "Qwen/Qwen2.5-Math-PRM-7B", "qwen_orm": "Qwen/Qwen2.5-Math-RM-72B"}[kind]
    spec = H.REPOS[repo]
    scale = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
             "num_key_value_heads": kv, "intermediate_size": inter}
    cfg = H._model_config(spec, scale)
    path.mkdir(parents=True, exist_ok=True)
    from safetensors.torch import save_file

    save_file(H._state_dict(spec, cfg, seed=1), str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2))
    save_tokenizer(spec.tokenizer, path)
    return path
