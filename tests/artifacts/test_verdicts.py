"""The lesson-by-lesson verdict table that opens paper/report.md (prm_lessons.artifacts.verdicts)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from prm_lessons.artifacts import verdict_rules as R
from prm_lessons.artifacts import verdicts as V
from prm_lessons.artifacts.estimates import Est
from prm_lessons.rules.paper import paper_report

NAN = math.nan


def pb(rows: dict) -> pd.DataFrame:
    """processbench.csv average rows: prm → (f1, lo, hi[, delta, dlo, dhi]) in fractions."""
    out = []
    for prm, v in rows.items():
        f1, lo, hi, *d = v
        d = d or [NAN, NAN, NAN]
        out.append(dict(prm=prm, subset="average", n=40, error_acc=NAN, correct_acc=NAN, f1=f1, f1_ci_low=lo,
                        f1_ci_high=hi, delta_f1_structure=d[0], delta_ci_low=d[1], delta_ci_high=d[2]))
    return pd.DataFrame(out)


def bon(recipe_acc, maj_acc, paired=None, n=4) -> pd.DataFrame:
    rows = [dict(prm="consensus_hard", benchmark="average", metric="prm_product", n=n, accuracy=recipe_acc[0],
                 ci_low=recipe_acc[1], ci_high=recipe_acc[2]),
            dict(prm="consensus_hard", benchmark="average", metric="maj", n=n, accuracy=maj_acc[0],
                 ci_low=maj_acc[1], ci_high=maj_acc[2])]
    if paired is not None:
        rows.append(dict(prm="consensus_hard", benchmark="average", metric="prm_product-maj", n=n,
                         accuracy=paired[0], ci_low=paired[1], ci_high=paired[2]))
    return pd.DataFrame(rows)


def fig6(k, n) -> pd.DataFrame:
    return pd.DataFrame([dict(row="policy samples, judge", key="policy", column="train", n=n, value=100 * k / n)])


def fig8(prm, obs, lo, hi, chance, n, short=True) -> pd.DataFrame:
    rows = [dict(row=prm, column="3+ steps", stage="all responses: observed", n=n, value=obs, ci_low=lo, ci_high=hi),
            dict(row=prm, column="3+ steps", stage="all responses: chance", n=n, value=chance, ci_low=NAN,
                 ci_high=NAN)]
    if short:
        rows += [dict(row=prm, column="1 step", stage=f"all responses: {s}", n=7, value=100.0, ci_low=NAN,
                      ci_high=NAN) for s in ("observed", "chance")]
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------
# the deciding rule: intervals, never point estimates

@pytest.mark.parametrize("est, verdict", [
    (Est(5, 1, 9), V.REPRODUCED), (Est(-5, -9, -1), V.CONTRADICTED), (Est(5, -1, 9), V.UNDECIDABLE),
    (Est(50, NAN, NAN), V.UNDECIDABLE), (None, V.UNDECIDABLE)])
def test_interval_verdict(est, verdict):
    assert V.interval_verdict(est, 0.0, "0")[0] == verdict


def test_a_large_point_difference_with_overlapping_intervals_decides_nothing():
    v, reason = V.separated_verdict(Est(80, 40, 95), Est(20, 5, 45), "judge", "MC")
    assert v == V.UNDECIDABLE and "overlap" in reason


# ------------------------------------------------------------------------------------------------
# one test per lesson and path

@pytest.mark.parametrize("judge, mc, verdict", [
    ((0.6, 0.55, 0.65), (0.3, 0.25, 0.35), V.REPRODUCED),
    ((0.3, 0.25, 0.35), (0.6, 0.55, 0.65), V.CONTRADICTED),
    ((0.5, 0.3, 0.7), (0.4, 0.2, 0.6), V.UNDECIDABLE)])
def test_lesson1_judge_vs_mc(judge, mc, verdict):
    row = V.lesson1_label_sources(pb({"judge": judge, "mc_hard": mc, "human": (0.9, 0.85, 0.95)}))
    assert row.verdict == verdict
    assert "another pool" in row.measured                   # human is context, never the comparison
    assert bool(row.decide) == (verdict == V.UNDECIDABLE)


def test_lesson1_human_far_above_mc_does_not_reproduce_it_alone():
    row = V.lesson1_label_sources(pb({"judge": (0.3, 0.2, 0.4), "mc_hard": (0.3, 0.2, 0.4),
                                      "human": (0.9, 0.85, 0.95)}))
    assert row.verdict == V.UNDECIDABLE


def test_lesson1_absent():
    assert V.lesson1_label_sources(None).verdict == V.ABSENT
    row = V.lesson1_label_sources(pb({"mc_hard": (0.3, 0.2, 0.4)}))
    assert row.verdict == V.ABSENT and "`judge`" in row.reason


@pytest.mark.parametrize("cons, verdict", [((0.7, 0.6, 0.8), V.REPRODUCED), ((0.1, 0.05, 0.15), V.CONTRADICTED),
                                           ((0.35, 0.1, 0.6), V.UNDECIDABLE)])
def test_lesson2_consensus_vs_mc(cons, verdict):
    ts = pd.DataFrame({"variant": ["mc_hard", "consensus_hard"], "n_instances": [48, 6]})
    row = V.lesson2_consensus(pb({"consensus_hard": cons, "mc_hard": (0.3, 0.25, 0.35)}), ts,
                              judge_pb=_judge_pb(0.05, 0.2))   # the gate: a judge above the structure baseline
    assert row.verdict == verdict and "6 vs 48 instances" in row.measured
    assert V.lesson2_consensus(pb({"mc_hard": (0.3, 0.25, 0.35)})).verdict == V.ABSENT


@pytest.mark.parametrize("hard, verdict", [((0.7, 0.6, 0.8), V.REPRODUCED), ((0.1, 0.05, 0.15), V.CONTRADICTED),
                                           ((0.3, 0.2, 0.4), V.UNDECIDABLE)])
def test_lesson3_hard_vs_soft(hard, verdict):
    row = V.lesson3_hard_soft(pb({"consensus_hard": hard, "consensus_soft": (0.3, 0.25, 0.35)}),
                              judge_pb=_judge_pb(0.05, 0.2))
    assert row.verdict == verdict
    assert V.lesson3_hard_soft(pb({"consensus_hard": hard})).verdict == V.ABSENT


def test_lesson3_threshold_compares_the_sweep_ends_fixed_in_advance():
    sweep = [(0.0, "mc_hard"), (0.25, "mc_hard_t1of4"), (0.75, "mc_hard_t3of4")]
    up = (0.2, 0.1, 0.3)   # the gate: one end above the structure-only baseline
    # the middle point is the highest: it must not be picked (not tuned on evaluation results)
    frame = pb({"mc_hard": (0.5, 0.45, 0.55, *up), "mc_hard_t1of4": (0.9, 0.85, 0.95),
                "mc_hard_t3of4": (0.2, 0.15, 0.25)})
    assert V.lesson3_threshold(frame, None, sweep).verdict == V.REPRODUCED
    frame = pb({"mc_hard": (0.2, 0.15, 0.25), "mc_hard_t1of4": (0.9, 0.85, 0.95),
                "mc_hard_t3of4": (0.5, 0.45, 0.55, *up)})
    assert V.lesson3_threshold(frame, None, sweep).verdict == V.CONTRADICTED
    frame = pb({"mc_hard": (0.5, 0.3, 0.7, *up), "mc_hard_t3of4": (0.4, 0.2, 0.6)})
    assert V.lesson3_threshold(frame, None, sweep).verdict == V.UNDECIDABLE
    assert V.lesson3_threshold(pb({"mc_hard": (0.5, 0.3, 0.7)}), None, sweep).verdict == V.ABSENT


def test_lesson4_trusts_the_judge_only_if_it_beats_the_structure_baseline():
    good = pb({"critic-j": (0.6, 0.5, 0.7, 0.2, 0.1, 0.3)})
    bad = pb({"critic-j": (0.1, 0.05, 0.15, -0.2, -0.3, -0.1)})
    assert V.lesson4_flawed_process(fig6(5, 20), good, ["critic-j"]).verdict == V.REPRODUCED
    row = V.lesson4_flawed_process(fig6(5, 20), bad, ["critic-j"])
    assert row.verdict == V.UNDECIDABLE and "does not beat" in row.reason and row.decide
    assert V.lesson4_flawed_process(fig6(5, 20), good, []).verdict == V.UNDECIDABLE   # instrument unchecked
    both = pd.concat([bad, good.assign(prm="critic-k")])   # the first critic in config order counts, not the best
    assert V.lesson4_flawed_process(fig6(5, 20), both, ["critic-j", "critic-k"]).verdict == V.UNDECIDABLE
    assert V.lesson4_flawed_process(fig6(5, 20), both, ["critic-k", "critic-j"]).verdict == V.REPRODUCED
    row = V.lesson4_flawed_process(fig6(0, 20), good, ["critic-j"])
    assert row.verdict == V.UNDECIDABLE and "contains 0" in row.reason
    assert V.lesson4_flawed_process(None).verdict == V.ABSENT
    assert "5 of 20" in V.lesson4_flawed_process(fig6(5, 20), good, ["critic-j"]).measured


@pytest.mark.parametrize("obs, lo, hi, verdict", [(60.0, 45.0, 73.0, V.REPRODUCED), (5.0, 1.0, 15.0, V.CONTRADICTED),
                                                  (35.0, 20.0, 50.0, V.UNDECIDABLE)])
def test_lesson5_observed_share_against_its_chance_rate(obs, lo, hi, verdict):
    row = V.lesson5_min_at_last(fig8("mc_hard", obs, lo, hi, 30.0, 40))
    assert row.verdict == verdict
    assert "chance 30.0 %" in row.measured and "1 step: 100.0 %" in row.measured and "of 40 responses" in row.measured


def test_lesson5_without_responses_of_three_steps_is_undecidable_and_says_why():
    one_step = fig8("mc_hard", NAN, NAN, NAN, NAN, 0).query("column == '1 step'")
    row = V.lesson5_min_at_last(one_step)
    assert row.verdict == V.UNDECIDABLE and "3 or more steps" in row.reason
    assert V.lesson5_min_at_last(None).verdict == V.ABSENT
    assert V.lesson5_min_at_last(fig8("human", 60.0, 45.0, 73.0, 30.0, 40)).verdict == V.ABSENT  # not the PRM fixed


def test_lesson5_needs_a_prm_that_learnt_later_steps():
    """mc_hard on 24 responses, 19 of them cut to one negative first step (28 labelled steps): its minimum
    lands on first steps, which would read as 'contradicted' while it says nothing about outcome drift."""
    cells = fig8("mc_hard", 5.0, 1.0, 15.0, 30.0, 40)
    few = pd.DataFrame({"variant": ["mc_hard", "human"], "n_instances": [24, 200], "n_steps": [28, 600]})
    row = V.lesson5_min_at_last(cells, trainsets=few)
    assert row.verdict == V.UNDECIDABLE and "4 labelled steps after a first step" in row.reason
    assert "trained on 24 instances" in row.measured and str(V.MIN_LATER_STEPS) in row.decide
    enough = few.assign(n_steps=[24 + V.MIN_LATER_STEPS, 600])
    assert V.lesson5_min_at_last(cells, trainsets=enough).verdict == V.CONTRADICTED
    assert V.lesson5_min_at_last(cells, trainsets=few.iloc[1:]).verdict == V.CONTRADICTED  # no row: share alone


@pytest.mark.parametrize("paired, verdict", [((0.05, 0.01, 0.09), V.REPRODUCED),
                                             ((-0.05, -0.09, -0.01), V.CONTRADICTED),
                                             ((0.02, -0.03, 0.07), V.UNDECIDABLE)])
def test_lesson6_recipe_vs_maj_from_the_paired_interval(paired, verdict):
    row = V.lesson6_bon_vs_maj(bon((0.45, 0.4, 0.5), (0.43, 0.38, 0.48), paired), processbench=RECIPE_ABOVE)
    assert row.verdict == verdict and "paired difference" in row.measured


def test_lesson6_without_a_paired_difference_uses_the_unpaired_intervals():
    assert V.lesson6_bon_vs_maj(bon((0.45, 0.4, 0.5), (0.43, 0.38, 0.48)),
                                processbench=RECIPE_ABOVE).verdict == V.UNDECIDABLE
    row = V.lesson6_bon_vs_maj(bon((0.8, 0.75, 0.85), (0.4, 0.35, 0.45)), processbench=RECIPE_ABOVE)
    assert row.verdict == V.REPRODUCED and "unpaired intervals" in row.reason
    assert V.lesson6_bon_vs_maj(None).verdict == V.ABSENT


# ------------------------------------------------------------------------------------------------
# the table and the report

def test_every_lesson_has_a_row_even_with_no_tables():
    rows = V.verdict_rows()
    assert [r.lesson.split(".")[0] for r in rows] == ["1a", "1b", "(label level) 1/4", "(label level) 3b", "2",
                                                     "3a", "3b", "4a", "4b", "5", "6"]
    assert {r.verdict for r in rows} == {V.ABSENT} and all(r.reason for r in rows)


def test_a_lesson_that_fails_becomes_a_row_not_a_failed_report():
    broken = fig8("mc_hard", 60.0, 45.0, 73.0, 30.0, 40).assign(value="not a number")
    rows = V.verdict_rows(fig8=broken)
    assert len(rows) == 11
    assert rows[9].lesson == V.L5 and rows[9].verdict == V.ABSENT and "could not be computed" in rows[9].reason


def test_markdown_table_escapes_and_tallies():
    rows = [V.Verdict("L | x", "p", "m", V.UNDECIDABLE, "interval contains 0", "more data"),
            V.Verdict("L2", "p", "m", V.REPRODUCED)]
    md = R.verdicts_markdown(rows)
    assert md.startswith(R.HEADING) and "L \\| x" in md
    assert "interval contains 0. Would decide it: more data" in md and "**reproduced**" in md
    assert "1 reproduced, 1 undecidable here" in md


def test_report_opens_with_the_verdict_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/tables").mkdir(parents=True)
    pb({"mc_hard": (0.3, 0.25, 0.35), "judge": (0.6, 0.55, 0.65)}).assign(subset="average").to_csv(
        "results/tables/processbench.csv", index=False)
    bon((0.45, 0.4, 0.5), (0.43, 0.38, 0.48), (0.02, -0.03, 0.07)).to_csv("results/tables/bon.csv", index=False)
    paper_report(inputs={"processbench_table": "results/tables/processbench.csv",
                         "bon_table": "results/tables/bon.csv"},
                 outputs={"report": "paper/report.md", "run_info": "paper/tables/run_info.tex"},
                 params={"run": {"name": "t"}, "n": 4, "skipped": {}}, wildcards={}, threads=1)
    text = (tmp_path / "paper/report.md").read_text()
    body = [ln for ln in text.splitlines() if ln.strip()]
    assert body[0].startswith("# ") and body[1] == R.HEADING
    table = [ln for ln in body if ln.startswith("| 1a. ")]
    assert table and "| **reproduced** |" in table[0]      # judge's interval lies above MC's
    assert [ln for ln in body if ln.startswith("| 6. ")][0].count("undecidable here") == 1
    assert text.index(R.HEADING) < text.index("## What this run found")


def _fig6_rows(judge_kn, checker_kn):
    rows = []
    for label, (k, n) in (("policy samples, judge", judge_kn), ("policy samples, arithmetic checker", checker_kn)):
        rows.append(dict(row=label, key="policy", column="train", n=n, value=100 * k / n))
    return pd.DataFrame(rows)


GOLD_OK = pd.DataFrame([dict(subset="all", kind="gold", metric="false_alarm", k=0, n=60, rate=0.0, ci_low=0.0,
                              ci_high=0.06)])
RECIPE_ABOVE = pb({"consensus_hard": (0.5, 0.4, 0.6, 0.2, 0.1, 0.3)})  # lesson 6's gate passes


def test_lesson4_checker_and_judge_are_not_pooled_and_the_checker_decides():
    # judge says 19 of 20 flawed, checker 0 of 40: pooled they would read ~32 %; apart, the checker decides
    row = V.lesson4_flawed_process(_fig6_rows((19, 20), (0, 40)))
    assert "0 of 40" in row.measured and "19 of 20" in row.measured
    row = V.lesson4_flawed_process(_fig6_rows((19, 20), (0, 40)), checker_validation=GOLD_OK)
    assert row.verdict == V.UNDECIDABLE and "contains 0" in row.reason
    assert V.lesson4_flawed_process(_fig6_rows((0, 20), (10, 40)), checker_validation=GOLD_OK).verdict == V.REPRODUCED
    # the checker's precision is its gate: not measured, the rate decides nothing
    row = V.lesson4_flawed_process(_fig6_rows((0, 20), (10, 40)))
    assert row.verdict == V.UNDECIDABLE and "gate not measured" in row.reason


def test_lesson1_exact_labels_on_the_same_pool_decide_over_the_judge():
    base = {"mc_hard": (0.3, 0.25, 0.35), "judge": (0.3, 0.25, 0.35)}
    assert V.lesson1_label_sources(pb({**base, "checker": (0.6, 0.55, 0.65)})).verdict == V.REPRODUCED
    assert V.lesson1_label_sources(pb({**base, "checker": (0.1, 0.05, 0.15)})).verdict == V.CONTRADICTED
    row = V.lesson1_label_sources(pb({"mc_hard": (0.3, 0.25, 0.35), "checker": (0.32, 0.27, 0.37)}))
    assert row.verdict == V.UNDECIDABLE and "exact" in row.measured


def _judge_pb(lo, hi):
    return pd.DataFrame([dict(judge="judge", subset="average", f1=0.3, delta_f1_structure=(lo + hi) / 2,
                              delta_ci_low=lo, delta_ci_high=hi, n=50)])


def test_lesson4_the_judge_with_its_labelling_prompt_is_the_instrument_check():
    judge_only = pd.DataFrame([dict(row="policy samples, judge", key="policy", column="train", n=20, value=25.0)])
    assert V.lesson4_flawed_process(judge_only, judge_pb=_judge_pb(0.05, 0.2)).verdict == V.REPRODUCED
    row = V.lesson4_flawed_process(judge_only, judge_pb=_judge_pb(-0.3, 0.0))
    assert row.verdict == V.UNDECIDABLE and "does not beat" in row.reason


def test_lesson1_shows_the_judge_scored_with_its_own_prompt():
    row = V.lesson1_label_sources(pb({"judge": (0.3, 0.2, 0.4), "mc_hard": (0.3, 0.2, 0.4)}), _judge_pb(-0.3, 0.0))
    assert "its own prompt" in row.measured and "`judge`" in row.measured
    assert "`judge` -15.0 [-30.0, +0.0]" in row.measured  # points, as the table's fractions x 100


def _audit_rows():
    rows = []
    for section, t, k, metric, v, lo, hi in [("mc", 0.0, 8, "first_error_accuracy", 0.56, 0.40, 0.70),
                                              ("mc", 0.875, 8, "first_error_accuracy", 0.33, 0.20, 0.50),
                                              ("judge", None, None, "first_error_accuracy", 0.14, 0.06, 0.29),
                                              ("consensus", None, None, "precision", 0.75, 0.30, 0.95)]:
        rows.append(dict(section=section, source=section, generator="all", kind="all", threshold=t, k_used=k,
                         metric=metric, n=36, successes=0, value=v, ci_low=lo, ci_high=hi))
    return pd.DataFrame(rows)


def test_the_label_audit_is_context_in_the_label_lessons_never_their_verdict():
    p = pb({"judge": (0.3, 0.2, 0.4), "mc_hard": (0.3, 0.2, 0.4), "consensus_hard": (0.3, 0.2, 0.4)})
    with_audit = V.lesson1_label_sources(p, audit=_audit_rows())
    assert "MC 56.0 [40.0, 70.0] %" in with_audit.measured and "judge 14.0" in with_audit.measured
    assert with_audit.verdict == V.lesson1_label_sources(p).verdict
    assert "consensus-kept 75.0" in V.lesson2_consensus(p, audit=_audit_rows()).measured
    rows = V.verdict_rows(processbench=p, audit=_audit_rows())
    assert len(rows) == 11 and "label audit" in rows[0].measured


def test_report_renders_the_label_audit_after_the_verdicts(tmp_path, monkeypatch):
    from prm_lessons.tables import write_csv
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/tables").mkdir(parents=True)
    write_csv(_audit_rows().assign(run="t"), "results/tables/label_audit.csv", "label_audit_csv")
    paper_report(inputs={"label_audit_table": "results/tables/label_audit.csv"},
                 outputs={"report": "paper/report.md", "run_info": "paper/tables/run_info.tex"},
                 params={"run": {"name": "t"}, "audit_k": 8, "skipped": {}}, wildcards={}, threads=1)
    text = (tmp_path / "paper/report.md").read_text()
    assert text.index(R.HEADING) < text.index("### Label audit") < text.index("## What this run found")
    assert "t = 7/8, K' = 8: 33%" in text


def test_lesson4_on_the_best_of_n_samples_prefers_the_checker_table():
    cb = pd.DataFrame([dict(benchmark=b, metric=m, n=4, count=c, total=t, value=c / t, ci_low=0, ci_high=1)
                       for b, m, c, t in [("a", "flawed_among_correct", 3, 52), ("b", "flawed_among_correct", 5, 38),
                                          ("a", "step_coverage", 30, 100), ("b", "step_coverage", 30, 100)]])
    row = V.lesson4_flawed_process(None, checker_bon=cb, checker_validation=GOLD_OK)
    assert row.verdict == V.REPRODUCED and "8 of 90" in row.measured and "30 %" in row.measured
    assert "of all samples" in row.measured      # no step_coverage_correct row: says whose coverage it is
    assert "8.9 [4.6, 16.6] %" in row.measured and "gate:" in row.measured
    none = cb.assign(count=[0, 0, 30, 30])
    assert V.lesson4_flawed_process(None, checker_bon=none, checker_validation=GOLD_OK).verdict == V.UNDECIDABLE
