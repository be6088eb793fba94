# Shared helpers: config validation (before any job), package-code inputs, target collection.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # works from a checkout without install
from prm_lessons.config import validate_config, model_entry, model_path as _model_path  # noqa: E402
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
    """Directory a rule loads a model from (embedded models are built by rule embedded_model)."""
    return _model_path(config, role_or_name)


def model_input(role_or_name):
    """Input for rules that need a model: the converted directory for embedded models, nothing for Hub ids."""
    path = _model_path(config, role_or_name)
    return [path] if path.startswith("resources/") else []


def sample_shards(wc):
    """The shard files of one problem set (sampling.shards jobs)."""
    n = int(config["sampling"]["shards"])
    return [f"results/samples/{wc.dataset}/shard{i}of{n}.parquet" for i in range(n)]


def gpus(role_or_name):
    """GPUs a model's jobs ask for: its tensor-parallel size, none for the CPU-only embedded model."""
    entry = model_entry(config, role_or_name)
    return 0 if entry["source"] == "embedded" else int(entry.get("tensor_parallel_size", 1))


def features_input(prm, source):
    """Head-only trained PRMs: the frozen base's step features of results/{source}.parquet (rule
    step_features; SHARED_FEATURES and PRM_SPECS are set in evaluation.smk)."""
    return [f"results/features/{source}.safetensors"] if SHARED_FEATURES and PRM_SPECS[prm]["trained"] else []


def scoring_gpus(prm):
    """GPUs of a scoring job: none when only a head is applied to stored features."""
    if features_input(prm, "x"):
        return 0
    return gpus("policy" if PRM_SPECS[prm]["trained"] else PRM_SPECS[prm]["model"])
