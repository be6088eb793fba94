"""PRM training: a base LM + 2-class step head, trained with the transformers `Trainer`.

Model (as the released Qwen2.5-Math-PRM): the base model's last hidden state at the step token placed
after every step (`prm_lessons.steps.build_prm_input`, the one step-format contract) goes through
`Linear(h,h) -> ReLU -> Linear(h,2)`; P(good step) = softmax(logits)[1].

Loss: cross-entropy on hard 0/1 labels; soft labels in [0,1]: binary cross-entropy on P(good) (`bce`,
default) or MSE on P(good) (`mse`, the paper's preliminary soft runs). For 0/1 targets BCE on P(good) and
2-class CE are the same number, so a soft variant whose labels happen to be all 0/1 trains identically.

Modes (`training.mode`): `full` fine-tuning (paper), `lora` (peft adapters, merged at save time), `head`
(frozen base: its step features are computed once, then only the head trains; the embedded CPU default).

Output directory (a Hugging Face directory the scoring code loads with `load_prm`):
  config.json + model.safetensors  the base model (AutoModel, i.e. without the LM head), LoRA merged
  tokenizer files                  incl. the step token (added as a special token when the base lacks it)
  prm_head.safetensors             the step head
  prm.json                         step format, max_length, label type, loss, mode, base, head shape
  train_metrics.json               loss_history, train_tokens, tokens_per_second, wall_seconds, hardware …

Checkpoints go to a separate directory (Snakemake deletes a job's outputs before it runs, so checkpoints
inside the output directory would not survive a requeue). A rerun with the same settings and trainset
resumes from the last checkpoint there (SLURM requeue after preemption); different settings start over.
A job stopped by SIGTERM (JIT checkpoint) raises TrainingInterrupted instead of saving a half-trained PRM.
Several processes: with `gpus > 1` (one process per GPU) or, on CPU, `processes > 1` (gloo), the rule
function relaunches this module through `torchrun` on one node, on a free rendezvous port; DeepSpeed ZeRO-3
(config/deepspeed/zero3.json) is switched on by `training.deepspeed`. What fits: full fine-tuning of a
7B base with ZeRO-3 on one node of 8x80 GB GPUs (~16 bytes of weights + Adam state per parameter, ~15 GB
per GPU). A 72B base (~1.2 TB of such state, ~145 GB per GPU on 8 GPUs) does not fit in one node: it
needs several nodes or CPU offload, which this launcher does not do.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .steps import StepFormat, build_prm_input

log = logging.getLogger(__name__)

HEAD_FILE = "prm_head.safetensors"
FORMAT_FILE = "prm.json"
METRICS_FILE = "train_metrics.json"
FINGERPRINT_FILE = "fingerprint.json"

# Defaults mirror workflow/schemas/config.schema.yaml (`training`), so library callers and tests can pass
# a partial dict. The schema is the documented source; test_training checks the two agree.
DEFAULTS: dict[str, Any] = {
    "base": "policy",
    "mode": "full",
    "soft_loss": "bce",
    "step_token": "<extra_0>",
    "system_prompt": "Please reason step by step, and put your final answer within \\boxed{}.",
    "use_chat_template": True,
    "max_length": 2048,
    "epochs": 1.0,
    "max_steps": -1,
    "batch_size": 8,
    "gradient_accumulation_steps": 1,
    "learning_rate": 1e-5,
    "weight_decay": 0.0,
    "warmup_ratio": 0.0,
    "lr_scheduler": "cosine",
    "max_grad_norm": 1.0,
    "seed": 0,
    "precision": "auto",
    "gradient_checkpointing": True,
    "group_by_length": True,
    "logging_steps": 1,
    "save_steps": 200,
    "save_total_limit": 2,
    "keep_checkpoints": False,
    "jit_checkpoint": True,
    "lora": {"r": 16, "alpha": 32, "dropout": 0.05, "target_modules": "all-linear"},
    "deepspeed": None,
    "gpus": 0,
    "processes": 1,
    "gpus_scoring": None,
    "mem_mb": 8000,
    "runtime": 60,
    "threads": 2,
}
MODES = ("full", "lora", "head")
SOFT_LOSSES = ("bce", "mse")
LABEL_TYPES = ("hard", "soft")


class TrainingError(ValueError):
    """Bad training input (trainset rows, settings); the message names the row id or key."""


class TrainingInterrupted(RuntimeError):
    """Training stopped before its last step (SIGTERM -> JIT checkpoint): nothing is saved as the PRM, the
    job fails and its rerun resumes from the checkpoint."""


def settings_from(training: dict | None) -> dict:
    s = {**DEFAULTS, **(training or {})}
    s["lora"] = {**DEFAULTS["lora"], **(s.get("lora") or {})}
    if s["mode"] not in MODES:
        raise TrainingError(f"training.mode: {s['mode']!r} is not one of {MODES}")
    if s["soft_loss"] not in SOFT_LOSSES:
        raise TrainingError(f"training.soft_loss: {s['soft_loss']!r} is not one of {SOFT_LOSSES}")
    save = float(s["save_steps"])
    if save < 0 or (save > 1 and save != int(save)):
        raise TrainingError(f"training.save_steps: {s['save_steps']!r} must be 0, a fraction in (0, 1) "
                            f"or a whole number of steps")
    return s


def save_steps(settings: dict) -> float | int:
    """Checkpoint interval for TrainingArguments: a whole number of optimizer steps, or a fraction in (0, 1)
    of all steps (transformers reads such a float as a ratio); 0 = no checkpoints."""
    x = float(settings["save_steps"])
    return x if 0 < x < 1 else int(x)


def step_format(settings: dict) -> StepFormat:
    return StepFormat(step_token=settings["step_token"], system_prompt=settings["system_prompt"],
                      use_chat_template=bool(settings["use_chat_template"]))


# ----------------------------------------------------------------------------------------------- model


class StepHead(nn.Module):
    """Linear(h,h) -> ReLU -> Linear(h,2), the value head of the released Qwen2.5-Math-PRM."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.net = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, 2))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        w = self.net[0].weight  # a base spread over GPUs hands over its last layer's device
        return self.net(h.to(device=w.device, dtype=w.dtype))


