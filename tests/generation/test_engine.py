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


# -- sampling.seed_mode ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    """A real transformers engine on a random-weight 2-layer model (no download)."""
    pytest.importorskip("torch")
    from _prm_tiny import tiny_base
    from prm_lessons.generation.engine import HFEngine

    path = tiny_base(tmp_path_factory.mktemp("tiny"), arch="qwen2")
    return lambda mode: HFEngine(str(path), {"dtype": "float32", "max_model_len": 256}, batch_size=4, seed_mode=mode)


PROMPTS = ["Step one is right.", "Step two is wrong", "and then", "so the answer", "is right", "wrong wrong"]


def test_per_request_seeds_give_a_completion_whatever_shares_its_call(tiny_hf):
    """per_request: a request's completion depends only on its prompt and seed, not on the batch around it."""
    eng = tiny_hf("per_request")
    spec = SamplingSpec(n=1, temperature=1.0, top_p=1.0, max_tokens=12, seed=None)
    alone = eng.generate([PROMPTS[1]], spec, [77])[0][0].text
    crowd = eng.generate(PROMPTS, spec, [5, 77, 6, 7, 8, 9])[1][0].text
    other = eng.generate(PROMPTS[:3][::-1], spec, [1, 2, 77])[2][0].text
    assert alone == crowd == other
    assert eng.generate([PROMPTS[1]], spec, [78])[0][0].text != alone  # the seed does decide it


def test_per_batch_draws_one_seed_per_engine_call(tiny_hf, monkeypatch):
    """per_batch: the transformers engine samples the call in batches seeded from ONE seed of the call
    (derived from the requests' seeds), not one generator per request; the same call draws the same tokens."""
    from prm_lessons.generation.engine import HFEngine, batch_seed, derive_seed

    eng = tiny_hf("per_batch")
    seen = []
    run = HFEngine._run
    monkeypatch.setattr(HFEngine, "_run",
                        lambda self, p, spec, seed: seen.append((len(p), seed)) or run(self, p, spec, seed))
    spec = SamplingSpec(n=1, temperature=1.0, top_p=1.0, max_tokens=8, seed=None)
    seeds = [5, 77, 6, 7, 8, 9]
    first = eng.generate(PROMPTS, spec, seeds)
    base = batch_seed(None, seeds, len(PROMPTS))
    assert seen == [(4, derive_seed(base, 0)), (2, derive_seed(base, 4))]  # batch_size 4: two batches, one base
    assert [c[0].text for c in eng.generate(PROMPTS, spec, seeds)] == [c[0].text for c in first]

    seen.clear()
    tiny_hf("per_request").generate(PROMPTS, spec, seeds)  # the contrast: each request on its own seed
    assert seen == [(1, s) for s in seeds]


def test_seed_modes_are_checked():
    from prm_lessons.generation.engine import check_seed_mode

    assert check_seed_mode("per_batch") == "per_batch"
    with pytest.raises(ValueError, match="seed_mode"):
        check_seed_mode("per_prompt")


def test_vllm_per_batch_sends_unseeded_requests_and_reseeds_once_per_call(monkeypatch):
    """vLLM per_batch: every SamplingParams unseeded (vLLM's batched sampler path), one reseed RPC per
    generate call through the worker extension (by method name: nothing pickled), the LLM started with
    that extension; per_request keeps each request's seed and starts no extension."""
    import types

    pytest.importorskip("vllm")
    from prm_lessons.generation import engine as generation
    from prm_lessons.generation import vllm_seed

    made = []

    class FakeLLM:
        def __init__(self, **kw):
            self.kw, self.rpcs, self.seeds = kw, [], []
            made.append(self)

        def get_tokenizer(self):
            return None

        def collective_rpc(self, method, timeout=None, args=(), kwargs=None):
            self.rpcs.append((method, args))
            return [None]

        def generate(self, prompts, params, use_tqdm=False, **kw):
            self.seeds.append([p.seed for p in params])
            return [type("R", (), {"outputs": []})() for _ in prompts]

    import vllm

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=FakeLLM, SamplingParams=vllm.SamplingParams))
    monkeypatch.setattr(generation, "require_gpu_vllm", lambda what: None)
    monkeypatch.setattr(generation, "vllm_cpu_setup", lambda entry: False)
    spec = SamplingSpec(n=1, seed=None)
    batch = generation.VLLMEngine("m", {"dtype": "float32"}, seed_mode="per_batch")
    batch.generate(["a", "b", "c"], spec, seeds=[7, 8, 9])
    batch.generate(["a", "b"], spec, seeds=[7, 8])
    llm = made[-1]
    assert llm.kw["worker_extension_cls"] == vllm_seed.EXTENSION
    assert llm.seeds == [[None, None, None], [None, None]]
    assert llm.rpcs == [(vllm_seed.METHOD, (generation.batch_seed(None, [7, 8, 9], 3),)),
                        (vllm_seed.METHOD, (generation.batch_seed(None, [7, 8], 2),))]
    assert hasattr(vllm_seed.ReseedExtension, vllm_seed.METHOD)

    req = generation.VLLMEngine("m", {"dtype": "float32"})
    req.generate(["a", "b", "c"], spec, seeds=[7, 8, 9])
    assert "worker_extension_cls" not in made[-1].kw
    assert made[-1].seeds == [[7, 8, 9]] and made[-1].rpcs == []
