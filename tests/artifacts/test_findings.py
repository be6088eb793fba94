"""The opening of paper/report.md, "What this run found" (prm_lessons.artifacts.findings): wording follows
the intervals, the numbers are the tables', and absent tables/columns/rows drop their sentence."""
import math
import re

import pandas as pd
import pytest

from prm_lessons.artifacts import render as R
from prm_lessons.artifacts.estimates import Est, paired_verdict
from prm_lessons.artifacts.findings import HEADING, findings_markdown
from prm_lessons.rules import paper as rules_paper

RUN = "Unit test run"


def pb_frame(f1: dict, delta: dict | None = None, half_width=0.04, subsets=("gsm8k", "math")) -> pd.DataFrame:
    """processbench.csv: one subset row each (same F1) and the 'average' row with the F1 interval and,
    when `delta` is given, the paired difference to baseline_structure {prm: (diff, lo, hi)}."""
    rows = []
    for prm, f in f1.items():
        for s in subsets:
            rows.append(dict(prm=prm, subset=s, n=10, error_acc=f, correct_acc=f, f1=f, f1_ci_low=f - 0.1,
                             f1_ci_high=f + 0.1, n_unparsed=0, threshold=0.5, run=RUN))
        row = dict(prm=prm, subset="average", n=10 * len(subsets), error_acc=f, correct_acc=f, f1=f,
                   f1_ci_low=f - half_width, f1_ci_high=f + half_width, n_unparsed=0, threshold=0.5, run=RUN)
        if delta is not None:
            d = delta.get(prm, (math.nan, math.nan, math.nan))
            row.update(delta_f1_structure=d[0], delta_ci_low=d[1], delta_ci_high=d[2])
        rows.append(row)
    return pd.DataFrame(rows)


def bon_frame(acc: dict, maj=0.30, paired: dict | None = None, n=8) -> pd.DataFrame:
    """bon.csv: per PRM pass, maj, prm_product (benchmark rows and 'average') and, when `paired` is given,
    'prm_product-maj' average rows {prm: (diff, lo, hi)}."""
    rows = []
    for prm, a in acc.items():
        for bench in ("arith", "average"):
            for metric, v in (("pass", 0.6), ("maj", maj), ("prm_product", a), ("prm_min", a - 0.01)):
                rows.append(dict(prm=prm, benchmark=bench, metric=metric, n=n, accuracy=v, ci_low=v - 0.05,
                                 ci_high=v + 0.05, run=RUN))
        if paired and prm in paired:
            d, lo, hi = paired[prm]
            rows.append(dict(prm=prm, benchmark="average", metric="prm_product-maj", n=n, accuracy=d, ci_low=lo,
                             ci_high=hi, run=RUN))
    return pd.DataFrame(rows)


def trainsets_frame() -> pd.DataFrame:
    rows = [("mc_hard", "mc", "hard", 0.0, 1200, 6100, 0.7, 1.0),
            ("mc_soft", "mc", "soft", None, 1200, 6100, 0.64, 1.0),
            ("mc_hard_t1of4", "mc", "hard", 0.25, 1190, 5800, 0.6, 1.0),
            ("mc_hard_t3of4", "mc", "hard", 0.75, 1150, 5000, 0.5, 1.0),
            ("consensus_hard", "consensus", "hard", 0.0, 480, 2300, 0.75, 0.4)]
    return pd.DataFrame(rows, columns=["variant", "source", "label_type", "threshold", "n_instances", "n_steps",
                                       "positive_rate", "retained_fraction"]).assign(run=RUN)


def bullet(md: str, start: str) -> str:
    """The bullet line that starts with `start` (bold prefix)."""
    hits = [ln for ln in md.splitlines() if ln.startswith(f"- {start}") or ln.startswith(f"- **{start}")]
    assert len(hits) == 1, (start, md)
    return hits[0]


BASE = {"baseline_always_correct": 0.30, "baseline_first_step": 0.20, "baseline_structure": 0.40}


# ---------------------------------------------------------------------------------------- wording


def test_paired_verdict_follows_the_interval():
    assert paired_verdict(Est(0.05, 0.01, 0.09)) == "beats"
    assert paired_verdict(Est(0.05, -0.01, 0.09)) == "indistinguishable"
    assert paired_verdict(Est(-0.05, -0.09, -0.01)) == "below"
    assert paired_verdict(Est(0.05)) is None  # no interval: not tested


