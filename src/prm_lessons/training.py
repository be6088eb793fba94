"""PRM training: the PRM of `prm_lessons.prm` (a base LM + 2-class step head), trained with the
transformers `Trainer`.

Loss: cross-entropy on hard 0/1 labels; soft labels in [0,1]: binary cross-entropy on P(good) (`bce`,
default) or MSE on P(good) (`mse`, the paper's preliminary soft runs). For 0/1 targets BCE on P(good) and
2-class CE are the same number, so a soft variant whose labels happen to be all 0/1 trains identically.

Modes (`training.mode`): `full` fine-tuning (paper), `lora` (peft adapters, merged at save time), `head`
(frozen base: its step features are computed once, then only the head trains; the embedded CPU default).

Output directory: the PRM directory of `prm.save_prm` (loaded with `prm.load_prm`; full fine-tuning of a
Qwen2 base in the released Qwen2.5-Math-PRM layout, everything else in the project layout), plus
  train_metrics.json               loss_history, train_tokens, tokens_per_second, wall_seconds, hardware …

Checkpoints go to a separate directory (Snakemake deletes a job's outputs before it runs, so checkpoints
inside the output directory would not survive a requeue). A rerun with the same settings and trainset
resumes from the last checkpoint there (SLURM requeue after preemption); different settings start over.
A job stopped by SIGTERM (JIT checkpoint) raises TrainingInterrupted instead of saving a half-trained PRM.
Several processes: with `gpus > 1` (one process per GPU) or, on CPU, `processes > 1` (gloo), the rule
function relaunches this module through `torchrun` on one node, on a free rendezvous port; DeepSpeed ZeRO-3
(config/deepspeed/zero3.json) is switched on by `training.deepspeed` (on CPU only with
`training.deepspeed_on_cpu`: DeepSpeed's CPU accelerator over gloo, always through torchrun). What fits:
full fine-tuning of a 7B base with ZeRO-3 on one node of 8x80 GB GPUs (~16 bytes of weights + Adam state
per parameter, ~15 GB per GPU). A 72B base (~1.2 TB of such state, ~145 GB per GPU on 8 GPUs) does not fit in one node: it
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
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import torch
import yaml
from torch import nn

from . import checkout_env
from .hardware import require_gpus
from .prm import (
    HeadOnlyModel,
    ProcessRewardModel,
    StepCollator,
    StepHead,
    base_fingerprint,
    ensure_step_token,
    head_base_dtype,
    load_base,
    pad_id,
    released_layout_possible,
    save_prm,
    step_features,
    step_format,
    use_bf16,
)
from .steps import StepFormat, build_prm_input
from .tables import read_table

log = logging.getLogger(__name__)

METRICS_FILE = "train_metrics.json"
FINGERPRINT_FILE = "fingerprint.json"


def _schema_defaults(properties: dict) -> dict:
    return {k: _schema_defaults(v["properties"]) if "properties" in v else v["default"]
            for k, v in properties.items()}


# The `training` defaults of the config schema, so library callers and tests can pass a partial dict (the
# workflow passes the validated block, defaults already filled in). The schema is read here, not through
# prm_lessons.config, which only the DAG build imports.
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
DEFAULTS: dict[str, Any] = _schema_defaults(
    yaml.safe_load(SCHEMA_PATH.read_text())["properties"]["training"]["properties"])
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


# ------------------------------------------------------------------------------------------------ data


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


# --------------------------------------------------------------------------------------------- trainer


def _trainer_class():
    from transformers import Trainer  # lazy: Trainer pulls in accelerate; settings_from users need none of it

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


def _log_last_step_callback():
    from transformers import TrainerCallback  # lazy, as in _trainer_class

    class LogLastStep(TrainerCallback):
        """Logs the loss at the last optimizer step too: with fewer steps than `logging_steps` the loss
        history would otherwise be empty (a short run, a small trainset)."""

        def on_step_end(self, args, state, control, **kwargs):
            if state.max_steps and state.global_step >= state.max_steps:
                control.should_log = True
            return control

    return LogLastStep()


def hardware() -> dict:
    info = {"device": "cuda" if torch.cuda.is_available() else "cpu", "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "torch": torch.__version__, "python": platform.python_version(),
            "host": platform.node(), "world_size": int(os.environ.get("WORLD_SIZE", "1"))}
    try:
        import transformers  # lazy: as _trainer_class

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


def deepspeed_config(settings: dict, on_gpu: bool) -> str | None:
    """The DeepSpeed config file of a run: `training.deepspeed` on GPU; on CPU only with
    `training.deepspeed_on_cpu` (DeepSpeed's CPU accelerator over gloo: the ZeRO-3 path rehearsed)."""
    if not settings["deepspeed"] or not (on_gpu or settings.get("deepspeed_on_cpu")):
        return None
    if settings["mode"] == "head":
        # ZeRO-3 would partition the frozen base at load time; head mode runs it outside the engine
        raise TrainingError("training.deepspeed: head mode trains only the step head on precomputed features "
                            "of the frozen base; set training.deepspeed: null (or mode full/lora)")
    return str(settings["deepspeed"])


def _cpu_deepspeed_state() -> None:
    """DeepSpeed on CPU (training.deepspeed_on_cpu) under torchrun: accelerate finds no DeepSpeed backend on
    a CPU device (its PartialState would count 1 process whatever the world size, and the batch size
    filled into the DeepSpeed config would disagree with DeepSpeed's); set the state up with gloo first
    and let TrainingArguments use it (accelerator_config use_configured_state)."""
    from accelerate import PartialState  # lazy: as _trainer_class

    os.environ["ACCELERATE_USE_DEEPSPEED"] = "true"  # as TrainingArguments does for its own PartialState
    try:
        PartialState(backend="gloo")
    finally:
        del os.environ["ACCELERATE_USE_DEEPSPEED"]


def training_arguments(settings: dict, ckpt: Path, on_gpu: bool, bf16: bool | None = None):
    """The TrainingArguments of a run (resolved `settings`, checkpoint directory; `bf16` default
    use_bf16(settings)). With a DeepSpeed config they register it globally (transformers'
    HfDeepSpeedConfig): build them before loading the base, so that ZeRO-3 partitions it at load time."""
    from transformers import TrainingArguments  # lazy: as _trainer_class

    ds = deepspeed_config(settings, on_gpu)
    extra = {}
    if ds and not on_gpu:
        if "LOCAL_RANK" not in os.environ:
            raise TrainingError("training.deepspeed_on_cpu: DeepSpeed runs under torchrun (run_training "
                                "launches it, also for one process), not in this process")
        _cpu_deepspeed_state()
        extra["accelerator_config"] = {"use_configured_state": True}
    return TrainingArguments(
        **extra,
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
        bf16=use_bf16(settings) if bf16 is None else bf16,
        use_cpu=not on_gpu and ds is None,
        # gradient checkpointing is switched on on the base model (trainable_model: the wrapper is no PreTrainedModel)
        gradient_checkpointing=False,
        train_sampling_strategy="group_by_length" if settings["group_by_length"] and settings["mode"] != "head" else "random",
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
        deepspeed=ds,
    )


def _fingerprint(settings: dict, label_type: str, base_dir: str, trainset: str) -> str:
    h = hashlib.sha256()
    keep = {k: v for k, v in settings.items() if k not in ("mem_mb", "runtime", "threads", "keep_checkpoints",
                                                            "gpus", "processes", "gpus_scoring", "jit_checkpoint", "save_steps",
                                                            "save_total_limit", "logging_steps", "base_params_b",
                                                            "checkpoint_write_gbps")}
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


def _read_trainset(path: str):
    return read_table(path, "trainset")


def trainable_model(backbone, head: StepHead, settings: dict, label_type: str) -> ProcessRewardModel:
    """`full` and `lora` modes: the model the Trainer gets (the base, with LoRA adapters in lora mode, and
    the step head), gradient checkpointing on the base when asked."""
    if settings["mode"] == "lora":
        from peft import LoraConfig, get_peft_model  # lazy: lora mode only

        lc = settings["lora"]
        backbone = get_peft_model(backbone, LoraConfig(r=int(lc["r"]), lora_alpha=int(lc["alpha"]),
                                                       lora_dropout=float(lc["dropout"]),
                                                       target_modules=lc["target_modules"]))
    if settings["gradient_checkpointing"]:
        backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        backbone.config.use_cache = False
    return ProcessRewardModel(backbone, head, label_type, settings["soft_loss"])


def base_dtype(settings: dict, on_gpu: bool, bf16: bool) -> torch.dtype:
    """The dtype the base is loaded in: head mode's frozen base as `prm.head_base_dtype`; LoRA's base in
    bf16 on a GPU run in bf16; else fp32."""
    if settings["mode"] == "head":
        return head_base_dtype(settings)
    return torch.bfloat16 if (settings["mode"] == "lora" and on_gpu and bf16) else torch.float32


def resume_checkpoint(args, ckpt: Path, fingerprint: str) -> str | None:
    """The checkpoint this run resumes from (None: from the start). Only rank 0 checks and clears the
    checkpoint dir; the others wait for it, then only read (no concurrent rmtree on a shared filesystem)
    and find the same last checkpoint."""
    with args.main_process_first(local=False, desc="checkpoint directory"):
        if args.process_index == 0:
            return prepare_checkpoint_dir(ckpt, fingerprint)
        return find_checkpoint(ckpt, fingerprint)


def training_instances(trainset: str, tokenizer, fmt: StepFormat, settings: dict, label_type: str):
    """(instances, data stats) of a trainset table; TrainingError when no instance is left to train on."""
    df = _read_trainset(trainset)
    instances, data_stats = prepare_instances(df.to_dict("records"), tokenizer, fmt, settings["max_length"], label_type)
    if not instances:
        raise TrainingError(f"{trainset}: no trainable instance ({data_stats['instances']} rows, "
                            f"{data_stats['instances_skipped']} without any step within max_length)")
    log.info("trainset %s: %s", trainset, data_stats)
    return instances, data_stats


@dataclass
class Trainee:
    """What the Trainer trains: the model, its dataset, the step head, and (head mode) the cost of the
    frozen base's one pass over the instances."""
    model: nn.Module
    dataset: list[dict]
    head: StepHead
    feature_tokens: int = 0
    feature_seconds: float = 0.0


def build_trainee(backbone, tokenizer, instances: list[dict], settings: dict, label_type: str,
                  on_gpu: bool) -> Trainee:
    """Head mode: the frozen base's step features computed once and the head alone trained on them (a fixed
    standardisation of the features in front of the paper's head); lora / full: base + head on the
    instances (trainable_model)."""
    mode = settings["mode"]
    head = StepHead(int(backbone.config.hidden_size),
                    standardize=mode == "head" and bool(settings["standardize_features"]))
    if mode != "head":
        return Trainee(trainable_model(backbone, head, settings, label_type), instances, head)
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if on_gpu else torch.device("cpu")
    for p in backbone.parameters():
        p.requires_grad_(False)
    tf = time.time()
    backbone.to(device)
    dataset = step_features(backbone, instances, pad_id(tokenizer), int(settings["batch_size"]), device)
    feature_seconds = time.time() - tf
    backbone.to("cpu")
    if head.standardize:
        head.fit_standardization(torch.cat([d["step_features"] for d in dataset]))
    return Trainee(HeadOnlyModel(head, label_type, settings["soft_loss"]), dataset, head,
                   sum(len(it["input_ids"]) for it in instances), feature_seconds)


def run_trainer(trainee: Trainee, args, tokenizer, resume: str | None, ckpt: Path, callbacks: list | None = None):
    """(trainer, train result, seconds) of the Trainer run, resumed from `resume` when given. A run stopped
    before its last step (the JIT checkpoint callback, on SIGTERM) raises TrainingInterrupted."""
    trainer = _trainer_class()(model=trainee.model, args=args, train_dataset=trainee.dataset,
                               data_collator=StepCollator(pad_id(tokenizer)),
                               callbacks=[_log_last_step_callback(), *(callbacks or [])])
    if resume:
        log.info("resuming from %s", resume)
    tt = time.time()
    result = trainer.train(resume_from_checkpoint=resume)
    seconds = time.time() - tt
    if trainer.state.global_step < trainer.state.max_steps:
        raise TrainingInterrupted(f"training stopped at step {trainer.state.global_step} of "
                                  f"{trainer.state.max_steps} (SIGTERM); checkpoint in {ckpt}, a rerun resumes")
    return trainer, result, seconds


def gather_trained(trainer, args) -> tuple[int, dict | None]:
    """Collectives, on every rank: (train tokens of all processes, the weights; under ZeRO-3 gathered from
    all ranks: the full dict on rank 0, None elsewhere)."""
    tokens = trainer.accelerator.reduce(torch.tensor(trainer.train_tokens, device=args.device), reduction="sum")
    return int(tokens.item()), trainer.accelerator.get_state_dict(trainer.model_wrapped)


def save_trained(out: Path, full_sd: dict | None, trainer, backbone, tokenizer, fmt: StepFormat, settings: dict,
                 meta: dict, dtype: torch.dtype) -> str:
    """Rank 0: the PRM directory from the gathered weights (`prm.save_prm`); returns its layout."""
    if full_sd is None:  # pragma: no cover - accelerate/DeepSpeed contract
        raise RuntimeError("rank 0 got no gathered state dict to save")
    head_sd = {k[len("head."):]: v.detach().to("cpu", torch.float32, copy=True).contiguous()
               for k, v in full_sd.items() if k.startswith("head.")}  # copies: as prm._save_released
    backbone_sd = {k[len("backbone."):]: v for k, v in full_sd.items() if k.startswith("backbone.")}
    state_dict = None
    if settings["mode"] == "head":
        save_backbone = backbone
    elif settings["mode"] == "lora":
        # merged into a fresh copy of the base: under ZeRO-3 the trained model's own parameters are shards
        save_backbone = _merged_lora_backbone(backbone_sd, meta["base"], dtype, fmt.step_token, settings["lora"])
    else:
        save_backbone = trainer.accelerator.unwrap_model(trainer.model).backbone
        state_dict = backbone_sd
    # a fully fine-tuned Qwen2 PRM is saved as Qwen2.5-Math-PRM is published (vLLM serves it); others keep
    # the project layout (prm.py docstring)
    released = settings["mode"] == "full" and released_layout_possible(save_backbone, head_sd)
    layout = "released" if released else "project"
    save_prm(out, save_backbone, tokenizer, head_sd, fmt, meta, state_dict=state_dict,
             dtype=torch.float32 if settings["precision"] == "fp32" else torch.bfloat16, layout=layout)
    return layout


def train_prm(trainset: str, base_dir: str, out_dir: str, settings: dict, label_type: str = "hard",
              checkpoint_dir: str | None = None, threads: int | None = None, callbacks: list | None = None) -> dict:
    """Train one PRM on a trainset table; write the model directory + train_metrics.json; return the metrics.

    `checkpoint_dir` (default: a hidden sibling of out_dir) keeps Trainer checkpoints; a rerun with the same
    settings and data resumes from the last one. `callbacks` are extra transformers TrainerCallbacks."""
    from transformers import set_seed  # lazy: as _trainer_class

    settings = settings_from(settings)
    if label_type not in LABEL_TYPES:
        raise TrainingError(f"label_type {label_type!r} is not one of {LABEL_TYPES}")
    if threads:
        torch.set_num_threads(max(1, int(threads)))
    t0 = time.time()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = Path(checkpoint_dir) if checkpoint_dir else out.parent / f".{out.name}.checkpoints"
    mode, fmt, bf16, on_gpu = settings["mode"], step_format(settings), use_bf16(settings), torch.cuda.is_available()
    set_seed(int(settings["seed"]))
    args = training_arguments(settings, ckpt, on_gpu, bf16)
    resume = resume_checkpoint(args, ckpt, _fingerprint(settings, label_type, base_dir, trainset))

    dtype = base_dtype(settings, on_gpu, bf16)
    backbone, tokenizer = load_base(base_dir, dtype)
    added = ensure_step_token(tokenizer, backbone, fmt.step_token)
    fingerprint = base_fingerprint(backbone, tokenizer, fmt.step_token) if mode == "head" else None
    instances, data_stats = training_instances(trainset, tokenizer, fmt, settings, label_type)
    set_seed(int(settings["seed"]))
    trainee = build_trainee(backbone, tokenizer, instances, settings, label_type, on_gpu)
    trainer, result, train_seconds = run_trainer(trainee, args, tokenizer, resume, ckpt, callbacks)
    train_tokens, full_sd = gather_trained(trainer, args)
    rank0 = trainer.is_world_process_zero()

    history = [(h["step"], float(h["loss"])) for h in trainer.state.log_history if "loss" in h]
    metrics = {
        "mode": mode, "label_type": label_type, "soft_loss": settings["soft_loss"] if label_type == "soft" else None,
        "base": str(base_dir), "trainset": str(trainset), "step_token": fmt.step_token, "step_token_added": added,
        "loss_history": [l for _, l in history], "loss_history_steps": [s for s, _ in history],
        "final_train_loss": float(result.training_loss) if result.training_loss is not None else None,
        "global_steps": int(trainer.state.global_step), "epochs": float(trainer.state.epoch or 0.0),
        "resumed_from": resume, "world_size": int(args.world_size),
        "deepspeed": str(args.deepspeed) if trainer.is_deepspeed_enabled else None,
        "saved_by_rank": int(args.process_index) if rank0 else None,
        # non-padding tokens of the instances in all optimizer steps of all processes (x epochs); in head
        # mode each instance went through the frozen base once (feature_tokens, feature_seconds)
        "train_tokens": train_tokens, "feature_tokens": int(trainee.feature_tokens),
        "train_seconds": train_seconds, "feature_seconds": trainee.feature_seconds,
        # head mode: accuracy of the trained head on its own training steps beside the majority-class
        # rate (a head that learnt nothing sits at the majority rate)
        "train_fit": step_fit(trainee.head, trainee.dataset) if mode == "head" else {},
        "data": data_stats, "precision": "bf16" if bf16 else ("bf16-frozen-base" if dtype == torch.bfloat16 else "fp32"),
        "hardware": hardware(), "settings": settings,
    }
    if not rank0:
        return metrics
    meta = {"max_length": settings["max_length"], "label_type": label_type, "soft_loss": settings["soft_loss"],
            "mode": mode, "base": str(base_dir), "base_fingerprint": fingerprint}
    metrics["layout"] = save_trained(out, full_sd, trainer, backbone, tokenizer, fmt, settings, meta, dtype)
    metrics["wall_seconds"] = time.time() - t0
    busy = train_seconds + trainee.feature_seconds
    metrics["tokens_per_second"] = train_tokens / busy if busy > 0 else None
    (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2, default=str))
    if not settings["keep_checkpoints"]:
        shutil.rmtree(ckpt, ignore_errors=True)
    return metrics


