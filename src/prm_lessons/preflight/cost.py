"""`make preflight-cost`: the GPU rates behind docs/paper-scale.md's GPU-hour table, measured on a GPU node.

    python -m prm_lessons.preflight.cost [--out results/preflight] [--minutes 10] [--only NAME,...] [--plan]
    python -m prm_lessons.preflight.cost --adopt results/preflight/cost_rates.json   (docs/gpu_rates.yaml)

Five measurements, each in its own process for about `--minutes` (default 10) of work after its start-up,
each through the project's own code (config/paper.yaml's settings, real models):
  sample_seeded    Qwen2.5-Math-7B-Instruct samples MATH test problems at the paper's settings (n 8, T 0.7,
                   top_p 0.8, 2,048 tokens) through generation.sampling.sample_problems: per-request seeds
  sample_unseeded  the same engine calls with sampling.seed_mode per_batch (what the seeds cost)
  mc_rounds        one MC shard's first 3 rounds (labels.mc.run_mc, the paper's K and round size) on the
                   seeded run's first 512 responses, generate and grade seconds timed apart
  tp4_sample       one tensor-parallel-4 job: Qwen2.5-Math-72B-Instruct (TP 4) sampling as sample_seeded
  train_8gpu       50 optimizer steps of the paper's 8-GPU training (train_launch.run_training: ZeRO-3,
                   bf16, gradient checkpointing, batch 2 x 8 accumulation x 8 GPUs) on the released
                   Math-Shepherd training set (its first 12,800 rows: twice what 50 steps read), no checkpoint
First, Snakemake (config/paper.yaml, on this node, in <out>/cost/work) makes what they read: the two
policies' model directories and the MATH test problems (rule download_model, problems), and the
math_shepherd training set. A measurement that needs more GPUs than the node has is skipped (SKIP line).
Without a GPU it stops at once with one line (exit 1); --plan prints the plan anywhere and runs nothing.

The rates go to ONE file, <out>/cost_rates.json (schema below, `SCHEMA`); --adopt copies each measured rate
into docs/gpu_rates.yaml as `source: measured`, and `python tools/docs.py write` regenerates the table.

cost_rates.json: {"schema": 1, "created": ISO time, "device": GPU name, "gpus": count, "host": {...},
  "measurements": {name: {"status": PASS|FAIL|SKIP, "detail": str, "seconds": wall, "result": {...}}},
  "rates": {key: {"value": float, "unit": str, "measurement": name}}}   keys as in docs/gpu_rates.yaml
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from .. import plan
from ..config import load_config, model_entry, model_path
from ..generation import engine as generation
from ..generation.sampling import sample_problems
from ..jobs.hardware import cuda_device_count, host_summary
from ..labels import mc
from ..tables import atomic_path, read_table, write_json, write_text_atomic
from ..training.launch import run_training

REPO = Path(__file__).resolve().parents[3]
PAPER = REPO / "config" / "paper.yaml"
RATES_FILE = REPO / "docs" / "gpu_rates.yaml"
OUT_NAME = "cost_rates.json"
SCHEMA = 1
PROBLEMS = "math"          # the paper's main benchmark (MATH test, 5,000 problems)
TRAIN_VARIANT = "math_shepherd"  # released labels: no MC or judge job needed before the training
TRAIN_STEPS = 50
MC_ROUNDS = 3              # the first rounds of one shard: the widest ones (every step still open)
# an MC shard of the paper is ~3,750 responses (60k / 16); its first round alone (every step x round_size
# completions) would outlast the budget: the first 512 sampled responses, ~5k completions a round
MC_RESPONSES = 512
SLACK_S = 900              # start-up beyond the measured minutes (72B load, 8-rank ZeRO-3 init) before a kill
NO_GPU = ("preflight-cost: no CUDA GPU visible here (NVML counts 0 devices): run it on a GPU node, "
          "e.g. srun --gpus 8 make preflight-cost")


@dataclass
class Measurement:
    name: str
    what: str
    gpus: int                  # GPUs it needs on this node
    rates: tuple[str, ...]     # keys of docs/gpu_rates.yaml it measures
    args: dict = field(default_factory=dict)  # what the worker reads (JSON)


def plan_measurements(config: dict, minutes: float, work: Path) -> list[Measurement]:
    """The measurements and their arguments, from config/paper.yaml (nothing run)."""
    budget = float(minutes) * 60
    policy = model_entry(config, "policy")
    pol_spec = plan.bon_policies(config)[policy["name"]]
    big = next(p for p, s in plan.bon_policies(config).items() if plan.gpus(config, s.get("model", p)) > 1)
    big_entry = model_entry(config, plan.bon_policies(config)[big].get("model", big))
    problems = str(work / f"results/problems/{PROBLEMS}.parquet")

    def sampling(entry: dict, spec: dict, seeded: bool, out: str) -> dict:
        return {"model": entry, "model_dir": str(work / model_path(config, entry["name"])), "problems": problems,
                "sampling": spec["sampling"], "n": int(spec["sampling"]["n"]), "seeded": seeded,
                "budget_s": budget, "responses_out": str(work.parent / out)}

    completer = model_entry(config, plan.mc_completer(config))
    # the rule's own params (training_params: resource keys left out), then 50 steps and no checkpoint
    train = dict(plan.training_params(plan.training_settings(config, REPO)))
    train.update(max_steps=TRAIN_STEPS, save_steps=0, jit_checkpoint=False, logging_steps=1)
    if train.get("deepspeed") and not Path(train["deepspeed"]).is_absolute():  # the worker's cwd may differ
        train["deepspeed"] = str(REPO / train["deepspeed"])
    return [
        Measurement("sample_seeded", f"{policy['name']} sampling, paper settings, per-request seeds",
                    int(policy["tensor_parallel_size"]), ("sample_7b", "startup_7b_min", "tokens_per_response"),
                    sampling(policy, pol_spec, True, "sample_seeded.parquet")),
        Measurement("sample_unseeded", f"{policy['name']} sampling, paper settings, no per-request seeds",
                    int(policy["tensor_parallel_size"]), ("sample_7b_unseeded",),
                    sampling(policy, pol_spec, False, "sample_unseeded.parquet")),
        Measurement("mc_rounds", f"MC shard (completer {completer['name']}), first {MC_ROUNDS} rounds",
                    int(completer["tensor_parallel_size"]),
                    ("mc_generate", "mc_grade_s_per_completion", "mc_tokens_per_completion"),
                    {"model": completer, "model_dir": str(work / model_path(config, completer["name"])),
                     "responses": str(work.parent / "sample_seeded.parquet"), "mc": dict(config["mc"]),
                     "rounds": MC_ROUNDS, "budget_s": budget, "max_responses": MC_RESPONSES,
                     "grading_timeout_s": float(config["grading"].get("timeout_s", 5.0)),
                     "grading_workers": config["grading"].get("workers"),
                     "system_prompt": pol_spec["sampling"].get("system_prompt"),
                     "separator": pol_spec["sampling"].get("step_separator", "\n\n")}),
        Measurement("tp4_sample", f"{big_entry['name']} sampling at TP {big_entry['tensor_parallel_size']}",
                    int(big_entry["tensor_parallel_size"]), ("sample_72b_tp4", "startup_72b_min"),
                    sampling(big_entry, plan.bon_policies(config)[big], True, "tp4_sample.parquet")),
        Measurement("train_8gpu", f"{TRAIN_STEPS} optimizer steps of the {train['gpus']}-GPU training",
                    int(train["gpus"]), ("train_7b_8gpu",),
                    {"trainset": str(work / f"results/trainsets/{TRAIN_VARIANT}.parquet"),
                     "base_dir": str(work / model_path(config, config["training"]["base"])),
                     "out_dir": str(work.parent / "train_8gpu"), "settings": train,
                     "checkpoint_dir": str(work.parent / "train_8gpu.checkpoints")}),
    ]


def prerequisites(config: dict, measurements: list[Measurement]) -> list[str]:
    """Snakemake targets (relative to the working directory) the chosen measurements read."""
    names = {m.name for m in measurements}
    out: list[str] = []
    if names & {"sample_seeded", "sample_unseeded", "mc_rounds", "tp4_sample"}:
        out.append(f"results/problems/{PROBLEMS}.parquet")
    for m in measurements:
        if "model" in m.args:
            out += plan.model_input(config, m.args["model"]["name"])
    if "train_8gpu" in names:
        out += plan.model_input(config, config["training"]["base"])
        out.append(f"results/trainsets/{TRAIN_VARIANT}.parquet")
    return list(dict.fromkeys(out))


MIN_INSTANCE_TOKENS = 256  # assumed: a Math-Shepherd instance's fewest tokens, for train_overlay's row bound


def train_overlay(config: dict) -> dict:
    """The prerequisites' one change to paper.yaml: a Math-Shepherd training set of 2 x what TRAIN_STEPS
    optimizer steps read (the full 445k rows would be tokenised before the first step)."""
    t = config["training"]
    # token-sized micro-batches (training.batch_tokens) hold as many rows as fit: bounded here by
    # MIN_INSTANCE_TOKENS, an ASSUMED floor for a Math-Shepherd instance (question + steps)
    rows = -(-int(t["batch_tokens"]) // MIN_INSTANCE_TOKENS) if t.get("batch_tokens") else int(t["batch_size"])
    per_step = rows * int(t["gradient_accumulation_steps"]) * int(t["gpus"])
    return {"math_shepherd": {"limit": 2 * TRAIN_STEPS * per_step}}


def snakemake_cmd(work: Path, targets: list[str], overlay: Path) -> list[str]:
    """Only local (CPU) jobs: downloads, the problems table, the training set (gpu=0 refuses any GPU job)."""
    return [sys.executable, "-m", "snakemake", *targets, "--snakefile", str(REPO / "Snakefile"),
            "--directory", str(work), "--configfile", str(PAPER), str(overlay), "--cores", "all",
            "--rerun-incomplete", "--resources", "gpu=0"]


def worker_cmd(m: Measurement, spec: Path, result: Path) -> list[str]:
    return [sys.executable, "-m", "prm_lessons.preflight.cost", "--measure", m.name, "--spec", str(spec),
            "--result", str(result)]


# -- rates from a measurement's result (pure: tested on CPU) ----------------------------------------------

def rates_from(name: str, result: dict) -> dict[str, dict]:
    """docs/gpu_rates.yaml keys -> {value, unit} from one worker's result."""
    out: dict[str, dict] = {}
    if name in ("sample_seeded", "sample_unseeded", "tp4_sample"):
        tps = result["generated_tokens"] / result["generate_seconds"] if result.get("generate_seconds") else None
        key = {"sample_seeded": "sample_7b", "sample_unseeded": "sample_7b_unseeded",
               "tp4_sample": "sample_72b_tp4"}[name]
        unit = "tokens/s per TP-4 job" if name == "tp4_sample" else "tokens/s per GPU"
        if tps:
            out[key] = {"value": tps, "unit": unit}
        if name != "sample_unseeded":
            out["startup_72b_min" if name == "tp4_sample" else "startup_7b_min"] = {
                "value": result["load_seconds"] / 60, "unit": "min per job"}
        if name == "sample_seeded" and result.get("responses"):
            out["tokens_per_response"] = {"value": result["generated_tokens"] / result["responses"], "unit": "tokens"}
    elif name == "mc_rounds":
        if result.get("generate_seconds") and result.get("completions"):
            out["mc_generate"] = {"value": result["generated_tokens"] / result["generate_seconds"],
                                  "unit": "tokens/s per GPU"}
            out["mc_grade_s_per_completion"] = {"value": result["grade_seconds"] / result["completions"],
                                                "unit": "s per completion"}
            out["mc_tokens_per_completion"] = {"value": result["generated_tokens"] / result["completions"],
                                               "unit": "tokens"}
    elif name == "train_8gpu":
        if result.get("tokens_per_second"):
            out["train_7b_8gpu"] = {"value": float(result["tokens_per_second"]), "unit": "tokens/s per 8-GPU job"}
    else:
        raise ValueError(f"unknown measurement {name!r}")
    return out


