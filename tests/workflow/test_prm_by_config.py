"""A PRM of a format the project has no family for enters the embedded workflow through one overlay file:
a TRL token-classification PRM (adapter token_classification) and a PRM described by its options (adapter
declared) in a dry run; docs/evaluate-your-prm.md followed as written with a local PRM (slow: scored on
ProcessBench and Best-of-N on CPU), and a mistyped local path stopping the dry run."""
from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest
import yaml

from conftest import ROOT, TEST_CONFIG, embedded_run_dir, smk_run
from dag import job_counts, plan


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


def _doc_overlay(local_id: str) -> dict:
    """docs/evaluate-your-prm.md's overlay (its first YAML block) as its comment says for a local model:
    `source: local`, `id` the directory; the Hub commit (`revision`, "hub: required") left out."""
    doc = (ROOT / "docs/evaluate-your-prm.md").read_text()
    entries = yaml.safe_load(re.search(r"```yaml\n(.*?)```", doc, re.S).group(1))
    entry = entries["models"]["my_prm"]
    assert entry.pop("revision") and entry["source"] == "hub", "the doc's entry changed: follow it here"
    entry.update(source="local", id=local_id)
    return entries


def test_a_mistyped_local_prm_path_fails_the_dry_run_naming_its_id(tmp_path):
    """The doc: a `source: local` id is read relative to the working directory; one that does not exist
    stops the dry run naming `models.my_prm.id` (not a job, later, in transformers' Hub-id check)."""
    (tmp_path / "my-trl-prm").mkdir()  # the real directory; the overlay names it with a typo
    overlay = tmp_path / "my_prm.yaml"
    overlay.write_text(yaml.safe_dump(_doc_overlay("my-trl-prn")))
    proc = smk_run("-n", "--cores", "2", "--directory", str(tmp_path), "--configfile",
                   str(ROOT / "config/config.yaml"), str(overlay), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (f"`models.my_prm.id`: local model directory 'my-trl-prn' does not exist (relative to the working "
            f"directory {tmp_path.resolve()})") in out, out[-3000:]
    assert "Job stats" not in out


def _finite(*values) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


@pytest.mark.slow
def test_the_docs_local_prm_scores_processbench_and_best_of_n_on_cpu(tmp_path, embedded_model_dir):
    """docs/evaluate-your-prm.md followed on a CPU install, offline: a TRL-style token-classification PRM (the
    embedded model's body and tokenizer, a random 2-label head, saved by transformers) declared by the doc's
    overlay with `source: local`, layered on the embedded default (shrunk by config/test.yaml): the dry run
    plans its scoring jobs, the run writes its ProcessBench and Best-of-N metrics (the doc's section 2 files,
    its targets alone) with finite numbers for every subset and benchmark, and its scores are the ones
    the doc's input layout gives."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = [str(ROOT / c) for c in TEST_CONFIG]
    wd = embedded_run_dir(tmp_path, embedded_model_dir, configfiles=tuple(cfg))
    prm_dir = wd / "my-trl-prm"
    torch.manual_seed(0)  # the head's random init
    model = transformers.AutoModelForTokenClassification.from_pretrained(embedded_model_dir, num_labels=2)
    model.save_pretrained(prm_dir)
    del model
    saved = transformers.AutoConfig.from_pretrained(prm_dir)  # the class the adapter loads, the head's labels
    assert saved.architectures == ["LlamaForTokenClassification"] and saved.num_labels == 2
    transformers.AutoTokenizer.from_pretrained(embedded_model_dir).save_pretrained(prm_dir)
    overlay = wd / "my_prm.yaml"
    overlay.write_text(yaml.safe_dump(_doc_overlay("my-trl-prm")))  # relative to the working directory

    targets = ["results/metrics/bon/my_prm.json", "results/metrics/processbench/my_prm.json"]
    args = [*targets, "--cores", "2", "--directory", str(wd), "--configfile", *cfg, str(overlay)]
    dry = smk_run("-n", *args)
    out = dry.stdout + dry.stderr
    counts = job_counts(out)
    assert counts.get("score_samples") and counts.get("score_processbench") == 1, counts
    assert not {"embedded_model", "train_prm", "judge"} & set(counts), counts  # its targets alone
    smk_run(*args, timeout=1800)

    run = yaml.safe_load((ROOT / "config/test.yaml").read_text())
    base = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    pb = json.loads((wd / "results/metrics/processbench/my_prm.json").read_text())
    subsets = base["processbench"]["constructed"]["subsets"]
    assert set(pb["subsets"]) == set(subsets)
    for name, m in pb["subsets"].items():
        assert m["n"] == run["processbench"]["constructed"]["n_per_subset"], (name, m)
        assert _finite(m["error_acc"], m["correct_acc"], m["f1"], *m["ci"]["f1"]), (name, m)
    assert _finite(pb["average_f1"], pb["threshold"])
    assert pb["tuned_on"] == "dev"  # the embedded default's threshold: tune, tune_on auto (the doc says so)
    bon = json.loads((wd / "results/metrics/bon/my_prm.json").read_text())
    assert set(bon["benchmarks"]) == set(run["benchmarks"])
    for name, m in [*bon["benchmarks"].items(), ("average", bon["average"])]:
        assert _finite(*(m[k] for k in ("pass", "maj", "prm_product", "prm_min", "prm_last"))), (name, m)
        assert 0 <= m["prm_product"] <= 1, (name, m)

    # every step scored, a probability; a case's scores are the doc's: [BOS] + ids(question) + ids(step) +
    # ids("\n") + ..., each piece tokenised alone, P(label 1) at the separator's last token
    scores = {f.stem: pd.read_parquet(f) for f in (wd / "results/scores/my_prm").glob("*.parquet")}
    assert set(run["benchmarks"]) | {"processbench"} <= set(scores)
    for name, df in scores.items():
        assert len(df) and all(0 < x < 1 for row in df["step_scores"] for x in row), name
    pb_scores = scores["processbench"]
    assert (pb_scores["n_steps_scored"] == pb_scores["n_steps"]).all()  # no case cut off
    cases = pd.read_parquet(wd / "results/processbench/cases.parquet").set_index("id")
    tok = transformers.AutoTokenizer.from_pretrained(prm_dir)
    ref = transformers.AutoModelForTokenClassification.from_pretrained(prm_dir, dtype=torch.bfloat16).eval()
    piece = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    for row in pb_scores.head(3).itertuples():
        case = cases.loc[row.id]
        ids, pos = ([tok.bos_token_id] if tok.bos_token_id is not None else []) + piece(case.problem), []
        for step in case.steps:
            ids += piece(step) + piece("\n")
            pos.append(len(ids) - 1)
        with torch.no_grad():
            logits = ref(input_ids=torch.tensor([ids])).logits[0].float()
        want = torch.softmax(logits, dim=-1)[pos, 1].tolist()
        # bfloat16 (the entry's dtype), batched and padded in the job: <= 0.005 apart here; without the BOS 0.028
        assert row.step_scores.tolist() == pytest.approx(want, abs=1e-2), row.id
