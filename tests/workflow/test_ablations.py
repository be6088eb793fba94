"""Ablation sweeps are config: config/ablations/*.yaml layered on either profile validate, and changing
one sweep value reruns only the jobs it affects (shown with Snakemake dry runs on a workflow state whose
every output is present and up to date)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from prm_lessons.config import load_config

ROOT = Path(__file__).resolve().parents[2]
ABLATIONS = sorted((ROOT / "config/ablations").glob("*.yaml"))
SNAKEMAKE = shutil.which("snakemake", path=str(Path(sys.executable).parent)) or shutil.which("snakemake")


def test_the_five_sweeps_exist():
    assert {p.stem for p in ABLATIONS} >= {"mc_threshold", "hard_vs_soft", "data_source", "aggregation", "best_of_n"}


@pytest.mark.parametrize("profile", ["config.yaml", "paper.yaml"])
@pytest.mark.parametrize("ablation", ABLATIONS, ids=lambda p: p.stem)
def test_ablation_layers_on_profile(profile, ablation):
    cfg = load_config(ROOT / "config" / profile, ablation)  # as `--configfile config/<profile> <ablation>`
    over = yaml.safe_load(ablation.read_text())
    for section, values in over.items():
        for key, val in values.items():
            assert cfg[section][key] == val, f"{ablation.name}: {section}.{key} not applied"


def test_mc_threshold_ablation_declares_the_papers_thresholds():
    from prm_lessons.plan import threshold_sweep_variants

    cfg = load_config(ROOT / "config/config.yaml", ROOT / "config/ablations/mc_threshold.yaml")
    sweep = threshold_sweep_variants(cfg)
    assert [t for t, _ in sweep] == [k / 8 for k in range(8)] and sweep[0][1] == "mc_hard"


# ---------------------------------------------------------------- reruns (dry runs)

def _smk(workdir, *args, configfiles=()):
    cmd = [SNAKEMAKE, "--cores", "1", "--directory", str(workdir), "--snakefile", str(ROOT / "Snakefile"),
           "--workflow-profile", "none", "--configfile", str(ROOT / "config/config.yaml"), *map(str, configfiles),
           *args]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout + res.stderr


def _planned_jobs(workdir, configfiles=()):
    """{rule: count} of a dry run."""
    return _job_stats(_smk(workdir, "-n", "--quiet", "rules", configfiles=configfiles))


def _job_stats(out: str) -> dict[str, int]:
    """{rule: count} of a dry run's output ({} when nothing is to be done)."""
    if "Nothing to be done" in out:
        return {}
    stats = out.split("Job stats:")[1].split("\n\n")[0]  # the table only, not the job list after it
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M) if m.group(1) != "total"}


@pytest.fixture(scope="module")
def up_to_date(tmp_path_factory):
    """A working directory where every output of the embedded default exists with recorded provenance:
    placeholders for the planned outputs (directories for directory outputs), then `--touch`."""
    if SNAKEMAKE is None:
        pytest.skip("snakemake not installed")
    wd = tmp_path_factory.mktemp("ablation_dag")
    summary = _smk(wd, "--summary")
    for line in summary.splitlines():
        parts = line.split("\t")
        if len(parts) < 5 or parts[0] == "output_file" or "/" not in parts[0]:
            continue
        path = wd / parts[0]
        if path.suffix:  # every file output has an extension; directory outputs (models, PRMs) have none
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        else:
            path.mkdir(parents=True, exist_ok=True)
    _smk(wd, "--touch", "--quiet", "all")
    assert _planned_jobs(wd) == {}, "the touched state is up to date"
    return wd


UPSTREAM = {"embedded_model", "problems", "processbench", "sample", "merge_samples", "grade_samples", "mc", "merge_mc",
            "judge",
            "merge_judge", "human_labels", "consensus", "trainset", "train_prm", "score_samples",
            "score_processbench", "critic_processbench"}


@pytest.mark.slow  # rerun semantics: a --summary/--touch state and dry runs on it (~40 s)
def test_aggregation_sweep_reruns_only_metric_and_table_jobs(up_to_date, tmp_path):
    abl = tmp_path / "agg.yaml"
    abl.write_text("analysis: {aggregation: min}\n")
    jobs = _planned_jobs(up_to_date, [abl])
    assert jobs, "a changed aggregation must redo the tables"
    assert not set(jobs) & UPSTREAM, f"no sampling/labelling/training/scoring: {jobs}"
    assert jobs.get("table6_bon_main") == 1 and jobs.get("paper_report") == 1


