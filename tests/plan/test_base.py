"""cluster.max_runtime caps every GPU rule's runtime × attempt (prm_lessons.plan.base.runtime)."""
from __future__ import annotations

from pathlib import Path

from prm_lessons import plan


def test_runtime_grows_with_attempt_and_stops_at_the_cap():
    config = {"cluster": {"max_runtime": 1440}}
    assert plan.runtime(config, 720, 1) == 720
    assert plan.runtime(config, 720, 2) == 1440
    assert plan.runtime(config, 960, 2) == 1440  # the critic's second attempt asked for 32 h before
    assert plan.runtime({"cluster": {"max_runtime": 600}}, 720, 1) == 600


def test_every_rule_runtime_goes_through_the_cap():
    """A rule that computed `minutes * attempt` itself would ask sbatch for more than the partition allows."""
    root = Path(__file__).resolve().parents[2]
    for smk in sorted((root / "workflow/rules").glob("*.smk")):
        for line in smk.read_text().splitlines():
            if "runtime=" in line:
                assert "plan.runtime(" in line or "plan.scoring_runtime(" in line, f"{smk.name}: {line.strip()}"


def test_benchmark_path_is_under_its_rule_with_the_logs_wildcards():
    """A job's benchmark file: benchmarks/<rule>/ + its log's path from the first wildcard (the same
    wildcards, as Snakemake requires), or benchmarks/<rule>.tsv without wildcards."""
    assert (plan.benchmark_path("mc", "logs/labels/mc/{dataset}/shard{shard}of{nshards}.log")
            == "benchmarks/mc/{dataset}/shard{shard}of{nshards}.tsv")
    assert plan.benchmark_path("human_labels", "logs/labels/human.log") == "benchmarks/human_labels.tsv"
    assert (plan.benchmark_path("score_samples", plan.shard_log("score_samples", "{policy_dir}{prm}", 3))
            == "benchmarks/score_samples/{policy_dir}{prm}/shard{shard}of{nshards}.tsv")
    # a constant folder after the first wildcard stays: two jobs of one rule never share a file
    assert (plan.benchmark_path("bon_judge", "logs/bon_judge/{policy_dir}{judge}/{mode}.log")
            == "benchmarks/bon_judge/{policy_dir}{judge}/{mode}.tsv")
