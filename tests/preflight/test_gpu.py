"""The GPU preflight (config/preflight.yaml + prm_lessons.preflight.gpu) up to the devices: the overlay
validates, its dry run plans exactly the preflight's jobs (one DAG build, shared), and the check lines
are read from outputs and job logs (pass, wrong output, failed job with its reason, job never started)."""
import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from prm_lessons.config import load_config
from prm_lessons.preflight import gpu as preflight
from prm_lessons.preflight import gpu_env
from prm_lessons.tables import write_table

ROOT = Path(__file__).resolve().parents[2]
N_PROBLEMS, N = 16, 4


@pytest.fixture(scope="module")
def config():
    return load_config(*preflight.CONFIGS)


@pytest.fixture(scope="module")
def specs(config):
    return preflight.plan_checks(config)


@pytest.fixture(scope="module")
def dry_run(specs, tmp_path_factory):
    """The preflight's own Snakemake command as a dry run of every job (--forceall): {rule: count} and
    {rule: [resources line of each job]}."""
    work = tmp_path_factory.mktemp("preflight-work")
    out = subprocess.run(preflight.snakemake_cmd(work, specs, ["-n", "--forceall"]), capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    stats = out.stdout.split("Job stats:")[1].split("\n\n")[0]
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)
              if m.group(1) != "total"}
    resources: dict[str, list[str]] = {}
    for block in re.split(r"^(?:localrule|rule) ", out.stdout, flags=re.M)[1:]:
        rule = block.split(":", 1)[0]
        line = next((ln.strip() for ln in block.splitlines() if ln.strip().startswith("resources:")), "")
        wc = next((ln.strip() for ln in block.splitlines() if ln.strip().startswith("wildcards:")), "")
        resources.setdefault(rule, []).append(f"{line} | {wc}")
    return counts, resources


def test_overlay_validates_and_shrinks_paper(config):
    assert list(config["benchmarks"]) == ["gsm8k"] and config["benchmarks"]["gsm8k"]["limit"] == N_PROBLEMS
    assert config["sampling"]["shards"] == 1 and config["bon"]["n"] == N and config["prms"]["shards"] == 2
    t = config["training"]
    assert (t["gpus"], t["max_steps"], t["mode"], t["gpus_scoring"]) == (2, 2, "full", 1)
    assert t["deepspeed"] == "config/deepspeed/zero3.json"
    assert config["prms"]["trained_backend"] == "vllm"
    assert config["prms"]["models"]["qwen25_math_prm_7b"]["backend"] == "vllm"
    # what the paper run uses, unchanged
    paper = load_config(preflight.CONFIGS[0])
    assert config["models"] == paper["models"] and config["roles"] == paper["roles"]
    assert {k: v for k, v in config["benchmarks"]["gsm8k"].items() if k != "limit"} == \
        {k: v for k, v in paper["benchmarks"]["gsm8k"].items() if k != "limit"}


def test_dry_run_plans_exactly_the_preflight_jobs(dry_run):
    counts, _ = dry_run
    assert counts == {
        # local: downloads, data, labels, merges
        "download_model": 3, "benchmark_file": 1, "problems": 1, "processbench_file": 1, "processbench": 1,
        "math_shepherd_labels": 1, "trainset": 1, "merge_samples": 1, "merge_sample_scores": 1,
        "tokenize_trainset": 1,  # CPU: the training set tokenised once, read by the training's ranks
        # GPU: one sampling job, 2 shards of the released PRM + 1 of the trained one + 1 of the PRM-72B at
        # TP 4, one training
        "sample": 1, "score_samples": 4, "train_prm": 1,
    }


def test_dry_run_gpu_requests(dry_run):
    _, res = dry_run
    assert len(res["sample"]) == 1 and "gpu=1," in res["sample"][0] and "dataset=gsm8k" in res["sample"][0]
    assert "policies/" not in " ".join(sum(res.values(), []))  # no second policy
    (train,) = res["train_prm"]
    assert "gpu=2," in train and "variant=math_shepherd" in train
    # one machine: Snakemake assigns no GPU ids, so the GPU jobs take the one gpu_jobs slot in turn
    assert all("gpu_jobs=1" in r for rule in preflight.GPU_RULES for r in res[rule])
    scored = sorted(re.search(r"prm=(\w+), shard=(\d)", r).groups() for r in res["score_samples"])
    assert scored == [("math_shepherd", "0"), ("qwen25_math_prm_72b", "0"), ("qwen25_math_prm_7b", "0"),
                      ("qwen25_math_prm_7b", "1")]
    # the tensor-parallel job asks for its 4 GPUs, the others for one
    assert [("gpu=4," in r) for r in res["score_samples"] if "prm=qwen25_math_prm_72b" in r] == [True]
    assert all("gpu=1," in r for r in res["score_samples"] if "prm=qwen25_math_prm_72b" not in r)
    # cluster.max_runtime caps every GPU job at an hour
    assert all("runtime=60," in r for rule in preflight.GPU_RULES for r in res[rule])


