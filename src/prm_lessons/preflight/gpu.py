"""`make preflight-gpu`: the paper run's GPU code paths, on tiny inputs, before the budget is spent.

    python -m prm_lessons.preflight.gpu [--out results/preflight] [--resume] [--no-env-check] [snakemake args]
    e.g. python -m prm_lessons.preflight.gpu --profile slurm

1. The GPU stack's floor (prm_lessons.preflight.gpu_env). It stops here when the floor fails. A host without a
   driver fails only when no --profile / --executor is given: a SLURM login node has no GPU, and the
   jobs on the nodes then fail with their own reason.
2. Snakemake on config/paper.yaml + config/preflight.yaml, in its own working directory (<out>/work, so
   nothing of the paper run's results/ is touched). It asks for the explicit targets of `plan_checks`
   only: one vLLM `sample` job, Qwen2.5-Math-PRM-7B vLLM pooling scores over 2 shards with their merge,
   a 2-GPU ZeRO-3 `train_prm`, the trained PRM's vLLM scores, and one tensor-parallel-4 job: the
   released Qwen2.5-Math-PRM-72B through vLLM pooling at TP 4 on shard 0 of 2 (8 problems x 4 responses).
   On one machine with fewer than 4 GPUs that job is a stand-in: Qwen2.5-Math-PRM-7B at TP 2 (an extra
   overlay, written to <out>/work/tp_standin.yaml, adds it as model and PRM `qwen25_math_prm_7b_tp2`):
   vLLM's multi-GPU pooling, not the 72B load. The GPU rules are forced, so a
   second preflight runs them again; --resume keeps what the last one made. Retries are off and
   keep-going is on, so every path reports.
3. One line per check, read from the outputs and the job logs. A failed job's line gives the last
   error line of its log. Exit status 1 when any line is FAIL.
docs/preflight.md: what it costs and how to read the lines.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd
import yaml

from .. import plan
from ..config import load_config, model_entry
from ..jobs.hardware import cuda_device_count
from ..tables import read_json, read_table, write_text_atomic
from . import gpu_env

REPO = Path(__file__).resolve().parents[3]
CONFIGS = (REPO / "config" / "paper.yaml", REPO / "config" / "preflight.yaml")
BENCHMARK = "gsm8k"                 # the one benchmark config/preflight.yaml keeps
RELEASED_PRM = "qwen25_math_prm_7b"  # prms.models entry scored through vLLM pooling
TP_PRM = "qwen25_math_prm_72b"      # the tensor-parallel-4 job: the released PRM-72B through vLLM pooling
TP_SIZE = 4
STANDIN_PRM = "qwen25_math_prm_7b_tp2"  # one machine with fewer than TP_SIZE GPUs: the 7B PRM at TP 2
STANDIN_TP = 2
VARIANT = "math_shepherd"           # the one training-set variant config/preflight.yaml keeps
FORCED_RULES = ("sample", "train_prm")  # and everything after them: the GPU jobs run every time
GPU_RULES = ("sample", "score_samples", "train_prm")


class CheckFailed(Exception):
    """An output exists but is not what the paper run needs; the message is the reason."""


@dataclass
class Spec:
    name: str                        # printed as "PASS <name>: <detail>"
    outputs: list[str]               # the Snakemake targets, relative to the working directory
    logs: list[str]                  # the job logs whose last error line explains a failure
    evaluate: Callable[[Path], str]  # work dir -> the PASS detail; raises CheckFailed
    gpus: int = 0                    # GPUs of its job (a machine running the preflight needs the most of them)


# -- the checks ---------------------------------------------------------------------------------------

def _samples_detail(path: Path, n_problems: int, n: int) -> str:
    df = read_table(path, "responses")  # a sample job's shard: ungraded (rule grade_samples grades the merge)
    per = df.groupby("problem_id").size()
    if len(per) != n_problems or (per != n).any():
        raise CheckFailed(f"{path.name}: {len(per)} problems with {sorted(set(per.tolist()))} responses each, "
                          f"expected {n_problems} x {n}")
    empty = int((df["response"].fillna("").str.strip() == "").sum())
    if empty == len(df):
        raise CheckFailed(f"{path.name}: all {len(df)} responses are empty")
    return f"{n_problems} problems x {n} responses ({empty} empty)"


def _scores_detail(paths: list[Path]) -> tuple[str, object]:
    """Step scores of score tables: every response scored, every score a probability."""
    df = pd.concat([read_table(p, "step_scores") for p in paths], ignore_index=True)
    if df.empty:
        raise CheckFailed(f"{', '.join(p.name for p in paths)}: no responses scored")
    scores = [None if s is None else float(s) for row in df["step_scores"] for s in (row if row is not None else [])]
    unscored = int(sum(1 for row in df["step_scores"] if row is None or len(row) == 0))
    bad = [s for s in scores if s is None or not (math.isfinite(s) and 0.0 <= s <= 1.0)]
    if unscored == len(df) or bad:
        raise CheckFailed(f"{len(df)} responses, {unscored} without step scores, {len(bad)} scores outside [0, 1] "
                          f"(e.g. {bad[:3]})")
    return (f"{len(df)} responses, {len(scores)} step scores in [0, 1] (mean {sum(scores) / len(scores):.3f})"
            + (f", {unscored} responses unscored" if unscored else "")), df


def plan_checks(config: dict) -> list[Spec]:
    """The preflight's checks for a config (paper.yaml + preflight.yaml), each with its targets and logs."""
    if list(config["benchmarks"]) != [BENCHMARK] or VARIANT not in plan.variants(config):
        raise SystemExit(f"preflight: the config must keep benchmark {BENCHMARK} only and trainset variant "
                         f"{VARIANT} (config/preflight.yaml)")
    specs = plan.resolve_prm_specs(config)
    policy = model_entry(config, config["roles"]["policy"])
    n = plan.sample_n(config, BENCHMARK)
    n_problems = int(config["benchmarks"][BENCHMARK]["limit"])
    k = plan.score_shards(config)
    train = config["training"]

    sample_out = plan.sample_shards(config, BENCHMARK)[0]
    shard_tables = [f"results/scores/{RELEASED_PRM}/{BENCHMARK}/shard{i}of{k}.parquet" for i in range(k)]
    merged = f"results/scores/{RELEASED_PRM}/{BENCHMARK}.parquet"
    metrics = f"results/prms/{VARIANT}/train_metrics.json"
    trained_scores = f"results/scores/{VARIANT}/{BENCHMARK}/shard0of{k}.parquet"

    def sample(work: Path) -> str:
        return _samples_detail(work / sample_out, n_problems, n)

    def released(work: Path) -> str:
        return _scores_detail([work / p for p in shard_tables])[0]

    def merge(work: Path) -> str:
        detail, shards = _scores_detail([work / merged])
        samples = read_table(work / "results/responses" / f"{BENCHMARK}.parquet", "responses")
        want = set(zip(samples["problem_id"], samples["sample_idx"]))
        got = set(zip(shards["problem_id"], shards["sample_idx"]))
        if got != want:
            raise CheckFailed(f"{merged}: {len(want - got)} responses missing, {len(got - want)} not in the samples")
        return f"{k} shards -> {detail}"

    def trained(work: Path) -> str:
        m = read_json(work / metrics)
        losses = [float(x) for x in m.get("loss_history") or []]
        problems = []
        if int(m.get("global_steps", -1)) != int(train["max_steps"]):
            problems.append(f"{m.get('global_steps')} optimizer steps, not {train['max_steps']}")
        if int(m.get("world_size", 0)) != int(train["gpus"]):
            problems.append(f"world size {m.get('world_size')}, not {train['gpus']} GPUs")
        if not losses or not all(math.isfinite(x) for x in losses):
            problems.append(f"loss history {losses}")
        if m.get("layout") != "released":
            problems.append(f"saved in the {m.get('layout')!r} layout, not the released one (vLLM cannot serve it)")
        if problems:
            raise CheckFailed(f"{metrics}: " + "; ".join(problems))
        tps = m.get("tokens_per_second")
        return (f"{m['global_steps']} steps on {m['world_size']} ranks, loss {losses[-1]:.4f}"
                + (f", {tps:.0f} tokens/s" if tps else "") + ", saved in the released layout")

    def rescored(work: Path) -> str:
        return _scores_detail([work / trained_scores])[0]

    tp_prm = specs[RELEASED_PRM].get("vllm", {}).get("tensor_parallel_size", 1)
    tp_trained = specs[VARIANT].get("vllm", {}).get("tensor_parallel_size", 1)
    # the tensor-parallel job: the PRM-72B, or the stand-in when the driver layered tp_standin.yaml
    tp_name = STANDIN_PRM if STANDIN_PRM in specs else TP_PRM
    tp_size = int(specs[tp_name].get("vllm", {}).get("tensor_parallel_size", 1))
    k_tp = plan.score_shards(config, tp_name)
    tp_table = f"results/scores/{tp_name}/{BENCHMARK}/shard0of{k_tp}.parquet"
    standin = "; stand-in: fewer than 4 GPUs here" if tp_name == STANDIN_PRM else ""

    def tensor_parallel(work: Path) -> str:
        return _scores_detail([work / tp_table])[0]

    return [
        Spec(f"sample (vLLM TP={policy['tensor_parallel_size']})", [sample_out],
             [f"logs/sample/{BENCHMARK}/shard0of1.log"], sample, int(policy["tensor_parallel_size"])),
        Spec(f"score_samples {RELEASED_PRM} (vLLM pooling TP={tp_prm}, {k} shards)", shard_tables,
             [f"logs/score_samples/{RELEASED_PRM}/shard{i}of{k}.log" for i in range(k)], released, tp_prm),
        Spec(f"merge_sample_scores {RELEASED_PRM}", [merged], [f"logs/merge_sample_scores/{RELEASED_PRM}.log"], merge),
        Spec(f"train_prm {VARIANT} (ZeRO-3, {train['gpus']} GPUs)", [metrics], [f"logs/training/{VARIANT}.log"],
             trained, int(train["gpus"])),
        Spec(f"score_samples {VARIANT} (trained PRM reloaded by vLLM, TP={tp_trained})", [trained_scores],
             [f"logs/score_samples/{VARIANT}/shard0of{k}.log"], rescored, tp_trained),
        Spec(f"score_samples {tp_name} (vLLM pooling TP={tp_size}, shard 0 of {k_tp}{standin})",
             [tp_table], [f"logs/score_samples/{tp_name}/shard0of{k_tp}.log"], tensor_parallel, tp_size),
    ]


