"""A head-only training run without a Trainer: the resample heads of `train.train_resample_heads`.

Why hand-written: a resample head (head mode, a 2-class StepHead on precomputed step features) trains in
under a second, and a transformers Trainer per head adds its set-up and per-step machinery (Accelerator,
callbacks, TrainerState, wrapped optimizer/scheduler/loader) to each: 1.10 vs 0.67 s per head measured side by
side (bench/resample_heads.py, docs/measurements.md; the slow-host run estimated ~1.8 s per head), paid R = 10
times in every head-mode PRM job. The PRM's own head keeps the Trainer (checkpoints, resume, logging, metrics).

What it reproduces (transformers 5.19 `Trainer._inner_training_loop` / `_run_epoch`, accelerate 1.15, read
in their source), for one process: the data order of accelerate's SeedableRandomSampler (a
torch.randperm seeded with data_seed + epoch, `set_epoch` per epoch) batched by the collator with
`dataloader_drop_last`; the optimizer of `Trainer.create_optimizer` (`get_optimizer_cls_and_kwargs`: the
args' AdamW and its kwargs; weight decay on `get_decay_parameter_names`, 0 on the rest: biases, norms);
the scheduler of `Trainer.create_scheduler` (`get_scheduler` with `args.get_warmup_steps`); max_steps
from epochs x ceil(micro-batches / gradient_accumulation_steps) unless args.max_steps > 0; each
micro-batch's loss divided by the number of micro-batches of its optimizer step (the model takes no
loss kwargs); `clip_grad_norm_` at max_grad_norm > 0; the optimizer step, then the scheduler's; bf16
autocast when args.bf16; training_loss = the summed step losses / optimizer steps. Checked against the
Trainer (tests/training/test_head_loop.py: same head weights, float32, atol 1e-5, hard and soft labels).
Several processes (DDP: a global batch over the ranks) are not reproduced: train_resample_heads keeps the
Trainer there.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.data import DataLoader


@dataclass
class HeadRun:
    """What a plain run reports: the optimizer steps taken and the Trainer's `training_loss`."""
    global_steps: int
    training_loss: float | None


def decay_parameter_names(model: nn.Module) -> list[str]:
    """The parameters the Trainer decays: its own rule (`Trainer.get_decay_parameter_names`, which reads
    nothing of the Trainer instance in transformers 5.19), so a change of the rule reaches both paths."""
    from transformers import Trainer  # lazy: as trainer.trainer_class

    return Trainer.get_decay_parameter_names(None, model)


def trainer_optimizer(model: nn.Module, args) -> torch.optim.Optimizer:
    """`Trainer.create_optimizer`'s optimizer: two groups (decayed at args.weight_decay, the rest at 0) of the
    trainable parameters, class and kwargs from `Trainer.get_optimizer_cls_and_kwargs(args)`."""
    from transformers import Trainer  # lazy: as above

    decay = set(decay_parameter_names(model))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if n in decay], "weight_decay": args.weight_decay},
              {"params": [p for n, p in named if n not in decay], "weight_decay": 0.0}]
    cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args, model)
    return cls(groups, **kwargs)


def plan_steps(micro_batches: int, args) -> tuple[int, int, int]:
    """(optimizer steps per epoch, max_steps, epochs) as `Trainer.set_initial_training_values` counts them."""
    ga = int(args.gradient_accumulation_steps)
    per_epoch = max(micro_batches // ga + int(micro_batches % ga > 0), 1)
    if args.max_steps > 0:
        max_steps = int(args.max_steps)
        return per_epoch, max_steps, max_steps // per_epoch + int(max_steps % per_epoch > 0)
    return per_epoch, math.ceil(args.num_train_epochs * per_epoch), math.ceil(args.num_train_epochs)


def train_head(model: nn.Module, dataset: list[dict], args, collator) -> HeadRun:
    """Train `model` (a HeadOnlyModel: step features in, {"loss"} out) on `dataset` as a one-process Trainer
    with TrainingArguments `args` and `collator` would (module docstring); the model is trained in place."""
    from accelerate.data_loader import SeedableRandomSampler  # lazy: as trainer.trainer_class
    from transformers import get_scheduler

    if int(args.world_size) != 1:
        raise ValueError(f"head_loop.train_head reproduces a one-process Trainer; world size {args.world_size}")
    device = args.device
    model.to(device)
    sampler = SeedableRandomSampler(dataset, data_seed=args.data_seed)
    loader = DataLoader(dataset, batch_size=int(args.per_device_train_batch_size), sampler=sampler,
                        collate_fn=collator, drop_last=bool(args.dataloader_drop_last))
    per_epoch, max_steps, epochs = plan_steps(len(loader), args)
    optimizer = trainer_optimizer(model, args)
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer=optimizer,
                              num_warmup_steps=args.get_warmup_steps(max_steps), num_training_steps=max_steps,
                              scheduler_specific_kwargs=args.lr_scheduler_kwargs)
    autocast = (torch.autocast(device_type=device.type, dtype=torch.bfloat16) if args.bf16
                else contextlib.nullcontext())
    ga = int(args.gradient_accumulation_steps)
    step, total_loss = 0, torch.zeros((), device=device)
    model.zero_grad()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        batches = list(loader)
        for start in range(0, per_epoch * ga, ga):
            group = batches[start:start + ga]  # the epoch's last step may hold fewer micro-batches
            if not group:
                break
            for inputs in group:
                inputs = {k: v.to(device) for k, v in inputs.items() if k != "n_tokens"}
                model.train()
                with autocast:
                    loss = model(**inputs)["loss"] / len(group)
                loss.backward()
                total_loss += loss.detach()
            if args.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(list(model.parameters()), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            model.zero_grad()
            step += 1
            if step >= max_steps:
                return HeadRun(step, float(total_loss) / step)
    return HeadRun(step, float(total_loss) / max(step, 1) if step else None)
