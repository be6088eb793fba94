"""Plan stage: ProcessBench dev split and model-free baselines."""
from __future__ import annotations

PROCESSBENCH_DEV = "results/processbench/dev.parquet"
# model-free ProcessBench predictors reported beside every PRM (metrics.baseline_predictions kinds)
PROCESSBENCH_BASELINES = ("always_correct", "first_step", "structure")


def processbench_dev(config: dict) -> bool:
    """Whether the run has a ProcessBench dev split (constructed sets with `processbench.constructed.dev`);
    without one, the structure baseline is cross-fitted over folds of the evaluation cases and a tuned
    threshold follows processbench_eval.tune_on."""
    pb = config.get("processbench") or {}
    return pb.get("source", "constructed") == "constructed" and bool((pb.get("constructed") or {}).get("dev"))


# the labelling judge scored as a ProcessBench critic: the configured prompt without and with the gold
# solution (prm_lessons.metrics.judge_processbench.SETTINGS)
JUDGE_PB_SETTINGS = ("judge", "judge_reference")


def judge_processbench_cases(config: dict) -> int:
    """How many constructed ProcessBench cases rule judge_processbench gives each labelling-judge setting
    (judge.processbench_cases); 0 (no rule) without a constructed set, whose problems hold the gold
    solutions a reference-guided judge needs."""
    pb = config.get("processbench") or {}
    if pb.get("source", "constructed") != "constructed":
        return 0
    return int((config.get("judge") or {}).get("processbench_cases") or 0)
