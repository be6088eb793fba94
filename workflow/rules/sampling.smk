# Policy sampling (sharded; one job per shard, then a merge) and the Best-of-N baselines.


rule sample:
    input:
        code("sampling:sample"),
        problems="results/problems/{dataset}.parquet",
        model=model_input("policy"),
    output:
        samples="results/samples/{dataset}/shard{shard}of{nshards}.parquet",
    log:
        "logs/sample/{dataset}/shard{shard}of{nshards}.log",
    conda:
        "../../envs/sampling.yaml"
    threads: engine_threads("policy", pool=config["grading"]["workers"])
    resources:
        gpu=gpus("policy"),
        nodes=1,  # a multi-GPU request must not be split over nodes: one process drives all GPUs
        mem_mb=gpu_mem_mb("policy"),
        runtime=lambda wc, attempt: 240 * attempt,
    params:
        func="sampling:sample",
        # only what the job reads, so an unrelated config edit does not resample
        sampling=config["sampling"],
        grading=config["grading"],
        model=model_entry(config, "policy"),
        model_dir=model_dir_param("policy"),
        n=lambda wc: plan.samples_per_problem(config, wc.dataset),
    script:
        RUN


rule merge_samples:
    input:
        code("sampling:merge_samples"),
        shards=sample_shards,
    output:
        samples="results/samples/{dataset}.parquet",
    log:
        "logs/merge_samples/{dataset}.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="sampling:merge_samples",
    script:
        RUN


rule bon_baselines:
    input:
        code("sampling:bon_baselines"),
        samples=expand("results/samples/{dataset}.parquet", dataset=list(config["benchmarks"])),
    output:
        table="results/tables/bon_baselines.csv",
    log:
        "logs/bon_baselines.log",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="sampling:bon_baselines",
        n=config.get("bon", {}).get("n"),
        maj_grouping=config.get("bon", {}).get("maj_grouping", "normalized"),
        run_label=config["run"]["label"],
    script:
        RUN


TARGETS.append("results/tables/bon_baselines.csv")
