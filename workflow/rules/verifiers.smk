# LLMs as Best-of-N verifiers (paper App. B.5, Tables 11-12): one job per (judge, mode) over every judged
# benchmark (the judge is loaded once; one per problem shard with bon_judges.shards > 1), its metrics beside
# pass@N and maj@N of the same problems, and results/tables/judge_bon.csv. Logic: prm_lessons.evaluation.verifiers;
# rule functions in prm_lessons.rules.verifiers.
BON_JUDGES = config["bon_judges"]
JUDGE_NAMES = plan.bon_judge_names(config)  # the enabled judges (bon_judges.judges.<name>.enabled)
JUDGE_BENCHMARKS = plan.bon_judge_benchmarks(config)
JUDGE_RUNS = plan.bon_judge_runs(config)
# bon_judges.shards > 1: each job judges one problem shard of every benchmark (a killed job loses one
# shard) and a local merge per (policy, judge, mode) joins them; 1: one job writes the tables
JUDGE_SHARDS = plan.bon_judge_shards(config)
JUDGE_TABLES = [f"results/{{policy_dir}}bon_judges/{{judge}}/{{mode}}/{b}" for b in JUDGE_BENCHMARKS]
# every judged policy (bon_judges.policies): the primary's files as before, another's under
# results/policies/{name}/ (the `policy_dir` wildcard; a judged benchmark it does not sample: an empty table)
JUDGE_POLICIES = plan.bon_judge_policies(config)


rule bon_judge:
    input:
        code("verifiers:bon_judge"),
        lambda wc: bon_judge_template(wc)[1:],  # a built-in prompt's fingerprint
        responses=run_in(lambda wc: judged_samples(wc, "responses")),
        model=lambda wc: model_input(plan.bon_judge_model(config, wc.judge)),
        # the prompt is data, not code: declared so that editing it judges again
        template=run_in(lambda wc: bon_judge_template(wc)[0]),
    output:
        judged=run_out(plan.shard_outputs(JUDGE_TABLES, JUDGE_SHARDS)),
    log:
        run_out(plan.shard_log("bon_judge", "{policy_dir}{judge}/{mode}", JUDGE_SHARDS)),
    benchmark:
        bench("bon_judge", plan.shard_log("bon_judge", "{policy_dir}{judge}/{mode}", JUDGE_SHARDS))
    wildcard_constraints:
        judge=plan.wildcard_alternatives(JUDGE_NAMES),
        mode=plan.wildcard_alternatives(plan.BON_JUDGE_MODES),
        policy_dir=plan.policy_dir_regex(config, JUDGE_POLICIES),
    conda:
        "../../envs/sampling.yaml"
    threads: lambda wc: engine_threads(plan.bon_judge_model(config, wc.judge))
    resources:
        gpu=lambda wc: gpus(plan.bon_judge_model(config, wc.judge)),
        nodes=1,
        mem_mb=lambda wc: gpu_mem_mb(plan.bon_judge_model(config, wc.judge)),
        # paper scale: ~1,000 problems x 8 responses per benchmark; QwQ writes long judgements; split over
        # bon_judges.shards
        runtime=lambda wc, attempt: plan.runtime(
            config, plan.shard_minutes(plan.bon_judge_minutes(config, wc.judge), JUDGE_SHARDS), attempt
        ),
    params:
        func="verifiers:bon_judge",
        settings=lambda wc: plan.bon_judge_settings(config, wc.judge),
        n=config["bon"]["n"],
        limit=BON_JUDGES["limit"],
        model_entry=lambda wc: model_entry(config, plan.bon_judge_model(config, wc.judge)),
        model_dir=lambda wc: model_dir(plan.bon_judge_model(config, wc.judge)),
    script:
        RUN


if JUDGE_SHARDS > 1:

    rule merge_bon_judge:
        # the shards of every benchmark of one (policy, judge, mode); each judged problem exactly once
        input:
            code("verifiers:merge_bon_judge"),
            responses=run_in(lambda wc: judged_samples(wc, "responses")),
            shards=run_in(plan.shard_files(JUDGE_TABLES, JUDGE_SHARDS)),
        output:
            judged=run_out([f"{t}.parquet" for t in JUDGE_TABLES]),
        log:
            run_out("logs/merge_bon_judge/{policy_dir}{judge}/{mode}.log"),
        benchmark:
            bench("merge_bon_judge", "logs/merge_bon_judge/{policy_dir}{judge}/{mode}.log")
        wildcard_constraints:
            judge=plan.wildcard_alternatives(JUDGE_NAMES),
            mode=plan.wildcard_alternatives(plan.BON_JUDGE_MODES),
            policy_dir=plan.policy_dir_regex(config, JUDGE_POLICIES),
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="verifiers:merge_bon_judge",
            n=config["bon"]["n"],
            limit=BON_JUDGES["limit"],
        script:
            RUN


rule bon_judge_metrics:
    input:
        code("verifiers:bon_judge_metrics"),
        samples=run_in(judged_samples),
        judged=run_in(
            lambda wc: [
                f"results/{wc.policy_dir}bon_judges/{wc.judge}/{wc.mode}/{b}.parquet"
                for b in JUDGE_BENCHMARKS
                if b in policy_benchmarks(wc)
            ]
        ),
    output:
        metrics=run_out("results/{policy_dir}metrics/bon_judges/{judge}/{mode}.json"),
    log:
        run_out("logs/bon_judge_metrics/{policy_dir}{judge}/{mode}.log"),
    benchmark:
        bench("bon_judge_metrics", "logs/bon_judge_metrics/{policy_dir}{judge}/{mode}.log")
    wildcard_constraints:
        judge=plan.wildcard_alternatives(JUDGE_NAMES),
        mode=plan.wildcard_alternatives(plan.BON_JUDGE_MODES),
        policy_dir=plan.policy_dir_regex(config, JUDGE_POLICIES),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="verifiers:bon_judge_metrics",
        bon={k: v for k, v in config["bon"].items() if k not in ("policies", "more_n")},
        policy=policy_of,
        model=lambda wc: plan.bon_judge_model(config, wc.judge),
        run_label=config["run"]["label"],
    script:
        RUN


rule bon_judge_table:
    input:
        code("verifiers:bon_judge_table"),
        metrics=run_in(
            [f"results/{POLICY_DIRS[p]}metrics/bon_judges/{j}/{m}.json" for p in JUDGE_POLICIES for j, m in JUDGE_RUNS]
        ),
    output:
        table=run_out("results/tables/judge_bon.csv"),
    log:
        run_out("logs/bon_judge_table.log"),
    benchmark:
        bench("bon_judge_table", "logs/bon_judge_table.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="verifiers:bon_judge_table",
        run_label=config["run"]["label"],
    script:
        RUN


# no judge job (bon_judges.judges all disabled, `make run`): no table, Tables 11-12 say why (plan.analysis_skipped)
if JUDGE_RUNS and JUDGE_POLICIES:
    TARGETS.extend(["results/tables/judge_bon.csv"])
