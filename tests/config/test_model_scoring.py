"""prms.models.<name>.params: one typed model per adapter family (config.model_scoring), so a misspelt
option or a wrong type is a config error naming `prms.models.<name>.params.<key>` before any job runs, and
options given are kept as written (absent ones stay absent: the adapter applies its defaults)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from prm_lessons.config import ConfigError, validate_config
from prm_lessons.config.model_scoring import ADAPTERS, PRM_ENTRIES

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())


def _validate(adapter: str, params: dict | None = None) -> dict:
    entry = {"adapter": adapter, "model": "smollm2"}
    if adapter == "eurus":
        entry["ref_model"] = "smollm2"
    if params is not None:
        entry["params"] = params
    cfg = copy.deepcopy(BASE)
    cfg["prms"] = {"models": {"x": entry}}
    return validate_config(cfg)["prms"]["models"]["x"]


def _rejects(adapter: str, params: dict, key: str, message: str = "") -> None:
    with pytest.raises(ConfigError) as e:
        _validate(adapter, params)
    assert f"config error at `prms.models.x.params.{key}`:" in str(e.value), str(e.value)
    assert message in str(e.value)


# (adapter, a valid set of options, a misspelt or foreign option)
FAMILIES = [
    ("trained", {}, "step_format"),
    ("qwen_prm", {}, "step_format"),
    ("math_shepherd", {"good_token": "+", "bad_token": "-", "step_tag": "ки"}, "good"),
    ("rlhflow", {"bad_token": "-", "good_token": "+"}, "step_tag"),
    ("skywork", {"step_token": "\n"}, "step_tokens"),
    ("eurus", {"sigmoid": True, "beta": 0.01, "reward": "step"}, "betta"),
    ("qwen_orm", {"sigmoid": True}, "sigmod"),
    ("token_classification", {"positive_label": 0, "score": "sigmoid"}, "positive_labels"),
    ("declared", {"model_class": "causal_lm", "step_tag": "\n", "readout": {"label_ids": ["+", "-"]}}, "tag"),
]


def test_every_adapter_has_its_entry_model():
    assert [a for a, _, _ in FAMILIES] == list(ADAPTERS) == list(PRM_ENTRIES)


def test_the_scoring_adapters_are_the_configs():
    from prm_lessons.scoring.adapters import ADAPTER_CLASSES
    from prm_lessons.scoring.adapters import ADAPTERS as SCORING_ADAPTERS

    assert set(ADAPTERS) == set(SCORING_ADAPTERS) == set(ADAPTER_CLASSES)


@pytest.mark.parametrize("adapter, params, _", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_valid_options_are_kept_as_written(adapter, params, _):
    got = _validate(adapter, params)["params"]
    if adapter == "token_classification":  # its defaults are filled, after the keys given
        assert list(got)[:len(params)] == list(params) and got == {"step_separator": "\n", **params}
    else:
        assert got == params and list(got) == list(params)  # nothing filled, the order as written


@pytest.mark.parametrize("adapter", [a for a in ADAPTERS if a not in ("token_classification", "declared")])
def test_no_options_stay_empty(adapter):
    assert _validate(adapter)["params"] == {}
    assert _validate(adapter, {})["params"] == {}


@pytest.mark.parametrize("adapter, _, wrong", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_an_unknown_option_names_its_key(adapter, _, wrong):
    _rejects(adapter, {wrong: "x"}, wrong, "unknown")


@pytest.mark.parametrize("adapter, params, key, message", [
    ("eurus", {"beta": "x"}, "beta", "is not of type 'number'"),
    ("eurus", {"beta": True}, "beta", "is not of type 'number'"),
    ("eurus", {"beta": 0}, "beta", "minimum of 0"),
    ("eurus", {"reward": "sum"}, "reward", "is not one of"),
    ("eurus", {"sigmoid": "false"}, "sigmoid", "is not of type 'boolean'"),
    ("qwen_orm", {"sigmoid": 1}, "sigmoid", "is not of type 'boolean'"),
    ("math_shepherd", {"good_token": 43}, "good_token", "is not of type 'string'"),
    ("math_shepherd", {"step_tag": ""}, "step_tag", "non-empty"),
    ("rlhflow", {"bad_token": ["-"]}, "bad_token", "is not of type 'string'"),
    ("skywork", {"step_token": 198}, "step_token", "is not of type 'string'"),
    ("skywork", {"step_token": ""}, "step_token", "non-empty"),
])
def test_a_wrong_type_names_its_key(adapter, params, key, message):
    _rejects(adapter, params, key, message)


def test_params_must_be_a_mapping():
    with pytest.raises(ConfigError) as e:
        _validate("eurus", ["beta"])
    assert "config error at `prms.models.x.params`:" in str(e.value)


def test_eurus_still_needs_its_reference_model():
    cfg = copy.deepcopy(BASE)
    cfg["prms"] = {"models": {"x": {"adapter": "eurus", "model": "smollm2", "params": {"beta": 0.001}}}}
    with pytest.raises(ConfigError) as e:
        validate_config(cfg)
    assert "config error at `prms.models.x.ref_model`:" in str(e.value) and "adapter: eurus" in str(e.value)
