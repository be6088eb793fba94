"""Rules prmbench (data), prmbench_metrics and prmbench_table (evaluation) on the PRMBench-format fixture:
each PRM's ProcessBench threshold decides its steps, and the published PRMScore stands beside a PRM only
when the cases are PRMBench's own data, never beside the stand-in."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from prm_lessons.rules import data, evaluation
from prm_lessons.tables import read_csv, read_table, write_table

FIXTURE = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "prmbench" / "prmbench_fixture.jsonl"


def _run(tmp_path, spec, prm="skywork_prm_7b", threshold=0.5):
    cases_path = tmp_path / "cases.parquet"
    data.prmbench(inputs={"source": [str(FIXTURE)] if spec.get("source") == "local" else []},
                  outputs={"cases": str(cases_path)}, params={"spec": spec}, wildcards={}, threads=1)
    cases = read_table(cases_path, "prmbench")
    # every step scored 0.9 but the first error step of each case, scored 0.1
    scores = [[0.1 if k in e[:1] else 0.9 for k in range(len(s))] for s, e in zip(cases["steps"], cases["error_steps"])]
    write_table(pd.DataFrame({"id": cases["id"], "subset": cases["classification"], "step_scores": scores}),
                tmp_path / "scores.parquet", "pb_scores")
    (tmp_path / "pb.json").write_text(json.dumps({"threshold": threshold, "threshold_policy": "fixed"}))
    metrics = tmp_path / f"{prm}.json"
    evaluation.prmbench_metrics(
        inputs={"cases": str(cases_path), "scores": str(tmp_path / "scores.parquet"),
                "processbench": str(tmp_path / "pb.json")},
        outputs={"metrics": str(metrics)}, params={"run_label": "t"}, wildcards={"prm": prm}, threads=1)
    table = tmp_path / "prmbench.csv"
    evaluation.prmbench_table(inputs={"metrics": [str(metrics)]}, outputs={"table": str(table)},
                              params={"paper_rows": {}, "run_label": "t"}, wildcards={}, threads=1)
    return json.loads(metrics.read_text()), read_csv(table, "prmbench_csv")


def test_real_data_stands_beside_the_published_prmscore(tmp_path):
    m, table = _run(tmp_path, {"source": "local", "path": str(FIXTURE), "rows": 6})
    assert not m["standin"] and m["threshold"] == 0.5 and m["n_cases"] == 7
    # circular (errors at steps 0, 1; only step 0 caught): TN 1, FP 1, TP 2
    assert {k: m["classes"]["circular"][k] for k in ("TP", "FP", "TN", "FN")} == {"TP": 2, "FP": 1, "TN": 1, "FN": 0}
    row = table.set_index("column").loc["overall"]
    assert row["published"] == pytest.approx(0.362)  # Skywork-PRM-7B's overall PRMScore, published.yaml
    assert row["prmscore"] == pytest.approx(m["overall"]["prmscore"])
    assert table.set_index("column").loc["NCL", "published"] == pytest.approx(0.412)


def test_a_threshold_above_every_score_calls_every_step_an_error(tmp_path):
    m, _ = _run(tmp_path, {"source": "local", "path": str(FIXTURE)}, threshold=0.95)
    assert m["overall"]["TP"] == 0 and m["overall"]["FP"] == 0 and m["overall"]["f1"] is None


def test_the_standin_is_never_compared(tmp_path):
    spec = {"source": "constructed", "constructed": {"n_cases": 4, "seed": 0}}
    pool = {"arith": {"source": "reasoning_gym", "generator": "basic_arithmetic", "size": 30, "seed": 123,
                      "params": {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 1,
                                 "operators": ["+", "-", "*"], "allow_parentheses": False,
                                 "allow_negation": False}}}
    cases_path = tmp_path / "cases.parquet"
    data.prmbench(inputs={"source": []}, outputs={"cases": str(cases_path)},
                  params={"spec": spec, "pool": pool, "exclude": {}}, wildcards={}, threads=1)
    cases = read_table(cases_path, "prmbench")
    assert len(cases) == 8 and set(cases["classification"]) >= {"correct"}
    scores = [[0.9] * len(s) for s in cases["steps"]]
    write_table(pd.DataFrame({"id": cases["id"], "subset": cases["classification"], "step_scores": scores}),
                tmp_path / "scores.parquet", "pb_scores")
    (tmp_path / "pb.json").write_text(json.dumps({"threshold": [0.4, 0.6]}))
    metrics = tmp_path / "skywork_prm_7b.json"
    evaluation.prmbench_metrics(
        inputs={"cases": str(cases_path), "scores": str(tmp_path / "scores.parquet"),
                "processbench": str(tmp_path / "pb.json")},
        outputs={"metrics": str(metrics)}, params={"run_label": "t"}, wildcards={"prm": "skywork_prm_7b"}, threads=1)
    m = json.loads(metrics.read_text())
    assert m["standin"] and m["threshold"] == pytest.approx(0.5) and "stand-in" in m["data"]
    table = tmp_path / "prmbench.csv"
    evaluation.prmbench_table(inputs={"metrics": [str(metrics)]}, outputs={"table": str(table)},
                              params={"paper_rows": {}}, wildcards={}, threads=1)
    t = read_csv(table, "prmbench_csv")
    assert t["published"].isna().all() and t["published_label"].isna().all()


def test_prmbench_file_copies_the_pinned_file_and_checks_it(tmp_path, caplog):
    spec = {"url": str(FIXTURE), "sha256": None, "git_blob_sha1": None}
    dest = tmp_path / "resources" / "prmbench.jsonl"
    data.prmbench_file(inputs={}, outputs={"file": str(dest)}, params={"spec": spec}, wildcards={}, threads=1)
    assert dest.read_bytes() == FIXTURE.read_bytes()
    assert "prmbench.sha256 is null" in caplog.text  # the digest to pin is logged
    bad = tmp_path / "bad.jsonl"
    with pytest.raises(ValueError, match="sha256"):
        data.prmbench_file(inputs={}, outputs={"file": str(bad)}, params={"spec": {**spec, "sha256": "0" * 64}},
                           wildcards={}, threads=1)
    assert not bad.exists()  # a wrong file never lands where a later run would trust it
    # the rule prmbench reads the copy (source url)
    cases = tmp_path / "cases.parquet"
    data.prmbench(inputs={"source": [str(dest)]}, outputs={"cases": str(cases)},
                  params={"spec": {"source": "url", "url": "https://x/prmbench_preview.jsonl", "rows": 6}},
                  wildcards={}, threads=1)
    assert len(read_table(cases, "prmbench")) == 7
