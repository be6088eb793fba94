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

ROOT = Path(__file__).resolve().parents[2]
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


def default_set_resources() -> dict:
    """profiles/default's `set-resources`, with its commented site-slot template uncommented (as a site
    would): every request a correct submission needs is the rules' own, so the live profile sets none."""
    text = (PROFILES / "default" / "profile.yaml").read_text()
    live = (yaml.safe_load(text) or {}).get("set-resources") or {}
    tail = text[text.index("# set-resources:"):]
    template = yaml.safe_load("\n".join(re.sub(r"^(\s*)# ?", r"\1", line) for line in tail.splitlines()))
    return {**template["set-resources"], **live}


def test_default_profile_covers_gpu_rules():
    rs = rules()
    set_res = default_set_resources()
    assert {"train_prm", "sample", "judge"} <= set(set_res)
    assert set(set_res) <= set(rs), f"unknown rules in profiles/default: {sorted(set(set_res) - set(rs))}"
    gpu_rules = {n for n, body in rs.items() if re.search(r"^\s+gpu\s*=", body, re.M)}
    assert {"train_prm", "sample"} <= gpu_rules, gpu_rules
    # GPU rules carry mem_mb/runtime themselves (they follow the config: GPUs, attempt; train_prm: config
    # `training`) and ask for one node, so a site's own workflow profile (or none) cannot lose it
    for name in gpu_rules:
        body = rs[name]
        assert re.search(r"^\s+mem_mb\s*=", body, re.M) and re.search(r"^\s+runtime\s*=", body, re.M), name
        assert re.search(r"^\s+nodes\s*=\s*1,", body, re.M), name
    for name, res in set_res.items():
        res = res or {}
        assert "gpu" not in res, f"{name}: the gpu count comes from config (tensor_parallel_size, training.gpus)"
        assert "nodes" not in res and "slurm_extra" not in res, f"{name}: the rule's own request"


def test_local_profile_caps_gpu_jobs():
    p = load("local")
    assert int(p["resources"]["gpu"]) >= 1 and "cores" in p


class _Res(dict):
    """A job's resources as the SLURM plugin reads them (.get and attribute access)."""
    __getattr__ = dict.__getitem__


def train_sbatch(configfiles, attempt: int = 1) -> str:
    """The sbatch command snakemake-executor-plugin-slurm 2.8.0 builds for a train_prm job under
    `configfiles`, from the rule's resources as Snakemake evaluates them (no profile: the rule alone)."""
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string
    from snakemake_executor_plugin_slurm.validation import validate_slurm_extra

    from conftest import parsed_workflow

    with parsed_workflow(configfiles) as wf:
        rule = wf.get_rule("train_prm")
        res = _Res()
        for name, r in rule.resources.items():
            if not name.startswith("_") and name != "tmpdir":
                res[name] = r.evaluate({}, attempt=attempt).value if r.is_evaluable() else r.value
        threads = rule.resources["_cores"].value
    job = SimpleNamespace(resources=res, threads=threads, name="train_prm")
    validate_slurm_extra(job)  # what the plugin checks before it submits
    params = {"run_uuid": "u", "slurm_logfile": "log", "comment_str": "rule_train_prm", "account": "-A acct",
              "partition": "-p gpu", "workdir": "/w"}
    return get_submit_command(job, params) + set_gres_string(job)


def test_paper_training_sbatch_has_one_node_and_the_jit_grace():
    """What sbatch receives for train_prm under config/paper.yaml: 8 GPUs on one node, and SIGTERM a grace
    before the time limit long enough for one more step plus a ZeRO-3 checkpoint (transformers: "grace >=
    longest iteration + checkpoint save time"), within the first attempt's runtime."""
    import shlex

    from prm_lessons import plan
    from prm_lessons.config import load_config
    from prm_lessons.training import settings as train_settings

    argv = shlex.split(train_sbatch(["config/paper.yaml"]))
    assert "--nodes=1" in argv and "--gpus=8" in argv
    signal = [a for a in argv if a.startswith("--signal=")]
    assert len(signal) == 1 and re.fullmatch(r"--signal=TERM@\d+", signal[0]), argv
    grace = int(signal[0].split("@")[1])
    train = load_config(ROOT / "config/paper.yaml")["training"]
    save_s = plan.checkpoint_gb(train) / train["checkpoint_write_gbps"]
    assert plan.checkpoint_gb(train) > 100  # a 7.6B base: weights + fp32 master + Adam states, ~122 GB
    assert save_s + plan.JIT_KILL_WAIT_S < grace <= 60 * int(argv[argv.index("-t") + 1]) // 2
    # the grace is for transformers' JIT checkpoint, which the training code switches on from these keys
    s = train_settings.settings_from(train)
    assert s["jit_checkpoint"] and train_settings.save_steps(s)


@pytest.mark.parametrize("configfiles", [[], ["config/paper.yaml", "config/rehearsal.yaml"]])
def test_cpu_training_gets_no_signal(configfiles):
    """The embedded default and the rehearsal train on CPU: no --signal (nor GPUs) in their sbatch."""
    cmd = train_sbatch(configfiles)
    assert "--signal" not in cmd and "--gpus" not in cmd and "--nodes=1" in cmd


def test_jit_grace_follows_checkpoint_size_bandwidth_and_runtime():
    from prm_lessons import plan
    from prm_lessons.config import load_config

    cfg = load_config(ROOT / "config/paper.yaml")
    train = cfg["training"]
    base = plan.jit_grace_seconds(train)
    assert plan.jit_grace_seconds({**train, "checkpoint_write_gbps": 0.25}) > base + 300  # 4x slower writes
    assert plan.jit_grace_seconds({**train, "base_params_b": 1.5}) < base
    assert plan.training_slurm_extra({**cfg, "training": {**train, "jit_checkpoint": False}}) == ""
    assert plan.training_slurm_extra({**cfg, "training": {**train, "save_steps": 0}}) == ""
    with pytest.raises(ValueError, match="training.base_params_b"):
        plan.training_slurm_extra({**cfg, "training": {**train, "base_params_b": None}})
    with pytest.raises(ValueError, match="training.runtime"):
        plan.training_slurm_extra({**cfg, "training": {**train, "runtime": 5}})


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


def test_every_run_prints_a_failed_jobs_log():
    """show-failed-logs in the workflow profile, which applies to make run and to --profile slurm / local:
    a failed job's log is printed on the console, not only its path."""
    assert load("default").get("show-failed-logs") is True
