"""Token-sized micro-batches (`training.batch_tokens`): a length-grouped batch sampler whose micro-batches
hold up to a budget of padded tokens (rows x longest row), not a fixed number of sequences.

One epoch's plan, the same on every rank (no communication: the seed decides it):
  1. shuffle the instance indices with the run seed (+ the epoch, as transformers' samplers do);
  2. cut the shuffled order into megabatches of ~MEGABATCH_BATCHES x batch_tokens real tokens;
  3. sort each megabatch by length, longest first (an out-of-memory shows at its first batch);
  4. fill micro-batches in that order while rows x longest <= batch_tokens; an instance longer than the
     budget goes alone.
Every instance is in exactly one micro-batch of the plan. The plan's count is then padded, by repeating
its first micro-batches, to `TokenBatchSampler`'s fixed length: the most micro-batches any planned epoch
has, rounded up to a multiple of the world size, so that every rank gets the same number of micro-batches
in every epoch (the collectives line up) and the Trainer's step count (from len) holds. accelerate's
BatchSamplerShard then deals the global list round-robin to the ranks (batch i to rank i mod world size):
neighbouring micro-batches, of similar lengths, land in the same optimizer step on different ranks.

The unit is an instance of `data.prepare_instances` ({instance_id, input_ids, step_pos, step_targets}); its
length is len(input_ids).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Sequence

import torch
from torch.utils.data import Sampler

# megabatch size in micro-batches' worth of tokens: transformers' LengthGroupedSampler uses 50 batches
MEGABATCH_BATCHES = 50


def padded_tokens(lengths: Sequence[int], batch: Sequence[int]) -> int:
    """Tokens a right-padded micro-batch occupies (StepCollator pads to its longest row)."""
    return len(batch) * max(lengths[i] for i in batch) if batch else 0


def epoch_plan(lengths: Sequence[int], batch_tokens: int, seed: int) -> list[list[int]]:
    """The micro-batches (lists of instance indices) of one epoch, before padding (module docstring)."""
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
    order = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(int(seed))).tolist()
    batches: list[list[int]] = []
    mega: list[int] = []
    mega_tokens = 0
    for pos, i in enumerate(order):
        mega.append(i)
        mega_tokens += lengths[i]
        if mega_tokens >= MEGABATCH_BATCHES * batch_tokens or pos == len(order) - 1:
            # a stable sort: rows of equal length keep their shuffled order
            batches += _fill(sorted(mega, key=lambda j: -lengths[j]), lengths, batch_tokens)
            mega, mega_tokens = [], 0
    return batches


def _fill(desc: list[int], lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Longest-first indices -> micro-batches: the first row of a batch is its longest, so it takes
    budget // that length rows (at least one)."""
    out, start = [], 0
    while start < len(desc):
        rows = max(1, batch_tokens // lengths[desc[start]])
        out.append(desc[start:start + rows])
        start += rows
    return out


def padded_to(batches: list[list[int]], count: int) -> list[list[int]]:
    """`batches` followed by repeats of its first ones up to `count` (as DistributedSampler pads)."""
    if len(batches) > count:
        raise ValueError(f"{len(batches)} micro-batches do not fit a length of {count}")
    if not batches:
        return batches
    return batches + [batches[k % len(batches)] for k in range(count - len(batches))]


class TokenBatchSampler(Sampler[list[int]]):
    """Batch sampler of token-sized micro-batches for a DataLoader's `batch_sampler` (module docstring).

    `world_size`: the processes the loader is sharded over (accelerate's BatchSamplerShard does the
    sharding; this sampler yields the global list). `epochs`: how many epochs the run plans; its length
    is the most micro-batches of any of them, rounded up to a multiple of `world_size`, and every epoch
    is padded to it. An epoch beyond those (a max_steps run that outlasts them) with more micro-batches
    than the length is cut there: the Trainer stops at len micro-batches per epoch anyway."""

    batch_size = None  # variable-size batches: accelerate shards them whole, round-robin

    def __init__(self, lengths: Sequence[int], batch_tokens: int, seed: int, world_size: int = 1,
                 epochs: int = 1):
        self.lengths = [int(n) for n in lengths]
        self.batch_tokens = int(batch_tokens)
        self.seed = int(seed)
        self.world_size = max(1, int(world_size))
        self.epoch = 0
        most = max((len(self.plan(e)) for e in range(max(1, int(epochs)))), default=0)
        self._len = math.ceil(most / self.world_size) * self.world_size

    def plan(self, epoch: int) -> list[list[int]]:
        return epoch_plan(self.lengths, self.batch_tokens, self.seed + int(epoch))

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[list[int]]:
        batches = self.plan(self.epoch)[:self._len]
        return iter(padded_to(batches, self._len))


def sequence_batches(lengths: Sequence[int], batch_size: int, seed: int, group_by_length: bool,
                     grouped_over: int) -> list[list[int]]:
    """The micro-batches of `batch_size` sequences that the Trainer's own samplers make without
    batch_tokens (transformers' length-grouped indices over megabatches of `grouped_over` instances, else
    a random permutation), in one process: what `geometry` compares the token batches against."""
    g = torch.Generator().manual_seed(int(seed))
    if group_by_length:
        from transformers.trainer_pt_utils import get_length_grouped_indices  # lazy: as trainer.trainer_class

        order = get_length_grouped_indices(list(lengths), grouped_over, generator=g)
    else:
        order = torch.randperm(len(lengths), generator=g).tolist()
    return [order[k:k + batch_size] for k in range(0, len(order), batch_size)]


def planned_batches(lengths: Sequence[int], settings: dict, world_size: int = 1) -> list[list[int]]:
    """The global list of micro-batches of the first epoch a run with these (resolved) training settings
    makes: token-sized with batch_tokens, else sequence batches."""
    if settings.get("batch_tokens"):
        return list(TokenBatchSampler(lengths, settings["batch_tokens"], settings["seed"], world_size))
    bs = int(settings["batch_size"])
    return sequence_batches(lengths, bs, settings["seed"], bool(settings["group_by_length"]),
                            bs * int(settings["gradient_accumulation_steps"]))


def geometry(lengths: Sequence[int], batches: list[list[int]], world_size: int = 1,
             gradient_accumulation_steps: int = 1) -> dict:
    """Shape of a plan: micro-batches, their rows and padded tokens (median, p10, max), the share of padded
    tokens that are real, and the optimizer steps one epoch makes (micro-batches / GPUs / accumulation)."""
    if not batches:
        return {"micro_batches": 0}
    padded = sorted(padded_tokens(lengths, b) for b in batches)
    rows = [len(b) for b in batches]
    real = sum(lengths[i] for b in batches for i in b)
    per_rank = math.ceil(len(batches) / world_size)
    return {"micro_batches": len(batches), "rows_p50": statistics.median(rows),
            "padded_tokens_p50": statistics.median(padded), "padded_tokens_p10": padded[len(padded) // 10],
            "padded_tokens_max": padded[-1], "fill": real / sum(padded),
            "optimizer_steps": math.ceil(per_rank / gradient_accumulation_steps)}
