"""docs/paper-scale.md's generated GPU-hour table (prm_lessons.preflight.gpu_hours): the work counted from
config/paper.yaml's plan (not by hand), and a measured rate rendered as measured, an assumed one as assumed."""
import copy
from pathlib import Path

import pytest

from prm_lessons import plan
from prm_lessons.config import load_config
from prm_lessons.preflight import gpu_hours

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def paper():
    return load_config(gpu_hours.PAPER)


@pytest.fixture(scope="module")
def counts(paper):
    return gpu_hours.work_counts(paper)


@pytest.fixture(scope="module")
def rates():
    return gpu_hours.load_rates()


def test_counts_come_from_the_plan(paper, counts):
    big = counts["policies"]["qwen25_math_72b_instruct"]
    benches = plan.bon_policies(paper)["qwen25_math_72b_instruct"]["benchmarks"]
    assert big["jobs"] == sum(plan.sample_shard_count(paper, b, "qwen25_math_72b_instruct") for b in benches) == 35
    assert big["gpus"] == 4 and big["responses"] == 117_256  # 14,657 problems x 8
    small = counts["policies"]["qwen25_math_7b_instruct"]
    assert small["jobs"] + counts["train"]["jobs"] == 54 and counts["train"]["responses"] == 7500 * 8
    # Best-of-64 sets are sampled once at 64: MATH500 alone is 500 x 64
    assert small["responses"] == sum(plan.dataset_problems(paper, b) * plan.sample_n(paper, b)
                                     for b in paper["benchmarks"]) == 232_328
    assert counts["search"]["responses"] == 13_487 * 8
    assert counts["judge"]["jobs"] == 31 and counts["judge"]["judgements"] == 60_000 + (1319 + 5000 + 675 + 500) * 8
    assert counts["training"]["prms"] == len(plan.trained_variants(paper)) == 14
    assert counts["scoring"]["big_prms"] == ["qwen25_math_prm_72b", "qwen25_math_rm_72b"]
    assert counts["scoring"]["big_responses"] == 2 * (232_328 + 117_256)


def test_assumed_rates_render_as_assumed(counts, rates):
    text = gpu_hours.render(counts, rates)
    assert text.startswith(gpu_hours.BEGIN) and text.endswith(gpu_hours.END)
    assert "0 of the 20 rates this table uses are measured; every one is assumed" in text
    assert "measured**" not in text and "sample_7b 4,000–10,000 tokens/s per GPU (assumed)" in text
    assert "| 35 TP-4 jobs" in text or "35 TP-4 jobs (11 sets)" in text


def test_a_measured_rate_renders_as_measured_and_sets_both_ends(counts, rates):
    small = copy.deepcopy(rates)
    small["sample_7b"] = {"value": 8000, "unit": "tokens/s per GPU", "source": "measured",
                          "measured": "2026-12-01, NVIDIA H100 80GB HBM3"}
    rows = {r.stage.split(" (")[0]: r for r in gpu_hours.rows(counts, small)}
    row = rows["sampling, 7B policies"]
    resp = 292_328
    assert row.low == pytest.approx(resp * 600 / 8000 / 3600 + 54 * 2 / 60)
    assert row.high == pytest.approx(resp * 600 / 8000 / 3600 + 54 * 3 / 60)  # only the start-up stays a range
    text = gpu_hours.render(counts, small)
    line = next(ln for ln in text.splitlines() if ln.startswith("| sampling, 7B policies"))
    assert "sample_7b 8,000 tokens/s per GPU (**measured**, 2026-12-01, NVIDIA H100 80GB HBM3)" in line
    assert "startup_7b_min 2–3 min per job (assumed)" in line
    assert "1 of the 20 rates this table uses are measured (sample_7b)" in text
    # the 72B row does not use the 7B rate: all assumed there
    assert "measured" not in next(ln for ln in text.splitlines() if ln.startswith("| sampling, 72B"))


def test_rates_file_is_checked(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text("rates:\n  x: {low: 1, high: 2, unit: u, source: guessed}\n")
    with pytest.raises(ValueError, match="source must be assumed or measured"):
        gpu_hours.load_rates(bad)
    bad.write_text("rates:\n  x: {unit: u, source: measured}\n")
    with pytest.raises(ValueError, match="measured but has no value"):
        gpu_hours.load_rates(bad)


def test_splice_between_the_markers():
    doc = f"head\n{gpu_hours.BEGIN}\nold\n{gpu_hours.END}\ntail\n"
    assert gpu_hours.splice(doc, "NEW") == "head\nNEW\ntail\n"
    with pytest.raises(ValueError, match="needs exactly one"):
        gpu_hours.splice("no markers", "NEW")
    page = (ROOT / "docs/paper-scale.md").read_text()
    assert page == gpu_hours.paper_scale_doc()  # the committed page holds the generated table (make docs-check)


@pytest.mark.parametrize("lanes", [1, 2, 4])
def test_mc_grading_adds_or_overlaps_by_lanes(counts, rates, lanes):
    """mc.lanes 1 grades between engine calls (generation + grading); 2 or more grade while the engine
    generates (the larger of the two). Measured-looking point rates make both ends exact."""
    r = copy.deepcopy(rates)
    point = {"source": "measured", "measured": "test"}
    r["mc_completions_per_response"] = {"value": 10, "unit": "completions", **point}
    r["mc_tokens_per_completion"] = {"value": 100, "unit": "tokens", **point}
    r["mc_generate"] = {"value": 1000, "unit": "tokens/s per GPU", **point}
    c = copy.deepcopy(counts)
    c["mc"]["lanes"] = lanes
    comp = c["mc"]["responses"] * 10
    gen = comp * 100 / 1000 / 3600
    startup_lo = c["mc"]["jobs"] * 2 / 60
    for grade_s in (0.01, 1.0):  # grading faster, then slower than generation (0.1 s per completion)
        r["mc_grade_s_per_completion"] = {"value": grade_s, "unit": "s per completion", **point}
        row = next(x for x in gpu_hours.rows(c, r) if x.stage.startswith("MC labels"))
        grade = comp * grade_s / 3600
        assert row.low == pytest.approx((gen + grade if lanes == 1 else max(gen, grade)) + startup_lo)
        assert ("overlapped" in row.work) == (lanes > 1)
