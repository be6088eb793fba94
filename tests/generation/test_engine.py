"""prm_lessons.generation.engine: long engine calls log progress in chunks without changing the outputs."""
from __future__ import annotations

import logging
import sys

import pytest

from fakes import SeedEngine
from prm_lessons.generation.engine import SamplingSpec


def test_generate_logged_chunks_without_changing_outputs(caplog):
    prompts = [f"p{i}" for i in range(10)]
    seeds = list(range(100, 110))
    spec = SamplingSpec(n=1, seed=None)
    whole = SeedEngine().generate(prompts, spec, seeds)
    eng = SeedEngine()
    with caplog.at_level(logging.INFO, logger="prm_lessons.generation.engine"):
        chunked = eng.generate_logged(prompts, spec, seeds, "judged", chunk=4)
    assert [[c.text for c in o] for o in chunked] == [[c.text for c in o] for o in whole]
    lines = [r.getMessage() for r in caplog.records if "judged" in r.getMessage()]
    assert [ln.split(" done")[0] for ln in lines] == ["judged: 4/10", "judged: 8/10", "judged: 10/10"]


def test_one_vllm_call_logs_progress_as_its_requests_finish(caplog, monkeypatch):
    """VLLMEngine.generate makes one LLM.generate call (same requests, seeds and order) and hands vLLM a
    progress hook: the fake LLM drives it as vLLM 0.32 does, and the job log gets done / total lines."""
    import pytest

    pytest.importorskip("vllm")  # SamplingParams are vLLM's
    from prm_lessons.generation import engine as generation
    from prm_lessons.generation.engine import Engine, VLLMEngine
    from prm_lessons.jobs import progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)  # a line per finished request
    calls = []

    class FakeLLM:
        def generate(self, prompts, params, use_tqdm=False, **kw):
            calls.append([p.seed for p in params])
            bar = use_tqdm(total=len(prompts), desc="Processed prompts", dynamic_ncols=True, postfix="")
            for _ in prompts:
                bar.update(1)
            bar.close()
            return [type("R", (), {"outputs": []})() for _ in prompts]

    eng = object.__new__(VLLMEngine)
    Engine.__init__(eng)
    eng.llm = FakeLLM()
    with caplog.at_level(logging.INFO, logger="prm_lessons.generation.engine"):
        eng.generate(["a", "b", "c"], SamplingSpec(n=1, seed=None), seeds=[7, 8, 9])
    assert calls == [[7, 8, 9]]  # one call, the given seeds in order
    lines = [r.getMessage() for r in caplog.records if r.name == generation.log.name]
    assert [ln.split(" (")[0] for ln in lines] == [f"generated: {i}/3 requests" for i in (1, 2, 3)]


@pytest.mark.parametrize("entry, expected", [({}, None), ({"block_size": 32}, 32), ({"block_size": None}, None)])
def test_vllm_engine_passes_the_model_entrys_block_size(monkeypatch, entry, expected):
    """models.<name>.block_size reaches vLLM's LLM (the prefix cache reuses whole blocks: MC's short prompts
    repeated as K requests hit it only with blocks smaller than the prompt); unset leaves vLLM's default."""
    import types

    from prm_lessons.generation import engine as generation

    seen = {}

    class FakeLLM:
        def __init__(self, **kw):
            seen.update(kw)

        def get_tokenizer(self):
            return None

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=FakeLLM))
    monkeypatch.setattr(generation, "require_gpu_vllm", lambda what: None)
    monkeypatch.setattr(generation, "vllm_cpu_setup", lambda entry: True)
    generation.VLLMEngine("m", {"dtype": "float32", **entry})
    assert seen.get("block_size") == expected
    assert seen["enable_prefix_caching"] is True
