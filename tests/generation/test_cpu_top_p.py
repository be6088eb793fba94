"""prm_lessons.generation.cpu_top_p: vLLM's CPU top-p through a top-K selection keeps exactly the tokens vLLM's own
full-vocabulary sort keeps, falls back to vLLM's function where the nucleus may reach past the candidates
or top-k is asked, and is installed by the engine on the CPU build."""
import sys
import types

import pytest
import torch

from prm_lessons.generation import cpu_top_p

sampler = pytest.importorskip("vllm.v1.sample.ops.topk_topp_sampler")  # the CPU build is in requirements


def _vllm(logits, k, p):
    """vLLM's own function, also where an engine of this process installed ours over it."""
    fn = sampler.apply_top_k_top_p_pytorch
    return getattr(fn, "__wrapped__", fn)(logits.clone(), k, p, allow_cpu_sync=True)


@pytest.mark.parametrize("temperature", [0.3, 0.7, 1.0])
@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
def test_mask_keeps_the_tokens_vllms_sort_keeps(temperature, p):
    g = torch.Generator().manual_seed(int(temperature * 10 + p * 100))
    # peaked rows as a language model's are, over a 49,152-token vocabulary
    logits = torch.randn(16, 49152, generator=g) * 6.0 / temperature
    pt = torch.full((16,), p)
    mask = cpu_top_p.top_p_mask(logits, pt)
    assert mask is not None
    want = torch.isinf(_vllm(logits, None, pt))
    assert torch.equal(mask, want)
    assert (~mask).sum(dim=-1).min() >= 1  # the most probable token is always kept


def test_a_flat_row_falls_back_to_vllms_sort():
    logits = torch.zeros(2, 4096)  # uniform: the nucleus of p 0.8 holds 3,277 tokens, past the candidates
    assert cpu_top_p.top_p_mask(logits, torch.tensor([0.8, 0.8])) is None


def test_install_routes_top_p_only_and_is_idempotent(monkeypatch):
    calls = []

    def original(logits, k, p, allow_cpu_sync=False):
        calls.append((k is not None, p is not None))
        return logits

    monkeypatch.setattr(sampler, "apply_top_k_top_p_pytorch", original)
    assert cpu_top_p.install() and cpu_top_p.install()
    patched = sampler.apply_top_k_top_p_pytorch
    assert patched is not original and getattr(patched, "_prm_lessons_top_p")
    logits = torch.randn(3, 1000) * 8
    out = patched(logits.clone(), None, torch.full((3,), 0.8))
    assert calls == [] and torch.isinf(out).any()  # top-p alone: the selection, not vLLM's sort
    patched(logits.clone(), torch.full((3,), 5), torch.full((3,), 0.8))  # top-k with it: vLLM's own
    patched(torch.zeros(3, 1000), None, torch.full((3,), 0.8))  # a flat row: vLLM's own
    assert calls == [(True, True), (False, True)]


def test_the_cpu_engine_installs_it_and_a_gpu_engine_does_not(monkeypatch):
    from prm_lessons.generation import engine as generation

    installed = []

    class FakeLLM:
        def __init__(self, **kw):
            pass

        def get_tokenizer(self):
            return None

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=FakeLLM))
    monkeypatch.setattr(generation, "require_gpu_vllm", lambda what: None)
    monkeypatch.setattr(cpu_top_p, "install", lambda: installed.append(1) or True)
    for on_cpu in (True, False):
        monkeypatch.setattr(generation, "vllm_cpu_setup", lambda entry, c=on_cpu: c)
        generation.VLLMEngine("m", {"dtype": "float32"})
    assert installed == [1]
