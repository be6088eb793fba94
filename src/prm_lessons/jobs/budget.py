"""Model tokens a job used, counted where the model runs: every generation engine (prefill = prompt
tokens, decode = generated tokens) and every frozen-base forward (prefill only), with the dtype each ran
in. workflow/scripts/run.py writes one sidecar per job beside its log (`<log stem>.tokens.json`) and
logs one line; bench/token_budget.py sums the sidecars of a finished run per rule.

No torch (the standard library and tables, for its atomic JSON write): run.py imports it in every job
(analysis jobs have no torch).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from ..tables import write_json

log = logging.getLogger(__name__)

SUFFIX = ".tokens.json"
# the slowest 2-core host measured (docs/measurements.md): AVX2 only, float32 ceiling ~350 tokens/s for a 135M model
SLOW_HOST_TOKENS_PER_S = 350.0
# decoding there is ~2.3x slower than that ceiling: vLLM sampling of 24-64 sequences (top_p 0.8, through
# prm_lessons.generation.cpu_top_p) ran at 149-166 tokens/s under bench/slow_host.sh (docs/measurements.md; 104-115 with
# vLLM's own top-p sort); bench/token_budget.py's slow-host estimate uses both
SLOW_HOST_DECODE_TOKENS_PER_S = 150.0

_ENGINES: list = []  # generation engines started in this process (prm_lessons.generation.engine.load_engine)
_FORWARDS: list[dict] = []  # frozen-base forwards: {what, dtype, prefill_tokens, seconds}


def register_engine(engine) -> None:
    _ENGINES.append(engine)


def add_forward(what: str, dtype: str, texts: int, prefill_tokens: int, seconds: float) -> None:
    """Model forwards outside a generation engine (frozen-base features, head training's base pass):
    `texts` sequences of `prefill_tokens` tokens in all."""
    _FORWARDS.append({"what": what, "dtype": dtype, "prompts": int(texts), "prefill_tokens": int(prefill_tokens),
                      "seconds": float(seconds)})


def reset() -> None:
    _ENGINES.clear()
    _FORWARDS.clear()


def job_record() -> dict | None:
    """This process's model use: totals and one entry per engine / forward; None when no model ran."""
    parts = []
    for e in _ENGINES:
        s = e.stats
        parts.append({"kind": "generate", "backend": e.backend, "dtype": getattr(e, "dtype", None),
                      "dtype_reason": getattr(e, "dtype_reason", None), "calls": s.calls, "prompts": s.prompts,
                      "prefill_tokens": s.prompt_tokens, "cached_prefill_tokens": s.cached_prompt_tokens,
                      "decode_tokens": s.generated_tokens,
                      "seconds": round(s.seconds, 3), **({"extra": dict(s.extra)} if s.extra else {})})
    parts += [{"kind": "forward", **f, "decode_tokens": 0} for f in _FORWARDS]
    if not parts:
        return None
    prefill = sum(p["prefill_tokens"] for p in parts)
    decode = sum(p["decode_tokens"] for p in parts)
    return {"prefill_tokens": prefill, "decode_tokens": decode, "tokens": prefill + decode,
            "model_seconds": round(sum(p["seconds"] for p in parts), 3),
            "dtypes": sorted({str(p["dtype"]) for p in parts}), "parts": parts}


def sidecar_path(log_path: str | Path) -> Path:
    p = Path(log_path)
    return p.with_name(p.stem + SUFFIX)


def write_sidecar(log_path: str | Path, rule: str, wildcards: dict, wall_s: float) -> Path | None:
    """The job's record beside its log (nothing when it ran no model), and one log line with the totals."""
    rec = job_record()
    if rec is None:
        return None
    rec = {"rule": rule, "wildcards": dict(wildcards), "wall_seconds": round(wall_s, 3),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **rec}
    out = sidecar_path(log_path)
    write_json(rec, out, indent=1)
    log.info("model tokens of rule %s: prefill %d, decode %d (%s; %.0f s at %g tokens/s) -> %s", rule,
             rec["prefill_tokens"], rec["decode_tokens"], "/".join(rec["dtypes"]),
             rec["tokens"] / SLOW_HOST_TOKENS_PER_S, SLOW_HOST_TOKENS_PER_S, out)
    return out
