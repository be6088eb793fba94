"""prm_lessons.scoring.batch: a long transformers scoring job logs done / total, rate and ETA between its
forward passes, and the scores do not depend on it."""
from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from conftest import scoring_tokenizer  # noqa: E402
from prm_lessons.jobs import progress  # noqa: E402
from prm_lessons.scoring.adapters import StepHeadAdapter  # noqa: E402
from prm_lessons.scoring.batch import score_responses  # noqa: E402
from prm_lessons.scoring.heads import build_head_model  # noqa: E402
from prm_lessons.steps import COT_SYSTEM_PROMPT, StepFormat  # noqa: E402

QUESTIONS = [f"What is {i} + {i}?" for i in range(5)]
STEPS = [[f"{i} + {i} = {2 * i}.", f"The answer is \\boxed{{{2 * i}}}."] for i in range(5)]


def _adapter():
    tok = scoring_tokenizer()
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                                   pad_token_id=tok.pad_token_id)
    head = build_head_model(transformers.Qwen2Model(cfg), "qwen_prm").eval()
    return StepHeadAdapter(head, tok, step_format=StepFormat("<extra_0>", COT_SYSTEM_PROMPT, True))


def test_scoring_logs_progress_per_batch_without_changing_scores(caplog, monkeypatch):
    adapter = _adapter()
    quiet = score_responses(adapter, QUESTIONS, STEPS, batch_size=2)
    monkeypatch.setattr(progress, "EVERY_S", 0.0)  # a line after every forward pass
    with caplog.at_level(logging.INFO, logger="prm_lessons.scoring.batch"):
        logged = score_responses(adapter, QUESTIONS, STEPS, batch_size=2)
    assert logged == quiet
    lines = [r.getMessage() for r in caplog.records if r.name == "prm_lessons.scoring.batch"]
    assert [ln.split(" (")[0] for ln in lines] == ["scored: 2/5 inputs", "scored: 4/5 inputs", "scored: 5/5 inputs"]
    assert all("inputs/s" in ln for ln in lines)
