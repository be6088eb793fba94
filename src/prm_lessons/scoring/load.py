"""Adapters built from a resolved spec (plan.resolve_prm_specs): tokenizer, model and head on the
transformers backend, or the same adapter with vLLM's pooling runner in place of the forward (backend vllm).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer
from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

from ..models.prm import FORMAT_FILE, load_prm
from ..tables import read_json
from . import pooling
from .adapters import ADAPTER_CLASSES, ADAPTERS, Adapter, TrainedAdapter
from .heads import HEAD_PREFIX, load_head_model, on_gpu, placement, pretrained_dtype, resolve_dir
from .options import check_declared_params

log = logging.getLogger(__name__)


def _device():
    return "cuda" if on_gpu() else "cpu"


def _hub_tokenizer_class(model_dir: str):
    """The transformers class the repo's tokenizer_config.json names (None: none named, unknown, or Hub
    code). transformers 5's AutoTokenizer maps model_type mistral to MistralCommonBackend and, for a repo
    without Mistral's own tokenizer files, falls back to a generic converter that ignores the repo's
    LlamaTokenizer: for Math-Shepherd "+ -" then encodes to [28806, 387], not the card's [648, 387]."""
    cfg_file = Path(model_dir) / "tokenizer_config.json"
    if not cfg_file.exists():
        return None
    cfg = read_json(cfg_file)
    name = cfg.get("tokenizer_class")
    if not name or cfg.get("auto_map"):
        return None
    return tokenizer_class_from_name(name) or (None if name.endswith("Fast")
                                               else tokenizer_class_from_name(name + "Fast"))


def _tokenizer(path: str, trust_remote_code: bool = False):
    d = resolve_dir(path, trust_remote_code)
    cls = _hub_tokenizer_class(d)
    if cls is not None:  # a transformers class by name (never Hub code: auto_map repos go through Auto)
        return cls.from_pretrained(d, trust_remote_code=trust_remote_code)
    return AutoTokenizer.from_pretrained(d, trust_remote_code=trust_remote_code)


def _causal_lm(path: str, dtype, trust_remote_code: bool = False):
    return AutoModelForCausalLM.from_pretrained(resolve_dir(path, trust_remote_code), dtype=pretrained_dtype(dtype),
                                                trust_remote_code=trust_remote_code, **placement())


def model_class(kind: str, params: dict) -> str:
    """What a checkpoint is loaded as: a head built here (`heads.HEAD_PREFIX`: qwen_prm, qwen_orm, skywork),
    token_classification, or causal_lm. Adapter declared names it (`model_class`; process_reward is the
    Qwen PRM head)."""
    if kind == "declared":
        mc = params.get("model_class")
        return "qwen_prm" if mc == "process_reward" else mc
    return kind if kind in HEAD_PREFIX or kind == "token_classification" else "causal_lm"


def load_adapter(spec: dict, backend: str | None = None) -> Adapter:
    """Build an adapter from a resolved spec (`plan.resolve_prm_specs`): adapter, path, dtype,
    trust_remote_code, max_length, params (+ ref_path/ref_dtype for eurus), and `backend` (absent:
    transformers; vllm: `_vllm_adapter`). `backend` here overrides the spec's."""
    kind = spec["adapter"]
    if kind not in ADAPTER_CLASSES:
        raise ValueError(f"unknown scoring adapter '{kind}' (allowed: {', '.join(ADAPTERS)})")
    backend = backend or spec.get("backend", "transformers")
    if backend == "vllm":
        return _vllm_adapter(spec)
    if backend != "transformers":
        raise ValueError(f"unknown scoring backend {backend!r} (allowed: {', '.join(pooling.BACKENDS)})")
    path, dtype, trc = spec["path"], spec.get("dtype"), bool(spec.get("trust_remote_code", False))
    params = dict(spec["params"])
    dev = _device()
    if kind == "trained":
        model, tok, fmt = load_prm(path, trust_remote_code=trc)  # on its device
        max_length = spec.get("max_length") or getattr(model, "max_length", None)
        return TrainedAdapter(model.eval(), tok, max_length, step_format=fmt, **params)
    if kind == "declared":  # a wrong option fails before any weight is read
        try:
            check_declared_params(params)
        except ValueError as e:
            raise ValueError(f"{path}: adapter {kind}: {e}") from e
    tok = _tokenizer(path, trc)
    mc = model_class(kind, params)
    if mc in ("qwen_prm", "qwen_orm", "skywork"):
        model = load_head_model(path, mc, dtype, trc)
    elif mc == "token_classification":  # the class of the checkpoint's config.json, whatever its architecture
        model = AutoModelForTokenClassification.from_pretrained(
            resolve_dir(path, trc), dtype=pretrained_dtype(dtype), trust_remote_code=trc, **placement())
    else:
        model = _causal_lm(path, dtype, trc)
    if not on_gpu():
        model = model.to(dev) if hasattr(model, "to") else model
    model.eval()
    if kind == "eurus":
        ref = _causal_lm(spec["ref_path"], spec.get("ref_dtype", dtype), bool(spec.get("ref_trust_remote_code", False)))
        params["ref_model"] = (ref if on_gpu() else ref.to(dev)).eval()
    try:
        adapter = ADAPTER_CLASSES[kind](model, tok, spec.get("max_length"), **params)
    except ValueError as e:  # an option that does not fit this checkpoint: say which PRM
        raise ValueError(f"{path}: adapter {kind}: {e}") from e
    log.info("adapter %s on %s: %s", kind, path, json.dumps(adapter.token_info(), ensure_ascii=False))
    return adapter


def _vllm_adapter(spec: dict) -> Adapter:
    """Backend vllm (prm_lessons.scoring.pooling): the adapter class, tokenizer, encoding and readout of the
    transformers backend, with vLLM's pooling runner in place of the transformers forward. `spec["vllm"]`
    (plan.resolve_prm_specs): tensor_parallel_size, gpu_memory_utilization."""
    kind, trc = spec["adapter"], bool(spec.get("trust_remote_code", False))
    path = resolve_dir(spec["path"], trc)
    pooling.check_servable(kind, path)  # before the tokenizer: a wrong checkpoint fails first, and clearly
    params = dict(spec["params"])
    if kind == "trained":
        meta = read_json(Path(path) / FORMAT_FILE)
        tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trc)
        adapter = TrainedAdapter(None, tok, spec.get("max_length") or meta.get("max_length"),
                                 step_format=meta["format"], **params)
    else:
        adapter = ADAPTER_CLASSES[kind](None, _tokenizer(path, trc), spec.get("max_length"), **params)
    v = spec.get("vllm") or {}
    adapter.model = pooling.PoolingModel(
        path, kind, step_tag_id=adapter.step_tag_id, dtype=spec.get("dtype"), max_model_len=adapter.max_length,
        tensor_parallel_size=int(v.get("tensor_parallel_size", 1)),
        gpu_memory_utilization=float(v.get("gpu_memory_utilization", 0.9)), trust_remote_code=trc)
    log.info("adapter %s (vLLM pooling) on %s: %s", kind, path, json.dumps(adapter.token_info(), ensure_ascii=False))
    return adapter
