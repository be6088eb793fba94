# Data: pinned source files (fetched once, checksummed), problem tables (reasoning-gym / Hub / local
# files / pinned files) and the ProcessBench cases.
# Rule functions: prm_lessons.rules.data; logic: prm_lessons.data (sources.fetch_file, problems.load_problems,
# processbench.load_processbench, processbench.constructed_processbench) and prm_lessons.corruption (error injection).


# `source: url` entries: fetched once (login node: a local rule) and checksummed; file:// URLs and
# plain paths are copied, so an air-gapped site points `url` at its own copies.
rule benchmark_file:
    output:
        file="resources/data/benchmarks/{name}{ext}",
    log:
        "logs/benchmark_file/{name}{ext}.log",
    benchmark:
        bench("benchmark_file", "logs/benchmark_file/{name}{ext}.log")
    wildcard_constraints:
        name=r"[A-Za-z0-9_\-]+",
        ext=r"\.jsonl\.gz|\.jsonl|\.json|\.parquet",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="data:benchmark_file",
        spec=lambda wc: plan.pinned_file_spec(plan.dataset_spec(config, wc.name)),
    script:
        RUN


# a dataset's `prompt.fewshot` file (the Qwen2.5-Math harness's evaluation/examples.py at the pinned
# commit): its few-shot demonstrations go into the policy's user turn (prm_lessons.fewshot)
rule fewshot_file:
    output:
        file="resources/data/fewshot/{name}{ext}",
    log:
        "logs/fewshot_file/{name}{ext}.log",
    benchmark:
        bench("fewshot_file", "logs/fewshot_file/{name}{ext}.log")
    wildcard_constraints:
        name=r"[A-Za-z0-9_\-]+",
        ext=r"\.py|\.json",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="data:fewshot_file",
        spec=lambda wc: plan.fewshot_spec(config, wc.name),
    script:
        RUN


rule processbench_file:
    output:
        file="resources/data/processbench/{subset}{ext}",
    log:
        "logs/processbench_file/{subset}{ext}.log",
    benchmark:
        bench("processbench_file", "logs/processbench_file/{subset}{ext}.log")
    wildcard_constraints:
        subset=r"[A-Za-z0-9_\-]+",
        ext=r"\.jsonl\.gz|\.jsonl|\.json|\.parquet",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="data:processbench_file",
        spec=plan.pinned_file_spec(config.get("processbench", {})),
    script:
        RUN


# ProcessBench's critique_template.txt for critics with `template: official` (critics.official_template:
# a URL at a pinned commit and its checksums; the text is not shipped with the project)
rule critique_template:
    output:
        file=plan.OFFICIAL_CRITIC_TEMPLATE,
    log:
        "logs/critique_template.log",
    benchmark:
        bench("critique_template", "logs/critique_template.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="data:critique_template",
        spec=config["critics"]["official_template"],
    script:
        RUN


# The labelling judge's prompt as the paper prints it (App. C), for judge.template paper_app_c: the
# paper's source (judge.paper_template: the arXiv e-print at a pinned version, or a site's own copy)
# fetched and checksummed, the prompt read out of its LaTeX (prm_lessons.labels.paper_prompt); never shipped
rule judge_template:
    input:
        code("data:judge_template"),  # not a plain download: the prompt is read out of the source
    output:
        file=plan.JUDGE_PAPER_TEMPLATE,
    log:
        "logs/judge_template.log",
    benchmark:
        bench("judge_template", "logs/judge_template.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="data:judge_template",
        spec=config["judge"]["paper_template"],
    script:
        RUN


rule problems:
    input:
        code("data:problems"),
        source=lambda wc: plan.local_source_inputs(plan.dataset_spec(config, wc.dataset), wc.dataset),
        fewshot=lambda wc: plan.fewshot_inputs(plan.dataset_spec(config, wc.dataset), wc.dataset),
    output:
        problems="results/problems/{dataset}.parquet",
    log:
        "logs/problems/{dataset}.log",
    benchmark:
        bench("problems", "logs/problems/{dataset}.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="data:problems",
        spec=lambda wc: plan.dataset_spec(config, wc.dataset),
    script:
        RUN


rule processbench:
    input:
        code("data:processbench"),
        source=plan.local_source_inputs(config.get("processbench")),
    output:
        cases="results/processbench/cases.parquet",
    log:
        "logs/processbench.log",
    benchmark:
        bench("processbench", "logs/processbench.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="data:processbench",
        spec=config.get("processbench", {}),
        # the constructed set is held out from the problems whose responses are trained on
        exclude=(config.get("problems", {}) if config.get("processbench", {}).get("source") == "constructed" else {}),
    script:
        RUN


if PB_DEV:

    rule processbench_dev:
        # the dev split of a constructed ProcessBench: thresholds and the structure baseline are fitted here
        input:
            code("data:processbench_dev"),
        output:
            cases=plan.PROCESSBENCH_DEV,
        log:
            "logs/processbench_dev.log",
        benchmark:
            bench("processbench_dev", "logs/processbench_dev.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="data:processbench_dev",
            spec=config["processbench"],
            exclude=config.get("problems", {}),
        script:
            RUN


TARGETS.append("results/processbench/cases.parquet")
