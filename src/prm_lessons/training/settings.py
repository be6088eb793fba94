"""PRM training settings: the `training` block with the schema's defaults filled in and checked, and the
error a bad setting or trainset row raises (naming the key or row id)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# The `training` defaults of the config (the schema generated from prm_lessons.config's models), so library
# callers and tests can pass a partial dict (the workflow passes the validated block, defaults already
# filled in). The schema is read here, not through prm_lessons.config, which only the DAG build imports.
SCHEMA_PATH = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.json"
DEFAULTS: dict[str, Any] = {k: v["default"] for k, v in
                            json.loads(SCHEMA_PATH.read_text())["$defs"]["Training"]["properties"].items()}
MODES = ("full", "lora", "head")
SOFT_LOSSES = ("bce", "mse")
LABEL_TYPES = ("hard", "soft")


class TrainingError(ValueError):
    """Bad training input (trainset rows, settings); the message names the row id or key."""



def settings_from(training: dict | None) -> dict:
    s = {**DEFAULTS, **(training or {})}
    s["lora"] = {**DEFAULTS["lora"], **s["lora"]}
    if s["mode"] not in MODES:
        raise TrainingError(f"training.mode: {s['mode']!r} is not one of {MODES}")
    if s["soft_loss"] not in SOFT_LOSSES:
        raise TrainingError(f"training.soft_loss: {s['soft_loss']!r} is not one of {SOFT_LOSSES}")
    if s["packing"] and s["mode"] == "head":
        raise TrainingError("training.packing: head mode trains the head on precomputed per-instance features; "
                            "packing applies to mode full or lora")
    save = float(s["save_steps"])
    if save < 0 or (save > 1 and save != int(save)):
        raise TrainingError(f"training.save_steps: {s['save_steps']!r} must be 0, a fraction in (0, 1) "
                            f"or a whole number of steps")
    return s


def save_steps(settings: dict) -> float | int:
    """Checkpoint interval for TrainingArguments: a whole number of optimizer steps, or a fraction in (0, 1)
    of all steps (transformers reads such a float as a ratio); 0 = no checkpoints."""
    x = float(settings["save_steps"])
    return x if 0 < x < 1 else int(x)
