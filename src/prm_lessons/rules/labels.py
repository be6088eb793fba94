"""Rule glue of workflow/rules/labels.smk: Monte Carlo labels and judge verdicts (sharded by problem),
their merges, human labels, Math-Shepherd's and TRL-format labels, consensus filtering, one training set
per variant and their table."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import as_paths
from ..data.problems import load_problems
from ..generation import engine as generation
from ..jobs.shards import shard_by_problem
from ..labels import clean_steps, instance_id
from ..labels.consensus import consensus_table
from ..labels.human import (
    construction_instances,
    convert_prm800k,
    decontaminate,
    deduplicate,
    eval_questions,
    prm800k_files,
)
from ..labels.judge import judge_responses, load_template, reference_text
from ..labels.math_shepherd import convert_math_shepherd, iter_rows, malformed_lines, math_shepherd_file
from ..labels.mc import MCInput, Needs, make_grade_fn, make_prompt_fn, run_mc, spec_from_config
from ..labels.mix import mix_responses as join_mix
from ..labels.stepwise import convert_stepwise, stepwise_rows, to_stepwise, write_stepwise
from ..labels.stepwise import malformed_lines as stepwise_malformed_lines
from ..labels.trainsets import CSV_COLUMNS, build_variant, paper_n_instances, pool_inputs
from ..metrics import judge_processbench as judge_pb
from ..tables import iter_records, merge_shards, read_json, read_table, table_meta, write_csv, write_json, write_table


def mix_responses(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `mix_responses`: one training set's responses of every data policy of a mix
    (results/data_policies/<name>/responses/{dataset}.parquet) → results/responses/{dataset}.parquet, with a
    `data_policy` column and each policy's sample_idx offset (labels.mix); the metadata names each policy's
    model, completer and offset and carries the problems each skipped as too long."""
    paths, parts = as_paths(inputs["responses"]), params["parts"]
    if len(paths) != len(parts):
        raise ValueError(f"mix_responses: {len(paths)} response tables for {len(parts)} data policies")
    frames, skipped = [], {}
    for path, part in zip(paths, parts):
        frames.append((part["name"], read_table(path, "responses"), int(part["offset"])))
        lq = table_meta(path)["long_questions"]["skipped"]
        skipped.update({f"{part['name']}:{k}": v for k, v in lq.items()})
    df = join_mix(frames)
    write_table(df, outputs["responses"], "responses",
                meta={"data_policies": parts, "long_questions": {"n_skipped": len(skipped), "skipped": skipped}})
    print(f"{wildcards['dataset']}: {len(df)} responses of {len(parts)} data policies ("
          + ", ".join(f"{p['name']} {int((df['data_policy'] == p['name']).sum())}" for p in parts) + ")", flush=True)


