# Step labels for the sampled responses of every problem set under `problems:` — Monte Carlo
# estimation, LLM-as-a-judge, human labels, consensus filtering — and one training set per variant.
# Logic: prm_lessons.labels.{mc,judge,human,consensus,trainsets}. MC and the judge are sharded per
# problem set (mc.shards / judge.shards): a killed job loses only its shard.
import re

from prm_lessons.labels.trainsets import (  # noqa: E402
    label_needs as _label_needs,
    variant_datasets as _variant_datasets,
    variants as _trainset_variants,
)

TRAINSET_VARIANTS = _trainset_variants(config)
_LABEL_CODE = ("labels.__init__",)


def _role(role):
    """Model name for a role; completer and judge default to the policy."""
    roles = config["roles"]
    return roles.get(role) or roles["policy"]


def _label_shards(kind):
    def shards(wc):
        n = int(config[kind]["shards"])
        return [f"results/labels/{kind}/{wc.dataset}/shard{i}of{n}.parquet" for i in range(n)]

    return shards


def _eval_sets():
    """Every evaluation problem set, for decontaminating human labels."""
    paths = [f"results/problems/{b}.parquet" for b in config.get("benchmarks") or {}]
    if config.get("processbench"):
        paths.append("results/processbench/cases.parquet")
    return paths


rule mc:
    input:
        pkg(*_LABEL_CODE, "labels.mc", "generation", "grading", "steps"),
        samples="results/samples/{dataset}.parquet",
        model=model_input(_role("completer")),
    output:
        table="results/labels/mc/{dataset}/shard{shard}of{nshards}.parquet",
    params:
        func="labels.mc:rule_mc",
        mc=config["mc"],
        needs=_label_needs(config),  # what the configured training sets need decided
        system_prompt=config["sampling"]["system_prompt"],
        separator=config["sampling"]["step_separator"],
        grading_timeout_s=config["grading"]["timeout_s"],
        grading_workers=config["grading"]["workers"],
        model_entry=model_entry(config, _role("completer")),
        model_dir=model_dir(_role("completer")),
    threads: 2
    resources:
        gpu=gpus(_role("completer")),
    log:
        "logs/labels/mc/{dataset}/shard{shard}of{nshards}.log",
    conda:
        "../../envs/sampling.yaml"
    script:
        RUN


rule judge:
    input:
        pkg(*_LABEL_CODE, "labels.judge", "labels.mc", "generation", "grading"),
        samples="results/samples/{dataset}.parquet",
        model=model_input(_role("judge")),
        template=[config["judge"]["template_path"]] if config["judge"].get("template_path") else [],
    output:
        table="results/labels/judge/{dataset}/shard{shard}of{nshards}.parquet",
    params:
        func="labels.judge:rule_judge",
        judge=config["judge"],
        model_entry=model_entry(config, _role("judge")),
        model_dir=model_dir(_role("judge")),
    threads: 2
    resources:
        gpu=gpus(_role("judge")),
    log:
        "logs/labels/judge/{dataset}/shard{shard}of{nshards}.log",
    conda:
        "../../envs/sampling.yaml"
    script:
        RUN


rule merge_mc:
    input:
        pkg(*_LABEL_CODE, "labels.mc"),
        shards=_label_shards("mc"),
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
        pkg(*_LABEL_CODE, "labels.mc"),
        shards=_label_shards("judge"),
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
        pkg(*_LABEL_CODE, "labels.human", "data"),
        problems=[f"results/problems/{d}.parquet" for d in config.get("problems") or {}]
        if config["human"]["source"] == "construction" else [],
        eval_sets=_eval_sets(),
        local=[config["human"]["prm800k"]["path"]]
        if config["human"]["source"] == "prm800k" and config["human"]["prm800k"]["source"] == "local" else [],
    output:
        table="results/labels/human.parquet",
    params:
        func="labels.human:rule_human",
        human=config["human"],
    log:
        "logs/labels/human.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule consensus:
    input:
        pkg(*_LABEL_CODE, "labels.consensus", "labels.mc"),
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


def _trainset_inputs(wc):
    spec = TRAINSET_VARIANTS[wc.variant]
    src = spec["source"]
    if src == "human":
        return {"human": "results/labels/human.parquet"}
    ds = _variant_datasets(config, wc.variant)
    inputs = {"samples": [f"results/samples/{d}.parquet" for d in ds]}
    if src in ("mc", "consensus"):
        inputs["mc"] = [f"results/labels/mc/{d}.parquet" for d in ds]
    if src == "judge":
        inputs["judge"] = [f"results/labels/judge/{d}.parquet" for d in ds]
    if src == "consensus":
        inputs["consensus"] = [f"results/labels/consensus/{d}.parquet" for d in ds]
    return inputs


rule trainset:
    input:
        pkg(*_LABEL_CODE, "labels.trainsets", "labels.mc"),
        unpack(_trainset_inputs),
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
        pkg(*_LABEL_CODE, "labels.trainsets"),
        stats=expand("results/trainsets/{variant}.json", variant=list(TRAINSET_VARIANTS)),
    output:
        csv="results/tables/trainsets.csv",
    params:
        func="labels.trainsets:rule_trainsets_table",
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
