"""The rehearsal's report (results/rehearsal/report.json, written by `make rehearsal`).

`.ci/run` runs `make rehearsal` and then this file with REHEARSAL_REQUIRED=1: a missing report is then
a failure. In `make test` (which runs before the rehearsal) the report-dependent tests skip when there
is none; the parsing helpers are tested on their own.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from prm_lessons.rehearsal.report import parse_job_table, rules_from_summary

REPORT = Path(os.environ.get("REHEARSAL_REPORT", Path(__file__).resolve().parents[2] / "results/rehearsal/report.json"))

# label-token ids as each model's own inference code computes them with its real tokenizer
EXPECTED_IDS = {
    "math_shepherd": {"step_tag_id": 12902, "label_token_ids": [648, 387]},
    "rlhflow": {"label_token_ids": [10, 12]},
    "qwen_prm": {"step_tag_id": 151651},
}


def test_parse_job_table():
    text = "Job stats:\njob            count\n-----------  -------\nsample           8\nall              1\ntotal            9\n"
    assert parse_job_table(text) == {"sample": 8, "all": 1}


def test_rules_from_summary_counts_present_outputs_only():
    text = ("output_file\tdate\trule\tlog-file(s)\tstatus\tplan\n"
            "results/a.parquet\tMon Nov 23 10:00:00 2026\tsample\tlogs/a.log\tok\tno update\n"
            "results/b.parquet\t-\ttrain_prm\t\tmissing\tupdate pending\n")
    assert rules_from_summary(text) == {"sample": 1}


@pytest.fixture(scope="module")
def report():
    if not REPORT.exists():
        if os.environ.get("REHEARSAL_REQUIRED") == "1":
            pytest.fail(f"{REPORT} is missing: `make rehearsal` did not write its report")
        pytest.skip("no rehearsal report (run `make rehearsal`)")
    return json.loads(REPORT.read_text())


def test_the_run_succeeded_and_every_rule_of_the_paper_dag_ran(report):
    assert report["snakemake_returncode"] == 0
    assert report["rules_planned"], "the dry run planned no job"
    assert report["rules_missing"] == [], f"planned rules that left no output: {report['rules_missing']}"
    for rule in ("download_model", "sample", "mc", "judge", "train_prm", "score_samples", "score_processbench",
                 "critic_processbench", "critique_template", "human_labels", "benchmark_file"):
        assert rule in report["rules_ran"], rule


def test_every_model_calling_rule_counted_its_tokens(report):
    """The paper DAG's engine rules (make run-all's among them: the tiny end-to-end test runs make run's
    DAG only) and the frozen-base / scoring passes wrote token sidecars with real counts."""
    tokens = report["tokens"]
    for rule in ("sample", "mc", "judge", "bon_judge", "critic_processbench", "search_greedy"):
        assert tokens.get(rule, {}).get("prefill_tokens", 0) > 0, (rule, tokens.get(rule))
        assert tokens[rule]["decode_tokens"] > 0, (rule, tokens[rule])
    assert not set(tokens) & {"grade_samples", "bon_metrics", "paper_report"}  # no model in these


def test_every_released_adapter_scored_real_processbench_cases_with_finite_scores(report):
    assert report["adapters"], "no released PRM in the report"
    for name, row in report["adapters"].items():
        assert row["scored"] and row["cases_scored"] > 0, name
        assert row["n_scores"] > 0 and row["scores_finite"], name


def test_label_token_ids_equal_what_the_models_own_code_computes(report):
    seen = set()
    for name, row in report["adapters"].items():
        want = EXPECTED_IDS.get(row["adapter"])
        if want is None:
            continue
        seen.add(row["adapter"])
        for key, value in want.items():
            assert row[key] == value, f"{name}: {key} {row[key]} != {value}"
    assert seen == set(EXPECTED_IDS), f"adapters missing from the report: {set(EXPECTED_IDS) - seen}"


def test_benchmarks_loaded_at_their_full_size_and_used_at_the_rehearsal_size(report):
    # every benchmark of config/paper.yaml (the seven of Table 6, Table 10's, the Chinese sets, Omni-MATH)
    import yaml
    paper = yaml.safe_load((Path(__file__).resolve().parents[2] / "config/paper.yaml").read_text())
    assert set(report["benchmarks"]) == set(paper["benchmarks"])
    for name, row in report["benchmarks"].items():
        assert row["used"] and row["used"] > 0, name
        assert row["loaded"] == row["expected"], f"{name}: loaded {row['loaded']} rows, expected {row['expected']}"


def test_training_ran_multi_process_and_rank0_saved_and_the_prm_loads_in_scoring(report):
    assert report["training"], "no trained PRM"
    for variant, row in report["training"].items():
        assert row["world_size"] == 2 and row["saved_by_rank"] == 0, variant
        assert row["scored"] and row["scores_finite"], variant
        # training.deepspeed_on_cpu: the GPU jobs' ZeRO-3 path (paper.yaml's zero3.json) ran, not plain DDP
        assert row["deepspeed"] and row["deepspeed"].endswith("zero3.json"), variant