def step_loss(logits: torch.Tensor, targets: torch.Tensor, label_type: str, soft_loss: str = "bce") -> torch.Tensor:
    """Loss over the selected step positions. logits (n, 2); targets (n,) in [0, 1]."""
    logits = logits.float()
    targets = targets.float()
    if label_type == "hard":
        return F.cross_entropy(logits, targets.long())
    if soft_loss == "mse":
        return F.mse_loss(torch.softmax(logits, dim=-1)[:, 1], targets)
    # P(good) = softmax(l)[1] = sigmoid(l1 - l0): BCE on it, computed stably from the logit difference
    return F.binary_cross_entropy_with_logits(logits[:, 1] - logits[:, 0], targets)


class ProcessRewardModel(nn.Module):
    """Base model (AutoModel, no LM head) + StepHead read at the step-token positions."""

    def __init__(self, backbone: nn.Module, head: StepHead, label_type: str = "hard", soft_loss: str = "bce"):
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.label_type = label_type
        self.soft_loss = soft_loss

    def step_logits(self, input_ids, attention_mask, step_batch, step_pos) -> torch.Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.head(hidden[step_batch, step_pos])

    def forward(self, input_ids, attention_mask=None, step_batch=None, step_pos=None, step_targets=None,
                n_tokens=None):
        if step_batch is None:  # per-token logits [B, T, 2]: what scoring adapters read at step positions
            hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return self.head(hidden).float()
        logits = self.step_logits(input_ids, attention_mask, step_batch, step_pos)
        out = {"logits": logits}
        if step_targets is not None:
            out["loss"] = step_loss(logits, step_targets, self.label_type, self.soft_loss)
        return out


class HeadOnlyModel(nn.Module):
    """`head` mode: the frozen base's step features are precomputed; only the head is trained."""

    def __init__(self, head: StepHead, label_type: str = "hard", soft_loss: str = "bce"):
        super().__init__()
        self.head = head
        self.label_type = label_type
        self.soft_loss = soft_loss

    def forward(self, step_features, step_targets=None, n_tokens=None):
        logits = self.head(step_features)
        out = {"logits": logits}
        if step_targets is not None:
            out["loss"] = step_loss(logits, step_targets, self.label_type, self.soft_loss)
        return out


# ------------------------------------------------------------------------------------------------ data


def ensure_step_token(tokenizer, backbone, step_token: str) -> bool:
    """Add `step_token` as a special token (and resize the embeddings) when the tokenizer lacks it.
    Returns True when it was added. Qwen tokenizers already have <extra_0>; SmolLM2's does not."""
    vocab = tokenizer.get_vocab()
    if step_token in vocab:
        return False
    tokenizer.add_tokens([step_token], special_tokens=True)
    # real checkpoints often have spare embedding rows (Qwen: 152064 rows, 151665 tokens): resize only if needed
    if backbone is not None and len(tokenizer) > backbone.get_input_embeddings().num_embeddings:
        old = backbone.get_input_embeddings().num_embeddings
        # the new row is the mean of the old ones, not transformers' random draw: every job that adds the
        # token gets the same base (head-only PRMs share precomputed base features, prm_lessons.features)
        backbone.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        with torch.no_grad():
            emb = backbone.get_input_embeddings().weight
            emb[old:] = emb[:old].float().mean(dim=0).to(emb.dtype)
    return True


def pad_id(tokenizer) -> int:
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


