"""Adapter declared: a PRM described by its params alone. One random-weight model per model_class, saved with
the real tokenizer of its family (prm_lessons.rehearsal.tokenizers) and loaded through the project's loader,
scored against a hand computation with transformers; the parameter sets a user would write for Math-Shepherd,
RLHFlow, a TRL PRM and a Qwen PRM give the named adapters' scores; every bad option is a config error naming
its key (tests/workflow/test_prm_by_config.py: such an entry in a dry run)."""
from __future__ import annotations

import functools
import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from _prm_tiny import qwen2_prm  # noqa: E402
from conftest import ROOT, shared_data_dir  # noqa: E402
from prm_lessons.config import ConfigError, load_config  # noqa: E402
from prm_lessons.plan import resolve_prm_specs  # noqa: E402
from prm_lessons.rehearsal import tokenizers as T  # noqa: E402
from prm_lessons.scoring.adapters import DeclaredAdapter  # noqa: E402
from prm_lessons.scoring.batch import score_responses  # noqa: E402
from prm_lessons.scoring.load import load_adapter  # noqa: E402
from prm_lessons.steps import COT_SYSTEM_PROMPT  # noqa: E402

QUESTIONS = ["Janet has 16 eggs. She eats 3. How many are left?", "What is 2 + 3 * 4?"]
STEPS = [["She starts with 16 eggs.", "She eats 3, so $16 - 3 = 13$.", "The answer is $\\boxed{13}$."],
         ["First 3 * 4 = 12.", "Then 2 + 12 = 14, so the answer is 14."]]
CONFIGS = {"llama3": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config,
           "mistral_v1": transformers.MistralConfig}


@functools.lru_cache(maxsize=None)
def _tokenizer(family: str):
    return T.build_tokenizer(family)


def _save(path, family: str, auto_class, seed: int = 0, **kw):
    """A random-weight model of the family's architecture (`auto_class`) + the family's real tokenizer files."""
    tok = _tokenizer(family)
    torch.manual_seed(seed)
    cfg = CONFIGS[family](vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                          num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                          pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else 0, **kw)
    auto_class.from_config(cfg).save_pretrained(path)
    T.save_tokenizer(family, path)
    return path


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """name -> a saved random-weight checkpoint, each built once per module."""
    made = {}
    build = {
        "llama3_lm": lambda p: _save(p, "llama3", transformers.AutoModelForCausalLM),
        "mistral_lm": lambda p: _save(p, "mistral_v1", transformers.AutoModelForCausalLM, seed=1),
        "qwen2_tc3": lambda p: _save(p, "qwen2", transformers.AutoModelForTokenClassification, seed=2, num_labels=3),
        "qwen2_tc2": lambda p: _save(p, "qwen2", transformers.AutoModelForTokenClassification, seed=3),
        "qwen_prm": lambda p: qwen2_prm(p, "qwen_prm", hidden=16, layers=2, heads=2, kv=1, inter=32),
    }

    def get(name: str):
        if name not in made:
            made[name] = build[name](tmp_path_factory.mktemp(name))
        return made[name]

    return get


def _load(path, params: dict, adapter: str = "declared", **kw):
    return load_adapter({"adapter": adapter, "path": str(path), "dtype": "float32", "params": params, **kw})


def _probs(logits, positions, index):
    return logits.float().softmax(-1)[0, positions, index].tolist()


# ------------------------------------------------------------------------------------------ one per model_class

def test_causal_lm_reads_two_label_tokens_at_the_tag(saved):
    """Llama 3 body + tokenizer: a tag in context (the whole text tokenised once, with BOS), labels given as
    text; P(good) = softmax over the two label logits where the card-style code finds the tag's id."""
    path = saved("llama3_lm")
    params = {"model_class": "causal_lm", "tokenize": "in_context", "question_template": "{question}\n",
              "step_template": "Step {k}: {step}", "step_tag": " ки", "step_join": "\n",
              "readout": {"label_ids": ["+", "-"]}}
    a = _load(path, params)
    tok = _tokenizer("llama3")
    good, bad = tok.encode("+", add_special_tokens=False)[0], tok.encode("-", add_special_tokens=False)[0]
    tag = tok.encode(" ки", add_special_tokens=False)
    assert len(tag) == 1 and a.label_token_ids == (good, bad) and a.step_tag_id == tag[0]
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    got = score_responses(a, QUESTIONS, STEPS)
    for q, steps, scores in zip(QUESTIONS, STEPS, got):
        text = q + "\n" + "\n".join(f"Step {k + 1}: {s} ки" for k, s in enumerate(steps))
        ids = tok.encode(text)
        assert ids[0] == tok.bos_token_id
        where = [i for i, x in enumerate(ids) if x == tag[0]]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[..., [good, bad]]
        assert len(where) == len(steps)
        assert scores == pytest.approx(_probs(logits, where, 0), abs=1e-5)
        assert max(scores) - min(scores) > 1e-6


