"""A PRM of a format the project has no family for enters the embedded workflow through one overlay file:
a TRL token-classification PRM (adapter token_classification) and a PRM described by its options (adapter
declared) in a dry run."""
from __future__ import annotations

import json

import yaml

from dag import plan


def _overlay(model_dir, **params) -> dict:
    return {"models": {"tc_model": {"source": "local", "id": str(model_dir), "dtype": "float32"}},
            "prms": {"models": {"trl_prm": {"adapter": "token_classification", "model": "tc_model",
                                            "label": "TRL-PRM", "params": params}}}}


def test_embedded_dry_run_scores_the_declared_prm(tmp_path):
    """One overlay file, no code: the PRM gets its Best-of-N and ProcessBench scoring jobs and its rows in
    the tables (the analysis jobs read its scores). HF_HUB_OFFLINE (tests/dag.py): no Hub access."""
    model = tmp_path / "my-trl-prm"  # a local checkpoint: its config.json is read (labels) while the DAG is built
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "qwen2",
                                                   "architectures": ["Qwen2ForTokenClassification"]}))
    overlay = tmp_path / "trl_prm.yaml"
    entries = _overlay(model, step_separator="\n\n")
    entries["prms"]["models"]["my_prm"] = {"adapter": "declared", "model": "tc_model", "params": {
        "model_class": "token_classification", "step_template": "Step {k}: {step}", "step_tag": " <step>",
        "readout": {"class_index": 0, "activation": "sigmoid"}}}
    overlay.write_text(yaml.safe_dump(entries))
    p = plan(("config/config.yaml", str(overlay)))
    by_rule = {j.rule: j for j in p.jobs}
    for prm in ("trl_prm", "my_prm"):
        scoring = [j for j in p.jobs if j.rule in ("score_samples", "score_processbench")
                   and j.wildcards.get("prm") == prm]
        assert {j.rule for j in scoring} == {"score_samples", "score_processbench"}
        assert f"results/metrics/bon/{prm}.json" in by_rule["bon_table"].input
        assert f"results/metrics/processbench/{prm}.json" in by_rule["processbench_table"].input
    # Tables 6, 13 and Figure 1 read bon.csv, Table 7 and Figure 1 processbench.csv: one row per PRM there
    reads = {r: set(by_rule[r].input) for r in ("table6_bon_main", "table13_scoring_strategies",
                                                 "table7_processbench_main", "fig1_overview")}
    assert "results/tables/bon.csv" in reads["table6_bon_main"] & reads["table13_scoring_strategies"]
    assert "results/tables/processbench.csv" in reads["table7_processbench_main"] & reads["fig1_overview"]


def test_the_docs_hub_prm_plans_on_cpu_beside_the_embedded_default(tmp_path):
    """docs/evaluate-your-prm.md's overlay, as written, layered on the embedded default (a CPU run): its
    scoring jobs ask for no GPU, its model is fetched by rule download_model, and the dry run says the
    overlay keeps the base run's name."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs/evaluate-your-prm.md").read_text()
    overlay = tmp_path / "my_prm.yaml"
    overlay.write_text(re.search(r"```yaml\n(.*?)```", doc, re.S).group(1))
    p = plan(("config/config.yaml", str(overlay)))
    scoring = [j for j in p.jobs if j.rule in ("score_samples", "score_processbench")
               and j.wildcards.get("prm") == "my_prm"]
    assert {j.rule for j in scoring} == {"score_samples", "score_processbench"}
    assert all(j.resources.get("gpu") == 0 for j in scoring), [j.resources for j in scoring]
    assert [j.wildcards.get("model") for j in p.of("download_model")] == ["my_prm"]
    assert f"prm-lessons: warning: {overlay} keeps the run.name of {root / 'config/config.yaml'} ('embedded')" in p.out
