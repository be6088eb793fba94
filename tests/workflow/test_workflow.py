"""Workflow-level tests: dry runs of both profiles plan the right DAG, and the tiny config runs end to
end (slow; a real model). Snakemake runs as a subprocess, as users run it."""
from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import embedded_run_dir
from dag import dry_run, job_counts
from tamper import flip_last_byte_of_first_column

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def smk(*args, cwd=ROOT, timeout=600, check=True):
    proc = subprocess.run([*SNAKEMAKE, *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def test_embedded_dry_run_plans_every_stage(embedded_plan):
    # MC of the embedded default runs on the constructed pool (rule audit_labels, trainsets.responses)
    # (the labelling judge is run-all's: analysis.flaw_judge and audit.judge are off; its instrument check runs)
    for rule in ("problems", "sample", "merge_samples", "bon_baselines", "audit_labels", "judge_processbench",
                 "trainset", "train_prm", "score_samples", "bon_metrics", "processbench_metrics",
                 "processbench_paired"):
        assert embedded_plan.counts.get(rule, 0) >= 1, (
            f"rule {rule} missing from the embedded DAG: {embedded_plan.counts}")


def test_head_mode_shares_base_features_once_per_table(embedded_plan):
    import yaml

    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    assert cfg["training"]["mode"] == "head"
    # each benchmark of each Best-of-N policy + the ProcessBench cases + its dev split + the sampled training
    # responses (read by every head-only variant labelled on them: one pass, not one per variant)
    policies = cfg["bon"].get("policies") or {"policy": {}}
    assert embedded_plan.counts["step_features"] == sum(
        len(p.get("benchmarks") or cfg["benchmarks"]) for p in policies.values()) + 2 + 1
    # every variant plus one per sweep threshold that no declared variant has (0 is mc_hard's)
    sweep = [t for t in cfg["trainsets"]["mc_threshold_sweep"]
             if t != cfg["trainsets"]["variants"]["mc_hard"]["threshold"]]
    assert embedded_plan.counts["train_prm"] == len(cfg["trainsets"]["variants"]) + len(sweep)


@pytest.mark.slow
def test_full_mode_plans_no_shared_features(tmp_path):
    full = tmp_path / "full.yaml"
    full.write_text("training:\n  mode: full\n  resamples: 0\n")  # resample heads are head mode's only
    counts = job_counts(dry_run("--cores", "2", "--configfile", "config/config.yaml", str(full)))
    assert "step_features" not in counts and counts["score_samples"] >= 1


def test_paper_dry_run_plans_full_sampling_dag(paper_plan):
    counts = paper_plan.counts
    import yaml

    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    # every problem set of the primary policy, every benchmark of each other Best-of-N policy
    others = list((paper["bon"].get("policies") or {}).values())[1:]
    n_sets = len(paper["benchmarks"]) + len(paper["problems"]) + sum(
        len(p.get("benchmarks") or paper["benchmarks"]) for p in others)
    from prm_lessons import plan

    # sampling.problems_per_shard: each set's jobs follow its size, at most sampling.shards
    jobs = sum(len(plan.sample_shards(paper, d, p)) for p, spec in plan.bon_policies(paper).items()
               for d in spec["benchmarks"] + (list(paper["problems"]) if spec["primary"] else []))
    assert counts["sample"] == jobs < n_sets * paper["sampling"]["shards"]
    assert counts["merge_samples"] == n_sets
    assert "embedded_model" not in counts  # Hub models only


def test_bad_config_stops_before_any_job(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("sampling:\n  n_samplez: 3\n")
    proc = smk("-n", "--cores", "1", "--configfile", "config/config.yaml", str(bad), check=False)
    assert proc.returncode != 0
    assert "sampling.n_samplez" in proc.stdout + proc.stderr
    assert "Job stats" not in proc.stdout


# make run's DAG, shrunk. make run-all's additions (config/all.yaml: second policy, Best-of-N judges, search,
# critics) are the paper DAG's rules too: the CI rehearsal runs them for real on CPU (test_rehearsal_report
# checks their token counts), so this run does not start their engines a second time.
TEST_CFG = ["--configfile", str(ROOT / "config/config.yaml"), str(ROOT / "config/test.yaml")]


@pytest.mark.slow
def test_killed_shard_is_completed_on_rerun_without_duplicates(tmp_path, embedded_model_dir):
    wd = embedded_run_dir(tmp_path, embedded_model_dir)
    two = tmp_path / "two_shards.yaml"  # config/test.yaml samples in one shard; this test needs two
    two.write_text("sampling:\n  shards: 2\n")
    cfg = [*TEST_CFG, str(two)]
    target = "results/samples/arith.parquet"
    base = [*SNAKEMAKE, target, "--cores", "1", "--directory", str(wd), *cfg]
    smk(target.replace("samples/arith.parquet", "problems/arith.parquet"), "--cores", "1", "--directory", str(wd), *cfg)
    out_path = tmp_path / "killed_run.out"  # a file, not a pipe: an unread pipe can block Snakemake
    proc = subprocess.Popen(base, cwd=ROOT, env=ENV, stdout=out_path.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    shards = [wd / f"results/responses/arith/shard{i}of2.parquet" for i in range(2)]  # the sample jobs' outputs
    logs = [wd / f"logs/sample/arith/shard{i}of2.log" for i in range(2)]
    # with one core the second job starts (its log appears) only after Snakemake has recorded the first
    # one as finished; killing before that would rightly count the first shard incomplete. Snakemake
    # may schedule either shard first, so wait until one shard exists and the other's log appeared.
    def first_done():
        for i in range(2):
            if shards[i].exists() and logs[1 - i].exists():
                return i
        return None

    deadline = time.time() + 900
    while first_done() is None and time.time() < deadline and proc.poll() is None:
        time.sleep(1)
    done = first_done()
    if done is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        out = out_path.read_text()
        raise AssertionError(f"no shard finished while the other was in flight:\n{out[-4000:]}")
    shard0 = shards[done]
    os.killpg(proc.pid, signal.SIGKILL)  # kill the run while the second shard is in flight
    proc.wait()
    assert not (wd / target).exists()
    mtime0 = shard0.stat().st_mtime
    smk("--unlock", "--cores", "1", "--directory", str(wd), *cfg)  # a SIGKILLed Snakemake leaves its lock
    # no --rerun-incomplete: the workflow profile (profiles/default) sets it, so recovery is one command
    smk(target, "--cores", "1", "--directory", str(wd), *cfg, timeout=900)
    assert shard0.stat().st_mtime == mtime0, "the finished shard was redone"
    df = pd.read_parquet(wd / target)
    problems = pd.read_parquet(wd / "results/problems/arith.parquet")
    assert not df.duplicated(["problem_id", "sample_idx"]).any()
    assert set(df["problem_id"]) == set(problems["problem_id"])


@pytest.mark.slow
def test_tiny_config_end_to_end(tmp_path, embedded_model_dir):
    wd = embedded_run_dir(tmp_path, embedded_model_dir)
    smk("--cores", "2", "--directory", str(wd), *TEST_CFG, timeout=2400)
    base = pd.read_csv(wd / "results/tables/bon_baselines.csv")
    assert {"arith", "chain_sum", "average"} <= set(base["benchmark"])
    assert base[["pass", "maj"]].apply(lambda c: c.between(0, 1)).all().all()  # fractions
    assert (base["pass"] >= base["maj"]).all()
    for p in ("results/tables/trainsets.csv", "results/tables/bon.csv", "results/tables/processbench.csv",
              "paper/report.md"):
        assert (wd / p).exists(), p
    # every model-calling job counted its tokens beside its log (prm_lessons.jobs.budget; bench/token_budget.py)
    sidecars = [json.loads(f.read_text()) for f in (wd / "logs").rglob("*.tokens.json")]
    by_rule = {r["rule"]: r for r in sidecars}
    for rule in ("sample", "judge_processbench", "audit_labels"):
        assert by_rule[rule]["prefill_tokens"] > 0 and by_rule[rule]["decode_tokens"] > 0, by_rule.get(rule)
    assert by_rule["step_features"]["prefill_tokens"] > 0 and by_rule["step_features"]["decode_tokens"] == 0
    assert not {r["rule"] for r in sidecars} & {"grade_samples", "bon_metrics", "paper_report"}  # no model
    # an ablation beside the finished run: its own report under runs/<name>/, the base run's files unchanged
    before = _file_digests(wd)
    smk("--cores", "2", "--directory", str(wd), *TEST_CFG, str(ROOT / "config/ablations/aggregation.yaml"),
        timeout=1200)
    assert _file_digests(wd) == before, "the ablation changed a file of the base run"
    assert (wd / "runs/aggregation/paper/report.md").exists()
    assert (wd / "runs/aggregation/results/tables/table13_scoring_strategies.csv").exists()
    assert not (wd / "runs/aggregation/results/samples").exists()  # sampling is the base run's


def _file_digests(wd: Path) -> dict[str, str]:
    """sha256 of every file of a run directory but Snakemake's own state and the ablations' runs/."""
    return {str(p.relative_to(wd)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(wd.rglob("*"))
            if p.is_file() and p.relative_to(wd).parts[0] not in (".snakemake", "runs")}


def _truncate_keeping_mtime(path: Path) -> None:
    st = path.stat()
    path.write_bytes(path.read_bytes()[: st.st_size // 2])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_corrupt_intermediate_is_regenerated_by_its_producer(tmp_path):
    """A table corrupted in place with its mtime kept (Snakemake sees nothing; a flipped byte, then a
    truncation): the consumer's job fails naming the file and moves it aside; the same command again
    reruns the producer, then the consumer, and the state is up to date."""
    wd = tmp_path / "run"
    target = "results/metrics/processbench/baseline_first_step.json"
    args = (target, "--cores", "1", "--directory", str(wd))
    smk(*args)
    cases = wd / "results/processbench/cases.parquet"
    good = cases.read_bytes()
    for corrupt in (flip_last_byte_of_first_column, _truncate_keeping_mtime):
        corrupt(cases)
        proc = smk(*args, "--forcerun", "processbench_baseline", check=False)
        assert proc.returncode != 0, corrupt.__name__
        out = proc.stdout + proc.stderr
        assert "results/processbench/cases.parquet: corrupt input moved to" in out, (corrupt.__name__, out[-3000:])
        assert not cases.exists() and (wd / "results/processbench/cases.parquet.corrupt").exists()
        proc = smk(*args)
        assert re.search(r"localrule processbench:\n", proc.stdout + proc.stderr), "the producer did not rerun"
        assert cases.read_bytes() == good  # regenerated, byte-identical (deterministic producer)
        assert (wd / target).exists()
    assert "Nothing to be done" in smk(*args, "-n").stdout