def adopt(cost_json: Path, rates_file: Path = RATES_FILE) -> list[str]:
    """Mark every rate of a cost_rates.json measured in the rates file (value, unit, date and device); the
    keys changed. The file's header comment is kept."""
    measured = json.loads(Path(cost_json).read_text())
    if measured.get("schema") != SCHEMA:
        raise ValueError(f"{cost_json}: schema {measured.get('schema')!r}, expected {SCHEMA}")
    text = Path(rates_file).read_text()
    header = "".join(ln for ln in text.splitlines(keepends=True) if ln.startswith("#"))
    doc = yaml.safe_load(text)
    when = f"{str(measured.get('created', ''))[:10]}, {measured.get('device', '?')}"
    changed = []
    for key, r in measured.get("rates", {}).items():
        if key not in doc["rates"]:
            raise ValueError(f"{cost_json}: rate {key} is not in {rates_file}")
        old = doc["rates"][key]
        doc["rates"][key] = {"value": round(float(r["value"]), 4), "unit": old["unit"], "source": "measured",
                             "measured": when, "measured_by": r.get("measurement", old.get("measured_by", "")),
                             "what": old.get("what", ""), "assumed_before": [old.get("low"), old.get("high")]
                             if old.get("source") == "assumed" else old.get("assumed_before")}
        changed.append(key)
    write_text_atomic(rates_file, header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110))
    return changed


