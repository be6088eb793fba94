"""The paper plan's shard layout (issue "paper path survives its first hour", item 2): greedy search runs as
(PRM, shard) jobs plus a local merge per PRM, sampling jobs follow each set's size, and no search or
sampling job asks SLURM for more than cluster.max_runtime, even on its retry. One dry run of
config/paper.yaml for the jobs; the rules' runtime callables are evaluated as Snakemake does."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from prm_lessons import plan

ROOT = Path(__file__).resolve().parents[2]
PAPER = yaml.safe_load((ROOT / "config/paper.yaml").read_text())


class _Wc(dict):
    __getattr__ = dict.__getitem__


@pytest.fixture(scope="module")
def paper_jobs() -> list[dict]:
    """rule, wildcards, input, output and resources of every job of the paper plan's dry run."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", "--cores", "64", "--configfile",
                           "config/paper.yaml"], cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", proc.stdout):
        m = re.match(r"(?:local)?rule (\w+):\n", block)
        if not m:
            continue
        job = {"rule": m.group(1), "wildcards": {}, "input": [], "output": [], "resources": {}}
        for line in block.splitlines()[1:]:
            key, _, value = line.strip().partition(": ")
            if key in ("input", "output"):
                job[key] = [v.strip() for v in value.split(",")]
            elif key in ("wildcards", "resources"):
                job[key] = dict(item.partition("=")[::2] for item in value.split(", "))
        jobs.append(job)
    return jobs


def test_search_runs_as_shard_jobs_plus_one_merge_per_prm(paper_jobs):
    n = PAPER["search"]["shards"]
    assert n > 1
    benches = PAPER["search"]["benchmarks"]
    searches = [j for j in paper_jobs if j["rule"] == "search_greedy"]
    merges = {j["wildcards"]["prm"]: j for j in paper_jobs if j["rule"] == "merge_search"}
    assert set(merges) == set(PAPER["search"]["prms"])
    for prm, merge in merges.items():
        mine = [j for j in searches if j["wildcards"]["prm"] == prm]
        assert sorted(int(j["wildcards"]["shard"]) for j in mine) == list(range(n))
        assert {j["wildcards"]["nshards"] for j in mine} == {str(n)}
        shard_files = {o for j in mine for o in j["output"]}
        assert shard_files == {f"results/search/{prm}/{b}/shard{i}of{n}.parquet" for b in benches for i in range(n)}
        assert shard_files <= set(merge["input"])
        # the merge writes exactly the files the unsharded job wrote, which search_table reads
        assert merge["output"] == [f"results/search/{prm}/{b}.parquet" for b in benches]
    table = next(j for j in paper_jobs if j["rule"] == "search_table")
    assert {o for m in merges.values() for o in m["output"]} <= set(table["input"])


def test_small_sets_get_few_sampling_jobs(paper_jobs):
    per_set = Counter((j["wildcards"].get("policy_dir", ""), j["wildcards"]["dataset"])
                      for j in paper_jobs if j["rule"] == "sample")
    big = "policies/qwen25_math_72b_instruct/"
    assert per_set[("", "aime24")] == 1  # 30 problems: one start of the policy, not 16
    assert per_set[(big, "cn_middle_school24")] == 1 and per_set[(big, "gaokao_math_cloze")] == 1
    assert per_set[(big, "math")] == 10  # 5,000 problems at 500 a job
    assert per_set[("", "train")] == 15 <= PAPER["sampling"]["shards"]  # 7,500 problems (MATH train)
    assert sum(v for (p, _), v in per_set.items() if p == big) <= 40  # was 11 sets x 16 = 176 four-GPU jobs
    for (pdir, dataset), count in per_set.items():
        policy = plan.policy_of_dir(PAPER, pdir)
        assert count == plan.sample_shard_count(PAPER, dataset, policy), (pdir, dataset)
    # the 72B judge's label jobs likewise (judge.problems_per_shard)
    judged = Counter(j["wildcards"]["dataset"] for j in paper_jobs if j["rule"] == "judge")
    assert judged["omnimath"] == 1 and judged["math"] == 10 and sum(judged.values()) < 5 * PAPER["judge"]["shards"]


def test_no_search_or_sampling_job_asks_for_more_than_max_runtime_on_its_retry(paper_jobs):
    from conftest import parsed_workflow

    cap = (PAPER.get("cluster") or {}).get("max_runtime", 1440)  # the schema default when unset
    with parsed_workflow(["config/paper.yaml"]) as wf:
        runtime = {r: wf.get_rule(r).resources["runtime"] for r in ("search_greedy", "sample")}
        asked = {}
        for j in paper_jobs:
            if j["rule"] in runtime:
                first, second = (runtime[j["rule"]].evaluate(_Wc(j["wildcards"]), attempt=a).value for a in (1, 2))
                assert first == int(j["resources"]["runtime"])  # the callable is what the dry run asked
                asked[(j["rule"], j["wildcards"].get("prm"))] = second
                assert second <= cap, (j["rule"], j["wildcards"], second)
    # the PRM-72B shards (est. 20-35 h over 8 shards) get more time than the 7B PRMs' shards, both retried
    assert asked[("search_greedy", "qwen25_math_prm_72b")] > asked[("search_greedy", "qwen25_math_prm_7b")]
