"""prm_lessons.scoring.pooling: a vLLM scoring job is one LLM.encode call (vLLM batches and schedules every input),
and that call logs done / total, rate and ETA as its inputs finish, through vLLM's progress hook."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("vllm")  # PoolingParams and TokensPrompt are vLLM's

from prm_lessons.jobs import progress  # noqa: E402
from prm_lessons.scoring import pooling  # noqa: E402


def test_one_encode_call_logs_progress(caplog, monkeypatch):
    monkeypatch.setattr(progress, "EVERY_S", 0.0)  # a line per finished input
    calls = []

    class FakeLLM:
        def encode(self, prompts, params, pooling_task=None, use_tqdm=False):
            calls.append(len(prompts))
            bar = use_tqdm(total=len(prompts), desc="Processed prompts", dynamic_ncols=True, postfix="")
            for _ in prompts:
                bar.update(1)
            bar.close()
            return [SimpleNamespace(outputs=SimpleNamespace(data=torch.ones(len(p["prompt_token_ids"]), 1)))
                    for p in prompts]

    model = object.__new__(pooling.PoolingModel)
    model.llm, model.max_model_len, model.outcome, model.step_tag_id = FakeLLM(), 64, True, None
    encs = [SimpleNamespace(input_ids=[1, 2, 3]), SimpleNamespace(input_ids=[4, 5])]
    with caplog.at_level(logging.INFO, logger="prm_lessons.scoring.pooling"):
        values = model.values(encs)
    assert calls == [2] and [len(v) for v in values] == [3, 2]
    lines = [r.getMessage() for r in caplog.records if r.name == "prm_lessons.scoring.pooling"]
    assert [ln.split(" (")[0] for ln in lines] == ["scored: 1/2 inputs", "scored: 2/2 inputs"]
