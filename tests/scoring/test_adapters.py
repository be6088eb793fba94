"""Step-scoring adapters on tiny random-weight models of the released architectures (no downloads).

The central property: scoring all steps in ONE forward pass gives exactly the scores of the per-prefix
baseline (one forward per step prefix) — positions, readouts and causal truncation are right — and
batching/padding does not change a response's scores.
"""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from conftest import scoring_tokenizer  # noqa: E402
from prm_lessons import plan  # noqa: E402
from prm_lessons.scoring.adapters import (  # noqa: E402
    DeclaredAdapter,
    EurusAdapter,
    QwenORMAdapter,
    SkyworkAdapter,
    StepHeadAdapter,
    TrainedAdapter,
)
from prm_lessons.scoring.batch import ScoreStats, score_encoded, score_naive_per_prefix, score_prefixes, score_responses  # noqa: E402
from prm_lessons.scoring.encode import truncate  # noqa: E402
from prm_lessons.scoring.heads import build_head_model, load_head_model  # noqa: E402
from prm_lessons.scoring.load import load_adapter  # noqa: E402
from prm_lessons.steps import COT_SYSTEM_PROMPT, StepFormat, build_prm_input  # noqa: E402

QUESTION = "Janet has 16 eggs. She eats 3. How many are left?"
STEPS = ["She starts with 16 eggs.", "She eats 3, so 16 - 3 = 13.", "Then she bakes with 4: 13 - 4 = 9.",
         "The answer is \\boxed{9}."]
STEPS_B = ["2 + 3 = 5.", "So the total is \\boxed{5}."]


@pytest.fixture(scope="module")
def tok():
    return scoring_tokenizer()


def _cfg(cls, tok, **kw):
    return cls(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
               pad_token_id=tok.pad_token_id, **kw)


def _causal(cls_cfg, tok, seed=0):
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(_cfg(cls_cfg, tok)).eval()


def _head(kind, tok, seed=0):
    torch.manual_seed(seed)
    base = transformers.Qwen2Model(_cfg(transformers.Qwen2Config, tok))
    m = build_head_model(base, kind).eval()
    with torch.no_grad():  # a random head with visible spread
        for p in m.parameters():
            if p.dim() == 2 and p.shape[0] <= 2:
                p.mul_(20)
    return m


def _adapters(tok):
    fmt = StepFormat("<extra_0>", COT_SYSTEM_PROMPT, True)
    ref = _causal(transformers.Qwen2Config, tok, seed=1)
    return {
        "qwen_prm": StepHeadAdapter(_head("qwen_prm", tok), tok, step_format=fmt),
        "trained": TrainedAdapter(_head("qwen_prm", tok, 3), tok,
                                  step_format=StepFormat("<extra_0>", None, False)),
        "math_shepherd": DeclaredAdapter.from_preset("math_shepherd", _causal(transformers.MistralConfig, tok), tok),
        "rlhflow": DeclaredAdapter.from_preset("rlhflow", _causal(transformers.LlamaConfig, tok), tok),
        "skywork": SkyworkAdapter(_head("skywork", tok), tok),
        "eurus": EurusAdapter(_causal(transformers.Qwen2Config, tok, seed=2), tok, ref_model=ref,
                              beta=0.05, sigmoid=False),
    }


@pytest.fixture(scope="module")
def adapters(tok):
    return _adapters(tok)


# eurus is not here: the card's readout for a step before the last runs into the next step's first
# token, so a prefix's last step reads differently (test_scoring_real.py checks it against the card)
@pytest.mark.parametrize("kind", ["qwen_prm", "trained", "math_shepherd", "rlhflow", "skywork"])
def test_one_pass_equals_per_prefix(adapters, kind):
    a = adapters[kind]
    one = score_responses(a, [QUESTION], [STEPS])[0]
    naive = score_naive_per_prefix(a, QUESTION, STEPS)
    assert len(one) == len(STEPS)
    assert one == pytest.approx(naive, abs=1e-5)
    assert all(0.0 <= s <= 1.0 for s in one)
    assert max(one) - min(one) > 1e-6  # scores are not a constant: positions differ per step


@pytest.mark.parametrize("kind", ["qwen_prm", "math_shepherd", "rlhflow", "skywork", "eurus"])
def test_batching_and_padding_do_not_change_scores(adapters, kind):
    a = adapters[kind]
    qs, ss = [QUESTION, "What is 2 + 3?", QUESTION], [STEPS, STEPS_B, STEPS[:2]]
    together = score_responses(a, qs, ss, batch_tokens=10_000, batch_size=8)
    alone = [score_responses(a, [q], [s])[0] for q, s in zip(qs, ss)]
    for x, y in zip(together, alone):
        assert x == pytest.approx(y, abs=1e-5)
    stats = ScoreStats()
    score_responses(a, qs, ss, batch_tokens=10_000, batch_size=8, stats=stats)
    assert stats.forward_passes == 1 and stats.responses == 3


