# PRM training: one model per training-set variant (results/trainsets/{variant}.parquet, made by the
# labels stage; in full / LoRA modes tokenised first by rule tokenize_trainset) -> results/prms/{variant}/
# (a Hugging Face directory loaded by prm.load_prm) with train_metrics.json and the model card README.md
# inside. Logic: prm_lessons.rules.training.train_prm (prm_lessons.training.train).
# Resources come from config `training` (gpus, mem_mb, runtime, threads) because they differ by orders
# of magnitude between the embedded default (CPU, seconds) and the paper (8 GPUs, hours); nodes=1 and the
# SIGTERM grace are the rule's own, so they hold under any profile (also --workflow-profile none);
# cluster-site settings (partition, GPU model, CPUs per GPU) go in the profiles (profiles/default).


# Full and LoRA modes: the training set tokenised on one CPU (token ids, step positions, targets and the
# truncation counts) before the GPU job, which then reads it on every rank instead of tokenising there
# while its GPUs wait. Keyed on what changes the token ids (the base's tokenizer, step format, max_length,
# label_type): a learning-rate edit retrains without tokenising again. Head mode has no such job: its
# shared step features (rule step_features) already cover it. Logic: prm_lessons.training.tokens.
rule tokenize_trainset:
    input:
        code("training:tokenize_trainset"),
        trainset=run_in("results/trainsets/{variant}.parquet"),
        # the tokenizer only; the download (rule download_model) is the base's, shared with train_prm
        base=model_input(TRAIN["base"]),
    output:
        tokens=run_out("results/trainsets/tokens/{variant}.parquet"),
    log:
        run_out("logs/tokenize_trainset/{variant}.log"),
    benchmark:
        bench("tokenize_trainset", "logs/tokenize_trainset/{variant}.log")
    wildcard_constraints:
        variant=plan.wildcard_alternatives(TRAINSET_VARIANTS),
    conda:
        "../../envs/training.yaml"
    threads: 1
    resources:
        gpu=0,
        nodes=1,
        # the instances are held as Python lists before the write: the training's memory, at most one share
        mem_mb=min(TRAIN["mem_mb"], mem_mb_for(0)),
        runtime=lambda wc, attempt: plan.runtime(config, 60, attempt),
    params:
        func="training:tokenize_trainset",
        tokens=plan.token_params(config),
        base_dir=model_dir_param(TRAIN["base"], "base"),
        # the tokenizer's identity (source, id, revision): a new base tokenises again
        base_model=plan.training_base_model(config),
        label_type=lambda wc: TRAINSET_VARIANTS[wc.variant]["label_type"],
    script:
        RUN


rule train_prm:
    input:
        code("training:train_prm"),
        trainset=run_in("results/trainsets/{variant}.parquet"),
        base=model_input(TRAIN["base"]),
        deepspeed=run_in([TRAIN["deepspeed"]] if TRAIN.get("deepspeed") else []),
        # head mode, variants labelled on the sampled responses: the frozen base's features of those
        # responses, computed once for all of them (rule step_features), instead of each job's own pass
        features=run_in(lambda wc: plan.training_features_input(config, wc.variant)),
        # full / LoRA modes: the trainset's tokens (rule tokenize_trainset), read by every rank
        tokens=run_in(lambda wc: plan.training_tokens_input(config, wc.variant)),
    output:
        model=directory(run_out("results/prms/{variant}")),
        metrics=run_out("results/prms/{variant}/train_metrics.json"),
    log:
        run_out("logs/training/{variant}.log"),
    benchmark:
        bench("train_prm", "logs/training/{variant}.log")
    wildcard_constraints:
        variant=plan.wildcard_alternatives(TRAINSET_VARIANTS),
    conda:
        "../../envs/training.yaml"
    threads: TRAIN["threads"]
    resources:
        gpu=TRAIN["gpus"],
        # all its GPUs on one node: torchrun starts the processes on this node only
        nodes=1,
        mem_mb=TRAIN["mem_mb"],
        # a retry (after a timeout) gets more time: it resumes from the last checkpoint but may still need it
        runtime=lambda wc, attempt: plan.runtime(config, TRAIN["runtime"], attempt),
        # GPU training: SIGTERM a grace before the time limit, so the JIT checkpoint is written before the
        # kill and the retry resumes from it (plan.training_slurm_extra; "" on CPU)
        slurm_extra=plan.training_slurm_extra(config),
    params:
        func="training:train_prm",
        training=TRAIN_PARAMS,
        # the converted embedded model is an input (path from it); a Hub id is loaded by the job itself
        base_dir=model_dir_param(TRAIN["base"], "base"),
        # the base's source, id and revision, for the model card
        base_model=plan.training_base_model(config),
        label_type=lambda wc: TRAINSET_VARIANTS[wc.variant]["label_type"],
        # outside the output directory: Snakemake empties that before a (re)run, checkpoints must survive
        checkpoint_dir=lambda wc: run_out(f"results/checkpoints/prms/{wc.variant}"),
    script:
        RUN


TARGETS.extend(expand("results/prms/{variant}/train_metrics.json", variant=list(TRAINSET_VARIANTS)))


# Optional: each trained PRM uploaded to the Hugging Face Hub with its model card, which by then reports
# the PRM's evaluation (hub.upload, off by default). A local rule: the submit host has the network and the
# token (HF_TOKEN or `hf auth login`). Logic: prm_lessons.rules.training.upload_prm (prm_lessons.training.publish).
UPLOADS = plan.upload_repos(config)  # variant -> Hub repository id; {} when hub.upload is off

if UPLOADS:

    rule upload_prm:
        input:
            unpack(run_in(lambda wc: plan.upload_evaluation(config, wc.variant))),
            code("training:upload_prm"),
            model=run_in("results/prms/{variant}"),
            trainset=run_in("results/trainsets/{variant}.parquet"),
        output:
            receipt=run_out("results/uploads/{variant}.json"),
        log:
            run_out("logs/upload_prm/{variant}.log"),
        benchmark:
            bench("upload_prm", "logs/upload_prm/{variant}.log")
        wildcard_constraints:
            variant=plan.wildcard_alternatives(UPLOADS),
        localrule: True
        conda:
            "../../envs/training.yaml"
        params:
            func="training:upload_prm",
            repo_id=lambda wc: UPLOADS[wc.variant],
            private=config["hub"]["upload"]["private"],
            base_model=plan.training_base_model(config),
        script:
            RUN

    TARGETS.extend(expand("results/uploads/{variant}.json", variant=list(UPLOADS)))
