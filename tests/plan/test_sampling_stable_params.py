"""prm_lessons.plan.sampling: the keys added after runs existed (sampling.seed_mode, mc.lanes) stay out of the
jobs' params at the value that reproduces those runs, so adding them reran no finished job."""
from __future__ import annotations

from pathlib import Path

from prm_lessons import plan
from prm_lessons.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def test_later_defaults_leave_the_params_of_the_embedded_default_as_they_were():
    cfg = load_config(ROOT / "config/config.yaml")
    assert cfg["sampling"]["seed_mode"] == "per_request" and cfg["mc"]["lanes"] == 1
    assert plan.stable_params(cfg["sampling"]) == {k: v for k, v in cfg["sampling"].items() if k != "seed_mode"}
    assert plan.stable_params(cfg["mc"]) == {k: v for k, v in cfg["mc"].items() if k != "lanes"}


def test_a_value_that_changes_the_job_stays_in_its_params():
    paper = load_config(ROOT / "config/paper.yaml")
    assert plan.stable_params(paper["mc"])["lanes"] == 2  # the paper pipelines MC grading
    assert plan.stable_params({"seed_mode": "per_batch", "seed": 0}) == {"seed_mode": "per_batch", "seed": 0}
    assert plan.stable_params({"lanes": 3}) == {"lanes": 3}
