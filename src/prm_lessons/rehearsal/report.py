"""results/rehearsal/report.json: what the rehearsal ran and what it read.

- rules_planned / rules_ran: jobs per rule in the dry run of a fresh working directory, and the rules
  whose outputs the run left behind (`snakemake --summary`); rules_missing lists planned rules without any.
- adapters: per released PRM its model id, revision, step-tag id, label-token ids (as the scoring job
  recorded them), ProcessBench cases scored and whether every score is finite.
- benchmarks: per Best-of-N set the rows its file held and the rows the run used.
- training: per trained variant the world size and the rank that saved; whether the trained PRM was
  scored (loaded by the scoring code) with finite scores.
- tokens: per model-calling rule the jobs, prefill and decode tokens of its token sidecars.
"""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ..config import load_config
from ..jobs import budget
from ..tables import table_meta, write_json

REPO = Path(__file__).resolve().parents[3]
# rules that produce no file of their own (the default target)
TARGET_ONLY = {"all"}


def parse_job_table(text: str) -> dict[str, int]:
    """The `job  count` table of a Snakemake dry run -> {rule: jobs}."""
    counts, inside = {}, False
    for line in text.splitlines():
        if re.match(r"^job\s+count\s*$", line.strip()):
            inside = True
            continue
        if inside:
            m = re.match(r"^([A-Za-z_][\w]*)\s+(\d+)\s*$", line.strip())
            if not m:
                if line.strip().startswith("-"):
                    continue
                break
            if m.group(1) == "total":
                break
            counts[m.group(1)] = int(m.group(2))
    return counts


def rules_from_summary(text: str) -> dict[str, int]:
    """`snakemake --summary` (tab-separated: output_file, date, rule, ...) -> {rule: outputs present}."""
    lines = [ln.split("\t") for ln in text.splitlines() if "\t" in ln]
    if not lines:
        return {}
    header = lines[0]
    i_rule, i_date = header.index("rule"), header.index("date")
    out: dict[str, int] = {}
    for row in lines[1:]:
        if len(row) <= i_rule or row[i_date] in ("-", ""):  # "-": the output does not exist
            continue
        out[row[i_rule]] = out.get(row[i_rule], 0) + 1
    return out


def finite(scores) -> bool:
    return all(v is not None and math.isfinite(float(v)) for s in scores for v in (list(s) if s is not None else []))


def adapter_rows(work: Path, config: dict) -> dict:


    rows = {}
    for name, spec in config["prms"]["models"].items():
        path = work / "results" / "scores" / name / "processbench.parquet"
        entry = config["models"].get(spec.get("model"), {})
        row = {"adapter": spec.get("adapter"), "model": spec.get("model"), "model_id": entry.get("id"),
               "revision": entry.get("revision"), "scored": path.exists()}
        if path.exists():
            df = pd.read_parquet(path)
            meta = table_meta(path)
            info = meta.get("tokens") or {}
            row.update({"cases_scored": int(len(df)), "scores_finite": finite(df["step_scores"]),
                        "n_scores": int(sum(len(s) for s in df["step_scores"])),
                        "step_tag_id": info.get("step_tag_id"), "label_token_ids": info.get("label_token_ids"),
                        "label_tokens": info.get("label_tokens"), "step_tag": info.get("step_tag")})
        rows[name] = row
    return rows


def benchmark_rows(work: Path, config: dict) -> dict:


    rows = {}
    for name in config.get("benchmarks", {}):
        path = work / "results" / "problems" / f"{name}.parquet"
        row = {"used": None, "loaded": None}
        if path.exists():
            meta = table_meta(path)
            row["used"] = int(len(pd.read_parquet(path, columns=["problem_id"])))
            row["loaded"] = meta.get("rows_loaded")
            row["expected"] = (config["benchmarks"][name] or {}).get("rows")
        rows[name] = row
    return rows


def training_rows(work: Path, config: dict) -> dict:
    rows = {}
    for metrics in sorted((work / "results" / "prms").glob("*/train_metrics.json")):
        m = json.loads(metrics.read_text())
        variant = metrics.parent.name
        pb = work / "results" / "scores" / variant / "processbench.parquet"
        row = {"world_size": m.get("world_size", m.get("hardware", {}).get("world_size")),
               "saved_by_rank": m.get("saved_by_rank"), "mode": m.get("mode"), "global_steps": m.get("global_steps"),
               "deepspeed": m.get("deepspeed"), "scored": pb.exists()}
        if pb.exists():

            row["scores_finite"] = finite(pd.read_parquet(pb)["step_scores"])
        rows[variant] = row
    return rows


def token_rows(work: Path) -> dict:
    """rule -> prefill and decode tokens summed over the token sidecars its jobs wrote beside their logs
    (prm_lessons.jobs.budget): every model-calling rule of the paper DAG must count what it ran."""
    out: dict[str, dict] = {}
    for path in sorted((work / "logs").rglob(f"*{budget.SUFFIX}")):
        rec = json.loads(path.read_text())
        row = out.setdefault(rec["rule"], {"jobs": 0, "prefill_tokens": 0, "decode_tokens": 0})
        row["jobs"] += 1
        row["prefill_tokens"] += rec["prefill_tokens"]
        row["decode_tokens"] += rec["decode_tokens"]
    return out


def snakemake_cmd(work: Path, configfiles: list[Path], cores: int, extra: list[str]) -> list[str]:
    """Snakemake on this checkout's Snakefile in the rehearsal's working directory."""
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
            "--cores", str(cores), "--configfile", *map(str, configfiles), *extra]


def write_report(out: Path, configs: list[Path], env: dict, wall_seconds: float | None = None,
                 returncode: int | None = None) -> dict:

    work = out / "work"
    config = load_config(*configs)
    planned = parse_job_table((out / "plan.txt").read_text()) if (out / "plan.txt").exists() else {}
    summary = subprocess.run(snakemake_cmd(work, configs, 1, ["--summary"]), env=env, capture_output=True, text=True)
    ran = rules_from_summary(summary.stdout)
    report = {
        "snakemake_returncode": returncode, "wall_seconds": wall_seconds, "python": sys.version.split()[0],
        "rules_planned": planned, "rules_ran": ran,
        "rules_missing": sorted(r for r in planned if r not in ran and r not in TARGET_ONLY),
        "adapters": adapter_rows(work, config), "benchmarks": benchmark_rows(work, config),
        "training": training_rows(work, config), "tokens": token_rows(work),
    }
    write_json(report, out / "report.json", default=str)
    return report