@pytest.mark.slow  # rerun semantics: a --summary/--touch state and dry runs on it (~40 s)
def test_threshold_sweep_value_trains_only_the_new_variant(up_to_date, tmp_path):
    """Adding one threshold: one more training set, PRM, its scoring and metrics, then the aggregates;
    no policy sampling, no MC relabelling (raw counts are kept), no judge, no retraining of other PRMs."""
    abl = tmp_path / "sweep.yaml"
    sweep = yaml.safe_load((ROOT / "config/config.yaml").read_text())["trainsets"]["mc_threshold_sweep"]
    assert 0.875 not in sweep
    abl.write_text(f"trainsets: {{mc_threshold_sweep: {sweep + [0.875]}}}\n")
    jobs = _planned_jobs(up_to_date, [abl])
    for rule in ("embedded_model", "problems", "sample", "merge_samples", "grade_samples", "mc", "merge_mc", "judge",
                 "human_labels", "consensus", "critic_processbench"):
        assert rule not in jobs, f"{rule} must not rerun: {jobs}"
    assert jobs["bon_table"] == 1 and jobs["fig5_mc_threshold"] == 1
    assert jobs["trainset"] == 1 and jobs["train_prm"] == 1
    # one job per Best-of-N policy scores every set (make run's embedded default has one policy)
    assert jobs["score_samples"] == 1 and jobs["score_processbench"] == 1


# ---------------------------------------------------------------- side by side (named runs)

def _planned_files(workdir, configfiles):
    """The output and log paths, and the input paths, of the jobs a dry run plans, and {rule: count}."""
    out = _smk(workdir, "-n", configfiles=configfiles)

    def field(name):
        return [p.strip() for m in re.finditer(rf"^\s+{name}: (.+)$", out, re.M) for p in m.group(1).split(",")]

    return field("(?:output|log)"), field("input"), _job_stats(out)  # one dry run for both


# per shipped ablation: upstream rules it must rerun (its own copies) and those it must read from the base run
SIDE_BY_SIDE = {
    "aggregation": (set(), UPSTREAM),
    # the embedded default labels its constructed pool with MC only (rule audit_labels; the judge: run-all)
    "best_of_n": ({"sample", "score_samples"}, {"audit_labels", "judge", "human_labels", "trainset", "train_prm",
                                                "score_processbench", "critic_processbench"}),
    # the judge labels nothing in make run (audit.judge, analysis.flaw_judge: run-all); its instrument check reruns
    "data_source": ({"judge_processbench", "human_labels", "trainset", "train_prm", "score_samples"},
                    {"sample", "grade_samples", "audit_slice", "audit_labels"}),
    "hard_vs_soft": ({"train_prm", "score_samples", "score_processbench"},
                     {"sample", "audit_labels", "judge", "human_labels", "trainset"}),
    "mc_threshold": ({"trainset", "train_prm", "score_samples"},
                     {"sample", "audit_labels", "judge", "human_labels"}),
}


@pytest.mark.slow  # dry runs on the --summary/--touch state (~15 s each)
@pytest.mark.parametrize("name", sorted(SIDE_BY_SIDE))
def test_ablation_overlay_beside_the_base_run(up_to_date, name):
    """`--configfile config/config.yaml config/ablations/X.yaml` on a finished base run: every file a job
    of it writes (outputs and logs) is under runs/X/, so no file of the base run changes, and it reruns
    only what X changes (the upstream results it does not change are read from the base run)."""
    abl = ROOT / "config/ablations" / f"{name}.yaml"
    assert yaml.safe_load(abl.read_text())["run"] == {"name": name, "ablation": True}
    paths, inputs, jobs = _planned_files(up_to_date, [abl])
    assert paths and jobs
    outside = [p for p in paths if not p.startswith(f"runs/{name}/")]
    assert not outside, f"{name} writes files of the base run: {outside[:5]}"
    rerun, reused = SIDE_BY_SIDE[name]
    assert rerun <= set(jobs), f"{name} must recompute {sorted(rerun - set(jobs))}: {jobs}"
    assert not reused & set(jobs), f"{name} must read these from the base run: {sorted(reused & set(jobs))}"
    assert jobs["paper_report"] == 1 and f"runs/{name}/paper/report.md" in paths
    assert any(p.startswith("results/") for p in inputs), "what it does not change is read from the base run"


@pytest.mark.slow  # a dry run on the --summary/--touch state
def test_compare_runs_reads_each_runs_tables(up_to_date):
    """run.compare (off by default): one job reading the base run's and each ablation's own tables."""
    own = up_to_date / "runs/aggregation/results/tables"
    own.mkdir(parents=True, exist_ok=True)
    made = [own / "bon.csv", own / "processbench.csv"]
    for p in made:
        p.touch()
    try:
        out = _smk(up_to_date, "-n", "compare_runs", "--config", "run={compare: [embedded, aggregation]}")
    finally:
        for p in made:
            p.unlink()
    inputs = [p.strip() for m in re.finditer(r"^\s+input: (.+)$", out, re.M) for p in m.group(1).split(",")]
    assert {"results/tables/bon.csv", "runs/aggregation/results/tables/bon.csv",
            "results/tables/processbench.csv", "runs/aggregation/results/tables/processbench.csv"} <= set(inputs)
    assert re.search(r"^compare_runs\s+1$", out, re.M) and re.search(r"^total\s+1$", out, re.M)
