"""run.seed (a seed replica): the seeds it draws again, its name, and the shipped replica overlays."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from prm_lessons.config import SEEDED_SECTIONS, ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
REPLICAS = sorted((ROOT / "config/seeds").glob("*.yaml"))


@pytest.mark.parametrize("profile", ["config.yaml", "paper.yaml"])
def test_a_replica_draws_sampling_labels_and_training_again_with_its_seed(profile):
    base = load_config(ROOT / "config" / profile)
    rep = load_config(ROOT / "config" / profile, ROOT / "config/seeds/seed2.yaml")
    assert rep["run"]["name"] == "seed2"
    for section in SEEDED_SECTIONS:
        assert rep[section]["seed"] == 2 != base[section]["seed"], section
    # nothing else is a seed of the replica: the problems' and ProcessBench's draws stay the base run's
    assert rep["problems"] == base["problems"] and rep.get("processbench") == base.get("processbench")
    assert rep["analysis"]["seeds"] == []


def test_a_replica_is_named_after_its_seed(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: {name: myseed, seed: 3, ablation: true}\n")
    with pytest.raises(ConfigError, match=r"run\.name.*seed3"):
        load_config(ROOT / "config/config.yaml", bad)


def test_the_shipped_replicas_name_their_seed():
    assert [p.stem for p in REPLICAS] == ["seed1", "seed2"]
    for p in REPLICAS:
        run = yaml.safe_load(p.read_text())["run"]
        assert run == {"name": p.stem, "seed": int(p.stem[4:]), "ablation": True}, p.name
