"""Named runs side by side (prm_lessons.plan.runs): which config is the base run, which files an ablation
writes (all under runs/<name>/) and which it reads from the base run (those whose producing config is the
same), and the refusal of an ablation that would change shared files."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from prm_lessons import plan
from prm_lessons.config import load_config

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "config/config.yaml"


def runs(*overlays: Path) -> plan.RunPaths:
    files = [BASE, *overlays]
    return plan.RunPaths(load_config(*files), plan.base_config(files, load_config(*files)))


def overlay(tmp_path, text: str) -> Path:
    p = tmp_path / "overlay.yaml"
    p.write_text(text)
    return p


def test_the_base_run_is_itself_without_an_ablation_file():
    cfg = load_config(BASE, ROOT / "config/all.yaml")  # all.yaml extends the base run, it is no ablation
    assert plan.base_config([BASE, ROOT / "config/all.yaml"], cfg) is cfg
    r = plan.RunPaths(cfg, cfg)
    assert not r.named and r.out("results/tables/bon.csv") == "results/tables/bon.csv"
    assert r.inp(["results/samples/gsm8k.parquet"]) == ["results/samples/gsm8k.parquet"]


def test_the_base_run_of_an_ablation_is_the_files_before_it():
    abl = ROOT / "config/ablations/best_of_n.yaml"
    base = plan.base_config([BASE, abl], load_config(BASE, abl))
    assert base["run"]["name"] == "embedded" and base["bon"]["n"] == load_config(BASE)["bon"]["n"]


def test_every_shipped_ablation_names_its_own_run():
    for p in sorted((ROOT / "config/ablations").glob("*.yaml")):
        assert yaml.safe_load(p.read_text())["run"] == {"name": p.stem, "ablation": True}, p.name


def test_an_ablation_keeping_the_base_name_is_refused(tmp_path):
    abl = overlay(tmp_path, "run: {ablation: true}\nbon: {n: 8}\n")
    with pytest.raises(ValueError, match="sets its own `run.name`"):
        runs(abl)


def test_an_ablation_alone_is_refused(tmp_path):
    abl = overlay(tmp_path, "run: {name: x, ablation: true}\n")
    with pytest.raises(ValueError, match="layered on a base profile"):
        plan.base_config([abl], {"run": {"name": "x"}})


def test_an_ablation_writes_only_under_its_run_directory():
    r = runs(ROOT / "config/ablations/aggregation.yaml")
    assert r.named and r.prefix == "runs/aggregation/"
    for p in ("results/samples/gsm8k.parquet", "results/tables/bon.csv", "figures/fig1_overview.png",
              "paper/report.md", "logs/sample/x.log"):
        assert r.out(p) == f"runs/aggregation/{p}"
    assert r.out(["results/prms/mc_hard", {"k": "paper/main.pdf"}]) == [
        "runs/aggregation/results/prms/mc_hard", {"k": "runs/aggregation/paper/main.pdf"}]
    assert r.out("resources/models/smollm2") == "resources/models/smollm2"  # shared, never rewritten


def test_unchanged_upstream_is_read_from_the_base_run_and_changed_is_its_own():
    r = runs(ROOT / "config/ablations/best_of_n.yaml")  # bon.n: the benchmarks' samples, not the training set's
    cfg = load_config(BASE)
    train, bench = next(iter(cfg["problems"])), next(iter(cfg["benchmarks"]))
    assert r.inp(f"results/samples/{train}.parquet") == f"results/samples/{train}.parquet"
    assert r.inp(f"results/labels/mc/{train}.parquet") == f"results/labels/mc/{train}.parquet"
    assert r.inp("results/prms/mc_hard") == "results/prms/mc_hard"
    assert r.inp(f"results/samples/{bench}.parquet") == f"runs/best_of_n/results/samples/{bench}.parquet"
    # a score of a changed sample set is its own; metrics and tables always are
    assert r.inp(f"results/scores/mc_hard/{bench}.parquet").startswith("runs/best_of_n/")
    assert r.inp("results/tables/bon.csv") == "runs/best_of_n/results/tables/bon.csv"
    # input patterns resolve per job
    fn = r.inp("results/samples/{dataset}.parquet")
    assert fn(_Wc(dataset=bench)) == f"runs/best_of_n/results/samples/{bench}.parquet"
    assert fn(_Wc(dataset=train)) == f"results/samples/{train}.parquet"


def test_a_second_policy_has_its_own_metrics_and_reads_its_samples_from_the_base_run():
    r = runs(ROOT / "config/all.yaml", ROOT / "config/ablations/aggregation.yaml")  # make run-all's second policy
    pol = next(p for p in plan.bon_policies(load_config(BASE, ROOT / "config/all.yaml")) if "t1" in p)
    bench = next(iter(load_config(BASE)["benchmarks"]))
    assert r.inp(f"results/policies/{pol}/metrics/bon/mc_hard.json").startswith("runs/aggregation/")
    assert r.inp(f"results/policies/{pol}/samples/{bench}.parquet") == f"results/policies/{pol}/samples/{bench}.parquet"


def test_a_changed_judge_leaves_the_constructed_pool_to_the_base_run():
    # the embedded default labels its pool with MC only (audit.judge off): a judge change relabels nothing
    # there; with the judge on the pool (make run-all), MC and the judge share one job, so the pool is its own
    base = load_config(BASE)
    assert base["trainsets"]["responses"] == "constructed" and not base["audit"]["judge"]
    r = runs(ROOT / "config/ablations/data_source.yaml")  # judge.style, human.neutral
    assert not r.own("results/labels/audit/labels/shard0of1.parquet") and not r.own("results/trainsets/mc_hard.parquet")
    assert r.own("results/trainsets/human.parquet")
    r = runs(ROOT / "config/all.yaml", ROOT / "config/ablations/data_source.yaml")
    assert r.own("results/labels/audit/labels/shard0of1.parquet")
    assert r.own("results/trainsets/judge.parquet") and r.own("results/trainsets/mc_hard.parquet")
    bench = next(iter(base["benchmarks"]))
    assert not r.own(f"results/samples/{bench}.parquet") and not r.own("results/processbench/cases.parquet")


def test_a_changed_label_source_moves_only_what_reads_it(tmp_path):
    # sampled training responses (the paper's design): MC and the judge are jobs of their own
    sampled = tmp_path / "sampled.yaml"
    sampled.write_text("trainsets:\n  responses: sampled\n  variants:\n    exact: {enabled: false}\n"
                       "    judge: {source: judge}\n    consensus_hard: {source: consensus}\n")
    r = runs(sampled, ROOT / "config/ablations/data_source.yaml")
    train = next(iter(load_config(BASE)["problems"]))
    assert r.inp(f"results/labels/mc/{train}.parquet") == f"results/labels/mc/{train}.parquet"
    assert r.own(f"results/labels/judge/{train}.parquet") and r.own(f"results/labels/consensus/{train}.parquet")
    assert r.own("results/trainsets/judge.parquet") and r.own("results/prms/judge")
    assert not r.own("results/trainsets/mc_hard.parquet") and not r.own("results/prms/mc_soft")


def test_an_ablation_before_its_base_run_is_told_to_run_the_base_first(tmp_path):
    r = runs(ROOT / "config/ablations/aggregation.yaml")
    msg = r.base_unfinished(tmp_path)
    assert "'aggregation'" in msg and "base run 'embedded'" in msg and "make run" in msg
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper/report.md").write_text("base report")
    assert r.base_unfinished(tmp_path) is None
    assert runs().base_unfinished(tmp_path / "empty") is None  # the base run itself


def test_an_ablation_changing_shared_files_is_refused(tmp_path):
    abl = overlay(tmp_path, "run: {name: x, ablation: true}\nmodels: {smollm2: {dtype: float32}}\n")
    with pytest.raises(ValueError, match="own working directory"):
        runs(abl)


def test_the_3m_mix_is_a_named_run_beside_the_paper_run_adding_its_72b_policy():
    # config/paper_3m.yaml adds a model (its own directory under resources/): not a change of shared files
    files = [ROOT / "config/paper.yaml", ROOT / "config/paper_3m.yaml"]
    cfg = load_config(*files)
    r = plan.RunPaths(cfg, plan.base_config(files, cfg))
    assert r.named and r.prefix == "runs/paper_3m/"
    train = next(iter(cfg["problems"]))
    # every mixed policy's responses and the joined labels are the run's own; the problems are the base run's
    assert r.inp(f"results/data_policies/qwen2_math_72b/responses/{train}.parquet").startswith("runs/paper_3m/")
    assert r.inp(f"results/labels/mc/{train}/shard0of64.parquet").startswith("runs/paper_3m/")
    assert r.inp(f"results/problems/{train}.parquet") == f"results/problems/{train}.parquet"


def test_a_seed_replica_samples_labels_and_trains_again_under_its_own_name():
    r = runs(ROOT / "config/seeds/seed1.yaml")
    cfg = load_config(BASE)
    train, bench = next(iter(cfg["problems"])), next(iter(cfg["benchmarks"]))
    assert r.prefix == "runs/seed1/"
    for path in (f"results/samples/{bench}.parquet", f"results/samples/{train}.parquet",
                 f"results/labels/mc/{train}.parquet", f"results/labels/judge/{train}.parquet",
                 "results/prms/mc_hard", f"results/scores/mc_hard/{bench}.parquet"):
        assert r.inp(path) == f"runs/seed1/{path}", path
    assert r.inp(f"results/problems/{bench}.parquet") == f"results/problems/{bench}.parquet"   # not a seed's


def test_a_learning_rate_ablation_retrains_on_the_base_runs_tokens(tmp_path):
    """Full fine-tuning's tokens files (rule tokenize_trainset) follow the token settings, not all of
    `training`: a learning-rate ablation trains its own PRMs on the base run's tokens; max_length does not."""
    paper = ROOT / "config/paper.yaml"

    def paper_runs(text):
        files = [paper, overlay(tmp_path, text)]
        return plan.RunPaths(load_config(*files), plan.base_config(files, load_config(*files)))

    lr = paper_runs("run: {name: lr, ablation: true}\ntraining: {learning_rate: 1.0e-5}\n")
    assert lr.inp("results/trainsets/tokens/mc_hard.parquet") == "results/trainsets/tokens/mc_hard.parquet"
    assert lr.inp("results/prms/mc_hard") == "runs/lr/results/prms/mc_hard"
    ml = paper_runs("run: {name: ml, ablation: true}\ntraining: {max_length: 2048}\n")
    assert ml.inp("results/trainsets/tokens/mc_hard.parquet") == "runs/ml/results/trainsets/tokens/mc_hard.parquet"
    assert ml.inp("results/trainsets/mc_hard.parquet") == "results/trainsets/mc_hard.parquet"


