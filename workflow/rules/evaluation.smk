# Evaluation: step scoring per (PRM, benchmark) and per PRM on ProcessBench (and PRMBench), LLM critics per
# judge model, Best-of-N, ProcessBench and PRMBench metrics, long tables for the analysis stage.
# Logic: prm_lessons.scoring / metrics / critic. Outputs are documented in docs/architecture.md
# ("Evaluation outputs").
import re

# prms.shards > 1: each scoring job scores one problem shard of every table it writes (a killed job loses
# one shard), and a local merge per PRM joins the shards (plan.score_outputs); 1: one job, the tables
# themselves. Head-only PRMs on shared features are split too: each shard job applies the head to the
# stored features (seconds), so every PRM has the same jobs.
SCORE_SAMPLE_TABLES = [f"results/{{policy_dir}}scores/{{prm}}/{b}" for b in BON_BENCHMARKS]
SCORE_PB_TABLES = ["results/scores/{prm}/processbench"] + (["results/scores/{prm}/processbench_dev"] if PB_DEV else [])


# The frozen base's step features of one text table (head-only PRMs: prms.shared_base_features): each
# benchmark's responses and the ProcessBench cases, read by every scoring job, and the union of the sampled
# training responses, read by every head-only training variant labelled on them (one job: one start-up).
rule step_features:
    input:
        code("evaluation:step_features"),
        texts=run_in(lambda wc: plan.features_texts(config, wc.source)),
        base=model_input(TRAIN["base"]),
    output:
        features=run_out("results/features/{source}.safetensors"),
    log:
        run_out("logs/step_features/{source}.log"),
    benchmark:
        bench("step_features", "logs/step_features/{source}.log")
    wildcard_constraints:
        source="|".join(
            [
                *(re.escape(f"{POLICY_DIRS[p]}responses/{b}") for p, b, _ in BON_EVALUATIONS),
                "processbench/cases",
                "processbench/dev",
                *(["prmbench/cases"] if plan.prmbench_enabled(config) else []),
                *(re.escape(s) for s in TRAIN_FEATURE_SOURCES),
            ]
        ),
    conda:
        "../../envs/training.yaml"
    threads: 2
    resources:
        gpu=1 if TRAIN["gpus"] else 0,
        nodes=1,
        mem_mb=mem_mb_for(1 if TRAIN["gpus"] else 0),
        runtime=lambda wc, attempt: plan.runtime(config, 120, attempt),
    params:
        func="evaluation:step_features",
        training=TRAIN_PARAMS,
        base_dir=model_dir_param(TRAIN["base"], "base"),
        # scoring: prms.max_length, else the PRM's training max_length; training responses: training's
        max_length=lambda wc: plan.features_max_length(config, wc.source),
        batch_size=config["prms"]["batch_size"],
    script:
        RUN


