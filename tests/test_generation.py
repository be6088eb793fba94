"""prm_lessons.generation: long engine calls log progress in chunks without changing the outputs."""
from __future__ import annotations

import logging

from fakes import SeedEngine
from prm_lessons.generation import SamplingSpec


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