def validate_labels(instance_id: str, steps: Sequence, labels: Sequence, label_type: str) -> list[float]:
    if steps is None or labels is None:
        raise TrainingError(f"trainset row {instance_id!r}: steps/labels missing")
    if len(steps) != len(labels):
        raise TrainingError(f"trainset row {instance_id!r}: {len(steps)} steps but {len(labels)} labels")
    out = []
    for i, v in enumerate(labels):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise TrainingError(f"trainset row {instance_id!r}: label {i} is {v!r}, not a number") from None
        if math.isnan(x) or not 0.0 <= x <= 1.0:
            raise TrainingError(f"trainset row {instance_id!r}: label {i} = {v!r} is outside [0, 1]")
        if label_type == "hard" and x not in (0.0, 1.0):
            raise TrainingError(f"trainset row {instance_id!r}: label {i} = {v!r} in a hard-label set (0/1 only)")
        out.append(x)
    return out


def prepare_instances(rows: Iterable[dict], tokenizer, fmt: StepFormat, max_length: int | None,
                      label_type: str) -> tuple[list[dict], dict]:
    """Trainset rows -> token ids + step positions + aligned targets, and counts of what truncation cost.

    Truncation keeps whole steps (build_prm_input); labels of dropped steps are counted in
    `steps_dropped`, instances with no step left in `instances_skipped` (never silent)."""
    if label_type not in LABEL_TYPES:
        raise TrainingError(f"label_type {label_type!r} is not one of {LABEL_TYPES}")
    out, stats = [], {"instances": 0, "instances_used": 0, "instances_truncated": 0, "instances_skipped": 0,
                      "steps": 0, "steps_used": 0, "steps_dropped": 0, "positive_steps": 0.0}
    for row in rows:
        iid = str(row["instance_id"])
        steps = list(row["steps"]) if row["steps"] is not None else None
        labels = validate_labels(iid, steps, row["labels"], label_type)
        stats["instances"] += 1
        stats["steps"] += len(steps)
        if not steps:
            stats["instances_skipped"] += 1
            continue
        enc = build_prm_input(tokenizer, str(row["question"]), steps, fmt, max_length)
        kept = enc.n_steps_kept
        stats["steps_dropped"] += len(steps) - kept
        if kept < len(steps):
            stats["instances_truncated"] += 1
        if kept == 0:
            stats["instances_skipped"] += 1
            continue
        stats["instances_used"] += 1
        stats["steps_used"] += kept
        stats["positive_steps"] += sum(labels[:kept])
        out.append({"instance_id": iid, "input_ids": enc.input_ids, "step_pos": enc.step_positions[:kept],
                    "step_targets": labels[:kept]})
    if stats["steps_dropped"]:
        log.warning("truncation at max_length=%s dropped %d labelled step(s) in %d instance(s); %d instance(s) "
                    "had no step left and were skipped", max_length, stats["steps_dropped"],
                    stats["instances_truncated"], stats["instances_skipped"])
    return out, stats


@dataclass
class StepCollator:
    """Right-pads token ids; flattens step positions to (batch index, token index) pairs + targets."""

    pad_token_id: int

    def __call__(self, items: list[dict]) -> dict[str, torch.Tensor]:
        if "step_features" in items[0]:  # head mode
            return {"step_features": torch.cat([it["step_features"] for it in items]),
                    "step_targets": torch.tensor([t for it in items for t in it["step_targets"]], dtype=torch.float32),
                    "n_tokens": torch.tensor(sum(it["n_tokens"] for it in items))}
        width = max(len(it["input_ids"]) for it in items)
        ids = torch.full((len(items), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(items), width), dtype=torch.long)
        sb, sp, st = [], [], []
        for b, it in enumerate(items):
            n = len(it["input_ids"])
            ids[b, :n] = torch.tensor(it["input_ids"], dtype=torch.long)
            mask[b, :n] = 1
            sb += [b] * len(it["step_pos"])
            sp += list(it["step_pos"])
            st += list(it["step_targets"])
        return {"input_ids": ids, "attention_mask": mask, "step_batch": torch.tensor(sb, dtype=torch.long),
                "step_pos": torch.tensor(sp, dtype=torch.long),
                "step_targets": torch.tensor(st, dtype=torch.float32), "n_tokens": mask.sum()}


@torch.no_grad()
def step_features(backbone: nn.Module, instances: list[dict], pad_token_id: int, batch_size: int,
                  device: torch.device) -> list[dict]:
    """`head` mode: one forward of the frozen base per instance; keep the hidden states at the step tokens."""
    backbone.eval()
    collate = StepCollator(pad_token_id)
    order = sorted(range(len(instances)), key=lambda i: len(instances[i]["input_ids"]))  # little padding
    feats: list[dict | None] = [None] * len(instances)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = collate([instances[i] for i in idx])
        hidden = backbone(input_ids=batch["input_ids"].to(device),
                          attention_mask=batch["attention_mask"].to(device)).last_hidden_state
        sel = hidden[batch["step_batch"].to(device), batch["step_pos"].to(device)].float().cpu()
        offset = 0
        for i in idx:
            k = len(instances[i]["step_pos"])
            feats[i] = {"step_features": sel[offset:offset + k], "step_targets": instances[i]["step_targets"],
                        "n_tokens": len(instances[i]["input_ids"]), "input_ids": instances[i]["input_ids"]}
            offset += k
    return feats  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------- trainer


