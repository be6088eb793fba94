"""config/paper_3m.yaml's dry-run plan (the paper's §2.1 3M data: four data policies, Qwen2-Math-Instruct
and Qwen2.5-Math-Instruct at 7B and 72B, each MC-completed by the Qwen2.5-Math-Instruct of its size).
The overlay is a named run that reads the base run's results, so its DAG needs the base run done; the plan
is made from the two files merged as one standalone profile (the same config, writing results/)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import dag
from prm_lessons import plan
from prm_lessons.config import deep_update, load_config

ROOT = Path(__file__).resolve().parents[2]
FILES = (ROOT / "config/paper.yaml", ROOT / "config/paper_3m.yaml")
COMPLETER = {"qwen2_math_7b": "qwen25_math_7b_instruct", "qwen2_math_72b": "qwen25_math_72b_instruct",
             "qwen25_math_7b": "qwen25_math_7b_instruct", "qwen25_math_72b": "qwen25_math_72b_instruct"}


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    merged: dict = {}
    for f in FILES:
        deep_update(merged, yaml.safe_load(f.read_text()))
    merged["run"].pop("ablation")
    path = tmp_path_factory.mktemp("paper_3m") / "paper_3m_standalone.yaml"
    path.write_text(yaml.safe_dump(merged, sort_keys=False))
    return load_config(*FILES), dag.plan((str(path),))


def _model_dir(cfg: dict, name: str) -> str:
    return plan.model_input(cfg, name)[0]


def test_every_mixed_policy_samples_the_training_sets_with_its_own_model(mix):
    cfg, p = mix
    train = list(cfg["problems"])
    sampled = {}
    for job in p.of("sample"):
        if job.wildcards["dataset"] in train:
            pdir = job.wildcards["policy_dir"]
            assert pdir.startswith("data_policies/"), job.output   # never the primary's results/responses/
            name = pdir.split("/")[1]
            model = plan.data_policies(cfg)[name]["model"]
            assert _model_dir(cfg, model) in job.input, (name, job.input)
            sampled.setdefault(name, set()).add(job.wildcards["dataset"])
    assert sampled == {n: set(train) for n in COMPLETER}
    mixes = p.of("mix_responses")
    assert len(mixes) == len(train)
    for job in mixes:
        d = job.wildcards["dataset"]
        assert job.output == [f"results/responses/{d}.parquet"]
        assert [i for i in job.input if not i.startswith(".snakemake/")] == plan.mixed_responses(cfg, d)


def test_each_mc_shard_loads_its_policys_same_size_completer(mix):
    cfg, p = mix
    jobs = p.of("mc")
    per_set = {d: len(plan.label_shard_paths(cfg, "mc", d)) for d in cfg["problems"]}
    assert len(jobs) == sum(per_set.values()) and all(n % 4 == 0 for n in per_set.values())
    seen = set()
    for job in jobs:
        part = plan.mc_shard(cfg, int(job.wildcards["shard"]), int(job.wildcards["nshards"]))
        completer = COMPLETER[part["data_policy"]]
        assert _model_dir(cfg, completer) in job.input, job.output
        others = {_model_dir(cfg, c) for c in COMPLETER.values()} - {_model_dir(cfg, completer)}
        assert not others & set(job.input)
        assert job.resources["gpu"] == plan.gpus(cfg, completer)   # 4 for the 72B completer
        seen.add(part["data_policy"])
    assert seen == set(COMPLETER)
    assert {plan.gpus(cfg, c) for c in COMPLETER.values()} == {1, 4}


def test_the_judge_and_consensus_label_the_joined_set_once(mix):
    cfg, p = mix
    train = next(iter(cfg["problems"]))
    judge = [j for j in p.of("judge") if j.wildcards["dataset"] == train]
    assert judge and all(f"results/responses/{train}.parquet" in j.input for j in judge)
    assert p.counts.get("consensus") == len(cfg["problems"])
