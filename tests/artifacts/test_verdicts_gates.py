"""Every row of the verdict table driven by hand-built frames to each of its outcomes (reproduced,
contradicted where the claim allows it, undecidable by interval, undecidable by gate, not measured), the
gates fixed in prm_lessons.artifacts.verdicts before any run, and the same-pool paired table."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from prm_lessons.artifacts import verdicts as V
from prm_lessons.artifacts.verdict_rules import verdicts_markdown
from prm_lessons.rules.paper import paper_report

NAN = math.nan
UP, DOWN, ZERO = (0.1, 0.05, 0.15), (-0.1, -0.15, -0.05), (0.02, -0.03, 0.07)


def paired(*rows, n_cases=240, n_resamples=10) -> pd.DataFrame:
    """processbench_paired.csv `average` rows: (prm_a, prm_b or '', value, lo, hi), fractions."""
    return pd.DataFrame([dict(prm_a=a, prm_b=b or NAN, subset="average", n_cases=n_cases, n_resamples=n_resamples,
                              value=v, ci_low=lo, ci_high=hi, run="t") for a, b, (v, lo, hi) in rows])


def pb(rows: dict) -> pd.DataFrame:
    """processbench.csv average rows: prm → (f1, lo, hi[, delta, dlo, dhi]) in fractions."""
    out = []
    for prm, v in rows.items():
        f1, lo, hi, *d = v
        d = d or [NAN, NAN, NAN]
        out.append(dict(prm=prm, subset="average", n=240, f1=f1, f1_ci_low=lo, f1_ci_high=hi,
                        delta_f1_structure=d[0], delta_ci_low=d[1], delta_ci_high=d[2]))
    return pd.DataFrame(out)


def sizes(**n) -> pd.DataFrame:
    return pd.DataFrame({"variant": list(n), "n_instances": list(n.values())})


def judge_pb(lo, hi) -> pd.DataFrame:
    return pd.DataFrame([dict(judge="judge", subset="average", f1=0.3, delta_f1_structure=(lo + hi) / 2,
                              delta_ci_low=lo, delta_ci_high=hi, n=50)])


JUDGE_OK, JUDGE_BAD = judge_pb(0.05, 0.2), judge_pb(-0.3, 0.0)
EQUAL = sizes(exact=64, mc_hard=64)


# ------------------------------------------------------------------------------------------------
# 1a: exact vs MC on the same pool, paired over training resamples and cases

def _1a(diff, vs_structure=(0.2, 0.1, 0.3), trainsets=EQUAL, flip=False):
    rows = [("mc_hard", "exact", tuple(-x for x in (diff[0], diff[2], diff[1])))] if flip else \
        [("exact", "mc_hard", diff)]
    rows += [("exact", "structure", vs_structure), ("exact", "", (0.45, 0.4, 0.5)), ("mc_hard", "", (0.35, 0.3, 0.4))]
    return V.lesson1_label_sources(None, paired=paired(*rows), trainsets=trainsets)


@pytest.mark.parametrize("diff, verdict", [(UP, V.REPRODUCED), (DOWN, V.CONTRADICTED), (ZERO, V.UNDECIDABLE)])
def test_1a_decides_by_the_paired_interval(diff, verdict):
    row = _1a(diff)
    assert row.lesson == V.L1A and row.verdict == verdict
    assert "10 training resamples of the pool × 240 cases" in row.measured
    assert "trained on 64 vs 64 instances" in row.measured and "gate:" in row.measured
    if verdict == V.UNDECIDABLE:
        assert "contains 0" in row.reason and row.decide


def test_1a_reads_a_pair_stored_the_other_way_round_with_its_sign_flipped():
    row = _1a(UP, flip=True)
    assert row.verdict == V.REPRODUCED and "exact − MC +10.0 [+5.0, +15.0]" in row.measured


@pytest.mark.parametrize("kw, why", [
    (dict(trainsets=sizes(exact=64, mc_hard=40)), "64 vs 40"),
    (dict(trainsets=None), "training sizes not in trainsets.csv"),
    (dict(vs_structure=(0.0, -0.1, 0.1)), "does not beat the structure-only baseline")])
def test_1a_gate_fails_in_both_directions(kw, why):
    for diff in (UP, DOWN):
        row = _1a(diff, **kw)
        assert row.verdict == V.UNDECIDABLE and "gate not passed" in row.reason and why in row.reason


def test_1a_structure_baseline_under_either_name():
    rows = [("exact", "mc_hard", UP), ("baseline_structure", "exact", (-0.2, -0.3, -0.1))]
    assert V.lesson1_label_sources(None, paired=paired(*rows), trainsets=EQUAL).verdict == V.REPRODUCED


def test_1a_without_the_paired_table_falls_back_to_the_unpaired_comparison():
    assert V.lesson1_label_sources(None).verdict == V.ABSENT
    frame = pb({"mc_hard": (0.3, 0.25, 0.35), "judge": (0.6, 0.55, 0.65)})
    row = V.lesson1_label_sources(frame, paired=paired(("judge", "mc_hard", UP)))  # no exact − MC pair
    assert row.lesson == V.L1 and row.verdict == V.REPRODUCED
    assert V.lesson1_label_sources(pb({"mc_hard": (0.3, 0.25, 0.35), "exact": (0.6, 0.55, 0.65)})
                                   ).verdict == V.REPRODUCED


# ------------------------------------------------------------------------------------------------
# 1b: the judge, gated by its own instrument check

@pytest.mark.parametrize("diff, verdict", [(UP, V.REPRODUCED), (DOWN, V.CONTRADICTED), (ZERO, V.UNDECIDABLE)])
def test_1b_decides_once_the_judge_beats_structure(diff, verdict):
    row = V.lesson1b_judge(None, JUDGE_OK, paired(("judge", "mc_hard", diff)))
    assert row.lesson == V.L1B and row.verdict == verdict and "gate: the judge" in row.measured


def test_1b_a_judge_below_structure_is_not_decidable_with_its_measured_difference():
    for diff in (UP, DOWN):
        row = V.lesson1b_judge(None, JUDGE_BAD, paired(("judge", "mc_hard", diff)))
        assert row.verdict == V.UNDECIDABLE and row.reason.startswith("not decidable")
        assert "does not beat the structure-only baseline" in row.reason and "-15.0 [-30.0, +0.0]" in row.reason


def test_1b_gate_from_the_critic_row_unmeasured_and_absent():
    frame = pb({"judge": (0.6, 0.55, 0.65), "mc_hard": (0.3, 0.25, 0.35), "critic-j": (0.5, 0.4, 0.6, 0.2, 0.1, 0.3)})
    assert V.lesson1b_judge(frame, judge_critics=["critic-j"]).verdict == V.REPRODUCED   # unpaired, gate by critic
    row = V.lesson1b_judge(frame)
    assert row.verdict == V.UNDECIDABLE and row.reason.startswith("gate not measured")
    assert V.lesson1b_judge(None).verdict == V.ABSENT
    assert V.lesson1b_judge(None, JUDGE_OK).verdict == V.ABSENT      # gate passes, no judge PRM


# ------------------------------------------------------------------------------------------------
# label level: the mechanisms on the pool's exact truth

def mech(rows) -> pd.DataFrame:
    """label_audit.csv mechanism rows: (metric, kind, threshold, n, successes, value, lo, hi)."""
    return pd.DataFrame([dict(section="mechanism", source="mc", generator="all", kind=k, threshold=t, k_used=8,
                              metric=m, n=n, successes=s, value=v, ci_low=lo, ci_high=hi)
                         for m, k, t, n, s, v, lo, hi in rows])


def detection(gap, n_keep=16):
    return mech([("error_step_detected", "error", 0.0, 16, 15, 15 / 16, 0.7, 0.99),
                 ("error_step_detected", "keep", 0.0, n_keep, 4, 4 / n_keep, 0.1, 0.5),
                 ("detection_gap", "error-keep", 0.0, 32, NAN, *gap)])


@pytest.mark.parametrize("gap, verdict", [((0.69, 0.4, 0.85), V.REPRODUCED), ((-0.4, -0.6, -0.1), V.CONTRADICTED),
                                          ((0.1, -0.1, 0.3), V.UNDECIDABLE)])
def test_label_level_mc_misses_answer_keeping_errors(gap, verdict):
    row = V.lesson_label_mc_misses_keep(detection(gap))
    assert row.lesson.startswith("(label level)") and row.verdict == verdict
    assert "answer-keeping errors 4 of 16" in row.measured and "gate: ≥ 8 solutions of each kind" in row.measured


def test_label_level_mechanism_gate_and_absence():
    row = V.lesson_label_mc_misses_keep(detection((0.69, 0.4, 0.85), n_keep=4))
    assert row.verdict == V.UNDECIDABLE and "fewer than 8" in row.reason and "answer-keeping 4" in row.reason
    assert V.lesson_label_mc_misses_keep(None).verdict == V.ABSENT
    assert V.lesson_label_mc_misses_keep(detection((0.5, 0.2, 0.7)).iloc[:2]).verdict == V.ABSENT


def threshold_gap(gap, n=32):
    return mech([("first_error_accuracy_gap", "all", 0.5, n, NAN, 0.9, 0.8, 1.0),   # not the sweep's end
                 ("first_error_accuracy_gap", "all", 0.875, n, NAN, *gap)])


@pytest.mark.parametrize("gap, verdict", [((0.2, 0.05, 0.35), V.REPRODUCED), ((-0.2, -0.35, -0.05), V.CONTRADICTED),
                                          ((0.05, -0.1, 0.2), V.UNDECIDABLE)])
def test_label_level_threshold_reads_the_largest_threshold(gap, verdict):
    row = V.lesson_label_threshold(threshold_gap(gap))
    assert row.lesson.startswith("(label level)") and row.verdict == verdict
    assert "t = 7/8" in row.measured and "over 32 solutions" in row.measured


def test_label_level_threshold_gate_and_absence():
    row = V.lesson_label_threshold(threshold_gap((0.2, 0.05, 0.35), n=5))
    assert row.verdict == V.UNDECIDABLE and "fewer than 8" in row.reason
    assert V.lesson_label_threshold(None).verdict == V.ABSENT
    assert V.lesson_label_threshold(detection(UP)).verdict == V.ABSENT


# ------------------------------------------------------------------------------------------------
# 2 and 3a: a judge above structure, else "not a laptop lesson"

@pytest.mark.parametrize("fn, a, b", [(V.lesson2_consensus, "consensus_hard", "mc_hard"),
                                      (V.lesson3_hard_soft, "consensus_hard", "consensus_soft")])
def test_consensus_lessons_need_a_judge_that_beats_structure(fn, a, b):
    for diff, verdict in ((UP, V.REPRODUCED), (DOWN, V.CONTRADICTED), (ZERO, V.UNDECIDABLE)):
        row = fn(None, judge_pb=JUDGE_OK, paired=paired((a, b, diff)))
        assert row.verdict == verdict and "paired" in row.measured and "gate: the judge" in row.measured
        row = fn(None, judge_pb=JUDGE_BAD, paired=paired((a, b, diff)))
        assert row.verdict == V.UNDECIDABLE and V.NOT_LAPTOP in row.reason and "-15.0 [-30.0, +0.0]" in row.reason
    row = fn(None, judge_pb=JUDGE_BAD)                    # no consensus PRM at all: still the measured reason
    assert row.verdict == V.UNDECIDABLE and V.NOT_LAPTOP in row.reason
    row = fn(None, paired=paired((a, b, UP)))
    assert row.verdict == V.UNDECIDABLE and row.reason.startswith("gate not measured")
    assert fn(None).verdict == V.ABSENT and fn(None, judge_pb=JUDGE_OK).verdict == V.ABSENT


# ------------------------------------------------------------------------------------------------
# 3b PRM level: the sweep's ends, paired

SWEEP = [(0.0, "mc_hard"), (0.5, "mc_hard_t1of2")]
SWEEP_PB = pb({"mc_hard": (0.4, 0.3, 0.5), "mc_hard_t1of2": (0.4, 0.3, 0.5)})


@pytest.mark.parametrize("diff, verdict", [(UP, V.REPRODUCED), (DOWN, V.CONTRADICTED), (ZERO, V.UNDECIDABLE)])
def test_3b_prm_level_paired_ends(diff, verdict):
    p = paired(("mc_hard", "mc_hard_t1of2", diff), ("mc_hard", "structure", (0.2, 0.1, 0.3)))
    row = V.lesson3_threshold(SWEEP_PB, sizes(mc_hard=64, mc_hard_t1of2=64), SWEEP, paired=p)
    assert row.verdict == verdict and "paired difference t = 0 − t = 1/2" in row.measured


def test_3b_prm_level_gate():
    noise = paired(("mc_hard", "mc_hard_t1of2", UP), ("mc_hard", "structure", ZERO),
                   ("mc_hard_t1of2", "structure", ZERO))
    row = V.lesson3_threshold(SWEEP_PB, None, SWEEP, paired=noise)
    assert row.verdict == V.UNDECIDABLE and "neither end beats" in row.reason
    p = paired(("mc_hard", "mc_hard_t1of2", UP), ("mc_hard", "structure", (0.2, 0.1, 0.3)))
    row = V.lesson3_threshold(SWEEP_PB, sizes(mc_hard=64, mc_hard_t1of2=30), SWEEP, paired=p)
    assert row.verdict == V.UNDECIDABLE and "unequal sizes" in row.reason
    assert V.lesson3_threshold(None).verdict == V.ABSENT


def test_no_prm_level_row_names_the_label_audit_as_what_decides_it():
    prm_level = [n for n in dir(V) if n.endswith("_DECIDE") and not n.startswith(("LM", "LT"))]
    assert prm_level and all("label audit" not in getattr(V, n).lower() for n in prm_level)
    rows = V.verdict_rows(processbench=SWEEP_PB, judge_pb=JUDGE_BAD, threshold_sweep=SWEEP,
                          paired=paired(("exact", "mc_hard", ZERO)), trainsets=EQUAL)
    for r in rows:
        if not r.lesson.startswith("(label level)"):
            assert "label audit" not in r.decide.lower(), r.lesson


# ------------------------------------------------------------------------------------------------
# 4a: existence and rate, a lower bound gated by the checker's precision

def checker_bon(flawed, correct, coverage_correct=(7, 30)):
    rows = [("a", "flawed_among_correct", flawed, correct), ("a", "step_coverage", 111, 338)]
    if coverage_correct:
        rows.append(("a", "step_coverage_correct", *coverage_correct))
    return pd.DataFrame([dict(benchmark=b, metric=m, n=4, count=c, total=t, value=c / t, ci_low=0, ci_high=1)
                         for b, m, c, t in rows])


def gold(k, n):
    return pd.DataFrame([dict(subset="all", kind="gold", metric="false_alarm", k=k, n=n, rate=k / n, ci_low=0.0,
                              ci_high=1.0)])


def test_4a_coverage_is_over_the_correct_answer_samples_and_the_rate_a_lower_bound():
    row = V.lesson4_flawed_process(None, checker_bon=checker_bon(2, 13), checker_validation=gold(0, 60))
    assert row.verdict == V.REPRODUCED and "2 of 13" in row.measured
    assert "it could check 23 % of their steps (7 of 30)" in row.measured and "lower bound" in row.measured
    assert "false alarms on constructed gold solutions 0 of 60" in row.measured


def test_4a_outcomes_undecidable_by_interval_and_by_gate_never_contradicted():
    row = V.lesson4_flawed_process(None, checker_bon=checker_bon(0, 13), checker_validation=gold(0, 60))
    assert row.verdict == V.UNDECIDABLE and "contains 0" in row.reason
    row = V.lesson4_flawed_process(None, checker_bon=checker_bon(9, 13), checker_validation=gold(6, 60))
    assert row.verdict == V.UNDECIDABLE and "gate not passed" in row.reason and "6 of 60" in row.reason
    row = V.lesson4_flawed_process(None, checker_bon=checker_bon(9, 13), checker_validation=gold(0, 5))
    assert row.verdict == V.UNDECIDABLE and "gate not passed" in row.reason            # too few gold solutions
    row = V.lesson4_flawed_process(None, checker_bon=checker_bon(9, 13))
    assert row.verdict == V.UNDECIDABLE and "gate not measured" in row.reason
    assert "never contradict" in V.lesson4_flawed_process.__doc__
    assert V.lesson4_flawed_process(None).verdict == V.ABSENT


def test_4a_human_annotation_decides_before_the_gated_checker():
    human = pd.DataFrame([dict(key="policy", row="policy samples, human annotation", n=13, value=100 * 8 / 13)])
    row = V.lesson4_flawed_process(human, checker_bon=checker_bon(0, 13), checker_validation=gold(6, 60))
    assert row.verdict == V.REPRODUCED and "human annotation" in row.measured


# ------------------------------------------------------------------------------------------------
# 4b: the Table 5 analogue, exact vs MC on answer-keeping error cases

def table5(exact, mc, n=(12, 12)) -> pd.DataFrame:
    """Table 5 cells: prm → accuracy (%) per subset with n cases each."""
    rows = []
    for prm, acc in (("exact", exact), ("mc_hard", mc)):
        for subset, m in zip(("arith", "chain_sum"), n):
            rows.append(dict(row=prm, column=subset, n=m, value=acc, ci_low=NAN, ci_high=NAN))
        rows.append(dict(row=prm, column="average", n=sum(n), value=acc, ci_low=NAN, ci_high=NAN))
    return pd.DataFrame(rows)


EXACT_ABOVE = paired(("exact", "structure", (0.2, 0.1, 0.3)))


@pytest.mark.parametrize("exact, mc, verdict", [(75.0, 12.5, V.REPRODUCED), (12.5, 75.0, V.CONTRADICTED),
                                                (50.0, 41.7, V.UNDECIDABLE)])
def test_4b_exact_vs_mc_on_answer_keeping_errors(exact, mc, verdict):
    row = V.lesson4b_tolerance(table5(exact, mc), paired=EXACT_ABOVE)
    assert row.verdict == verdict and "of 24" in row.measured and "gate:" in row.measured


def test_4b_gate_and_absence():
    row = V.lesson4b_tolerance(table5(75.0, 12.5, n=(3, 2)), paired=EXACT_ABOVE)
    assert row.verdict == V.UNDECIDABLE and "5 answer-keeping error cases, fewer than 8" in row.reason
    row = V.lesson4b_tolerance(table5(75.0, 12.5), paired=paired(("exact", "structure", ZERO)))
    assert row.verdict == V.UNDECIDABLE and "does not beat the structure-only baseline" in row.reason
    row = V.lesson4b_tolerance(table5(75.0, 12.5), processbench=pb({"exact": (0.5, 0.4, 0.6, 0.2, 0.1, 0.3)}))
    assert row.verdict == V.REPRODUCED and "paired over cases" in row.measured     # processbench.csv's delta
    assert V.lesson4b_tolerance(None).verdict == V.ABSENT
    only_mc = table5(75.0, 12.5).query("row == 'mc_hard'")
    assert V.lesson4b_tolerance(only_mc).verdict == V.ABSENT and "`exact`" in V.lesson4b_tolerance(only_mc).reason


# ------------------------------------------------------------------------------------------------
# 5: the gate cites the 2-step evidence

def fig8(obs3, two=(14.6, 6.9, 28.4)) -> pd.DataFrame:
    def cell(col, stage, n, v, lo=NAN, hi=NAN):
        return dict(row="mc_hard", column=col, stage=f"all responses: {stage}", n=n, value=v, ci_low=lo, ci_high=hi)
    return pd.DataFrame([cell("3+ steps", "observed", 54, *obs3), cell("3+ steps", "chance", 54, 26.3),
                         cell("2 steps", "observed", 41, *two), cell("2 steps", "chance", 41, 50.0)])


def test_5_gate_reason_cites_the_two_step_share_against_chance():
    few = pd.DataFrame({"variant": ["mc_hard"], "n_instances": [24], "n_steps": [33]})
    row = V.lesson5_min_at_last(fig8((25.9, 16.1, 38.9)), trainsets=few)
    assert row.verdict == V.UNDECIDABLE and row.reason.startswith("gate not passed")
    assert "2-step responses its minimum is on the last step in 14.6 [6.9, 28.4] % of 41 against 50 %" in row.reason
    assert "below chance" in row.reason and "gate: ≥ 30" in row.measured
    assert "about 80 training instances at this run's yield of 0.38 later steps" in row.decide   # 9 of 24
    assert "post hoc" in V.lesson5_min_at_last.__doc__
    enough = few.assign(n_steps=[24 + V.MIN_LATER_STEPS])
    assert V.lesson5_min_at_last(fig8((60.0, 45.0, 73.0)), trainsets=enough).verdict == V.REPRODUCED
    assert V.lesson5_min_at_last(fig8((5.0, 1.0, 15.0)), trainsets=enough).verdict == V.CONTRADICTED
    assert V.lesson5_min_at_last(fig8((25.9, 16.1, 38.9)), trainsets=enough).verdict == V.UNDECIDABLE
    assert V.lesson5_min_at_last(None).verdict == V.ABSENT


# ------------------------------------------------------------------------------------------------
# 6: gated by the recipe PRM above structure; "not a laptop lesson" with the size that would decide it

def bon(diff, n_problems=None) -> pd.DataFrame:
    rows = [dict(prm="consensus_hard", benchmark="average", metric="prm_product", n=4, accuracy=0.45, ci_low=0.4,
                 ci_high=0.5),
            dict(prm="consensus_hard", benchmark="average", metric="maj", n=4, accuracy=0.43, ci_low=0.38,
                 ci_high=0.48),
            dict(prm="consensus_hard", benchmark="average", metric="prm_product-maj", n=4, accuracy=diff[0],
                 ci_low=diff[1], ci_high=diff[2])]
    out = pd.DataFrame(rows)
    if n_problems:
        extra = pd.DataFrame([dict(prm="consensus_hard", benchmark=b, metric="maj", n=4, accuracy=0.4, ci_low=0.3,
                                   ci_high=0.5, n_problems=k) for b, k in n_problems.items()])
        out = pd.concat([out, extra], ignore_index=True)
    return out


RECIPE_ABOVE = paired(("consensus_hard", "structure", (0.2, 0.1, 0.3)))


@pytest.mark.parametrize("diff, verdict", [((0.05, 0.04, 0.06), V.REPRODUCED), ((-0.05, -0.06, -0.04), V.CONTRADICTED),
                                           ((0.005, -0.002, 0.012), V.UNDECIDABLE)])
def test_6_decides_by_its_paired_interval_once_the_gate_passes(diff, verdict):
    row = V.lesson6_bon_vs_maj(bon(diff), paired=RECIPE_ABOVE, n_problems=32)
    assert row.verdict == verdict and "gate:" in row.measured
    assert V.NOT_LAPTOP not in row.reason                  # narrower than the paper's gain: a plain verdict


def test_6_a_wide_interval_is_not_a_laptop_lesson_with_the_problems_needed():
    row = V.lesson6_bon_vs_maj(bon((-0.031, -0.157, 0.094)), paired=RECIPE_ABOVE, n_problems=32)
    assert row.verdict == V.UNDECIDABLE and V.NOT_LAPTOP in row.reason and "contains 0" in row.reason
    hw = (0.094 + 0.157) / 2 * 100
    need = math.ceil(32 * (hw / abs(V.L6_GAIN_POINTS)) ** 2)
    assert f"~{need:,} Best-of-N problems (this run: 32" in row.decide
    assert "half-width is 12.6 points" in row.reason
    md = verdicts_markdown([row])
    assert V.NOT_LAPTOP in md and f"~{need:,}" in md
    # the run's problems from bon.csv where it has them
    row = V.lesson6_bon_vs_maj(bon((-0.031, -0.157, 0.094), {"arith": 16, "chain_sum": 16}), paired=RECIPE_ABOVE)
    assert f"~{need:,} Best-of-N problems" in row.decide
    row = V.lesson6_bon_vs_maj(bon((-0.031, -0.157, 0.094)), paired=RECIPE_ABOVE)
    assert "× this run's Best-of-N problems" in row.decide


def test_6_gate_fails_in_both_directions():
    for diff in ((0.05, 0.04, 0.06), (-0.05, -0.06, -0.04)):
        row = V.lesson6_bon_vs_maj(bon(diff), paired=paired(("consensus_hard", "structure", ZERO)))
        assert row.verdict == V.UNDECIDABLE and row.reason.startswith("gate not passed")
        row = V.lesson6_bon_vs_maj(bon(diff))
        assert row.verdict == V.UNDECIDABLE and row.reason.startswith("gate not measured")
    row = V.lesson6_bon_vs_maj(bon((-0.031, -0.157, 0.094)))
    assert "gate not measured" in row.reason and V.NOT_LAPTOP in row.reason
    assert V.lesson6_bon_vs_maj(None).verdict == V.ABSENT


# ------------------------------------------------------------------------------------------------
# the glue: the paired table and the checker's validation reach the verdicts

def test_report_reads_the_paired_table_and_the_checker_validation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    t = tmp_path / "results/tables"
    t.mkdir(parents=True)
    paired(("mc_hard", "exact", DOWN), ("exact", "structure", (0.2, 0.1, 0.3))).to_csv(
        t / "processbench_paired.csv", index=False)
    EQUAL.assign(source=["exact", "mc"], label_type="hard", n_steps=[200, 200], positive_rate=0.7,
                 retained_fraction=1.0).to_csv(t / "trainsets.csv", index=False)
    gold(0, 60).to_csv(t / "process_check.csv", index=False)
    checker_bon(2, 13).to_csv(t / "process_check_bon.csv", index=False)
    paper_report(inputs={"processbench_paired_table": str(t / "processbench_paired.csv"),
                         "trainsets_table": str(t / "trainsets.csv"),
                         "process_check_table": str(t / "process_check.csv"),
                         "process_check_bon_table": str(t / "process_check_bon.csv")},
                 outputs={"report": "paper/report.md", "run_info": "paper/tables/run_info.tex"},
                 params={"run": {"name": "t"}, "skipped": {}}, wildcards={}, threads=1)
    text = (tmp_path / "paper/report.md").read_text()
    row_1a = next(ln for ln in text.splitlines() if ln.startswith("| 1a. "))
    assert "| **reproduced** |" in row_1a and "exact − MC +10.0" in row_1a
    row_4a = next(ln for ln in text.splitlines() if ln.startswith("| 4a. "))
    assert "| **reproduced** |" in row_4a and "0 of 60" in row_4a


def test_6_without_the_recipe_prm_is_not_a_laptop_lesson_sized_by_the_mc_prm():
    mc_only = bon((-0.031, -0.157, 0.094)).assign(prm="mc_hard")
    row = V.lesson6_bon_vs_maj(mc_only, n_problems=32)
    hw = (0.094 + 0.157) / 2 * 100
    assert row.verdict == V.UNDECIDABLE and V.NOT_LAPTOP in row.reason and "no consensus-filtered PRM" in row.reason
    assert f"~{math.ceil(32 * (hw / abs(V.L6_GAIN_POINTS)) ** 2):,} Best-of-N problems" in row.decide
    # neither the recipe nor the MC PRM: not measured
    assert V.lesson6_bon_vs_maj(bon((0.0, -0.1, 0.1)).assign(prm="other")).verdict == V.ABSENT
