# Data: pinned source files (fetched once, checksummed), problem tables (reasoning-gym / Hub / local
# files / pinned files) and the ProcessBench cases.
# Logic: prm_lessons.data (fetch_file, load_problems, load_processbench, build_constructed_processbench).
from prm_lessons.data import dataset_spec, local_source_inputs, pinned_file_spec


# `source: url` entries: fetched once (login node: a local rule) and checksummed; file:// URLs and
# plain paths are copied, so an air-gapped site points `url` at its own copies.
rule benchmark_file:
    output:
        file="resources/data/benchmarks/{name}{ext}",
    wildcard_constraints:
        name=r"[A-Za-z0-9_\-]+",
        ext=r"\.jsonl\.gz|\.jsonl|\.json|\.parquet",
    params:
        func="data:rule_benchmark_file",
        spec=lambda wc: pinned_file_spec(dataset_spec(config, wc.name)),
    log:
        "logs/benchmark_file/{name}{ext}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule processbench_file:
    output:
        file="resources/data/processbench/{subset}{ext}",
    wildcard_constraints:
        subset=r"[A-Za-z0-9_\-]+",
        ext=r"\.jsonl\.gz|\.jsonl|\.json|\.parquet",
    params:
        func="data:rule_processbench_file",
        spec=pinned_file_spec(config.get("processbench", {})),
    log:
        "logs/processbench_file/{subset}{ext}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule problems:
    input:
        pkg("data", "grading"),
        source=lambda wc: local_source_inputs(dataset_spec(config, wc.dataset), wc.dataset),
    output:
        problems="results/problems/{dataset}.parquet",
    params:
        func="data:rule_problems",
        spec=lambda wc: dataset_spec(config, wc.dataset),
    log:
        "logs/problems/{dataset}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule processbench:
    input:
        pkg("data", "grading"),
        source=local_source_inputs(config.get("processbench")),
    output:
        cases="results/processbench/cases.parquet",
    params:
        func="data:rule_processbench",
        spec=config.get("processbench", {}),
        # the constructed set is held out from the problems whose responses are trained on
        exclude=(
            config.get("problems", {})
            if config.get("processbench", {}).get("source") == "constructed"
            else {}
        ),
    log:
        "logs/processbench.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


TARGETS.append("results/processbench/cases.parquet")
