"""Rule glue of workflow/rules/verifiers.smk: LLMs as Best-of-N verifiers (prm_lessons.evaluation.verifiers), their
metrics (beside pass@N and maj@N of the same problems) and results/tables/judge_bon.csv.

The metrics and table rules run in the analysis environment (no torch, no vLLM): prm_lessons.evaluation.verifiers
loads no model itself; only rule `bon_judge` starts an engine.
"""
from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pandas as pd

from .. import as_paths
from ..evaluation import verifiers
from ..generation.engine import load_engine
from ..jobs.shards import merge_problem_shards
from ..metrics import bon as metrics_bon
from ..tables import read_json, read_table, table_meta, write_csv, write_json, write_table

log = logging.getLogger(__name__)

# results/tables/judge_bon.csv: the columns of bon.csv, the judge's name, mode and model, and per benchmark
# the problems judged and the judgements whose verdict could not be read (resolved by the documented rules)
TABLE_COLUMNS = ["policy", "prm", "judge", "mode", "model", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high",
                 "n_problems", "n_unparsable", "run"]


def _samples(inputs, kind: str = "samples") -> pd.DataFrame:
    """The tables of input `kind` (samples: graded; responses: what the judge jobs read, so a grading fix
    judges nothing again), concatenated, each row's `dataset` its file's benchmark."""
    frames = []
    for path in as_paths(inputs[kind]):
        df = read_table(path, kind)
        df["dataset"] = Path(path).stem  # the benchmark the file is (the output files are per benchmark)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _shard(wildcards: dict) -> tuple[int, int] | None:
    """(shard, nshards) of a sharded judge job (bon_judges.shards > 1), None for one that judges everything."""
    return (int(wildcards["shard"]), int(wildcards["nshards"])) if "shard" in wildcards else None


_SHARD_FILE = re.compile(r"shard\d+of\d+\.parquet")


def _table_of(path: str) -> str:
    """The benchmark an output belongs to: its stem, or its folder's name for a shard file
    (results/{policy_dir}bon_judges/{judge}/{mode}/{benchmark}/shard{i}of{n}.parquet)."""
    return Path(path).parent.name if _SHARD_FILE.fullmatch(Path(path).name) else Path(path).stem


def bon_judge(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `bon_judge`: one policy's results/{policy_dir}responses/{benchmark}.parquet (every judged benchmark
    it samples) → results/{policy_dir}bon_judges/{judge}/{mode}/{benchmark}.parquet (one row per problem; a
    judged benchmark the policy does not sample: an empty table). With the `shard`/`nshards` wildcards
    (bon_judges.shards > 1) it judges that problem shard of every benchmark only, into
    .../{benchmark}/shard{i}of{n}.parquet (verifiers.shard_responses; rule merge_bon_judge joins them);
    the bon_judges.limit problems are chosen before the split, so the shards together judge what one job would."""
    mode = wildcards["mode"]
    st = verifiers.JudgeSettings(**params["settings"])
    template = verifiers.load_template(mode, inputs["template"])
    todo = verifiers.first_responses(_samples(inputs, "responses"), params["n"], params.get("limit"))
    shard = _shard(wildcards)
    if shard:
        todo = verifiers.shard_responses(todo, *shard)
    where = f"shard {shard[0]} of {shard[1]}" if shard else "all problems"
    print(f"bon judge {wildcards['judge']} ({mode}), {where}: {todo['problem_id'].nunique()} problems, "
          f"{len(todo)} responses of {todo['dataset'].nunique()} benchmarks", flush=True)
    t0 = t1 = time.time()
    if len(todo):
        engine = load_engine(params["model_dir"], params["model_entry"])
        t1 = time.time()
        judged = verifiers.judge_best_of_n(engine, todo, mode, st, n=params["n"], template=template)
    else:  # a shard without problems (more shards than problems): no model is loaded
        judged = pd.DataFrame(columns=verifiers.JUDGED_COLUMNS)
    seconds = time.time() - t1
    for path in as_paths(outputs["judged"]):
        part = judged[judged["dataset"] == _table_of(path)].reset_index(drop=True)
        counts = {c: int(part[c].sum()) for c in verifiers.COUNTS}
        write_table(part, path, "bon_judge", meta={"judge": wildcards["judge"], "mode": mode,
                                                   "model": params["model_entry"]["name"], "n": params["n"],
                                                   "limit": params.get("limit"), "settings": params["settings"],
                                                   "template": str(inputs["template"]), **counts,
                                                   **({"shard": list(shard)} if shard else {})})
    tot = {c: int(judged[c].sum()) for c in verifiers.COUNTS}
    print(f"bon judge {wildcards['judge']} ({mode}): {len(judged)} problems, {tot['n_requests']} judgements in "
          f"{seconds:.1f} s (engine start {t1 - t0:.1f} s), {tot['tokens_generated']} tokens generated; "
          f"unparsable {tot['n_unparsable']} (resolved: pointwise an unread step counts incorrect, pairwise "
          f"Response A advances), forced {tot['n_forced']}, cut off and left unread {tot['n_truncated']}",
          flush=True)


def merge_bon_judge(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `merge_bon_judge`: results/{policy_dir}bon_judges/{judge}/{mode}/{benchmark}/shard{i}of{n}.parquet →
    .../{benchmark}.parquet for every judged benchmark: exactly the problems one unsharded job judges (the
    first bon_judges.limit of the policy's samples), each once, in its order; prm_lessons.jobs.shards names a
    problem in two shards, in none, or not to be judged (a stale shard). The metadata's counts are summed."""
    judged = verifiers.first_responses(_samples(inputs, "responses"), params["n"], params.get("limit"))
    shards = as_paths(inputs["shards"])
    for dst in as_paths(outputs["judged"]):
        bench = Path(dst).stem
        mine = [p for p in shards if Path(p).parent.name == bench]
        expected = judged.loc[judged["dataset"] == bench, ["problem_id"]].drop_duplicates()
        df, _ = merge_problem_shards(mine, "bon_judge", expected)
        metas = [table_meta(p) for p in mine]
        meta = {k: v for k, v in (metas[0] if metas else {}).items() if k != "shard"}
        meta.update({c: sum(int(m.get(c) or 0) for m in metas) for c in verifiers.COUNTS}, shards=len(mine))
        write_table(df, dst, "bon_judge", meta=meta)
        log.info("%s: %d problems from %d shards", dst, len(df), len(mine))


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
        m = read_json(path)
        judging = m["judging"]["benchmarks"]
        for r in metrics_bon.bon_long_rows(m, m["prm"]):
            b = r["benchmark"]
            if b == "average":
                n_problems = sum(e["n_problems"] for e in m["benchmarks"].values())
                n_unparsable = m["judging"]["total"]["n_unparsable"]
            else:
                n_problems, n_unparsable = m["benchmarks"][b]["n_problems"], judging[b]["n_unparsable"]
            rows.append({**r, "policy": m.get("policy"), "judge": m["judge"], "mode": m["mode"], "model": m["model"],
                         "n_problems": n_problems, "n_unparsable": n_unparsable})
    df = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    df["run"] = params.get("run_label", "")
    write_csv(df, outputs["table"], "judge_bon_csv")