def test_an_unknown_result_path_is_an_error():
    r = runs(ROOT / "config/ablations/aggregation.yaml")
    with pytest.raises(ValueError, match="FAMILIES"):
        r.own("results/new_kind/x.parquet")


class _Wc(dict):
    """Snakemake's wildcards object as an input function sees it (items())."""

    def __init__(self, **kw):
        super().__init__(kw)


def test_a_resized_pool_owns_its_training_features_and_reads_the_cases_features(tmp_path):
    # the shared frozen-base pass over the training texts covers the pool: a new pool is a new pass
    ov = tmp_path / "pool.yaml"
    ov.write_text("run: {name: pool_n96, ablation: true}\naudit: {per_cell: 16}\n")
    r = runs(ov)
    assert r.own(f"results/features/{plan.TRAINING_FEATURES_SOURCE}.safetensors")
    assert r.own("results/labels/audit/slice.parquet") and r.own("results/trainsets/exact.parquet")
    assert not r.own("results/features/processbench/cases.parquet".replace(".parquet", ".safetensors"))


def test_an_overlay_keeping_the_base_run_name_is_said(tmp_path):
    """docs/evaluate-your-prm.md's overlay has no run: of its own: the dry run says it rewrites the base
    run's tables; an ablation with its own name, or one file, says nothing."""
    mine = overlay(tmp_path, "prms: {max_length: 512}\n")
    line = plan.overlay_warning([BASE, mine], load_config(BASE, mine))
    assert line.startswith("prm-lessons: warning: ") and "\n" not in line
    assert f"{mine} keeps the run.name of {BASE} ('embedded')" in line and "run: {name:" in line
    abl = ROOT / "config/ablations/best_of_n.yaml"
    assert plan.overlay_warning([BASE, abl], load_config(BASE, abl)) is None
    assert plan.overlay_warning([BASE], load_config(BASE)) is None
