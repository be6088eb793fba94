"""Rule glue of workflow/rules/verifiers.smk: LLMs as Best-of-N verifiers (prm_lessons.verifiers), their
metrics (beside pass@N and maj@N of the same problems) and results/tables/judge_bon.csv.

The metrics and table rules run in the analysis environment (no torch, no vLLM): prm_lessons.verifiers
loads no model itself; only rule `bon_judge` starts an engine.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pandas as pd

from .. import as_paths, verifiers
from ..generation import load_engine
from ..metrics import bon as metrics_bon
from ..tables import read_table, write_json, write_table

log = logging.getLogger(__name__)

# results/tables/judge_bon.csv: the columns of bon.csv, the judge's name, mode and model, and per benchmark
# the problems judged and the judgements whose verdict could not be read (resolved by the documented rules)
TABLE_COLUMNS = ["policy", "prm", "judge", "mode", "model", "benchmark", "metric", "N", "accuracy", "ci_low", "ci_high",
                 "n_problems", "n_unparsable", "run"]


def _samples(inputs) -> pd.DataFrame:
    frames = []
    for path in as_paths(inputs["samples"]):
        df = read_table(path, "samples")
        df["dataset"] = Path(path).stem  # the benchmark the file is (the output files are per benchmark)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def bon_judge(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `bon_judge`: one policy's results/{policy_dir}samples/{benchmark}.parquet (every judged benchmark
    it samples) → results/{policy_dir}bon_judges/{judge}/{mode}/{benchmark}.parquet (one row per problem; a
    judged benchmark the policy does not sample: an empty table)."""
    mode = wildcards["mode"]
    st = verifiers.JudgeSettings(**params["settings"])
    template = verifiers.load_template(mode, inputs["template"])
    samples = _samples(inputs)
    t0 = time.time()
    engine = load_engine(params["model_dir"], params["model_entry"])
    t1 = time.time()
    judged = verifiers.judge_best_of_n(engine, samples, mode, st, n=params["n"], limit=params.get("limit"),
                                       template=template)
    seconds = time.time() - t1
    for path in as_paths(outputs["judged"]):
        part = judged[judged["dataset"] == Path(path).stem].reset_index(drop=True)
        counts = {c: int(part[c].sum()) for c in verifiers.COUNTS}
        write_table(part, path, "bon_judge", meta={"judge": wildcards["judge"], "mode": mode,
                                                   "model": params["model_entry"]["name"], "n": params["n"],
                                                   "limit": params.get("limit"), "settings": params["settings"],
                                                   "template": str(inputs["template"]), **counts})
    tot = {c: int(judged[c].sum()) for c in verifiers.COUNTS}
    print(f"bon judge {wildcards['judge']} ({mode}): {len(judged)} problems, {tot['n_requests']} judgements in "
          f"{seconds:.1f} s (engine start {t1 - t0:.1f} s), {tot['tokens_generated']} tokens generated; "
          f"unparsable {tot['n_unparsable']} (resolved: pointwise an unread step counts incorrect, pairwise "
          f"Response A advances), forced {tot['n_forced']}, cut off and left unread {tot['n_truncated']}",
          flush=True)


def bon_judge_metrics(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `bon_judge_metrics`: the samples and a judge's choices → results/metrics/bon_judges/{judge}/{mode}.json
    (metrics.bon.bon_metrics layout, the selector named `judge`, plus `judging` counts)."""
    cfg = params["bon"]
    judged = pd.concat([read_table(p, "bon_judge") for p in as_paths(inputs["judged"])], ignore_index=True)
    m = verifiers.judge_metrics(_samples(inputs), judged, n=cfg.get("n"), maj_grouping=cfg["maj_grouping"],
                                bootstrap=int(cfg["bootstrap"]["samples"]), seed=int(cfg["bootstrap"]["seed"]),
                                confidence=float(cfg["bootstrap"]["confidence"]), workers=max(1, int(threads or 1)))
    m.update(prm=f"{wildcards['mode']}-{wildcards['judge']}", judge=wildcards["judge"], mode=wildcards["mode"],
             model=params["model"], policy=params.get("policy"), run_label=params.get("run_label"))
    write_json(m, outputs["metrics"])
    avg = m["average"]
    log.info("bon judge %s: judge %.3f %s, maj %.3f, judge - maj %.3f %s over %d benchmarks", m["prm"], avg["judge"],
             avg["ci"].get("judge"), avg["maj"], m["vs_maj"]["average"]["judge"]["diff"],
             m["vs_maj"]["average"]["judge"]["ci"], avg["n_benchmarks"])


def bon_judge_table(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `bon_judge_table`: every policy's results/{policy_dir}metrics/bon_judges/{judge}/{mode}.json →
    results/tables/judge_bon.csv (long format as bon.csv, with the policy: metrics pass, maj, judge and
    judge-maj, the paired difference)."""
    rows = []
    for path in as_paths(inputs.get("metrics")):
        m = json.loads(Path(path).read_text())
        judging = m["judging"]["benchmarks"]
        for r in metrics_bon.bon_long_rows(m, m["prm"]):
            b = r["benchmark"]
            if b == "average":
                n_problems = sum(e["n_problems"] for e in m["benchmarks"].values())
                n_unparsable = m["judging"]["total"]["n_unparsable"]
            else:
                n_problems, n_unparsable = m["benchmarks"][b]["n_problems"], judging[b]["n_unparsable"]
            rows.append({**r, "policy": m.get("policy"), "judge": m["judge"], "mode": m["mode"], "model": m["model"], "n_problems": n_problems,
                         "n_unparsable": n_unparsable})
    df = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    df["run"] = params.get("run_label", "")
    Path(outputs["table"]).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(outputs["table"], index=False)
