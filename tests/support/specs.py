"""Problem-set specs and configs shared by the data tests."""
from __future__ import annotations

import yaml

from conftest import ROOT
from prm_lessons.config import validate_config

ARITH = {"source": "reasoning_gym", "generator": "basic_arithmetic", "size": 12, "seed": 3,
         "params": {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 2}}
CHAIN = {"source": "reasoning_gym", "generator": "chain_sum", "size": 12, "seed": 4,
         "params": {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 2}}


def paper_config() -> dict:
    """config/paper.yaml, validated (defaults filled in)."""
    with open(ROOT / "config" / "paper.yaml") as fh:
        return validate_config(yaml.safe_load(fh))


def set_key(cfg: dict, dotted: str, value) -> dict:
    """`cfg` with the value at a dotted key path set (parents made as needed), for config-edit tests."""
    *parents, last = dotted.split(".")
    node = cfg
    for k in parents:
        node = node.setdefault(k, {})
    node[last] = value
    return cfg