def tp_standin(config: dict) -> dict:
    """The overlay of a machine with fewer than TP_SIZE GPUs: the 7B PRM's model entry again, at TP 2, as
    model and released PRM STANDIN_PRM (same Hub repo and revision: download_model links the cached files)."""
    entry = {k: v for k, v in config["models"][RELEASED_PRM].items() if k != "name"}
    prm = dict(config["prms"]["models"][RELEASED_PRM], model=STANDIN_PRM,
               label=f"Qwen2.5-Math-PRM-7B at TP {STANDIN_TP} (stand-in of the TP-4 job)")
    return {"models": {STANDIN_PRM: {**entry, "tensor_parallel_size": STANDIN_TP}},
            "prms": {"models": {STANDIN_PRM: prm}}}


def config_files(work: Path, cluster: bool, n_gpus: int) -> tuple[Path, ...]:
    """paper.yaml + preflight.yaml, and on one machine with fewer than TP_SIZE GPUs the stand-in overlay
    (written into the working directory); a cluster schedules the TP-4 job on a node that has them."""
    if cluster or n_gpus >= TP_SIZE:
        return CONFIGS
    path = work / "tp_standin.yaml"
    write_text_atomic(path, yaml.safe_dump(tp_standin(load_config(*CONFIGS)), sort_keys=False))
    return (*CONFIGS, path)


