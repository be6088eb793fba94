# Policy sampling (sharded; one job per shard, then a merge) and the Best-of-N baselines.


rule sample:
    input:
        pkg("generation", "sampling", "steps", "grading"),
        problems="results/problems/{dataset}.parquet",
        model=model_input("policy"),
    output:
        samples="results/samples/{dataset}/shard{shard}of{nshards}.parquet",
    params:
        func="sampling:rule_sample_shard",
        # only what the job reads, so an unrelated config edit does not resample
        sampling=config["sampling"],
        grading=config["grading"],
        model=model_entry(config, "policy"),
        model_dir=lambda wc, input: input.model[0] if len(input.model) else model_dir("policy"),
        n=lambda wc: samples_per_problem(config, wc.dataset),
    threads: engine_threads("policy", pool=config["grading"]["workers"])
    resources:
        gpu=gpus("policy"),
        nodes=1,  # a multi-GPU request must not be split over nodes: one process drives all GPUs
        mem_mb=gpu_mem_mb("policy"),
        runtime=lambda wc, attempt: 240 * attempt,
    log:
        "logs/sample/{dataset}/shard{shard}of{nshards}.log",
    conda:
        "../../envs/sampling.yaml"
    script:
        RUN


rule merge_samples:
    input:
        pkg("sampling"),
        shards=sample_shards,
    output:
        samples="results/samples/{dataset}.parquet",
    params:
        func="sampling:rule_merge_samples",
    log:
        "logs/merge_samples/{dataset}.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule bon_baselines:
    input:
        pkg("sampling"),
        samples=expand("results/samples/{dataset}.parquet", dataset=list(config["benchmarks"])),
    output:
        table="results/tables/bon_baselines.csv",
    params:
        func="sampling:rule_bon_baselines",
        n=config.get("bon", {}).get("n"),
        run_label=config["run"]["label"],
    log:
        "logs/bon_baselines.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


TARGETS.append("results/tables/bon_baselines.csv")