rule score_samples:
    # one job per PRM over all Best-of-N sets: the PRM is loaded once (7x fewer loads of a 72B model at
    # paper scale, 7x fewer job start-ups on CPU); each set still gets its own table
    # and policy (the `policy_dir` wildcard: '' for the primary, policies/{name}/ for another; a benchmark the
    # policy does not sample gets an empty table, as outputs cannot depend on a wildcard)
    # the ungraded responses: a grading fix rescores nothing; the tables hold keys and scores only
    input:
        code("evaluation:score_samples"),
        responses=run_in(lambda wc: policy_responses(policy_of(wc))),
        model=lambda wc: prm_model_input(wc.prm),
        features=run_in(
            lambda wc: [
                f for b in policy_benchmarks(wc) for f in features_input(wc.prm, f"{wc.policy_dir}responses/{b}")
            ]
        ),
    output:
        scores=run_out(plan.score_outputs(config, SCORE_SAMPLE_TABLES)),
    log:
        run_out(plan.score_log(config, "score_samples", "{policy_dir}{prm}")),
    benchmark:
        bench("score_samples", plan.score_log(config, "score_samples", "{policy_dir}{prm}"))
    wildcard_constraints:
        prm=PRM_RE,
    conda:
        "../../envs/training.yaml"
    # on CPU one thread: the forward work is small and per-job start-up dominates, so two jobs side by
    # side beat one job with two threads; on GPU two per GPU (tokenising, data loading)
    threads: lambda wc: max(1, 2 * scoring_gpus(wc.prm))
    resources:
        gpu=lambda wc: scoring_gpus(wc.prm),
        nodes=1,  # a 72B PRM spreads over 4 GPUs of one node (device_map="auto")
        mem_mb=lambda wc: mem_mb_for(scoring_gpus(wc.prm)),
        # all seven sets (~110k responses at paper scale): ~1-2 h for a 7B PRM on one H100; a 72B PRM in
        # transformers runs one GPU at a time (several hours, more on A100); split over prms.shards
        runtime=lambda wc, attempt: plan.scoring_runtime(config, 480, scoring_gpus(wc.prm), attempt, 3, wc.prm),
    params:
        func="evaluation:score_samples",
        spec=lambda wc: PRM_SPECS[wc.prm],
        scoring=SCORING_CFG,
    script:
        RUN


if plan.score_shards(config) > 1:

    rule merge_sample_scores:
        # the shards of every table of one policy and PRM; each problem exactly once (prm_lessons.jobs.shards)
        input:
            code("evaluation:merge_sample_scores"),
            responses=run_in(lambda wc: policy_responses(policy_of(wc))),
            shards=run_in(lambda wc: plan.score_shard_paths(config, SCORE_SAMPLE_TABLES, dict(wc.items()))),
        output:
            scores=run_out([f"{t}.parquet" for t in SCORE_SAMPLE_TABLES]),
        log:
            run_out("logs/merge_sample_scores/{policy_dir}{prm}.log"),
        benchmark:
            bench("merge_sample_scores", "logs/merge_sample_scores/{policy_dir}{prm}.log")
        wildcard_constraints:
            prm=PRM_RE,
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="evaluation:merge_sample_scores",
        script:
            RUN


rule score_processbench:
    # the evaluation cases and, when the run has one, the dev split (where thresholds are tuned)
    input:
        code("evaluation:score_processbench"),
        cases=run_in("results/processbench/cases.parquet"),
        dev_cases=run_in([plan.PROCESSBENCH_DEV] if PB_DEV else []),
        model=lambda wc: prm_model_input(wc.prm),
        features=run_in(lambda wc: features_input(wc.prm, "processbench/cases")),
        dev_features=run_in(lambda wc: features_input(wc.prm, "processbench/dev") if PB_DEV else []),
    output:
        scores=run_out(plan.score_outputs(config, SCORE_PB_TABLES[:1])),
        dev_scores=run_out(plan.score_outputs(config, SCORE_PB_TABLES[1:])),
    log:
        run_out(plan.score_log(config, "score_processbench", "{prm}")),
    benchmark:
        bench("score_processbench", plan.score_log(config, "score_processbench", "{prm}"))
    wildcard_constraints:
        prm=PRM_RE,
    conda:
        "../../envs/training.yaml"
    # on CPU one thread: the forward work is small and per-job start-up dominates, so two jobs side by
    # side beat one job with two threads; on GPU two per GPU (tokenising, data loading)
    threads: lambda wc: max(1, 2 * scoring_gpus(wc.prm))
    resources:
        gpu=lambda wc: scoring_gpus(wc.prm),
        nodes=1,
        mem_mb=lambda wc: mem_mb_for(scoring_gpus(wc.prm)),
        # an outcome RM scores every prefix of a case (~27k at paper scale), batched as responses
        runtime=lambda wc, attempt: plan.scoring_runtime(config, 120, scoring_gpus(wc.prm), attempt, 2, wc.prm),
    params:
        func="evaluation:score_processbench",
        spec=lambda wc: PRM_SPECS[wc.prm],
        scoring=SCORING_CFG,
    script:
        RUN


