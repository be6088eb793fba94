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
    for name in sorted(used_models(cfg)):
        entry = models[name]
        if entry.get("source") == "hub" and not entry.get("revision"):
            # an unpinned Hub model would be whatever `main` is on the day each job starts
            raise ConfigError(f"config error at `models.{name}.revision`: Hub model '{entry.get('id')}' is used "
                              "but names no revision (a 40-hex commit; `main` is resolved once by rule "
                              "download_model)")
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


def used_models(cfg: dict) -> set[str]:
    """Model entries some rule loads: the roles, the training base, released PRMs (and their reference
    models) and the critics."""
    models, roles = cfg.get("models", {}), cfg.get("roles", {}) or {}
    names = set(roles.values())
    base = (cfg.get("training") or {}).get("base")
    if base:
        names.add(roles.get(base, base))
    for e in ((cfg.get("prms") or {}).get("models") or {}).values():
        names.update(n for n in (e.get("model"), e.get("ref_model")) if n)
    names.update((cfg.get("critics") or {}).get("judges") or [])
    return {n for n in names if n in models}


def hub_models_dir(config: dict) -> str:
    """Directory holding one linked snapshot per Hub model (rule download_model)."""
    return str((config.get("hub") or {}).get("models_dir") or "resources/hub").rstrip("/")


def model_path(config: dict, role_or_name: str) -> str:
    """Where a job loads a model from: a local directory for every source. Embedded models are converted
    into resources/models/<name>, Hub models linked into {hub.models_dir}/<name> by rule download_model,
    local models are their own directory."""
    entry = model_entry(config, role_or_name)
    if entry["source"] == "embedded":
        return f"resources/models/{entry['name']}"
    if entry["source"] == "hub":
        return f"{hub_models_dir(config)}/{entry['name']}"
    return entry["id"]
