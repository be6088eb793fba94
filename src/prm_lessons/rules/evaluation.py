"""Rule glue of workflow/rules/evaluation.smk: frozen-base step features, step scoring, LLM critics on
ProcessBench, Best-of-N, ProcessBench and PRMBench metrics and their long tables.

The metrics and table rules run in the analysis environment, which has no torch: the scoring rules
import the torch modules (features, prm, scoring) inside their functions.
"""
from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .. import as_paths
from ..artifacts.published import load_published, prmbench_published
from ..evaluation import critic
from ..generation.engine import load_engine
from ..jobs.shards import in_shard, merge_problem_shards
from ..labels.judge import load_template
from ..metrics import bon as metrics_bon
from ..metrics import model_free as metrics_model_free
from ..metrics import prmbench as metrics_prmbench
from ..metrics import processbench as metrics_processbench
from ..metrics import resampled as metrics_resampled
from ..metrics import rows as metrics_rows
from ..tables import SCHEMAS, join_scores, read_json, read_table, table_meta, write_csv, write_json, write_table

log = logging.getLogger(__name__)

# columns of the long tables results/tables/{bon,processbench}.csv (tables.CSV_DTYPES: fractions)
TABLE_COLUMNS = {
    "bon": ["policy", "prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high"],
    "processbench": list(metrics_processbench.PROCESSBENCH_LONG_COLUMNS),
    "processbench_paired": list(metrics_resampled.PAIRED_COLUMNS),
}


# ------------------------------------------------------------------------------------ features and scores


def step_features(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `step_features`: results/{source}.parquet (responses or ProcessBench cases; for the training
    source the responses of every training problem set, in one pass) → results/features/{source}.safetensors."""
    import torch  # lazy: torch (module docstring)

    from ..models import prm  # lazy: torch (module docstring)
    from ..training import features

    if threads:
        torch.set_num_threads(max(1, int(threads)))
    t0 = time.time()
    df = pd.concat([pd.read_parquet(p) for p in as_paths(inputs["texts"])], ignore_index=True)
    # params["training"]: the validated config block (every key set)
    backbone, tokenizer, fmt, fp = prm.frozen_base(params["base_dir"], params["training"])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    backbone.to(device)
    questions, steps = features.texts(df)
    feats = features.compute_features(backbone, tokenizer, fmt, questions, steps, params["max_length"],
                                      int(params.get("batch_size", 8)), device)
    truncated = int((feats["n_kept"] < feats["n_steps"]).sum())
    meta = {"base_fingerprint": fp, "base": str(params["base_dir"]), "format": fmt.to_dict(),
            "max_length": params["max_length"], "rows": features.row_ids(df),
            "source": ", ".join(as_paths(inputs["texts"])), "truncated": truncated}
    features.save_features(outputs["features"], feats, meta)
    log.info("step features of %d responses (%d steps, %d tokens) from the frozen base %s in %.1f s; "
             "%d truncated at max_length=%s", len(df), int(feats["features"].shape[0]), feats["tokens"],
             params["base_dir"], time.time() - t0, truncated, params["max_length"])


def _score_frame(adapter, questions, steps_list, cfg, prefixes=False):
    from ..scoring.batch import ScoreStats, score_prefixes, score_responses  # lazy: torch (module docstring)

    stats = ScoreStats()
    fn = score_prefixes if prefixes else score_responses
    scores = fn(adapter, questions, steps_list, cfg.get("batch_tokens", 16384), cfg.get("batch_size", 64), stats)
    rate = stats.responses / stats.seconds if stats.seconds else float("nan")
    log.info("scored %d inputs in %d forward passes, %d tokens, %.1f s (%.2f inputs/s); %d truncated",
             stats.responses, stats.forward_passes, stats.tokens, stats.seconds, rate, stats.truncated)
    return scores, stats


def _from_features(features_input, spec, row_ids, resamples: list | None = None):
    """Head-only trained PRMs: scores from the frozen base's stored step features (rule step_features)
    plus this PRM's head; None when the rule gave no features input (any other PRM). `resamples` (a
    list): filled with the scores of the PRM's resample heads (training.resamples), per row a list of R
    per-step lists, when it has any."""
    from ..scoring.batch import ScoreStats  # lazy: torch (module docstring)
    from ..training import features  # lazy: torch (module docstring)

    paths = as_paths(features_input)
    if not paths:
        return None
    t0 = time.perf_counter()
    scores, truncated, resampled = features.scores_and_resamples(spec["path"], paths[0], row_ids,
                                                                 spec.get("max_length"), resamples is not None)
    stats = ScoreStats(responses=len(scores), truncated=truncated, seconds=time.perf_counter() - t0)
    log.info("scored %d inputs from the frozen base's step features (%s) in %.2f s; %d truncated%s",
             len(scores), paths[0], stats.seconds, truncated,
             f"; and by {len(resampled[0]) if resampled else 0} resample heads" if resampled is not None else "")
    if resamples is not None and resampled is not None:
        resamples.extend(resampled)
    return scores, stats


def _load_adapter(spec: dict):
    """The PRM's model (prm_lessons.scoring.load). Imported here, not per rule: transformers costs ~2 s
    of a scoring job's ~4 (measured), and a head-only PRM scored from stored features never needs it."""
    from ..scoring.load import load_adapter  # lazy: transformers (above)

    return load_adapter(spec)


