"""PRM training data: trainset rows -> token ids, step positions and aligned targets; labels checked
(a bad row is a TrainingError naming its id), truncation counted, never silent."""
from __future__ import annotations

import logging
import math
from typing import Iterable, Sequence

from ..steps import StepFormat, build_prm_input
from ..tables import read_table
from .settings import LABEL_TYPES, TrainingError

log = logging.getLogger(__name__)


def validate_labels(instance_id: str, steps: Sequence, labels: Sequence, label_type: str) -> list[float]:
    if steps is None or labels is None:
        raise TrainingError(f"trainset row {instance_id!r}: steps/labels missing")
    if len(steps) != len(labels):
        raise TrainingError(f"trainset row {instance_id!r}: {len(steps)} steps but {len(labels)} labels")
    out = []
    for i, v in enumerate(labels):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise TrainingError(f"trainset row {instance_id!r}: label {i} is {v!r}, not a number") from None
        if math.isnan(x) or not 0.0 <= x <= 1.0:
            raise TrainingError(f"trainset row {instance_id!r}: label {i} = {v!r} is outside [0, 1]")
        if label_type == "hard" and x not in (0.0, 1.0):
            raise TrainingError(f"trainset row {instance_id!r}: label {i} = {v!r} in a hard-label set (0/1 only)")
        out.append(x)
    return out


def prepare_instances(rows: Iterable[dict], tokenizer, fmt: StepFormat, max_length: int | None,
                      label_type: str) -> tuple[list[dict], dict]:
    """Trainset rows -> token ids + step positions + aligned targets, and counts of what truncation cost.

    Truncation keeps whole steps (build_prm_input); labels of dropped steps are counted in
    `steps_dropped`, instances with no step left in `instances_skipped` (never silent)."""
    if label_type not in LABEL_TYPES:
        raise TrainingError(f"label_type {label_type!r} is not one of {LABEL_TYPES}")
    out, stats = [], {"instances": 0, "instances_used": 0, "instances_truncated": 0, "instances_skipped": 0,
                      "steps": 0, "steps_used": 0, "steps_dropped": 0, "positive_steps": 0.0}
    for row in rows:
        iid = str(row["instance_id"])
        steps = list(row["steps"]) if row["steps"] is not None else None
        labels = validate_labels(iid, steps, row["labels"], label_type)
        stats["instances"] += 1
        stats["steps"] += len(steps)
        if not steps:
            stats["instances_skipped"] += 1
            continue
        try:
            enc = build_prm_input(tokenizer, str(row["question"]), steps, fmt, max_length)
        except (TypeError, ValueError) as exc:  # e.g. a question holding the step token: name the row
            raise TrainingError(f"trainset row {iid!r}: {exc}") from exc
        kept = enc.n_steps_kept
        stats["steps_dropped"] += len(steps) - kept
        if kept < len(steps):
            stats["instances_truncated"] += 1
        if kept == 0:
            stats["instances_skipped"] += 1
            continue
        stats["instances_used"] += 1
        stats["steps_used"] += kept
        stats["positive_steps"] += sum(labels[:kept])
        out.append({"instance_id": iid, "input_ids": enc.input_ids, "step_pos": enc.step_positions[:kept],
                    "step_targets": labels[:kept]})
    if stats["steps_dropped"]:
        log.warning("truncation at max_length=%s dropped %d labelled step(s) in %d instance(s); %d instance(s) "
                    "had no step left and were skipped", max_length, stats["steps_dropped"],
                    stats["instances_truncated"], stats["instances_skipped"])
    return out, stats


def _read_trainset(path: str):
    return read_table(path, "trainset")


def training_instances(trainset: str, tokenizer, fmt: StepFormat, settings: dict, label_type: str):
    """(instances, data stats) of a trainset table; TrainingError when no instance is left to train on."""
    df = _read_trainset(trainset)
    instances, data_stats = prepare_instances(df.to_dict("records"), tokenizer, fmt, settings["max_length"], label_type)
    if not instances:
        raise TrainingError(f"{trainset}: no trainable instance ({data_stats['instances']} rows, "
                            f"{data_stats['instances_skipped']} without any step within max_length)")
    log.info("trainset %s: %s", trainset, data_stats)
    return instances, data_stats

