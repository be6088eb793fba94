"""Numbers a later job or library would refuse, refused at validation naming the key path (generated):
a sampling budget that leaves no room for a prompt in the model's max_model_len (every Best-of-N and data
policy, the search's step budget), while MC, the judge, the critics and the Best-of-N judges may ask for
more (the engine stops them at max_model_len, as the paper config's critics rely on); training.max_steps
0 or below -1; grading.workers beyond its bound; and the schema's bounds are the constants the CLIs use.
Seeds and 64-bit integers: tests/config/test_validate_hostile.py."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from prm_lessons.config import ConfigError, load_schema, validate_config
from prm_lessons.grading.pool import MAX_WORKERS
from prm_lessons.metrics.stats import MAX_BOOTSTRAP
from specs import set_key as _set

ROOT = Path(__file__).resolve().parents[2]
# a validation takes ~0.3 s: a fixed count per test, the same under the dev and ci profiles
FEW = settings(max_examples=16, deadline=None)
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
LIMIT = BASE["models"]["smollm2"]["max_model_len"]


def base() -> dict:
    cfg = copy.deepcopy(BASE)
    # a second model (same package) so that the policies and the search can name their own
    cfg["models"]["other"] = {**cfg["models"]["smollm2"], "max_model_len": 1024}
    return cfg


def _search_on(cfg: dict) -> dict:
    cfg["search"]["prms"] = ["human"]
    return cfg


# (key path named in the error, how to reach it, the max_model_len that bounds it)
BUDGETS = [
    ("sampling.max_tokens", lambda cfg, v: _set(cfg, "sampling.max_tokens", v), LIMIT),
    ("bon.policies.second.max_tokens",
     lambda cfg, v: _set(cfg, "bon.policies.second", {"model": "other", "max_tokens": v}), 1024),
    ("data_policies.mine.max_tokens",
     lambda cfg, v: _set(cfg, "data_policies.mine", {"model": "other", "completer": "smollm2", "max_tokens": v}), 1024),
    ("search.max_step_tokens", lambda cfg, v: _set(_search_on(cfg), "search.max_step_tokens", v), LIMIT),
]


@FEW
@given(case=st.sampled_from(BUDGETS), over=st.integers(0, 10**6))
def test_a_budget_that_leaves_no_room_for_a_prompt_is_refused(case, over):
    key, put, limit = case
    with pytest.raises(ConfigError, match=f"config error at `{re.escape(key)}`: {limit + over} tokens leave no "
                                          rf"room for a prompt in models\.\w+\.max_model_len {limit}"):
        validate_config(put(base(), limit + over))


@FEW
@given(case=st.sampled_from(BUDGETS), under=st.integers(1, 100))
def test_a_budget_below_max_model_len_passes(case, under):
    key, put, limit = case
    validate_config(put(base(), limit - under))


# generations the engine stops at max_model_len (vLLM; the transformers engine caps max_new_tokens too)
CAPPED = ["mc.max_tokens", "judge.max_tokens", "critics.max_tokens", "bon_judges.max_tokens"]


@FEW
@given(key=st.sampled_from(CAPPED), over=st.integers(0, 10**5))
def test_capped_generations_may_ask_for_more_than_max_model_len(key, over):
    validate_config(_set(base(), key, LIMIT + over))


def test_the_paper_config_keeps_its_critics_longer_than_their_models():
    cfg = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    assert cfg["critics"]["max_tokens"] > cfg["models"]["qwen25_math_72b_instruct"]["max_model_len"]
    validate_config(cfg)


@FEW
@given(steps=st.one_of(st.just(0), st.integers(max_value=-2)))
def test_training_max_steps_is_minus_one_or_positive(steps):
    with pytest.raises(ConfigError, match=r"config error at `training\.max_steps`"):
        validate_config(_set(base(), "training.max_steps", steps))


@FEW
@given(workers=st.one_of(st.integers(max_value=0), st.integers(min_value=MAX_WORKERS + 1, max_value=2**62)))
def test_grading_workers_are_bounded(workers):
    with pytest.raises(ConfigError, match=r"config error at `grading\.workers`"):
        validate_config(_set(base(), "grading.workers", workers))


def test_the_schema_bounds_are_the_constants_the_clis_use():
    props = load_schema()["properties"]
    assert props["grading"]["properties"]["workers"]["maximum"] == MAX_WORKERS
    for section in ("bon", "processbench_eval"):
        assert props[section]["properties"]["bootstrap"]["properties"]["samples"]["maximum"] == MAX_BOOTSTRAP


@pytest.mark.parametrize("mode", ["full", "lora"])
def test_training_resamples_need_head_mode(mode):
    cfg = _set(_set(base(), "training.mode", mode), "training.resamples", 3)
    with pytest.raises(ConfigError, match=r"config error at `training\.resamples`: 3 resample heads need mode: head"):
        validate_config(cfg)
    validate_config(_set(_set(base(), "training.mode", mode), "training.resamples", 0))  # the default passes


def test_training_packing_refused_in_head_mode():
    cfg = _set(_set(base(), "training.mode", "head"), "training.packing", True)
    with pytest.raises(ConfigError, match=r"config error at `training\.packing`: head mode computes"):
        validate_config(cfg)
    full = _set(_set(base(), "training.mode", "full"), "training.resamples", 0)
    validate_config(_set(full, "training.packing", True))


def test_training_batch_tokens_need_a_trained_base():
    cfg = _set(_set(base(), "training.mode", "head"), "training.batch_tokens", 4096)
    with pytest.raises(ConfigError, match=r"config error at `training\.batch_tokens`: 4096 tokens per micro-batch"):
        validate_config(cfg)
    trained = _set(base(), "training.resamples", 0)  # the embedded default's resample heads need head mode
    for mode in ("full", "lora"):
        validate_config(_set(_set(trained, "training.mode", mode), "training.batch_tokens", 4096))
    with pytest.raises(ConfigError, match=r"training\.batch_tokens"):
        validate_config(_set(_set(trained, "training.mode", "full"), "training.batch_tokens", 0))
