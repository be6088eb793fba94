"""Released-PRM adapters with the REAL tokenizers of their families (prm_lessons.rehearsal.tokenizers):
the label / step-tag ids each model's own code reads, EurusPRM read as its card computes it, and
checkpoints that ship only pytorch_model*.bin (Math-Shepherd, Skywork)."""
from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from conftest import shared_data_dir  # noqa: E402
from prm_lessons.rehearsal import tokenizers as T  # noqa: E402
from prm_lessons.scoring.adapters import DeclaredAdapter, EurusAdapter, StepHeadAdapter  # noqa: E402
from prm_lessons.scoring.batch import score_responses  # noqa: E402
from prm_lessons.scoring.heads import build_head_model, resolve_dir  # noqa: E402
from prm_lessons.scoring.load import load_adapter  # noqa: E402

QUESTION = "Janet has 16 eggs. She eats 3. How many are left?"
STEPS = ["She starts with 16 eggs.", "She eats 3, so $16 - 3 = 13$.", "The answer is $\\boxed{13}$."]


@pytest.fixture(scope="module")
def toks():
    return {f: T.build_tokenizer(f) for f in ("qwen2", "qwen2_prm", "llama3", "mistral_v1")}


@pytest.fixture(scope="module")
def pb_cases():
    cases = json.loads(shared_data_dir("processbench", "math.json").read_text())
    return [(c["problem"], list(c["steps"])) for c in cases[:25]]


def _tiny(cfg_cls, tok, seed=0, **kw):
    torch.manual_seed(seed)
    cfg = cfg_cls(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096, **kw)
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


# ---------------------------------------------------------------------------------------------- A7

def test_rlhflow_label_tokens_are_bare_plus_minus(toks):
    """RLHFlow's code reads encode('+')[-1], encode('-')[-1] = 10, 12 (Llama 3), not " -" = 482."""
    t = toks["llama3"]
    a = DeclaredAdapter.from_preset("rlhflow", _tiny(transformers.LlamaConfig, t), t)
    assert a.label_token_ids == (10, 12)
    assert a.token_info()["label_tokens"] == ["+", "-"]
    enc = a.encode(QUESTION, STEPS)
    # the token after each read position is the assistant's "+", the one read is "\n\n" (RLHFlow's -3)
    assert [enc.input_ids[p + 1] for p in enc.positions] == [10] * len(STEPS)
    assert [enc.input_ids[p] for p in enc.positions] == [271] * len(STEPS)


def test_math_shepherd_tokens_and_positions_as_the_card(toks, pb_cases):
    t = toks["mistral_v1"]
    a = DeclaredAdapter.from_preset("math_shepherd", _tiny(transformers.MistralConfig, t), t)
    assert a.label_token_ids == (648, 387) and a.step_tag_id == 12902
    for q, steps in pb_cases:  # the card reads where input_ids == step_tag_id: the same positions
        enc = a.encode(q, steps)
        assert enc.positions == [i for i, x in enumerate(enc.input_ids) if x == 12902]
        assert enc.input_ids[0] == 1  # BOS, as the card's tokenizer.encode


def test_qwen_prm_step_tag_is_151651(toks, pb_cases):
    t = toks["qwen2_prm"]
    model = build_head_model(transformers.Qwen2Model(transformers.Qwen2Config(
        vocab_size=len(t), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1)), "qwen_prm").eval()
    a = StepHeadAdapter(model, t)
    assert a.step_tag_id == 151651 and a.token_info()["step_tag"] == "<extra_0>"
    for q, steps in pb_cases[:5]:
        enc = a.encode(q, steps)
        assert enc.positions == [i for i, x in enumerate(enc.input_ids) if x == 151651]


# ---------------------------------------------------------------------------------------------- A8

def _card_eurus(tok, model, ref, question, steps, coef=0.001):
    """EurusPRM card, step by step: full chat ids; step_last_tokens from each stripped prefix chat
    (+ "\\n\\n" between steps) minus 2; rewards = coef·(logp − ref logp) of labels[1:], masked from the
    first index, cumsum, gathered at the step indices."""
    conv = [{"role": "user", "content": question}, {"role": "assistant", "content": "\n\n".join(steps)}]
    ids = tok(tok.apply_chat_template(conv, tokenize=False), add_special_tokens=False, return_tensors="pt")["input_ids"]
    last = []
    for k in range(len(steps) + 1):
        c = [{"role": "user", "content": question}, {"role": "assistant", "content": "\n\n".join(steps[:k])}]
        text = tok.apply_chat_template(c, tokenize=False).strip()
        if k != 0 and k != len(steps):
            text += "\n\n"
        last.append(len(tok.encode(text, add_special_tokens=False)) - 2)
    mask = torch.zeros_like(ids)
    mask[0, last[0]:] = 1

    def logps(m):
        logits = m(input_ids=ids).logits[:, :-1]
        return logits.log_softmax(-1).gather(2, ids[:, 1:, None])[..., 0]

    with torch.no_grad():
        r = (coef * (logps(model) - logps(ref)) * mask[:, 1:]).cumsum(-1)
    return r.gather(-1, torch.tensor([last[1:]]))[0].tolist(), last


