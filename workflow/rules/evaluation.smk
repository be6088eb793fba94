# Evaluation: step scoring per (PRM, benchmark) and per PRM on ProcessBench, LLM critics per judge
# model, Best-of-N and ProcessBench metrics, long tables for the analysis stage.
# Logic: prm_lessons.scoring / metrics / critic. Outputs are documented in docs/architecture.md
# ("Evaluation outputs").
import re

from prm_lessons.scoring import resolve_prm_specs, spec_inputs, wildcard_alternatives  # noqa: E402

PRM_SPECS = resolve_prm_specs(config)  # name -> spec: trained variants + released models (prms.models)
CRITICS = list(config["critics"]["judges"])
CRITIC_NAMES = [f"critic-{j}" for j in CRITICS]
BON_BENCHMARKS = list(config["benchmarks"])
PRM_RE = wildcard_alternatives(PRM_SPECS)
SCORING_CFG = {k: config["prms"][k] for k in ("batch_tokens", "batch_size")}
# head-only trained PRMs share one frozen base: its step features are computed once per text table
SHARED_FEATURES = bool(config["prms"]["shared_base_features"]) and _TRAIN["mode"] == "head"



rule step_features:
    input:
        pkg("features", "training", "steps"),
        texts="results/{source}.parquet",
        base=model_input(_TRAIN["base"]),
    output:
        features="results/features/{source}.safetensors",
    wildcard_constraints:
        source="|".join([*(f"samples/{re.escape(b)}" for b in BON_BENCHMARKS), "processbench/cases"]),
    params:
        func="features:rule_step_features",
        training=_TRAIN_PARAMS,
        base_dir=lambda wc, input: str(input.base[0]) if len(input.base) else model_dir(_TRAIN["base"]),
        # what the scoring of a trained PRM uses: prms.max_length, else the PRM's training max_length
        max_length=config["prms"]["max_length"] or _TRAIN["max_length"],
        batch_size=config["prms"]["batch_size"],
    threads: 2
    resources:
        gpu=1 if _TRAIN["gpus"] else 0,
        nodes=1,
        mem_mb=mem_mb_for(1 if _TRAIN["gpus"] else 0),
        runtime=lambda wc, attempt: 120 * attempt,
    log:
        "logs/step_features/{source}.log",
    conda:
        "../../envs/training.yaml"
    script:
        RUN



rule score_samples:
    # one job per PRM over all Best-of-N sets: the PRM is loaded once (7x fewer loads of a 72B model at
    # paper scale, 7x fewer job start-ups on CPU); each set still gets its own table
    input:
        pkg("scoring", "steps", "training", "features"),
        samples=expand("results/samples/{dataset}.parquet", dataset=BON_BENCHMARKS),
        model=lambda wc: spec_inputs(PRM_SPECS[wc.prm], model_input),
        features=lambda wc: [f for d in BON_BENCHMARKS for f in features_input(wc.prm, f"samples/{d}")],
    output:
        scores=expand("results/scores/{{prm}}/{dataset}.parquet", dataset=BON_BENCHMARKS),
    wildcard_constraints:
        prm=PRM_RE,
    params:
        func="scoring:rule_score_samples",
        spec=lambda wc: PRM_SPECS[wc.prm],
        scoring=SCORING_CFG,
    # on CPU one thread: the forward work is small and per-job start-up dominates, so two jobs side by
    # side beat one job with two threads; on GPU two per GPU (tokenising, data loading)
    threads: lambda wc: max(1, 2 * scoring_gpus(wc.prm))
    resources:
        gpu=lambda wc: scoring_gpus(wc.prm),
        nodes=1,  # a 72B PRM spreads over 4 GPUs of one node (device_map="auto")
        mem_mb=lambda wc: mem_mb_for(scoring_gpus(wc.prm)),
        # all seven sets (~110k responses at paper scale): ~1-2 h for a 7B PRM on one H100; a 72B PRM in
        # transformers runs one GPU at a time (several hours, more on A100)
        runtime=lambda wc, attempt: 480 * attempt * (3 if scoring_gpus(wc.prm) > 1 else 1),
    log:
        "logs/score_samples/{prm}.log",
    conda:
        "../../envs/training.yaml"
    script:
        RUN


