"""The Trainer of a PRM run: the Trainer subclass (token-sized micro-batches, an on-device token count) and
callbacks, the DeepSpeed config of a run (ZeRO-2 or ZeRO-3 on GPU; on CPU only with
`training.deepspeed_on_cpu`) and its TrainingArguments."""
from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ..jobs.progress import Progress
from ..models.prm import use_bf16
from .batches import TokenBatchSampler, geometry
from .settings import TrainingError, save_steps

log = logging.getLogger(__name__)


def trainer_class():
    from transformers import Trainer  # lazy: Trainer pulls in accelerate; settings_from users need none of it

    class PrmTrainer(Trainer):
        """Trainer + a count of the non-padding tokens it trained on (for tokens/s in train_metrics.json),
        with `batch_tokens` token-sized micro-batches (batches.TokenBatchSampler) instead of
        `per_device_train_batch_size` sequences, and the seconds its checkpoint saves took (periodic and
        JIT: both go through _save_checkpoint; train_metrics.json `phase_seconds.checkpoint`)."""

        checkpoint_seconds = 0.0

        def __init__(self, *args, batch_tokens: int | None = None, **kwargs):
            super().__init__(*args, **kwargs)
            self.batch_tokens = batch_tokens
            self.batch_geometry: dict | None = None  # token batches: their shape (batches.geometry), epoch 0
            self._train_tokens = None  # a tensor on the batches' device, summed without a host sync

        def _save_checkpoint(self, model, trial):
            t = time.time()
            try:
                return super()._save_checkpoint(model, trial)
            finally:
                self.checkpoint_seconds += time.time() - t

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            n_tokens = inputs.pop("n_tokens", None)
            if n_tokens is not None and model.training:
                # added on the device: int(n_tokens) here would wait for the GPU at every micro-step
                n = n_tokens.detach()
                self._train_tokens = n if self._train_tokens is None else self._train_tokens + n
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)

        def train_tokens(self, device) -> torch.Tensor:
            """Non-padding tokens this process trained on, a tensor on `device` (read once, at the end)."""
            if self._train_tokens is None:
                return torch.zeros((), dtype=torch.long, device=device)
            return self._train_tokens.to(device=device, dtype=torch.long)

        def get_train_dataloader(self):
            if not self.batch_tokens:
                return super().get_train_dataloader()
            return self.accelerator.prepare(token_dataloader(self))

    return PrmTrainer


def token_dataloader(trainer):
    """The DataLoader of a run with `batch_tokens`: the instances (len(input_ids) is a length) in
    token-sized micro-batches (batches.TokenBatchSampler), the global list the same on every rank; the
    caller's accelerator.prepare shards it (BatchSamplerShard: whole batches, round-robin). The learning-rate
    schedule counts optimizer steps over these micro-batches (the Trainer takes len of this loader)."""
    args, dataset = trainer.args, trainer.train_dataset
    if not dataset or "input_ids" not in dataset[0]:
        raise TrainingError("training.batch_tokens: the instances carry no input_ids (head mode trains on step "
                            "features: set training.batch_tokens: null)")
    lengths = [len(it["input_ids"]) for it in dataset]
    world = trainer.accelerator.num_processes
    # every epoch the run plans has the same number of micro-batches (TokenBatchSampler)
    epochs = 1 if args.max_steps > 0 else math.ceil(args.num_train_epochs)
    sampler = TokenBatchSampler(lengths, trainer.batch_tokens, args.data_seed if args.data_seed is not None
                                else args.seed, world, epochs)
    g = trainer.batch_geometry = {"batch_tokens": trainer.batch_tokens, "padded_count": len(sampler),
                                  **geometry(lengths, sampler.plan(0), world, args.gradient_accumulation_steps)}
    log.info("token batches: %d tokens per micro-batch per process; epoch 0: %d micro-batches over %d "
             "process(es) (%d with padding to equal counts), median %s rows / %s padded tokens, %.0f%% of padded "
             "tokens real, %d optimizer steps", trainer.batch_tokens, g["micro_batches"], world, len(sampler),
             g.get("rows_p50"), g.get("padded_tokens_p50"), 100 * g.get("fill", 0.0), g.get("optimizer_steps", 0))
    collate = trainer._get_collator_with_removed_columns(trainer.data_collator, description="training")
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, num_workers=args.dataloader_num_workers,
                      pin_memory=args.dataloader_pin_memory)