def test_eurus_reads_as_the_card(toks, pb_cases):
    t = toks["qwen2"]
    m, ref = _tiny(transformers.Qwen2Config, t, 1), _tiny(transformers.Qwen2Config, t, 2)
    a = EurusAdapter(m, t, ref_model=ref)  # defaults: beta 0.001, cumulative, no sigmoid (the card)
    assert a.sigmoid is False and a.beta == 0.001
    for q, steps in [(QUESTION, STEPS)] + pb_cases[:4]:
        card, last = _card_eurus(t, m, ref, q, steps)
        enc = a.encode(q, steps)
        assert enc.extra["response_start"] == last[0]
        assert enc.positions == [i + 1 for i in last[1:]]  # the last token the card's sum reaches
        ours = score_responses(a, [q], [steps])[0]
        assert ours == pytest.approx(card, abs=1e-6)
    # raw β log-ratios: around 0, not σ(·) ≈ 0.5, so a product is no longer ≈ 0.5^n
    n = len(ours)
    assert all(abs(v) < 0.1 for v in ours)
    assert abs(math.prod(ours) - 0.5 ** n) > 0.5 ** n / 2


# ---------------------------------------------------------------------------------------------- A6

def _save_bin(state: dict, out, shards: int = 1):
    """A Hub-style .bin checkpoint: pytorch_model.bin, or pytorch_model-0000k-of-0000n.bin + index."""
    keys = sorted(state)
    if shards == 1:
        torch.save(state, out / "pytorch_model.bin")
        return
    size = math.ceil(len(keys) / shards)
    weight_map = {}
    for s in range(shards):
        name = f"pytorch_model-{s + 1:05d}-of-{shards:05d}.bin"
        part = {k: state[k] for k in keys[s * size:(s + 1) * size]}
        torch.save(part, out / name)
        weight_map.update({k: name for k in part})
    (out / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


@pytest.mark.parametrize("shards", [1, 2])
def test_skywork_bin_checkpoint_loads_and_scores(toks, tmp_path, shards):
    t = toks["qwen2"]
    torch.manual_seed(3)
    cfg = transformers.Qwen2Config(vocab_size=len(t), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=1,
                                   architectures=["Qwen2ForPrmModel"])
    lm = transformers.Qwen2ForCausalLM(cfg)
    v_head = torch.nn.Linear(16, 1)
    # key layout of the Skywork repos (vLLM's Qwen2ForPrmModel loads model.*, v_head.summary.*, skips lm_head.*)
    state = {k: v.clone() for k, v in lm.state_dict().items()}
    state.update({f"v_head.summary.{k}": v.clone() for k, v in v_head.state_dict().items()})
    cfg.save_pretrained(tmp_path)
    _save_bin(state, tmp_path, shards)
    T.save_tokenizer("qwen2", tmp_path)
    assert not list(tmp_path.glob("*.safetensors"))
    a = load_adapter({"adapter": "skywork", "path": str(tmp_path), "dtype": "float32", "params": {}})
    assert a.token_info()["step_tag_id"] == t.encode("\n")[-1]
    got = score_responses(a, [QUESTION], [STEPS])[0]
    enc = a.encode(QUESTION, STEPS)
    with torch.no_grad():  # reference: the same weights, outside the loader
        h = lm.model(input_ids=torch.tensor([enc.input_ids])).last_hidden_state
        want = torch.sigmoid(v_head(h)[0, enc.positions, 0]).tolist()
    assert got == pytest.approx(want, abs=1e-5)


def test_math_shepherd_bin_only_repo_loads_with_sentencepiece_tokenizer(toks, tmp_path):
    """Math-Shepherd's repo: sharded pytorch_model-*.bin + tokenizer.model, no tokenizer.json."""
    t = toks["mistral_v1"]
    lm = _tiny(transformers.MistralConfig, t, 4)
    lm.config.save_pretrained(tmp_path)
    _save_bin({k: v.clone() for k, v in lm.state_dict().items()}, tmp_path, shards=2)
    T.save_tokenizer("mistral_v1", tmp_path)
    a = load_adapter({"adapter": "math_shepherd", "path": str(tmp_path), "dtype": "float32", "params": {}})
    assert a.label_token_ids == (648, 387) and a.step_tag_id == 12902
    text = QUESTION + " " + "\n".join(f"Step {i + 1}: {s} ки" for i, s in enumerate(STEPS))
    ids = torch.tensor([t.encode(text)])
    with torch.no_grad():
        card = lm(ids).logits[:, :, [648, 387]].softmax(-1)[:, :, 0][ids == 12902].tolist()
    assert score_responses(a, [QUESTION], [STEPS])[0] == pytest.approx(card, abs=1e-5)


def test_resolve_dir_picks_weight_format_and_remote_code(monkeypatch):
    """A Hub id: *.bin only when the repo has no safetensors; *.py only with trust_remote_code."""
    import huggingface_hub

    from prm_lessons.models import hub

    trees = {"bin/only": ["config.json", "pytorch_model.bin", "tokenizer.json", "modeling_prm.py", "training_args.bin"],
             "has/safetensors": ["config.json", "model.safetensors", "pytorch_model.bin", "modeling.py"]}
    asked = {}
    monkeypatch.setattr(hub, "repo_files", lambda repo, rev, cache_dir=None: trees[repo])
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda repo, revision=None, allow_patterns=None, **kw:
                        asked.setdefault(repo, allow_patterns) and "/x")
    resolve_dir("bin/only")
    resolve_dir("has/safetensors", trust_remote_code=True)
    assert "pytorch_model.bin" in asked["bin/only"] and "training_args.bin" not in asked["bin/only"]
    assert not any(f.endswith(".py") for f in asked["bin/only"])
    assert "model.safetensors" in asked["has/safetensors"] and "pytorch_model.bin" not in asked["has/safetensors"]
    assert "modeling.py" in asked["has/safetensors"]
