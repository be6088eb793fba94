"""The workflow's configuration: typed models (one per section, the only place a key's type, default and
description are written), the strict YAML loader, the cross-checks and the derived values.

Snakemake and the plan receive a plain dict (validate_config); `typed_config` gives the models' view.
"""
from __future__ import annotations

import json
from pathlib import Path

from .access import config_strings, hub_models_dir, model_entry, model_path, used_models
from .derive import SEEDED_SECTIONS, derive
from .load import MAX_CONFIG_NODES, check_config_files, deep_update, read_config_file
from .local_files import check_local_files, local_files
from .model import Config
from .names import (
    NAME_CHARS,
    NAME_MAX,
    NAME_RE,
    NAME_WILDCARD,
    OUTPUT_PARENT,
    OUTPUT_PATH_KEYS,
    RESERVED_NAMES,
    RESERVED_PREFIXES,
    TEXT_MAX,
    WORKFLOW_OUTPUT_DIRS,
    ConfigError,
    check_name,
    ecma_pattern,
    hub_id_problem,
    name_problem,
    output_dir_problem,
    sweep_variant_name,
    text_problem,
)
from .validate import INT64_MAX, SEED_RANGE, load_config, typed_config, validate_config

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.json"


def load_schema(path: str | Path | None = None) -> dict:
    """The generated JSON Schema (docs.json_schema_text) with its `$ref`s inlined, so a key's schema is at
    ["properties"][section]["properties"][key] (a recursive reference, a mix's parts, stays a `$ref`)."""
    schema = json.loads(Path(path or SCHEMA_PATH).read_text(encoding="utf-8"))
    defs = schema.get("$defs", {})

    def inline(node, seen: tuple):
        if isinstance(node, list):
            return [inline(v, seen) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/") and ref not in seen:
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return inline({**defs[ref.split("/")[-1]], **rest}, (*seen, ref))
        return {k: inline(v, seen) for k, v in node.items() if k != "$defs"}

    return inline(schema, ())


__all__ = [
    "Config", "ConfigError", "INT64_MAX", "MAX_CONFIG_NODES", "NAME_CHARS", "NAME_MAX", "NAME_RE", "NAME_WILDCARD",
    "OUTPUT_PARENT", "OUTPUT_PATH_KEYS", "RESERVED_NAMES", "RESERVED_PREFIXES", "SCHEMA_PATH", "SEEDED_SECTIONS",
    "SEED_RANGE", "TEXT_MAX", "WORKFLOW_OUTPUT_DIRS", "check_config_files", "check_local_files", "check_name",
    "config_strings", "deep_update", "derive", "ecma_pattern", "hub_id_problem", "hub_models_dir", "load_config",
    "load_schema", "local_files", "model_entry", "model_path", "name_problem", "output_dir_problem", "read_config_file",
    "sweep_variant_name", "text_problem", "typed_config", "used_models", "validate_config",
]