def test_targets_and_names(specs):
    assert [s.name for s in specs] == [
        "sample (vLLM TP=1)", "score_samples qwen25_math_prm_7b (vLLM pooling TP=1, 2 shards)",
        "merge_sample_scores qwen25_math_prm_7b", "train_prm math_shepherd (ZeRO-3, 2 GPUs)",
        "score_samples math_shepherd (trained PRM reloaded by vLLM, TP=1)",
        "score_samples qwen25_math_prm_72b (vLLM pooling TP=4, shard 0 of 2)"]
    assert [s.gpus for s in specs] == [1, 1, 0, 2, 1, 4]


def test_plan_has_a_tensor_parallel_4_job(config, specs, tmp_path):
    """The preflight's config scores the released PRM-72B through vLLM at tensor_parallel_size 4; on one
    machine with fewer than 4 GPUs the driver layers the stand-in overlay: the 7B PRM at TP 2."""
    from prm_lessons import plan

    resolved = plan.resolve_prm_specs(config)
    assert resolved[preflight.TP_PRM]["backend"] == "vllm"
    assert resolved[preflight.TP_PRM]["vllm"]["tensor_parallel_size"] == 4
    assert specs[-1].outputs == ["results/scores/qwen25_math_prm_72b/gsm8k/shard0of2.parquet"]
    assert preflight.config_files(tmp_path, cluster=True, n_gpus=0) == preflight.CONFIGS
    assert preflight.config_files(tmp_path, cluster=False, n_gpus=4) == preflight.CONFIGS
    small = preflight.config_files(tmp_path, cluster=False, n_gpus=2)
    assert small[:2] == preflight.CONFIGS and small[2] == tmp_path / "tp_standin.yaml"
    standin_cfg = load_config(*small)
    tp = plan.resolve_prm_specs(standin_cfg)[preflight.STANDIN_PRM]
    assert tp["vllm"]["tensor_parallel_size"] == 2 and tp["backend"] == "vllm"
    assert standin_cfg["models"][preflight.STANDIN_PRM]["id"] == config["models"]["qwen25_math_prm_7b"]["id"]
    last = preflight.plan_checks(standin_cfg)[-1]
    assert last.name == ("score_samples qwen25_math_prm_7b_tp2 (vLLM pooling TP=2, shard 0 of 2; stand-in: "
                         "fewer than 4 GPUs here)") and last.gpus == 2
    cmd = preflight.snakemake_cmd(tmp_path, preflight.plan_checks(standin_cfg), [], configs=small)
    assert cmd[cmd.index("--resources") + 1] == "gpu=2" and str(small[2]) in cmd


# -- check lines from fixture outputs and logs ----------------------------------------------------------

def _samples(n_problems=N_PROBLEMS, n=N):
    """What the sample jobs write: responses, ungraded (rule grade_samples grades them on CPU)."""
    rows = [{"problem_id": f"gsm8k-{p:05d}", "sample_idx": i, "dataset": "gsm8k", "question": "q", "answer": "1",
             "response": "Step 1.\n\nSo \\boxed{1}.", "steps": ["Step 1.", "So \\boxed{1}."],
             "n_tokens": 12, "finish_reason": "stop"}
            for p in range(n_problems) for i in range(n)]
    return pd.DataFrame(rows)


def _scores(samples, score=0.8):
    return pd.DataFrame({"problem_id": samples["problem_id"], "sample_idx": samples["sample_idx"],
                         "step_scores": [[score, score / 2]] * len(samples)})


def _write(work, rel, df, kind):
    write_table(df, work / rel, kind)


