"""LLMs as Best-of-N verifiers (prm_lessons.evaluation.verifiers): the pairwise tournament (byes, winner, position
rule, unparsable verdicts), pointwise scores and ties, forcing, batching across problems, the metrics,
and the config checks of `bon_judges`."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from fakes import QualityJudge
from prm_lessons.config import ConfigError, load_config
from prm_lessons.evaluation import verifiers as V

ROOT = Path(__file__).resolve().parents[2]

SETTINGS = V.JudgeSettings(max_tokens=64, force_answer=True)


def fields(n):
    return [list(range(n))]


# ------------------------------------------------------------------------------------------------ bracket


@pytest.mark.parametrize("n", range(1, 18))
def test_bracket_plays_n_minus_one_comparisons_and_every_entrant_until_it_loses(n):
    seen = []

    def decide(matches):
        seen.extend(matches)
        return [{"verdict": "A"} for _ in matches]

    out = V.run_tournaments(fields(n), decide)
    assert len(seen) == n - 1 == len(out[0]["bracket"])
    assert out[0]["winner"] == 0
    # every entrant except the winner loses exactly once, and a is always the lower index
    losers = [b for _, a, b in seen]
    assert sorted(losers) == list(range(1, n))
    assert all(a < b for _, a, b in seen)


def test_byes_go_to_the_lowest_indices_and_later_rounds_are_powers_of_two():
    assert V.bracket_round([0, 1, 2, 3, 4, 5]) == ([0, 1], [(2, 3), (4, 5)])
    assert V.bracket_round([0, 1, 2, 3, 4]) == ([0, 1, 2], [(3, 4)])
    assert V.bracket_round([0, 1, 2]) == ([0], [(1, 2)])
    assert V.bracket_round([0, 1, 2, 3]) == ([], [(0, 1), (2, 3)])
    rounds = {}

    def decide(matches):
        rounds[len(rounds)] = [(a, b) for _, a, b in matches]
        return [{"verdict": "B"} for _ in matches]

    out = V.run_tournaments(fields(6), decide)
    assert rounds == {0: [(2, 3), (4, 5)], 1: [(0, 1), (3, 5)], 2: [(1, 5)]}
    assert out[0]["winner"] == 5  # "always B" → the last entrant


@pytest.mark.parametrize("qualities", [[3, 9, 1], [5, 2, 8, 1, 4], [1, 2, 3, 9, 4, 0], [7, 1, 1, 1, 1, 1, 1, 1],
                                       [0, 0, 0, 0, 0, 6]])
def test_tournament_winner_is_the_scripted_judges_best(qualities):
    eng = QualityJudge()
    steps = [[f"step q={q}", "so \\boxed{1}"] for q in qualities]
    rows = V.judge_pairwise(eng, ["Q"], [steps], ["p0"], SETTINGS)
    assert rows[0]["winner"] == qualities.index(max(qualities))
    assert rows[0]["n_comparisons"] == len(qualities) - 1
    assert rows[0]["n_unparsable"] == 0
    # the lower index is always Response A
    for m in rows[0]["bracket"]:
        assert m["a"] < m["b"]


def test_pairwise_unparsable_verdict_advances_response_a_and_is_counted():
    eng = QualityJudge(script={"q=5": ("I cannot decide.", "stop")})
    steps = [["a q=1"], ["b q=5"], ["c q=9"]]
    no_force = V.JudgeSettings(force_answer=False)
    row = V.judge_pairwise(eng, ["Q"], [steps], ["p"], no_force)[0]
    # round 1 (1 v 2) unreadable → 1 advances; final (0 v 1) unreadable again (response 1 is in it) → 0
    assert row["winner"] == 0 and row["n_unparsable"] == 2 and row["n_forced"] == 0
    assert [(m["a"], m["b"], m["verdict"], m["winner"]) for m in row["bracket"]] == [(1, 2, None, 1), (0, 1, None, 0)]


def test_pairwise_forced_verdict_is_read_and_counted_unless_cut_off():
    eng = QualityJudge(script={"q=5": ("Both look fine", "stop")}, forced="B}")
    row = V.judge_pairwise(eng, ["Q"], [[["a q=1"], ["b q=5"], ["c q=9"]]], ["p"], SETTINGS)[0]
    # round 1: (1 v 2) forced → B (2); final (0 v 2) judged: 2
    assert row["winner"] == 2 and row["n_forced"] == 1 and row["n_unparsable"] == 0
    eng = QualityJudge(script={"q=5": ("Both look fine", "length")}, forced="B}")
    row = V.judge_pairwise(eng, ["Q"], [[["a q=1"], ["b q=5"], ["c q=9"]]], ["p"], SETTINGS)[0]
    # cut off at max_tokens: never forced (force_truncated off); A advances in both comparisons with response 1
    assert row["n_forced"] == 0 and row["n_truncated"] == 2 and row["bracket"][0]["winner"] == 1


def test_max_tokens_zero_forces_every_verdict_from_the_start_of_the_answer():
    eng = QualityJudge(forced="B}")
    st = V.JudgeSettings(max_tokens=0, force_answer=True)
    row = V.judge_pairwise(eng, ["Q"], [[["a q=1"], ["b q=5"], ["c q=9"]]], ["p"], st)[0]
    assert row["winner"] == 2 and row["n_forced"] == 2 and row["n_unparsable"] == 0
    assert eng.calls == [1, 1]  # no free-text call: only the forced one, per round
    assert all(p.endswith(V.PAIRWISE_FORCE.lstrip()) and not p.endswith("\n\n" + V.PAIRWISE_FORCE.lstrip())
               for p in eng.prompts)


@pytest.mark.parametrize("text,want", [("\\boxed{A}", "A"), ("so \\boxed{\\text{B}}", "B"),
                                       ("\\boxed{Response B}", "B"),
                                       ("\\boxed{A} no wait \\boxed{B}", "B"), ("\\boxed{C}", None), ("B", None),
                                       ("\\boxed{A", None), ("", None), (None, None)])
def test_parse_preference(text, want):
    assert V.parse_preference(text) == want


# ------------------------------------------------------------------------------------------------ pointwise


def test_pointwise_score_is_the_fraction_of_correct_steps_and_ties_go_to_the_lowest_index():
    eng = QualityJudge()
    steps = [["ok", "bad"], ["ok", "ok", "bad", "ok"], ["ok", "ok", "ok", "bad"], ["bad"]]
    rows = V.judge_pointwise(eng, ["Q"] * 4, steps, ["a", "b", "c", "d"], SETTINGS)
    assert [r["score"] for r in rows] == [0.5, 0.75, 0.75, 0.0]
    assert V.pointwise_choice([r["score"] for r in rows]) == 1  # tie 0.75: the lower index
    assert rows[0]["verdicts"] == [True, False]
    assert eng.calls == [4]  # one call, no forcing


def test_pointwise_unreadable_steps_count_incorrect_and_are_counted():
    # the verdict block lists only paragraph 1 of 3 (the rest unreadable); forcing off
    eng = QualityJudge(script={"marker": ("Verdicts:\nParagraph 1: correct\nParagraph 7: correct", "stop")})
    no_force = V.JudgeSettings(force_answer=False)
    rows = V.judge_pointwise(eng, ["Q"], [["marker", "b", "c"]], ["a"], no_force)
    assert rows[0]["verdicts"] == [True, None, None]
    assert rows[0]["score"] == pytest.approx(1 / 3) and rows[0]["n_unreadable"] == 2
    # with forcing, the forced block is read instead (it reads more)
    eng = QualityJudge(script={"marker": ("I think paragraph 1: correct", "stop")},
                       forced="Paragraph 1: correct\nParagraph 2: correct\nParagraph 3: incorrect")
    rows = V.judge_pointwise(eng, ["Q"], [["marker", "b", "c"]], ["a"], SETTINGS)
    assert rows[0]["verdicts"] == [True, True, False] and rows[0]["forced"] and rows[0]["n_unreadable"] == 0


def test_pointwise_response_without_steps_is_never_chosen():
    eng = QualityJudge()
    rows = V.judge_pointwise(eng, ["Q", "Q"], [[], ["bad"]], ["a", "b"], SETTINGS)
    assert rows[0]["score"] is None and rows[1]["score"] == 0.0
    assert V.pointwise_choice([r["score"] for r in rows]) == 1
    assert V.pointwise_choice([None, None]) is None
    assert eng.calls == [1]


@pytest.mark.parametrize("text,n,want", [
    ("Verdicts:\nParagraph 1: correct\nParagraph 2: incorrect", 2, [True, False]),
    ("paragraph_1: **Incorrect**\nParagraph 2 - correct", 2, [False, True]),
    ("Paragraph 1: correct\n\nVerdicts:\nParagraph 2: incorrect", 2, [None, False]),  # only the last block
    ("Verdicts:\nParagraph 1: correct\nParagraph 1: incorrect", 1, [False]),  # the last line counts
    ("nothing here", 2, [None, None]), (None, 1, [None]),
])
def test_parse_step_verdicts(text, n, want):
    assert V.parse_step_verdicts(text, n) == want


def test_forced_pointwise_regex_has_one_line_per_step():
    rx = re.compile(V.pointwise_regex(3))
    assert rx.fullmatch("Paragraph 1: correct\nParagraph 2: incorrect\nParagraph 3: correct")
    assert not rx.fullmatch("Paragraph 1: correct\nParagraph 2: incorrect")


# ------------------------------------------------------------------------------------------------ sets


def samples_frame(problems):
    """problems: {problem_id: [(steps, correct), ...]} → a samples-like frame (dataset = id prefix)."""
    rows = []
    for pid, resps in problems.items():
        for j, (steps, correct) in enumerate(resps):
            rows.append({"problem_id": pid, "sample_idx": j, "dataset": pid.split("-")[0], "question": f"Q {pid}",
                         "answer": "1", "response": "\n\n".join(steps), "steps": steps,
                         "pred": "1" if correct else str(j + 2), "correct": correct})
    return pd.DataFrame(rows)


PROBLEMS = {
    "arith-00000": [(["x q=1 ok", "bad"], False), (["y q=8 ok", "ok"], True), (["z q=3 bad"], False)],
    "arith-00001": [(["x q=9 ok"], True), (["y q=2 bad"], False), (["z q=4 ok", "bad"], False)],
    "chain-00000": [(["x q=1 bad"], False), (["y q=2 bad"], False), (["z q=7 ok"], True), (["w q=0 ok"], True)],
}


@pytest.mark.parametrize("mode", V.MODES)
def test_batching_across_problems_gives_the_same_choices_as_one_problem_at_a_time(mode):
    samples = samples_frame({k: v[:3] for k, v in PROBLEMS.items()})
    eng = QualityJudge()
    together = V.judge_best_of_n(eng, samples, mode, SETTINGS, n=3)
    calls_together = list(eng.calls)
    alone = pd.concat([V.judge_best_of_n(QualityJudge(), samples[samples["problem_id"] == p], mode, SETTINGS, n=3)
                       for p in sorted(PROBLEMS)], ignore_index=True)
    cols = ["problem_id", "selected_idx", "scores", "bracket", "n_unparsable", "tokens_generated"]
    pd.testing.assert_frame_equal(together[cols].sort_values("problem_id").reset_index(drop=True),
                                  alone[cols].sort_values("problem_id").reset_index(drop=True))
    # pointwise: one call for all 9 responses; pairwise: one call per round (N=3: 2 rounds) for all problems
    assert calls_together == ([9] if mode == "pointwise" else [3, 3])
    assert together["selected_idx"].tolist() == ([1, 0, 2] if mode == "pointwise" else [1, 0, 2])


def test_judged_table_records_choices_bracket_and_counts():
    samples = samples_frame(PROBLEMS)
    # the judge job reads the ungraded responses: its table records the choice, not its grade
    ungraded = samples.drop(columns=["pred", "correct", "grade_status"], errors="ignore")
    pw = V.judge_best_of_n(QualityJudge(), ungraded, "pairwise", SETTINGS, n=None)  # N = 3, 3, 4
    assert list(pw.columns) == V.JUDGED_COLUMNS and "selected_correct" not in pw.columns
    row = pw[pw["problem_id"] == "chain-00000"].iloc[0]
    bracket = json.loads(row["bracket"])
    assert [(m["a"], m["b"], m["winner"]) for m in bracket] == [(0, 1, 1), (2, 3, 2), (1, 2, 2)]
    assert row["selected_idx"] == 2 and row["n_requests"] == 3
    pt = V.judge_best_of_n(QualityJudge(), samples, "pointwise", SETTINGS, n=3, limit=1)
    assert pt["problem_id"].tolist() == ["arith-00000", "chain-00000"]  # limit: first problem of each dataset
    assert pt.iloc[0]["scores"] == [0.5, 1.0, 0.0] and pt.iloc[0]["selected_idx"] == 1
    assert json.loads(pt.iloc[0]["verdicts"]) == [[True, False], [True, True], [False]]


def test_judge_metrics_accuracy_vs_maj_and_problems_without_a_choice():
    samples = samples_frame({k: v[:3] for k, v in PROBLEMS.items()})
    judged = V.judge_best_of_n(QualityJudge(), samples, "pairwise", SETTINGS, n=3)
    m = V.judge_metrics(samples, judged, n=3, bootstrap=200, seed=0)
    assert m["benchmarks"]["arith"]["judge"] == 1.0 and m["benchmarks"]["chain"]["judge"] == 1.0
    assert "judge" in m["vs_maj"]["average"] and '"orm"' not in json.dumps(m)
    lo, hi = m["average"]["ci"]["judge"]
    assert lo <= m["average"]["judge"] <= hi
    assert m["judging"]["total"]["n_requests"] == 6
    # a problem without a choice counts wrong and is listed
    judged.loc[judged["problem_id"] == "arith-00001", "selected_idx"] = None
    m = V.judge_metrics(samples, judged, n=3, bootstrap=0)
    assert m["benchmarks"]["arith"]["judge"] == 0.5
    assert m["unscored"] == {"arith": {"judge": ["arith-00001"]}} and m["n_unscored"] == {"judge": 1}


# ------------------------------------------------------------------------------------------------ templates


def test_builtin_templates_ship_and_render(tmp_path):
    for mode in V.MODES:
        assert V.template_file(mode).is_file()
    p = V.render_pointwise("What is 1+1?", ["1+1=2", "\\boxed{2}"], V.load_template("pointwise"))
    assert "<paragraph_2>\n\\boxed{2}\n</paragraph_2>" in p and "Paragraph 1 to Paragraph 2" in p
    p = V.render_pairwise("Q?", ["a1", "a2"], ["b1"], V.load_template("pairwise"))
    assert "<response_a>\na1\n\na2\n</response_a>" in p and "\\boxed{A}" in p
    bad = tmp_path / "bad.txt"
    bad.write_text("{problem} {unknown}")
    with pytest.raises(ValueError, match="unknown"):
        V.load_template("pairwise", str(bad))


# ------------------------------------------------------------------------------------------------ config


def _cfg(**bon_judges):
    return load_config(ROOT / "config/config.yaml", overrides={"bon_judges": bon_judges})


@pytest.mark.parametrize("section,key", [
    ({"judges": {"j": {"model": "nope"}}}, "bon_judges.judges.j.model"),
    ({"benchmarks": ["arith", "gsm8k"]}, "bon_judges.benchmarks.1"),
    ({"modes": ["pointwise", "listwise"]}, "bon_judges.modes.1"),
    ({"limit": 0}, "bon_judges.limit"),
    ({"judges": {"../x": {"model": "smollm2"}}}, "bon_judges.judges"),
    ({"judges": {"j": {"model": "smollm2", "top_k": 3}}}, "bon_judges.judges.j"),
    ({"pairwise_template": "no/such/file.txt"}, "bon_judges.pairwise_template"),
    ({"max_tokens": 0, "force_answer": False}, "bon_judges.max_tokens"),
    ({"judges": {"j": {"model": "smollm2", "max_tokens": 0}}, "max_tokens": 5, "force_answer": False},
     "bon_judges.judges.j.max_tokens"),
])
def test_config_errors_name_the_key(section, key):
    with pytest.raises(ConfigError, match=re.escape(f"`{key}")):
        _cfg(**section)


# ------------------------------------------------------------------------------------------------ Table 11

BON7 = ["gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem"]


@pytest.mark.parametrize("tid", ["table11", "table12"])
def test_published_tables_11_12_average_is_the_mean_of_seven_benchmarks(tid):
    from prm_lessons.artifacts.published import load_published

    t = load_published()["tables"][tid]
    assert len(t["rows"]) == 8
    for r in t["rows"]:
        vals = dict(zip(t["columns"], r["values"]))
        assert abs(sum(vals[b] for b in BON7) / 7 - vals["average"]) <= 0.051, (tid, r["key"])


def _long(prm, metric, acc, n=8, benches=BON7):
    rows = [{"prm": prm, "benchmark": b, "metric": metric, "n": n, "accuracy": acc, "ci_low": acc - 1,
             "ci_high": acc + 1} for b in benches]
    return rows + [{"prm": prm, "benchmark": "average", "metric": metric, "n": n, "accuracy": acc,
                    "ci_low": acc - 1, "ci_high": acc + 1}]


def test_table11_rows_baselines_from_the_judged_problems_judges_then_prms():
    from prm_lessons.artifacts.defs.table11_llm_judge_bon import build_table11, judge_table_notes
    from prm_lessons.artifacts.published import load_published

    bon = pd.DataFrame(_long("qwen25_math_prm_7b", "prm_product", 60.0) + _long("qwen25_math_prm_7b", "pass", 90.0)
                       + _long("qwen25_math_prm_7b", "maj", 55.0))
    judges = pd.DataFrame(_long("pairwise-qwq_32b_preview", "judge", 70.0)
                          + _long("pairwise-qwq_32b_preview", "pass", 80.0)
                          + _long("pairwise-qwq_32b_preview", "maj", 50.0)
                          + _long("pointwise-qwq_32b_preview", "judge", 65.0)
                          + _long("pointwise-qwq_32b_preview", "judge-maj", 15.0))
    params = {"aggregation": "product", "n": None, "benchmarks": [], "paper_rows": {}, "paper_columns": {},
              "run": {"name": "t"}}
    cells = build_table11(bon, judges, load_published(), params)
    assert list(dict.fromkeys(cells["row"])) == ["pass@8", "maj@8", "pointwise-qwq_32b_preview",
                                                 "pairwise-qwq_32b_preview", "qwen25_math_prm_7b"]
    by = cells.set_index(["row", "column"])
    assert by.loc[("pass@8", "math"), "value"] == 80.0  # the judged problems' pass@N, not bon.csv's 90
    assert by.loc[("pairwise-qwq_32b_preview", "math"), "published"] == 89.2
    assert by.loc[("pairwise-qwq_32b_preview", "math"), "diff"] == pytest.approx(70.0 - 89.2)
    assert by.loc[("qwen25_math_prm_7b", "average"), "published"] == 67.6
    # no judge ran: bon.csv's baselines, the PRMs, and the notes still say whose prompts these are
    empty = build_table11(bon, judges.iloc[0:0], load_published(), params)
    assert list(dict.fromkeys(empty["row"])) == ["pass@8", "maj@8", "qwen25_math_prm_7b"]
    notes = judge_table_notes(pd.DataFrame([{"metric": "judge", "benchmark": "math", "n_problems": 40}]))
    assert "this project's" in notes[0] and "math: 40" in notes[1]


def test_prompts_ship_as_package_data():
    import fnmatch
    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["prm_lessons"]
    for mode in V.MODES:
        rel = V.template_file(mode).relative_to(ROOT / "src" / "prm_lessons").as_posix()
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), rel