# -- the workers (on the GPU node) --------------------------------------------------------------------

class _Timed:
    """An engine whose generate calls are timed."""

    def __init__(self, engine):
        self.engine = engine
        self.tokenizer = engine.tokenizer
        self.seconds, self.tokens, self.calls = 0.0, 0, 0

    def generate(self, prompts, spec, seeds=None):
        t0 = time.perf_counter()
        outs = self.engine.generate(prompts, spec, seeds)
        self.seconds += time.perf_counter() - t0
        self.tokens += sum(c.n_tokens for o in outs for c in o)
        self.calls += 1
        return outs

    def __getattr__(self, name):
        return getattr(self.engine, name)


def measure_sampling(a: dict) -> dict:


    t0 = time.perf_counter()
    # unseeded: sampling.seed_mode per_batch (dropping the request seeds alone is not enough: the engine then
    # derives one per request from spec.seed, still vLLM's per-request path)
    engine = _Timed(generation.load_engine(a["model_dir"], a["model"],
                                           seed_mode="per_request" if a["seeded"] else "per_batch"))
    load = time.perf_counter() - t0
    problems = read_table(a["problems"], "problems")
    batch = int(a["sampling"].get("batch_size", 256))
    parts = []
    for start in range(0, len(problems), batch):  # the rule's own path, one batch at a time, until the budget
        if engine.seconds >= a["budget_s"]:
            break
        parts.append(sample_problems(engine, problems.iloc[start:start + batch], n=a["n"], sampling=a["sampling"],
                                     max_model_len=a["model"].get("max_model_len"), model_name=a["model"]["name"]))
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(df):
        with atomic_path(a["responses_out"]) as tmp:
            df.to_parquet(tmp)
    return {"load_seconds": load, "generate_seconds": engine.seconds, "generated_tokens": engine.tokens,
            "calls": engine.calls, "problems": int(df["problem_id"].nunique()) if len(df) else 0,
            "responses": len(df), "seeded": a["seeded"], "model": a["model"]["name"]}