if plan.score_shards(config) > 1:

    rule merge_processbench_scores:
        input:
            code("evaluation:merge_processbench_scores"),
            cases=run_in("results/processbench/cases.parquet"),
            dev_cases=run_in([plan.PROCESSBENCH_DEV] if PB_DEV else []),
            shards=run_in(lambda wc: plan.score_shard_paths(config, SCORE_PB_TABLES[:1], dict(wc.items()))),
            dev_shards=run_in(lambda wc: plan.score_shard_paths(config, SCORE_PB_TABLES[1:], dict(wc.items()))),
        output:
            scores=run_out("results/scores/{prm}/processbench.parquet"),
            dev_scores=run_out([f"{t}.parquet" for t in SCORE_PB_TABLES[1:]]),
        log:
            run_out("logs/merge_processbench_scores/{prm}.log"),
        benchmark:
            bench("merge_processbench_scores", "logs/merge_processbench_scores/{prm}.log")
        wildcard_constraints:
            prm=PRM_RE,
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="evaluation:merge_processbench_scores",
        script:
            RUN


# critics.shards > 1: each generating critic's job critiques one case shard (a killed job loses one shard)
# and a local merge per critic joins them; 1: one job writes the table
CRITIC_SHARDS = plan.critic_shards(config)
CRITIC_TABLE = "results/critics/{judge}/processbench"
CRITIC_GENERATORS = [c for c in CRITICS if CRITIC_SOURCE[c] == c]


rule critic_processbench:
    # one job per critic that generates (`judge` is the critic's name, CRITIC_SPECS its model and settings)
    input:
        code("evaluation:critic_processbench"),
        cases=run_in("results/processbench/cases.parquet"),
        model=lambda wc: model_input(CRITIC_SPECS[wc.judge]["model"]),
        template=run_in(lambda wc: plan.critic_template_input(CRITIC_SPECS[wc.judge])),
    output:
        predictions=run_out(plan.shard_outputs([CRITIC_TABLE], CRITIC_SHARDS)[0]),
    log:
        run_out(plan.shard_log("critic_processbench", "{judge}", CRITIC_SHARDS)),
    benchmark:
        bench("critic_processbench", plan.shard_log("critic_processbench", "{judge}", CRITIC_SHARDS))
    wildcard_constraints:
        judge=plan.wildcard_alternatives(CRITIC_GENERATORS),
    conda:
        "../../envs/sampling.yaml"
    threads: lambda wc: engine_threads(CRITIC_SPECS[wc.judge]["model"])
    resources:
        gpu=lambda wc: gpus(CRITIC_SPECS[wc.judge]["model"]),
        nodes=1,
        mem_mb=lambda wc: gpu_mem_mb(CRITIC_SPECS[wc.judge]["model"]),
        # critiques longer than ProcessBench's 8,192 tokens (QwQ: 32,768 allowed) take longer; split over
        # critics.shards
        runtime=lambda wc, attempt: plan.runtime(
            config, plan.shard_minutes(plan.critic_minutes(CRITIC_SPECS[wc.judge]), CRITIC_SHARDS), attempt
        ),
    params:
        func="evaluation:critic_processbench",
        spec=lambda wc: CRITIC_SPECS[wc.judge],
        model_entry=lambda wc: model_entry(config, CRITIC_SPECS[wc.judge]["model"]),
        model_dir=lambda wc: model_dir(CRITIC_SPECS[wc.judge]["model"]),
    script:
        RUN