@pytest.fixture
def work(tmp_path):
    """A working directory holding what a passing preflight leaves."""
    s = _samples()
    _write(tmp_path, "results/responses/gsm8k/shard0of1.parquet", s, "responses")
    _write(tmp_path, "results/responses/gsm8k.parquet", s, "responses")
    half = s["problem_id"] < f"gsm8k-{N_PROBLEMS // 2:05d}"
    _write(tmp_path, "results/scores/qwen25_math_prm_7b/gsm8k/shard0of2.parquet", _scores(s[half]), "step_scores")
    _write(tmp_path, "results/scores/qwen25_math_prm_7b/gsm8k/shard1of2.parquet", _scores(s[~half]), "step_scores")
    _write(tmp_path, "results/scores/qwen25_math_prm_7b/gsm8k.parquet", _scores(s), "step_scores")
    _write(tmp_path, "results/scores/math_shepherd/gsm8k/shard0of2.parquet", _scores(s[half], 0.4), "step_scores")
    _write(tmp_path, "results/scores/qwen25_math_prm_72b/gsm8k/shard0of2.parquet", _scores(s[half], 0.9),
           "step_scores")
    m = tmp_path / "results/prms/math_shepherd/train_metrics.json"
    m.parent.mkdir(parents=True)
    m.write_text(json.dumps({"global_steps": 2, "world_size": 2, "loss_history": [0.71, 0.66],
                             "layout": "released", "tokens_per_second": 1234.5}))
    return tmp_path


def _lines(specs, work, since=None):
    return dict(ln.split(": ", 1) for ln in preflight.report_lines(specs, work, since))


def test_all_pass(specs, work):
    lines = _lines(specs, work)
    assert lines["PASS sample (vLLM TP=1)"] == "16 problems x 4 responses (0 empty)"
    assert lines["PASS score_samples qwen25_math_prm_7b (vLLM pooling TP=1, 2 shards)"].startswith(
        "64 responses, 128 step scores in [0, 1]")
    assert lines["PASS merge_sample_scores qwen25_math_prm_7b"].startswith("2 shards -> 64 responses")
    assert lines["PASS train_prm math_shepherd (ZeRO-3, 2 GPUs)"] == \
        "2 steps on 2 ranks, loss 0.6600, 1234 tokens/s, saved in the released layout"
    assert lines["PASS score_samples math_shepherd (trained PRM reloaded by vLLM, TP=1)"].startswith("32 responses")
    assert lines["PASS score_samples qwen25_math_prm_72b (vLLM pooling TP=4, shard 0 of 2)"].startswith(
        "32 responses, 64 step scores in [0, 1]")


def test_failed_job_gives_its_last_error_line(specs, work):
    (work / "results/prms/math_shepherd/train_metrics.json").unlink()
    log = work / "logs/training/math_shepherd.log"
    log.parent.mkdir(parents=True)
    log.write_text("INFO loading base\nTraceback (most recent call last):\n  File \"trainer.py\", line 1716\n"
                   "    raise ValueError(msg)\nValueError: The model's config file has neither `hidden_size` nor "
                   "`hidden_sizes`\n[rank1]: torch.distributed.elastic... exited with code 1\n")
    lines = preflight.report_lines(specs, work)
    assert "FAIL train_prm math_shepherd (ZeRO-3, 2 GPUs): ValueError: The model's config file has neither " \
           "`hidden_size` nor `hidden_sizes` (logs/training/math_shepherd.log)" in lines
    assert sum(ln.startswith("FAIL") for ln in lines) == 1


def test_job_that_never_started_and_stale_logs(specs, work):
    (work / "results/responses/gsm8k/shard0of1.parquet").unlink()
    log = work / "logs/sample/gsm8k/shard0of1.log"
    log.parent.mkdir(parents=True)
    log.write_text("RuntimeError: from an earlier preflight\n")
    os.utime(log, (1000, 1000))
    line = preflight.report_lines(specs, work, since=2000)[0]
    assert line.startswith("FAIL sample (vLLM TP=1): results/responses/gsm8k/shard0of1.parquet not made and no "
                           "job log: the job did not start")
    assert preflight.report_lines(specs, work)[0] == \
        "FAIL sample (vLLM TP=1): RuntimeError: from an earlier preflight (logs/sample/gsm8k/shard0of1.log)"


