"""The constructed pool as the training pool (trainsets.responses: constructed): every label source is
cut from the same solutions, so exact and MC variants train on the same instances and differ in labels
only; the config refuses the combinations that cannot hold."""
from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from prm_lessons.config import ConfigError, validate_config
from prm_lessons.labels.trainsets import NOT_JUDGED, build_variant, pool_inputs

ROOT = Path(__file__).resolve().parents[2]
K = 4


def pool() -> pd.DataFrame:
    # gold (truth 1,1), an answer-changing error at step 0, an answer-keeping error at step 1 of 3
    return pd.DataFrame({"problem_id": ["p-gold", "p-error", "p-keep"], "sample_idx": [0, 0, 0],
                         "generator": ["g"] * 3, "kind": ["gold", "error", "keep"], "question": ["q1", "q2", "q3"],
                         "answer": ["5", "6", "7"], "steps": [["a", "b"], ["x", "y"], ["c", "d", "e"]],
                         "error_index": [-1, 0, 1]})


def labels(judged: bool = True) -> pd.DataFrame:
    # MC: gold positive everywhere; the error found at step 0; the kept answer hides the error (all positive)
    return pd.DataFrame({"problem_id": ["p-gold", "p-error", "p-keep"], "sample_idx": [0, 0, 0], "n_steps": [2, 2, 3],
                         "k": [K] * 3, "n_success": [[2, 4], [0, None], [3, 1, 4]],
                         "n_total": [[4, 4], [4, None], [4, 4, 4]],
                         "judge_first_error": pd.array([-1, 0, None] if judged else [None] * 3, dtype="Int64"),
                         "judge_status": ["ok", "ok", "unparsed"] if judged else [NOT_JUDGED] * 3})


def variant(name: str, spec: dict, judged: bool = True) -> tuple[pd.DataFrame, dict]:
    src = pool_inputs(pool(), labels(judged), K)
    spec = {"label_type": "hard", "threshold": 0.0, **spec}
    return build_variant(name, spec, **src, k=K)


def _labels(df: pd.DataFrame) -> dict:
    return {i: list(lab) for i, lab in zip(df["instance_id"], df["labels"])}


def test_exact_and_mc_variants_hold_the_same_instances_with_their_own_labels():
    exact, st_exact = variant("exact", {"source": "exact"})
    hard, st_hard = variant("mc_hard", {"source": "mc"})
    soft, _ = variant("mc_soft", {"source": "mc", "label_type": "soft", "threshold": None})
    assert sorted(exact["instance_id"]) == sorted(hard["instance_id"]) == sorted(soft["instance_id"])
    assert st_exact["n_instances"] == st_hard["n_instances"] == 3
    # exact truth, truncated after the first wrong step; MC misses the answer-keeping error
    assert _labels(exact) == {"p-gold#0": [1.0, 1.0], "p-error#0": [0.0], "p-keep#0": [1.0, 0.0]}
    assert _labels(hard) == {"p-gold#0": [1.0, 1.0], "p-error#0": [0.0], "p-keep#0": [1.0, 1.0, 1.0]}
    assert _labels(soft)["p-gold#0"] == [0.5, 1.0]
    # the steps are cut to the labels
    assert {i: len(s) for i, s in zip(exact["instance_id"], exact["steps"])} == {"p-gold#0": 2, "p-error#0": 1,
                                                                                 "p-keep#0": 2}


def test_judge_and_consensus_come_from_the_same_pool():
    judge, st = variant("judge", {"source": "judge"})
    assert _labels(judge) == {"p-gold#0": [1.0, 1.0], "p-error#0": [0.0]}  # the unparsed verdict gives none
    cons, _ = variant("consensus_hard", {"source": "consensus"})
    assert sorted(cons["instance_id"]) == ["p-error#0", "p-gold#0"]  # MC and judge agree on these two


def test_without_the_judge_there_are_no_judge_labels():
    src = pool_inputs(pool(), labels(judged=False), K)
    assert src["judge"] == [] and src["consensus"] == []


def test_a_pool_solution_without_labels_is_named():
    with pytest.raises(ValueError, match="1 of 3 constructed solutions have no labels"):
        pool_inputs(pool(), labels().iloc[:2], K)


def _base() -> dict:
    return copy.deepcopy(yaml.safe_load((ROOT / "config/config.yaml").read_text()))


def _rejects(cfg: dict, key: str, text: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate_config(cfg)
    assert key in str(e.value) and text in str(e.value), str(e.value)


def test_the_embedded_default_trains_every_label_source_on_the_pool():
    cfg = validate_config(_base())
    assert cfg["trainsets"]["responses"] == "constructed"
    srcs = {v["source"] for v in cfg["trainsets"]["variants"].values()}
    assert {"exact", "mc"} <= srcs and not srcs & {"checker", "judge", "consensus"}
    assert 6 * cfg["audit"]["per_cell"] >= 64  # the floor for the pool


def test_exact_labels_need_the_constructed_pool():
    cfg = _base()
    cfg["trainsets"]["responses"] = "sampled"
    _rejects(cfg, "trainsets.variants.exact.source", "trainsets.responses: constructed")


def test_the_checker_does_not_label_the_pool():
    cfg = _base()
    cfg["trainsets"]["variants"]["checker"] = {"source": "checker"}
    _rejects(cfg, "trainsets.variants.checker.source", "source 'exact'")


def test_judge_variants_on_the_pool_need_its_judge():
    cfg = _base()
    assert cfg["audit"]["judge"] is False  # the embedded default: MC only (make run-all turns the judge on)
    cfg["trainsets"]["variants"]["judge"] = {"source": "judge"}
    _rejects(cfg, "trainsets.variants.judge.source", "audit.judge")
    cfg["audit"]["judge"] = True
    validate_config(cfg)


def test_the_pool_needs_problem_sets():
    cfg = _base()
    cfg["audit"]["problems"] = {}
    _rejects(cfg, "audit.problems", "constructed")
