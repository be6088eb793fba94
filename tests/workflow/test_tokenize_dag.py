"""Rule tokenize_trainset in the dry runs: the paper config (full fine-tuning) tokenises each trained
variant's training set once on a CPU and its train_prm job reads that file; the embedded default (head
mode, whose shared step features cover it) plans no such job."""
from __future__ import annotations


def test_paper_plans_one_cpu_tokenize_job_per_trained_variant_and_train_prm_reads_it(paper_plan):
    trains = {j.wildcards["variant"]: j for j in paper_plan.of("train_prm")}
    tokenize = {j.wildcards["variant"]: j for j in paper_plan.of("tokenize_trainset")}
    assert trains and set(tokenize) == set(trains)
    assert paper_plan.counts["tokenize_trainset"] == len(trains)
    for variant, job in tokenize.items():
        assert job.output == [f"results/trainsets/tokens/{variant}.parquet"]
        assert f"results/trainsets/{variant}.parquet" in job.input
        assert int(job.resources.get("gpu", 0)) == 0 and job.threads == 1
        assert job.output[0] in trains[variant].input
        assert int(trains[variant].resources["gpu"]) > 0


def test_embedded_plans_no_tokenize_job(embedded_plan):
    assert embedded_plan.of("train_prm") and "tokenize_trainset" not in embedded_plan.counts
    assert not any("results/trainsets/tokens/" in f for j in embedded_plan.of("train_prm") for f in j.input)
