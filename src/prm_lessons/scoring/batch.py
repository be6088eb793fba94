"""Batched scoring: length-sorted batches, one forward pass each (or the whole batch to vLLM's pooling runner,
prm_lessons.scoring.pooling), and the per-response / per-prefix entry points.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Sequence

import torch

from ..jobs.progress import Progress
from . import pooling
from .adapters import Adapter
from .encode import Encoded

log = logging.getLogger(__name__)


@dataclass
class ScoreStats:
    responses: int = 0
    forward_passes: int = 0
    tokens: int = 0
    truncated: int = 0
    seconds: float = 0.0


def score_encoded(adapter: Adapter, encs: list[Encoded], batch_tokens: int = 16384, batch_size: int = 64,
                  stats: ScoreStats | None = None) -> list[list[float]]:
    """One forward pass per batch; batches of length-sorted inputs (longest first), padded to the
    batch's longest, at most batch_tokens padded tokens and batch_size rows."""
    stats = stats if stats is not None else ScoreStats()
    if isinstance(adapter.model, pooling.PoolingModel):  # backend vllm: vLLM batches and schedules
        return pooling.score_encoded(adapter, encs, stats)
    t0 = time.perf_counter()
    order = sorted(range(len(encs)), key=lambda i: -len(encs[i].input_ids))
    results: list[list[float] | None] = [None] * len(encs)
    dev, pad = adapter.device, adapter.pad_id()
    progress = Progress(log, "scored", len(encs), "inputs")  # a line a minute in a long scoring job
    k = 0
    with torch.inference_mode():
        while k < len(order):
            longest = max(1, len(encs[order[k]].input_ids))
            rows = max(1, min(batch_size, batch_tokens // longest))
            batch = order[k:k + rows]
            k += rows
            T = max(len(encs[i].input_ids) for i in batch)
            ids = torch.full((len(batch), T), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), T), dtype=torch.long)
            for r, i in enumerate(batch):  # right padding: positions of real tokens are unchanged
                L = len(encs[i].input_ids)
                ids[r, :L] = torch.tensor(encs[i].input_ids, dtype=torch.long)
                mask[r, :L] = 1
            values = adapter.forward(ids.to(dev), mask.to(dev)).float().cpu()
            stats.forward_passes += 1
            stats.tokens += int(mask.sum())
            for r, i in enumerate(batch):
                results[i] = adapter.readout(values[r], encs[i]) if encs[i].positions else []
            progress.advance(len(batch))
    progress.close()
    stats.responses += len(encs)
    stats.truncated += sum(1 for e in encs if e.n_kept < e.n_steps and not adapter.outcome)
    stats.seconds += time.perf_counter() - t0
    return results  # type: ignore[return-value]


def score_responses(adapter: Adapter, questions: Sequence[str], steps_list: Sequence[list[str]],
                    batch_tokens: int = 16384, batch_size: int = 64,
                    stats: ScoreStats | None = None) -> list[list[float]]:
    """Step scores of each response (an ORM: [one score]). A response without steps gets []."""
    encs = [adapter.encode(q, list(s)) if len(s) else Encoded([], [], 0) for q, s in zip(questions, steps_list)]
    keep = [i for i, e in enumerate(encs) if e.input_ids]
    scored = score_encoded(adapter, [encs[i] for i in keep], batch_tokens, batch_size, stats)
    out: list[list[float]] = [[] for _ in encs]
    for i, s in zip(keep, scored):
        out[i] = s
    return out


def score_prefixes(adapter: Adapter, questions: Sequence[str], steps_list: Sequence[list[str]],
                   batch_tokens: int = 16384, batch_size: int = 64,
                   stats: ScoreStats | None = None) -> list[list[float]]:
    """Outcome RMs on ProcessBench: each prefix steps[:k+1] is its own instance; returns per case the
    list of prefix scores (one per step)."""
    flat_q, flat_s, owner = [], [], []
    for c, (q, steps) in enumerate(zip(questions, steps_list)):
        for k in range(len(steps)):
            flat_q.append(q)
            flat_s.append(list(steps[:k + 1]))
            owner.append(c)
    scored = score_responses(adapter, flat_q, flat_s, batch_tokens, batch_size, stats)
    out: list[list[float]] = [[] for _ in steps_list]
    for c, s in zip(owner, scored):
        out[c].extend(s)
    return out


def score_naive_per_prefix(adapter: Adapter, question: str, steps: list[str]) -> list[float]:
    """The quadratic baseline (one forward per step prefix, reading the prefix's last step). Kept for
    the speed benchmark and as a test oracle that one-pass scoring equals it."""
    out = []
    for k in range(len(steps)):
        enc = adapter.encode(question, steps[:k + 1])
        out.append(score_encoded(adapter, [enc], batch_size=1)[0][-1])
    return out
