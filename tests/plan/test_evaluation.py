"""Plan of the shared frozen-base features (plan.evaluation): head-only variants labelled on the sampled
training responses read one step_features pass over them; other variants, other modes and the paper
config plan none."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from prm_lessons import plan
from prm_lessons.config import validate_config

ROOT = Path(__file__).resolve().parents[2]


def _config(path: str = "config/config.yaml", responses: str | None = "sampled", **training) -> dict:
    """The config at `path`; responses `sampled` (the paper's design) turns the embedded default's
    constructed pool off and adds the checker variant, which only sampled responses have, and the judge's."""
    cfg = yaml.safe_load((ROOT / path).read_text())
    cfg["training"] = {**cfg["training"], **training}
    if responses == "sampled" and cfg.get("trainsets", {}).get("responses") == "constructed":
        cfg["trainsets"]["responses"] = "sampled"
        cfg["trainsets"]["variants"] = {n: v for n, v in cfg["trainsets"]["variants"].items() if v["source"] != "exact"}
        cfg["trainsets"]["variants"].update({"checker": {"source": "checker"}, "judge": {"source": "judge"},
                                             "consensus_hard": {"source": "consensus"}})
    if cfg["training"].get("mode") != "head":
        cfg["training"]["resamples"] = 0  # resample heads are head mode's only
    return validate_config(copy.deepcopy(cfg))


def test_pool_variants_share_one_pass_over_the_constructed_pool():
    cfg = _config(responses=None)
    assert cfg["trainsets"]["responses"] == "constructed"
    want = [f"results/features/{plan.TRAINING_FEATURES_SOURCE}.safetensors"]
    for name, spec in plan.variants(cfg).items():
        shared = plan.training_features_input(cfg, name)
        assert shared == ([] if spec["source"] == "human" else want), name
        if spec["source"] in plan.POOL_SOURCES:
            assert plan.trainset_inputs(cfg, name) == {"pool": plan.POOL_SLICE,
                                                       "pool_labels": plan.audit_shard_paths(cfg)}
    # one pass over the pool's solutions only: no sampled training responses are read
    assert plan.training_feature_datasets(cfg) == []
    assert plan.features_texts(cfg, plan.TRAINING_FEATURES_SOURCE) == [plan.POOL_SLICE]


def test_sampled_variants_share_one_pass_per_problem_set():
    cfg = _config()
    sets = list(cfg["problems"])
    want = [f"results/features/{plan.TRAINING_FEATURES_SOURCE}.safetensors"]
    by_source = {}
    for name, spec in plan.variants(cfg).items():
        by_source.setdefault(spec["source"], []).append(plan.training_features_input(cfg, name))
    for src in plan.SAMPLED_SOURCES:
        assert by_source[src] and all(f == want for f in by_source[src]), src
    assert by_source["human"] == [[]]  # a pool of its own: its job's own pass
    # one job over the union of the problem sets' responses
    assert plan.training_feature_sources(cfg) == [plan.TRAINING_FEATURES_SOURCE]
    assert plan.training_feature_datasets(cfg) == sets
    assert plan.features_texts(cfg, plan.TRAINING_FEATURES_SOURCE) == [f"results/responses/{d}.parquet" for d in sets]
    assert plan.features_texts(cfg, "processbench/cases") == ["results/processbench/cases.parquet"]
    # training tokenises at training.max_length: so must the features it reads
    assert plan.features_max_length(cfg, plan.TRAINING_FEATURES_SOURCE) == cfg["training"]["max_length"]


def test_the_union_covers_only_the_problem_sets_a_sharing_variant_reads():
    cfg = _config()
    first = next(iter(cfg["problems"]))
    for spec in cfg["trainsets"]["variants"].values():
        if spec["source"] != "human":
            spec["datasets"] = [first]
    cfg["trainsets"]["mc_threshold_sweep"] = []
    assert plan.training_feature_datasets(cfg) == [first]


def test_scoring_sources_keep_the_scoring_max_length():
    cfg = _config()
    cfg["prms"]["max_length"] = 512
    assert plan.features_max_length(cfg, "processbench/cases") == 512
    assert plan.features_max_length(cfg, plan.TRAINING_FEATURES_SOURCE) == cfg["training"]["max_length"]
    assert plan.features_max_length(cfg, f"responses/{next(iter(cfg['benchmarks']))}") == 512


@pytest.mark.parametrize("mode", ["full", "lora"])
def test_other_modes_and_the_paper_config_read_no_shared_features(mode):
    for cfg in (_config(mode=mode), _config("config/paper.yaml")):
        assert not any(plan.training_features_input(cfg, v) for v in plan.variants(cfg))
        assert plan.training_feature_sources(cfg) == []
    off = _config()
    off["prms"]["shared_base_features"] = False
    assert not any(plan.training_features_input(off, v) for v in plan.variants(off))


def test_resampled_prms_are_the_trained_variants_in_head_mode_with_shared_features():
    cfg = _config()
    assert cfg["training"]["resamples"] > 0 and plan.resampled_prms(cfg) == plan.trained_variants(cfg)
    assert plan.resampled_prms(_config(resamples=0)) == []
    assert plan.resampled_prms(_config(mode="lora")) == []
    off = _config()
    off["prms"]["shared_base_features"] = False  # no stored features: no resample scores
    assert plan.resampled_prms(off) == []
    assert plan.resampled_prms(_config("config/paper.yaml")) == []