@pytest.mark.parametrize("sign", [1, -1])
def test_structure_baseline_wording_follows_the_paired_interval(sign):
    """The same frame with the differences' signs flipped: 'beats' moves with the numbers."""
    delta = {"mc_hard": (sign * 0.05, sign * 0.01, sign * 0.09) if sign > 0 else (-0.05, -0.09, -0.01),
             "judge": (sign * 0.01, -0.03, 0.05)}
    md = findings_markdown(pb_frame({**BASE, "mc_hard": 0.5, "judge": 0.45}, delta), None, None, RUN)
    line = bullet(md, "Against model-free baselines")
    if sign > 0:
        assert "**1 of 2** beat it" in line and "Beat it: `mc_hard` +5.0 [+1.0, +9.0]." in line
        assert "Below it" not in line
    else:
        assert "**0 of 2** beat it" in line and "1 fall below it" in line
        assert "Below it: `mc_hard` -5.0 [-9.0, -1.0]." in line and "Beat it:" not in line
    assert f"Indistinguishable: `judge` {sign * 1.0:+.1f} [-3.0, +5.0]." in line
    # the baselines' own F1 with intervals; the baselines are not compared with themselves
    assert "`baseline_structure`: 40.0 [36.0, 44.0]" in line and "`baseline_first_step`: 20.0 [16.0, 24.0]" in line
    assert "`baseline_structure` +" not in line


@pytest.mark.parametrize("paired, phrase", [((0.06, 0.02, 0.10), "beats maj@8"),
                                            ((0.02, -0.01, 0.05), "indistinguishable from maj@8"),
                                            ((-0.06, -0.10, -0.02), "falls below maj@8")])
def test_bon_wording_follows_the_paired_interval(paired, phrase):
    md = findings_markdown(None, bon_frame({"mc_hard": 0.30 + paired[0]}, paired={"mc_hard": paired}), None, RUN)
    line = bullet(md, "Best-of-N")
    assert f"paired difference to maj@8 {paired[0] * 100:+.1f} [{paired[1] * 100:+.1f}, {paired[2] * 100:+.1f}] " \
           f"points: {phrase}." in line
    assert f"**{int(phrase.startswith('beats'))} of 1** PRMs beat maj@8" in line
    assert "maj@8 30.0 [25.0, 35.0]" in line and "pass@8 60.0 [55.0, 65.0]" in line
    if not phrase.startswith("beats"):
        assert " beats " not in line


def test_bon_names_the_best_by_paired_difference_and_counts():
    acc = {"mc_hard": 0.36, "judge": 0.31, "human": 0.25}
    paired = {"mc_hard": (0.06, 0.02, 0.10), "judge": (0.01, -0.02, 0.04), "human": (-0.05, -0.08, -0.02)}
    line = bullet(findings_markdown(None, bon_frame(acc, paired=paired), None, RUN), "Best-of-N")
    assert "Best PRM: `mc_hard`, prm_product@8 36.0 [31.0, 41.0]" in line
    assert "**1 of 3** PRMs beat maj@8" in line and "1 are indistinguishable" in line and "1 fall below it" in line


def test_bon_aggregation_is_chosen_and_falls_back():
    bon = bon_frame({"mc_hard": 0.4})
    assert "response score prm_min" in findings_markdown(None, bon, None, RUN, aggregation="min")
    assert "response score prm_min" in findings_markdown(None, bon, None, RUN, aggregation="last")  # first prm_*


def test_label_sources_name_the_best_and_say_whether_intervals_separate():
    f1 = {"mc_hard": 0.40, "judge": 0.42, "human": 0.90, "consensus_hard": 0.58, "checker": 0.60}
    line = bullet(findings_markdown(pb_frame(f1), None, None, RUN), "Label sources")
    for n, f in f1.items():
        assert f"`{n}`: {f * 100:.1f} [{(f - 0.04) * 100:.1f}, {(f + 0.04) * 100:.1f}]" in line
    # only same-pool sources are ranked: human labels (another pool) are a "more data" row apart
    assert "Highest: exact, arithmetic checker `checker`" in line
    assert "lies above that of `mc_hard` and `judge`" in line
    assert "overlaps that of `consensus_hard`, so this run does not separate them" in line
    ranked, apart = line.split("Apart, as a")
    assert "`human`" not in ranked and "human labels, another pool `human`: 90.0" in apart
    # another order, another best: nothing about the outcome is fixed
    line = bullet(findings_markdown(pb_frame({**f1, "mc_hard": 0.95}), None, None, RUN), "Label sources")
    assert "Highest: MC, hard `mc_hard`" in line
    assert "lies above that of `judge`, `consensus_hard` and `checker`" in line


