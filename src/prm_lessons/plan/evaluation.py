"""Plan stage: evaluation (PRM specs, scoring inputs, GPUs, shards and minutes of the scoring jobs)."""
from __future__ import annotations

from ..config import model_entry, model_path
from .base import shard_files, shard_log, shard_minutes, shard_outputs
from .models import gpus, model_input, runtime
from .training import base_trusts_remote_code
from .trainsets import POOL_SLICE, labels_pool, variant_datasets, variants


def trained_variants(config: dict) -> list[str]:
    """Training-set variants scored as PRMs (one trained PRM each); none when `prms.include_trained` is off."""
    if not config.get("prms", {}).get("include_trained", True):
        return []
    return list(variants(config))


def resolve_prm_specs(config: dict) -> dict[str, dict]:
    """All PRMs to evaluate, name → spec: one per training-set variant (named after it, model under
    results/prms/{variant}) plus the released models of `prms.models` (model entries under `models`)."""
    cfg = config.get("prms", {})
    out: dict[str, dict] = {}
    base_trusts = base_trusts_remote_code(config)
    for v in trained_variants(config):
        out[v] = {"adapter": "trained", "path": f"results/prms/{v}", "max_length": cfg.get("max_length"),
                  "params": {}, "threshold": None, "trained": True}
        if base_trusts:  # the saved base keeps its auto_map and code; absent when false (params as before)
            out[v]["trust_remote_code"] = True
        if cfg.get("trained_backend") == "vllm":
            tr = config.get("training", {})
            tp = tr["gpus_scoring"] if tr.get("gpus_scoring") is not None else gpus(config, tr.get("base", "policy"))
            base = model_entry(config, tr.get("base", "policy"))
            out[v].update(backend="vllm", vllm={"tensor_parallel_size": max(1, int(tp)),
                                                "gpu_memory_utilization": base.get("gpu_memory_utilization", 0.9)})
    for name, e in cfg.get("models", {}).items():
        if name in out:
            raise ValueError(f"config error at `prms.models.{name}`: name clashes with a trained PRM variant")
        ent = model_entry(config, e["model"])
        spec = {"adapter": e["adapter"], "model": e["model"], "path": model_path(config, e["model"]),
                "dtype": ent.get("dtype"),
                "trust_remote_code": bool(ent.get("trust_remote_code", False)),
                "max_length": e.get("max_length", cfg.get("max_length")) or ent.get("max_model_len"),
                "params": dict(e.get("params", {})), "threshold": e.get("threshold"), "trained": False,
                "label": e.get("label", name)}
        if e.get("backend") == "vllm":  # only then: a transformers spec (and its jobs' params) stays as it was
            spec.update(backend="vllm", vllm={"tensor_parallel_size": int(ent.get("tensor_parallel_size", 1)),
                                              "gpu_memory_utilization": ent.get("gpu_memory_utilization", 0.9)})
        if e["adapter"] == "eurus":
            if not e.get("ref_model"):
                raise ValueError(f"config error at `prms.models.{name}.ref_model`: adapter eurus needs a "
                                 "reference model")
            ref = model_entry(config, e["ref_model"])
            spec.update(ref_model=e["ref_model"], ref_path=model_path(config, e["ref_model"]),
                        ref_dtype=ref.get("dtype"), ref_trust_remote_code=bool(ref.get("trust_remote_code", False)))
        out[name] = spec
    return out


def spec_inputs(config: dict, spec: dict) -> list[str]:
    """What a scoring job needs on disk: the trained PRM directory, or the model directories (converted
    embedded model or linked Hub snapshot) of the PRM and its reference model."""
    if spec["trained"]:
        return [spec["path"]]
    entries = [spec["model"]] + ([spec["ref_model"]] if spec.get("ref_model") else [])
    return [p for e in entries for p in model_input(config, e)]


def shared_features(config: dict) -> bool:
    """Head-only trained PRMs share one frozen base: its step features are computed once per text table."""
    return bool(config["prms"]["shared_base_features"]) and config["training"]["mode"] == "head"


def resampled_prms(config: dict) -> list[str]:
    """Trained PRMs whose ProcessBench scores carry resample-head scores (training.resamples > 0 in head
    mode, scored from shared features: the only path that writes them), in variant order; the PRMs of
    results/tables/processbench_paired.csv."""
    tr = config["training"]
    if not (tr.get("resamples") and tr["mode"] == "head" and shared_features(config)):
        return []
    return trained_variants(config)


def features_input(config: dict, specs: dict, prm: str, source: str) -> list[str]:
    """Head-only trained PRMs: the frozen base's step features of results/{source}.parquet (rule
    step_features)."""
    return [f"results/features/{source}.safetensors"] if shared_features(config) and specs[prm]["trained"] else []


# training-set sources cut from the primary policy's sampled training responses (plan.trainset_inputs)
SAMPLED_SOURCES = ("mc", "judge", "consensus", "checker")
# rule step_features' `source` for the union of those responses (no dataset name can clash with it: a
# benchmark's source is responses/{dataset})
TRAINING_FEATURES_SOURCE = "trainsets/responses"


def _shares_training_features(config: dict, variant: str) -> bool:
    return shared_features(config) and (variants(config)[variant]["source"] in SAMPLED_SOURCES
                                        or labels_pool(config, variant))


