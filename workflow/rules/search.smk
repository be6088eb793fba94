# PRM-guided greedy step search (paper App. A, Table 8): one job per guiding PRM over all searched
# benchmarks (the policy and the PRM are loaded once), the same policy's baselines (pass@1, pass@N,
# maj@N, orm@N), and results/tables/search.csv. Logic: prm_lessons.evaluation.search (the search, its metrics),
# prm_lessons.evaluation.search_scorers (candidate scorers); rule functions in prm_lessons.rules.search.
# search.shards > 1: one job per (PRM, problem shard) searches that shard of every benchmark (a killed
# job loses one shard), and a local merge per PRM writes what the one job would (plan.search_outputs).
SEARCH = config["search"]
SEARCH_POLICY = plan.search_policy(config)
SEARCH_BENCHMARKS = plan.search_benchmarks(config)
SEARCH_REUSE = plan.search_reuses_samples(config)
SEARCH_ORM = SEARCH["orm"]
SEARCH_N = plan.search_n(config)
# only what the search jobs read, so an unrelated config edit does not search again (shards: the split
# changes no row, and the shard files' names carry it)
SEARCH_PARAMS = {k: v for k, v in SEARCH.items() if k not in ("prms", "n", "orm", "shards", "pass1")}


if SEARCH_PRMS:

    rule search_greedy:
        input:
            code("search:search_greedy"),
            problems=run_in(expand("results/problems/{dataset}.parquet", dataset=SEARCH_BENCHMARKS)),
            policy=model_input(SEARCH_POLICY),
            prm=lambda wc: prm_model_input(wc.prm),
        output:
            search=run_out(plan.search_outputs(config, SEARCH_BENCHMARKS)),
        log:
            run_out(plan.search_log(config)),
        benchmark:
            bench("search_greedy", plan.search_log(config))
        wildcard_constraints:
            prm=plan.wildcard_alternatives(SEARCH_PRMS),
        conda:
            "../../envs/sampling.yaml"
        threads: engine_threads(SEARCH_POLICY, pool=config["grading"]["workers"])
        resources:
            gpu=lambda wc: plan.search_gpus(config, PRM_SPECS, wc.prm),
            nodes=1,
            mem_mb=lambda wc: mem_mb_for(plan.search_gpus(config, PRM_SPECS, wc.prm)),
            runtime=lambda wc, attempt: plan.runtime(config, plan.search_minutes(config, PRM_SPECS, wc.prm), attempt),
        params:
            func="search:search_greedy",
            search=SEARCH_PARAMS,
            sampling={
                k: config["sampling"].get(k) for k in ("step_separator", "system_prompt") if k in config["sampling"]
            },
            grading=config["grading"],
            model=plan.search_policy_entry(config),
            model_dir=model_dir_param(SEARCH_POLICY, "policy"),
            spec=lambda wc: PRM_SPECS[wc.prm],
            scoring=SCORING_CFG,
        script:
            RUN

    if plan.search_shards(config) > 1:

        rule merge_search:
            # the shards of every benchmark of one PRM; each searched problem exactly once (rules.search)
            input:
                code("search:merge_search"),
                problems=run_in(expand("results/problems/{dataset}.parquet", dataset=SEARCH_BENCHMARKS)),
                shards=run_in(plan.search_shard_paths(config, SEARCH_BENCHMARKS)),
            output:
                search=run_out(expand("results/search/{{prm}}/{dataset}.parquet", dataset=SEARCH_BENCHMARKS)),
            log:
                run_out("logs/merge_search/{prm}.log"),
            benchmark:
                bench("merge_search", "logs/merge_search/{prm}.log")
            wildcard_constraints:
                prm=plan.wildcard_alternatives(SEARCH_PRMS),
            localrule: True
            conda:
                "../../envs/analysis.yaml"
            params:
                func="search:merge_search",
                limit=SEARCH["limit"],
            script:
                RUN

    if not SEARCH_REUSE:

        rule search_samples:
            # the baselines' N responses of a search policy other than the Best-of-N one (or another N)
            input:
                code("search:search_samples"),
                problems=run_in("results/problems/{dataset}.parquet"),
                model=model_input(SEARCH_POLICY),
            output:
                samples=run_out("results/search/samples/{dataset}.parquet"),
            log:
                run_out("logs/search_samples/{dataset}.log"),
            benchmark:
                bench("search_samples", "logs/search_samples/{dataset}.log")
            conda:
                "../../envs/sampling.yaml"
            threads: engine_threads(SEARCH_POLICY, pool=config["grading"]["workers"])
            resources:
                gpu=gpus(SEARCH_POLICY),
                nodes=1,
                mem_mb=gpu_mem_mb(SEARCH_POLICY),
                runtime=lambda wc, attempt: plan.runtime(config, 240, attempt),
            params:
                func="search:search_samples",
                sampling=plan.stable_params(config["sampling"]),
                grading=config["grading"],
                model=model_entry(config, SEARCH_POLICY),
                model_dir=model_dir_param(SEARCH_POLICY),
                n=SEARCH_N,
                limit=SEARCH["limit"],
            script:
                RUN

        if SEARCH_ORM:

            rule search_orm_scores:
                input:
                    code("search:search_orm_scores"),
                    samples=run_in(expand("results/search/samples/{dataset}.parquet", dataset=SEARCH_BENCHMARKS)),
                    model=prm_model_input(SEARCH_ORM),
                output:
                    scores=run_out(
                        expand(
                            "results/search/scores/{orm}/{dataset}.parquet", orm=SEARCH_ORM, dataset=SEARCH_BENCHMARKS
                        )
                    ),
                log:
                    run_out(f"logs/search_orm_scores/{SEARCH_ORM}.log"),
                benchmark:
                    bench("search_orm_scores", f"logs/search_orm_scores/{SEARCH_ORM}.log")
                conda:
                    "../../envs/training.yaml"
                threads: max(1, 2 * plan.search_gpus(config, PRM_SPECS, SEARCH_ORM))
                resources:
                    gpu=plan.search_gpus(config, PRM_SPECS, SEARCH_ORM),
                    nodes=1,
                    mem_mb=mem_mb_for(plan.search_gpus(config, PRM_SPECS, SEARCH_ORM)),
                    runtime=lambda wc, attempt: plan.runtime(config, 240, attempt),
                params:
                    func="search:search_orm_scores",
                    spec=PRM_SPECS[SEARCH_ORM],
                    scoring=SCORING_CFG,
                script:
                    RUN

    if SEARCH["pass1"] == "greedy":

        rule search_greedy_samples:
            # Table 8's pass@1 as one greedy response per problem (search.pass1: greedy); the function is
            # search_samples' function at temperature 0 and N 1
            input:
                code("search:search_greedy_samples"),
                problems=run_in("results/problems/{dataset}.parquet"),
                model=model_input(SEARCH_POLICY),
            output:
                samples=run_out("results/search/greedy/{dataset}.parquet"),
            log:
                run_out("logs/search_greedy_samples/{dataset}.log"),
            benchmark:
                bench("search_greedy_samples", "logs/search_greedy_samples/{dataset}.log")
            conda:
                "../../envs/sampling.yaml"
            threads: engine_threads(SEARCH_POLICY, pool=config["grading"]["workers"])
            resources:
                gpu=gpus(SEARCH_POLICY),
                nodes=1,
                mem_mb=gpu_mem_mb(SEARCH_POLICY),
                runtime=lambda wc, attempt: plan.runtime(config, 240, attempt),
            params:
                func="search:search_greedy_samples",
                sampling=plan.greedy_sampling(config),
                grading=config["grading"],
                model=model_entry(config, SEARCH_POLICY),
                model_dir=model_dir_param(SEARCH_POLICY),
                n=1,
                limit=SEARCH["limit"],
            script:
                RUN

    rule search_table:
        input:
            code("search:search_table"),
            search=run_in(expand("results/search/{prm}/{dataset}.parquet", prm=SEARCH_PRMS, dataset=SEARCH_BENCHMARKS)),
            samples=run_in([plan.search_samples_path(config, b) for b in SEARCH_BENCHMARKS]),
            orm=run_in([plan.search_orm_path(config, b) for b in SEARCH_BENCHMARKS] if SEARCH_ORM else []),
            greedy=run_in(
                [plan.search_greedy_path(config, b) for b in SEARCH_BENCHMARKS] if SEARCH["pass1"] == "greedy" else []
            ),
        output:
            table=run_out("results/tables/search.csv"),
        log:
            run_out("logs/search_table.log"),
        benchmark:
            bench("search_table", "logs/search_table.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="search:search_table",
            prms=SEARCH_PRMS,
            benchmarks=SEARCH_BENCHMARKS,
            n=SEARCH_N,
            candidates=SEARCH["candidates"],
            limit=SEARCH["limit"],
            maj_grouping=config["bon"]["maj_grouping"],
            bootstrap=config["bon"]["bootstrap"],
            run_label=config["run"]["label"],
            pass1=SEARCH["pass1"],
        script:
            RUN

    TARGETS.append("results/tables/search.csv")
