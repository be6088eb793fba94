"""Splitting a response into steps (prm_lessons.steps.split_steps), and THE step-format contract
(prm_lessons.steps.build_prm_input), shared by training and scoring:
token positions, label alignment, the released-model layout, and truncation that keeps whole steps and
always reports what it dropped."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from _prm_tiny import signal_rows  # noqa: E402
from conftest import tiny_tokenizer  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.steps import StepFormat, build_prm_input, split_steps  # noqa: E402
from prm_lessons.training import data as train_data  # noqa: E402

QWEN_FMT = StepFormat("<extra_0>", "Please reason step by step, and put your final answer within \\boxed{}.", True)
QUESTION = "Janet has 16 eggs. She eats 3. How many are left?"
STEPS = ["She starts with 16 eggs.", "She eats 3, so 16 - 3 = 13.", "Then she bakes with 4: 13 - 4 = 9.",
         "The answer is \\boxed{9}."]


@pytest.fixture(scope="module", params=["qwen_like", "added_token"])
def tok(request):
    """A tokenizer that has <extra_0> (Qwen) and one where training adds it (SmolLM2)."""
    if request.param == "qwen_like":
        return tiny_tokenizer(with_step_token=True)
    t = tiny_tokenizer(with_step_token=False)
    assert P.ensure_step_token(t, None, "<extra_0>")
    return t


def _step_id(tok):
    return tok.convert_tokens_to_ids("<extra_0>")


def test_step_token_after_every_step_and_nowhere_else(tok):
    enc = build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, None)
    sid = _step_id(tok)
    assert enc.n_steps == enc.n_steps_kept == len(STEPS) and not enc.truncated
    assert [enc.input_ids[p] for p in enc.step_positions] == [sid] * len(STEPS)
    assert [i for i, t in enumerate(enc.input_ids) if t == sid] == enc.step_positions
    assert enc.step_positions[-1] == len(enc.input_ids) - 1  # the last step's token ends the input
    # the tokens between two step tokens are exactly the step's text
    bounds = [enc.step_positions[0] - len(tok(STEPS[0], add_special_tokens=False)["input_ids"])] + \
        [p + 1 for p in enc.step_positions[:-1]]
    for step, start, end in zip(STEPS, bounds, enc.step_positions):
        assert tok.decode(enc.input_ids[start:end]) == step


def test_layout_is_the_released_prm_card_format(tok):
    """Qwen2.5-Math-PRM card: chat(system, user, assistant="<extra_0>".join(steps) + "<extra_0>") tokenised
    as one string; ours is its prefix up to the last step token (causal: same hidden states there)."""
    msgs = [{"role": "system", "content": QWEN_FMT.system_prompt}, {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": "<extra_0>".join(STEPS) + "<extra_0>"}]
    card = tok(tok.apply_chat_template(msgs, tokenize=False), add_special_tokens=False)["input_ids"]
    enc = build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, None)
    assert card[:len(enc.input_ids)] == enc.input_ids


def test_plain_format_without_chat_template(tok):
    fmt = StepFormat("<extra_0>", None, False)
    enc = build_prm_input(tok, QUESTION, STEPS[:2], fmt, None)
    prefix = tok(QUESTION + "\n\n", add_special_tokens=False)["input_ids"]
    assert enc.input_ids[:len(prefix)] == prefix and len(enc.step_positions) == 2


def test_step_text_containing_the_step_token_is_text(tok):
    steps = ["We write <extra_0> literally.", "Done <|im_end|> here."]
    enc = build_prm_input(tok, QUESTION, steps, QWEN_FMT, None)
    sid = _step_id(tok)
    assert [i for i, t in enumerate(enc.input_ids) if t == sid] == enc.step_positions
    assert len(enc.step_positions) == 2


def test_labels_align_with_step_positions(tok):
    rows = signal_rows(6, seed=4)
    inst, stats = train_data.prepare_instances(rows, tok, QWEN_FMT, None, "hard")
    assert stats["steps_dropped"] == 0 and stats["instances_used"] == 6
    for row, it in zip(rows, inst):
        enc = build_prm_input(tok, row["question"], row["steps"], QWEN_FMT, None)
        assert it["input_ids"] == enc.input_ids and it["step_pos"] == enc.step_positions
        assert it["step_targets"] == row["labels"]
    batch = P.StepCollator(P.pad_id(tok))(inst[:3])
    # (batch index, token index) pairs point at step tokens, in row order, with their row's labels
    assert (batch["input_ids"][batch["step_batch"], batch["step_pos"]] == _step_id(tok)).all()
    assert batch["step_targets"].tolist() == [x for r in rows[:3] for x in r["labels"]]
    assert batch["attention_mask"].sum().item() == sum(len(i["input_ids"]) for i in inst[:3])


def test_truncation_keeps_whole_steps_and_reports(tok):
    full = build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, None)
    for k in range(len(STEPS)):
        limit = full.step_positions[k] + 1  # room for exactly k+1 steps
        enc = build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, limit)
        assert enc.n_steps_kept == k + 1 and enc.n_steps == len(STEPS)
        assert enc.input_ids == full.input_ids[:limit] and len(enc.input_ids) <= limit
        assert enc.truncated == (k + 1 < len(STEPS))
        one_less = build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, limit - 1)
        assert one_less.n_steps_kept == k  # never a partial step
    none = build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, full.step_positions[0])
    assert none.n_steps_kept == 0 and none.step_positions == [] and none.truncated


def test_training_counts_every_dropped_labelled_step(tok):
    rows = [{"instance_id": "a", "question": QUESTION, "steps": STEPS, "labels": [1.0, 1.0, 0.0, 0.0]},
            {"instance_id": "b", "question": QUESTION, "steps": STEPS[:1], "labels": [1.0]}]
    full = build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, None)
    inst, stats = train_data.prepare_instances(rows, tok, QWEN_FMT, full.step_positions[1] + 1, "hard")
    assert stats["steps_dropped"] == 2 and stats["instances_truncated"] == 1
    assert inst[0]["step_targets"] == [1.0, 1.0]  # labels of the kept steps, in order
    inst, stats = train_data.prepare_instances(rows, tok, QWEN_FMT, full.step_positions[0], "hard")
    assert stats["instances_skipped"] == 2 and stats["steps_dropped"] == 5 and inst == []


def test_unknown_step_token_is_an_error():
    tok = tiny_tokenizer(with_step_token=False)
    with pytest.raises(ValueError, match="<extra_0>"):
        build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, None)


def test_empty_steps():
    tok = tiny_tokenizer(with_step_token=True)
    enc = build_prm_input(tok, QUESTION, [], QWEN_FMT, None)
    assert enc.step_positions == [] and enc.n_steps == 0 and not enc.truncated


def _smollm2_dir() -> Path | None:
    root = Path(__file__).resolve().parents[1]
    d = Path(os.environ.get("PRM_LESSONS_SMOLLM2", root / "resources" / "models" / "smollm2"))
    return d if (d / "tokenizer.json").exists() else None


@pytest.mark.skipif(_smollm2_dir() is None, reason="embedded SmolLM2 not converted (resources/models/smollm2)")
def test_real_smollm2_tokenizer():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(_smollm2_dir())
    assert "<extra_0>" not in tok.get_vocab()
    P.ensure_step_token(tok, None, "<extra_0>")
    enc = build_prm_input(tok, QUESTION, STEPS, QWEN_FMT, None)
    sid = tok.convert_tokens_to_ids("<extra_0>")
    assert [i for i, t in enumerate(enc.input_ids) if t == sid] == enc.step_positions
    assert len(enc.step_positions) == len(STEPS)
    assert tok.decode(enc.input_ids[enc.step_positions[0] + 1:enc.step_positions[1]]) == STEPS[1]


# ------------------------------------------------------------------------------------- split_steps

def test_split_on_blank_lines_drops_empty_steps():
    assert split_steps("a\n\nb\n\n\n\nc\n\n") == ["a", "b", "c"]
    assert split_steps("") == [] and split_steps(None) == []
    assert split_steps("one step only") == ["one step only"]


def test_custom_separator():
    assert split_steps("x ки y ки", separator="ки") == ["x", "y"]
