"""plan.data_policies: one data policy (config/paper.yaml, §3.1.2) and a mix of several
(config/paper_3m.yaml, §2.1's 3M set: Qwen2-/Qwen2.5-Math-Instruct at 7B and 72B, each completed by the
Qwen2.5-Math-Instruct of its size): where each samples, how many responses, which completer each MC shard
loads, and the offsets that keep (problem_id, sample_idx) a key of the joined responses."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from prm_lessons import plan
from prm_lessons.config import ConfigError, load_config, validate_config

ROOT = Path(__file__).resolve().parents[2]
MIX = ["qwen2_math_7b", "qwen2_math_72b", "qwen25_math_7b", "qwen25_math_72b"]
# §2.1: each policy completed by the Qwen2.5-Math-Instruct "with the corresponding model size"
COMPLETERS = {"qwen2_math_7b": "qwen25_math_7b_instruct", "qwen2_math_72b": "qwen25_math_72b_instruct",
              "qwen25_math_7b": "qwen25_math_7b_instruct", "qwen25_math_72b": "qwen25_math_72b_instruct"}


@pytest.fixture(scope="module")
def paper():
    return load_config(ROOT / "config/paper.yaml")


@pytest.fixture(scope="module")
def mix():
    return load_config(ROOT / "config/paper.yaml", ROOT / "config/paper_3m.yaml")


def test_the_3m_overlay_is_the_papers_mix_with_same_size_completers(mix):
    pols = plan.data_policies(mix)
    assert list(pols) == MIX == plan.mixed_policies(mix)
    assert {n: p["completer"] for n, p in pols.items()} == COMPLETERS
    ids = {n: mix["models"][p["model"]]["id"] for n, p in pols.items()}
    assert ids == {"qwen2_math_7b": "Qwen/Qwen2-Math-7B-Instruct", "qwen2_math_72b": "Qwen/Qwen2-Math-72B-Instruct",
                   "qwen25_math_7b": "Qwen/Qwen2.5-Math-7B-Instruct",
                   "qwen25_math_72b": "Qwen/Qwen2.5-Math-72B-Instruct"}
    # 6-8 responses per query over the mix (§2.1): 2 from each of the 4
    assert [p["n"] for p in pols.values()] == [2, 2, 2, 2]
    assert [p["offset"] for p in plan.mix_parts(mix)] == [0, 2, 4, 6]
    setting = plan.data_setting(mix)
    assert [(p["model_id"], p["completer_id"]) for p in setting["policies"]][1] == \
        ("Qwen/Qwen2-Math-72B-Instruct", "Qwen/Qwen2.5-Math-72B-Instruct")


def test_each_mixed_policy_samples_into_its_own_directory(mix):
    train = next(iter(mix["problems"]))
    for name in MIX:
        s = plan.sampler(mix, train, name)
        assert s["model"] == plan.data_policies(mix)[name]["model"] and s["n"] == 2
        assert plan.samples_per_problem(mix, train, name) == 2
        shards = plan.sample_shards(mix, train, name)
        assert shards and all(p.startswith(f"results/data_policies/{name}/responses/{train}/") for p in shards)
    assert plan.mixed_responses(mix, train) == [f"results/data_policies/{n}/responses/{train}.parquet" for n in MIX]
    # Qwen2-Math keeps its own sampling (T 1.0 / top_p 0.9), Qwen2.5-Math the `sampling` section's
    assert plan.sampler(mix, train, "qwen2_math_72b")["sampling"]["temperature"] == 1.0
    assert plan.sampler(mix, train, "qwen25_math_72b")["sampling"]["temperature"] == mix["sampling"]["temperature"]
    # the benchmarks stay the Best-of-N policy's
    bench = next(iter(mix["benchmarks"]))
    assert plan.sampler(mix, bench)["model"] == "qwen25_math_7b_instruct"
    rx = re.compile(plan.sampling_dir_regex(mix))
    assert rx.fullmatch("") and rx.fullmatch("data_policies/qwen2_math_72b/")
    assert not rx.fullmatch("data_policies/nope/") and not rx.fullmatch("data_policies/qwen2_math_72b")


def test_mc_shards_are_numbered_over_the_mix_each_with_its_completer(mix, paper):
    train = next(iter(mix["problems"]))
    single = plan.label_shard_paths(paper, "mc", train)
    paths = plan.label_shard_paths(mix, "mc", train)
    assert len(paths) == 4 * len(single)
    n, per = len(paths), len(single)
    got = [plan.mc_shard(mix, i, n) for i in range(n)]
    assert [g["data_policy"] for g in got] == [p for p in MIX for _ in range(per)]
    assert [g["shard"] for g in got] == list(range(per)) * 4 and {g["nshards"] for g in got} == {per}
    assert all(g["completer"] == COMPLETERS[g["data_policy"]] for g in got)
    assert plan.mc_completers(mix) == ["qwen25_math_7b_instruct", "qwen25_math_72b_instruct"]
    # one data policy: the shard is the job's own, the completer the data policy's
    one = plan.mc_shard(paper, 3, per)
    assert one == {"data_policy": None, "completer": "qwen25_math_7b_instruct", "shard": 3, "nshards": per,
                   "system_prompt": plan.data_policy(paper)["sampling"]["system_prompt"]}


def test_a_mixed_policy_may_not_share_a_best_of_n_policys_name(mix):
    bad = {**mix, "data_policies": dict(mix["data_policies"])}
    second = next(p for p in plan.bon_policies(mix) if not plan.bon_policies(mix)[p]["primary"])
    bad["data_policies"][second] = dict(mix["data_policies"]["qwen2_math_7b"])
    with pytest.raises(ConfigError, match=rf"data_policies\.{second}"):
        validate_config(bad)