def _trainer_class():
    from transformers import Trainer

    class PrmTrainer(Trainer):
        """Trainer + a count of the non-padding tokens it trained on (for tokens/s in train_metrics.json)."""

        train_tokens = 0

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            n_tokens = inputs.pop("n_tokens", None)
            if n_tokens is not None and model.training:
                self.train_tokens += int(n_tokens)
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)

    return PrmTrainer


def hardware() -> dict:
    info = {"device": "cuda" if torch.cuda.is_available() else "cpu", "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "torch": torch.__version__, "python": platform.python_version(),
            "host": platform.node(), "world_size": int(os.environ.get("WORLD_SIZE", "1"))}
    try:
        import transformers

        info["transformers"] = transformers.__version__
    except ImportError:  # pragma: no cover
        pass
    if torch.cuda.is_available():
        info["n_gpus"] = torch.cuda.device_count()
        info["gpu_names"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    else:
        info["n_gpus"] = 0
    if "SLURM_JOB_ID" in os.environ:
        info["slurm_job_id"] = os.environ["SLURM_JOB_ID"]
    return info


def _use_bf16(settings: dict) -> bool:
    p = settings["precision"]
    if p == "fp32":
        return False
    on_gpu = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if p == "bf16":
        if not on_gpu:
            log.warning("training.precision=bf16 asked for but no bf16-capable GPU: training in fp32")
        return on_gpu
    return on_gpu  # auto: bf16 autocast on GPU, fp32 on CPU (CPU bf16 backward is slower than fp32 here)


def _fingerprint(settings: dict, label_type: str, base_dir: str, trainset: str) -> str:
    h = hashlib.sha256()
    keep = {k: v for k, v in settings.items() if k not in ("mem_mb", "runtime", "threads", "keep_checkpoints",
                                                            "gpus", "processes", "gpus_scoring", "jit_checkpoint", "save_steps",
                                                            "save_total_limit", "logging_steps")}
    h.update(json.dumps({"settings": keep, "label_type": label_type, "base": str(base_dir)},
                        sort_keys=True, default=str).encode())
    with open(trainset, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


JIT_SENTINEL = "checkpoint-is-incomplete.txt"  # written by transformers' JIT checkpoint while it saves


def _complete(ckpt: Path) -> bool:
    """A checkpoint whose save finished: the Trainer writes trainer_state.json after weights and optimizer;
    a job killed mid-save (SIGKILL after SLURM's KillWait) leaves it out or leaves the JIT sentinel."""
    return (ckpt / "trainer_state.json").exists() and not (ckpt / JIT_SENTINEL).exists()


def _checkpoints(ckpt_dir: Path) -> list[Path]:
    """checkpoint-N subdirectories, by step."""
    found = [p for p in ckpt_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def _same_fingerprint(ckpt_dir: Path, fingerprint: str) -> bool:
    fp_file = ckpt_dir / FINGERPRINT_FILE
    return fp_file.exists() and json.loads(fp_file.read_text()).get("fingerprint") == fingerprint


def find_checkpoint(ckpt_dir: Path, fingerprint: str) -> str | None:
    """Read only: the last complete checkpoint made with these settings and data, else None."""
    if not ckpt_dir.exists() or not _same_fingerprint(ckpt_dir, fingerprint):
        return None
    done = [p for p in _checkpoints(ckpt_dir) if _complete(p)]
    return str(done[-1]) if done else None


def prepare_checkpoint_dir(ckpt_dir: Path, fingerprint: str) -> str | None:
    """Return the last complete checkpoint to resume from when `ckpt_dir` holds one made with the same
    settings and data (incomplete ones are removed: a resumed run rewrites them); otherwise empty the
    directory (a stale checkpoint from other settings must never be resumed). Rank 0 only."""
    if ckpt_dir.exists():
        last = find_checkpoint(ckpt_dir, fingerprint)
        if last:
            for p in _checkpoints(ckpt_dir):
                if not _complete(p):
                    shutil.rmtree(p)
            return last
        shutil.rmtree(ckpt_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    (ckpt_dir / FINGERPRINT_FILE).write_text(json.dumps({"fingerprint": fingerprint}))
    return None


def head_base_dtype(settings: dict) -> torch.dtype:
    """dtype of the frozen base in head mode (training and `features.frozen_base` agree on it). Frozen or
    adapter-wrapped bases can be held in bf16 on GPU (full fine-tuning keeps fp32 master weights under
    bf16 autocast); on CPU the frozen base runs in bf16 (forward only: ~3x fp32 here)."""
    if torch.cuda.is_available():
        return torch.bfloat16 if _use_bf16(settings) else torch.float32
    return torch.bfloat16


def _load_base(base_dir: str, dtype: torch.dtype):
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    backbone = AutoModel.from_pretrained(base_dir, dtype=dtype)
    return backbone, tokenizer


def _read_trainset(path: str):
    from .tables import read_table

    return read_table(path, "trainset")


def train_prm(trainset: str, base_dir: str, out_dir: str, settings: dict, label_type: str = "hard",
              checkpoint_dir: str | None = None, threads: int | None = None, callbacks: list | None = None) -> dict:
    """Train one PRM on a trainset table; write the model directory + train_metrics.json; return the metrics.

    `checkpoint_dir` (default: a hidden sibling of out_dir) keeps Trainer checkpoints; a rerun with the same
    settings and data resumes from the last one. `callbacks` are extra transformers TrainerCallbacks."""
    from transformers import TrainingArguments, set_seed

    settings = settings_from(settings)
    if label_type not in LABEL_TYPES:
        raise TrainingError(f"label_type {label_type!r} is not one of {LABEL_TYPES}")
    if threads:
        torch.set_num_threads(max(1, int(threads)))
    t0 = time.time()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = Path(checkpoint_dir) if checkpoint_dir else out.parent / f".{out.name}.checkpoints"
    mode = settings["mode"]
    fmt = step_format(settings)
    bf16 = _use_bf16(settings)
    on_gpu = torch.cuda.is_available()
    set_seed(int(settings["seed"]))

    args = TrainingArguments(
        output_dir=str(ckpt),
        per_device_train_batch_size=int(settings["batch_size"]),
        gradient_accumulation_steps=int(settings["gradient_accumulation_steps"]),
        num_train_epochs=float(settings["epochs"]),
        max_steps=int(settings["max_steps"]),
        learning_rate=float(settings["learning_rate"]),
        weight_decay=float(settings["weight_decay"]),
        warmup_steps=float(settings["warmup_ratio"]),
        lr_scheduler_type=settings["lr_scheduler"],
        max_grad_norm=float(settings["max_grad_norm"]),
        bf16=bf16,
        use_cpu=not on_gpu,
        # gradient checkpointing is switched on on the base model below (the wrapper is no PreTrainedModel)
        gradient_checkpointing=False,
        train_sampling_strategy="group_by_length" if settings["group_by_length"] and mode != "head" else "random",
        logging_strategy="steps",
        logging_steps=int(settings["logging_steps"]),
        save_strategy="steps" if save_steps(settings) else "no",
        save_steps=save_steps(settings) or 1,
        save_total_limit=int(settings["save_total_limit"]),
        enable_jit_checkpoint=bool(settings["jit_checkpoint"]) and bool(save_steps(settings)),
        seed=int(settings["seed"]),
        data_seed=int(settings["seed"]),
        remove_unused_columns=False,
        dataloader_num_workers=0,
        report_to="none",
        disable_tqdm=True,
        ddp_find_unused_parameters=False,
        # set before the model is loaded so ZeRO-3 partitions it at load time (transformers' zero.Init hook)
        deepspeed=settings["deepspeed"] if (settings["deepspeed"] and on_gpu) else None,
    )

    # only rank 0 checks/clears the checkpoint dir; the others wait for it, then only read (no concurrent
    # rmtree on a shared filesystem) and find the same last checkpoint
    fp = _fingerprint(settings, label_type, base_dir, trainset)
    with args.main_process_first(local=False, desc="checkpoint directory"):
        resume = prepare_checkpoint_dir(ckpt, fp) if args.process_index == 0 else find_checkpoint(ckpt, fp)

    dtype = head_base_dtype(settings) if mode == "head" else (
        torch.bfloat16 if (mode == "lora" and on_gpu and bf16) else torch.float32)
    backbone, tokenizer = _load_base(base_dir, dtype)
    added = ensure_step_token(tokenizer, backbone, fmt.step_token)
    hidden = int(backbone.config.hidden_size)
    fingerprint = None
    if mode == "head":
        from .features import base_fingerprint

        fingerprint = base_fingerprint(backbone, tokenizer, fmt.step_token)

    df = _read_trainset(trainset)
    instances, data_stats = prepare_instances(df.to_dict("records"), tokenizer, fmt, settings["max_length"], label_type)
    if not instances:
        raise TrainingError(f"{trainset}: no trainable instance ({data_stats['instances']} rows, "
                            f"{data_stats['instances_skipped']} without any step within max_length)")
    log.info("trainset %s: %s", trainset, data_stats)

    set_seed(int(settings["seed"]))
    head = StepHead(hidden)
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if on_gpu else torch.device("cpu")
    feature_seconds = 0.0
    if mode == "head":
        for p in backbone.parameters():
            p.requires_grad_(False)
        tf = time.time()
        backbone.to(device)
        dataset = step_features(backbone, instances, pad_id(tokenizer), int(settings["batch_size"]), device)
        feature_seconds = time.time() - tf
        backbone.to("cpu")
        model: nn.Module = HeadOnlyModel(head, label_type, settings["soft_loss"])
        feature_tokens = sum(len(it["input_ids"]) for it in instances)
    else:
        if mode == "lora":
            from peft import LoraConfig, get_peft_model

            lc = settings["lora"]
            backbone = get_peft_model(backbone, LoraConfig(r=int(lc["r"]), lora_alpha=int(lc["alpha"]),
                                                           lora_dropout=float(lc["dropout"]),
                                                           target_modules=lc["target_modules"]))
        if settings["gradient_checkpointing"]:
            backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            backbone.config.use_cache = False
        model = ProcessRewardModel(backbone, head, label_type, settings["soft_loss"])
        dataset = instances
        feature_tokens = 0

    trainer = _trainer_class()(model=model, args=args, train_dataset=dataset,
                               data_collator=StepCollator(pad_id(tokenizer)), callbacks=callbacks)
    if resume:
        log.info("resuming from %s", resume)
    tt = time.time()
    result = trainer.train(resume_from_checkpoint=resume)
    train_seconds = time.time() - tt
    if trainer.state.global_step < trainer.state.max_steps:  # the JIT checkpoint callback stopped it
        raise TrainingInterrupted(f"training stopped at step {trainer.state.global_step} of "
                                  f"{trainer.state.max_steps} (SIGTERM); checkpoint in {ckpt}, a rerun resumes")
    # collectives, on every rank: tokens of all processes; the weights (under ZeRO-3 gathered from all
    # ranks: the full dict on rank 0, None elsewhere)
    train_tokens = int(trainer.accelerator.reduce(torch.tensor(trainer.train_tokens, device=args.device),
                                                  reduction="sum").item())
    full_sd = trainer.accelerator.get_state_dict(trainer.model_wrapped)
    rank0 = trainer.is_world_process_zero()

    history = [(h["step"], float(h["loss"])) for h in trainer.state.log_history if "loss" in h]
    metrics = {
        "mode": mode, "label_type": label_type, "soft_loss": settings["soft_loss"] if label_type == "soft" else None,
        "base": str(base_dir), "trainset": str(trainset), "step_token": fmt.step_token, "step_token_added": added,
        "loss_history": [l for _, l in history], "loss_history_steps": [s for s, _ in history],
        "final_train_loss": float(result.training_loss) if result.training_loss is not None else None,
        "global_steps": int(trainer.state.global_step), "epochs": float(trainer.state.epoch or 0.0),
        "resumed_from": resume, "world_size": int(args.world_size),
        "saved_by_rank": int(args.process_index) if rank0 else None,
        # non-padding tokens of the instances in all optimizer steps of all processes (x epochs); in head
        # mode each instance went through the frozen base once (feature_tokens, feature_seconds)
        "train_tokens": train_tokens, "feature_tokens": int(feature_tokens),
        "train_seconds": train_seconds, "feature_seconds": feature_seconds,
        "data": data_stats, "precision": "bf16" if bf16 else ("bf16-frozen-base" if dtype == torch.bfloat16 else "fp32"),
        "hardware": hardware(), "settings": settings,
    }
    if not rank0:
        return metrics
    if full_sd is None:  # pragma: no cover - accelerate/DeepSpeed contract
        raise RuntimeError("rank 0 got no gathered state dict to save")
    head_sd = {k[len("head."):]: v.detach().float().cpu().contiguous() for k, v in full_sd.items()
               if k.startswith("head.")}
    backbone_sd = {k[len("backbone."):]: v for k, v in full_sd.items() if k.startswith("backbone.")}
    state_dict = None
    if mode == "head":
        save_backbone = backbone
    elif mode == "lora":
        # merged into a fresh copy of the base: under ZeRO-3 the trained model's own parameters are shards
        save_backbone = _merged_lora_backbone(backbone_sd, base_dir, dtype, fmt.step_token, settings["lora"])
    else:
        save_backbone = trainer.accelerator.unwrap_model(trainer.model).backbone
        state_dict = backbone_sd
    meta = {"max_length": settings["max_length"], "label_type": label_type, "soft_loss": settings["soft_loss"],
            "mode": mode, "base": str(base_dir), "base_fingerprint": fingerprint}
    save_prm(out, save_backbone, tokenizer, head_sd, fmt, meta, state_dict=state_dict,
             dtype=torch.float32 if settings["precision"] == "fp32" else torch.bfloat16)
    wall = time.time() - t0
    metrics["wall_seconds"] = wall
    busy = train_seconds + feature_seconds
    metrics["tokens_per_second"] = metrics["train_tokens"] / busy if busy > 0 else None
    (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2, default=str))
    if not settings["keep_checkpoints"]:
        shutil.rmtree(ckpt, ignore_errors=True)
    return metrics


def _merged_lora_backbone(peft_state: dict, base_dir: str, dtype: torch.dtype, step_token: str, lora: dict):
    """The base with the trained LoRA adapters (a PeftModel state dict) merged in, built on CPU."""
    from peft import LoraConfig, get_peft_model

    base, tokenizer = _load_base(base_dir, dtype)
    ensure_step_token(tokenizer, base, step_token)  # same vocabulary size as the trained model
    peft_model = get_peft_model(base, LoraConfig(r=int(lora["r"]), lora_alpha=int(lora["alpha"]),
                                                 lora_dropout=float(lora["dropout"]),
                                                 target_modules=lora["target_modules"]))
    peft_model.load_state_dict(peft_state, strict=True)
    return peft_model.merge_and_unload()


def save_prm(out: str | Path, backbone: nn.Module, tokenizer, head_state: dict, fmt: StepFormat, meta: dict,
             state_dict: dict | None = None, dtype: torch.dtype = torch.bfloat16) -> None:
    """Write a PRM directory: base model (safetensors, `dtype`), tokenizer, head, prm.json."""
    from safetensors.torch import save_file

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if state_dict is not None:
        state_dict = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state_dict.items()}
        backbone.save_pretrained(out, state_dict=state_dict)
    else:
        backbone.to(dtype).save_pretrained(out)
    tokenizer.save_pretrained(out)
    save_file(head_state, str(out / HEAD_FILE))
    hidden = int(head_state["net.0.weight"].shape[1])
    (out / FORMAT_FILE).write_text(json.dumps({
        "format": fmt.to_dict(), **meta,
        "head": {"type": "linear-relu-linear", "hidden_size": hidden, "num_labels": 2, "positive_index": 1},
        "step_token_id": tokenizer.convert_tokens_to_ids(fmt.step_token),
    }, indent=2))


# ------------------------------------------------------------------------------------- load and score


def load_prm(path: str | Path, device: str | torch.device | None = None, dtype: torch.dtype | str | None = None):
    """Load a PRM directory written by `train_prm` -> (ProcessRewardModel in eval mode, tokenizer, StepFormat).

    Without `device`, a base is spread over all visible GPUs when there is more than one (device_map auto,
    so a large PRM gets the GPUs its size needs), else put on the one GPU or the CPU. The model carries
    `max_length` (from prm.json) for `score_steps`."""
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    path = Path(path)
    if not (path / FORMAT_FILE).exists():
        raise FileNotFoundError(f"{path}: not a PRM directory (no {FORMAT_FILE})")
    meta = json.loads((path / FORMAT_FILE).read_text())
    fmt = StepFormat.from_dict(meta["format"])
    spread = device is None and torch.cuda.is_available() and torch.cuda.device_count() > 1
    device = torch.device(device) if device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(dtype, str):
        dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
                 "auto": None}[dtype]
    if dtype is None:
        dtype = torch.bfloat16 if device.type == "cuda" or meta.get("mode") == "head" else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(path)
    backbone = AutoModel.from_pretrained(path, dtype=dtype, **({"device_map": "auto"} if spread else {}))
    head = StepHead(int(meta["head"]["hidden_size"]))
    head.load_state_dict(load_file(str(path / HEAD_FILE)))
    model = ProcessRewardModel(backbone, head, meta.get("label_type", "hard"), meta.get("soft_loss", "bce"))
    model.max_length = meta.get("max_length")
    if spread:  # inputs go to the first parameter's device (the embeddings); the head follows the output
        head.to(next(backbone.parameters()).device)
    else:
        model.to(device)
    model.eval()
    return model, tokenizer, fmt


@torch.no_grad()
def score_steps(model: ProcessRewardModel, tokenizer, fmt: StepFormat, batch: Sequence[tuple[str, Sequence[str]]],
                max_length: int | None = None, batch_size: int = 8) -> list[list[float]]:
    """P(good step) for every step of every (question, steps) pair: one forward pass per response.

    Returns one list per response, as long as its steps; steps cut off by max_length (default: the
    PRM's training max_length) get NaN, so the caller sees and counts them."""
    max_length = max_length if max_length is not None else getattr(model, "max_length", None)
    device = next(model.parameters()).device
    encs = [build_prm_input(tokenizer, q, list(steps), fmt, max_length) for q, steps in batch]
    results: list[list[float]] = [[float("nan")] * e.n_steps for e in encs]
    collate = StepCollator(pad_id(tokenizer))
    order = sorted((i for i, e in enumerate(encs) if e.n_steps_kept > 0), key=lambda i: len(encs[i].input_ids))
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


# ------------------------------------------------------------------------------------ rule and launch


def free_port(host: str = "") -> int:
    """A TCP port free for the rendezvous of one job: two trainings on one node must not share 29500.
    Under SLURM a port derived from the job id is tried first (distinct jobs rarely race for it), else
    the OS picks one."""
    job = os.environ.get("SLURM_JOB_ID", "")
    candidates = [20000 + int(job) % 20000] if job.isdigit() else []
    for port in candidates + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise OSError("no free port")  # pragma: no cover - port 0 always binds


def distributed_command(spec_path: str | Path, n_procs: int, port: int) -> list[str]:
    """`torchrun` of this module with `n_procs` processes on this node, one per GPU or (CPU) gloo ranks:
    the same launcher either way; the Trainer picks the backend (nccl on GPU, gloo on CPU)."""
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(n_procs),
            "--master_addr", "127.0.0.1", "--master_port", str(port),
            "-m", "prm_lessons.training", "--spec", str(spec_path)]


