"""Every free-text key of the config models holds the one text rule (config.base.Text, prm_lessons.text_rule),
found by walking the models rather than listed: a key whose name says it is shown (label, title, caption,
why, note...) must carry the check, every other string key must be a name, a Hub id, a choice, or a string
that no renderer prints (MACHINE_STRINGS, by key name, with why); and each checked key, fed generated
hostile strings, refuses what LaTeX cannot set (naming the key) and keeps what the renderers neutralise."""
from __future__ import annotations

import copy
import re
import types
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from hostile_text import HOSTILE, REFUSED
from prm_lessons.config import TEXT_MAX, ConfigError, validate_config
from prm_lessons.config import base as B
from prm_lessons.config.docs import _models
from prm_lessons.config.model import Config

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
CHECKS = {B._name: "name", B._hub_id: "hub id", B._text: "text"}
# a key whose name ends like this is printed by some renderer (a table, a figure, a caption, the report)
SHOWN = re.compile(r"(^|_)(label|labels|title|caption|why|reason|note|notes|display|heading|legend|"
                   r"description|text|name)$")
# string keys that no renderer prints as text, by key name: what they hold
MACHINE_STRINGS = {
    "id": "a Hub or data set id, a model path (loaded, not printed)",
    "revision": "a git revision (pattern-checked)", "sha256": "a checksum (pattern-checked)",
    "git_blob_sha1": "a checksum (pattern-checked)", "text_sha256": "a checksum (pattern-checked)",
    "commit": "a git commit", "url": "a download URL", "path": "an input file path", "file": "a file in a repository",
    "file_pattern": "a glob of input files", "cache_dir": "an input folder", "models_dir": "an output folder "
    "(names.output_dir_problem)", "template_path": "a prompt template file", "deepspeed": "a DeepSpeed config file",
    "config": "a data set configuration name", "split": "a data set split", "generator": "a reasoning_gym generator",
    "question": "a column name of a data set", "answer": "a column name of a data set",
    "gold_steps": "a column name of a data set", "choices": "a column name of a data set",
    "key": "a key of a few-shot file", "system_prompt": "a prompt sent to a model",
    "question_template": "a prompt template", "step_template": "a prompt template", "step_join": "model input text",
    "pointwise_template": "a prompt template", "pairwise_template": "a prompt template",
    "step_separator": "model input text", "separator": "model input text", "step_token": "a tokenizer token",
    "step_tag": "a tokenizer token", "good_token": "a tokenizer token", "bad_token": "a tokenizer token",
    "target_modules": "LoRA module names", "keep_finish_reasons": "PRM800K field values",
    "repo_prefix": "a Hub repository prefix (pattern-checked)", "threshold": "a number or 'tune'",
    "palette": "a seaborn palette name", "paper_rows": "keys of published.yaml",
    "paper_columns": "keys of published.yaml", "model": "a model entry (cross-checked against `models`)",
    "ref_model": "a model entry (cross-checked)", "completer": "a model entry (cross-checked)",
    "policy": "a model entry (cross-checked)", "judge": "a model entry (cross-checked)",
    "base": "a model entry (cross-checked)", "benchmarks": "benchmark names (cross-checked)",
    "chinese_benchmarks": "benchmark names (cross-checked)", "policy_flaw_datasets": "data set names (cross-checked)",
    "datasets": "data set names (cross-checked)", "shard_prms": "PRM names (cross-checked)",
    "rows": "row names (cross-checked)", "columns": "column names (cross-checked)",
    "params": "a reasoning_gym generator's keyword arguments", "label_ids": "token ids or tokens of a head's labels",
}


def _parts(tp):
    """Every type and Annotated metadata item inside an annotation."""
    yield tp
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return
    if origin is typing.Annotated:
        yield from args[1:]
        yield from _parts(args[0])
        return
    for a in args:
        yield from _parts(a)


def _kind(field) -> str | None:
    """'name' / 'hub id' / 'text' (the check the key carries), 'string' (a plain string), None (no string)."""
    parts = list(_parts(field.annotation)) + list(field.metadata)
    for m in parts:
        func = getattr(m, "func", None)
        if func in CHECKS:
            return CHECKS[func]
    return "string" if str in parts else None


def string_keys() -> list[tuple[type[BaseModel], str, str]]:
    """(model, key, kind) of every key of every model reachable from Config that takes a string."""
    return [(m, name, k) for m in _models(Config) for name, f in m.model_fields.items()
            if (k := _kind(f)) is not None]


TEXT_KEYS = [(m, name) for m, name, k in string_keys() if k == "text"]


