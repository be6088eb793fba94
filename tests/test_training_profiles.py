"""Snakemake profiles: `snakemake --profile slurm` typed at the repository root works, the profiles do not
shadow each other (keys replace, never merge, and profiles/default is applied to every run), GPU rules
get their resources, and no profile sets `tasks` (which would start multi-GPU jobs once per GPU)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROFILES = ROOT / "profiles"


def load(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "profile.yaml").read_text()) or {}


def rules() -> dict[str, str]:
    """rule name -> its body text, from workflow/rules/*.smk."""
    out = {}
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        parts = re.split(r"(?m)^(?:rule|checkpoint) (\w+):", smk.read_text())
        for name, body in zip(parts[1::2], parts[2::2]):
            out[name] = body
    return out


@pytest.mark.parametrize("name", ["default", "slurm", "local"])
def test_one_profile_file_per_directory(name):
    d = PROFILES / name
    assert (d / "profile.yaml").exists()
    # both have the same rank in Snakemake's lookup: which one wins would depend on listing order
    assert not (d / "config.yaml").exists(), f"profiles/{name}: both profile.yaml and config.yaml"


def test_root_slurm_is_the_cluster_profile():
    """`--profile NAME` is looked up in the working directory, not in profiles/."""
    root_slurm = ROOT / "slurm"
    assert root_slurm.is_dir() and (root_slurm / "profile.yaml").exists()
    assert (root_slurm / "profile.yaml").resolve() == (PROFILES / "slurm" / "profile.yaml").resolve()


@pytest.mark.parametrize("other", ["slurm", "local"])
def test_default_profile_shadows_no_key(other):
    shared = set(load("default")) & set(load(other))
    assert not shared, f"profiles/default would silently replace profiles/{other} keys {sorted(shared)}"


def test_slurm_profile_site_settings():
    p = load("slurm")
    assert p["executor"] == "slurm" and int(p["jobs"]) >= 1
    dr = p["default-resources"]
    assert {"slurm_account", "slurm_partition", "runtime", "mem_mb"} <= set(dr)
    # the site's values (shipped as the documented placeholder CHANGE_ME) are set, as strings for sbatch
    assert all(isinstance(dr[k], str) and dr[k].strip() for k in ("slurm_account", "slurm_partition"))
    assert int(p["latency-wait"]) >= 30
    assert "set-resources" not in p  # would be replaced wholesale by profiles/default


def test_no_profile_sets_tasks():
    for name in ("default", "slurm", "local"):
        p = load(name)
        maps = [p.get("default-resources") or {}, p.get("resources") or {}]
        maps += list((p.get("set-resources") or {}).values())
        for m in maps:
            assert not {"tasks", "tasks_per_gpu", "ntasks"} & set(m), f"profiles/{name}: {m}"


def test_default_profile_covers_gpu_rules():
    rs = rules()
    set_res = load("default")["set-resources"]
    assert set(set_res) <= set(rs), f"unknown rules in profiles/default: {sorted(set(set_res) - set(rs))}"
    gpu_rules = {n for n, body in rs.items() if re.search(r"^\s+gpu\s*=", body, re.M)}
    assert {"train_prm", "sample"} <= gpu_rules, gpu_rules
    # GPU rules carry mem_mb/runtime themselves (they follow the config: GPUs, attempt; train_prm: config
    # `training`) and ask for one node (train_prm through profiles/default)
    for name in gpu_rules:
        body = rs[name]
        assert re.search(r"^\s+mem_mb\s*=", body, re.M) and re.search(r"^\s+runtime\s*=", body, re.M), name
        assert re.search(r"^\s+nodes\s*=\s*1", body, re.M) or set_res.get(name, {}).get("nodes") == 1, name
    for name, res in set_res.items():
        assert "gpu" not in res, f"{name}: the gpu count comes from config (tensor_parallel_size, training.gpus)"


def test_local_profile_caps_gpu_jobs():
    p = load("local")
    assert int(p["resources"]["gpu"]) >= 1 and "cores" in p


def _repo_copy(tmp_path: Path) -> Path:
    """The tracked layout of the repo (no venv, results, .snakemake): `snakemake` is run from its root."""
    dst = tmp_path / "repo"
    shutil.copytree(ROOT, dst, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", ".snakemake", "results", "resources", "logs", "figures", "__pycache__", ".pytest_cache",
        "*.pdf"))
    return dst


def _dry_run(cwd: Path, *extra: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--profile", "slurm", *extra], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out


def _train_jobs(out: str) -> list[str]:
    return re.findall(r"rule train_prm:.*?resources: ([^\n]*)", out, re.S)


def _resources(out: str, rule: str) -> list[dict[str, str]]:
    """The resources of each `rule` job of a dry run, as a dict per job."""
    lines = re.findall(rf"rule {rule}:.*?resources: ([^\n]*)", out, re.S)
    return [dict(item.split("=", 1) for item in line.split(", ")) for line in lines]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return _repo_copy(tmp_path_factory.mktemp("profiles"))


def test_dry_run_profile_slurm_from_repo_root(repo):
    out = _dry_run(repo)
    assert "Using profiles slurm and workflow specific profile profiles/default" in out
    jobs = _train_jobs(out)
    assert jobs, out[-2000:]
    site = yaml.safe_load((repo / "profiles/slurm/profile.yaml").read_text())["default-resources"]
    assert all(f"slurm_account={site['slurm_account']}" in j and "gpu=0" in j for j in jobs)  # embedded default: CPU


def test_dry_run_profile_slurm_paper_scale(repo):
    out = _dry_run(repo, "--configfile", "config/paper.yaml")
    jobs = _train_jobs(out)
    assert jobs and all("gpu=8" in j and "nodes=1" in j for j in jobs)
    sample = re.findall(r"rule sample:.*?resources: ([^\n]*)", out, re.S)
    # the 7B policy samples on 1 GPU, the 72B policy (Tables 9, 12, 14, 16) on 4
    assert sample and all(re.search(r"gpu=[14]\b", j) for j in sample)
    assert any("gpu=1," in j for j in sample) and any("gpu=4," in j for j in sample)
    # model jobs get one per-GPU share of host memory per GPU (more GPUs, more memory), above the CPU default
    model_jobs = [j for rule in ("sample", "mc", "judge", "critic_processbench", "score_samples", "score_processbench")
                  for j in _resources(out, rule)]
    shares = {int(j["mem_mb"]) / int(j["gpu"]) for j in model_jobs}
    assert len({j["gpu"] for j in model_jobs}) > 1 and len(shares) == 1, model_jobs
    assert shares.pop() > int(load("slurm")["default-resources"]["mem_mb"])
