"""Nucleus (top-p) sampling on vLLM's CPU backend without sorting the vocabulary at every step.

vLLM's CPU sampler (vllm.v1.sample.ops.topk_topp_sampler.apply_top_k_top_p_pytorch, vLLM 0.32) sorts every
row of the logits ([sequences, 49,152] for SmolLM2) at each decode step to apply top-p: measured on 2 AVX2
cores, 64 sequences at T 0.7, top_p 0.8 decode at 277 tokens/s against 523 without top-p
(bench/cpu_top_p.py). The nucleus of a row lies within its K most probable tokens whenever those hold at
least p of the mass, so a top-K selection (linear time) finds the same kept set; a row whose K most probable
tokens hold less than p falls back to vLLM's own function. Only the summation order differs from vLLM's
(a token exactly at the nucleus boundary may fall the other way, as between two vLLM batch shapes).
Installed by prm_lessons.generation.engine on the CPU build only: a GPU build samples with its own kernels.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: torch is imported where the mask is computed
    import torch

log = logging.getLogger(__name__)

TOP = 256  # candidates per row: nuclei of p <= 0.95 at T <= 1 of the models here hold far fewer tokens


def top_p_mask(logits: torch.Tensor, p: torch.Tensor, top: int = TOP) -> torch.Tensor | None:
    """Bool mask of the tokens outside each row's nucleus (vLLM's rule: keep a token while the mass of the
    more probable tokens before it is < p; the most probable is always kept), or None when some row's
    `top` most probable tokens hold less than p (the nucleus may reach beyond them)."""
    import torch  # lazy: prm_lessons.generation.engine imports this module, and torch only in jobs that generate

    probs = logits.float().softmax(dim=-1)
    vals, idx = probs.topk(min(top, probs.shape[-1]), dim=-1)  # descending
    before = vals.cumsum(dim=-1) - vals  # mass of the more probable candidates
    pp = p.to(vals.dtype).unsqueeze(1)
    if not bool((vals.sum(dim=-1, keepdim=True) >= pp).all()):
        return None
    mask = torch.ones_like(logits, dtype=torch.bool)
    mask.scatter_(1, idx, ~(before < pp))
    return mask


def install() -> bool:
    """Route vLLM's CPU top-p (only: top-k alone, or with top-p, stays vLLM's) through :func:`top_p_mask`.
    False (and vLLM's sampler untouched) where this vLLM has no such function."""
    try:
        from vllm.v1.sample.ops import topk_topp_sampler as sampler  # lazy: only vLLM jobs on CPU
    except ImportError:
        return False
    original = getattr(sampler, "apply_top_k_top_p_pytorch", None)
    if original is None or getattr(original, "_prm_lessons_top_p", False):
        return original is not None

    def apply(logits, k, p, allow_cpu_sync: bool = False):
        if p is not None and k is None:
            mask = top_p_mask(logits, p)
            if mask is not None:
                return logits.masked_fill_(mask, -float("inf"))
        return original(logits, k, p, allow_cpu_sync=allow_cpu_sync)

    apply._prm_lessons_top_p = True
    apply.__wrapped__ = original
    sampler.apply_top_k_top_p_pytorch = apply
    log.info("vLLM CPU top-p: top-%d selection in place of a full-vocabulary sort "
             "(prm_lessons.generation.cpu_top_p)", TOP)
    return True
