"""Plan stage: ProcessBench dev split and model-free baselines."""
from __future__ import annotations

PROCESSBENCH_DEV = "results/processbench/dev.parquet"
# model-free ProcessBench predictors reported beside every PRM (metrics.baseline_predictions kinds)
PROCESSBENCH_BASELINES = ("always_correct", "first_step", "structure")


def processbench_dev(config: dict) -> bool:
    """Whether the run has a ProcessBench dev split (constructed sets with `processbench.constructed.dev`);
    without one, the structure baseline is cross-fitted over folds of the evaluation cases and a tuned
    threshold follows processbench_eval.tune_on."""
    pb = config.get("processbench", {})
    return pb.get("source", "constructed") == "constructed" and bool(pb.get("constructed", {}).get("dev"))


# the labelling judge scored as a ProcessBench critic: the configured prompt without and with the gold
# solution (prm_lessons.metrics.judge_processbench.SETTINGS)
JUDGE_PB_SETTINGS = ("judge", "judge_reference")


def judge_processbench_cases(config: dict) -> int:
    """How many ProcessBench cases rule judge_processbench gives each labelling-judge setting
    (judge.processbench_cases; 0 = no rule)."""
    return int(config.get("judge", {}).get("processbench_cases") or 0)


def judge_processbench_settings(config: dict) -> tuple[str, ...]:
    """The labelling-judge settings rule judge_processbench runs: reference-free and reference-guided on a
    constructed set (its problems hold the gold solutions), reference-free only on a fetched set (the
    official cases carry no gold solution; the judge as it labels, with its own prompt)."""
    pb = config.get("processbench", {})
    return JUDGE_PB_SETTINGS if pb.get("source", "constructed") == "constructed" else JUDGE_PB_SETTINGS[:1]