def test_label_sources_without_the_checker_say_nothing_of_it():
    line = bullet(findings_markdown(pb_frame({"mc_hard": 0.4, "judge": 0.5, "consensus_hard": 0.45}), None, None, RUN),
                  "Label sources")
    assert "checker" not in line and "Apart" not in line


def test_hard_vs_soft_on_processbench_and_bon():
    pb = pb_frame({"mc_hard": 0.5, "mc_soft": 0.3, "consensus_hard": 0.5, "consensus_soft": 0.52})
    bon = bon_frame({"mc_hard": 0.4, "mc_soft": 0.41})
    line = bullet(findings_markdown(pb, bon, None, RUN), "Hard vs soft labels")
    assert "MC (`mc_hard` vs `mc_soft`): ProcessBench F1 hard 50.0 [46.0, 54.0] vs soft 30.0 [26.0, 34.0] " \
           "(hard higher, intervals do not overlap)" in line
    assert "prm_product@8 hard 40.0 [35.0, 45.0] vs soft 41.0 [36.0, 46.0] (intervals overlap: not separated)" in line
    assert "consensus (`consensus_hard` vs `consensus_soft`): ProcessBench F1 hard 50.0" in line
    assert "(intervals overlap: not separated)" in line.split("consensus (")[1]


def test_threshold_sweep_from_names_trainsets_or_params():
    pb = pb_frame({"mc_hard": 0.5, "mc_hard_t1of4": 0.45, "mc_hard_t3of4": 0.2, "mc_soft": 0.4})
    expect = "0 `mc_hard`: 50.0 [46.0, 54.0]; 1/4 `mc_hard_t1of4`: 45.0 [41.0, 49.0]; 3/4 `mc_hard_t3of4`: 20.0"
    for ts, sweep in ((None, None), (trainsets_frame(), None), (None, [[0.75, "mc_hard_t3of4"], [0.0, "mc_hard"],
                                                                       [0.25, "mc_hard_t1of4"]])):
        line = bullet(findings_markdown(pb, None, ts, RUN, threshold_sweep=sweep), "MC hard-label threshold")
        assert expect in line and "mc_soft" not in line
        assert "Highest at 0, lowest at 3/4; their intervals do not overlap." in line
    # a sweep given as params wins: only its points
    line = bullet(findings_markdown(pb, None, None, RUN, threshold_sweep=[(0.0, "mc_hard"), (0.25, "mc_hard_t1of4")]),
                  "MC hard-label threshold")
    assert "3/4" not in line and "their intervals overlap, so the threshold's effect is not separated" in line
    # one point is no sweep: no sentence
    assert "MC hard-label threshold" not in findings_markdown(pb_frame({"mc_hard": 0.5}), None, None, RUN)


def paired_frame(pairs: dict) -> pd.DataFrame:
    """processbench_paired.csv 'average' rows {(a, b): (diff, lo, hi)} (fractions), 10 resamples × 240 cases."""
    return pd.DataFrame([dict(prm_a=a, prm_b=b, subset="average", n_cases=240, n_resamples=10, value=d, ci_low=lo,
                              ci_high=hi, run=RUN) for (a, b), (d, lo, hi) in pairs.items()])


