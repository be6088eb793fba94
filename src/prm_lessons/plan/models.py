"""Plan stage: models and resources (model inputs, GPUs, host memory, threads and SLURM minutes of a job)."""
from __future__ import annotations

from ..config import model_entry, model_path


def model_input(config: dict, role_or_name: str) -> list[str]:
    """Input for rules that need a model: the directory rule embedded_model or download_model makes
    (so the download runs on the submit host before any GPU job); nothing for `source: local`."""
    entry = model_entry(config, role_or_name)
    return [model_path(config, role_or_name)] if entry["source"] in ("embedded", "hub") else []


def gpus(config: dict, role_or_name: str) -> int:
    """GPUs a model's jobs ask for: its `gpus` key, else its tensor-parallel size; none for the CPU-only
    embedded model."""
    entry = model_entry(config, role_or_name)
    if entry["source"] == "embedded":
        return 0
    return int(entry["gpus"]) if entry.get("gpus") is not None else int(entry.get("tensor_parallel_size", 1))


def mem_mb_for(n_gpus: int, per_gpu: int = 64000) -> int:
    """Host memory of a job on n GPUs: 64 GB per GPU (a 72B TP-4 job: 256 GB), within the per-GPU share
    of a standard 4- or 8-GPU node; a CPU-only job gets one share."""
    return per_gpu * max(1, int(n_gpus))


def runtime(config: dict, minutes: int, attempt: int) -> int:
    """SLURM minutes of a GPU job: `minutes` × the attempt (a job killed at its limit is resubmitted with
    more time), capped at cluster.max_runtime so no retry asks for more than the partition allows (sbatch
    would refuse it outright). Jobs whose work can exceed the cap are sharded instead."""
    return max(1, min(int(minutes) * max(1, int(attempt)), int(config["cluster"]["max_runtime"])))


def engine_threads(config: dict, role_or_name: str, pool: int = 0) -> int:
    """CPUs of a vLLM job (sbatch --cpus-per-task): the rule's process, vLLM's engine core, one worker
    per GPU, and `pool` grading processes. The embedded CPU model keeps 2 (the 2-core default)."""
    n = gpus(config, role_or_name)
    return 2 if n == 0 else 2 + n + int(pool)