def test_wrong_outputs_fail(specs, work):
    s = _samples()
    _write(work, "results/responses/gsm8k/shard0of1.parquet", s[s["sample_idx"] < 3], "responses")
    _write(work, "results/scores/qwen25_math_prm_7b/gsm8k.parquet", _scores(s.iloc[:-1]), "step_scores")
    _write(work, "results/scores/math_shepherd/gsm8k/shard0of2.parquet", _scores(s, float("nan")), "step_scores")
    m = work / "results/prms/math_shepherd/train_metrics.json"
    m.write_text(json.dumps({"global_steps": 1, "world_size": 1, "loss_history": [0.7], "layout": "project"}))
    lines = _lines(specs, work)
    assert lines["FAIL sample (vLLM TP=1)"] == "shard0of1.parquet: 16 problems with [3] responses each, expected 16 x 4"
    assert lines["FAIL merge_sample_scores qwen25_math_prm_7b"].endswith("1 responses missing, 0 not in the samples")
    assert "128 scores outside [0, 1]" in lines["FAIL score_samples math_shepherd (trained PRM reloaded by vLLM, TP=1)"]
    train = lines["FAIL train_prm math_shepherd (ZeRO-3, 2 GPUs)"]
    assert "1 optimizer steps, not 2" in train and "world size 1, not 2 GPUs" in train and "'project' layout" in train