@pytest.mark.parametrize("diff, word", [((0.07, -0.05, 0.2), "not separated"), ((0.07, 0.01, 0.2), "`exact` higher")])
def test_prm_comparisons_read_the_paired_table_where_it_has_the_pair(diff, word):
    """Same pool, same cases: the paired difference (with training resamples) decides, not two unpaired
    intervals; a pair stored the other way round reads with its sign flipped."""
    # unpaired intervals that do not overlap, a paired one that may contain 0: the paired one is read
    f1 = {"exact": 0.60, "mc_hard": 0.40, "mc_soft": 0.30, "mc_hard_t1of2": 0.20}
    d, lo, hi = diff
    paired = paired_frame({("exact", "mc_hard"): diff, ("mc_soft", "mc_hard"): (-0.1, -0.2, 0.05),
                           ("mc_hard", "mc_hard_t1of2"): diff})
    md = findings_markdown(pb_frame(f1), None, None, RUN, paired=paired)
    line = bullet(md, "Label sources")
    assert "Highest: exact step truth `exact`" in line
    assert (f"paired difference `exact` − `mc_hard` {d * 100:+.1f} [{lo * 100:+.1f}, {hi * 100:+.1f}] points "
            f"(10 training resamples of the pool × 240 cases, hierarchical bootstrap): {word}") in line
    assert "lies above" not in line
    hs = bullet(md, "Hard vs soft labels")
    assert "hard 40.0 [36.0, 44.0] vs soft 30.0 [26.0, 34.0], paired difference `mc_hard` − `mc_soft` +10.0 " \
           "[-5.0, +20.0] points" in hs and ": not separated" in hs and "do not overlap" not in hs
    sw = bullet(md, "MC hard-label threshold")
    assert f"Highest at 0, lowest at 1/2; paired difference `mc_hard` − `mc_hard_t1of2` {d * 100:+.1f}" in sw
    # without the pair: the unpaired wording as before
    line = bullet(findings_markdown(pb_frame(f1), None, None, RUN, paired=paired_frame({})), "Label sources")
    assert "lies above that of `mc_hard`" in line and "paired difference" not in line


def test_training_set_sizes():
    line = bullet(findings_markdown(None, None, trainsets_frame(), RUN), "Training sets")
    assert "`mc_hard`: 1,200 instances, 6,100 steps, 70.0% positive steps;" in line
    assert "`mc_soft`: 1,200 instances, 6,100 steps, 64.0% mean step label;" in line
    assert "`consensus_hard`: 480 instances, 2,300 steps, 75.0% positive steps, 40.0% of candidates kept." in line


# ---------------------------------------------------------------------------------------- numbers


def test_every_number_is_the_tables_and_percent_tables_read_the_same():
    f1 = {**BASE, "mc_hard": 0.5123, "judge": 0.4467, "human": 0.6011, "consensus_hard": 0.5555}
    delta = {"mc_hard": (0.1123, 0.0512, 0.1734), "judge": (0.0467, -0.0102, 0.1041)}
    pb, bon = pb_frame(f1, delta), bon_frame({"mc_hard": 0.4321}, paired={"mc_hard": (0.1321, 0.0811, 0.1902)})
    md = findings_markdown(pb, bon, None, RUN)
    avg = pb[pb.subset == "average"]
    for r in avg.itertuples():
        for v in (r.f1, r.f1_ci_low, r.f1_ci_high):
            assert f"{v * 100:.1f}" in md, (r.prm, v)
        if not math.isnan(r.delta_f1_structure):
            for v in (r.delta_f1_structure, r.delta_ci_low, r.delta_ci_high):
                assert f"{v * 100:+.1f}" in md, (r.prm, v)
    for r in bon[bon.benchmark == "average"].itertuples():
        if r.metric in ("prm_product", "maj", "pass"):
            assert f"{r.accuracy * 100:.1f} [{r.ci_low * 100:.1f}, {r.ci_high * 100:.1f}]" in md
    assert "+13.2 [+8.1, +19.0]" in md
    # a table already in percent gives the same text
    pct_pb = pb.copy()
    for c in ("f1", "f1_ci_low", "f1_ci_high", "delta_f1_structure", "delta_ci_low", "delta_ci_high"):
        pct_pb[c] = pct_pb[c] * 100
    pct_bon = bon.assign(accuracy=bon.accuracy * 100, ci_low=bon.ci_low * 100, ci_high=bon.ci_high * 100)
    assert findings_markdown(pct_pb, pct_bon, None, RUN) == md


# ---------------------------------------------------------------------------------------- absent inputs


def test_no_tables_gives_notes_not_errors():
    md = findings_markdown(None, None, None, RUN)
    assert md.startswith(HEADING) and f"Run: {RUN}." in md
    assert "ProcessBench: no table in this run" in md and "Best-of-N: no table in this run" in md
    assert "Training sets: no table in this run" in md and " beat" not in md.lower().replace("“beats”", "")