# -- reading outcomes ---------------------------------------------------------------------------------

ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Interrupt|Interrupted|Exit)\b(?::.*)?$")


def last_error_line(text: str) -> str | None:
    """The last line of a job log that names an exception ('ValueError: ...'), else the last line that
    mentions an error, else the last line; None for an empty log."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for pattern in (ERROR_LINE.match, lambda ln: re.search(r"error|killed|out of memory", ln, re.I)):
        for ln in reversed(lines):
            if pattern(ln):
                return ln
    return lines[-1] if lines else None


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def outcome(spec: Spec, work: Path, since: float | None = None) -> tuple[str, str]:
    """(PASS or FAIL, detail) of one check. A log older than `since` (an earlier preflight) is ignored."""
    missing = [o for o in spec.outputs if not (work / o).exists()]
    if not missing:
        try:
            return "PASS", spec.evaluate(work)
        except CheckFailed as exc:
            return "FAIL", _short(str(exc))
        except Exception as exc:  # an unreadable output is a failed check, not a crashed preflight
            return "FAIL", _short(f"{spec.outputs[0]}: {type(exc).__name__}: {exc}")
    for log in spec.logs:
        p = work / log
        if p.exists() and (since is None or p.stat().st_mtime >= since):
            line = last_error_line(p.read_text(errors="replace"))
            if line is not None:
                return "FAIL", f"{_short(line)} ({log})"
    return "FAIL", (f"{missing[0]} not made and no job log: the job did not start (an earlier job failed, or "
                    "the scheduler refused or killed it: see the Snakemake output and logs/slurm/)")


def report_lines(specs: list[Spec], work: Path, since: float | None = None) -> list[str]:
    return [f"{status} {spec.name}: {detail}" for spec in specs for status, detail in [outcome(spec, work, since)]]


CHECKED_RULES = ("sample", "score_samples", "merge_sample_scores", "train_prm")


def failed_jobs(snakemake_output: str) -> list[tuple[str, list[str]]]:
    """(rule, its logs) of every `Error in rule X:` block of Snakemake's output, in order."""
    out: list[tuple[str, list[str]]] = []
    rule = None
    for ln in snakemake_output.splitlines():
        m = re.match(r"^Error in rule ([\w-]+)", ln)
        if m:
            rule = m.group(1)
            out.append((rule, []))
        elif rule and ln.strip().startswith("log: "):
            out[-1] = (rule, [p.strip() for p in ln.strip()[5:].split(" (check log")[0].split(",")])
            rule = None
    return out


