"""TRL stepwise-supervision data enters the embedded workflow through one overlay file: a local JSONL and a
Hub dataset at a pinned commit, each a variant `{source: trl, trl: {...}}`, get rule trl_labels (the local
file as its input, the evaluation sets to decontaminate against), a training set, a trained PRM and its
rows, in a dry run (HF_HUB_OFFLINE, tests/dag.py: nothing is downloaded while planning); with
trainsets.export_trl every hard-label training set is also written in TRL's format."""
from __future__ import annotations

import json

import yaml

from dag import plan


def test_embedded_dry_run_trains_a_prm_on_trl_data(tmp_path):
    data = tmp_path / "mine.jsonl"
    data.write_text(json.dumps({"prompt": "Q?", "completions": ["a.", "b."], "labels": [True, False]}) + "\n")
    overlay = tmp_path / "trl_data.yaml"
    overlay.write_text(yaml.safe_dump({"trainsets": {"export_trl": {"enabled": True}, "variants": {
        "mine": {"source": "trl", "trl": {"source": "local", "path": str(data)}},
        "prm800k_trl": {"source": "trl", "trl": {"source": "hub", "id": "trl-lib/prm800k",
                                                 "revision": "82f00e1a1b3b474e895b856d32e6e38c9f58e440"}}}}}))
    p = plan(("config/config.yaml", str(overlay)))
    labels = {j.wildcards["variant"]: j for j in p.of("trl_labels")}
    assert set(labels) == {"mine", "prm800k_trl"}
    assert labels["mine"].output == ["results/labels/trl/mine.parquet"] and str(data) in labels["mine"].input
    for job in labels.values():
        assert "results/processbench/cases.parquet" in job.input  # decontaminated against the evaluation sets
    assert not any(x.endswith(".jsonl") for x in labels["prm800k_trl"].input)
    for variant in labels:
        ts = next(j for j in p.of("trainset") if j.wildcards["variant"] == variant)
        assert f"results/labels/trl/{variant}.parquet" in ts.input
        assert any(j.wildcards.get("variant") == variant for j in p.of("train_prm"))
        assert f"results/metrics/bon/{variant}.json" in p.of("bon_table")[0].input
    # trainsets.export_trl: every hard-label training set also out in TRL's format, a target of `all`
    exports = {j.wildcards["variant"]: j for j in p.of("export_trl")}
    assert {"mine", "prm800k_trl", "mc_hard", "exact"} <= set(exports) and "mc_soft" not in exports
    assert exports["mine"].input[-1] == "results/trainsets/mine.parquet"
    assert exports["mine"].output == ["results/trainsets/trl/mine.jsonl"]
    assert "results/trainsets/trl/mine.jsonl" in p.of("all")[0].input