def test_missing_paired_columns_and_rows_are_said_not_guessed():
    pb = pb_frame({**BASE, "mc_hard": 0.9})  # no delta columns (an older run)
    line = bullet(findings_markdown(pb, None, None, RUN), "Against model-free baselines")
    assert "is not in this run's ProcessBench table, so whether a PRM beats it is not tested here" in line
    assert "`baseline_structure`: 40.0 [36.0, 44.0]" in line
    # columns present, this PRM without a value
    line = bullet(findings_markdown(pb_frame({**BASE, "mc_hard": 0.9, "judge": 0.5}, {"judge": (0.1, 0.05, 0.15)}),
                                    None, None, RUN), "Against model-free baselines")
    assert "**1 of 1** beat it" in line and "No paired difference recorded for `mc_hard`." in line
    # no structure baseline at all
    line = bullet(findings_markdown(pb_frame({"mc_hard": 0.9}), None, None, RUN), "Against model-free baselines")
    assert "no baseline rows in this run" in line and "No structure-only baseline" in line
    # Best-of-N without the paired rows
    line = bullet(findings_markdown(None, bon_frame({"mc_hard": 0.6}), None, RUN), "Best-of-N")
    assert "is not in this run's table, so whether a PRM beats majority voting is not tested here" in line
    assert "(unpaired intervals do not overlap)" in line


def test_missing_intervals_are_not_tested():
    delta = {"mc_hard": (0.2, math.nan, math.nan)}
    pb = pb_frame({**BASE, "mc_hard": 0.9}, delta, half_width=math.nan)
    md = findings_markdown(pb, bon_frame({"mc_hard": 0.6}, paired={"mc_hard": (0.3, math.nan, math.nan)}), None, RUN)
    line = bullet(md, "Against model-free baselines")
    assert "(no interval)" in line and "not tested here" in line and "Beat it" not in line
    assert "No paired difference has an interval" in bullet(md, "Best-of-N")


def test_frames_lacking_columns_or_rows_do_not_crash():
    md = findings_markdown(pd.DataFrame({"prm": ["a"]}), pd.DataFrame({"x": [1]}), pd.DataFrame({"y": [1]}), "")
    assert "ProcessBench: no table" in md and "Best-of-N: no table" in md and "Training sets: the table" in md
    assert not md.splitlines()[2].startswith("Run:")  # no label, no "Run:"
    pb = pb_frame({"mc_hard": 0.5})
    md = findings_markdown(pb[pb.subset != "average"], bon_frame({"a": 0.5}).query("benchmark != 'average'"),
                           trainsets_frame().iloc[:0], RUN)
    assert "no `average` rows" in md and "Best-of-N: the table has no `average` rows" in md
    # junk values become notes or n/a, never an exception
    junk = pb_frame({**BASE, "mc_hard": 0.5, "judge": 0.4}, {"mc_hard": (0.1, 0.05, 0.15)})
    junk["f1_ci_low"] = junk["f1_ci_low"].astype(object)
    junk.loc[junk.prm == "judge", "f1_ci_low"] = "oops"
    assert HEADING in findings_markdown(junk, None, None, RUN)


def test_tables_of_another_run_are_flagged():
    md = findings_markdown(pb_frame({"mc_hard": 0.5}).assign(run="old run"), None, None, RUN)
    assert "these tables name another run than this report: `processbench.csv` (old run)" in md


# ---------------------------------------------------------------------------------------- report.md