def prerequisite_lines(snakemake_output: str, work: Path) -> list[str]:
    """A FAIL line for each failed job that is no check of its own (a download, data or label rule the
    checks need), with the last error line of its log."""
    lines = []
    for rule, logs in failed_jobs(snakemake_output):
        if rule in CHECKED_RULES:
            continue
        reason = next((f"{_short(e)} ({log})" for log in logs if (work / log).exists()
                       for e in [last_error_line((work / log).read_text(errors="replace"))] if e),
                      "failed; see the Snakemake output above")
        line = f"FAIL {rule} (needed by the checks): {reason}"
        if line not in lines:
            lines.append(line)
    return lines


# -- running ------------------------------------------------------------------------------------------

def targets(specs: list[Spec]) -> list[str]:
    return [o for s in specs for o in s.outputs]


def _option(args: list[str], *names: str) -> str | None:
    """The last value of an option given as `--name value` or `--name=value`."""
    value = None
    for i, a in enumerate(args):
        if a in names and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(tuple(f"{n}=" for n in names if n.startswith("--"))):
            value = a.split("=", 1)[1]
    return value


def on_cluster(smk_args: list[str]) -> bool:
    """Whether the jobs go to a scheduler: an executor other than local, given or in the profile (a profile
    directory whose config names none, e.g. profiles/local, is one machine; a profile found only by name
    is taken for a cluster one)."""
    executor = _option(smk_args, "--executor", "-e")
    if executor is not None:
        return executor not in ("local", "dryrun", "touch")
    profile = _option(smk_args, "--profile") or os.environ.get("SNAKEMAKE_PROFILE")
    if not profile:
        return False
    files = [Path(profile) / f for f in ("config.yaml", "profile.yaml")]
    if not any(f.exists() for f in files):
        return True
    for f in files:
        if f.exists() and (yaml.safe_load(f.read_text()) or {}).get("executor") not in (None, "local"):
            return True
    return False


