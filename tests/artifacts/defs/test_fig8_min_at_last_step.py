"""Figure 8 per response length: the observed min-at-last share beside its chance rate."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis_synth import analysis_params
from prm_lessons.artifacts.defs import fig8_min_at_last_step as F
from prm_lessons.artifacts.published import load_published
from prm_lessons.evaluation import bias_analysis as A


def _scores(step_scores) -> pd.DataFrame:
    return pd.DataFrame({"problem_id": [f"p{i // 4}" for i in range(len(step_scores))],
                         "sample_idx": [i % 4 for i in range(len(step_scores))], "step_scores": step_scores})


@pytest.mark.parametrize("scores, chance", [
    ([0.3], 1.0),                      # one step: at the last step by definition
    ([0.9, 0.5, 0.7], 1 / 3),          # unique minimum: uniform 1/L
    ([0.9, 0.1, 0.5, 0.7], 1 / 4),
    ([0.5, 0.9, 0.5], 0.0),            # a tied minimum never counts (min_at_last is strict)
    ([1.0, 1.0], 0.0),
    ([], None), (None, None), ([0.5, float("nan")], None),
])
def test_chance_is_one_over_length_and_zero_for_a_tied_minimum(scores, chance):
    got = A.min_at_last_chance(scores)
    assert got == pytest.approx(chance) if chance is not None else got is None


def test_by_length_one_step_is_100_percent_observed_and_by_chance():
    out = A.min_at_last_by_length({("prm", "b"): _scores([[0.2], [0.9], [0.4], [0.7]])}).set_index(
        ["population", "length"])
    one = out.loc[("all", "1")]
    assert (one["n_scored"], one["n_min_at_last"], one["share"], one["chance"]) == (4, 4, 100.0, 100.0)
    assert out.loc[("all", "3+"), "n_scored"] == 0          # no headline responses: counted, not invented


def test_by_length_three_step_chance_is_a_third_and_the_headline_pools_three_and_more():
    # three 3-step responses (one with the min last), one 4-step with the min last, one 2-step
    s = [[0.9, 0.8, 0.1], [0.1, 0.8, 0.9], [0.5, 0.2, 0.9], [0.9, 0.8, 0.7, 0.1],
         [0.9, 0.1], [0.5, 0.5, 0.5]]          # the last: tied minimum, chance 0, never "at last"
    out = A.min_at_last_by_length({("prm", "b"): _scores(s)}).set_index(["population", "length"])
    three = out.loc[("all", "3")]
    assert three["n_scored"] == 4 and three["n_min_at_last"] == 1 and three["n_min_tied"] == 1
    assert three["chance"] == pytest.approx(100 * (3 * (1 / 3) + 0) / 4)
    head = out.loc[("all", "3+")]
    assert head["n_scored"] == 5 and head["n_min_at_last"] == 2
    assert head["chance"] == pytest.approx(100 * (1 / 3 + 1 / 3 + 1 / 3 + 0 + 1 / 4) / 5)
    assert head["ci_low"] < head["share"] < head["ci_high"]
    two = out.loc[("all", "2")]
    assert (two["n_scored"], two["share"], two["chance"]) == (1, 100.0, 50.0)


def test_by_length_pools_benchmarks_and_counts_the_selected_response_apart():
    a = _scores([[0.9, 0.8, 0.1]] * 4)             # one problem, four responses: one is selected
    b = _scores([[0.1, 0.8, 0.9]] * 4)
    out = A.min_at_last_by_length({("prm", "a"): a, ("prm", "b"): b}).set_index(["population", "length"])
    assert out.loc[("all", "3"), "n_scored"] == 8 and out.loc[("all", "3"), "n_min_at_last"] == 4
    assert out.loc[("selected", "3"), "n_scored"] == 2


def test_cells_carry_observed_and_chance_per_length_and_keep_the_paper_comparison():
    scores = {("human", "b"): _scores([[0.9, 0.8, 0.1], [0.5, 0.2, 0.9], [0.3], [0.9, 0.1]])}  # a paper row
    params = analysis_params(run={"name": "t"})
    cells = F.build_fig8(A.min_at_last_shares(scores), load_published(), params, True,
                         A.min_at_last_by_length(scores))
    head = cells[cells["column"] == F.HEADLINE].set_index("stage")
    assert head.loc["all responses: observed", "value"] == pytest.approx(50.0)
    assert head.loc["all responses: chance", "value"] == pytest.approx(100 / 3)
    assert head.loc["all responses: observed", "n"] == 2
    assert not cells.loc[cells["column"].isin(F.LENGTH_COLUMNS.values()), "comparable"].any()
    assert "5+ steps" not in set(cells["column"])           # an empty bucket gives no cell
    # the pooled share over all responses is still the one compared with the paper's number
    pooled = cells[(cells["column"] == "all") & (cells["stage"] == "all responses")].iloc[0]
    assert pooled["comparable"] and pooled["value"] == pytest.approx(75.0) and pooled["published"] == 26.8


def test_plot_draws_chance_beside_observed():
    scores = {(p, "b"): _scores([[0.9, 0.8, 0.1], [0.5, 0.2, 0.9], [0.3]]) for p in ("mc_hard", "human")}
    cells = F.build_fig8(A.min_at_last_shares(scores), load_published(), analysis_params(), False,
                         A.min_at_last_by_length(scores))
    fig = F.plot_fig8(cells, load_published(), analysis_params())
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "all, 3+ steps: observed" in labels and "all, 3+ steps: chance" in labels