def test_report_md_opens_with_the_findings(tmp_path):
    tables = tmp_path / "results/tables"
    tables.mkdir(parents=True)
    pb_frame({**BASE, "mc_hard": 0.5}, {"mc_hard": (0.1, 0.05, 0.15)}).to_csv(tables / "processbench.csv", index=False)
    bon_frame({"mc_hard": 0.4}, paired={"mc_hard": (0.1, 0.05, 0.15)}).to_csv(tables / "bon.csv", index=False)
    trainsets_frame().to_csv(tables / "trainsets.csv", index=False)
    out = {"report": str(tmp_path / "paper/report.md"), "run_info": str(tmp_path / "paper/tables/run_info.tex")}
    rules_paper.paper_report(inputs={"processbench_table": str(tables / "processbench.csv"),
                                     "bon_table": str(tables / "bon.csv"),
                                     "trainsets_table": str(tables / "trainsets.csv")},
                             outputs=out, params={"run": {"name": "t", "label": RUN}, "aggregation": "product",
                                     "skipped": {}},
                             wildcards={}, threads=1)
    lines = (tmp_path / "paper/report.md").read_text().splitlines()
    # the lesson-by-lesson verdicts open it (artifacts.verdicts), the findings follow
    from prm_lessons.artifacts.verdict_rules import HEADING as VERDICTS
    assert lines[0].startswith("# Reproduction report:") and lines[1] == "" and lines[2] == VERDICTS
    md = "\n".join(lines)
    assert md.index(VERDICTS) < md.index(HEADING) < md.index("**What produced these numbers:**") < md.index("## Table")
    assert "Beat it: `mc_hard` +10.0 [+5.0, +15.0]" in md and "beats maj@8" in md and "`mc_hard`: 1,200 instances" in md
    assert "another run" not in md


def test_report_md_without_table_inputs_still_builds(tmp_path):
    out = {"report": str(tmp_path / "report.md"), "run_info": str(tmp_path / "run_info.tex")}
    (tmp_path / "empty.csv").write_text("")
    rules_paper.paper_report(inputs={"bon_table": str(tmp_path / "empty.csv"),
                                     "processbench_table": str(tmp_path / "absent.csv")},
                             outputs=out, params={"run": {"label": RUN}, "skipped": {}}, wildcards={}, threads=1)
    md = (tmp_path / "report.md").read_text()
    assert HEADING in md and "ProcessBench: no table in this run" in md and "Best-of-N: no table in this run" in md


def test_report_markdown_without_findings_is_unchanged_in_shape():
    from prm_lessons.artifacts.published import load_published
    md = R.report_markdown(load_published(), {"label": RUN}, {}, "paper")
    assert HEADING not in md and re.match(r"# Reproduction report: .+\n\n\*\*What produced these numbers", md)


def test_a_sentence_that_fails_becomes_a_note(monkeypatch):
    from prm_lessons.artifacts import findings as F

    def boom(*a, **k):
        raise KeyError("x")
    monkeypatch.setattr(F, "_label_sources", boom)
    md = findings_markdown(pb_frame({**BASE, "mc_hard": 0.5}), None, None, RUN)
    assert "_Label sources: could not be summarised from this run's table (KeyError" in md
    assert "**Against model-free baselines**" in md  # the other sentences are still written


def test_report_says_which_dtype_and_host_its_numbers_came_from(tmp_path):
    from prm_lessons.jobs.hardware import host_summary
    from prm_lessons.tables import write_table

    cpuinfo = "model name\t: Test CPU 9000\nflags\t\t: fpu avx2 avx512f amx_bf16\n"
    rec = {"backend": "vllm", "dtype": "bfloat16", "dtype_reason": "auto on CPU: native bf16 (amx_bf16)",
           **host_summary(cpuinfo)}
    assert rec["cpu"] == "Test CPU 9000" and rec["cpu_flags"] == ["avx2", "avx512f", "amx_bf16"]
    samples = tmp_path / "samples.parquet"
    write_table(pd.DataFrame({"problem_id": [], "sample_idx": []}), samples, None, meta={"engines": [rec]})
    out = {"report": str(tmp_path / "report.md"), "run_info": str(tmp_path / "run_info.tex")}
    rules_paper.paper_report(inputs={"provenance_samples": str(samples)}, outputs=out,
                             params={"run": {"label": RUN}, "skipped": {}}, wildcards={}, threads=1)
    md = (tmp_path / "report.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("Where these numbers come from"))
    assert "bfloat16 (auto on CPU: native bf16 (amx_bf16))" in line and "Test CPU 9000" in line
    assert "avx2, avx512f, amx_bf16" in line
    # without the record (a run made before it existed) the report has no such line
    write_table(pd.DataFrame({"problem_id": [], "sample_idx": []}), samples, None, meta={})
    rules_paper.paper_report(inputs={"provenance_samples": str(samples)}, outputs=out,
                             params={"run": {"label": RUN}, "skipped": {}}, wildcards={}, threads=1)
    assert "Where these numbers come from" not in (tmp_path / "report.md").read_text()
