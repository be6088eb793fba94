"""Values the config derives from what it was given, computed after validation (the models hold what the
user wrote, with defaults; these are the run's reading of it):

- benchmarks.<name>.enabled: false drops the entry (an overlay cannot delete a key), and `enabled` is
  removed from the others, so it changes no job's params;
- run.seed: the run is a seed replica with that seed in every SEEDED_SECTIONS section and no seed spread
  of its own (analysis.seeds);
- analysis.n: null means bon.n (else sampling.n), the N of the main tables;
- models.<name>.gpus: null means the run's device (cpu_run): 0 in a CPU run, so an entry added to the
  embedded default runs on CPU as its other jobs do; else null stays (tensor_parallel_size)."""
from __future__ import annotations

# the seeds a seed replica (run.seed) draws again: sampling, MC and judge labels, training
SEEDED_SECTIONS = ("sampling", "mc", "judge", "training")


def derive(cfg: dict) -> dict:
    """Apply the derived values to a validated config dict (in place) and return it."""
    _drop_disabled_benchmarks(cfg)
    _apply_seed_replica(cfg)
    _analysis_n(cfg)
    _model_gpus(cfg)
    return cfg


def cpu_run(cfg: dict) -> bool:
    """Whether nothing in the run asks for a GPU: training.gpus 0, training.gpus_scoring not above 0 and
    no model entry with gpus above 0 (the embedded default, the CPU rehearsal)."""
    training = cfg.get("training", {})
    if int(training.get("gpus") or 0) > 0 or int(training.get("gpus_scoring") or 0) > 0:
        return False
    return not any(int(e.get("gpus") or 0) > 0 for e in cfg.get("models", {}).values())


def _model_gpus(cfg: dict) -> None:
    """A CPU run's model entries without `gpus` ask for none. Embedded entries are left as given (their
    jobs ask for none anyway), so no job's params change for them."""
    if not cpu_run(cfg):
        return
    for entry in cfg.get("models", {}).values():
        if entry.get("gpus") is None and entry.get("source") != "embedded":
            entry["gpus"] = 0


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