class _Stop(Exception):
    pass


def measure_mc(a: dict) -> dict:


    df = pd.read_parquet(a["responses"]).head(int(a["max_responses"]))
    grade = mc.make_grade_fn(a["grading_timeout_s"], a.get("grading_workers"))
    t0 = time.perf_counter()
    correct = grade(df["response"].tolist(), df["answer"].astype(str).tolist())
    response_grade_s = time.perf_counter() - t0
    items = [mc.MCInput(r.problem_id, int(r.sample_idx), r.question, str(r.answer), list(r.steps), ok)
             for r, ok in zip(df.itertuples(), correct)]
    engine = _Timed(generation.load_engine(a["model_dir"], a["model"]))
    state = {"grade_s": 0.0, "completions": 0, "rounds": 0}

    def timed_grade(texts, golds):
        t = time.perf_counter()
        out = grade(texts, golds)
        state["grade_s"] += time.perf_counter() - t
        state["completions"] += len(texts)
        state["rounds"] += 1
        if state["rounds"] >= a["rounds"] or engine.seconds + state["grade_s"] >= a["budget_s"]:
            raise _Stop  # after this round's grading: the first rounds are what is measured
        return out

    cfg = a["mc"]
    try:
        mc.run_mc(items, engine, k=int(cfg["completions"]), needs=mc.Needs(), protocol=cfg["protocol"],
                  round_size=int(cfg["round_size"]), seed=int(cfg["seed"]), spec=mc.spec_from_config(cfg),
                  prompt_fn=mc.make_prompt_fn(engine.tokenizer, a.get("system_prompt")), grade_fn=timed_grade,
                  separator=a["separator"], last_step=cfg.get("last_step", "answer"))
    except _Stop:
        pass
    return {"responses": len(items), "rounds": state["rounds"], "completions": state["completions"],
            "generate_seconds": engine.seconds, "generated_tokens": engine.tokens, "grade_seconds": state["grade_s"],
            "response_grade_seconds": response_grade_s}


