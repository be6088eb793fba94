"""Every combination of config files the Makefile, `.ci/run`, the tests and the docs use (name → files under
config/), for the tests that check every resolved config (golden values, key order, seed streams)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "configs"
ABLATIONS = sorted(p.stem for p in (ROOT / "config" / "ablations").glob("*.yaml"))
SEEDS = sorted(p.stem for p in (ROOT / "config" / "seeds").glob("*.yaml"))
COMBOS = {
    "config": ["config.yaml"],
    "config+test": ["config.yaml", "test.yaml"],
    "config+larger": ["config.yaml", "larger.yaml"],
    "config+all": ["config.yaml", "all.yaml"],
    **{f"config+ablation-{a}": ["config.yaml", f"ablations/{a}.yaml"] for a in ABLATIONS},
    **{f"config+{s}": ["config.yaml", f"seeds/{s}.yaml"] for s in SEEDS},
    "paper": ["paper.yaml"],
    "paper+paper_3m": ["paper.yaml", "paper_3m.yaml"],
    "paper+preflight": ["paper.yaml", "preflight.yaml"],
    "paper+rehearsal": ["paper.yaml", "rehearsal.yaml"],
    **{f"paper+ablation-{a}": ["paper.yaml", f"ablations/{a}.yaml"] for a in ("mc_threshold",)},
}
