# Policy sampling (sharded; one job per shard, then a merge), grading and the Best-of-N baselines. One rule
# for every policy (bon.policies): the `policy_dir` wildcard is empty for the primary (results/samples/,
# which the training problems share) and policies/{name}/ for another; a benchmark is sampled once, at the
# largest N evaluated on it (plan.sample_n). The training problem sets in results/samples/ are sampled by the
# data policy (data_policies; by default the primary itself: plan.sampler). The GPU jobs write ungraded
# responses (results/responses/, what scoring reads); a local CPU rule grades them into results/samples/
# (what metrics and labels read), so a grading fix re-samples and rescores nothing.


rule sample:
    input:
        code("sampling:sample"),
        problems=run_in("results/problems/{dataset}.parquet"),
        model=lambda wc: model_input(policy_model(wc)),
    output:
        responses=run_out("results/{policy_dir}responses/{dataset}/shard{shard}of{nshards}.parquet"),
    log:
        run_out("logs/sample/{policy_dir}{dataset}/shard{shard}of{nshards}.log"),
    benchmark:
        bench("sample", "logs/sample/{policy_dir}{dataset}/shard{shard}of{nshards}.log")
    conda:
        "../../envs/sampling.yaml"
    threads: lambda wc: engine_threads(policy_model(wc))
    resources:
        gpu=lambda wc: gpus(policy_model(wc)),
        nodes=1,  # a multi-GPU request must not be split over nodes: one process drives all GPUs
        mem_mb=lambda wc: gpu_mem_mb(policy_model(wc)),
        runtime=lambda wc, attempt: plan.runtime(config, 240, attempt),
    params:
        func="sampling:sample",
        # only what the job reads, so an unrelated config edit does not resample
        sampling=lambda wc: plan.stable_params(sampler(wc)["sampling"]),
        model=lambda wc: model_entry(config, policy_model(wc)),
        model_dir=model_dir_param(policy_model),
        n=lambda wc: plan.samples_per_problem(config, wc.dataset, policy_of(wc)),
        limit=lambda wc: sampler(wc)["limit"],
    script:
        RUN


rule merge_samples:
    input:
        code("sampling:merge_samples"),
        shards=run_in(sample_shards),
    output:
        responses=run_out("results/{policy_dir}responses/{dataset}.parquet"),
    log:
        run_out("logs/merge_samples/{policy_dir}{dataset}.log"),
    benchmark:
        bench("merge_samples", "logs/merge_samples/{policy_dir}{dataset}.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="sampling:merge_samples",
    script:
        RUN


rule grade_samples:
    # the dataset's answer format is the problems table's metadata (its config entry)
    input:
        code("sampling:grade_samples"),
        responses=run_in("results/{policy_dir}responses/{dataset}.parquet"),
        problems=run_in("results/problems/{dataset}.parquet"),
    output:
        samples=run_out("results/{policy_dir}samples/{dataset}.parquet"),
    log:
        run_out("logs/grade_samples/{policy_dir}{dataset}.log"),
    benchmark:
        bench("grade_samples", "logs/grade_samples/{policy_dir}{dataset}.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    threads: config["grading"]["workers"]
    params:
        func="sampling:grade_samples",
        grading=config["grading"],
    script:
        RUN


rule bon_baselines:
    input:
        code("sampling:bon_baselines"),
        samples=run_in([plan.policy_path(config, p, f"samples/{b}.parquet") for p, b, _ in BON_EVALUATIONS]),
    output:
        table=run_out("results/tables/bon_baselines.csv"),
    log:
        run_out("logs/bon_baselines.log"),
    benchmark:
        bench("bon_baselines", "logs/bon_baselines.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="sampling:bon_baselines",
        # (policy, benchmark, every N evaluated on it), parallel to the samples
        evaluations=[list(e) for e in BON_EVALUATIONS],
        maj_grouping=config.get("bon", {}).get("maj_grouping", "harness"),
        run_label=config["run"]["label"],
    script:
        RUN


TARGETS.append("results/tables/bon_baselines.csv")