def test_token_classification_class_index_of_three_labels(saved):
    """Qwen2 token-classification body with 3 labels + the Qwen2.5 tokenizer: pieces tokenised alone (TRL's
    way) with a step template and a two-token separator; the score of label 2, softmax and sigmoid."""
    path = saved("qwen2_tc3")
    base = {"model_class": "token_classification", "step_template": "Step {k}: {step}", "step_tag": " <step>"}
    soft = _load(path, {**base, "readout": {"class_index": 2}})
    sig = _load(path, {**base, "readout": {"class_index": 2, "activation": "sigmoid"}})
    tok = _tokenizer("qwen2")
    sep = tok.encode(" <step>", add_special_tokens=False)
    assert len(sep) > 1 and tok.bos_token_id is None
    model = transformers.AutoModelForTokenClassification.from_pretrained(path, dtype=torch.float32).eval()
    got_soft, got_sig = score_responses(soft, QUESTIONS, STEPS), score_responses(sig, QUESTIONS, STEPS)
    for q, steps, s1, s2 in zip(QUESTIONS, STEPS, got_soft, got_sig):
        ids, where = tok.encode(q, add_special_tokens=False), []
        for k, s in enumerate(steps):
            ids += tok.encode(f"Step {k + 1}: {s}", add_special_tokens=False) + sep
            where.append(len(ids) - 1)
        assert soft.encode(q, steps).input_ids == ids
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits
        assert s1 == pytest.approx(_probs(logits, where, 2), abs=1e-5)
        assert s2 == pytest.approx(logits[0, where, 2].sigmoid().tolist(), abs=1e-5)
    assert soft.token_info()["class_index"] == 2 and sig.token_info()["activation"] == "sigmoid"