def launcher_env(cpu: bool, base: dict | None = None) -> dict:
    """Environment of the launched processes: they import this checkout's package (inside conda envs it
    is not installed and Snakemake does not pass PYTHONPATH); CPU runs hide any GPU."""
    from . import checkout_env

    env = checkout_env(base)
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _spec(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir, threads) -> dict:
    return {"trainset": str(trainset), "base_dir": str(base_dir), "out_dir": str(out_dir), "settings": settings,
            "label_type": label_type, "checkpoint_dir": str(checkpoint_dir) if checkpoint_dir else None,
            "threads": threads}


def run_training(trainset, base_dir, out_dir, settings, label_type="hard", checkpoint_dir=None, threads=None) -> dict:
    """Train in this process, or in `gpus` (GPU) / `processes` (CPU) processes launched by `torchrun`.

    A job that asks for GPUs and finds fewer stops (hardware.require_gpus): no CPU fallback."""
    from .hardware import require_gpus

    settings = settings_from(settings)
    want = int(settings["gpus"])
    if "LOCAL_RANK" in os.environ:  # already a launched process
        return train_prm(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir, threads)
    require_gpus("train_prm", want)
    cpu = want == 0
    n = int(settings["processes"]) if cpu else want
    if n <= 1:
        return train_prm(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir, threads)
    ckpt = Path(checkpoint_dir) if checkpoint_dir else Path(out_dir).parent / f".{Path(out_dir).name}.checkpoints"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    spec_path = ckpt.parent / f"{ckpt.name}.spec.json"
    per_proc = max(1, int(threads) // n) if threads else threads  # the ranks share the job's cores
    spec_path.write_text(json.dumps(_spec(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir,
                                          per_proc)))
    cmd = distributed_command(spec_path, n, free_port())
    log.info("launching %d %s processes: %s", n, "CPU" if cpu else "GPU", " ".join(cmd))
    (Path(out_dir) / METRICS_FILE).unlink(missing_ok=True)
    subprocess.run(cmd, check=True, env=launcher_env(cpu))
    spec_path.unlink(missing_ok=True)
    return json.loads((Path(out_dir) / METRICS_FILE).read_text())


def rule_train_prm(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Snakemake rule train_prm: results/trainsets/{variant}.parquet -> results/prms/{variant}/."""
    out_dir = outputs["model"]
    metrics = run_training(inputs["trainset"], params["base_dir"], out_dir, params["training"],
                           label_type=params.get("label_type") or "hard",
                           checkpoint_dir=params.get("checkpoint_dir"), threads=threads)
    if Path(out_dir, METRICS_FILE) != Path(outputs["metrics"]):  # pragma: no cover - layout guard
        shutil.copy(Path(out_dir, METRICS_FILE), outputs["metrics"])
    hist = metrics["loss_history"]
    print(f"trained {wildcards.get('variant', '')}: mode={metrics['mode']} label_type={metrics['label_type']} "
          f"steps={metrics['global_steps']} loss {hist[0] if hist else float('nan'):.4f} -> "
          f"{hist[-1] if hist else float('nan'):.4f}; {metrics['train_tokens']} tokens in "
          f"{metrics['wall_seconds']:.1f}s; dropped steps (truncation): {metrics['data']['steps_dropped']}")


def main(argv: list[str] | None = None) -> int:
    """Entry for `torchrun -m prm_lessons.training --spec spec.json` (one process per rank)."""
    parser = argparse.ArgumentParser(prog="python -m prm_lessons.training")
    parser.add_argument("--spec", required=True, help="JSON written by run_training")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spec = json.loads(Path(args.spec).read_text())
    train_prm(**spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