rule score_processbench:
    input:
        pkg("scoring", "steps", "training", "features"),
        cases="results/processbench/cases.parquet",
        model=lambda wc: spec_inputs(PRM_SPECS[wc.prm], model_input),
        features=lambda wc: features_input(wc.prm, "processbench/cases"),
    output:
        scores="results/scores/{prm}/processbench.parquet",
    wildcard_constraints:
        prm=PRM_RE,
    params:
        func="scoring:rule_score_processbench",
        spec=lambda wc: PRM_SPECS[wc.prm],
        scoring=SCORING_CFG,
    # on CPU one thread: the forward work is small and per-job start-up dominates, so two jobs side by
    # side beat one job with two threads; on GPU two per GPU (tokenising, data loading)
    threads: lambda wc: max(1, 2 * scoring_gpus(wc.prm))
    resources:
        gpu=lambda wc: scoring_gpus(wc.prm),
        nodes=1,
        mem_mb=lambda wc: mem_mb_for(scoring_gpus(wc.prm)),
        runtime=lambda wc, attempt: 120 * attempt * (2 if scoring_gpus(wc.prm) > 1 else 1),
    log:
        "logs/score_processbench/{prm}.log",
    conda:
        "../../envs/training.yaml"
    script:
        RUN


rule critic_processbench:
    input:
        pkg("critic", "generation", "labels/__init__", "labels/judge"),
        cases="results/processbench/cases.parquet",
        model=lambda wc: model_input(wc.judge),
    output:
        predictions="results/critics/{judge}/processbench.parquet",
    wildcard_constraints:
        judge=wildcard_alternatives(CRITICS),
    params:
        func="critic:rule_critic_processbench",
        critics=config["critics"],
        model_entry=lambda wc: model_entry(config, wc.judge),
        model_dir=lambda wc: model_dir(wc.judge),
    threads: lambda wc: engine_threads(wc.judge)
    resources:
        gpu=lambda wc: gpus(wc.judge),
        nodes=1,
        mem_mb=lambda wc: gpu_mem_mb(wc.judge),
        runtime=lambda wc, attempt: 480 * attempt,
    log:
        "logs/critic_processbench/{judge}.log",
    conda:
        "../../envs/sampling.yaml"
    script:
        RUN


rule bon_metrics:
    input:
        pkg("metrics"),
        scores=expand("results/scores/{{prm}}/{dataset}.parquet", dataset=BON_BENCHMARKS),
    output:
        metrics="results/metrics/bon/{prm}.json",
    wildcard_constraints:
        prm=PRM_RE,
    params:
        func="metrics:rule_bon_metrics",
        bon=config["bon"],
        run_label=config["run"]["label"],
    log:
        "logs/bon_metrics/{prm}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule processbench_metrics:
    input:
        pkg("metrics"),
        cases="results/processbench/cases.parquet",
        scores=lambda wc: (f"results/scores/{wc.prm}/processbench.parquet" if wc.prm in PRM_SPECS
                          else f"results/critics/{wc.prm[len('critic-'):]}/processbench.parquet"),
    output:
        metrics="results/metrics/processbench/{prm}.json",
        predictions="results/metrics/processbench/{prm}_predictions.parquet",
    wildcard_constraints:
        prm=wildcard_alternatives(list(PRM_SPECS) + CRITIC_NAMES),
    params:
        func="metrics:rule_processbench_metrics",
        processbench_eval=config["processbench_eval"],
        threshold=lambda wc: PRM_SPECS[wc.prm].get("threshold") if wc.prm in PRM_SPECS else None,
        run_label=config["run"]["label"],
    log:
        "logs/processbench_metrics/{prm}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule bon_table:
    input:
        pkg("metrics"),
        metrics=expand("results/metrics/bon/{prm}.json", prm=list(PRM_SPECS)),
    output:
        table="results/tables/bon.csv",
    params:
        func="metrics:rule_bon_table",
        run_label=config["run"]["label"],
    log:
        "logs/bon_table.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule processbench_table:
    input:
        pkg("metrics"),
        metrics=expand("results/metrics/processbench/{prm}.json", prm=list(PRM_SPECS) + CRITIC_NAMES),
    output:
        table="results/tables/processbench.csv",
    params:
        func="metrics:rule_processbench_table",
        run_label=config["run"]["label"],
    log:
        "logs/processbench_table.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


TARGETS.extend(["results/tables/bon.csv", "results/tables/processbench.csv"]
               + expand("results/metrics/processbench/{prm}_predictions.parquet",
                        prm=list(PRM_SPECS) + CRITIC_NAMES))
