# Step labels for the sampled responses of every problem set under `problems:` — Monte Carlo
# estimation, LLM-as-a-judge, human labels, consensus filtering — Math-Shepherd's released labels, and
# one training set per variant. Rule functions: prm_lessons.rules.labels; logic:
# prm_lessons.labels.{mc,judge,human,math_shepherd,consensus,trainsets}. MC and the judge are sharded
# per problem set (mc.shards / judge.shards): a killed job loses only its shard.
HUMAN = config["human"]

# A mix of data policies (several data_policies): each samples every training set into
# results/data_policies/{name}/responses/ (rules sample, merge_samples); this rule joins them into the
# training set's results/responses/{dataset}.parquet, which rule merge_samples writes otherwise.
if DATA_MIX:

    ruleorder: mix_responses > merge_samples

    rule mix_responses:
        input:
            code("labels:mix_responses"),
            responses=run_in(lambda wc: plan.mixed_responses(config, wc.dataset)),
        output:
            responses=run_out("results/responses/{dataset}.parquet"),
        log:
            run_out("logs/mix_responses/{dataset}.log"),
        benchmark:
            bench("mix_responses", "logs/mix_responses/{dataset}.log")
        wildcard_constraints:
            dataset=plan.wildcard_alternatives(config.get("problems") or {}),
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="labels:mix_responses",
            parts=plan.mix_parts(config),
        script:
            RUN


rule mc:
    input:
        code("labels:mc"),
        samples=run_in("results/samples/{dataset}.parquet"),
        model=lambda wc: model_input(mc_completer(wc)),
    output:
        table=run_out("results/labels/mc/{dataset}/shard{shard}of{nshards}.parquet"),
    log:
        run_out("logs/labels/mc/{dataset}/shard{shard}of{nshards}.log"),
    benchmark:
        bench("mc", "logs/labels/mc/{dataset}/shard{shard}of{nshards}.log")
    conda:
        "../../envs/sampling.yaml"
    threads: lambda wc: engine_threads(mc_completer(wc), pool=config["grading"]["workers"])
    resources:
        gpu=lambda wc: gpus(mc_completer(wc)),
        nodes=1,
        mem_mb=lambda wc: gpu_mem_mb(mc_completer(wc)),
        runtime=lambda wc, attempt: plan.runtime(config, 720, attempt),
    params:
        # a mix of data policies only (a single policy's jobs keep their params): the shard's policy and
        # its shard of that policy's responses
        **MC_PART,
        **plan.stable_params({"seed_mode": config["sampling"]["seed_mode"]}),
        func="labels:mc",
        mc=plan.stable_params(config["mc"]),
        needs=plan.label_needs(config),  # what the configured training sets need decided
        # the data policy's prompt: the completer continues the responses under the prompt they were sampled with
        system_prompt=lambda wc: mc_shard(wc)["system_prompt"],
        separator=config["sampling"]["step_separator"],
        grading_timeout_s=config["grading"]["timeout_s"],
        grading_workers=config["grading"]["workers"],
        model_entry=lambda wc: model_entry(config, mc_completer(wc)),
        model_dir=model_dir_param(mc_completer),
    script:
        RUN


rule judge:
    # the ungraded responses: the judge reads steps only, so a grading fix judges nothing again
    input:
        code("labels:judge"),
        responses=run_in("results/responses/{dataset}.parquet"),
        model=model_input(JUDGE),
        template=run_in(plan.judge_template_input(config["judge"])),
        # judge.reference: the gold solutions of the responses' problems
        problems=run_in(["results/problems/{dataset}.parquet"] if config["judge"].get("reference") else []),
    output:
        table=run_out("results/labels/judge/{dataset}/shard{shard}of{nshards}.parquet"),
    log:
        run_out("logs/labels/judge/{dataset}/shard{shard}of{nshards}.log"),
    benchmark:
        bench("judge", "logs/labels/judge/{dataset}/shard{shard}of{nshards}.log")
    conda:
        "../../envs/sampling.yaml"
    threads: engine_threads(JUDGE)
    resources:
        gpu=gpus(JUDGE),
        nodes=1,  # tensor parallelism over 4 GPUs needs them on one node
        mem_mb=gpu_mem_mb(JUDGE),
        runtime=lambda wc, attempt: plan.runtime(config, 720, attempt),
    params:
        func="labels:judge",
        judge=config["judge"],
        # a benchmark's first bon.n samples (Figure 6), not all of a larger N sampled for Table 10
        max_samples=lambda wc: plan.judge_sample_cap(config, wc.dataset),
        model_entry=model_entry(config, JUDGE),
        model_dir=model_dir_param(JUDGE),
    script:
        RUN


