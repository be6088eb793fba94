"""Table 6's seed spread in the DAG: with analysis.seeds, rule table6_bon_main reads each seed replica's
Best-of-N tables (runs/seed<s>/, made before by config/seeds/seed<s>.yaml) and nothing else changes."""
from __future__ import annotations

from pathlib import Path

import dag

ROOT = Path(__file__).resolve().parents[2]


def test_table6_reads_the_seed_replicas_tables(tmp_path):
    over = tmp_path / "seeds.yaml"
    over.write_text("analysis: {seeds: [0, 1, 2]}\n")
    work = tmp_path / "work"
    for s in (1, 2):   # the replicas' tables, as their runs left them
        d = work / f"runs/seed{s}/results/tables"
        d.mkdir(parents=True)
        (d / "bon.csv").write_text("")
        (d / "bon_baselines.csv").write_text("")
    p = dag.plan(("config/config.yaml", str(over)), directory=str(work))
    (t6,) = p.of("table6_bon_main")
    for s in (1, 2):
        assert f"runs/seed{s}/results/tables/bon.csv" in t6.input
        assert f"runs/seed{s}/results/tables/bon_baselines.csv" in t6.input
    # no other rule reads them, and no replica job is planned in the base run
    assert not [j.rule for j in p.jobs if j.rule != "table6_bon_main" and any("runs/seed" in i for i in j.input)]
    assert not [o for j in p.jobs for o in j.output if o.startswith("runs/")]