if CRITIC_SHARDS > 1:

    rule merge_critic_processbench:
        # the case shards of one generating critic; every case exactly once, in the cases' order
        input:
            code("evaluation:merge_critic_processbench"),
            cases=run_in("results/processbench/cases.parquet"),
            shards=run_in(plan.shard_files([CRITIC_TABLE], CRITIC_SHARDS)),
        output:
            predictions=run_out(f"{CRITIC_TABLE}.parquet"),
        log:
            run_out("logs/merge_critic_processbench/{judge}.log"),
        benchmark:
            bench("merge_critic_processbench", "logs/merge_critic_processbench/{judge}.log")
        wildcard_constraints:
            judge=plan.wildcard_alternatives(CRITIC_GENERATORS),
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="evaluation:merge_critic_processbench",
        script:
            RUN


rule critic_reparse:
    # a critic that differs from an earlier one only in `parse`, or in forcing no answers where that one
    # does, reads its critiques again (plan.critic_generation_sources): no second generation job
    input:
        code("evaluation:critic_reparse"),
        cases=run_in("results/processbench/cases.parquet"),
        source=run_in(lambda wc: f"results/critics/{CRITIC_SOURCE[wc.judge]}/processbench.parquet"),
    output:
        predictions=run_out("results/critics/{judge}/processbench.parquet"),
    log:
        run_out("logs/critic_reparse/{judge}.log"),
    benchmark:
        bench("critic_reparse", "logs/critic_reparse/{judge}.log")
    wildcard_constraints:
        judge=plan.wildcard_alternatives([c for c in CRITICS if CRITIC_SOURCE[c] != c]),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="evaluation:critic_reparse",
        parse=lambda wc: CRITIC_SPECS[wc.judge]["parse"],
        force_answer=lambda wc: CRITIC_SPECS[wc.judge]["force_answer"],
    script:
        RUN


rule bon_metrics:
    # per policy and PRM, every N on the first N samples of each problem (bon.n, bon.more_n); the graded
    # samples joined with the step scores by key, parallel lists
    input:
        code("evaluation:bon_metrics"),
        samples=run_in(lambda wc: policy_samples(policy_of(wc))),
        scores=run_in(lambda wc: [f"results/{wc.policy_dir}scores/{wc.prm}/{b}.parquet" for b in policy_benchmarks(wc)]),
    output:
        metrics=run_out("results/{policy_dir}metrics/bon/{prm}.json"),
    log:
        run_out("logs/bon_metrics/{policy_dir}{prm}.log"),
    benchmark:
        bench("bon_metrics", "logs/bon_metrics/{policy_dir}{prm}.log")
    wildcard_constraints:
        prm=PRM_RE,
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="evaluation:bon_metrics",
        bon={k: v for k, v in config["bon"].items() if k not in ("policies", "more_n")},
        policy=policy_of,
        ns=lambda wc: {b: ns for p, b, ns in BON_EVALUATIONS if p == policy_of(wc)},
        run_label=config["run"]["label"],
    script:
        RUN


rule processbench_baseline:
    # model-free predictors that never read a step's text: always "no error", always "step 0", and the
    # best rule on (subset, number of steps) fitted on the dev split (cross-fitted without one)
    input:
        code("evaluation:processbench_baseline"),
        cases=run_in("results/processbench/cases.parquet"),
        dev_cases=run_in([plan.PROCESSBENCH_DEV] if PB_DEV else []),
    output:
        metrics=run_out("results/metrics/processbench/baseline_{kind}.json"),
        predictions=run_out("results/metrics/processbench/baseline_{kind}_predictions.parquet"),
    log:
        run_out("logs/processbench_baseline/{kind}.log"),
    benchmark:
        bench("processbench_baseline", "logs/processbench_baseline/{kind}.log")
    wildcard_constraints:
        kind=plan.wildcard_alternatives(plan.PROCESSBENCH_BASELINES),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="evaluation:processbench_baseline",
        processbench_eval=config["processbench_eval"],
        run_label=config["run"]["label"],
    script:
        RUN


