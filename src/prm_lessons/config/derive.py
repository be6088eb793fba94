"""Values the config derives from what it was given, computed after validation (the models hold what the
user wrote, with defaults; these are the run's reading of it):

- benchmarks.<name>.enabled: false drops the entry (an overlay cannot delete a key), and `enabled` is
  removed from the others, so it changes no job's params;
- run.seed: the run is a seed replica with that seed in every SEEDED_SECTIONS section and no seed spread
  of its own (analysis.seeds);
- analysis.n: null means bon.n (else sampling.n), the N of the main tables."""
from __future__ import annotations

# the seeds a seed replica (run.seed) draws again: sampling, MC and judge labels, training
SEEDED_SECTIONS = ("sampling", "mc", "judge", "training")


def derive(cfg: dict) -> dict:
    """Apply the derived values to a validated config dict (in place) and return it."""
    _drop_disabled_benchmarks(cfg)
    _apply_seed_replica(cfg)
    _analysis_n(cfg)
    return cfg


def _drop_disabled_benchmarks(cfg: dict) -> None:
    """(checks: only benchmarks have `enabled`, and one at least stays)"""
    benchmarks = cfg["benchmarks"]
    for name in list(benchmarks):
        if benchmarks[name].pop("enabled", True) is False:
            del benchmarks[name]


def _apply_seed_replica(cfg: dict) -> None:
    """run.seed: the run is a seed replica (checks: named seed<value>, as Table 6's seed spread finds it by that name)
    with that seed in every SEEDED_SECTIONS section; it reports no spread of its own (analysis.seeds)."""
    seed = cfg["run"]["seed"]
    if seed is None:
        return
    for section in SEEDED_SECTIONS:
        cfg[section]["seed"] = int(seed)
    cfg["analysis"]["seeds"] = []


def _analysis_n(cfg: dict) -> None:
    """The tables read bon.csv at bon.n, never at a bon.more_n N (checks: a given analysis.n is bon.n)."""
    bon_n = cfg["bon"].get("n") or cfg["sampling"].get("n")
    if cfg["analysis"].get("n") is None and bon_n is not None:
        cfg["analysis"]["n"] = bon_n
