# Data: pinned source files (fetched once, checksummed), problem tables (reasoning-gym / Hub / local
# files / pinned files), the ProcessBench cases and the PRMBench cases (prmbench.enabled).
# Rule functions: prm_lessons.rules.data; logic: prm_lessons.data (sources.fetch_file, problems.load_problems,
# processbench.load_processbench, processbench.constructed_processbench, prmbench) and prm_lessons.labels.construction
# (error injection).


# `source: url` entries: fetched once (login node: a local rule) and checksummed; file:// URLs and
# plain paths are copied, so an air-gapped site points `url` at its own copies.
rule benchmark_file:
    output:
        file=run_out("resources/data/benchmarks/{name}{ext}"),
    log:
        run_out("logs/benchmark_file/{name}{ext}.log"),
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
# commit): its few-shot demonstrations go into the policy's user turn (prm_lessons.generation.fewshot)
rule fewshot_file:
    output:
        file=run_out("resources/data/fewshot/{name}{ext}"),
    log:
        run_out("logs/fewshot_file/{name}{ext}.log"),
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
        file=run_out("resources/data/processbench/{subset}{ext}"),
    log:
        run_out("logs/processbench_file/{subset}{ext}.log"),
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
        file=run_out(plan.OFFICIAL_CRITIC_TEMPLATE),
    log:
        run_out("logs/critique_template.log"),
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
        file=run_out(plan.JUDGE_PAPER_TEMPLATE),
    log:
        run_out("logs/judge_template.log"),
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
        source=run_in(lambda wc: plan.local_source_inputs(plan.dataset_spec(config, wc.dataset), wc.dataset)),
        fewshot=run_in(lambda wc: plan.fewshot_inputs(plan.dataset_spec(config, wc.dataset), wc.dataset)),
    output:
        problems=run_out("results/problems/{dataset}.parquet"),
    log:
        run_out("logs/problems/{dataset}.log"),
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
        source=run_in(plan.local_source_inputs(config.get("processbench"))),
    output:
        cases=run_out("results/processbench/cases.parquet"),
    log:
        run_out("logs/processbench.log"),
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
            cases=run_out(plan.PROCESSBENCH_DEV),
        log:
            run_out("logs/processbench_dev.log"),
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


# PRMBench (prmbench.enabled): the pinned file (source url) and its cases, or the constructed stand-in
# (prm_lessons.data.prmbench); scored in evaluation.smk
if plan.prmbench_enabled(config):

    if config["prmbench"]["source"] == "url":

        rule prmbench_file:
            # fetched once (login node: a local rule) and checksummed; a file:// URL or plain path is copied
            output:
                file=run_out("resources/data/prmbench/prmbench{ext}"),
            log:
                run_out("logs/prmbench_file/prmbench{ext}.log"),
            benchmark:
                bench("prmbench_file", "logs/prmbench_file/prmbench{ext}.log")
            wildcard_constraints:
                ext=r"\.jsonl\.gz|\.jsonl|\.json|\.parquet",
            localrule: True
            conda:
                "../../envs/analysis.yaml"
            params:
                func="data:prmbench_file",
                spec=plan.pinned_file_spec(config["prmbench"]),
            script:
                RUN

    rule prmbench:
        input:
            code("data:prmbench"),
            source=run_in(plan.prmbench_source_inputs(config)),
        output:
            cases=run_out(plan.PRMBENCH_CASES),
        log:
            run_out("logs/prmbench.log"),
        benchmark:
            bench("prmbench", "logs/prmbench.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="data:prmbench",
            spec=config["prmbench"],
            # the stand-in: the held-out pool of the constructed ProcessBench, minus the training problems
            pool=plan.prmbench_pool(config),
            exclude=config.get("problems", {}) if config["prmbench"]["source"] == "constructed" else {},
        script:
            RUN


TARGETS.append("results/processbench/cases.parquet")
