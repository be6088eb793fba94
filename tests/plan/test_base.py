"""cluster.max_runtime caps every GPU rule's runtime × attempt (prm_lessons.plan.base.runtime)."""
from __future__ import annotations

from pathlib import Path

from prm_lessons import plan


def test_runtime_grows_with_attempt_and_stops_at_the_cap():
    config = {"cluster": {"max_runtime": 1440}}
    assert plan.runtime(config, 720, 1) == 720
    assert plan.runtime(config, 720, 2) == 1440
    assert plan.runtime(config, 960, 2) == 1440  # the critic's second attempt asked for 32 h before
    assert plan.runtime({"cluster": {"max_runtime": 600}}, 720, 1) == 600


def test_every_rule_runtime_goes_through_the_cap():
    """A rule that computed `minutes * attempt` itself would ask sbatch for more than the partition allows."""
    root = Path(__file__).resolve().parents[2]
    for smk in sorted((root / "workflow/rules").glob("*.smk")):
        for line in smk.read_text().splitlines():
            if "runtime=" in line:
                assert "plan.runtime(" in line or "plan.scoring_runtime(" in line, f"{smk.name}: {line.strip()}"
