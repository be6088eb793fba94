"""Plan stage: training (settings, params, the JIT checkpoint's SIGTERM grace)."""
from __future__ import annotations

import math
from pathlib import Path

from ..config import model_entry

# training keys that change no result: kept out of params so editing them does not retrain every PRM
TRAINING_RESOURCE_KEYS = ("mem_mb", "runtime", "threads", "keep_checkpoints", "gpus_scoring", "base_params_b",
                          "checkpoint_write_gbps")


def base_trusts_remote_code(config: dict) -> bool:
    """Whether the training base's model entry sets trust_remote_code (an undefined base: no, the config
    checks name it)."""
    base = config.get("training", {}).get("base")
    name = config.get("roles", {}).get(base, base)
    return bool(base and (config.get("models", {}).get(name) or {}).get("trust_remote_code"))


def training_settings(config: dict, basedir: str | Path) -> dict:
    """The `training` section, with a DeepSpeed config path not found in the working directory read
    from the workflow (config/deepspeed/...), and `trust_remote_code: true` when the base's model entry
    sets it (the jobs that load the base read it there; absent when false, so the params of existing
    runs stay as they were)."""
    train = dict(config["training"])
    if base_trusts_remote_code(config):
        train["trust_remote_code"] = True
    if train.get("deepspeed") and not Path(train["deepspeed"]).exists():
        train["deepspeed"] = str(Path(basedir) / train["deepspeed"])
    return train


def training_base_model(config: dict) -> dict:
    """The training base's identity for the model card: its model entry's source, id and revision."""
    e = model_entry(config, config["training"]["base"])
    return {"name": e["name"], **{k: e.get(k) for k in ("source", "id", "revision")}}


def training_params(train: dict) -> dict:
    """The training settings a PRM depends on (rule params): resources and bookkeeping left out."""
    return {k: v for k, v in train.items() if k not in TRAINING_RESOURCE_KEYS}


# Bytes per base parameter in one checkpoint of a full fine-tune under ZeRO-3: the 16-bit weights rank 0
# gathers for the model file (2) and the partitions the ranks write (bf16 weights 2, fp32 master 4, Adam's
# two moments 4 + 4). A 7.6B base: ~122 GB. ZeRO-2 writes as much: the engine's bf16 weights once instead
# of in partitions.
CHECKPOINT_BYTES_PER_PARAM = 16
# ASSUMED training throughput per GPU for the longest optimizer step (bf16; ~10% of an H100's dense peak,
# low on purpose: too long a grace costs a few minutes at the time limit, too short loses the checkpoint)
STEP_TFLOPS_PER_GPU = 100
# transformers' CheckpointManager waits this long after SIGTERM before it asks for the checkpoint
JIT_KILL_WAIT_S = 3


def checkpoint_gb(train: dict) -> float:
    """GB of one training checkpoint (full fine-tuning, ZeRO-3 states) of a `base_params_b` base."""
    return float(train["base_params_b"]) * CHECKPOINT_BYTES_PER_PARAM


def checkpoints_per_training(train: dict) -> int | None:
    """Most periodic checkpoints one training writes: with `save_steps` a fraction f of the N optimizer
    steps, transformers saves every ceil(f N) steps and at the last one, ceil(N / ceil(f N)) <= ceil(1/f)
    whatever N; 0 for none; None for a whole number of steps (the count follows N, unknown before the
    trainset exists). A SIGTERM's JIT checkpoint comes on top, once per stop."""
    f = float(train["save_steps"])
    if f == 0:
        return 0
    # rounded first: 1/0.34 is 2.94..., 1/0.25 must stay 4, not become 5 on a float's last bit
    return math.ceil(round(1 / f, 9)) if f < 1 else None


def checkpoint_seconds(train: dict) -> float | None:
    """Seconds one training spends writing its periodic checkpoints (full fine-tuning under ZeRO-3):
    checkpoints_per_training x checkpoint_gb / checkpoint_write_gbps; None where either is unknown."""
    n = checkpoints_per_training(train)
    if n is None or train.get("base_params_b") is None:
        return None
    return n * checkpoint_gb(train) / float(train["checkpoint_write_gbps"])


def tokenized(config: dict) -> bool:
    """Whether train_prm reads its trainset tokenised by rule tokenize_trainset: in full and LoRA modes
    (the GPU job would otherwise tokenise on every rank); head mode's shared step features already
    cover it (rule step_features)."""
    return config["training"]["mode"] in ("full", "lora")


def training_tokens_input(config: dict, variant: str) -> list[str]:
    """train_prm's tokens file (rule tokenize_trainset): [] in head mode."""
    return [f"results/trainsets/tokens/{variant}.parquet"] if tokenized(config) else []


# the training keys the token ids of a tokens file depend on (with the base's tokenizer and label_type):
# rule tokenize_trainset's params, so editing e.g. learning_rate does not tokenise again
TOKEN_KEYS = ("step_token", "system_prompt", "use_chat_template", "max_length")


def token_params(config: dict) -> dict:
    """The training settings a tokens file depends on (TOKEN_KEYS)."""
    return {k: config["training"][k] for k in TOKEN_KEYS}


def jit_grace_seconds(train: dict) -> int:
    """Seconds the JIT checkpoint needs between SIGTERM and the kill. transformers (enable_jit_checkpoint):
    "grace period >= longest iteration time + checkpoint save time". The longest optimizer step is every
    sequence at max_length (forward + backward, + the recomputed forward with gradient checkpointing) at
    STEP_TFLOPS_PER_GPU; with `batch_tokens` every micro-batch full, or one instance at max_length where
    that is longer. The save is checkpoint_gb at `checkpoint_write_gbps`. × 1.5, in 30 s steps."""
    params = float(train["base_params_b"]) * 1e9
    n_gpus = max(1, int(train["gpus"]))
    per_micro_batch = (max(int(train["batch_tokens"]), int(train["max_length"])) if train.get("batch_tokens")
                       else int(train["batch_size"]) * int(train["max_length"]))
    tokens = per_micro_batch * int(train["gradient_accumulation_steps"]) * n_gpus
    flops = (8 if train["gradient_checkpointing"] else 6) * params * tokens
    step = flops / (n_gpus * STEP_TFLOPS_PER_GPU * 1e12)
    save = checkpoint_gb(train) / float(train["checkpoint_write_gbps"])
    return int(math.ceil((JIT_KILL_WAIT_S + step + save) * 1.5 / 30) * 30)


def training_slurm_extra(config: dict) -> str:
    """sbatch options of a training job: `--signal=TERM@<grace>`, so SLURM sends SIGTERM that long before
    the time limit and transformers' JIT checkpoint (training.jit_checkpoint) is written before the kill;
    the retry (more time) resumes from it. Only for GPU training with checkpoints: the CPU default and the
    rehearsal get none."""
    train = config["training"]
    if not (int(train["gpus"]) > 0 and train["jit_checkpoint"] and float(train["save_steps"]) > 0):
        return ""
    if train.get("base_params_b") is None:
        raise ValueError("training.base_params_b: set the base model's parameters (billions) to size the "
                         "SIGTERM grace of GPU training's JIT checkpoint (or set training.jit_checkpoint: false)")
    grace = jit_grace_seconds(train)
    limit = 60 * min(int(train["runtime"]), int(config["cluster"]["max_runtime"]))
    if 2 * grace > limit:
        raise ValueError(f"training.runtime: {limit // 60} min leaves no room for the JIT checkpoint's "
                         f"{grace} s grace (training.base_params_b, training.checkpoint_write_gbps)")
    return f"--signal=TERM@{grace}"