rule processbench_metrics:
    input:
        code("evaluation:processbench_metrics"),
        cases=run_in("results/processbench/cases.parquet"),
        scores=run_in(
            lambda wc: (
                f"results/scores/{wc.prm}/processbench.parquet"
                if wc.prm in PRM_SPECS
                else f"results/critics/{wc.prm[len('critic-'):]}/processbench.parquet"
            )
        ),
        dev_cases=run_in(lambda wc: [plan.PROCESSBENCH_DEV] if PB_DEV and wc.prm in PRM_SPECS else []),
        dev_scores=run_in(
            lambda wc: (
                [f"results/scores/{wc.prm}/processbench_dev.parquet"] if PB_DEV and wc.prm in PRM_SPECS else []
            )
        ),
        # the paired F1 difference against the structure-only baseline, case by case
        structure=run_in("results/metrics/processbench/baseline_structure_predictions.parquet"),
    output:
        metrics=run_out("results/metrics/processbench/{prm}.json"),
        predictions=run_out("results/metrics/processbench/{prm}_predictions.parquet"),
    log:
        run_out("logs/processbench_metrics/{prm}.log"),
    benchmark:
        bench("processbench_metrics", "logs/processbench_metrics/{prm}.log")
    wildcard_constraints:
        prm=plan.wildcard_alternatives(list(PRM_SPECS) + CRITIC_NAMES),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="evaluation:processbench_metrics",
        processbench_eval=config["processbench_eval"],
        threshold=lambda wc: PRM_SPECS[wc.prm].get("threshold") if wc.prm in PRM_SPECS else None,
        # a critic row names its model, template, parse and sampling (Table 7's notes)
        setting=lambda wc: (
            plan.critic_setting(CRITIC_SPECS[wc.prm[len("critic-") :]]) if wc.prm in CRITIC_NAMES else None
        ),
        run_label=config["run"]["label"],
    script:
        RUN


