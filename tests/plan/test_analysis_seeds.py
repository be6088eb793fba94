"""plan.seed_runs: the seed replicas Table 6's seed spread reads (analysis.seeds), the run's own seed not
among them."""
from __future__ import annotations

from pathlib import Path

from prm_lessons import plan
from prm_lessons.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def test_seed_runs_are_the_listed_seeds_but_the_runs_own(tmp_path):
    over = tmp_path / "seeds.yaml"
    over.write_text("analysis: {seeds: [0, 1, 2]}\n")
    cfg = load_config(ROOT / "config/paper.yaml", over)
    assert cfg["sampling"]["seed"] == 0
    assert plan.seed_runs(cfg) == [{"seed": 1, "name": "seed1"}, {"seed": 2, "name": "seed2"}]
    assert plan.analysis_settings(cfg)["seed_runs"] == {"seed": 0, "replicas": plan.seed_runs(cfg)}
    assert plan.seed_runs(load_config(ROOT / "config/paper.yaml")) == []


def test_a_named_run_has_no_seed_replicas(tmp_path):
    # config/paper_3m.yaml on a base run with seeds: runs/seed<s>/ are the base run's draws, not the mix's
    over = tmp_path / "seeds.yaml"
    over.write_text("analysis: {seeds: [0, 1, 2]}\n")
    cfg = load_config(ROOT / "config/paper.yaml", over, ROOT / "config/paper_3m.yaml")
    assert cfg["analysis"]["seeds"] == [0, 1, 2] and plan.seed_runs(cfg) == []
