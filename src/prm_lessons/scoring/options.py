"""Adapter options that config.validate_config checks while the DAG is built (torch-free, like config):
those of adapter token_classification (prms.models.<name>.params).
"""
from __future__ import annotations

# TRL's PRMConfig step_separator default; label 1 is what a TRL PRM is trained to give a correct step
# (tokenize_row: int(True) = 1)
TOKEN_CLASSIFICATION_DEFAULTS = {"step_separator": "\n", "positive_label": 1, "score": "softmax"}
TOKEN_CLASSIFICATION_SCORES = ("softmax", "sigmoid")


def check_token_classification_params(params: dict, num_labels: int | None = None) -> None:
    """Adapter token_classification's options: known keys of the right types, and (with the checkpoint's
    `num_labels`) a label index the head has; softmax needs two labels or more. Raises ValueError naming
    `params.<key>` (config.validate_config adds the entry's path)."""
    unknown = sorted(set(params) - set(TOKEN_CLASSIFICATION_DEFAULTS))
    if unknown:
        raise ValueError(f"params.{unknown[0]}: unknown option of adapter token_classification "
                         f"(allowed: {', '.join(TOKEN_CLASSIFICATION_DEFAULTS)})")
    p = {**TOKEN_CLASSIFICATION_DEFAULTS, **params}
    if not isinstance(p["step_separator"], str) or not p["step_separator"]:
        raise ValueError(f"params.step_separator: {p['step_separator']!r} is not a non-empty string")
    label = p["positive_label"]
    if isinstance(label, bool) or not isinstance(label, int) or label < 0:
        raise ValueError(f"params.positive_label: {label!r} is not a label index (an integer >= 0)")
    if p["score"] not in TOKEN_CLASSIFICATION_SCORES:
        raise ValueError(f"params.score: {p['score']!r} is not one of {', '.join(TOKEN_CLASSIFICATION_SCORES)}")
    if num_labels is not None:
        if label >= num_labels:
            raise ValueError(f"params.positive_label: {label} is not a label of this checkpoint (num_labels "
                             f"{num_labels}: indices 0..{num_labels - 1}; a 1-label head: positive_label 0, "
                             "score sigmoid)")
        if p["score"] == "softmax" and num_labels < 2:
            raise ValueError("params.score: softmax over a 1-label head is always 1 (use score: sigmoid, "
                             "positive_label: 0)")