def step_fit(head: StepHead, dataset: list[dict]) -> dict:
    """Training-set fit of a head-only PRM: step accuracy (P(good) >= 0.5 against labels >= 0.5),
    the majority-class rate and the share of positive steps."""
    feats = torch.cat([d["step_features"] for d in dataset])
    target = torch.tensor([t for d in dataset for t in d["step_targets"]], dtype=torch.float32) >= 0.5
    with torch.no_grad():
        good = torch.softmax(head.eval()(feats).float(), dim=-1)[:, 1] >= 0.5
    pos = float(target.float().mean()) if len(target) else float("nan")
    return {"steps": int(len(target)), "step_accuracy": float((good == target).float().mean()) if len(target) else None,
            "majority_rate": max(pos, 1 - pos) if len(target) else None, "positive_rate": pos,
            "predicted_positive_rate": float(good.float().mean()) if len(target) else None}


def _merged_lora_backbone(peft_state: dict, base_dir: str, dtype: torch.dtype, step_token: str, lora: dict):
    """The base with the trained LoRA adapters (a PeftModel state dict) merged in, built on CPU."""
    from peft import LoraConfig, get_peft_model  # lazy: lora mode only

    base, tokenizer = load_base(base_dir, dtype)
    ensure_step_token(tokenizer, base, step_token)  # same vocabulary size as the trained model
    peft_model = get_peft_model(base, LoraConfig(r=int(lora["r"]), lora_alpha=int(lora["alpha"]),
                                                 lora_dropout=float(lora["dropout"]),
                                                 target_modules=lora["target_modules"]))
    peft_model.load_state_dict(peft_state, strict=True)
    return peft_model.merge_and_unload()


