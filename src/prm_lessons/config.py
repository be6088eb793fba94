"""Config loading and validation: every key checked against the JSON schema before any job runs.

Errors name the offending key path (e.g. ``sampling.n_samplez``) so a typo in a sweep file is caught
at DAG-construction time, not hours later on a GPU node.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A config value the schema rejects; the message starts with the key path."""


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "additionalProperties":
        # jsonschema reports the parent; name the unknown key itself
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        parts += extra[:1]
    elif error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        parts += missing[:1]
    return ".".join(parts) or "<root>"


def _defaulting_validator(schema: dict):
    """A Draft 2020-12 validator that also fills `default:` values (as snakemake.utils.validate does)."""
    base = jsonschema.Draft202012Validator

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from base.VALIDATORS["properties"](validator, properties, instance, schema)

    cls = jsonschema.validators.extend(base, {"properties": set_defaults})
    return cls(schema)


def load_schema(path: str | Path | None = None) -> dict:
    with open(path or SCHEMA_PATH) as fh:
        return yaml.safe_load(fh)


def validate_config(config: dict, schema_path: str | Path | None = None) -> dict:
    """Validate (and fill defaults in) a config dict; raise ConfigError naming the first bad key path."""
    schema = load_schema(schema_path)
    cfg = copy.deepcopy(dict(config))
    validator = _defaulting_validator(schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = []
        for err in errors[:10]:
            path = _key_path(err)
            if err.validator == "additionalProperties":
                msg = f"unknown key (allowed: {', '.join(sorted(err.schema.get('properties', {})))})"
            elif err.validator == "required":
                msg = "missing required value"
            else:
                msg = err.message
            lines.append(f"config error at `{path}`: {msg}")
        raise ConfigError("\n".join(lines))
    _check_cross_references(cfg)
    return cfg


def _check_cross_references(cfg: dict) -> None:
    models = cfg.get("models", {})
    for role, name in cfg.get("roles", {}).items():
        if name not in models:
            raise ConfigError(f"config error at `roles.{role}`: model '{name}' is not defined under `models`")
    for key in ("benchmarks",):
        for name in cfg.get("analysis", {}).get(key, []) or []:
            if name not in cfg.get("benchmarks", {}):
                raise ConfigError(f"config error at `analysis.{key}`: unknown benchmark '{name}'")


def load_config(*paths: str | Path, overrides: dict | None = None) -> dict:
    """Merge YAML files left to right (later wins, nested dicts merged) and validate."""
    merged: dict[str, Any] = {}
    for p in paths:
        with open(p) as fh:
            deep_update(merged, yaml.safe_load(fh) or {})
    if overrides:
        deep_update(merged, overrides)
    return validate_config(merged)


def deep_update(base: dict, new: dict) -> dict:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_update(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def model_entry(config: dict, role_or_name: str) -> dict:
    """The model entry for a role (`policy`, `completer`, `judge`, …) or a model name."""
    name = config.get("roles", {}).get(role_or_name, role_or_name)
    try:
        entry = dict(config["models"][name])
    except KeyError:
        raise ConfigError(f"config error at `models.{name}`: model not defined") from None
    entry["name"] = name
    return entry


def model_path(config: dict, role_or_name: str) -> str:
    """Where to load a model from: embedded models are converted into resources/models/<name>."""
    entry = model_entry(config, role_or_name)
    if entry["source"] == "embedded":
        return f"resources/models/{entry['name']}"
    return entry["id"]
