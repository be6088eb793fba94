"""Rule upload_prm (hub.upload) in the DAG: never planned by default; with an overlay that turns it on,
one job per trained PRM, reading the PRM directory, its training set and its evaluation (for the
card) and writing a receipt. No upload runs here (a dry run)."""
from __future__ import annotations

import yaml

from dag import plan


def test_not_planned_by_default(embedded_plan):
    assert "upload_prm" not in embedded_plan.counts
    assert not [j for j in embedded_plan.jobs if any("results/uploads/" in o for o in j.output)]


def test_planned_per_trained_prm_when_enabled(tmp_path, embedded_plan):
    overlay = tmp_path / "upload.yaml"
    overlay.write_text(yaml.safe_dump({"hub": {"upload": {"enabled": True, "repo_prefix": "my-org/prm-"}}}))
    p = plan(("config/config.yaml", str(overlay)))
    trained = {j.wildcards["variant"] for j in embedded_plan.of("train_prm")}
    jobs = p.of("upload_prm")
    assert trained and {j.wildcards["variant"] for j in jobs} == trained
    for j in jobs:
        v = j.wildcards["variant"]
        assert j.output == [f"results/uploads/{v}.json"]
        assert {f"results/prms/{v}", f"results/trainsets/{v}.parquet", f"results/metrics/processbench/{v}.json",
                f"results/metrics/bon/{v}.json"} <= set(j.input)
