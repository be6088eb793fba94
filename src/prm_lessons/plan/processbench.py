"""Plan stage: ProcessBench dev split and model-free baselines."""
from __future__ import annotations

PROCESSBENCH_DEV = "results/processbench/dev.parquet"
# model-free ProcessBench predictors reported beside every PRM (metrics.baseline_predictions kinds)
PROCESSBENCH_BASELINES = ("always_correct", "first_step", "structure")


def processbench_dev(config: dict) -> bool:
    """Whether the run has a ProcessBench dev split (constructed sets with `processbench.constructed.dev`);
    without one, tuned choices are cross-fitted over folds of the evaluation cases."""
    pb = config.get("processbench") or {}
    return pb.get("source", "constructed") == "constructed" and bool((pb.get("constructed") or {}).get("dev"))
