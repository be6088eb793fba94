"""FLOPs per token of a decoder-only PRM, and MFU / HFU from a measured tokens/s: the one formula.

Convention (Chowdhery et al. 2022, PaLM, App. B; as Kaplan et al. 2020 and Hoffmann et al. 2022, App. F,
count the matmuls): a matmul of an [m, k] by a [k, n] matrix is 2mkn FLOPs; one training step is the
forward (2 FLOPs per weight per token) plus a backward of twice that, 6 FLOPs per weight per token.

  - N counts the weights of the matmuls only: per layer the q, k, v, o projections (k and v at the
    key-value heads' width: grouped-query attention) and the gated MLP (gate, up, down), plus the step
    head (Linear(h,h), Linear(h,2)) and, when the model has one, the LM head (h x vocab). The input
    embedding is a lookup, not a matmul: never counted (a PRM has no LM head, so no vocab term at all).
    Biases, norms, activations, softmax and rotary embeddings are elementwise (< 0.1 % here): left out.
  - Attention: per layer and token the forward computes QK^T and AV, each 2 x d_attn x T FLOPs for a
    context of T keys (d_attn = heads x head_dim; grouped-query attention shares k/v heads but every query
    head still multiplies). PaLM counts the full T x T score matrix: 12 x L x d_attn x T per token for
    training. A causal model needs only the lower triangle, and the kernels that train it (FlashAttention,
    SDPA's causal path) skip the masked blocks, so a token attends to (T + 1) / 2 keys on average: here
    causal = True (the default) halves PaLM's term to 6 x L x d_attn x T (FlashAttention's own benchmark
    counts causal attention the same way). For sequences of different lengths the per-token mean of T is
    sum(T_i^2) / sum(T_i) (`attention_context`), not the mean length.
  - MFU uses model FLOPs (6 per weight); HFU adds what gradient checkpointing recomputes: one more
    forward of the layers (8 per weight; the head and LM head, outside the checkpointed layers, are not
    recomputed) and the attention forward again.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# dense bf16 peak FLOP/s (no 2:4 sparsity) by device-name substring, most specific first
PEAK_BF16 = {"H200": 989e12, "H100 SXM": 989e12, "H100 80GB HBM3": 989e12, "H100 NVL": 835e12,
             "H100 PCIe": 756e12, "H100": 989e12, "B200": 2250e12, "A100": 312e12, "L40S": 362e12}


@dataclass(frozen=True)
class Shape:
    """The sizes the FLOP count needs, as a transformers config names them."""
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    head_dim: int | None = None  # None: hidden / heads
    lm_head: bool = False        # an untied or tied output projection that runs (a policy, not a PRM)
    step_head: bool = True       # the PRM's Linear(h,h) -> ReLU -> Linear(h,2)

    @property
    def hd(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def attn_width(self) -> int:
        return self.heads * self.hd


def shape_of(cfg, *, lm_head: bool = False, step_head: bool = True) -> Shape:
    """A Shape from a transformers config object or its dict (config.json)."""
    get = cfg.get if isinstance(cfg, Mapping) else lambda k, d=None: getattr(cfg, k, d)
    return Shape(hidden=int(get("hidden_size")), intermediate=int(get("intermediate_size")),
                 layers=int(get("num_hidden_layers")), heads=int(get("num_attention_heads")),
                 kv_heads=int(get("num_key_value_heads") or get("num_attention_heads")),
                 vocab=int(get("vocab_size")), head_dim=get("head_dim"), lm_head=lm_head, step_head=step_head)


def layer_weights(s: Shape) -> int:
    """Matmul weights of one decoder layer: q, k, v, o and the gated MLP."""
    q = o = s.hidden * s.attn_width
    kv = 2 * s.hidden * s.kv_heads * s.hd
    return q + kv + o + 3 * s.hidden * s.intermediate


def head_weights(s: Shape) -> int:
    """Matmul weights outside the layers that run per token: the step head and the LM head, if any."""
    return (s.hidden * s.hidden + 2 * s.hidden if s.step_head else 0) + (s.hidden * s.vocab if s.lm_head else 0)


def matmul_weights(s: Shape) -> int:
    """N of the 6N rule: every matmul weight (no embedding)."""
    return s.layers * layer_weights(s) + head_weights(s)


def attention_context(lengths: Iterable[int]) -> float:
    """The per-token mean T of the attention term over sequences of these lengths: sum(T^2) / sum(T)."""
    ls = [int(x) for x in lengths]
    return sum(x * x for x in ls) / sum(ls) if ls and sum(ls) else 0.0


def attention_flops(s: Shape, context: float, causal: bool = True) -> float:
    """Forward FLOPs per token of QK^T and AV over all layers (2 matmuls x 2 x d_attn x T, halved if causal)."""
    return s.layers * 4 * s.attn_width * context * (0.5 if causal else 1.0)


def forward_flops(s: Shape, context: float, causal: bool = True) -> float:
    """Forward FLOPs per token (inference, scoring, one sampled token at this context)."""
    return 2 * matmul_weights(s) + attention_flops(s, context, causal)


def train_flops(s: Shape, context: float, causal: bool = True, recompute: bool = False) -> float:
    """Training FLOPs per token: 3 x the forward (forward + backward); `recompute` (gradient checkpointing,
    for HFU) adds the layers' forward once more."""
    model = 3 * (2 * matmul_weights(s) + attention_flops(s, context, causal))
    if recompute:
        model += 2 * s.layers * layer_weights(s) + attention_flops(s, context, causal)
    return model


def utilisation(tokens_per_second: float, flops_per_token: float, peak: float) -> float:
    """Achieved FLOP/s over the peak: MFU with model FLOPs, HFU with the recomputed forward added."""
    return tokens_per_second * flops_per_token / peak


def peak_bf16(device_name: str) -> float | None:
    """Dense bf16 peak of a device by its name (torch.cuda.get_device_name); None when unknown."""
    return next((v for k, v in PEAK_BF16.items() if k in device_name), None)


def training_utilisation(s: Shape, tokens_per_second: float, context: float, peak: float,
                         gradient_checkpointing: bool, causal: bool = True) -> dict:
    """MFU and HFU of a training run, with the FLOPs per token they come from."""
    model = train_flops(s, context, causal)
    hardware = train_flops(s, context, causal, recompute=gradient_checkpointing)
    return {"flops_per_token_model": model, "flops_per_token_hardware": hardware,
            "matmul_weights": matmul_weights(s), "attention_context": context,
            "mfu": utilisation(tokens_per_second, model, peak),
            "hfu": utilisation(tokens_per_second, hardware, peak)}