def _shard(wildcards: dict) -> tuple[int, int] | None:
    """(shard, nshards) of a sharded scoring job (prms.shards > 1), None for one that scores whole tables."""
    return (int(wildcards["shard"]), int(wildcards["nshards"])) if "shard" in wildcards else None


_SHARD_FILE = re.compile(r"shard\d+of\d+\.parquet")


def _table_of(path: str) -> str:
    """The table a scoring output belongs to: its stem, or its folder's name for a shard file
    (results/scores/{prm}/{dataset}/shard{i}of{n}.parquet)."""
    return Path(path).parent.name if _SHARD_FILE.fullmatch(Path(path).name) else Path(path).stem


def _score_rows(table: pd.DataFrame, mine, done, question: str, spec: dict, cfg: dict, adapter,
                prefixes: bool = False):
    """The one scoring step of score_samples and score_processbench: the rows of `table` in this shard
    (`mine`) scored from stored features (`done`: the whole table's (scores, stats), kept to the shard),
    as nothing for a shard without rows (no model is loaded), or by the adapter, loaded on first use;
    `prefixes`: an outcome RM scores every prefix as its own response. Returns (rows, steps, scores,
    meta, adapter), meta: what the score table records beside the PRM and the shard."""
    from ..scoring.batch import ScoreStats  # lazy: torch (module docstring)

    rows = table[mine].reset_index(drop=True)
    steps = [list(s) if s is not None else [] for s in rows["steps"]]
    tokens = None
    if done:
        (scores, stats), outcome = done, False
        scores = [s for s, keep in zip(scores, mine) if keep]
    elif not len(rows):  # a shard without problems or cases (more shards than them): no model is loaded
        scores, stats, outcome = [], ScoreStats(), None
    else:
        adapter = adapter or _load_adapter(spec)
        scores, stats = _score_frame(adapter, rows[question].tolist(), steps, cfg,
                                     prefixes=adapter.outcome if prefixes else False)
        outcome, tokens = adapter.outcome, adapter.token_info()
    meta = {"adapter": spec["adapter"], "outcome": outcome, "truncated": stats.truncated,
            "seconds": stats.seconds, "tokens": tokens}
    return rows, steps, scores, meta, adapter


def _score_meta(wildcards: dict, meta: dict, shard: tuple[int, int] | None) -> dict:
    return {"prm": wildcards.get("prm"), **meta, **({"shard": list(shard)} if shard else {})}