def test_process_reward_reads_the_step_format_contract(saved):
    """A released-layout Qwen2ForProcessRewardModel (head built here, no remote code) + the Qwen2.5-Math-PRM
    tokenizer: prompt chat is steps.build_prm_input; the score is the card's softmax(logits)[1] at <extra_0>."""
    path = saved("qwen_prm")
    a = _load(path, {"model_class": "process_reward", "prompt": "chat", "step_tag": "<extra_0>",
                     "system_prompt": COT_SYSTEM_PROMPT})
    tok = _tokenizer("qwen2_prm")
    assert a.step_tag_id == 151651
    got = score_responses(a, QUESTIONS, STEPS)
    for q, steps, scores in zip(QUESTIONS, STEPS, got):
        msgs = [{"role": "system", "content": COT_SYSTEM_PROMPT}, {"role": "user", "content": q},
                {"role": "assistant", "content": "<extra_0>".join(steps) + "<extra_0>"}]
        ids = tok(tok.apply_chat_template(msgs, tokenize=False), add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = a.model(input_ids=torch.tensor([ids]))
        where = [i for i, x in enumerate(ids) if x == 151651]
        assert scores == pytest.approx(_probs(logits, where, 1), abs=1e-5)
    # a tag that is no single vocabulary token cannot carry the contract's score
    with pytest.raises(ValueError, match=r"params\.step_tag"):
        _load(path, {"model_class": "process_reward", "prompt": "chat", "step_tag": " <step>"})


def test_a_label_the_loaded_head_lacks_is_named(saved):
    """A Hub model's head is known only once loaded: the loader names the key."""
    with pytest.raises(ValueError, match=r"params\.readout\.class_index: 2 .*num_labels 2"):
        _load(saved("qwen2_tc2"), {"model_class": "token_classification", "step_tag": "\n",
                                   "readout": {"class_index": 2}})
    with pytest.raises(ValueError, match=r"params\.readout\.label_ids: token id 999999 .*vocab_size"):
        _load(saved("llama3_lm"), {"model_class": "causal_lm", "step_tag": "\n",
                                   "readout": {"label_ids": [999999, 10]}})
    with pytest.raises(ValueError, match=r"params\.model_class: required"):
        _load(saved("llama3_lm"), {"step_tag": "\n"})


# ------------------------------------------------------------------------------------ the families' parameter sets

@pytest.fixture(scope="module")
def pb_cases():
    cases = json.loads(shared_data_dir("processbench", "math.json").read_text())
    return [(c["problem"], list(c["steps"])) for c in cases[:6]]


# what a user would write in a prms.models entry for each family (docs/evaluate-your-prm.md)
FAMILY_PARAMS = {
    # Math-Shepherd's card: "{q} Step 1: s1 ки\nStep 2: s2 ки", encode("+ -")[1:] = "▁+", "▁-" with its tokenizer
    "math_shepherd": ("mistral_lm", {"model_class": "causal_lm", "tokenize": "in_context",
                                     "question_template": "{question} ", "step_template": "Step {k}: {step} ",
                                     "step_tag": "ки", "step_join": "\n", "readout": {"label_ids": ["+", "-"]}}),
    "rlhflow": ("llama3_lm", {"model_class": "causal_lm", "prompt": "chat_turns", "question_template": "{question}\n\n",
                              "step_tag": "+", "readout": {"label_ids": ["+", "-"], "position": "before_tag"}}),
    "token_classification": ("qwen2_tc2", {"model_class": "token_classification", "step_tag": "\n"}),
    "qwen_prm": ("qwen_prm", {"model_class": "process_reward", "prompt": "chat", "step_tag": "<extra_0>",
                              "system_prompt": COT_SYSTEM_PROMPT}),
}


@pytest.mark.parametrize("family", sorted(FAMILY_PARAMS))
def test_the_family_as_declared_params_gives_its_scores(saved, pb_cases, family):
    name, params = FAMILY_PARAMS[family]
    named, declared = _load(saved(name), {}, adapter=family), _load(saved(name), params)
    assert isinstance(declared, DeclaredAdapter) and declared.kind == "declared"
    qs, ss = [q for q, _ in pb_cases], [s for _, s in pb_cases]
    for q, s in pb_cases:
        e1, e2 = named.encode(q, s), declared.encode(q, s)
        assert (e1.input_ids, e1.positions) == (e2.input_ids, e2.positions)
    assert named.label_token_ids == declared.label_token_ids
    want, got = score_responses(named, qs, ss), score_responses(declared, qs, ss)
    for w, g in zip(want, got):
        assert len(g) == len(w) > 0 and g == pytest.approx(w, abs=1e-6)


def test_named_families_are_parameter_sets_of_declared(saved):
    """math_shepherd, rlhflow and token_classification run the declared adapter's code with their card's
    parameters (qwen_prm stays the step-format contract's own adapter, shared with the trained PRMs)."""
    for family in ("math_shepherd", "rlhflow", "token_classification"):
        a = _load(saved(FAMILY_PARAMS[family][0]), {}, adapter=family)
        assert isinstance(a, DeclaredAdapter) and a.kind == family
        assert a.declared["model_class"] == FAMILY_PARAMS[family][1]["model_class"]


def test_truncation_keeps_whole_leading_steps(saved):
    path = saved("llama3_lm")
    _, params = FAMILY_PARAMS["rlhflow"]
    a = _load(path, params)
    full = score_responses(a, QUESTIONS[:1], STEPS[:1])[0]
    enc = a.encode(QUESTIONS[0], STEPS[0])
    cut = _load(path, params, max_length=enc.positions[1] + 1)
    assert score_responses(cut, QUESTIONS[:1], STEPS[:1])[0] == pytest.approx(full[:2], abs=1e-5)


# ------------------------------------------------------------------------------------------ config errors

def _overlay(model_dir, **params) -> dict:
    return {"models": {"my_model": {"source": "local", "id": str(model_dir), "dtype": "float32"}},
            "prms": {"models": {"my_prm": {"adapter": "declared", "model": "my_model", "params": params}}}}


@pytest.fixture(scope="module")
def local_dirs(tmp_path_factory):
    """Local checkpoints as the DAG sees them: only config.json is read while it is built."""
    out = {}
    for name, cfg in (("tc2", {"model_type": "qwen2", "architectures": ["Qwen2ForTokenClassification"]}),
                      ("lm", {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 1000})):
        d = tmp_path_factory.mktemp(name)
        (d / "config.json").write_text(json.dumps(cfg))
        out[name] = d
    return out


TC = {"model_class": "token_classification", "step_tag": "\n"}
LM = {"model_class": "causal_lm", "step_tag": "\n", "readout": {"label_ids": ["+", "-"]}}
PR = {"model_class": "process_reward", "prompt": "chat", "step_tag": "<extra_0>"}


@pytest.mark.parametrize("model, params, key", [
    ("tc2", {**TC, "step_sep": "\n"}, "params.step_sep"),  # unknown key
    ("tc2", {"step_tag": "\n"}, "params.model_class"),  # missing
    ("tc2", {**TC, "model_class": "seq2seq"}, "params.model_class"),
    ("tc2", {**TC, "step_tag": 3}, "params.step_tag"),  # wrong type
    ("tc2", {**TC, "step_tag": ""}, "params.step_tag"),
    ("tc2", {**TC, "readout": {"class_index": 2}}, "params.readout.class_index"),  # the checkpoint has 2 labels
    ("tc2", {**TC, "readout": {"class_index": -1}}, "params.readout.class_index"),
    ("tc2", {**TC, "readout": {"activation": "tanh"}}, "params.readout.activation"),
    ("tc2", {**TC, "readout": {"label_ids": ["+", "-"]}}, "params.readout.label_ids"),  # not a causal LM
    ("tc2", {**TC, "readout": {"index": 1}}, "params.readout.index"),
    ("tc2", {**TC, "readout": {"position": "tag_first"}}, "params.readout.position"),
    ("tc2", {**TC, "question_template": "Q: {problem}"}, "params.question_template"),
    ("tc2", {**TC, "step_template": "{step"}, "params.step_template"),
    ("tc2", {**TC, "system_prompt": "be brief"}, "params.system_prompt"),  # plain prompt has no system turn
    ("tc2", {**TC, "bos": "yes"}, "params.bos"),
    ("lm", {**LM, "readout": {"label_ids": [5, 1000]}}, "params.readout.label_ids"),  # vocab_size 1000
    ("lm", {**LM, "readout": {"label_ids": ["+"]}}, "params.readout.label_ids"),
    ("lm", {**LM, "readout": {"label_ids": ["+", "+"]}}, "params.readout.label_ids"),
    ("lm", {"model_class": "causal_lm", "step_tag": "\n"}, "params.readout.label_ids"),  # required
    ("lm", {**LM, "readout": {"label_ids": ["+", "-"], "class_index": 1}}, "params.readout.class_index"),
    ("lm", {**LM, "prompt": "chat_turns", "tokenize": "alone"}, "params.tokenize"),
    ("lm", {**LM, "prompt": "chat_turns", "step_join": "\n"}, "params.step_join"),
    ("lm", {**PR, "model_class": "causal_lm", "readout": {"label_ids": [1, 2]}, "bos": True}, "params.bos"),
    ("lm", {**PR, "readout": {"class_index": 2}}, "params.readout.class_index"),  # the head built here: 2 labels
    ("lm", {**PR, "tokenize": "in_context"}, "params.tokenize"),
    ("lm", {**PR, "step_template": "Step {k}: {step}"}, "params.step_template"),  # the contract's format
])
def test_bad_option_fails_naming_the_key(local_dirs, model, params, key):
    with pytest.raises(ConfigError) as e:
        load_config(ROOT / "config/config.yaml", overrides=_overlay(local_dirs[model], **params))
    assert f"`prms.models.my_prm.{key}`" in str(e.value)


def test_a_declared_entry_keeps_its_params_as_written(local_dirs):
    params = {**LM, "prompt": "chat_turns", "readout": {"label_ids": ["+", "-"], "position": "before_tag"}}
    spec = resolve_prm_specs(load_config(ROOT / "config/config.yaml", overrides=_overlay(local_dirs["lm"], **params)))
    assert spec["my_prm"]["adapter"] == "declared" and spec["my_prm"]["params"] == params


def test_the_guide_entries_are_valid_and_are_the_families(local_dirs):
    """docs/evaluate-your-prm.md: its declared entry passes validation, and its table of the families'
    parameter sets says what the scoring test above runs."""
    import re

    import yaml

    from prm_lessons.scoring.options import check_declared_params

    guide = (ROOT / "docs/evaluate-your-prm.md").read_text()
    section = guide.split("## My PRM is none of these", 1)[1].split("\n## ", 1)[0]
    entry = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))["prms"]["models"]["my_prm"]
    assert entry["adapter"] == "declared"
    cfg = load_config(ROOT / "config/config.yaml", overrides=_overlay(local_dirs["lm"], **entry["params"]))
    assert resolve_prm_specs(cfg)["my_prm"]["params"] == entry["params"]
    rows = dict(re.findall(r"^\| `(\w+)` \| `(\{.*?\})`", section, re.M))
    assert sorted(rows) == sorted(FAMILY_PARAMS)
    for family, text in rows.items():
        assert check_declared_params(yaml.safe_load(text)) == check_declared_params(FAMILY_PARAMS[family][1])