def test_last_error_line():
    vllm = ("INFO engine starting\n(EngineCore pid=12) RuntimeError: CUDA error: initialization error\n"
            "Traceback (most recent call last):\n  File \"x.py\", line 3\n"
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
    assert preflight.last_error_line(vllm).startswith("RuntimeError: Engine core initialization failed")
    assert preflight.last_error_line("prm_lessons.jobs.hardware.GPUNotFoundError: rule 'sample' asked for 1 GPU(s)\n") \
        .startswith("prm_lessons.jobs.hardware.GPUNotFoundError:")
    assert preflight.last_error_line("step 1\nslurmstepd: error: Detected 1 oom_kill event\nbye\n") == \
        "slurmstepd: error: Detected 1 oom_kill event"
    assert preflight.last_error_line("\n\n") is None


# -- the driver ----------------------------------------------------------------------------------------

def test_command_local_serialises_gpu_jobs_cluster_resolves_profile(specs, tmp_path, monkeypatch):
    local = preflight.snakemake_cmd(tmp_path, specs, [])
    # the largest job's GPUs: the TP-4 one
    assert local[local.index("--resources") + 1:local.index("--resources") + 3] == ["gpu=4", "gpu_jobs=1"]
    assert "--forcerun" in local and local[local.index("--retries") + 1] == "0"
    monkeypatch.chdir(ROOT)
    cluster = preflight.snakemake_cmd(tmp_path, specs, ["--profile", "slurm"], resume=True)
    assert "--cores" not in cluster and "--forcerun" not in cluster
    assert cluster[-2:] == ["--profile", str((ROOT / "slurm").resolve())]


def test_cluster_or_one_machine(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("SNAKEMAKE_PROFILE", raising=False)
    assert preflight.on_cluster(["--profile", "slurm"]) and preflight.on_cluster(["--executor=slurm"])
    assert not preflight.on_cluster([]) and not preflight.on_cluster(["--profile", "profiles/local"])
    assert not preflight.on_cluster(["-n", "--executor", "local"])
    monkeypatch.setenv("SNAKEMAKE_PROFILE", "slurm")
    assert preflight.on_cluster([])


def test_floor_failure_stops_before_any_job(monkeypatch, capsys):
    monkeypatch.setattr(gpu_env, "run_checks", lambda require_driver: [
        gpu_env.Check("driver", "FAIL", "575.57.08 (nvidia-smi) is below 580")])
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("snakemake started"))
    assert preflight.main([]) == 1
    out = capsys.readouterr().out
    assert "FAIL driver: 575.57.08" in out and "stopped before any job" in out


def test_make_targets():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\npreflight-gpu:")[1].split("\n\n")[0]
    assert "$(GPU_VENV)/bin/python -m prm_lessons.preflight.gpu" in recipe and "$(SMK_ARGS)" in recipe
    setup = make.split("\nsetup-gpu:")[1].split("\n\n")[0]
    assert setup.rstrip().endswith("$(GPU_VENV)/bin/python -m prm_lessons.preflight.gpu_env")


# -- benchmarks.<name>.enabled (what lets the overlay keep one benchmark) --------------------------------

def test_disabled_benchmark_is_dropped_and_enabled_leaves_no_trace():
    base = ROOT / "config" / "config.yaml"
    cfg = load_config(base, overrides={"benchmarks": {"chain_sum": {"enabled": False}, "arith": {"enabled": True}},
                                       "bon": {"more_n": [{"n": 2, "benchmarks": ["arith"]}]}})
    assert list(cfg["benchmarks"]) == ["arith"]
    assert cfg["benchmarks"]["arith"] == load_config(base)["benchmarks"]["arith"]  # same params: nothing reruns


def test_disabled_benchmark_still_named_in_a_list_is_an_error():
    from prm_lessons.config import ConfigError

    base = ROOT / "config" / "config.yaml"
    with pytest.raises(ConfigError, match=r"bon\.more_n\.0\.benchmarks\.1.*chain_sum"):
        load_config(base, overrides={"benchmarks": {"chain_sum": {"enabled": False}}})
    with pytest.raises(ConfigError, match=r"`benchmarks`: every benchmark has enabled: false"):
        load_config(base, overrides={"benchmarks": {"chain_sum": {"enabled": False}, "arith": {"enabled": False}}})
    with pytest.raises(ConfigError, match=r"`problems\.train\.enabled`: only benchmarks"):
        load_config(base, overrides={"problems": {"train": {"enabled": False}}})


def test_failed_prerequisite_job_gets_its_own_line(work):
    log = work / "logs/download_model/qwen25_math_prm_7b.log"
    log.parent.mkdir(parents=True)
    log.write_text("fetching\nhuggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files "
                   "in the disk cache and outgoing traffic has been disabled.\n")
    output = ("[Wed Nov 25 17:00:00 2026]\nError in rule download_model:\n    jobid: 3\n"
              "    output: resources/hub/qwen25_math_prm_7b\n"
              "    log: logs/download_model/qwen25_math_prm_7b.log (check log file(s) for error details)\n\n"
              "Error in rule train_prm:\n    jobid: 10\n    log: logs/training/math_shepherd.log (check log file(s) "
              "for error details)\n\nError in rule trainset:\n    jobid: 9\n\n")
    assert preflight.failed_jobs(output) == [("download_model", ["logs/download_model/qwen25_math_prm_7b.log"]),
                                             ("train_prm", ["logs/training/math_shepherd.log"]), ("trainset", [])]
    assert preflight.prerequisite_lines(output, work) == [
        "FAIL download_model (needed by the checks): huggingface_hub.errors.LocalEntryNotFoundError: Cannot find "
        "the requested files in the disk cache and outgoing traffic has been disabled. "
        "(logs/download_model/qwen25_math_prm_7b.log)",
        "FAIL trainset (needed by the checks): failed; see the Snakemake output above"]


def test_main_prints_one_line_per_check_and_exit_status(work, tmp_path_factory, monkeypatch, capsys):
    import shutil

    out = tmp_path_factory.mktemp("preflight-out")
    shutil.copytree(work, out / "work")
    monkeypatch.setattr(gpu_env, "run_checks", lambda require_driver: [gpu_env.Check("driver", "PASS", "580.65.06")])
    calls = []

    class FakeSnakemake:
        def __init__(self, cmd, **kwargs):
            calls.append(cmd)
            self.stdout = iter(["Building DAG of jobs...\n", "Error in rule trainset:\n", "    jobid: 9\n"])

        def wait(self):
            return 1

    monkeypatch.setattr(subprocess, "Popen", FakeSnakemake)
    assert preflight.main(["--out", str(out), "--resume", "--profile", "slurm"]) == 1
    text = capsys.readouterr().out
    assert calls and calls[0][calls[0].index("--directory") + 1] == str(out / "work")
    summary = text.split("\npreflight: 7 checks")[1].splitlines()[1:]
    assert summary[0] == "FAIL trainset (needed by the checks): failed; see the Snakemake output above"
    assert [ln.split(" ", 1)[0] for ln in summary[1:7]] == ["PASS"] * 6
    assert summary[-1] == "preflight: FAILED: 1 of 7"


def test_dry_run_through_main_prints_no_checks(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(gpu_env, "run_checks", lambda require_driver: [gpu_env.Check("driver", "SKIP", "no driver")])

    class FakeSnakemake:
        def __init__(self, cmd, **kwargs):
            self.stdout = iter(["Job stats:\n"])

        def wait(self):
            return 0

    monkeypatch.setattr(subprocess, "Popen", FakeSnakemake)
    assert preflight.main(["--out", str(tmp_path), "--profile", "slurm", "-n"]) == 0
    out = capsys.readouterr().out
    assert "no checks" in out and "FAIL" not in out