def score_samples(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `score_samples`: results/{policy_dir}responses/{dataset}.parquet (ungraded) →
    results/{policy_dir}scores/{prm}/{dataset}.parquet (step_scores: the keys, step_scores and
    n_steps_scored, in the responses' order; consumers join them with the graded samples,
    tables.join_scores), for every Best-of-N set of one
    policy and one PRM in one job: the model is loaded once, not once per set (a 72B PRM takes minutes to
    load; on CPU the imports alone cost ~5 s a job). `inputs["responses"]`,
    `inputs["features"]` (head-only trained PRMs) and `outputs["scores"]` are matched by benchmark (file
    stem, or a shard file's folder); an output without samples (a benchmark the policy does not sample)
    is an empty table. With the `shard`/`nshards` wildcards (prms.shards > 1) it scores the responses of
    that problem shard of every set only (prm_lessons.jobs.shards.in_shard; rule merge_sample_scores joins them)."""
    from ..training import features  # lazy: torch (module docstring)

    spec, cfg = params["spec"], params.get("scoring", {})
    samples = {Path(p).stem: p for p in as_paths(inputs["responses"])}
    feats = {Path(p).stem: p for p in as_paths(inputs.get("features"))}
    shard = _shard(wildcards)
    adapter = None
    for dst in as_paths(outputs["scores"]):
        bench = _table_of(dst)
        if bench not in samples:
            # a benchmark this policy does not sample (bon.policies.<name>.benchmarks): the rule's outputs
            # are every benchmark's, so an empty table that no metric reads
            write_table(pd.DataFrame(columns=SCHEMAS["step_scores"]), dst, "step_scores",
                        meta={"prm": wildcards.get("prm"), "not_sampled": True})
            continue
        src = samples[bench]
        df = read_table(src, "responses")
        mine = in_shard(df["problem_id"], *shard) if shard else np.ones(len(df), dtype=bool)
        # stored features cover the whole table: the head is applied to all of it (seconds), this shard kept
        done = _from_features(feats.get(bench), spec, features.row_ids(df))
        df, _, scores, meta, adapter = _score_rows(df, mine, done, "question", spec, cfg, adapter)
        df = pd.DataFrame({"problem_id": df["problem_id"], "sample_idx": df["sample_idx"], "step_scores": scores,
                           "n_steps_scored": [len(s) for s in scores]})
        write_table(df, dst, "step_scores", meta=_score_meta(wildcards, meta, shard))
        log.info("%s: %d responses scored -> %s", src, len(df), dst)


def score_processbench(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `score_processbench`: results/processbench/cases.parquet → results/scores/{prm}/processbench.parquet
    (pb_scores; the dev split's likewise). Outcome RMs score every prefix as its own response. A head-only
    PRM with resample heads scored from stored features also gets column `resample_scores` (per case a
    list of R per-step score lists, resample r at index r)."""
    spec, cfg = params["spec"], params.get("scoring", {})
    shard = _shard(wildcards)
    adapter = None
    jobs = [(inputs["cases"], inputs.get("features"), as_paths(outputs["scores"])[0])]
    if as_paths(outputs.get("dev_scores")):  # the dev split, scored by the same model in the same job
        jobs.append((as_paths(inputs["dev_cases"])[0], inputs.get("dev_features"), as_paths(outputs["dev_scores"])[0]))
    for cases_path, feats, dst in jobs:
        cases = read_table(cases_path, "processbench")
        # sharded (prms.shards > 1): this shard's cases, every prefix of a case in the same shard
        mine = in_shard(cases["id"], *shard) if shard else np.ones(len(cases), dtype=bool)
        resampled: list = []
        done = _from_features(feats, spec, cases["id"].astype(str).tolist(), resamples=resampled)
        cases, steps, scores, meta, adapter = _score_rows(cases, mine, done, "problem", spec, cfg, adapter,
                                                          prefixes=True)
        out = pd.DataFrame({"id": cases["id"].astype(str), "subset": cases["subset"], "step_scores": scores,
                            "n_steps": [len(s) for s in steps], "n_steps_scored": [len(s) for s in scores]})
        if resampled:  # resample heads: per case R per-step lists (metrics.resampled reads them)
            out[metrics_resampled.RESAMPLE_COLUMN] = [r for r, keep in zip(resampled, mine) if keep]
            meta = {**meta, "resamples": len(resampled[0])}
        write_table(out, dst, "pb_scores", meta=_score_meta(wildcards, meta, shard))


def _merged_meta(metas: list[dict]) -> dict:
    """The shards' metadata as one table's: the first shard's, with truncation and seconds summed and
    `outcome` (bon_metrics reads it) and `tokens` from any shard that loaded the model (an empty shard
    loads none)."""
    meta = {k: v for k, v in (metas[0] if metas else {}).items() if k != "shard"}
    for k in ("truncated", "seconds"):
        if any(k in m for m in metas):
            meta[k] = sum(m.get(k) or 0 for m in metas)
    if any("outcome" in m for m in metas):
        meta["outcome"] = any(bool(m.get("outcome")) for m in metas)
        meta["tokens"] = next((m["tokens"] for m in metas if m.get("tokens")), meta.get("tokens"))
    return {**meta, "shards": len(metas)}


def merge_sample_scores(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `merge_sample_scores`: the shard tables results/{policy_dir}scores/{prm}/{dataset}/shard{i}of{n}
    .parquet → results/{policy_dir}scores/{prm}/{dataset}.parquet for every set, each holding every
    response of its responses table exactly once, in its order (prm_lessons.jobs.shards.merge_problem_shards names
    each overlapping or missing problem); a set the policy does not sample stays an empty table."""
    samples = {Path(p).stem: p for p in as_paths(inputs["responses"])}
    shards = as_paths(inputs["shards"])
    for dst in as_paths(outputs["scores"]):
        bench = Path(dst).stem
        mine = [p for p in shards if Path(p).parent.name == bench]
        expected = (read_table(samples[bench], None, columns=["problem_id", "sample_idx"]) if bench in samples
                    else pd.DataFrame({"problem_id": [], "sample_idx": []}))
        df, _ = merge_problem_shards(mine, "step_scores", expected)
        write_table(df, dst, "step_scores", meta=_merged_meta([table_meta(p) for p in mine]))
        log.info("%s: %d responses from %d shards", dst, len(df), len(mine))


def merge_processbench_scores(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `merge_processbench_scores`: results/scores/{prm}/processbench{,_dev}/shard{i}of{n}.parquet →
    results/scores/{prm}/processbench{,_dev}.parquet, every case exactly once, in the cases' order."""
    jobs = [(inputs["cases"], inputs["shards"], outputs["scores"])]
    if as_paths(outputs.get("dev_scores")):
        jobs.append((as_paths(inputs["dev_cases"])[0], inputs["dev_shards"], as_paths(outputs["dev_scores"])[0]))
    for cases_path, shards, dst in jobs:
        shards = as_paths(shards)
        expected = read_table(cases_path, None, columns=["id"]).astype({"id": str})
        df, _ = merge_problem_shards(shards, "pb_scores", expected, group="id")
        write_table(df, dst, "pb_scores", meta=_merged_meta([table_meta(p) for p in shards]))
        log.info("%s: %d cases from %d shards", dst, len(df), len(shards))


# ------------------------------------------------------------------------------------------------ critics


def critic_processbench(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `critic_processbench`: results/processbench/cases.parquet (+ the critic's template file) →
    results/critics/{judge}/processbench.parquet. params.spec: the critic's model and settings
    (plan.critic_specs; n = 1 already greedy there). With the `shard`/`nshards` wildcards (critics.shards > 1)
    it critiques that case shard only, into .../processbench/shard{i}of{n}.parquet (prm_lessons.jobs.shards.in_shard
    by case id, as score_processbench; rule merge_critic_processbench joins them)."""
    spec = params["spec"]
    cases = read_table(inputs["cases"], "processbench")
    shard = _shard(wildcards)
    if shard:
        cases = cases[in_shard(cases["id"], *shard)].reset_index(drop=True)
    where = f"shard {shard[0]} of {shard[1]}" if shard else "all cases"
    print(f"critic {wildcards.get('judge')}, {where}: {len(cases)} cases x {spec['n']} critiques", flush=True)
    template_file = (as_paths(inputs.get("template")) or [None])[0]
    # run_eval.py reads the template .strip()-ed; the built-in text has no surrounding whitespace
    template = (load_template(template_file) or "").strip() or None
    # a shard without cases (more shards than cases): no model is loaded
    engine = load_engine(params["model_dir"], params["model_entry"]) if len(cases) else None
    df = critic.critic_predictions(
        engine, cases, n=int(spec["n"]), temperature=float(spec["temperature"]), top_p=float(spec["top_p"]),
        top_k=int(spec["top_k"]) if spec.get("top_k") else None, max_tokens=int(spec["max_tokens"]),
        seed=int(spec["seed"]), system_prompt=spec.get("system_prompt"), template=template,
        force_answer=bool(spec["force_answer"]), force_truncated=bool(spec["force_truncated"]), parse=spec["parse"])
    _critic_report(df, wildcards.get("judge"), f"n={spec['n']}, template {spec['template']}, parse {spec['parse']}")
    write_table(df, outputs["predictions"], "critic",
                meta={"critic": wildcards.get("judge"), **({"shard": list(shard)} if shard else {})})


def merge_critic_processbench(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `merge_critic_processbench`: results/critics/{judge}/processbench/shard{i}of{n}.parquet →
    results/critics/{judge}/processbench.parquet, every case exactly once, in the cases' order (what one
    unsharded job writes); prm_lessons.jobs.shards names a case in two shards, in none, or not in the cases."""
    shards = as_paths(inputs["shards"])
    expected = read_table(inputs["cases"], None, columns=["id"]).astype({"id": str})
    df, meta = merge_problem_shards(shards, "critic", expected, group="id")
    write_table(df, outputs["predictions"], "critic",
                meta={**{k: v for k, v in meta.items() if k != "shard"}, "shards": len(shards)})
    log.info("%s: %d cases from %d shards", outputs["predictions"], len(df), len(shards))


def critic_reparse(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `critic_reparse`: another critic's results/critics/{source}/processbench.parquet (same model and
    generation settings; plan.critic_generation_sources) → results/critics/{judge}/processbench.parquet,
    its critiques read under this critic's `parse` mode, without the forced answers if it forces none."""
    cases = read_table(inputs["cases"], "processbench")
    force = bool(params["force_answer"])
    df = critic.apply_parse(pd.read_parquet(inputs["source"]), critic.case_steps(cases), params["parse"],
                            force=force)
    _critic_report(df, wildcards.get("judge"),
                   f"parse {params['parse']}{'' if force else ', no forced answers'} of {inputs['source']}")
    write_table(df, outputs["predictions"], "critic", meta={"critic": wildcards.get("judge")})


def _critic_report(df: pd.DataFrame, name, what: str) -> None:
    unparsed = int(df["prediction"].isna().sum())
    statuses = df["status"].value_counts().to_dict()
    print(f"critic {name} ({what}): {len(df)} cases, no prediction {unparsed} "
          f"({100 * unparsed / max(len(df), 1):.1f}%; counted wrong; statuses {statuses}); samples cut off at "
          f"max_tokens and left unread: {int(df['n_truncated'].sum())}", flush=True)


# ------------------------------------------------------------------------------------------------ metrics


def bon_metrics(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `bon_metrics`: one policy's results/{policy_dir}scores/{prm}/{benchmark}.parquet (its benchmarks),
    joined by key with its graded results/{policy_dir}samples/{benchmark}.parquet (tables.join_scores)
    → results/{policy_dir}metrics/bon/{prm}.json: the metrics at bon.n over every benchmark, and under
    `by_n` those at each further N (params.ns: benchmark → its N) over that N's benchmarks, each from the
    first N samples of every problem (metrics.bon.first_n_samples). Outcome RMs (one score per response) give
    orm@N instead of prm_<agg>."""
    cfg = params["bon"]
    frames, outcome = [], False
    samples = {Path(p).stem: p for p in as_paths(inputs["samples"])}
    for path in as_paths(inputs["scores"]):
        bench = Path(path).stem
        if bench not in samples:
            raise ValueError(f"{path}: no samples table of benchmark '{bench}' among the inputs")
        df = join_scores(read_table(samples[bench], "samples"), read_table(path, "step_scores"),
                         f"{samples[bench]} + {path}")
        df = df.assign(benchmark=bench)
        outcome = outcome or bool(table_meta(path).get("outcome", False))
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    aggs = [] if outcome else list(cfg["aggregations"])
    if outcome:
        df["orm_score"] = [s[0] if s is not None and len(s) else None for s in df["step_scores"]]
    ns_of = {b: [int(n) for n in ns] for b, ns in params["ns"].items()} or {
        b: [int(cfg["n"])] for b in df["benchmark"].unique()}
    by_n = {}
    for n in sorted({n for ns in ns_of.values() for n in ns}):
        part = metrics_bon.first_n_samples(df[df["benchmark"].isin([b for b, ns in ns_of.items() if n in ns])], n)
        by_n[n] = metrics_bon.bon_metrics(part, aggs, n=n, maj_grouping=cfg["maj_grouping"],
                                      orm_column="orm_score" if outcome else None,
                                      **_bootstrap_args(cfg), workers=max(1, int(threads or 1)))
        _log_bon(by_n[n], f"{params.get('policy')}/{wildcards.get('prm')} N={n}")
    m = by_n.pop(int(cfg["n"]))
    m.update(prm=wildcards.get("prm"), policy=params.get("policy"), run_label=params.get("run_label"),
             by_n={str(n): v for n, v in by_n.items()})
    write_json(m, outputs["metrics"])


def _log_bon(m: dict, name: str) -> None:
    log.info("bon %s: %s", name, {k: v for k, v in m["average"].items() if k != "ci"})
    for col, count in m["n_unscored"].items():  # recorded in the JSON as n_unscored / unscored
        if count:
            log.warning("bon %s: %s: %d problem(s) without a finite score on any response, counted wrong: %s",
                        name, col, count, {b: ids[col] for b, ids in m["unscored"].items() if col in ids})
    if m["maj_comparisons"].get("timeouts") or m["maj_comparisons"].get("errors"):
        log.warning("bon %s: maj@N math_verify grouping: %s (each counted as different answers)", name,
                    m["maj_comparisons"])


def _pb_threshold(params) -> float | str:
    """The PRM's threshold (prms.models.<prm>.threshold), else processbench_eval.threshold: 'tune' or a
    finite number; an error names the key."""
    t = params.get("threshold")
    key = "prms.models.<prm>.threshold" if t is not None else "processbench_eval.threshold"
    t = params["processbench_eval"]["threshold"] if t is None else t
    if t == "tune":
        return t
    try:
        return metrics_rows.check_threshold(t)
    except ValueError as exc:
        raise ValueError(f"config {key}: {exc}") from None


def _predictions_by_id(df: pd.DataFrame) -> dict:
    """{id: first-error prediction} of a frame with id, prediction (null = unparsable → None)."""
    return {str(i): (None if pd.isna(p) else int(p)) for i, p in zip(df["id"], df["prediction"])}


def _scores_by_id(df: pd.DataFrame) -> dict:
    """{id: step scores} of a pb_scores frame, as stored (metrics.rows.check_processbench_inputs checks them and
    names the id of a null or NaN score)."""
    return {str(i): (list(s) if isinstance(s, (list, tuple, np.ndarray)) else s)
            for i, s in zip(df["id"], df["step_scores"])}


def _bootstrap_args(cfg: dict) -> dict:
    b = cfg["bootstrap"]
    return {"bootstrap": int(b["samples"]), "seed": int(b["seed"]), "confidence": float(b["confidence"])}


def _write_pb(m: dict, per_case: pd.DataFrame, outputs: dict) -> None:
    write_json(m, outputs["metrics"])
    write_table(per_case, outputs["predictions"], None)


def processbench_baseline(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench_baseline`: a model-free ProcessBench predictor (always_correct, first_step,
    structure) → results/metrics/processbench/baseline_{kind}.json and its predictions. The predictors
    get only `metrics.model_free.structure_view` (id, subset, number of steps), never a step's text; `structure`
    is fitted on the dev split, or cross-fitted over two folds of the cases without one."""
    kind, cfg = wildcards["kind"], params["processbench_eval"]
    cases = read_table(inputs["cases"], "processbench")
    view = metrics_model_free.structure_view(cases)
    rule = None
    if kind == "structure":
        dev_paths = as_paths(inputs.get("dev_cases"))
        if dev_paths:
            dev = read_table(dev_paths[0], "processbench")
            rule = metrics_model_free.fit_structure_rule(metrics_model_free.structure_view(dev),
                                                         dev["label"].astype(int).tolist())
            preds = metrics_model_free.baseline_predictions(kind, view, rule)
            fitted = f"dev split ({len(dev)} cases)"
        else:
            preds, rule = metrics_model_free.crossfit_structure_predictions(view, cases["label"].astype(int).tolist())
            fitted = "cross-fitted over 2 folds of the cases"
    else:
        preds = metrics_model_free.baseline_predictions(kind, view)
        fitted = None
    m, per_case = metrics_processbench.evaluate_processbench(cases, preds, {}, **_bootstrap_args(cfg))
    m.update(prm=f"baseline_{kind}", run_label=params.get("run_label"), baseline=kind, fitted_on=fitted,
             rule=[{"subset": k[0], "n_steps": int(k[1]), "prediction": int(v)}
                   for k, v in sorted((rule or {}).items())]
             if isinstance(rule, dict) else rule)
    _write_pb(m, per_case, outputs)
    log.info("processbench baseline %s: average F1 %.3f (fitted on %s)", kind, m["average_f1"], fitted)


def processbench_metrics(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench_metrics`: cases + results/scores/{prm}/processbench.parquet (step scores) or a
    critic's predictions → results/metrics/processbench/{prm}.json and {prm}_predictions.parquet. A
    tuned threshold follows processbench_eval.tune_on (auto: the dev split's scores, cross-fitted without
    one; gsm8k: ProcessBench's best GSM8K F1); the paired F1
    difference against the structure-only baseline is recorded as `vs_structure`."""
    cfg = params["processbench_eval"]
    cases = read_table(inputs["cases"], "processbench")
    src = pd.read_parquet(inputs["scores"])
    if "prediction" in src.columns:  # a critic: predictions given (null = unparsable)
        preds = _predictions_by_id(src)
        scores: dict = {}
        threshold: float | str = 0.5
    else:
        scores = _scores_by_id(src)
        threshold = _pb_threshold(params)
        t0 = 0.5 if threshold == "tune" else float(threshold)
        metrics_rows.check_processbench_inputs(cases, {}, scores, truncated_ok=True)  # before first_error reads them
        preds = {i: metrics_processbench.first_error(s, t0) for i, s in scores.items()}
    dev_cases = dev_scores = None
    if as_paths(inputs.get("dev_scores")):
        dev_cases = read_table(as_paths(inputs["dev_cases"])[0], "processbench")
        dev_scores = _scores_by_id(pd.read_parquet(as_paths(inputs["dev_scores"])[0]))
    boot = _bootstrap_args(cfg)
    # a PRM truncated at its max length scores fewer steps than a case has (recorded as n_truncated)
    m, per_case = metrics_processbench.evaluate_processbench(cases, preds, scores, threshold, dev_cases=dev_cases,
                                                dev_scores=dev_scores, truncated_ok=True,
                                                tune_on=cfg.get("tune_on", "auto"), **boot)
    if "n_steps_scored" in src.columns and "n_steps" in src.columns:
        m["n_truncated"] = int((src["n_steps_scored"] < src["n_steps"]).sum())
    if as_paths(inputs.get("structure")):
        base_preds = _predictions_by_id(pd.read_parquet(as_paths(inputs["structure"])[0]))
        m["vs_structure"] = metrics_processbench.paired_f1_difference(cases, _predictions_by_id(per_case), base_preds,
                                                         n_boot=boot["bootstrap"],
                                                         seed=boot["seed"], confidence=boot["confidence"])
    m["prm"] = wildcards.get("prm")
    m["run_label"] = params.get("run_label")
    if params.get("setting"):
        m["setting"] = params["setting"]  # a critic's model, template, parse and sampling
    _write_pb(m, per_case, outputs)
    log.info("processbench %s: average F1 %.3f (threshold %s)", m["prm"], m["average_f1"], m["threshold"])


def _long_table(inputs, outputs, params, kind: str, rows_fn) -> None:
    rows = []
    for path in as_paths(inputs.get("metrics")):
        m = read_json(path)
        rows += rows_fn(m, m.get("prm") or Path(path).stem)
    df = pd.DataFrame(rows, columns=TABLE_COLUMNS[kind])
    df["run"] = params.get("run_label", "")  # what produced the numbers (as the sampling tables)
    write_csv(df, outputs["table"], f"{kind}_csv")


def bon_table(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `bon_table`: every policy's results/{policy_dir}metrics/bon/*.json → results/tables/bon.csv (long
    format): per policy and PRM the rows at bon.n, then those of each further N (the JSON's `by_n`)."""
    def rows(m, prm):
        out = []
        for part in [m, *m["by_n"].values()]:
            out += [{"policy": m.get("policy"), **r} for r in metrics_bon.bon_long_rows(part, prm)]
        return out

    _long_table(inputs, outputs, params, "bon", rows)


def processbench_table(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench_table`: all results/metrics/processbench/*.json → results/tables/processbench.csv
    (long format)."""
    _long_table(inputs, outputs, params, "processbench", metrics_processbench.processbench_long_rows)


def processbench_paired(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench_paired`: the resample scores of every PRM trained with resample heads
    (results/scores/{prm}/processbench{,_dev}.parquet, column resample_scores; params.prms in config
    order) and the structure-only baseline's predictions → results/tables/processbench_paired.csv: each
    PRM's average F1 with training variance, every pair's paired difference and each PRM against the
    structure baseline (metrics.resampled: hierarchical bootstrap over resamples and cases)."""
    cfg = params["processbench_eval"]
    cases = read_table(inputs["cases"], "processbench")
    dev_paths = as_paths(inputs.get("dev_scores"))
    dev_cases = read_table(as_paths(inputs["dev_cases"])[0], "processbench") if dev_paths else None
    prms = list(params["prms"])
    hits = {}
    for k, (prm, path) in enumerate(zip(prms, as_paths(inputs["scores"]))):
        scores = metrics_resampled.scores_per_resample(pd.read_parquet(path), path)
        dev = metrics_resampled.scores_per_resample(pd.read_parquet(dev_paths[k]), dev_paths[k]) if dev_paths else None
        threshold = _pb_threshold({"threshold": params["thresholds"].get(prm), "processbench_eval": cfg})
        hits[prm], used = metrics_resampled.resample_hits(cases, scores, threshold, dev_cases, dev,
                                                          cfg.get("tune_on", "auto"))
        log.info("processbench_paired %s: %d resample heads, thresholds %s", prm, len(scores),
                 used)
    structure = _predictions_by_id(pd.read_parquet(as_paths(inputs["structure"])[0]))
    fixed = {metrics_resampled.STRUCTURE: metrics_resampled.hits(cases, structure)}
    boot = _bootstrap_args(cfg)
    rows = metrics_resampled.paired_rows(cases, hits, fixed, n_boot=boot["bootstrap"], seed=boot["seed"],
                                         confidence=boot["confidence"])
    df = pd.DataFrame(rows, columns=TABLE_COLUMNS["processbench_paired"])
    df["run"] = params.get("run_label", "")
    write_csv(df, outputs["table"], "processbench_paired_csv")


def score_prmbench(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `score_prmbench`: results/prmbench/cases.parquet → results/scores/{prm}/prmbench.parquet
    (pb_scores, subset = the case's classification), scored as ProcessBench cases are (the same model
    loading and batching; an outcome RM scores every prefix; a head-only PRM from the frozen base's stored
    features, rule step_features)."""
    spec, cfg = params["spec"], params.get("scoring", {})
    cases = read_table(inputs["cases"], "prmbench")
    mine = np.ones(len(cases), dtype=bool)
    done = _from_features(inputs.get("features"), spec, cases["id"].astype(str).tolist())
    cases, steps, scores, meta, _ = _score_rows(cases, mine, done, "problem", spec, cfg, None, prefixes=True)
    out = pd.DataFrame({"id": cases["id"].astype(str), "subset": cases["classification"], "step_scores": scores,
                        "n_steps": [len(s) for s in steps], "n_steps_scored": [len(s) for s in scores]})
    write_table(out, outputs["scores"], "pb_scores", meta=_score_meta(wildcards, meta, None))


def prmbench_metrics(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `prmbench_metrics`: cases + results/scores/{prm}/prmbench.parquet → results/metrics/prmbench/
    {prm}.json. A step is valid when its score reaches the threshold ProcessBench's evaluation used for this
    PRM (results/metrics/processbench/{prm}.json: the configured or tuned one), so both benchmarks judge
    the same decisions."""
    cases = read_table(inputs["cases"], "prmbench")
    src = read_table(inputs["scores"], "pb_scores")
    scores = {str(i): (list(s) if s is not None else None) for i, s in zip(src["id"], src["step_scores"])}
    pb = read_json(inputs["processbench"])
    threshold = metrics_prmbench.processbench_threshold(pb)
    m, _ = metrics_prmbench.evaluate_prmbench(cases, scores, threshold)
    meta = table_meta(inputs["cases"])
    m.update({"prm": wildcards.get("prm"), "run_label": params.get("run_label"),
              "threshold_policy": f"ProcessBench's ({pb.get('threshold_policy') or 'configured'})",
              "data": meta.get("data"), "standin": bool(meta.get("standin"))})
    write_json(m, outputs["metrics"])
    o = m["overall"]["prmscore"]
    log.info("PRMBench %s: PRMScore %s (threshold %.4g; %s)", m["prm"], "undefined" if o is None else f"{o:.3f}",
             threshold, m["data"])


def prmbench_table(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `prmbench_table`: every results/metrics/prmbench/{prm}.json → results/tables/prmbench.csv (long:
    per PRM the overall, per-class and per-dimension PRMScores), with the PRMBench paper's number beside a
    PRM that has a published row (analysis.paper_rows maps a PRM name onto a row key) when the cases are
    PRMBench's own data; a stand-in gets none."""
    published = prmbench_published(load_published())
    paper_rows = params.get("paper_rows") or {}
    rows = []
    for path in as_paths(inputs.get("metrics")):
        m = read_json(path)
        prm = m.get("prm")
        pub = None if m.get("standin") else published.get(paper_rows.get(prm, prm))
        for r in metrics_prmbench.long_rows(m):
            value = pub.get(r["column"]) if pub else None
            rows.append({"prm": prm, **r, "published": None if value is None else value / 100,
                         "published_label": pub["label"] if pub else None, "threshold": m["threshold"],
                         "data": m.get("data")})
    df = pd.DataFrame(rows, columns=metrics_prmbench.PRMBENCH_LONG_COLUMNS)
    df["run"] = params.get("run_label", "")
    write_csv(df, outputs["table"], "prmbench_csv")
