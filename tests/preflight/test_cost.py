"""`make preflight-cost` (prm_lessons.preflight.cost) up to the device: what it would run and with which
arguments (from config/paper.yaml), its one-line refusal without a GPU, the rates it reads from a worker's
result, and --adopt writing measured rates into a rates file."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from prm_lessons.config import load_config
from prm_lessons.preflight import cost, gpu_hours

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def paper():
    return load_config(cost.PAPER)


@pytest.fixture
def measurements(paper, tmp_path):
    return {m.name: m for m in cost.plan_measurements(paper, 10, tmp_path / "cost" / "work")}


def test_plan_names_gpus_and_rates(measurements):
    assert list(measurements) == ["sample_seeded", "sample_unseeded", "mc_rounds", "tp4_sample", "train_8gpu"]
    assert {n: m.gpus for n, m in measurements.items()} == {
        "sample_seeded": 1, "sample_unseeded": 1, "mc_rounds": 1, "tp4_sample": 4, "train_8gpu": 8}
    rates = yaml.safe_load(cost.RATES_FILE.read_text())["rates"]
    for m in measurements.values():  # every rate it measures is a key of the rates file that names it
        assert all(rates[k]["measured_by"] == m.name for k in m.rates), m.name


def test_sampling_at_paper_settings_with_and_without_seeds(measurements, tmp_path):
    seeded, unseeded = measurements["sample_seeded"].args, measurements["sample_unseeded"].args
    assert seeded["seeded"] is True and unseeded["seeded"] is False
    assert seeded["model"]["name"] == "qwen25_math_7b_instruct" and seeded["model"]["tensor_parallel_size"] == 1
    s = seeded["sampling"]
    assert (s["n"], s["temperature"], s["top_p"], s["max_tokens"]) == (8, 0.7, 0.8, 2048) and seeded["n"] == 8
    assert {k: v for k, v in unseeded.items() if k not in ("seeded", "responses_out")} == \
        {k: v for k, v in seeded.items() if k not in ("seeded", "responses_out")}
    work = tmp_path / "cost" / "work"
    assert seeded["problems"] == str(work / "results/problems/math.parquet")
    assert seeded["model_dir"] == str(work / "resources/hub/qwen25_math_7b_instruct")
    assert seeded["budget_s"] == 600
    tp4 = measurements["tp4_sample"].args
    assert tp4["model"]["name"] == "qwen25_math_72b_instruct" and tp4["model"]["tensor_parallel_size"] == 4
    assert tp4["seeded"] and tp4["sampling"] == s


def test_mc_reads_the_seeded_responses_at_paper_k(measurements):
    mc = measurements["mc_rounds"].args
    assert mc["responses"] == measurements["sample_seeded"].args["responses_out"]
    assert (mc["mc"]["completions"], mc["mc"]["round_size"], mc["mc"]["protocol"]) == (8, 2, "early")
    assert mc["rounds"] == 3 and mc["max_responses"] == 512 and mc["model"]["name"] == "qwen25_math_7b_instruct"


def test_training_is_the_paper_job_for_50_steps(measurements, paper, tmp_path):
    t = measurements["train_8gpu"].args
    st = t["settings"]
    assert (st["gpus"], st["max_steps"], st["save_steps"], st["jit_checkpoint"]) == (8, 50, 0, False)
    pt = paper["training"]  # the paper's own batch geometry and DeepSpeed config, as its trainings run
    assert (st["precision"], st["gradient_checkpointing"]) == ("bf16", True)
    assert (st["batch_size"], st["gradient_accumulation_steps"], st["batch_tokens"]) == \
        (pt["batch_size"], pt["gradient_accumulation_steps"], pt["batch_tokens"])
    assert Path(st["deepspeed"]) == ROOT / pt["deepspeed"] and Path(st["deepspeed"]).exists()
    assert st["learning_rate"] == paper["training"]["learning_rate"] and st["mode"] == "full"
    assert t["trainset"].endswith("results/trainsets/math_shepherd.parquet")
    # the prerequisites' overlay: twice what 50 steps read, a micro-batch of 16,384 tokens holding at most
    # 64 instances of >= 256 tokens, on 8 GPUs (gradient accumulation 1)
    assert cost.train_overlay(paper) == {"math_shepherd": {"limit": 2 * 50 * 64 * 8}}


def test_prerequisites_and_commands(paper, measurements, tmp_path):
    chosen = list(measurements.values())
    assert cost.prerequisites(paper, chosen) == [
        "results/problems/math.parquet", "resources/hub/qwen25_math_7b_instruct",
        "resources/hub/qwen25_math_72b_instruct", "results/trainsets/math_shepherd.parquet"]
    assert cost.prerequisites(paper, [measurements["train_8gpu"]]) == [
        "resources/hub/qwen25_math_7b_instruct", "results/trainsets/math_shepherd.parquet"]
    cmd = cost.snakemake_cmd(tmp_path, ["results/problems/math.parquet"], tmp_path / "o.yaml")
    at = cmd.index("--configfile")
    assert cmd[at + 1:at + 3] == [str(cost.PAPER), str(tmp_path / "o.yaml")]
    assert cmd[cmd.index("--resources") + 1] == "gpu=0"  # only CPU jobs before the measurements
    w = cost.worker_cmd(measurements["tp4_sample"], Path("s.json"), Path("r.json"))
    assert w[1:] == ["-m", "prm_lessons.preflight.cost", "--measure", "tp4_sample", "--spec", "s.json",
                     "--result", "r.json"]
    assert set(cost.WORKERS) == set(measurements)


def test_refuses_without_a_gpu_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(cost, "cuda_device_count", lambda: 0)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("snakemake started"))
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail("a measurement started"))
    assert cost.main(["--out", "/nonexistent/never-made"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [cost.NO_GPU]


def test_plan_runs_nothing(monkeypatch, capsys):
    monkeypatch.setattr(cost, "cuda_device_count", lambda: pytest.fail("GPUs counted for --plan"))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("snakemake started"))
    assert cost.main(["--plan", "--only", "tp4_sample"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[0])["name"] == "tp4_sample" and len(lines) == 2
    assert lines[1] == ("prerequisites (snakemake): results/problems/math.parquet "
                        "resources/hub/qwen25_math_72b_instruct")


def test_rates_from_results():
    r = cost.rates_from("sample_seeded", {"generated_tokens": 1_200_000, "generate_seconds": 150.0,
                                          "load_seconds": 90.0, "responses": 2000})
    assert r == {"sample_7b": {"value": 8000.0, "unit": "tokens/s per GPU"},
                 "startup_7b_min": {"value": 1.5, "unit": "min per job"},
                 "tokens_per_response": {"value": 600.0, "unit": "tokens"}}
    r = cost.rates_from("tp4_sample", {"generated_tokens": 500_000, "generate_seconds": 200.0, "load_seconds": 300.0,
                                       "responses": 800})
    assert r == {"sample_72b_tp4": {"value": 2500.0, "unit": "tokens/s per TP-4 job"},
                 "startup_72b_min": {"value": 5.0, "unit": "min per job"}}
    assert set(cost.rates_from("sample_unseeded", {"generated_tokens": 10, "generate_seconds": 1.0,
                                                   "load_seconds": 1.0})) == {"sample_7b_unseeded"}
    r = cost.rates_from("mc_rounds", {"generated_tokens": 2_500_000, "generate_seconds": 400.0, "grade_seconds": 20.0,
                                      "completions": 10_000})
    assert r["mc_generate"]["value"] == 6250.0 and r["mc_grade_s_per_completion"]["value"] == 0.002
    assert r["mc_tokens_per_completion"]["value"] == 250.0
    assert cost.rates_from("train_8gpu", {"tokens_per_second": 18000}) == {
        "train_7b_8gpu": {"value": 18000.0, "unit": "tokens/s per 8-GPU job"}}
    assert cost.rates_from("mc_rounds", {"completions": 0}) == {}  # nothing generated: no rate, not a zero


def test_timed_engine_drops_seeds_only_when_asked():
    class C:
        n_tokens = 5

    class Engine:
        tokenizer = "tok"

        def __init__(self):
            self.seen = []

        def generate(self, prompts, spec, seeds=None):
            self.seen.append(seeds)
            return [[C(), C()] for _ in prompts]

    e = Engine()
    t = cost._Timed(e)
    t.generate(["a"], None, [3])
    assert e.seen == [[3]] and t.tokens == 10 and t.calls == 1 and t.tokenizer == "tok"


def test_adopt_marks_measured_rates_and_the_table_says_so(tmp_path):
    rates = tmp_path / "gpu_rates.yaml"
    shutil.copy(cost.RATES_FILE, rates)
    run = tmp_path / "cost_rates.json"
    run.write_text(json.dumps({"schema": 1, "created": "2026-12-01T10:00:00+00:00", "device": "NVIDIA H100 80GB HBM3",
                               "rates": {"sample_7b": {"value": 7812.5, "unit": "tokens/s per GPU",
                                                       "measurement": "sample_seeded"}}}))
    assert cost.adopt(run, rates) == ["sample_7b"]
    text = rates.read_text()
    assert text.startswith("# The GPU rates behind")  # the header comment is kept
    got = gpu_hours.load_rates(rates)
    assert got["sample_7b"]["source"] == "measured" and got["sample_7b"]["value"] == 7812.5
    assert got["sample_7b"]["assumed_before"] == [4000, 10000]
    assert got["sample_7b"]["measured"] == "2026-12-01, NVIDIA H100 80GB HBM3"
    assert got["startup_7b_min"]["source"] == "assumed"
    run.write_text(json.dumps({"schema": 1, "rates": {"no_such_rate": {"value": 1}}}))
    with pytest.raises(ValueError, match="no_such_rate"):
        cost.adopt(run, rates)


def test_make_target():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\npreflight-cost:")[1].split("\n\n")[0]
    assert "$(GPU_VENV)/bin/python -m prm_lessons.preflight.cost $(COST_ARGS)" in recipe
    assert "preflight-cost" in make.split(".PHONY:")[1].splitlines()[0]
