# PRM training: one model per training-set variant (results/trainsets/{variant}.parquet, made by the
# labels stage) -> results/prms/{variant}/ (a Hugging Face directory loaded by training.load_prm) with
# train_metrics.json inside. Logic: prm_lessons.training.rule_train_prm.
# Resources come from config `training` (gpus, mem_mb, runtime, threads) because they differ by orders
# of magnitude between the embedded default (CPU, seconds) and the paper (8 GPUs, hours); cluster-site
# settings (partition, GPU model, CPUs per GPU) go in the profiles (profiles/default/profile.yaml).
import re
from pathlib import Path

from prm_lessons.labels.trainsets import variants as _train_variants  # noqa: E402

PRM_VARIANTS = _train_variants(config)  # name -> spec (source, label_type, threshold, datasets)
_TRAIN = dict(config["training"])
if _TRAIN.get("deepspeed") and not Path(_TRAIN["deepspeed"]).exists():
    # a relative path not found in the working directory is read from the workflow (config/deepspeed/...)
    _TRAIN["deepspeed"] = str(Path(workflow.basedir) / _TRAIN["deepspeed"])
# keys that change no result: kept out of params so editing them does not retrain every PRM
_TRAIN_PARAMS = {k: v for k, v in _TRAIN.items()
                 if k not in ("mem_mb", "runtime", "threads", "keep_checkpoints", "gpus_scoring")}


rule train_prm:
    input:
        pkg("training", "steps"),
        trainset="results/trainsets/{variant}.parquet",
        base=model_input(_TRAIN["base"]),
        deepspeed=[_TRAIN["deepspeed"]] if _TRAIN.get("deepspeed") else [],
    output:
        model=directory("results/prms/{variant}"),
        metrics="results/prms/{variant}/train_metrics.json",
    wildcard_constraints:
        variant="|".join(map(re.escape, PRM_VARIANTS)) or "(?!)",
    params:
        func="training:rule_train_prm",
        training=_TRAIN_PARAMS,
        # the converted embedded model is an input (path from it); a Hub id is loaded by the job itself
        base_dir=lambda wc, input: str(input.base[0]) if len(input.base) else model_dir(_TRAIN["base"]),
        label_type=lambda wc: PRM_VARIANTS[wc.variant]["label_type"],
        # outside the output directory: Snakemake empties that before a (re)run, checkpoints must survive
        checkpoint_dir=lambda wc: f"results/checkpoints/prms/{wc.variant}",
    threads: _TRAIN["threads"]
    resources:
        gpu=_TRAIN["gpus"],
        mem_mb=_TRAIN["mem_mb"],
        # a retry (after a timeout) gets more time: it resumes from the last checkpoint but may still need it
        runtime=lambda wc, attempt: int(_TRAIN["runtime"]) * attempt,
    log:
        "logs/training/{variant}.log",
    conda:
        "../../envs/training.yaml"
    script:
        RUN


TARGETS.extend(expand("results/prms/{variant}/train_metrics.json", variant=list(PRM_VARIANTS)))
