"""The `harness` grader against the Qwen2.5-Math harness's own code (bench/harness_agreement.py).

The comparison itself runs only where the harness's files and its test-only environment are already cached
(``python bench/harness_agreement.py fetch`` with network, then PRM_HARNESS_CACHE set to that cache): the
harness's code is never part of this repository and CI has no network, so there it is skipped, with the
reason, and the checks that need no harness run (docs/testing.md)."""
from __future__ import annotations

import importlib.util
import os

import pytest

from conftest import ROOT, shared_data_dir


def _bench():
    spec = importlib.util.spec_from_file_location("harness_agreement", ROOT / "bench" / "harness_agreement.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_against_the_harness_own_code_at_its_commit():
    """Real, perturbed and edge pairs graded by both: the harness side reproduces the example file's
    recorded verdicts (800/800), no disagreement comes from normalisation, and the comparison ones left
    are exactly the listed ones (a fixed one must leave the list too)."""
    bench = _bench()
    if not os.environ.get("PRM_HARNESS_CACHE"):
        pytest.skip("PRM_HARNESS_CACHE not set: the comparison needs the harness's files and its test-only "
                    "environment, fetched by `python bench/harness_agreement.py fetch` (network)")
    if (why := bench.cached()):
        pytest.skip(f"harness cache not ready: {why}")
    shared_data_dir("bon", "math_cot_100_samples.jsonl")
    report = bench.compare(workers=2, timeout_s=60.0)  # far above any pair's time: verdicts, not speed
    assert report["recorded"] == [800, 800]
    assert report["timeouts"] == 0
    assert report["normalisation"] == 0, [d for d in report["disagreements"] if d["kind"] == "normalisation"]
    assert report["unexpected"] == [], [d for d in report["disagreements"] if d["id"] in report["unexpected"]]
    assert report["fixed"] == []
    assert {name for name in report["sets"]} == {"real", "perturbed", "edge"}


def test_every_listed_disagreement_is_in_the_measurements_and_the_grader_docstring():
    from prm_lessons.grading import harness

    bench = _bench()
    measurements = (ROOT / "docs" / "measurements.md").read_text()
    for case_id, reason in bench.KNOWN.items():
        assert f"`{case_id}`" in measurements, case_id
        assert reason and reason in harness.__doc__, (case_id, reason)


def test_the_cache_check_names_what_is_missing(tmp_path):
    bench = _bench()
    assert "missing" in bench.cached(tmp_path)
    first = next(iter(bench.HARNESS_FILES))
    for path in bench.HARNESS_FILES:
        f = bench.code_dir(tmp_path) / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("not the harness's file" if path == first else "")
    assert "sha256 differs" in bench.cached(tmp_path)


def test_edge_pairs_cover_what_the_review_found():
    """The pairs behind the three causes measured before the alignment stay in the comparison."""
    preds = {(name, gold, pred) for name, gold, pred in _bench().EDGE}
    assert ("college_math", "(-\\infty, \\infty)", "(-\\infty, \\infty)") in preds  # double normalisation
    assert ("math", "12\\frac{1}{2}", "12.5") in preds                              # mixed number
    assert ("math", "\\pi", "3.14159") in preds                                     # π a symbol there
    assert ("college_math", "(4,5)\\cup(2,3)", "(2,3)\\cup(4,5)") in preds          # unions unparsed there


def test_the_paper_config_grades_as_the_harness_under_its_limit():
    """config/paper.yaml grades with the harness's math_equal under the harness's 3 s (evaluate.py:37)."""
    import yaml

    grading = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())["grading"]
    assert grading["grader"] == "harness" and grading["timeout_s"] == _bench().TIMEOUT_S == 3
