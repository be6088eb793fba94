"""No two reasoning-gym problem sets of a run share random streams. reasoning-gym draws item i of a set
from ``Random(seed + i)`` (basic_arithmetic, chain_sum), so two sets whose index ranges
``[seed, seed + size)`` overlap reuse each other's draws: at the adjacent seeds the configs once had, chain_sum
item i had the term count and digits of basic_arithmetic item i+1, and the "two subsets" of ProcessBench and
Best-of-N were not independent samples. Checked on every combination of config files the project resolves
(tests/support/config_combos.py's COMBOS). A set with ``exclude_trivial`` may draw TRIVIAL_RESERVE x size indices
(data.problems.reasoning_gym_index_range), and its whole reserve must be disjoint from the others."""
import itertools

import pytest

from config_combos import COMBOS, ROOT
from prm_lessons.config import load_config
from prm_lessons.data.problems import reasoning_gym_index_range


def reasoning_gym_sets(node, path=""):
    """(key path, spec) of every dict with ``source: reasoning_gym`` anywhere in a resolved config. Nothing
    under such a spec is a set of its own (an overlay that replaces a mix by a reasoning_gym set may leave
    the mix's `parts` behind, unused)."""
    if isinstance(node, dict):
        if node.get("source") == "reasoning_gym":
            yield path, node
            return
        for k, v in node.items():
            yield from reasoning_gym_sets(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from reasoning_gym_sets(v, f"{path}[{i}]")


def overlaps(config: dict) -> list[str]:
    sets = [(p, reasoning_gym_index_range(s)) for p, s in reasoning_gym_sets(config)]
    return [f"{a} [{ra.start}, {ra.stop}) and {b} [{rb.start}, {rb.stop})"
            for (a, ra), (b, rb) in itertools.combinations(sets, 2)
            if ra.start < rb.stop and rb.start < ra.stop]


@pytest.mark.parametrize("name", sorted(COMBOS))
def test_reasoning_gym_index_ranges_are_disjoint(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # template and data paths in the configs are relative to the checkout
    config = load_config(*(ROOT / "config" / f for f in COMBOS[name]))
    bad = overlaps(config)
    assert not bad, f"{'+'.join(COMBOS[name])}: reasoning_gym sets share generator indices: " + "; ".join(bad)


def test_the_embedded_run_has_reasoning_gym_sets_to_check(monkeypatch):
    monkeypatch.chdir(ROOT)
    paths = [p for p, _ in reasoning_gym_sets(load_config(ROOT / "config" / "config.yaml"))]
    assert {"problems.train.parts.arith", "benchmarks.arith", "processbench.constructed.subsets.chain_sum",
            "processbench.constructed.dev.subsets.arith", "human.construction.problems.human_chain",
            "audit.problems.audit_arith"} <= set(paths)


def test_overlap_names_both_sets():
    cfg = {"benchmarks": {"a": {"source": "reasoning_gym", "generator": "chain_sum", "size": 16, "seed": 1001},
                          "b": {"source": "reasoning_gym", "generator": "basic_arithmetic", "size": 16, "seed": 1002}},
           "audit": {"problems": {"c": {"source": "reasoning_gym", "generator": "chain_sum", "size": 5, "seed": 1017}}},
           "problems": {"train": {"source": "mix", "parts": {
               "x": {"source": "reasoning_gym", "generator": "chain_sum", "size": 3}}}}}
    assert overlaps(cfg) == ["benchmarks.a [1001, 1017) and benchmarks.b [1002, 1018)",
                             "benchmarks.b [1002, 1018) and audit.problems.c [1017, 1022)"]


def test_an_exclude_trivial_set_reserves_four_times_its_size():
    cfg = {"benchmarks": {"a": {"source": "reasoning_gym", "generator": "chain_sum", "size": 10, "seed": 0,
                                "exclude_trivial": True},
                          "b": {"source": "reasoning_gym", "generator": "chain_sum", "size": 10, "seed": 39}}}
    assert overlaps(cfg) == ["benchmarks.a [0, 40) and benchmarks.b [39, 49)"]
