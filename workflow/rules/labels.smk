# Step labels for the sampled responses of every problem set under `problems:` — Monte Carlo
# estimation, LLM-as-a-judge, human labels, consensus filtering — and one training set per variant.
# Logic: prm_lessons.labels.{mc,judge,human,consensus,trainsets}. MC and the judge are sharded per
# problem set (mc.shards / judge.shards): a killed job loses only its shard.
import re

from prm_lessons.labels import trainsets as _ts  # noqa: E402

TRAINSET_VARIANTS = _ts.variants(config)
COMPLETER = _ts.role_model(config, "completer")
JUDGE = _ts.role_model(config, "judge")
HUMAN = config["human"]


rule mc:
    input:
        pkg("labels.__init__", "labels.mc", "generation", "grading", "steps"),
        samples="results/samples/{dataset}.parquet",
        model=model_input(COMPLETER),
    output:
        table="results/labels/mc/{dataset}/shard{shard}of{nshards}.parquet",
    params:
        func="labels.mc:rule_mc",
        mc=config["mc"],
        needs=_ts.label_needs(config),  # what the configured training sets need decided
        system_prompt=config["sampling"]["system_prompt"],
        separator=config["sampling"]["step_separator"],
        grading_timeout_s=config["grading"]["timeout_s"],
        grading_workers=config["grading"]["workers"],
        model_entry=model_entry(config, COMPLETER),
        model_dir=lambda wc, input: input.model[0] if len(input.model) else model_dir(COMPLETER),
    threads: engine_threads(COMPLETER, pool=config["grading"]["workers"])
    resources:
        gpu=gpus(COMPLETER),
        nodes=1,
        mem_mb=gpu_mem_mb(COMPLETER),
        runtime=lambda wc, attempt: 720 * attempt,
    log:
        "logs/labels/mc/{dataset}/shard{shard}of{nshards}.log",
    conda:
        "../../envs/sampling.yaml"
    script:
        RUN


rule judge:
    input:
        pkg("labels.__init__", "labels.judge", "labels.mc", "generation", "grading"),
        samples="results/samples/{dataset}.parquet",
        model=model_input(JUDGE),
        template=[config["judge"]["template_path"]] if config["judge"].get("template_path") else [],
    output:
        table="results/labels/judge/{dataset}/shard{shard}of{nshards}.parquet",
    params:
        func="labels.judge:rule_judge",
        judge=config["judge"],
        model_entry=model_entry(config, JUDGE),
        model_dir=lambda wc, input: input.model[0] if len(input.model) else model_dir(JUDGE),
    threads: engine_threads(JUDGE)
    resources:
        gpu=gpus(JUDGE),
        nodes=1,  # tensor parallelism over 4 GPUs needs them on one node
        mem_mb=gpu_mem_mb(JUDGE),
        runtime=lambda wc, attempt: 720 * attempt,
    log:
        "logs/labels/judge/{dataset}/shard{shard}of{nshards}.log",
    conda:
        "../../envs/sampling.yaml"
    script:
        RUN


rule merge_mc:
    input:
        pkg("labels.__init__", "labels.mc"),
        shards=lambda wc: _ts.label_shard_paths(config, "mc", wc.dataset),
    output:
        table="results/labels/mc/{dataset}.parquet",
    params:
        func="labels.mc:rule_merge_shards",
        kind="mc",
    log:
        "logs/labels/merge_mc/{dataset}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule merge_judge:
    input:
        pkg("labels.__init__", "labels.mc"),
        shards=lambda wc: _ts.label_shard_paths(config, "judge", wc.dataset),
    output:
        table="results/labels/judge/{dataset}.parquet",
    params:
        func="labels.mc:rule_merge_shards",
        kind="judge",
    log:
        "logs/labels/merge_judge/{dataset}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule human_labels:
    input:
        pkg("labels.__init__", "labels.human", "data"),
        problems=[f"results/problems/{d}.parquet" for d in config.get("problems") or {}]
        if HUMAN["source"] == "construction" else [],
        eval_sets=_ts.eval_set_paths(config),
        local=[HUMAN["prm800k"]["path"]]
        if HUMAN["source"] == "prm800k" and HUMAN["prm800k"]["source"] == "local" else [],
    output:
        table="results/labels/human.parquet",
    params:
        func="labels.human:rule_human",
        human=HUMAN,
    log:
        "logs/labels/human.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule consensus:
    input:
        pkg("labels.__init__", "labels.consensus", "labels.mc"),
        mc="results/labels/mc/{dataset}.parquet",
        judge="results/labels/judge/{dataset}.parquet",
    output:
        table="results/labels/consensus/{dataset}.parquet",
    params:
        func="labels.consensus:rule_consensus",
        consensus=config["consensus"],
        k=config["mc"]["completions"],
    log:
        "logs/labels/consensus/{dataset}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule trainset:
    input:
        pkg("labels.__init__", "labels.trainsets", "labels.mc"),
        unpack(lambda wc: _ts.trainset_inputs(config, wc.variant)),
    output:
        table="results/trainsets/{variant}.parquet",
        stats="results/trainsets/{variant}.json",
    params:
        func="labels.trainsets:rule_trainset",
        variant=lambda wc: wc.variant,
        spec=lambda wc: TRAINSET_VARIANTS[wc.variant],
        k=config["mc"]["completions"],
        run=config["run"],
    wildcard_constraints:
        variant="|".join(map(re.escape, TRAINSET_VARIANTS)) or "NO_VARIANTS",
    log:
        "logs/trainsets/{variant}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule trainsets_table:
    input:
        pkg("labels.__init__", "labels.trainsets"),
        stats=expand("results/trainsets/{variant}.json", variant=list(TRAINSET_VARIANTS)),
    output:
        csv="results/tables/trainsets.csv",
    params:
        func="labels.trainsets:rule_trainsets_table",
        run_label=config["run"]["label"],
    log:
        "logs/trainsets/table.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


if TRAINSET_VARIANTS:
    TARGETS.extend(expand("results/trainsets/{variant}.parquet", variant=list(TRAINSET_VARIANTS)))
    TARGETS.append("results/tables/trainsets.csv")