# ----------------------------------------------------------------------------------------------- launch


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


# torchrun SIGKILLs its workers 30 s after its own SIGTERM by default; a ZeRO-3 JIT checkpoint of a 7B
# model takes minutes (sbatch --signal=TERM@<grace>, plan.training_slurm_extra), so torchrun must wait
SHUTDOWN_TIMEOUT_S = 3600


def distributed_command(spec_path: str | Path, n_procs: int, port: int) -> list[str]:
    """`torchrun` of this module with `n_procs` processes on this node, one per GPU or (CPU) gloo ranks:
    the same launcher either way; the Trainer picks the backend (nccl on GPU, gloo on CPU)."""
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(n_procs),
            "--master_addr", "127.0.0.1", "--master_port", str(port),
            "--shutdown-timeout", str(SHUTDOWN_TIMEOUT_S),
            "-m", "prm_lessons.training", "--spec", str(spec_path)]


def run_launcher(cmd: list[str], env: dict) -> None:
    """Run torchrun and outlive a SIGTERM: SLURM's --signal=TERM@<grace> reaches every process of the job
    step; the ranks write their JIT checkpoint and exit, torchrun waits for them (SHUTDOWN_TIMEOUT_S), and
    this process must wait for torchrun instead of dying first (its exit would end the step and the save)."""
    proc = subprocess.Popen(cmd, env=env)

    def _wait_for_ranks(signum, frame):
        log.warning("SIGTERM: waiting for the training processes to write their checkpoint and exit")

    previous = signal.signal(signal.SIGTERM, _wait_for_ranks) if threading_main() else None
    try:
        rc = proc.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if rc != 0:
        raise subprocess.CalledProcessError(rc, cmd)


def threading_main() -> bool:
    """signal.signal works only in the main thread (a launcher called from a worker thread keeps the default)."""
    return threading.current_thread() is threading.main_thread()


def launcher_env(cpu: bool, base: dict | None = None) -> dict:
    """Environment of the launched processes: they import this checkout's package (inside conda envs it
    is not installed and Snakemake does not pass PYTHONPATH); CPU runs hide any GPU."""
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
    settings = settings_from(settings)
    want = int(settings["gpus"])
    if "LOCAL_RANK" in os.environ:  # already a launched process
        return train_prm(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir, threads)
    require_gpus("train_prm", want)
    cpu = want == 0
    n = int(settings["processes"]) if cpu else want
    # DeepSpeed on CPU needs the torchrun environment (rank, rendezvous) even for one process
    if n <= 1 and not (cpu and deepspeed_config(settings, on_gpu=False)):
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
    env = launcher_env(cpu)
    if cpu and deepspeed_config(settings, on_gpu=False):
        env.setdefault("DS_ACCELERATOR", "cpu")
    run_launcher(cmd, env)
    spec_path.unlink(missing_ok=True)
    return json.loads((Path(out_dir) / METRICS_FILE).read_text())


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
