"""Plan stage: PRMBench (prmbench section): whether the run scores it, and where its cases come from."""
from __future__ import annotations

from ..data.prmbench import prmbench_path

PRMBENCH_CASES = "results/prmbench/cases.parquet"


def prmbench_enabled(config: dict) -> bool:
    """Whether every PRM of the run is scored on PRMBench (prmbench.enabled)."""
    return bool((config.get("prmbench") or {}).get("enabled"))


def prmbench_source_inputs(config: dict) -> list[str]:
    """Rule prmbench's file input: the pinned copy rule prmbench_file makes (source url), the local file
    (source local; replacing it reruns the rule), none for the constructed stand-in."""
    spec = config.get("prmbench") or {}
    if spec.get("source") == "url":
        return [prmbench_path(spec)]
    if spec.get("source") == "local" and spec.get("path"):
        return [spec["path"]]
    return []


def prmbench_pool(config: dict) -> dict:
    """The stand-in's problems (source constructed): processbench.constructed.subsets, the held-out pool the
    constructed ProcessBench draws from; none for a file source."""
    spec = config.get("prmbench") or {}
    if spec.get("source") != "constructed":
        return {}
    return ((config.get("processbench") or {}).get("constructed") or {}).get("subsets") or {}
