# Data: problem tables (reasoning-gym / Hub / local files) and the ProcessBench cases.
# Logic: prm_lessons.data (load_problems, load_processbench, build_constructed_processbench).
from prm_lessons.data import dataset_spec, local_source_inputs


rule problems:
    input:
        pkg("data", "grading"),
        source=lambda wc: local_source_inputs(dataset_spec(config, wc.dataset)),
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
