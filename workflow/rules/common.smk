# Shared helpers: config validation (before any job), package-code inputs, target collection.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # works from a checkout without install
from prm_lessons.config import validate_config, model_entry, hub_models_dir, model_path as _model_path  # noqa: E402
from prm_lessons.sampling import samples_per_problem  # noqa: E402

config = validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")

RUN = "../scripts/run.py"  # script: paths are relative to this .smk file
PKG = Path(workflow.basedir) / "src/prm_lessons"
TARGETS = []  # each stage .smk extends this; rule all takes it

wildcard_constraints:
    dataset=r"[A-Za-z0-9_\-]+",
    shard=r"\d+",
    nshards=r"\d+",
    variant=r"[A-Za-z0-9_\-\.]+",
    prm=r"[A-Za-z0-9_\-\.]+",


def pkg(*modules):
    """Package source files a rule imports, declared as input so editing them reruns the rule."""
    return [str(PKG / f"{m.replace('.', '/')}.py") for m in ("__init__", "config", "tables", *modules)]


def model_dir(role_or_name):
    """Directory a rule loads a model from (built by rule embedded_model or download_model)."""
    return _model_path(config, role_or_name)


def model_input(role_or_name):
    """Input for rules that need a model: the directory rule embedded_model or download_model makes
    (so the download runs on the submit host before any GPU job); nothing for `source: local`."""
    entry = model_entry(config, role_or_name)
    return [_model_path(config, role_or_name)] if entry["source"] in ("embedded", "hub") else []


def sample_shards(wc):
    """The shard files of one problem set (sampling.shards jobs)."""
    n = int(config["sampling"]["shards"])
    return [f"results/samples/{wc.dataset}/shard{i}of{n}.parquet" for i in range(n)]


def gpus(role_or_name):
    """GPUs a model's jobs ask for: its `gpus` key, else its tensor-parallel size; none for the CPU-only
    embedded model."""
    entry = model_entry(config, role_or_name)
    if entry["source"] == "embedded":
        return 0
    return int(entry["gpus"]) if entry.get("gpus") is not None else int(entry.get("tensor_parallel_size", 1))


def mem_mb_for(n_gpus, per_gpu=64000):
    """Host memory of a job on n GPUs: 64 GB per GPU (a 72B TP-4 job: 256 GB), within the per-GPU share
    of a standard 4- or 8-GPU node; a CPU-only job gets one share."""
    return per_gpu * max(1, int(n_gpus))


def gpu_mem_mb(role_or_name):
    """Host memory of a model's jobs (mem_mb_for its GPUs)."""
    return mem_mb_for(gpus(role_or_name))


def engine_threads(role_or_name, pool=0):
    """CPUs of a vLLM job (sbatch --cpus-per-task): the rule's process, vLLM's engine core, one worker
    per GPU, and `pool` grading processes. The embedded CPU model keeps 2 (the 2-core default)."""
    n = gpus(role_or_name)
    return 2 if n == 0 else 2 + n + int(pool)


def features_input(prm, source):
    """Head-only trained PRMs: the frozen base's step features of results/{source}.parquet (rule
    step_features; SHARED_FEATURES and PRM_SPECS are set in evaluation.smk)."""
    return [f"results/features/{source}.safetensors"] if SHARED_FEATURES and PRM_SPECS[prm]["trained"] else []


def scoring_gpus(prm):
    """GPUs of a scoring job: none when only a head is applied to stored features; a trained PRM gets
    training.gpus_scoring, else its base model's tensor-parallel size (load_prm spreads it over them)."""
    if features_input(prm, "x"):
        return 0
    if PRM_SPECS[prm]["trained"]:
        asked = config["training"].get("gpus_scoring")
        return int(asked) if asked is not None else gpus(config["training"]["base"])
    return gpus(PRM_SPECS[prm]["model"])