def measure_training(a: dict) -> dict:

    t0 = time.perf_counter()
    m = run_training(a["trainset"], a["base_dir"], a["out_dir"], a["settings"], "hard", a["checkpoint_dir"])
    keys = ("global_steps", "world_size", "train_tokens", "train_seconds", "tokens_per_second", "final_train_loss")
    return {**{k: m.get(k) for k in keys}, "wall_seconds": time.perf_counter() - t0}


WORKERS = {"sample_seeded": measure_sampling, "sample_unseeded": measure_sampling, "tp4_sample": measure_sampling,
           "mc_rounds": measure_mc, "train_8gpu": measure_training}


# -- the driver -------------------------------------------------------------------------------------------

def run_measurement(m: Measurement, cost_dir: Path, minutes: float) -> dict:
    spec, result = cost_dir / f"{m.name}.spec.json", cost_dir / f"{m.name}.result.json"
    write_json(m.args, spec, default=str)
    result.unlink(missing_ok=True)
    t0 = time.time()
    with open(cost_dir / f"{m.name}.log", "w") as log:
        proc = subprocess.Popen(worker_cmd(m, spec, result), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)  # a kill ends vLLM's and torchrun's children too
        try:
            rc = proc.wait(timeout=minutes * 60 + SLACK_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = "timeout"
    wall = time.time() - t0
    if rc != 0 or not result.exists():
        return {"status": "FAIL", "detail": f"exit {rc}; log {cost_dir / (m.name + '.log')}", "seconds": wall}
    res = json.loads(result.read_text())
    return {"status": "PASS", "detail": ", ".join(f"{k} {v:.4g}" for k, v in
                                                  ((k, r["value"]) for k, r in rates_from(m.name, res).items())),
            "seconds": wall, "result": res}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m prm_lessons.preflight.cost", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/preflight", help="where cost_rates.json and cost/ go")
    ap.add_argument("--minutes", type=float, default=10.0, help="work per measurement after its start-up")
    ap.add_argument("--only", default="", help="comma-separated measurements (default: all five)")
    ap.add_argument("--plan", action="store_true", help="print the measurements and their arguments; run nothing")
    ap.add_argument("--adopt", type=Path, help="copy a cost_rates.json's rates into docs/gpu_rates.yaml")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--spec", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure:  # a worker: one measurement, its result to --result

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        res = WORKERS[args.measure](json.loads(args.spec.read_text()))
        write_json(res, args.result, default=str)
        return 0
    if args.adopt:
        changed = adopt(args.adopt)
        print(f"preflight-cost: {len(changed)} rates marked measured in {RATES_FILE.relative_to(REPO)}: "
              f"{', '.join(changed) or 'none'}; now: python tools/docs.py write")
        return 0

    cost_dir = Path(args.out).resolve() / "cost"
    work = cost_dir / "work"
    config = load_config(PAPER)
    every = plan_measurements(config, args.minutes, work)
    only = [x for x in args.only.split(",") if x]
    unknown = sorted(set(only) - {m.name for m in every})
    if unknown:
        ap.error(f"--only: no measurement {', '.join(unknown)} (there are {', '.join(m.name for m in every)})")
    chosen = [m for m in every if not only or m.name in only]
    if args.plan:
        for m in chosen:
            print(json.dumps(asdict(m), default=str))
        print("prerequisites (snakemake): " + " ".join(prerequisites(config, chosen)))
        return 0
    n_gpus = cuda_device_count()
    if n_gpus < 1:
        print(NO_GPU)
        return 1
    work.mkdir(parents=True, exist_ok=True)
    overlay = work / "cost_overlay.yaml"
    write_text_atomic(overlay, yaml.safe_dump(train_overlay(config)))
    cmd = snakemake_cmd(work, prerequisites(config, [m for m in chosen if m.gpus <= n_gpus]), overlay)
    print("preflight-cost: " + " ".join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        print("preflight-cost: the prerequisites failed (see the Snakemake output above); nothing measured")
        return 1
    import torch  # lazy: after Snakemake, only for the device's name (NVML already counted it)

    report = {"schema": SCHEMA, "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "device": torch.cuda.get_device_name(0), "gpus": n_gpus, "host": _host(), "measurements": {},
              "rates": {}}
    for m in chosen:
        if m.gpus > n_gpus:
            report["measurements"][m.name] = {"status": "SKIP", "detail": f"needs {m.gpus} GPUs, {n_gpus} here"}
        else:
            print(f"preflight-cost: {m.name}: {m.what} ({m.gpus} GPU(s), ~{args.minutes:g} min)", flush=True)
            report["measurements"][m.name] = got = run_measurement(m, cost_dir, args.minutes)
            if got["status"] == "PASS":
                for key, r in rates_from(m.name, got["result"]).items():
                    report["rates"][key] = {**r, "measurement": m.name}
        line = report["measurements"][m.name]
        print(f"{line['status']} {m.name}: {line['detail']}", flush=True)
        write_json(report, Path(args.out, OUT_NAME), default=str)  # after each: a kill keeps it
    failed = [n for n, r in report["measurements"].items() if r["status"] == "FAIL"]
    print(f"preflight-cost: {len(report['rates'])} rates in {Path(args.out, OUT_NAME)}"
          + (f"; FAILED: {', '.join(failed)}" if failed else "")
          + f"; adopt them: python -m prm_lessons.preflight.cost --adopt {Path(args.out, OUT_NAME)}")
    return 1 if failed else 0


def _host() -> dict:

    return host_summary()


if __name__ == "__main__":
    sys.exit(main())
