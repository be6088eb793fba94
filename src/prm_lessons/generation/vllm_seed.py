"""One seed per vLLM engine call (sampling.seed_mode per_batch).

A request with its own seed makes vLLM 0.32 keep a torch.Generator for it; a step whose batch holds any
such request takes the native top-k/top-p path (no FlashInfer sampler) and draws each seeded row's noise
in a Python loop (vllm.v1.sample.ops.topk_topp_sampler.random_sample). per_batch sends the requests
unseeded and reseeds the workers' default generators once before each call instead, so a rerun of the same
batch draws the same tokens. The workers live in vLLM's engine-core process on the GPU path, so the reseed
goes through vLLM's worker extension (``LLM(worker_extension_cls=EXTENSION)``) and ``collective_rpc`` by
method name: no pickled callables (which vLLM accepts only with VLLM_ALLOW_INSECURE_SERIALIZATION).
"""
from __future__ import annotations

EXTENSION = "prm_lessons.generation.vllm_seed.ReseedExtension"
METHOD = "prm_lessons_reseed"


class ReseedExtension:
    """Mixed into vLLM's worker class (``worker_extension_cls``): reseeds that worker's generators."""

    def prm_lessons_reseed(self, seed: int) -> None:
        from vllm.utils.torch_utils import set_random_seed  # lazy: runs inside vLLM's worker

        set_random_seed(int(seed))


def reseed(llm, seed: int | None) -> None:
    """Reseed every worker of `llm` (a vLLM LLM started with ``worker_extension_cls=EXTENSION``)."""
    if seed is not None:
        llm.collective_rpc(METHOD, args=(int(seed),))
