"""The search's incremental candidate scorer (prm_lessons.evaluation.search_scorers) against full re-scoring, on tiny
real models of three adapter kinds."""
from __future__ import annotations

import math

import numpy as np
import pytest


def _tiny_adapters():
    import torch
    import transformers

    from conftest import tiny_tokenizer
    from prm_lessons.models import prm
    from prm_lessons.scoring.adapters import SkyworkAdapter, StepHeadAdapter, TrainedAdapter
    from prm_lessons.scoring.heads import build_head_model
    from prm_lessons.steps import COT_SYSTEM_PROMPT, StepFormat

    tok = tiny_tokenizer(True)
    torch.manual_seed(0)
    cfg = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
               pad_token_id=tok.pad_token_id)
    trained = prm.ProcessRewardModel(transformers.LlamaModel(transformers.LlamaConfig(**cfg)), prm.StepHead(32)).eval()
    released = build_head_model(transformers.Qwen2Model(transformers.Qwen2Config(**cfg)), "qwen_prm").eval()
    with torch.no_grad():  # heads with visible spread
        for m in (trained.head, released.score):
            for p in m.parameters():
                if p.dim() == 2 and p.shape[0] <= 2:
                    p.mul_(20 if m is trained.head else 3)
    skywork = build_head_model(transformers.Qwen2Model(transformers.Qwen2Config(**cfg)), "skywork").eval()
    with torch.no_grad():
        skywork.v_head.summary.weight.mul_(3)
    fmt = StepFormat("<extra_0>", COT_SYSTEM_PROMPT, True)
    return tok, {"trained": TrainedAdapter(trained, tok, step_format=fmt),
                 "qwen_prm": StepHeadAdapter(released, tok, step_format=fmt),
                 "skywork": SkyworkAdapter(skywork, tok)}


@pytest.mark.parametrize("kind", ["trained", "qwen_prm", "skywork"])
def test_incremental_scores_equal_full_rescoring(kind):
    from prm_lessons.evaluation.search_scorers import FullRescoringScorer, IncrementalScorer, candidate_scorer

    tok, adapters = _tiny_adapters()
    ad = adapters[kind]
    full = FullRescoringScorer(ad)
    inc = candidate_scorer(ad, "auto")
    assert isinstance(inc, IncrementalScorer)
    q1, q2 = "What is 2 + 3?", "Add 7 and 8, then subtract 4."
    rounds = [
        [("a", q1, [], ["We add 2 and 3.", "2 + 3 = 5", "The answer is 6, this step is wrong."]),
         ("b", q2, [], ["7 + 8 = 15.", "x"])],
        # a kept candidate (cached rows reused), and for b two new steps never seen as candidates
        [("a", q1, ["2 + 3 = 5"], ["So the answer is \\boxed{5}.", "Hmm"]),
         ("b", q2, ["7 + 8 = 15.", "Then 15 - 4 = 11."], ["The answer is 11."])],
        [("a", q1, ["2 + 3 = 5", "Hmm"], ["Done."]),
         ("c", q1, ["unrelated"], ["a much longer candidate step with many words in it to pad the batch"])],
    ]
    seen = []
    for reqs in rounds:
        want, got = full.score(reqs), inc.score(reqs)
        assert [len(w) for w in want] == [len(g) for g in got]
        assert np.allclose(np.array(sum(got, [])), np.array(sum(want, [])), atol=1e-4)
        seen += sum(got, [])
    assert len(set(np.round(seen, 3))) > 4  # scores that differ: the comparison can fail
    assert inc.tokens_scored < full.tokens_scored
    assert set(inc.tokens_by_key) == {"a", "b", "c"}


def test_incremental_respects_max_length_and_falls_back_where_unsupported():
    from prm_lessons.evaluation.search_scorers import FullRescoringScorer, IncrementalScorer, candidate_scorer
    from prm_lessons.scoring.heads import RemoteOutputs

    tok, adapters = _tiny_adapters()
    ad = adapters["trained"]
    reqs = [("a", "What is 2 + 3?", ["2 + 3 = 5"], ["short", "a much longer candidate step " * 3])]
    ad.max_length = len(ad.encode(reqs[0][1], ["2 + 3 = 5", "short"]).input_ids)
    want = FullRescoringScorer(ad).score(reqs)
    got = IncrementalScorer(ad).score(reqs)
    assert math.isnan(want[0][1]) and math.isnan(got[0][1])
    assert got[0][0] == pytest.approx(want[0][0], abs=1e-4)

    class Remote:  # Hub code (trust_remote_code): no known cache support
        kind = "remote"

    ad.model = RemoteOutputs(Remote())
    assert isinstance(candidate_scorer(ad, "auto"), FullRescoringScorer)
    with pytest.raises(ValueError):
        IncrementalScorer(ad)