def test_the_walk_finds_the_known_free_text_keys():
    """A check of the walk itself (it must see Annotated[Text, ...] | MISSING and Text | None)."""
    found = {(m.__name__, name) for m, name in TEXT_KEYS}
    assert {("Run", "label"), ("DataPoliciesEntry", "label"), ("BonPoliciesEntry", "label"), ("QwenPrm", "label"),
            ("DeclaredPrm", "label"), ("AnalysisNotComparedItem", "why"), ("AnalysisFig6Annotation", "labels")} <= found
    assert ("Run", "name") in {(m.__name__, n) for m, n, k in string_keys() if k == "name"}


def test_every_key_named_as_shown_text_holds_the_text_rule():
    bad = [f"{m.__name__}.{name} ({k})" for m, name, k in string_keys() if SHOWN.search(name) and k == "string"]
    assert not bad, f"keys named as displayed text without the text rule (use config.base.Text): {bad}"


def test_every_other_string_key_is_one_no_renderer_prints():
    bad = [f"{m.__name__}.{name}" for m, name, k in string_keys() if k == "string" and name not in MACHINE_STRINGS]
    assert not bad, ("string keys neither text (config.base.Text) nor listed in MACHINE_STRINGS with what they "
                     f"hold: {bad}")


def _errors_at(model: type[BaseModel], key: str, value) -> list[str]:
    try:
        model.model_validate({key: value})
    except ValidationError as exc:
        return [e["msg"] for e in exc.errors() if e["loc"] and e["loc"][0] == key]
    return []


@pytest.mark.parametrize("model,key", TEXT_KEYS, ids=[f"{m.__name__}.{k}" for m, k in TEXT_KEYS])
def test_each_text_key_refuses_what_latex_cannot_set_and_keeps_the_rest(model, key):
    for bad in REFUSED:
        for value in (bad, f"label {bad}", f"{bad} x"):
            msgs = _errors_at(model, key, value)
            assert any("LaTeX cannot set" in m for m in msgs), (value, msgs)
    assert any("at most" in m for m in _errors_at(model, key, "x" * (TEXT_MAX + 1)))
    for good in HOSTILE:
        assert _errors_at(model, key, good) == [], good


# -- through validate_config: the error names the key path ----------------------------------------------------

def _adapter(model) -> str | None:
    field = model.model_fields.get("adapter")
    args = field and typing.get_args(field.annotation)
    return args[0] if args else None


def _config_with(model, key: str, value) -> tuple[dict, str]:
    """The embedded default with `value` at one place `model`'s `key` sits, and that key path."""
    cfg = copy.deepcopy(BASE)
    name = model.__name__
    if name == "Run":
        cfg["run"][key] = value
        return cfg, f"run.{key}"
    if name == "DataPoliciesEntry":
        cfg["data_policies"] = {"dp": {"model": "smollm2", "completer": "smollm2", key: value}}
        return cfg, f"data_policies.dp.{key}"
    if name == "BonPoliciesEntry":
        cfg["bon"]["policies"] = {"smollm2": {"model": "smollm2", key: value}}
        return cfg, f"bon.policies.smollm2.{key}"
    if _adapter(model):
        cfg["prms"]["models"] = {"p": {"adapter": _adapter(model), "model": "smollm2", key: value}}
        return cfg, f"prms.models.p.{key}"
    if name == "AnalysisNotComparedItem":
        cfg["analysis"]["not_compared"] = [{"rows": ["mc_hard"], "columns": ["arith"], key: value}]
        return cfg, f"analysis.not_compared.0.{key}"
    if name == "AnalysisFig6Annotation":
        cfg["analysis"]["fig6_annotation"] = {"per_benchmark": 1, key: value}
        return cfg, f"analysis.fig6_annotation.{key}"
    raise AssertionError(f"{name}.{key}: a new free-text key; say where it sits in a config here")


@pytest.mark.parametrize("model,key", TEXT_KEYS, ids=[f"{m.__name__}.{k}" for m, k in TEXT_KEYS])
def test_the_config_error_names_each_text_keys_path(model, key):
    for bad in ("a\nb", "\u4e2d"):
        cfg, path = _config_with(model, key, bad)
        with pytest.raises(ConfigError) as exc:
            validate_config(cfg)
        assert f"config error at `{path}`:" in str(exc.value) and "LaTeX cannot set" in str(exc.value), str(exc.value)


def test_walk_helpers_see_unions():
    assert _kind(type("F", (), {"annotation": str | None, "metadata": []})) == "string"
    assert _kind(type("F", (), {"annotation": typing.Literal["a"], "metadata": []})) is None
    assert _kind(type("F", (), {"annotation": int | types.NoneType, "metadata": []})) is None