def training_features_input(config: dict, variant: str) -> list[str]:
    """Head-only variants labelled on the sampled training responses: the frozen base's step features of
    those responses (rule step_features, one job for the union of every such variant's problem sets),
    read by train_prm instead of its own pass; [] for every other variant (its own pass: human labels
    are a pool of their own)."""
    if not _shares_training_features(config, variant):
        return []
    return [f"results/features/{TRAINING_FEATURES_SOURCE}.safetensors"]


def training_feature_datasets(config: dict) -> list[str]:
    """The problem sets whose sampled responses the shared training features cover (in config order)."""
    want = {d for v in variants(config) if _shares_training_features(config, v) and not labels_pool(config, v)
            for d in variant_datasets(config, v)}
    return [d for d in config.get("problems", {}) if d in want]


def training_pool_features(config: dict) -> bool:
    """Whether the shared training features cover the constructed pool (variants labelling it)."""
    return any(_shares_training_features(config, v) and labels_pool(config, v) for v in variants(config))


def training_feature_sources(config: dict) -> list[str]:
    """The `source` wildcards of rule step_features that training reads (none without a shared pass)."""
    return [TRAINING_FEATURES_SOURCE] if training_feature_datasets(config) or training_pool_features(config) else []


def features_texts(config: dict, source: str) -> list[str]:
    """The text tables of a step_features job: results/{source}.parquet, or for the training source the
    responses of every problem set it covers (one pass over their union)."""
    if source == TRAINING_FEATURES_SOURCE:
        return ([f"results/responses/{d}.parquet" for d in training_feature_datasets(config)]
                + ([POOL_SLICE] if training_pool_features(config) else []))
    return [f"results/{source}.parquet"]


def features_max_length(config: dict, source: str) -> int | None:
    """max_length of a step_features job: training's for the training responses (what train_prm
    tokenises with), else the scoring one (prms.max_length, else training's)."""
    if source == TRAINING_FEATURES_SOURCE:
        return config["training"]["max_length"]
    return config["prms"]["max_length"] or config["training"]["max_length"]


def scoring_gpus(config: dict, specs: dict, prm: str) -> int:
    """GPUs of a scoring job: none when only a head is applied to stored features; a trained PRM gets
    training.gpus_scoring, else its base model's tensor-parallel size (load_prm spreads it over them)."""
    if features_input(config, specs, prm, "x"):
        return 0
    return prm_gpus(config, specs, prm)


def prm_gpus(config: dict, specs: dict, prm: str) -> int:
    """GPUs of a job that loads the whole PRM: a trained PRM gets training.gpus_scoring, else its base
    model's tensor-parallel size."""
    if specs[prm]["trained"]:
        asked = config["training"].get("gpus_scoring")
        return int(asked) if asked is not None else gpus(config, config["training"]["base"])
    return gpus(config, specs[prm]["model"])


def score_shards(config: dict, prm: str | None = None) -> int:
    """Scoring jobs per PRM (and policy) over problem shards (prms.shards); 1 = one job writes the tables.
    With `prm`: that PRM's count; prms.shard_prms (when set) lists the PRMs split, the others get one
    shard (`shard0of1`) through the same merge, so the rules keep one file layout. Without `prm`: the layout's."""
    prms = config.get("prms", {})
    only = prms.get("shard_prms")
    if prm is not None and only is not None and prm not in only:
        return 1
    return int(prms.get("shards", 1))


def score_outputs(config: dict, tables: list[str]) -> list[str]:
    """A scoring job's outputs for tables given as `results/...` paths without `.parquet` (wildcards kept):
    the tables themselves when unsharded, else each table's `/shard{shard}of{nshards}.parquet` (joined by
    rules merge_sample_scores / merge_processbench_scores)."""
    return shard_outputs(tables, score_shards(config))


def score_log(config: dict, rule: str, name: str) -> str:
    """The log of a scoring job (`name`: its wildcards, e.g. '{policy_dir}{prm}'), per shard when sharded."""
    return shard_log(rule, name, score_shards(config))


def score_shard_paths(config: dict, tables: list[str], wildcards: dict | None = None) -> list[str]:
    """Every shard file of these tables (paths without `.parquet`), the merge rules' inputs. With a merge
    job's `wildcards` ({prm}, {policy_dir}): filled in, and that PRM's shard count (prms.shard_prms)."""
    if wildcards is None:
        n = score_shards(config)
    else:
        n = score_shards(config, wildcards["prm"])
        tables = [t.format(**wildcards) for t in tables]
    return shard_files(tables, n)


def scoring_runtime(config: dict, minutes: int, n_gpus: int, attempt: int, multi_gpu: int = 1,
                    prm: str | None = None) -> int:
    """Minutes of one scoring job: `minutes` for all of a PRM's inputs (× `multi_gpu` for a PRM spread over
    several GPUs), split over the PRM's shards (prms.shards; at least 60: loading a 72B model takes minutes),
    × the attempt, so a job killed at its limit is resubmitted with more time (retries), within
    cluster.max_runtime."""
    whole = int(minutes) * (int(multi_gpu) if n_gpus > 1 else 1)
    return runtime(config, max(60, shard_minutes(whole, score_shards(config, prm))), attempt)
