# The label audit (`audit:`): MC, the LLM judge and their consensus on constructed solutions whose every
# step's truth is known (both generators x gold / answer-changing error / answer-keeping error), against
# that truth. With trainsets.responses: constructed these solutions are also the one pool every label
# source's training set is cut from (rule trainset). Rule functions: prm_lessons.rules.audit; logic:
# prm_lessons.labels.{audit_slice,audit}. The model job keeps every MC completion up to each solution's
# first step without a success, so the analysis reads every threshold and K' from the same completions;
# the analysis is a CPU rule of its own (changing it reruns no model call).
AUDIT = config["audit"]
AUDIT_SHARDS = plan.audit_shard_paths(config)


rule audit_slice:
    input:
        code("audit:audit_slice"),
        eval_sets=run_in(plan.eval_set_paths(config)),  # no evaluation question enters the slice
    output:
        table=run_out("results/labels/audit/slice.parquet"),
    log:
        run_out("logs/labels/audit/slice.log"),
    benchmark:
        bench("audit_slice", "logs/labels/audit/slice.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="audit:audit_slice",
        audit={k: AUDIT[k] for k in ("per_cell", "seed", "problems")},
    script:
        RUN


# one engine for MC and the judge: on CPU an engine start costs as much as the judge's work
rule audit_labels:
    input:
        code("audit:audit_labels"),
        slice=run_in("results/labels/audit/slice.parquet"),
        model=model_input(COMPLETER),
        template=run_in(plan.judge_template_input(config["judge"]) if AUDIT["judge"] else []),
    output:
        table=run_out("results/labels/audit/labels/shard{shard}of{nshards}.parquet"),
    log:
        run_out("logs/labels/audit/labels/shard{shard}of{nshards}.log"),
    benchmark:
        bench("audit_labels", "logs/labels/audit/labels/shard{shard}of{nshards}.log")
    conda:
        "../../envs/sampling.yaml"
    threads: engine_threads(COMPLETER, pool=config["grading"]["workers"])
    resources:
        gpu=gpus(COMPLETER),
        nodes=1,
        mem_mb=gpu_mem_mb(COMPLETER),
        runtime=lambda wc, attempt: plan.runtime(config, 720, attempt),
    params:
        func="audit:audit_labels",
        k=AUDIT["completions"],
        # only the settings the job uses: e.g. mc.protocol or judge.shards rerun no audit
        mc=plan.stable_params(
            {k: config["mc"][k] for k in ("temperature", "top_p", "max_tokens", "seed", "last_step", "lanes")}
        ),
        judge={k: v for k, v in config["judge"].items() if k != "shards"} if AUDIT["judge"] else None,
        system_prompt=config["sampling"]["system_prompt"],
        separator=config["sampling"]["step_separator"],
        grading_timeout_s=config["grading"]["timeout_s"],
        grading_workers=config["grading"]["workers"],
        model_entry=model_entry(config, COMPLETER),
        model_dir=model_dir_param(COMPLETER),
    script:
        RUN


rule label_audit:
    input:
        code("audit:label_audit"),
        slice=run_in("results/labels/audit/slice.parquet"),
        shards=run_in(AUDIT_SHARDS),
    output:
        csv=run_out("results/tables/label_audit.csv"),
    log:
        run_out("logs/labels/audit/label_audit.log"),
    benchmark:
        bench("label_audit", "logs/labels/audit/label_audit.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="audit:label_audit",
        k=AUDIT["completions"],
        consensus_threshold=config["consensus"]["threshold"],
        run_label=config["run"]["label"],
    script:
        RUN


# the constructed pool of the training sets (trainsets.responses: constructed) is the audit's slice
if AUDIT["enabled"] or plan.pool_responses(config):
    TARGETS.append("results/tables/label_audit.csv")
