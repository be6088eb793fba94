# Data: problem tables (reasoning-gym / Hub / local files) and the ProcessBench cases.
# Logic: prm_lessons.data (load_problems, load_processbench, build_constructed_processbench).


def _dataset_spec(wc):
    """The config entry of a dataset named under `problems:` or `benchmarks:`."""
    for section in ("problems", "benchmarks"):
        if wc.dataset in (config.get(section) or {}):
            return config[section][wc.dataset]
    raise ValueError(f"dataset '{wc.dataset}' is not defined under `problems` or `benchmarks`")


def _local_path(spec):
    """A local source file is an input, so replacing it reruns the rule."""
    return [spec["path"]] if spec.get("source") == "local" and spec.get("path") else []


rule problems:
    input:
        pkg("data", "grading"),
        source=lambda wc: _local_path(_dataset_spec(wc)),
    output:
        problems="results/problems/{dataset}.parquet",
    params:
        func="data:rule_problems",
        spec=_dataset_spec,
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
        source=_local_path(config.get("processbench", {})),
    output:
        cases="results/processbench/cases.parquet",
    params:
        func="data:rule_processbench",
        spec=config.get("processbench", {}),
        # the constructed set is held out from the problems whose responses are trained on
        exclude=config.get("problems", {}) if config.get("processbench", {}).get("source") == "constructed" else {},
    log:
        "logs/processbench.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


TARGETS.append("results/processbench/cases.parquet")