rule bon_table:
    input:
        code("evaluation:bon_table"),
        metrics=run_in([f"results/{d}metrics/bon/{prm}.json" for p, d in POLICY_DIRS.items() for prm in POLICY_PRMS[p]]),
    output:
        table=run_out("results/tables/bon.csv"),
    log:
        run_out("logs/bon_table.log"),
    benchmark:
        bench("bon_table", "logs/bon_table.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="evaluation:bon_table",
        run_label=config["run"]["label"],
    script:
        RUN


rule processbench_table:
    input:
        code("evaluation:processbench_table"),
        metrics=run_in(
            expand("results/metrics/processbench/{prm}.json", prm=PB_BASELINES + list(PRM_SPECS) + CRITIC_NAMES)
        ),
    output:
        table=run_out("results/tables/processbench.csv"),
    log:
        run_out("logs/processbench_table.log"),
    benchmark:
        bench("processbench_table", "logs/processbench_table.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="evaluation:processbench_table",
        run_label=config["run"]["label"],
    script:
        RUN


# head-only PRMs trained with resample heads (training.resamples): ProcessBench F1 with training variance
# and paired PRM-vs-PRM differences (hierarchical bootstrap over resamples and cases, metrics.resampled)
RESAMPLED_PRMS = plan.resampled_prms(config)

if RESAMPLED_PRMS:

    rule processbench_paired:
        input:
            code("evaluation:processbench_paired"),
            cases=run_in("results/processbench/cases.parquet"),
            dev_cases=run_in([plan.PROCESSBENCH_DEV] if PB_DEV else []),
            scores=run_in([f"results/scores/{p}/processbench.parquet" for p in RESAMPLED_PRMS]),
            dev_scores=run_in(
                [f"results/scores/{p}/processbench_dev.parquet" for p in RESAMPLED_PRMS] if PB_DEV else []
            ),
            structure=run_in("results/metrics/processbench/baseline_structure_predictions.parquet"),
        output:
            table=run_out("results/tables/processbench_paired.csv"),
        log:
            run_out("logs/processbench_paired.log"),
        benchmark:
            bench("processbench_paired", "logs/processbench_paired.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="evaluation:processbench_paired",
            prms=RESAMPLED_PRMS,
            thresholds={p: PRM_SPECS[p].get("threshold") for p in RESAMPLED_PRMS},
            processbench_eval=config["processbench_eval"],
            run_label=config["run"]["label"],
        script:
            RUN

    TARGETS.append("results/tables/processbench_paired.csv")


# PRMBench (prmbench.enabled; Song et al. 2025): every PRM scored on its cases as on ProcessBench's, its
# metric (PRMScore, prm_lessons.metrics.prmbench) and the table beside the published numbers
if plan.prmbench_enabled(config):

    rule score_prmbench:
        # one job per PRM over every case (the ProcessBench scoring path: the PRM's adapter, batching and
        # truncation, a head-only PRM's head on the frozen base's stored features; no shards)
        input:
            code("evaluation:score_prmbench"),
            cases=run_in(plan.PRMBENCH_CASES),
            model=lambda wc: prm_model_input(wc.prm),
            features=run_in(lambda wc: features_input(wc.prm, "prmbench/cases")),
        output:
            scores=run_out("results/scores/{prm}/prmbench.parquet"),
        log:
            run_out("logs/score_prmbench/{prm}.log"),
        benchmark:
            bench("score_prmbench", "logs/score_prmbench/{prm}.log")
        wildcard_constraints:
            prm=PRM_RE,
        conda:
            "../../envs/training.yaml"
        threads: lambda wc: max(1, 2 * scoring_gpus(wc.prm))
        resources:
            gpu=lambda wc: scoring_gpus(wc.prm),
            nodes=1,
            mem_mb=lambda wc: mem_mb_for(scoring_gpus(wc.prm)),
            # ~7.5k cases at paper scale (6,216 modified processes + ~1k originals), ~2x ProcessBench's 3,400
            runtime=lambda wc, attempt: plan.scoring_runtime(config, 240, scoring_gpus(wc.prm), attempt, 2, wc.prm),
        params:
            func="evaluation:score_prmbench",
            spec=lambda wc: PRM_SPECS[wc.prm],
            scoring=SCORING_CFG,
        script:
            RUN

    rule prmbench_metrics:
        # the threshold is the one ProcessBench's evaluation used for this PRM (configured or tuned)
        input:
            code("evaluation:prmbench_metrics"),
            cases=run_in(plan.PRMBENCH_CASES),
            scores=run_in("results/scores/{prm}/prmbench.parquet"),
            processbench=run_in("results/metrics/processbench/{prm}.json"),
        output:
            metrics=run_out("results/metrics/prmbench/{prm}.json"),
        log:
            run_out("logs/prmbench_metrics/{prm}.log"),
        benchmark:
            bench("prmbench_metrics", "logs/prmbench_metrics/{prm}.log")
        wildcard_constraints:
            prm=plan.wildcard_alternatives(list(PRM_SPECS)),
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="evaluation:prmbench_metrics",
            run_label=config["run"]["label"],
        script:
            RUN

    rule prmbench_table:
        input:
            code("evaluation:prmbench_table"),
            metrics=run_in(expand("results/metrics/prmbench/{prm}.json", prm=list(PRM_SPECS))),
        output:
            table=run_out("results/tables/prmbench.csv"),
        log:
            run_out("logs/prmbench_table.log"),
        benchmark:
            bench("prmbench_table", "logs/prmbench_table.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="evaluation:prmbench_table",
            paper_rows=config.get("analysis", {}).get("paper_rows") or {},
            run_label=config["run"]["label"],
        script:
            RUN

    TARGETS.append("results/tables/prmbench.csv")


TARGETS.extend(
    ["results/tables/bon.csv", "results/tables/processbench.csv"]
    + expand("results/metrics/processbench/{prm}_predictions.parquet", prm=list(PRM_SPECS) + CRITIC_NAMES)
)