def mc(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `mc`: Monte Carlo labels for one shard of a dataset's sampled responses → `mc` table."""
    cfg = params["mc"]
    needs = Needs.from_params(params.get("needs"))
    samples = read_table(inputs["samples"], "samples")
    shard, nshards = int(wildcards.get("shard", 0)), int(wildcards.get("nshards", 1))
    mix = params.get("part") or {}
    if mix.get("data_policy"):  # a mix of data policies: this shard's policy's responses, its shard of them
        samples = samples[samples["data_policy"] == mix["data_policy"]]
        shard, nshards = int(mix["shard"]), int(mix["nshards"])
        print(f"mc: data policy {mix['data_policy']}, completer {params['model_entry'].get('name')}", flush=True)
    part = shard_by_problem(samples, shard, nshards)
    items = [MCInput(r.problem_id, int(r.sample_idx), r.question, str(r.answer), list(r.steps),
                     None if pd.isna(r.correct) else bool(r.correct)) for r in part.itertuples()]
    print(f"mc: {len(items)} responses in shard {shard} of {nshards}; K={cfg['completions']}, "
          f"protocol={cfg['protocol']}, needs={needs.to_params()}", flush=True)
    n_empty = sum(1 for it in items if not clean_steps(it.steps))
    if n_empty:
        print(f"mc: {n_empty} responses have no steps; they get no labels and no rollouts", flush=True)
    rows: list[dict] = []
    engine_stats = {}
    if any(clean_steps(it.steps) for it in items):
        # via the module: tests swap the engine
        engine = generation.load_engine(params["model_dir"], params["model_entry"],
                                        seed_mode=params.get("seed_mode", "per_request"))
        timing: dict = {}
        grade_fn = make_grade_fn(float(params.get("grading_timeout_s", 5.0)), params.get("grading_workers"))
        try:
            rows = run_mc(items, engine, k=int(cfg["completions"]), needs=needs, protocol=cfg["protocol"],
                          round_size=int(cfg["round_size"]), seed=int(cfg["seed"]), spec=spec_from_config(cfg),
                          prompt_fn=make_prompt_fn(engine.tokenizer, params.get("system_prompt")), grade_fn=grade_fn,
                          separator=params.get("separator", "\n\n"), last_step=cfg.get("last_step", "answer"),
                          lanes=int(cfg.get("lanes", 1)), timing=timing)
        finally:
            grade_fn.close()
        engine.stats.extra["mc"] = timing  # into the job's tokens sidecar (jobs.budget)
        engine_stats = {"engine_seconds": round(engine.stats.seconds, 2), "engine_calls": engine.stats.calls,
                        "seed_mode": engine.seed_mode, "timing": timing}
    else:
        rows = run_mc(items, None, k=int(cfg["completions"]), needs=needs, protocol=cfg["protocol"],
                      prompt_fn=lambda q, p: "", grade_fn=lambda t, g: [])
    df = pd.DataFrame(rows, columns=["problem_id", "sample_idx", "n_steps", "k", "n_success", "n_total", "inferred",
                                     "tokens_generated", "n_completions", "n_truncated"])
    summary = {"responses": len(df), "tokens_generated": int(df["tokens_generated"].sum()) if len(df) else 0,
               "completions": int(df["n_completions"].sum()) if len(df) else 0,
               "completions_truncated": int(df["n_truncated"].sum()) if len(df) else 0,
               "responses_without_steps": n_empty, **engine_stats}
    print(f"mc summary: {summary}", flush=True)
    write_table(df, outputs["table"], "mc", meta={"k": int(cfg["completions"]), "protocol": cfg["protocol"],
                                                  "needs": needs.to_params(), "mc": cfg, "summary": summary})


def judge(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `judge`: judge verdicts for one shard of a dataset's sampled responses (ungraded) → `judge` table."""
    cfg = params["judge"]
    samples = read_table(inputs["responses"], "responses")
    if params.get("max_samples") is not None:
        samples = samples[samples["sample_idx"] < int(params["max_samples"])]
    shard, nshards = int(wildcards.get("shard", 0)), int(wildcards.get("nshards", 1))
    part = shard_by_problem(samples, shard, nshards)
    steps = [clean_steps(s) for s in part["steps"]]
    print(f"judge: {len(part)} responses in shard {shard} of {nshards}; style={cfg['style']}, n={cfg['n']}"
          + (", reference-guided" if cfg.get("reference") else ""), flush=True)
    refs = None
    if cfg.get("reference"):  # the gold solution of each response's problem (judge.reference)
        golds = read_table(inputs["problems"], "problems")
        by_id = {str(p): (g, a) for p, g, a in zip(golds["problem_id"], golds["gold_steps"], golds["answer"])}
        refs = _references(list(part["problem_id"]), [by_id.get(str(p)) for p in part["problem_id"]])
    rows: list[dict] = []
    if any(steps):
        engine = generation.load_engine(params["model_dir"], params["model_entry"])  # via the module: tests swap it
        rows = judge_responses(
            engine, list(part["question"]), steps,
            [instance_id(p, s) for p, s in zip(part["problem_id"], part["sample_idx"])],
            style=cfg["style"], n=int(cfg["n"]), temperature=float(cfg["temperature"]), top_p=float(cfg["top_p"]),
            max_tokens=int(cfg["max_tokens"]), seed=int(cfg["seed"]), template=load_template(inputs.get("template")),
            system_prompt=cfg.get("system_prompt"), force_answer=bool(cfg["force_answer"]),
            guided=bool(cfg["guided"]), force_truncated=bool(cfg.get("force_truncated", False)), references=refs)
    else:
        rows = [{"first_error": None, "verdicts": [], "parsed": False, "status": "no_steps", "votes": [],
                 "n_forced": 0, "n_truncated": 0, "tokens_generated": 0} for _ in steps]
    df = pd.DataFrame(rows, columns=["first_error", "verdicts", "parsed", "status", "votes", "n_forced",
                                     "n_truncated", "tokens_generated"])
    df.insert(0, "sample_idx", part["sample_idx"].astype(int).values)
    df.insert(0, "problem_id", part["problem_id"].values)
    df.insert(2, "n_steps", [len(s) for s in steps])
    df["first_error"] = df["first_error"].astype("Int64")
    counts = df["status"].value_counts().to_dict()
    summary = {"responses": len(df), "parsed": int(df["parsed"].sum()), "status_counts": counts,
               "forced": int(df["n_forced"].sum()), "truncated_unparsed": int(df["n_truncated"].sum()),
               "tokens_generated": int(df["tokens_generated"].sum())}
    print(f"judge summary: {summary}", flush=True)
    if len(df) and summary["parsed"] < len(df):
        print(f"judge: {len(df) - summary['parsed']} responses without a readable verdict are excluded "
              "from judge-based training sets", flush=True)
    write_table(df, outputs["table"], "judge", meta={"judge": cfg, "summary": summary})


def _references(ids: list, golds: list) -> list[str]:
    """reference_text of each item's (gold_steps, answer); an item whose problem is unknown or has neither
    gold steps nor a gold answer is an error naming it (judge.reference needs a gold solution)."""
    refs = [None if g is None else reference_text(*g) for g in golds]
    bad = [str(i) for i, r in zip(ids, refs) if r is None]
    if bad:
        raise ValueError(f"judge.reference: no gold solution or answer for {len(bad)} item(s): {', '.join(bad[:10])}"
                         + (" …" if len(bad) > 10 else ""))
    return refs


def judge_processbench(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `judge_processbench`: the labelling judge (the `judge` section, with judge.reference off or on per
    setting, params.settings) on a stratified slice of the constructed ProcessBench cases →
    results/labels/judge_processbench/{setting}.parquet (a critic table each). The settings differ in the
    reference only (judge_pb.setting_config), so every setting's cases go to the engine in one batch: a
    decode step costs ~0.09 s on a 2-core host whatever the batch, and 12 cases are a small one."""
    cases = judge_pb.case_slice(read_table(inputs["cases"], "processbench"), int(params["n_cases"]))
    steps = [[str(x) for x in s] for s in cases["steps"]]
    cfgs = [judge_pb.setting_config(params["judge"], setting) for setting in params["settings"]]
    refs: list = []
    for setting, cfg in zip(params["settings"], cfgs):
        refs += _case_references(cases, params["constructed"]) if cfg["reference"] else [None] * len(cases)
        print(f"judge_processbench {setting}: {len(cases)} cases "
              f"(per subset {cases['subset'].value_counts().to_dict()}, "
              f"{int((cases['label'] != -1).sum())} erroneous); style={cfg['style']}, max_tokens={cfg['max_tokens']}, "
              f"n={cfg['n']}: at most {len(cases) * int(cfg['n']) * int(cfg['max_tokens'])} generated tokens "
              "before forced answers", flush=True)
    cfg = cfgs[0]
    engine = generation.load_engine(params["model_dir"], params["model_entry"])  # via the module: tests swap it
    k = len(params["settings"])
    rows = judge_responses(
        engine, list(cases["problem"]) * k, steps * k, list(cases["id"].astype(str)) * k, style=cfg["style"],
        n=int(cfg["n"]), temperature=float(cfg["temperature"]), top_p=float(cfg["top_p"]),
        max_tokens=int(cfg["max_tokens"]), seed=int(cfg["seed"]), template=load_template(inputs.get("template")),
        system_prompt=cfg.get("system_prompt"), force_answer=bool(cfg["force_answer"]), guided=bool(cfg["guided"]),
        force_truncated=bool(cfg.get("force_truncated", False)), references=refs)
    for i, (setting, cfg, out) in enumerate(zip(params["settings"], cfgs, as_paths(outputs["tables"]), strict=True)):
        mine = rows[i * len(cases):(i + 1) * len(cases)]
        df = cases[["id", "subset", "label"]].copy()
        df["prediction"] = pd.array([r["first_error"] for r in mine], dtype="Int64")
        for c in ("status", "verdicts", "n_forced", "n_truncated", "tokens_generated"):
            df[c] = [r[c] for r in mine]
        summary = {"cases": len(df), "parsed": int(df["prediction"].notna().sum()),
                   "status_counts": df["status"].value_counts().to_dict(), "forced": int(df["n_forced"].sum()),
                   "truncated_unparsed": int(df["n_truncated"].sum()),
                   "tokens_generated": int(df["tokens_generated"].sum()),
                   # one engine call for every setting: its seconds are the job's, not this setting's alone
                   "engine_seconds_all_settings": round(engine.stats.seconds, 2)}
        print(f"judge_processbench {setting} summary: {summary}", flush=True)
        write_table(df, out, "critic", meta={"judge": cfg, "setting": setting, "summary": summary})


def _case_references(cases: pd.DataFrame, constructed: dict | None) -> list:
    """The reference-guided setting's gold solutions of the cases' problems (processbench.constructed.subsets)."""
    con = constructed or {}
    if not con.get("subsets"):
        raise ValueError("processbench.constructed.subsets: no subsets defined")
    golds = pd.concat([load_problems(f"processbench-{sub}", spec) for sub, spec in con["subsets"].items()],
                      ignore_index=True)
    return _references(list(cases["id"]), judge_pb.case_golds(cases, golds))


def judge_processbench_table(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `judge_processbench_table`: every labelling-judge setting's ProcessBench metrics on its case slice
    and its paired F1 difference to the structure baseline → results/tables/judge_processbench.csv, the
    metrics and the lesson-2 verdict → results/metrics/judge_processbench.json."""
    cases = read_table(inputs["cases"], "processbench")
    structure = pd.read_parquet(inputs["structure"])
    base = {str(i): (None if pd.isna(p) else int(p)) for i, p in zip(structure["id"], structure["prediction"])}
    b = params["processbench_eval"]["bootstrap"]
    configured = judge_pb.configured_setting(params["judge"])
    rows, metrics = [], {}
    for path in as_paths(inputs["tables"]):
        judged = read_table(path, "critic")
        name = str(table_meta(path).get("setting") or Path(path).stem)
        ids = set(judged["id"].astype(str))
        sl = cases[cases["id"].astype(str).isin(ids)].reset_index(drop=True)
        r, m = judge_pb.setting_rows(sl, judged, base, name, configured=name == configured,
                                     setting=_judge_setting_text(table_meta(path)["judge"]),
                                     bootstrap=int(b["samples"]), seed=int(b["seed"]),
                                     confidence=float(b["confidence"]))
        rows += r
        metrics[name] = m
    df = pd.DataFrame(rows, columns=judge_pb.COLUMNS)
    df["run"] = params.get("run_label", "")
    write_csv(df, outputs["csv"], "judge_processbench_csv")
    verdict = judge_pb.lesson2_verdict(df, model=params.get("model") or "roles.judge")
    write_json({"run_label": params.get("run_label"), "configured": configured, "settings": metrics,
                "lesson2": verdict}, outputs["metrics"])
    print(df.drop(columns=["setting", "run"]).to_string(index=False), flush=True)
    print(f"lesson 2: {verdict['verdict']}: {verdict['text']}", flush=True)


def _judge_setting_text(cfg: dict) -> str:
    """What a judge setting ran with, for the table's `setting` column."""
    return (f"style={cfg.get('style')}; reference={'on' if cfg.get('reference') else 'off'}; n={cfg.get('n')}; "
            f"T={cfg.get('temperature')}; max_tokens={cfg.get('max_tokens')}; "
            f"force_answer={cfg.get('force_answer')}; force_truncated={cfg.get('force_truncated')}; "
            f"template={cfg.get('template', 'project_paraphrase')}"
            + (f" {cfg['template_path']}" if cfg.get("template_path") else ""))


def _merge_label_shards(inputs: dict, outputs: dict, kind: str) -> None:
    """Shard tables of one kind (mc or judge) → the dataset table, with the first shard's metadata
    less its per-shard summary."""
    shards = as_paths(inputs["shards"])
    df, meta = merge_shards(shards, kind)
    meta.pop("summary", None)
    print(f"merged {len(shards)} {kind} shards: {len(df)} rows", flush=True)
    write_table(df, outputs["table"], kind, meta=meta)


def merge_mc(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `merge_mc`: MC shard tables → results/labels/mc/{dataset}.parquet."""
    _merge_label_shards(inputs, outputs, "mc")


def merge_judge(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `merge_judge`: judge shard tables → results/labels/judge/{dataset}.parquet."""
    _merge_label_shards(inputs, outputs, "judge")


def human_labels(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `human_labels`: human step labels (PRM800K or by construction), decontaminated →
    results/labels/human.parquet (trainset format)."""
    cfg = params["human"]
    evals = as_paths(inputs.get("eval_sets", []))
    if cfg["source"] == "construction":
        c = cfg["construction"]
        if c.get("problems"):  # its own problem sets (never sampled): loaded here
            problems = pd.concat([load_problems(name, spec) for name, spec in c["problems"].items()],
                                 ignore_index=True)
        else:
            paths = as_paths(inputs.get("problems"))
            if not paths:
                raise ValueError("human.source 'construction' needs problem sets: human.construction.problems "
                                 "or the training problems (problems:)")
            problems = pd.concat([read_table(p, "problems") for p in paths], ignore_index=True)
        inst, counts = construction_instances(problems, int(c["corrupted_per_problem"]), bool(c["include_gold"]),
                                              int(c["seed"]), bool(c["keep_final_answer"]),
                                              keep_answer_fraction=c.get("keep_answer_fraction"))
    elif cfg["source"] == "prm800k":
        inst, counts = [], {}
        expand = cfg["prm800k"].get("expand", "chosen")
        for name, path in prm800k_files(cfg):
            part, cnt = convert_prm800k(iter_records(path), cfg["neutral"], cfg["keep_finish_reasons"],
                                        bool(cfg["skip_quality_control"]), source=Path(name).stem, expand=expand)
            inst.extend(part)
            for key, v in cnt.items():
                counts[f"{Path(name).stem}.{key}"] = v
        counts["expand"] = expand
        if expand == "alternatives":  # the same (question, steps) from several solutions or files: once
            inst, dup = deduplicate(inst)
            counts.update(dup)
    else:
        raise ValueError(f"human.source must be 'construction' or 'prm800k', not {cfg['source']!r}")
    n_before = len(inst)
    inst, removed = decontaminate(inst, eval_questions(evals))
    summary = {"source": cfg["source"], "instances_before_decontamination": n_before,
               "removed_by_decontamination": removed, "instances": len(inst), **counts}
    print(f"human labels: {summary}", flush=True)
    if cfg["source"] == "prm800k":
        print(f"human labels: {len(inst)} PRM800K instances (the paper: {paper_n_instances('human', 'prm800k'):,} "
              f"after deduplication; expand={counts['expand']})", flush=True)
    df = pd.DataFrame(inst, columns=["instance_id", "question", "steps", "labels"] +
                      (["error_index"] if cfg["source"] == "construction" else []))
    write_table(df, outputs["table"], "trainset", meta={"human": cfg, "summary": summary,
                                                        "n_candidates": n_before})


def math_shepherd_labels(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `math_shepherd_labels`: Math-Shepherd's released step labels, malformed rows counted and named,
    decontaminated → results/labels/math_shepherd.parquet (trainset format)."""
    spec = params["math_shepherd"]
    path = math_shepherd_file(spec)
    print(f"math_shepherd: reading {path} (limit {spec.get('limit')})", flush=True)
    inst, report = convert_math_shepherd(iter_rows(path), bool(spec["strip_step_prefix"]), spec.get("limit"))
    for line in malformed_lines(report):
        print(line, flush=True)
    n_before = len(inst)
    inst, removed = decontaminate(inst, eval_questions(as_paths(inputs.get("eval_sets", []))))
    summary = {"rows": report["rows"], "malformed": report["malformed"],
               "malformed_by_reason": report["malformed_by_reason"], "truncated": report["truncated"],
               "instances_before_decontamination": n_before, "removed_by_decontamination": removed,
               "instances": len(inst)}
    print(f"math_shepherd: {summary}; the paper: {paper_n_instances('math_shepherd'):,} instances", flush=True)
    df = pd.DataFrame(inst, columns=["instance_id", "question", "steps", "labels", "dataset"])
    write_table(df, outputs["table"], "trainset", meta={"math_shepherd": spec, "summary": summary,
                                                        "malformed_ids": report["malformed_ids"],
                                                        "n_candidates": n_before})


def trl_labels(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `trl_labels`: one variant's TRL stepwise-supervision data, checked row by row, cut after the
    first false step, decontaminated → results/labels/trl/{variant}.parquet (trainset format)."""
    name, spec = params["variant"], params["trl"]
    where = spec["path"] if spec["source"] == "local" else f"{spec['id']}@{spec['revision']} split {spec['split']}"
    print(f"trl {name}: reading {where} (limit {spec.get('limit')}, malformed rows: {spec['malformed']})", flush=True)
    inst, report = convert_stepwise(stepwise_rows(spec), name, spec["malformed"], spec.get("limit"),
                                    bool(spec.get("deduplicate")))
    for line in stepwise_malformed_lines(name, report):
        print(line, flush=True)
    n_before = len(inst)
    inst, removed = decontaminate(inst, eval_questions(as_paths(inputs.get("eval_sets", []))))
    summary = {k: report[k] for k in ("rows", "no_steps", "malformed", "malformed_by_reason", "truncated")}
    summary.update({k: report[k] for k in ("duplicates", "label_conflicts") if k in report})
    summary.update({"instances_before_decontamination": n_before, "removed_by_decontamination": removed,
                    "instances": len(inst)})
    print(f"trl {name}: {summary}", flush=True)
    df = pd.DataFrame(inst, columns=["instance_id", "question", "steps", "labels"])
    write_table(df, outputs["table"], "trainset", meta={"trl": spec, "summary": summary,
                                                        "malformed_ids": report["malformed_ids"],
                                                        "n_candidates": n_before})


def export_trl(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `export_trl`: one training set in TRL's stepwise-supervision format →
    results/trainsets/trl/{variant}.jsonl (soft labels: positive iff > params.soft_threshold)."""
    rows = to_stepwise(read_table(inputs["table"], "trainset"), params.get("soft_threshold"))
    write_stepwise(rows, outputs["rows"])
    print(f"export_trl {wildcards.get('variant', '')}: {len(rows)} rows, "
          f"{sum(len(r['labels']) for r in rows)} steps -> {outputs['rows']}", flush=True)


def consensus(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `consensus`: MC ∩ judge agreement for one dataset → results/labels/consensus/{dataset}.parquet."""
    mc_table = read_table(inputs["mc"], "mc")
    judge_table = read_table(inputs["judge"], "judge")
    k = int(table_meta(inputs["mc"]).get("k") or params["k"])
    threshold = float(params["consensus"]["threshold"])
    out = consensus_table(mc_table, judge_table, k, threshold)
    kept = int(out["agree"].sum())
    share = kept / len(out) if len(out) else 0.0
    print(f"consensus ({wildcards.get('dataset', '')}, MC threshold {threshold:g}): kept {kept} of {len(out)} "
          f"responses ({share:.1%}); reasons {out['reason'].value_counts().to_dict()}", flush=True)
    write_table(out, outputs["table"], None)


def trainset(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `trainset`: one variant's training set → results/trainsets/{variant}.parquet (+ .json stats)."""
    name, spec = params["variant"], params["spec"]
    n_human = None
    k = None
    if inputs.get("mc"):
        k = int(table_meta(as_paths(inputs["mc"])[0]).get("k") or params.get("k"))
    made = {}  # sources labelled by their own rule: results/labels/{human,math_shepherd,trl/<variant>}.parquet
    data_source = None  # human labels: prm800k or construction
    if spec["source"] in ("human", "math_shepherd", "trl"):
        made[spec["source"]] = read_table(inputs[spec["source"]], "trainset")
        meta = table_meta(inputs[spec["source"]])
        n_human = meta.get("n_candidates")
        data_source = meta["human"]["source"] if spec["source"] == "human" else None  # only rule human_labels writes it
    if inputs.get("pool"):  # the constructed pool (trainsets.responses: constructed), labelled by rule audit_labels
        k = int(table_meta(as_paths(inputs["pool_labels"])[0])["k"])  # audit.completions
        labels, _ = merge_shards(as_paths(inputs["pool_labels"]), "audit_labels")
        sources = pool_inputs(read_table(inputs["pool"], "audit_slice"), labels, k,
                              float(params.get("consensus_threshold", 0.0)))
    else:
        sources = {"samples": [read_table(p, "samples") for p in as_paths(inputs.get("samples"))],
                   "mc": [read_table(p, "mc") for p in as_paths(inputs.get("mc"))],
                   "judge": [read_table(p, "judge") for p in as_paths(inputs.get("judge"))],
                   "consensus": [read_table(p, None) for p in as_paths(inputs.get("consensus"))],
                   "checker": [read_table(p, "checker") for p in as_paths(inputs.get("checker"))]}
    df, st = build_variant(name, spec, **sources, k=k, n_human_candidates=n_human,
                           paper_n_instances=paper_n_instances(spec["source"], data_source), **made)
    print(f"trainset {name}: {st}", flush=True)
    if st.get("paper_n_instances"):
        print(f"trainset {name}: {st['n_instances']:,} instances; the paper: {st['paper_n_instances']:,}", flush=True)
    write_table(df, outputs["table"], "trainset", meta={"variant": name, "spec": spec, "stats": st,
                                                        "run": params.get("run", {})})
    write_json(st, outputs["stats"], indent=1)


def trainsets_table(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `trainsets_table`: every variant's stats → results/tables/trainsets.csv."""
    rows = [read_json(p) for p in as_paths(inputs["stats"])]
    df = pd.DataFrame(rows)
    for c in CSV_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df = df[CSV_COLUMNS]
    df["run"] = params.get("run_label", "")  # provenance: which configuration made these numbers
    write_csv(df, outputs["csv"], "trainsets_csv")
    print(df.to_string(index=False), flush=True)

