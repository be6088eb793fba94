"""cluster.max_runtime caps every GPU rule's runtime × attempt; long engine calls log progress in chunks."""
from __future__ import annotations

import logging
from pathlib import Path

from fakes import SeedEngine
from prm_lessons import plan
from prm_lessons.generation import SamplingSpec


def test_runtime_grows_with_attempt_and_stops_at_the_cap():
    config = {"cluster": {"max_runtime": 1440}}
    assert plan.runtime(config, 720, 1) == 720
    assert plan.runtime(config, 720, 2) == 1440
    assert plan.runtime(config, 960, 2) == 1440  # the critic's second attempt asked for 32 h before
    assert plan.runtime({"cluster": {"max_runtime": 600}}, 720, 1) == 600


def test_every_rule_runtime_goes_through_the_cap():
    """A rule that computed `minutes * attempt` itself would ask sbatch for more than the partition allows."""
    root = Path(__file__).resolve().parents[1]
    for smk in sorted((root / "workflow/rules").glob("*.smk")):
        for line in smk.read_text().splitlines():
            if "runtime=" in line:
                assert "plan.runtime(" in line or "plan.scoring_runtime(" in line, f"{smk.name}: {line.strip()}"


def test_generate_logged_chunks_without_changing_outputs(caplog):
    prompts = [f"p{i}" for i in range(10)]
    seeds = list(range(100, 110))
    spec = SamplingSpec(n=1, seed=None)
    whole = SeedEngine().generate(prompts, spec, seeds)
    eng = SeedEngine()
    with caplog.at_level(logging.INFO, logger="prm_lessons.generation"):
        chunked = eng.generate_logged(prompts, spec, seeds, "judged", chunk=4)
    assert [[c.text for c in o] for o in chunked] == [[c.text for c in o] for o in whole]
    lines = [r.getMessage() for r in caplog.records if "judged" in r.getMessage()]
    assert [ln.split(" done")[0] for ln in lines] == ["judged: 4/10", "judged: 8/10", "judged: 10/10"]