def test_length_sorted_batches_respect_token_budget(adapters):
    a = adapters["qwen_prm"]
    encs = [a.encode(QUESTION, STEPS), a.encode("What is 2 + 3?", STEPS_B), a.encode(QUESTION, STEPS[:1])]
    longest = max(len(e.input_ids) for e in encs)
    stats = ScoreStats()
    score_encoded(a, encs, batch_tokens=longest, batch_size=8, stats=stats)
    assert stats.forward_passes == 3  # budget fits one padded row per batch


def test_qwen_prm_matches_model_card_format(tok, adapters):
    """Card: chat with assistant = "<extra_0>".join(steps) + "<extra_0>", tokenised as one string,
    scores = softmax(logits)[:, 1] where input_ids == <extra_0>."""
    a = adapters["qwen_prm"]
    msgs = [{"role": "system", "content": COT_SYSTEM_PROMPT}, {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": "<extra_0>".join(STEPS) + "<extra_0>"}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=False)
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        logits = a.model(input_ids=ids)
    card = torch.softmax(logits, -1)[0, ids[0] == tok.convert_tokens_to_ids("<extra_0>"), 1].tolist()
    assert score_responses(a, [QUESTION], [STEPS])[0] == pytest.approx(card, abs=1e-5)


def test_math_shepherd_matches_model_card(tok, adapters):
    a = adapters["math_shepherd"]
    text = QUESTION + " " + "\n".join(f"Step {i + 1}: {s} ки" for i, s in enumerate(STEPS))
    ids = torch.tensor([tok.encode(text)])
    good, bad = tok.encode("+ -", add_special_tokens=False)
    with torch.no_grad():
        logits = a.model(ids).logits[:, :, [good, bad]]
    card = logits.softmax(-1)[:, :, 0][ids == tok.convert_tokens_to_ids("ки")].tolist()
    assert score_responses(a, [QUESTION], [STEPS])[0] == pytest.approx(card, abs=1e-5)


def test_rlhflow_reads_before_each_assistant_plus(tok, adapters):
    a = adapters["rlhflow"]
    enc = a.encode(QUESTION, STEPS)
    plus = tok.encode("+", add_special_tokens=False)[0]
    assert [enc.input_ids[p + 1] for p in enc.positions] == [plus] * len(STEPS)
    # the first user turn holds the question and step 1 (ProcessBench's RLHFlow script)
    text = tok.decode(enc.input_ids)
    assert QUESTION + "\n\n" + STEPS[0] in text


def test_skywork_format(tok, adapters):
    a = adapters["skywork"]
    enc = a.encode(QUESTION, STEPS)
    nl = tok.encode("\n", add_special_tokens=False)[-1]
    assert [enc.input_ids[p] for p in enc.positions] == [nl] * len(STEPS)
    assert enc.input_ids[0] == tok.bos_token_id


def test_eurus_zero_reward_against_itself_and_step_mode(tok):
    torch.manual_seed(0)
    m = _causal(transformers.Qwen2Config, tok, seed=5)
    same = EurusAdapter(m, tok, ref_model=m, beta=0.001, sigmoid=True)
    assert score_responses(same, [QUESTION], [STEPS])[0] == pytest.approx([0.5] * 4, abs=1e-7)
    ref = _causal(transformers.Qwen2Config, tok, seed=6)
    cum = EurusAdapter(m, tok, ref_model=ref, beta=0.1, sigmoid=False)
    step = EurusAdapter(m, tok, ref_model=ref, beta=0.1, sigmoid=False, reward="step")
    c = score_responses(cum, [QUESTION], [STEPS])[0]
    s = score_responses(step, [QUESTION], [STEPS])[0]
    assert [sum(s[:k + 1]) for k in range(4)] == pytest.approx(c, abs=1e-5)
    # cumulative reward = β Σ (log π − log π_ref) over ALL response tokens up to the step end
    enc = cum.encode(QUESTION, STEPS)
    ids = torch.tensor([enc.input_ids])
    with torch.no_grad():
        lp = torch.log_softmax(m(ids).logits[0, :-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
        lr = torch.log_softmax(ref(ids).logits[0, :-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
    r = 0.1 * (lp - lr)
    s0 = enc.extra["response_start"]
    assert c[-1] == pytest.approx(float(r[s0 - 1:enc.positions[-1]].sum()), abs=1e-5)
    with pytest.raises(ValueError, match="reference model"):
        EurusAdapter(m, tok)


def test_orm_one_score_per_response_and_per_prefix(tok):
    orm = QwenORMAdapter(_head("qwen_orm", tok), tok)
    out = score_responses(orm, [QUESTION, "What is 2 + 3?"], [STEPS, STEPS_B])
    assert [len(o) for o in out] == [1, 1]
    pref = score_prefixes(orm, [QUESTION], [STEPS])[0]
    assert len(pref) == len(STEPS)
    each = [score_responses(orm, [QUESTION], [STEPS[:k + 1]])[0][0] for k in range(len(STEPS))]
    assert pref == pytest.approx(each, abs=1e-5)
    assert pref[-1] == pytest.approx(out[0][0], abs=1e-5)


def test_truncation_keeps_whole_leading_steps(tok, adapters):
    a = adapters["qwen_prm"]
    full = score_responses(a, [QUESTION], [STEPS])[0]
    enc_full = a.encode(QUESTION, STEPS)
    short = StepHeadAdapter(a.model, tok, max_length=enc_full.positions[1] + 2, step_format=a.fmt)
    part = score_responses(short, [QUESTION], [STEPS])[0]
    assert len(part) == 2 and part == pytest.approx(full[:2], abs=1e-5)
    ms = adapters["math_shepherd"]
    enc = ms.encode(QUESTION, STEPS)
    cut = truncate(enc, enc.positions[2])
    assert cut.n_kept == 2 and cut.n_steps == 4 and len(cut.input_ids) == enc.positions[1] + 1


def test_empty_response_gets_no_scores(adapters):
    assert score_responses(adapters["qwen_prm"], [QUESTION, QUESTION], [[], STEPS_B])[0] == []


def test_head_checkpoint_roundtrip_without_remote_code(tok, tmp_path):
    """A released-style checkpoint (config + safetensors with model.* and score.* keys) loads through
    transformers' own Qwen2Model plus the head built here, giving the same outputs."""
    from safetensors.torch import save_file

    m = _head("qwen_prm", tok, seed=7)
    m.model.config.architectures = ["Qwen2ForProcessRewardModel"]
    m.model.config.save_pretrained(tmp_path)
    state = {k: v.contiguous() for k, v in m.state_dict().items()}
    save_file(state, str(tmp_path / "model.safetensors"))
    loaded = load_head_model(str(tmp_path), "qwen_prm", "float32", trust_remote_code=False).eval()
    ids = torch.tensor([tok(QUESTION, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(loaded(ids), m(ids), atol=1e-5)
    with pytest.raises(ValueError, match="v_head"):
        load_head_model(str(tmp_path), "skywork", "float32")


def test_unknown_adapter_is_an_error():
    with pytest.raises(ValueError, match="unknown scoring adapter 'nope'"):
        load_adapter({"adapter": "nope", "path": "x"})


def test_resolve_prm_specs_from_config():
    cfg = {"models": {"prm7b": {"source": "hub", "id": "Qwen/Qwen2.5-Math-PRM-7B", "dtype": "bfloat16",
                                "trust_remote_code": False},
                      "eurus2": {"source": "hub", "id": "PRIME-RL/EurusPRM-Stage2"},
                      "ref": {"source": "hub", "id": "Qwen/Qwen2.5-Math-7B-Instruct"}},
           "prms": {"include_trained": False,
                    "models": {"qwen_prm_7b": {"adapter": "qwen_prm", "model": "prm7b"},
                               "eurus_stage2": {"adapter": "eurus", "model": "eurus2", "ref_model": "ref"}}}}
    specs = plan.resolve_prm_specs(cfg)
    assert specs["qwen_prm_7b"]["path"] == "resources/hub/prm7b"  # linked there by rule download_model
    assert specs["qwen_prm_7b"]["trust_remote_code"] is False
    assert specs["eurus_stage2"]["ref_path"] == "resources/hub/ref"
    del cfg["prms"]["models"]["eurus_stage2"]["ref_model"]
    with pytest.raises(ValueError, match="ref_model"):
        plan.resolve_prm_specs(cfg)


def test_build_prm_input_is_the_qwen_prm_format(tok):
    fmt = StepFormat("<extra_0>", COT_SYSTEM_PROMPT, True)
    p = build_prm_input(tok, QUESTION, STEPS, fmt)
    assert len(p.step_positions) == len(STEPS)
    assert all(p.input_ids[i] == tok.convert_tokens_to_ids("<extra_0>") for i in p.step_positions)
    assert not math.isnan(p.n_steps_kept)
