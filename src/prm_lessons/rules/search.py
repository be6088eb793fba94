"""Rule glue of workflow/rules/search.smk: PRM-guided greedy search per PRM, the same policy's baseline
samples and ORM scores (when the Best-of-N ones cannot be reused), and results/tables/search.csv.

search_table runs in the analysis environment (no torch): the torch modules (scoring, search_scorers) are
imported inside the functions that load models.
"""
from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from .. import as_paths
from ..evaluation import search
from ..generation import engine as generation
from ..generation.sampling import sample_problems
from ..grading.answer_key import KEEP_UNITS
from ..grading.samples import grade_samples
from ..jobs.shards import in_shard
from ..metrics.select import aggregate
from ..tables import read_table, table_meta, write_csv, write_table

log = logging.getLogger(__name__)

TABLE_COLUMNS = ["prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high", "n_problems"]


def _limited(problems: pd.DataFrame, limit) -> pd.DataFrame:
    return problems if limit is None else problems.head(int(limit))


def _shard(wildcards: dict) -> tuple[int, int] | None:
    """(shard, nshards) of a sharded search job (search.shards > 1), None for one that searches all."""
    return (int(wildcards["shard"]), int(wildcards["nshards"])) if "shard" in wildcards else None


def search_greedy(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `search_greedy`: results/problems/{benchmark}.parquet (every searched benchmark) →
    results/search/{prm}/{benchmark}.parquet, one row per problem (prm_lessons.evaluation.search.SEARCH_COLUMNS).
    The policy and the PRM are loaded once for all benchmarks. With the `shard`/`nshards` wildcards
    (search.shards > 1) it searches that problem shard of every benchmark (prm_lessons.jobs.shards.in_shard,
    whole problems, after search.limit) into .../{benchmark}/shard{i}of{n}.parquet; rule merge_search joins
    them. A shard without problems loads no model."""
    cfg, entry = params["search"], params["model"]
    shard = _shard(wildcards)
    todo = []
    for src, dst in zip(as_paths(inputs["problems"]), as_paths(outputs["search"])):
        problems = _limited(read_table(src, "problems"), cfg.get("limit"))
        if shard:
            problems = problems[in_shard(problems["problem_id"], *shard)]
        todo.append((src, dst, problems))
    n_items = sum(len(p) for _, _, p in todo)
    log.info("search_greedy %s: %s, %d problems over %d benchmarks (%s)", wildcards.get("prm"),
             f"shard {shard[0]} of {shard[1]}" if shard else "unsharded", n_items, len(todo),
             ", ".join(f"{Path(src).stem} {len(p)}" for src, _, p in todo))
    if shard and not n_items:
        for _, dst, _ in todo:
            _write_search(search.grade_records([], params["grading"]), dst, shard)
        return

    import torch  # lazy: torch (module docstring)

    from ..evaluation.search_scorers import candidate_scorer  # lazy: torch (module docstring)
    from ..scoring.load import load_adapter  # lazy: torch (module docstring)

    if threads:
        torch.set_num_threads(max(1, int(threads)))
    settings = search.SearchSettings.from_config(cfg, params["sampling"])
    engine = generation.load_engine(params["model_dir"], entry)  # via the module: tests swap the engine
    # transformers whatever the PRM's scoring backend: candidates are scored incrementally on a KV-cached
    # prefix, beside the policy's vLLM engine in this process (a second vLLM engine would contend for memory)
    adapter = load_adapter(params["spec"], backend="transformers")
    sc = params["scoring"]
    scorer = candidate_scorer(adapter, cfg.get("scoring", "auto"), sc["batch_tokens"], sc["batch_size"])
    for src, dst, problems in todo:
        fmt = table_meta(src)["spec"]["answer_format"]
        what = f"search {Path(src).stem}" + (f" (shard {shard[0]} of {shard[1]})" if shard else "")
        records = search.greedy_search(engine, scorer, problems, settings, entry.get("max_model_len"), what)
        df = search.grade_records(records, params["grading"], fmt, keep_units=Path(src).stem in KEEP_UNITS)
        info = search.summary(df)
        _write_search(df, dst, shard)
        log.info("%s (%s): %s", src, wildcards.get("prm"), info)
        limited = {k: v for k, v in info["status"].items() if k not in ("ended",) and v}
        if limited:
            log.warning("%s: %d of %d problems stopped without an end (%s); graded as they stand", src,
                        sum(limited.values()), info["problems"], limited)
    log.info("scorer: %s, %d tokens scored in %d forward passes, %.1f s; engine: %d tokens in %.1f s",
             type(scorer).__name__, scorer.stats.tokens, scorer.stats.forward_passes, scorer.stats.seconds,
             engine.stats.generated_tokens, engine.stats.seconds)


def _write_search(df: pd.DataFrame, dst: str, shard: tuple[int, int] | None) -> None:
    """The table, or a shard with its range, atomically with its integrity record (tables.write_table), so a
    job killed while writing leaves no table that the merge or a consumer would trust."""
    write_table(df, dst, None, meta={"shard": list(shard)} if shard else None)


def merge_search(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `merge_search`: results/search/{prm}/{benchmark}/shard{i}of{n}.parquet → the table the unsharded
    search_greedy writes (same columns, one row per searched problem in the problems table's order);
    search.merge_shards refuses, naming them, problems in two shards, in none, or not searched."""
    shards = as_paths(inputs["shards"])
    for src, dst in zip(as_paths(inputs["problems"]), as_paths(outputs["search"])):
        bench = Path(dst).stem
        expected = _limited(read_table(src, "problems"), params.get("limit"))["problem_id"].astype(str).tolist()
        mine = [p for p in shards if Path(p).parent.name == bench]
        df = search.merge_shards([(p, read_table(p, None)) for p in mine], expected,
                                 f"merge of {len(mine)} search shards of {bench} ({wildcards.get('prm')})")
        _write_search(df, dst, None)
        log.info("%s: %d problems from %d shards", dst, len(df), len(mine))


def search_samples(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `search_samples`: N responses of the search policy per searched problem →
    results/search/samples/{benchmark}.parquet (the samples table; sampling.sample_problems, graded in
    this job by graded.grade_samples: one unsharded table, only when the Best-of-N samples cannot be reused)."""
    problems = _limited(read_table(inputs["problems"], "problems"), params.get("limit"))
    entry = params["model"]
    engine = generation.load_engine(params["model_dir"], entry)
    fmt = table_meta(inputs["problems"])["spec"]["answer_format"]
    df = sample_problems(engine, problems, n=int(params["n"]), sampling=params["sampling"],
                         max_model_len=entry.get("max_model_len"), model_name=entry["name"])
    long_questions = df.attrs.get("long_questions")
    grading = params["grading"]
    df = grade_samples(df, timeout_s=grading["timeout_s"], workers=grading.get("workers", 1), answer_format=fmt,
                       grader=grading.get("grader", "math_verify"), keep_units=wildcards["dataset"] in KEEP_UNITS)
    write_table(df, outputs["samples"], "samples",
                meta={"policy": entry["name"], "sampling": params["sampling"], "long_questions": long_questions,
                      "grading": {"grader": grading.get("grader", "math_verify"), "timeout_s": grading["timeout_s"]}})


def search_greedy_samples(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `search_greedy_samples` (search.pass1: greedy): one greedy response per searched problem →
    results/search/greedy/{benchmark}.parquet, Table 8's pass@1; search_samples at the greedy settings
    (plan.greedy_sampling: temperature 0, top_p 1) and N 1, which the rule's params carry."""
    search_samples(inputs=inputs, outputs=outputs, params=params, wildcards=wildcards, threads=threads)


def search_orm_scores(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `search_orm_scores`: the search policy's samples → results/search/scores/{orm}/{benchmark}.parquet
    (step_scores: an outcome RM's one score per response), every benchmark in one job."""
    from ..scoring.batch import ScoreStats, score_responses  # lazy: torch (module docstring)
    from ..scoring.load import load_adapter  # lazy: torch (module docstring)

    adapter = load_adapter(params["spec"])
    cfg = params["scoring"]
    for src, dst in zip(as_paths(inputs["samples"]), as_paths(outputs["scores"])):
        df = read_table(src, "samples")
        stats = ScoreStats()
        steps = [list(s) if s is not None else [] for s in df["steps"]]
        scores = score_responses(adapter, df["question"].tolist(), steps, cfg["batch_tokens"], cfg["batch_size"],
                                 stats)
        # keys and scores only, as score_samples writes (search_table reads nothing else)
        df = pd.DataFrame({"problem_id": df["problem_id"], "sample_idx": df["sample_idx"], "step_scores": scores,
                           "n_steps_scored": [len(s) for s in scores]})
        write_table(df, dst, "step_scores", meta={"adapter": params["spec"]["adapter"], "outcome": adapter.outcome,
                                                  "truncated": stats.truncated, "seconds": stats.seconds,
                                                  "tokens": adapter.token_info()})


def _orm_series(frame: pd.DataFrame, orm_paths: list[str]) -> pd.Series | None:
    """One score per sample row (the ORM's score; a step PRM's product) aligned to `frame`."""
    if not orm_paths:
        return None
    vals = {}
    for path in orm_paths:
        sc = read_table(path, "step_scores")
        outcome = bool(table_meta(path).get("outcome", False))
        for p, k, s in zip(sc["problem_id"], sc["sample_idx"], sc["step_scores"]):
            s = list(s) if s is not None else []
            vals[(str(p), int(k))] = (s[0] if s else None) if outcome else (aggregate(s, "product") if s else None)
    return pd.Series([vals.get((str(p), int(k))) for p, k in zip(frame["problem_id"], frame["sample_idx"])],
                     index=frame.index, dtype=object)


def search_table(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `search_table`: the searches and the baseline samples (and ORM scores) →
    results/tables/search.csv (search.search_metrics; fractions, bootstrap intervals over problems)."""
    benches = list(params["benchmarks"])
    frames = []
    for b, path in zip(benches, as_paths(inputs["samples"])):
        df = read_table(path, "samples")
        frames.append(df.assign(benchmark=b))
    samples = pd.concat(frames, ignore_index=True)
    orm = _orm_series(samples, as_paths(inputs.get("orm")))
    searches: dict[str, pd.DataFrame] = {}
    paths = as_paths(inputs["search"])
    i = 0
    for prm in params["prms"]:
        parts = []
        for b in benches:
            parts.append(pd.read_parquet(paths[i]).assign(benchmark=b))
            i += 1
        searches[prm] = pd.concat(parts, ignore_index=True)
    greedy = None
    if params.get("pass1", "mean") == "greedy":  # search.pass1: one greedy response per problem (Table 8's pass@1)
        greedy = pd.concat([read_table(path, "samples").assign(benchmark=b)
                            for b, path in zip(benches, as_paths(inputs["greedy"]))], ignore_index=True)
    table = search.problem_table(searches, samples, int(params["n"]), params.get("maj_grouping", "normalized"), orm,
                                 pass1_samples=greedy)
    boot = params["bootstrap"]
    rows = search.search_metrics(table, list(params["prms"]), int(params["n"]), int(params["candidates"]),
                                 int(boot["samples"]), int(boot["seed"]), float(boot["confidence"]))
    out = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    out.insert(0, "run", params.get("run_label", ""))
    write_csv(out, outputs["table"], "search_csv")
    for prm, df in searches.items():
        log.info("%s: statuses %s", prm, df["status"].value_counts().to_dict())
    log.info("\n%s", out.to_string(index=False))
