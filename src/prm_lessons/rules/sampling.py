"""Rule glue of workflow/rules/sampling.smk: policy sampling shards, their merge, its grading, the Best-of-N
baselines."""
from __future__ import annotations

import logging

import pandas as pd

from .. import as_paths
from ..generation import engine as generation
from ..generation.sampling import sample_problems, shard_rows
from ..grading.answer_key import KEEP_UNITS
from ..grading.samples import grade_samples as grade_table
from ..jobs.hardware import host_summary
from ..metrics.bon import baselines, first_n_samples
from ..tables import SCHEMAS, merge_shards, read_table, table_meta, write_csv, write_table

log = logging.getLogger(__name__)

# results/tables/bon_baselines.csv
BASELINE_COLUMNS = ["policy", "run", "benchmark", "n_problems", "n", "pass", "maj", "mean_acc"]


def sample(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `sample`: one shard of one problem set → results/responses/{dataset}/shard{i}of{n}.parquet
    (responses and steps, ungraded: rule grade_samples grades them). Problems too long for the policy
    (sampling.long_questions) stop the job before any generation, or are skipped and recorded in the
    table's metadata (`long_questions`)."""
    problems = read_table(inputs["problems"], "problems")
    if params.get("limit") is not None:  # a Best-of-N policy's `limit`: its first problems of each set
        problems = problems.head(int(params["limit"]))
    part = shard_rows(problems, int(wildcards["shard"]), int(wildcards["nshards"]))
    entry = params["model"]
    long_questions = {"policy": params["sampling"].get("long_questions", "error"), "n_skipped": 0, "skipped": {}}
    engine_meta = None
    if len(part) == 0:  # more shards than problems: an empty shard is valid
        df = pd.DataFrame(columns=SCHEMAS["responses"])
    else:
        engine = generation.load_engine(params["model_dir"], entry,  # via the module: tests swap the engine
                                        seed_mode=params["sampling"].get("seed_mode", "per_request"))
        df = sample_problems(engine, part, n=int(params["n"]), sampling=params["sampling"],
                             max_model_len=entry.get("max_model_len"), model_name=entry["name"])
        long_questions = df.attrs.get("long_questions", long_questions)
        log.info("engine: %s backend, %d tokens in %.1f s", engine.backend, engine.stats.generated_tokens,
                 engine.stats.seconds)
        # the report says which dtype and host its numbers came from
        engine_meta = {"backend": engine.backend, "dtype": getattr(engine, "dtype", None),
                       "dtype_reason": getattr(engine, "dtype_reason", None), **host_summary()}
    write_table(df, outputs["responses"], "responses",
                meta={"policy": entry["name"], "sampling": params["sampling"], "long_questions": long_questions,
                      "engine": engine_meta})


def merge_samples(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `merge_samples`: shards → results/responses/{dataset}.parquet (ungraded; duplicates are an
    error). Its metadata carries the problems the shards skipped as too long (`long_questions`), so the
    skip is seen downstream of the merge too."""
    paths = as_paths(inputs["shards"])
    df, _ = merge_shards(paths, "responses")
    skipped: dict[str, int] = {}
    engines = []  # where the shards were sampled (distinct records, in shard order)
    for path in paths:
        meta = table_meta(path)
        skipped.update(meta["long_questions"]["skipped"])
        if meta.get("engine") and meta["engine"] not in engines:
            engines.append(meta["engine"])
    write_table(df, outputs["responses"], "responses",
                meta={"long_questions": {"n_skipped": len(skipped), "skipped": skipped}, "engines": engines})
    log.info("%s: %d responses over %d problems", wildcards["dataset"], len(df), df["problem_id"].nunique())
    if skipped:
        log.warning("%s: %d problem(s) not sampled, too long for the policy (sampling.long_questions: skip): %s",
                    wildcards["dataset"], len(skipped), ", ".join(sorted(skipped)))


def grade_samples(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `grade_samples`: results/responses/{dataset}.parquet → results/samples/{dataset}.parquet, every
    response graded against its gold answer (prm_lessons.grading.samples) in the dataset's answer format (the
    problems table's metadata: its config entry) by `grading.grader`, with the responses' `long_questions`
    metadata and the grading settings (`grading`: the grader and timeout the verdicts come from)."""
    responses = read_table(inputs["responses"], "responses")
    fmt = table_meta(inputs["problems"])["spec"].get("answer_format", "plain")  # a library spec may omit it
    grading = params["grading"]
    grader = grading.get("grader", "math_verify")
    df = grade_table(responses, timeout_s=grading["timeout_s"], workers=grading.get("workers", 1), answer_format=fmt,
                     grader=grader, keep_units=wildcards["dataset"] in KEEP_UNITS)
    meta = table_meta(inputs["responses"])
    write_table(df, outputs["samples"], "samples",
                meta={"long_questions": meta.get("long_questions"), "engines": meta.get("engines", []),
                      "grading": {"grader": grader, "timeout_s": grading["timeout_s"]}})
    log.info("%s: %d responses graded by %s (%s answers), %d correct", wildcards["dataset"], len(df), grader, fmt,
             int(df["correct"].astype(bool).sum()) if len(df) else 0)


def bon_baselines(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `bon_baselines`: pass@N and maj@N per (policy, benchmark, N) and, per (policy, N), their
    unweighted average → results/tables/bon_baselines.csv. Every N is evaluated on the first N samples of
    each problem (metrics.first_n_samples); maj@N groups answers by `bon.maj_grouping`, as bon_metrics does."""
    rows = []
    grouping = params.get("maj_grouping") or "normalized"
    for path, (policy, bench, ns) in zip(as_paths(inputs["samples"]), params["evaluations"]):
        df = read_table(path, "samples").assign(benchmark=bench)
        for n in ns:
            rows.append({"policy": policy, "benchmark": bench,
                         **baselines(first_n_samples(df, int(n)), int(n), grouping,
                                   keep_units=bench in KEEP_UNITS)})
    table = pd.DataFrame(rows)
    out = []
    for (policy, n), g in table.groupby(["policy", "n"], sort=False):
        avg = {"policy": policy, "benchmark": "average", "n_problems": int(g["n_problems"].sum()), "n": int(n),
               **{col: float(g[col].mean()) for col in ("pass", "maj", "mean_acc")}}
        out += [g, pd.DataFrame([avg])]
    table = pd.concat(out, ignore_index=True)
    table.insert(1, "run", params.get("run_label", ""))
    write_csv(table[BASELINE_COLUMNS], outputs["table"], "bon_baselines_csv")  # fractions, as bon.csv
    log.info("\n%s", table.to_string(index=False))
