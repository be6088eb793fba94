"""What `snakemake --profile slurm --configfile config/paper.yaml` would submit: every multi-GPU job asks
for one node, vLLM jobs get CPUs for their processes, retries get more time, memory fits a GPU node,
and the Hub models are downloaded by a local rule that every GPU job depends on."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
NODE_MEM_MB = 480_000  # what a node with 512 GB of RAM can grant (the OS keeps some)
PER_GPU_MB = 128_000  # its share per GPU on a 4-GPU node


def dry_run_jobs(*args: str) -> list[dict]:
    """Jobs of a dry run as dicts: rule, input, output, threads, resources (parsed from the plan)."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--cores", "64", *args],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", proc.stdout):
        m = re.match(r"(?:local)?rule (\w+):\n", block)
        if not m:
            continue
        job = {"rule": m.group(1), "threads": 1, "resources": {}, "input": [], "output": []}
        for line in block.splitlines()[1:]:
            key, _, value = line.strip().partition(": ")
            if key in ("input", "output"):
                job[key] = [v.strip() for v in value.split(",")]
            elif key == "threads":
                job["threads"] = int(value)
            elif key == "resources":
                for item in value.split(", "):
                    k, _, v = item.partition("=")
                    job["resources"][k] = int(v) if v.isdigit() else v
        jobs.append(job)
    return jobs


@pytest.fixture(scope="module")
def paper_jobs():
    return dry_run_jobs("--profile", "slurm", "--configfile", "config/paper.yaml")


def gpus(job):
    return int(job["resources"].get("gpu", 0))


def test_every_multi_gpu_job_asks_for_one_node(paper_jobs):
    multi = [j for j in paper_jobs if gpus(j) > 1]
    assert {j["rule"] for j in multi} >= {"judge", "train_prm", "critic_processbench", "score_samples",
                                          "score_processbench"}
    bad = sorted({j["rule"] for j in multi if j["resources"].get("nodes") != 1})
    assert not bad, f"multi-GPU jobs without nodes=1: {bad}"
    assert all(j["resources"].get("nodes") == 1 for j in paper_jobs if gpus(j) >= 1)


def test_vllm_jobs_get_cpus_for_engine_workers_and_grading(paper_jobs):
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    pool = paper["grading"]["workers"]
    by_rule = {}
    for j in paper_jobs:
        by_rule.setdefault(j["rule"], j)
    # the rule's process + vLLM's engine core + one worker per GPU (+ the grading pool where the job grades:
    # MC grades its completions; policy samples are graded by the local grade_samples)
    assert by_rule["sample"]["threads"] == 2 + gpus(by_rule["sample"])
    assert by_rule["grade_samples"]["threads"] == pool
    assert by_rule["mc"]["threads"] == 2 + gpus(by_rule["mc"]) + pool
    assert by_rule["judge"]["threads"] == 2 + 4
    assert by_rule["critic_processbench"]["threads"] == 2 + 4


def test_memory_fits_a_gpu_node(paper_jobs):
    # at most a 512 GB node's usable memory in all, and at most its per-GPU share (4 GPUs) per GPU
    too_big = sorted({(j["rule"], j["resources"]["mem_mb"]) for j in paper_jobs
                      if j["resources"].get("mem_mb", 0) > min(NODE_MEM_MB, PER_GPU_MB * max(1, gpus(j)))})
    assert not too_big, f"more host memory than a standard GPU node grants: {too_big}"


def test_runtime_grows_with_the_attempt():
    """Resource callables get the attempt number: a retry (retries: 1 in the slurm profile) asks for
    more time. Read from the rules as Snakemake evaluates them."""
    from conftest import parsed_workflow

    with parsed_workflow(["config/paper.yaml"]) as workflow:
        for rule in ("sample", "mc", "judge", "score_samples", "score_processbench", "critic_processbench",
                     "step_features", "train_prm"):
            runtime = workflow.get_rule(rule).resources["runtime"]
            assert runtime.is_evaluable(), f"{rule}: runtime is a constant"
            wc = _Wc(prm="qwen25_math_prm_72b", judge="qwen25_72b_instruct", dataset="math")
            first, second = (runtime.evaluate(wc, attempt=a).value for a in (1, 2))
            assert second == 2 * first > 0, rule


class _Wc(dict):
    __getattr__ = dict.__getitem__


def test_models_are_downloaded_by_a_local_rule_before_gpu_jobs(paper_jobs):
    downloads = {o for j in paper_jobs if j["rule"] == "download_model" for o in j["output"]}
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    hub_models = {n for n, e in paper["models"].items() if e["source"] == "hub"}
    assert downloads == {f"resources/hub/{n}" for n in hub_models}
    for j in paper_jobs:
        if gpus(j) == 0:
            continue
        models = [i for i in j["input"] if i.startswith("resources/hub/")]
        trained = [i for i in j["input"] if i.startswith("results/prms/")]
        assert models or trained, f"{j['rule']} loads no downloaded model: {j['input']}"
        assert set(models) <= downloads
    # local: it runs on the submit host (network), never as a SLURM job
    smk = (ROOT / "workflow/rules/models.smk").read_text()
    block = smk.split("rule download_model:")[1].split("\nrule ")[0]
    assert "localrule: True" in block