rule merge_mc:
    input:
        code("labels:merge_mc"),
        shards=run_in(lambda wc: plan.label_shard_paths(config, "mc", wc.dataset)),
    output:
        table=run_out("results/labels/mc/{dataset}.parquet"),
    log:
        run_out("logs/labels/merge_mc/{dataset}.log"),
    benchmark:
        bench("merge_mc", "logs/labels/merge_mc/{dataset}.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:merge_mc",
    script:
        RUN


rule merge_judge:
    input:
        code("labels:merge_judge"),
        shards=run_in(lambda wc: plan.label_shard_paths(config, "judge", wc.dataset)),
    output:
        table=run_out("results/labels/judge/{dataset}.parquet"),
    log:
        run_out("logs/labels/merge_judge/{dataset}.log"),
    benchmark:
        bench("merge_judge", "logs/labels/merge_judge/{dataset}.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:merge_judge",
    script:
        RUN


rule human_labels:
    input:
        code("labels:human_labels"),
        problems=run_in(
            [f"results/problems/{d}.parquet" for d in config.get("problems") or {}]
            if HUMAN["source"] == "construction" and not HUMAN["construction"]["problems"]
            else []
        ),
        eval_sets=run_in(plan.eval_set_paths(config)),
        local=(
            [HUMAN["prm800k"]["path"]]
            if HUMAN["source"] == "prm800k" and HUMAN["prm800k"]["source"] == "local"
            else []
        ),
    output:
        table=run_out("results/labels/human.parquet"),
    log:
        run_out("logs/labels/human.log"),
    benchmark:
        bench("human_labels", "logs/labels/human.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:human_labels",
        human=HUMAN,
    script:
        RUN


# Math-Shepherd's released step labels (a training source of its own: trainsets.variants.*.source
# math_shepherd), read from the file of the `math_shepherd` section and decontaminated like PRM800K.
rule math_shepherd_labels:
    input:
        code("labels:math_shepherd_labels"),
        eval_sets=run_in(plan.eval_set_paths(config)),
        local=run_in(([config["math_shepherd"]["path"]] if config["math_shepherd"]["source"] == "local" else [])),
    output:
        table=run_out("results/labels/math_shepherd.parquet"),
    log:
        run_out("logs/labels/math_shepherd.log"),
    benchmark:
        bench("math_shepherd_labels", "logs/labels/math_shepherd.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:math_shepherd_labels",
        math_shepherd=config["math_shepherd"],
    script:
        RUN


# A training set in TRL's stepwise-supervision format (trainsets.variants.*.source trl, the variant's
# `trl` key: a Hub dataset at a pinned commit or a local file), checked row by row and decontaminated
# like PRM800K.
rule trl_labels:
    input:
        code("labels:trl_labels"),
        eval_sets=run_in(plan.eval_set_paths(config)),
        local=run_in(lambda wc: plan.trl_local_files(TRL_VARIANTS[wc.variant])),
    output:
        table=run_out("results/labels/trl/{variant}.parquet"),
    log:
        run_out("logs/labels/trl/{variant}.log"),
    benchmark:
        bench("trl_labels", "logs/labels/trl/{variant}.log")
    wildcard_constraints:
        variant=plan.wildcard_alternatives(TRL_VARIANTS),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:trl_labels",
        variant=lambda wc: wc.variant,
        trl=lambda wc: TRL_VARIANTS[wc.variant],
    script:
        RUN


rule consensus:
    input:
        code("labels:consensus"),
        mc=run_in("results/labels/mc/{dataset}.parquet"),
        judge=run_in("results/labels/judge/{dataset}.parquet"),
    output:
        table=run_out("results/labels/consensus/{dataset}.parquet"),
    log:
        run_out("logs/labels/consensus/{dataset}.log"),
    benchmark:
        bench("consensus", "logs/labels/consensus/{dataset}.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:consensus",
        consensus=config["consensus"],
        k=config["mc"]["completions"],
    script:
        RUN


rule trainset:
    input:
        code("labels:trainset"),
        unpack(run_in(lambda wc: plan.trainset_inputs(config, wc.variant))),
    output:
        table=run_out("results/trainsets/{variant}.parquet"),
        stats=run_out("results/trainsets/{variant}.json"),
    log:
        run_out("logs/trainsets/{variant}.log"),
    benchmark:
        bench("trainset", "logs/trainsets/{variant}.log")
    wildcard_constraints:
        variant=plan.wildcard_alternatives(TRAINSET_VARIANTS),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:trainset",
        variant=lambda wc: wc.variant,
        spec=lambda wc: TRAINSET_VARIANTS[wc.variant],
        k=config["mc"]["completions"],
        # consensus on the constructed pool (trainsets.responses: constructed) is decided here
        consensus_threshold=config["consensus"]["threshold"],
        run=RUN_ID,
    script:
        RUN


rule trainsets_table:
    input:
        code("labels:trainsets_table"),
        stats=run_in(expand("results/trainsets/{variant}.json", variant=list(TRAINSET_VARIANTS))),
    output:
        csv=run_out("results/tables/trainsets.csv"),
    log:
        run_out("logs/trainsets/table.log"),
    benchmark:
        bench("trainsets_table", "logs/trainsets/table.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:trainsets_table",
        run_label=config["run"]["label"],
    script:
        RUN


if TRAINSET_VARIANTS:
    TARGETS.extend(expand("results/trainsets/{variant}.parquet", variant=list(TRAINSET_VARIANTS)))
    TARGETS.append("results/tables/trainsets.csv")


# Every training set also in TRL's stepwise-supervision format (trainsets.export_trl; off by default).
rule export_trl:
    input:
        code("labels:export_trl"),
        table=run_in("results/trainsets/{variant}.parquet"),
    output:
        rows=run_out("results/trainsets/trl/{variant}.jsonl"),
    log:
        run_out("logs/trainsets/trl/{variant}.log"),
    benchmark:
        bench("export_trl", "logs/trainsets/trl/{variant}.log")
    wildcard_constraints:
        variant=plan.wildcard_alternatives(TRL_EXPORTS),
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="labels:export_trl",
        soft_threshold=lambda wc: TRL_EXPORTS[wc.variant],
    script:
        RUN


TARGETS.extend(expand("results/trainsets/trl/{variant}.jsonl", variant=list(TRL_EXPORTS)))


# The labelling judge scored as a ProcessBench critic with its own prompt (judge.template), on a stratified
# slice of the cases (judge.processbench_cases): reference-free and reference-guided on a constructed set,
# reference-free on the official one (plan.judge_processbench_settings); beside the structure baseline:
# how well the judge behind the judge/consensus labels and Figure 6's proxy finds first errors (lesson 2,
# prm_lessons.metrics.judge_processbench). Off with judge.processbench_cases 0.
JUDGE_PB_CASES = plan.judge_processbench_cases(config)
JUDGE_PB_SETTINGS = list(plan.judge_processbench_settings(config))

if JUDGE_PB_CASES:

    rule judge_processbench:
        input:
            code("labels:judge_processbench"),
            cases=run_in("results/processbench/cases.parquet"),
            model=model_input(JUDGE),
            template=run_in(plan.judge_template_input(config["judge"])),
        # every setting in one job: one engine start-up (~10 s on a 2-core host) for a few dozen cases each
        output:
            tables=run_out(
                expand(
                    "results/labels/judge_processbench/{setting}.parquet",
                    setting=JUDGE_PB_SETTINGS,
                )
            ),
        log:
            run_out("logs/labels/judge_processbench.log"),
        benchmark:
            bench("judge_processbench", "logs/labels/judge_processbench.log")
        conda:
            "../../envs/sampling.yaml"
        threads: engine_threads(JUDGE)
        resources:
            gpu=gpus(JUDGE),
            nodes=1,
            mem_mb=gpu_mem_mb(JUDGE),
            runtime=lambda wc, attempt: plan.runtime(config, 720, attempt),
        params:
            func="labels:judge_processbench",
            settings=JUDGE_PB_SETTINGS,
            judge=config["judge"],
            n_cases=JUDGE_PB_CASES,
            # the gold solutions of the cases' problems (reference-guided setting)
            constructed=config["processbench"].get("constructed"),
            model_entry=model_entry(config, JUDGE),
            model_dir=model_dir_param(JUDGE),
        script:
            RUN

    rule judge_processbench_table:
        input:
            code("labels:judge_processbench_table"),
            str(PKG / "published.yaml"),  # the paper judge's F1 in the lesson-2 text
            cases=run_in("results/processbench/cases.parquet"),
            tables=run_in(
                expand(
                    "results/labels/judge_processbench/{setting}.parquet",
                    setting=JUDGE_PB_SETTINGS,
                )
            ),
            structure=run_in("results/metrics/processbench/baseline_structure_predictions.parquet"),
        output:
            csv=run_out("results/tables/judge_processbench.csv"),
            metrics=run_out("results/metrics/judge_processbench.json"),
        log:
            run_out("logs/labels/judge_processbench_table.log"),
        benchmark:
            bench("judge_processbench_table", "logs/labels/judge_processbench_table.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="labels:judge_processbench_table",
            judge=config["judge"],
            processbench_eval=config["processbench_eval"],
            model=JUDGE,
            run_label=config["run"]["label"],
        script:
            RUN

    TARGETS.append("results/tables/judge_processbench.csv")
