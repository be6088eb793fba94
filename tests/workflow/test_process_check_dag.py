"""The process checker's rules in the embedded DAG (process_check.enabled) and nowhere in the paper's."""
from __future__ import annotations


def test_embedded_dag_runs_the_checker_on_the_samples_and_trains_on_the_constructed_pool(embedded_plan):
    jobs = {j.rule: [] for j in embedded_plan.jobs}
    for j in embedded_plan.jobs:
        jobs[j.rule].append(j)
    labelled = {j.wildcards.get("dataset") for j in jobs["process_check_labels"]}
    # the Best-of-N benchmarks, and only they: Figure 6 reads their correct answers (the paper's population and
    # lesson 4's); the training problems are not sampled in the embedded default
    assert labelled == {"arith", "chain_sum"}
    assert jobs["process_check_validation"][0].input[-1] == "results/processbench/cases.parquet"
    assert "results/tables/process_check_bon.csv" in jobs["process_check_bon"][0].output
    # the label sources train on the constructed pool (exact truth there), not on checker labels of samples
    sets = {j.wildcards.get("variant"): set(j.input) for j in jobs["trainset"]}
    assert "checker" not in sets and "results/labels/audit/slice.parquet" in sets["exact"]
    assert sets["exact"] & sets["mc_hard"] >= {"results/labels/audit/slice.parquet"}
    fig6 = jobs["fig6_flawed_process"][0]
    assert {"results/labels/checker/arith.parquet", "results/samples/chain_sum.parquet"} <= set(fig6.input)
    # analysis.flaw_judge false: no judge job at all (a 135M judge's verdicts measure no flaws)
    assert not [p for p in fig6.input if "labels/judge/" in p] and "judge" not in jobs
    assert "sample" in jobs and {j.wildcards.get("dataset") for j in jobs["sample"]} == {"arith", "chain_sum"}
    # no model: no job of the checker reads a model directory
    assert not [j for r in ("process_check_labels", "process_check_validation", "process_check_bon")
                for j in jobs[r] if any("models" in p or "hub" in p for p in j.input)]


def test_paper_dag_has_no_checker(paper_plan):
    assert not [j for j in paper_plan.jobs if j.rule.startswith("process_check")
                or "results/labels/checker" in " ".join(j.input)]
