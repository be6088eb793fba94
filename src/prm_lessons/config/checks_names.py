"""Cross-checks of names and of what the user may write (typed: they read the models and change
nothing): output folders, switched-off benchmarks, seed replicas, namespaces
that share a wildcard, and names that differ only in letter case."""
from __future__ import annotations

import re

from .base import MISSING, fail
from .names import output_dir_problem, sweep_variant_name, threshold_fraction

# ProcessBench rows of critics (critic-<judge>) and model-free baselines (baseline_<kind>) share the
# `prm` wildcard with the PRMs
RESERVED_PRM_PREFIXES = ("critic-", "baseline_")


def opt(value, default=None):
    """A key without a default (MISSING when absent) read as `default` when absent."""
    return default if value is MISSING else value


def enabled_benchmarks(c) -> dict:
    """The benchmarks a run evaluates: those without `enabled: false` (derive drops the others)."""
    return {n: b for n, b in c.benchmarks.items() if opt(b.enabled, True) is not False}


def check_inputs(c) -> None:
    """The output folder, switched-off benchmarks and the seed replica's name (free text is held to the
    text rule by its type, base.Text)."""
    problem = c.hub.models_dir is not None and output_dir_problem(c.hub.models_dir)
    if problem:
        raise fail("hub.models_dir", problem)
    cons = c.processbench.constructed
    dev = opt(cons.dev)
    for where, entries in (("problems", c.problems), ("processbench.constructed.subsets", cons.subsets),
                           ("processbench.constructed.dev.subsets", dev.subsets if dev else {})):
        for name, spec in entries.items():
            if spec.enabled is not MISSING:
                raise fail(f"{where}.{name}.enabled", "only benchmarks can be switched off")
    if not enabled_benchmarks(c):
        raise fail("benchmarks", "every benchmark has enabled: false; at least one must stay")
    seed = c.run.seed
    if seed is not None and c.run.name != f"seed{seed}":
        raise fail("run.name", f"a seed replica (run.seed: {seed}) is named seed{seed}, not {c.run.name!r} (the "
                               f"base run's Table 6 reads runs/seed{seed}/)")
    # the seed replicas' names are theirs: another run (an ablation, a base run) named seed<N>, in any letter
    # case (one folder on a case-insensitive file system), would be read by Table 6 as replica N
    replica = re.fullmatch(r"seed0*(\d+)", str(c.run.name), re.IGNORECASE)
    if seed is None and replica:
        raise fail("run.name", f"{c.run.name!r} is the name of the seed replica with run.seed {int(replica[1])} "
                               f"(the base run's Table 6 reads runs/seed{int(replica[1])}/ as that replica); name "
                               "this run otherwise, or make it that replica with run.seed")


def run_prms(c) -> set[str]:
    """The names of the PRMs this run scores: prms.models, and the enabled trained variants and sweep
    variants unless prms.include_trained is false."""
    known = set(c.prms.models)
    if c.prms.include_trained:
        known |= {n for n, v in c.trainsets.variants.items() if v.enabled is not False}
        known |= {sweep_variant_name(t) for t in c.trainsets.mc_threshold_sweep}
    return known


def _is_sweep_spec(spec, t) -> bool:
    """Whether a declared variant is the sweep's hard MC variant at t (plan.variants then reuses it)."""
    return (spec.source == "mc" and spec.label_type == "hard" and not spec.datasets
            and threshold_fraction(spec.threshold) == threshold_fraction(t))


def _name_groups(c) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each namespace of names as (what, [(key path, name)]): the names of one group become files in
    the same folders, so two of them must differ in more than letter case."""
    def keys(where: str, mapping) -> list[tuple[str, str]]:
        return [(f"{where}.{n}", n) for n in mapping]

    cons = c.processbench.constructed
    dev = opt(cons.dev)
    return [
        ("models", keys("models", c.models)),
        ("problem sets and benchmarks", keys("problems", c.problems) + keys("benchmarks", enabled_benchmarks(c))),
        ("PRMs", keys("trainsets.variants", c.trainsets.variants) + keys("prms.models", c.prms.models)),
        ("critics", keys("critics.judges", c.critics.judges)),
        ("Best-of-N judges", keys("bon_judges.judges", c.bon_judges.judges)),
        ("policies", keys("bon.policies", c.bon.policies)),
        ("ProcessBench subsets", [(f"processbench.subsets.{i}", n) for i, n in enumerate(c.processbench.subsets or [])]
         + keys("processbench.constructed.subsets", cons.subsets)),
        ("ProcessBench dev subsets", keys("processbench.constructed.dev.subsets", dev.subsets if dev else {})),
        ("human construction problems", keys("human.construction.problems", c.human.construction.problems)),
    ]


def check_namespaces(c) -> None:
    """Names that share a wildcard must not clash: problem sets and benchmarks (`dataset`:
    results/samples/<name>.parquet), and trained variants, released PRMs, critics and the ProcessBench
    baselines (`prm`: results/scores/<prm>/, results/metrics/*/<prm>.json); nor differ only in case (two
    such names name the same file on a case-insensitive file system: macOS, Windows, many shared mounts)."""
    for what, names in _name_groups(c):
        seen: dict[str, str] = {}
        for key, name in names:
            other = seen.setdefault(name.casefold(), name)
            if other != name:
                raise fail(key, f"{name!r} and {other!r} ({what}) differ only in letter case: they name the same "
                                "file on a case-insensitive file system")
    for name in enabled_benchmarks(c):
        if name in c.problems:
            raise fail(f"benchmarks.{name}", "also defined under `problems`: problem sets and benchmarks share one "
                                             "namespace (results/samples/<name>.parquet)")
    declared = {n: s for n, s in c.trainsets.variants.items() if s.enabled is not False}
    sweep = []
    for t in c.trainsets.mc_threshold_sweep:
        if any(_is_sweep_spec(s, t) for s in declared.values()):
            continue
        name = sweep_variant_name(t)
        if name in declared:  # plan.variants would replace the declared variant with the sweep's
            raise fail(f"trainsets.variants.{name}", f"the name of the MC threshold sweep's variant for threshold "
                                                     f"{t}, with another definition")
        sweep.append(name)
    trained = [*declared, *sweep] if c.prms.include_trained else []
    released = list(c.prms.models)
    for name in released:
        if name in trained:
            raise fail(f"prms.models.{name}", "name clashes with a trained PRM variant (trainsets.variants or the "
                                              "MC threshold sweep)")
    for name in trained + released:
        if name.startswith(RESERVED_PRM_PREFIXES):
            key = f"prms.models.{name}" if name in released else f"trainsets.variants.{name}"
            raise fail(key, f"names starting with {' or '.join(RESERVED_PRM_PREFIXES)} are reserved for the "
                            "ProcessBench rows of critics and baselines")
