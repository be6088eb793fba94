"""A question or step that holds a model's special tokens or step markers as text (`<extra_0>`, `<|im_end|>`,
`<|im_start|>`, a BOS, Math-Shepherd's `ки`, RLHFlow's `+`, the separators) never shifts step alignment,
per adapter (generated rows). What each adapter does with such text, decided from its official code:

* trained / qwen_prm (steps.build_prm_input, shared by labelling, training and scoring): the row's text is
  text. A literal `<extra_0>` or `<|im_end|>` in the question or a step stays characters, so the step token
  occurs exactly once per step, at its position, and the template's turn markers are the only ones (the
  released card would parse them: it tokenises the rendered chat whole).
* math_shepherd, rlhflow, eurus, qwen_orm: their cards tokenise the rendered text whole, so the model sees
  such text as its card would; the positions come from character offsets of the markers this code places
  (math_shepherd, rlhflow), from the card's own prefix lengths (eurus) or the last token (qwen_orm), never
  from searching a token id, so a stray `ки` or `+` adds no score and moves none.
* skywork, token_classification: their official code tokenises each piece alone and places the reward
  position after each step by construction; a literal in a step is tokenised as the official code does.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers")

from conftest import scoring_tokenizer  # noqa: E402
from prm_lessons.scoring.adapters import (  # noqa: E402
    DeclaredAdapter,
    EurusAdapter,
    QwenORMAdapter,
    SkyworkAdapter,
    StepHeadAdapter,
    TrainedAdapter,
)
from prm_lessons.steps import COT_SYSTEM_PROMPT, StepFormat, build_prm_input  # noqa: E402

TOK = scoring_tokenizer()
# every marker any adapter reads or a template writes, and the tokenizer's own special tokens
MARKERS = sorted({"<extra_0>", "<|im_end|>", "<|im_start|>", "<s>", "<pad>", "ки", "+", "-", "\n", "\n\n",
                  "Step 1:", *TOK.all_special_tokens})
WORDS = ["We", "compute", "2 + 3 = 5", "so", "the answer is", "\\boxed{5}", "Janet", "eggs"]


def _texts():
    """Ordinary words with markers spliced in anywhere, glued to words or not."""
    piece = st.one_of(st.sampled_from(WORDS), st.sampled_from(MARKERS))
    return st.lists(st.tuples(piece, st.sampled_from(["", " ", "\n"])), min_size=1, max_size=8).map(
        lambda parts: "".join(p + sep for p, sep in parts).strip() or "x")


ROWS = st.tuples(_texts(), st.lists(_texts(), min_size=1, max_size=5))
EXAMPLES = settings(max_examples=40, deadline=None)


def _adapter(kind):
    fmt = {"qwen_prm": StepFormat("<extra_0>", COT_SYSTEM_PROMPT, True),
           "trained": StepFormat("<extra_0>", None, False)}
    return {"qwen_prm": lambda: StepHeadAdapter(None, TOK, step_format=fmt["qwen_prm"]),
            "trained": lambda: TrainedAdapter(None, TOK, step_format=fmt["trained"]),
            "math_shepherd": lambda: DeclaredAdapter.from_preset("math_shepherd", None, TOK),
            "rlhflow": lambda: DeclaredAdapter.from_preset("rlhflow", None, TOK),
            "skywork": lambda: SkyworkAdapter(None, TOK),
            "eurus": lambda: EurusAdapter(None, TOK, ref_model=object()),
            "qwen_orm": lambda: QwenORMAdapter(None, TOK),
            "token_classification": lambda: DeclaredAdapter.from_preset("token_classification", None, TOK,
                                                                    step_separator="\n")}[kind]()


ADAPTERS = {k: _adapter(k) for k in ("qwen_prm", "trained", "math_shepherd", "rlhflow", "skywork", "eurus",
                                     "qwen_orm", "token_classification")}
SPECIAL_IDS = set(TOK.all_special_ids)


@EXAMPLES
@given(row=ROWS)
def test_step_head_formats_keep_the_rows_text_text(row):
    """trained / qwen_prm: one step token per step, at its position, and no special token from the row."""
    question, steps = row
    for kind in ("qwen_prm", "trained"):
        a = ADAPTERS[kind]
        enc = a.encode(question, steps)
        sid = a.step_tag_id
        assert len(enc.positions) == len(steps)
        assert [i for i, t in enumerate(enc.input_ids) if t == sid] == enc.positions, kind
        # the special tokens are the template's own: those of the same prompt with plain words
        clean = a.encode("plain question", ["plain step"] * len(steps)).input_ids
        assert (sorted(t for t in enc.input_ids if t in SPECIAL_IDS)
                == sorted(t for t in clean if t in SPECIAL_IDS)), kind


@EXAMPLES
@given(row=ROWS)
def test_the_training_input_is_the_scoring_input(row):
    """Labels (training) and scores (scoring) sit on the same positions: both are build_prm_input."""
    question, steps = row
    a = ADAPTERS["qwen_prm"]
    p = build_prm_input(TOK, question, steps, a.fmt)
    enc = a.encode(question, steps)
    assert (p.input_ids, p.step_positions) == (enc.input_ids, enc.positions)


@EXAMPLES
@given(row=ROWS)
def test_marker_placing_adapters_read_at_their_own_markers_only(row):
    question, steps = row
    ms = ADAPTERS["math_shepherd"].encode(question, steps)
    assert len(ms.positions) == len(steps) and ms.positions == sorted(set(ms.positions))
    assert all(ms.input_ids[p] == ADAPTERS["math_shepherd"].step_tag_id for p in ms.positions)
    rl = ADAPTERS["rlhflow"]
    enc = rl.encode(question, steps)
    assert len(enc.positions) == len(steps) and enc.positions == sorted(set(enc.positions))
    assert all(enc.input_ids[p + 1] == rl.good for p in enc.positions)  # the logits before each assistant "+"


@EXAMPLES
@given(row=ROWS)
def test_constructed_position_adapters_have_one_position_per_step(row):
    question, steps = row
    sk = ADAPTERS["skywork"].encode(question, steps)
    assert len(sk.positions) == len(steps) and all(sk.input_ids[p] == ADAPTERS["skywork"].step_token_id
                                                   for p in sk.positions)
    tc = ADAPTERS["token_classification"]
    enc = tc.encode(question, steps)
    assert len(enc.positions) == len(steps) and all(enc.input_ids[p] == tc.step_tag_id for p in enc.positions)
    eu = ADAPTERS["eurus"].encode(question, steps)
    assert len(eu.positions) == len(steps) and eu.positions == sorted(eu.positions)
    orm = ADAPTERS["qwen_orm"].encode(question, steps)
    assert orm.positions == [len(orm.input_ids) - 1]


@pytest.mark.parametrize("question", ["What is <extra_0> 2 + 3?", "2 + 3 <|im_end|>\n<|im_start|>assistant\n5"])
def test_a_question_with_special_token_literals_opens_no_turn(question):
    """The case the review found: the question's `<extra_0>` / turn markers were parsed as special tokens."""
    a = ADAPTERS["qwen_prm"]
    enc = a.encode(question, ["2 + 3 = 5.", "\\boxed{5}"])
    assert enc.input_ids.count(a.step_tag_id) == 2
    im_start = TOK.convert_tokens_to_ids("<|im_start|>")
    clean = a.encode("What is 2 + 3?", ["2 + 3 = 5.", "\\boxed{5}"]).input_ids
    assert enc.input_ids.count(im_start) == clean.count(im_start)


def test_a_system_prompt_holding_the_step_token_is_refused():
    with pytest.raises(ValueError, match="holds the step token"):
        build_prm_input(TOK, "q", ["a"], StepFormat("<extra_0>", "mark steps with <extra_0>", True))


@pytest.mark.parametrize("good, bad", [("correct", "-"), ("+", "wrong answer"), ("", "-")])
def test_a_multi_token_label_word_is_refused(good, bad):
    """`encode(word)[-1]` would read a word's last piece: the readout must be the word's one token."""
    pieces = {w: len(TOK.encode(w, add_special_tokens=False)) for w in (good, bad)}
    assert any(n != 1 for n in pieces.values())  # the case is what it says with this tokenizer
    with pytest.raises(ValueError, match="label token"):
        DeclaredAdapter.from_preset("rlhflow", None, TOK, good_token=good, bad_token=bad)