def resolve_profile(smk_args: list[str]) -> list[str]:
    """`--profile NAME` as the user means it from the checkout (Snakemake would look NAME up in its own
    working directory, which here is <out>/work): an existing directory becomes its absolute path."""
    out = list(smk_args)
    for i, a in enumerate(out):
        if a == "--profile" and i + 1 < len(out) and Path(out[i + 1]).is_dir():
            out[i + 1] = str(Path(out[i + 1]).resolve())
        elif a.startswith("--profile=") and Path(a.split("=", 1)[1]).is_dir():
            out[i] = "--profile=" + str(Path(a.split("=", 1)[1]).resolve())
    return out


def snakemake_cmd(work: Path, specs: list[Spec], smk_args: list[str], resume: bool = False,
                  configs: tuple[Path, ...] = CONFIGS) -> list[str]:
    cmd = [sys.executable, "-m", "snakemake", *targets(specs), "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(work), "--configfile", *map(str, configs),
           "--rerun-incomplete", "--keep-going", "--show-failed-logs", "--retries", "0"]
    if not resume:
        cmd += ["--forcerun", *FORCED_RULES]
    if not on_cluster(smk_args):
        # one machine: Snakemake assigns no GPU ids, so GPU jobs run one at a time (each sees every GPU)
        gpus = max(2, *(s.gpus for s in specs))
        cmd += ["--cores", "all", "--resources", f"gpu={gpus}", "gpu_jobs=1",
                "--set-resources", *(f"{r}:gpu_jobs=1" for r in GPU_RULES)]
    return cmd + resolve_profile(smk_args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m prm_lessons.preflight.gpu", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/preflight", help="preflight directory (Snakemake works in OUT/work)")
    ap.add_argument("--resume", action="store_true", help="keep the last preflight's outputs (no forced reruns)")
    ap.add_argument("--no-env-check", action="store_true", help="run even when the GPU stack's floor fails here")
    args, smk_args = ap.parse_known_args(argv)
    cluster = on_cluster(smk_args)

    print("preflight: the GPU stack (prm_lessons.preflight.gpu_env)", flush=True)
    if gpu_env.report(gpu_env.run_checks(require_driver=not cluster)) and not args.no_env_check:
        print("preflight: stopped before any job: fix the FAIL lines above (or --no-env-check)")
        return 1

    work = Path(args.out).resolve() / "work"
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # an --out under a file, or where this user cannot write: one line, not a traceback
        print(f"preflight: error: --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    n_gpus = 0 if cluster else cuda_device_count()
    configs = config_files(work, cluster, n_gpus)
    if len(configs) > len(CONFIGS):
        print(f"preflight: {n_gpus} GPU(s) here, fewer than {TP_SIZE}: the tensor-parallel job is the stand-in "
              f"{STANDIN_PRM} (Qwen2.5-Math-PRM-7B at TP {STANDIN_TP}), not Qwen2.5-Math-PRM-72B at TP {TP_SIZE}")
    specs = plan_checks(load_config(*configs))
    cmd = snakemake_cmd(work, specs, smk_args, args.resume, configs)
    print("preflight: " + " ".join(cmd), flush=True)
    t0 = time.time()
    # Snakemake's output goes to the console as it comes, and is kept for its "Error in rule" blocks
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    seen = []
    for ln in proc.stdout:
        sys.stdout.write(ln)
        sys.stdout.flush()
        seen.append(ln)
    rc = proc.wait()
    if {"-n", "--dry-run", "--dryrun"} & set(smk_args):
        print(f"preflight: dry run (snakemake exit {rc}): the jobs above would run; no checks")
        return rc
    lines = prerequisite_lines("".join(seen), work) + report_lines(specs, work, since=None if args.resume else t0)
    print(f"\npreflight: {len(lines)} checks after {(time.time() - t0) / 60:.1f} min (snakemake exit {rc}; "
          f"outputs and logs in {work})")
    for ln in lines:
        print(ln)
    failed = sum(ln.startswith("FAIL") for ln in lines)
    print(f"preflight: {'FAILED: ' + str(failed) + ' of ' + str(len(lines)) if failed else 'all checks passed'}")
    return 1 if failed or rc else 0


if __name__ == "__main__":
    sys.exit(main())