def log_last_step_callback():
    from transformers import TrainerCallback  # lazy, as in trainer_class

    class LogLastStep(TrainerCallback):
        """Logs the loss at the last optimizer step too: with fewer steps than `logging_steps` the loss
        history would otherwise be empty (a short run, a small trainset)."""

        def on_step_end(self, args, state, control, **kwargs):
            if state.max_steps and state.global_step >= state.max_steps:
                control.should_log = True
            return control

    return LogLastStep()


def progress_callback(every_s: float | None = None):
    """A progress line a minute of training, on rank 0: optimizer steps done / max_steps, steps/s, ETA
    (transformers' own bar is off: disable_tqdm; its loss lines carry no total or ETA)."""
    from transformers import TrainerCallback  # lazy, as in trainer_class

    class LogProgress(TrainerCallback):
        progress: Progress | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            if state.is_world_process_zero:  # a resumed run counts from its checkpoint's step
                self.progress = Progress(log, "trained", int(state.max_steps), "steps", every_s, done=state.global_step)

        def on_step_end(self, args, state, control, **kwargs):
            if self.progress is not None:
                self.progress.advance(state.global_step - self.progress.done)

        def on_train_end(self, args, state, control, **kwargs):
            if self.progress is not None:
                self.progress.close()

    return LogProgress()


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


def deepspeed_stage(path: str) -> int:
    """The ZeRO stage of a DeepSpeed config file (0: none)."""
    return int(json.loads(Path(path).read_text()).get("zero_optimization", {}).get("stage", 0))


def _cpu_deepspeed_state() -> None:
    """DeepSpeed on CPU (training.deepspeed_on_cpu) under torchrun: accelerate finds no DeepSpeed backend on
    a CPU device (its PartialState would count 1 process whatever the world size, and the batch size
    filled into the DeepSpeed config would disagree with DeepSpeed's); set the state up with gloo first
    and let TrainingArguments use it (accelerator_config use_configured_state)."""
    from accelerate import PartialState  # lazy: as trainer_class

    os.environ["ACCELERATE_USE_DEEPSPEED"] = "true"  # as TrainingArguments does for its own PartialState
    try:
        PartialState(backend="gloo")
    finally:
        del os.environ["ACCELERATE_USE_DEEPSPEED"]


def training_arguments(settings: dict, ckpt: Path, on_gpu: bool, bf16: bool | None = None):
    """The TrainingArguments of a run (resolved `settings`, checkpoint directory; `bf16` default
    use_bf16(settings)). With a DeepSpeed config they register it globally (transformers'
    HfDeepSpeedConfig): build them before loading the base, so that ZeRO-3 partitions it at load time."""
    from transformers import TrainingArguments  # lazy: as trainer_class

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
        train_sampling_strategy=("group_by_length" if settings["group_by_length"] and settings["mode"] != "head"
                                 else "random"),  # unused with batch_tokens (PrmTrainer.get_train_dataloader)
        # its NaN/inf check of every micro-step's loss is a host sync per micro-step: a NaN loss is logged as is
        logging_nan_inf_filter=False,
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
        # training.report_to; transformers 5 has no logging_dir: TensorBoard writes under output_dir/runs/
        # (the checkpoint directory), which train_prm copies into the PRM directory (LOG_DIR)
        report_to=settings["report_to"],
        disable_tqdm=True,
        ddp_find_unused_parameters=False,
        # set before the model is loaded so ZeRO-3 partitions it at load time (transformers' zero.Init hook)
        deepspeed=ds,
    )



def zero3_init():
    """The context a module built after the base must be built in under ZeRO-3: transformers' own
    `deepspeed.zero.Init` with this run's DeepSpeed config (as it resizes embeddings), so the step head is
    partitioned in the base's dtype. Built outside it, the head stays float32 beside a bf16 base and
    DeepSpeed's stage-3 optimizer stops on the mix (AssertionError in zero.utils.defragment; seen on an
    H100, not on CPU, where both are float32). Without ZeRO-3 nothing."""
    from transformers.integrations import is_deepspeed_zero3_enabled  # lazy: as trainer_class

    if not is_deepspeed_zero3_enabled():
        return contextlib.nullcontext()
    import deepspeed  # lazy: only ZeRO-3 runs need it, and it is slow to import
    from transformers.integrations.deepspeed import deepspeed_config as hf_deepspeed_config  # lazy: as above

    return deepspeed.zero.Init(config_dict_or_path=hf_deepspeed_config())
