# The arithmetic process checker (no model, seconds each): exact step verdicts on the primary policy's
# samples, validated on the constructed ProcessBench cases (exact truth), and Best-of-N with it (pass@N
# ceiling, checker-selected). Only where the data is arithmetic: process_check.enabled.
# Rule functions: prm_lessons.rules.process_check; logic: prm_lessons.labels.process_check, prm_lessons.metrics.checker.


if PROCESS_CHECK:

    rule process_check_labels:
        input:
            code("process_check:process_check_labels"),
            samples=run_in("results/samples/{dataset}.parquet"),
        output:
            table=run_out("results/labels/checker/{dataset}.parquet"),
        log:
            run_out("logs/labels/checker/{dataset}.log"),
        benchmark:
            bench("process_check_labels", "logs/labels/checker/{dataset}.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="process_check:process_check_labels",
        script:
            RUN

    rule process_check_validation:
        input:
            code("process_check:process_check_validation"),
            cases=run_in("results/processbench/cases.parquet"),
        output:
            csv=run_out("results/tables/process_check.csv"),
        log:
            run_out("logs/process_check/validation.log"),
        benchmark:
            bench("process_check_validation", "logs/process_check/validation.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="process_check:process_check_validation",
            run_label=config["run"]["label"],
        script:
            RUN

    rule process_check_bon:
        input:
            code("process_check:process_check_bon"),
            samples=run_in([f"results/samples/{b}.parquet" for b in BON_BENCHMARKS]),
            checks=run_in([f"results/labels/checker/{b}.parquet" for b in BON_BENCHMARKS]),
        output:
            csv=run_out("results/tables/process_check_bon.csv"),
        log:
            run_out("logs/process_check/bon.log"),
        benchmark:
            bench("process_check_bon", "logs/process_check/bon.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="process_check:process_check_bon",
            benchmarks=BON_BENCHMARKS,
            n=config["bon"]["n"],
            run_label=config["run"]["label"],
        script:
            RUN

    TARGETS.extend(["results/tables/process_check_bon.csv"])
    if (config.get("processbench") or {}).get("source") == "constructed":
        TARGETS.append("results/tables/process_check.csv")
