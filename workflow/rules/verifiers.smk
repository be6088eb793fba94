# LLMs as Best-of-N verifiers (paper App. B.5, Tables 11-12): one job per (judge, mode) over every judged
# benchmark (the judge is loaded once), its metrics beside pass@N and maj@N of the same problems, and
# results/tables/judge_bon.csv. Logic: prm_lessons.verifiers; rule functions in prm_lessons.rules.verifiers.
BON_JUDGES = config["bon_judges"]
JUDGE_BENCHMARKS = plan.bon_judge_benchmarks(config)
JUDGE_RUNS = plan.bon_judge_runs(config)


rule bon_judge:
    input:
        code("verifiers:bon_judge"),
        samples=expand("results/samples/{dataset}.parquet", dataset=JUDGE_BENCHMARKS),
        model=lambda wc: model_input(plan.bon_judge_model(config, wc.judge)),
        # the prompt is data, not code: declared so that editing it judges again
        template=lambda wc: plan.bon_judge_template(config, wc.mode, PKG),
    output:
        judged=expand("results/bon_judges/{{judge}}/{{mode}}/{dataset}.parquet", dataset=JUDGE_BENCHMARKS),
    log:
        "logs/bon_judge/{judge}/{mode}.log",
    wildcard_constraints:
        judge=plan.wildcard_alternatives(list(BON_JUDGES["judges"])),
        mode=plan.wildcard_alternatives(plan.BON_JUDGE_MODES),
    conda:
        "../../envs/sampling.yaml"
    threads: lambda wc: engine_threads(plan.bon_judge_model(config, wc.judge))
    resources:
        gpu=lambda wc: gpus(plan.bon_judge_model(config, wc.judge)),
        nodes=1,
        mem_mb=lambda wc: gpu_mem_mb(plan.bon_judge_model(config, wc.judge)),
        # paper scale: ~1,000 problems x 8 responses per benchmark; QwQ writes long judgements
        runtime=lambda wc, attempt: 720 * attempt,
    params:
        func="verifiers:bon_judge",
        settings=lambda wc: plan.bon_judge_settings(config, wc.judge),
        n=config["bon"]["n"],
        limit=BON_JUDGES["limit"],
        model_entry=lambda wc: model_entry(config, plan.bon_judge_model(config, wc.judge)),
        model_dir=lambda wc: model_dir(plan.bon_judge_model(config, wc.judge)),
    script:
        RUN


rule bon_judge_metrics:
    input:
        code("verifiers:bon_judge_metrics"),
        samples=expand("results/samples/{dataset}.parquet", dataset=JUDGE_BENCHMARKS),
        judged=expand("results/bon_judges/{{judge}}/{{mode}}/{dataset}.parquet", dataset=JUDGE_BENCHMARKS),
    output:
        metrics="results/metrics/bon_judges/{judge}/{mode}.json",
    log:
        "logs/bon_judge_metrics/{judge}/{mode}.log",
    wildcard_constraints:
        judge=plan.wildcard_alternatives(list(BON_JUDGES["judges"])),
        mode=plan.wildcard_alternatives(plan.BON_JUDGE_MODES),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="verifiers:bon_judge_metrics",
        bon=config["bon"],
        model=lambda wc: plan.bon_judge_model(config, wc.judge),
        run_label=config["run"]["label"],
    script:
        RUN


rule bon_judge_table:
    input:
        code("verifiers:bon_judge_table"),
        metrics=[f"results/metrics/bon_judges/{j}/{m}.json" for j, m in JUDGE_RUNS],
    output:
        table="results/tables/judge_bon.csv",
    log:
        "logs/bon_judge_table.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="verifiers:bon_judge_table",
        run_label=config["run"]["label"],
    script:
        RUN


TARGETS.extend(["results/tables/judge_bon.csv"])
