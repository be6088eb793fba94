"""Every figure as a reader sees it, checked on matplotlib's rendered bounding boxes: no text over another
(tick and value labels, axis labels, titles, legend entries, annotations, the footer), nothing cut at the
canvas's edge, no legend over the bars, bar axes from 0 with every whisker inside them, this run's
intervals drawn where its cells have them and said in the footer, an empty bar's interval read with its n,
and legends that name this run's training-set sizes beside the paper's.

Each figure is drawn twice: from the cells of a real (embedded) run, kept in
tests/support/fixtures/figure_cells/<stem>.csv (Figure 6's with a hand-made n = 1 bar added), and from the
synthetic upstream files of analysis_synth through the figure's rule."""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis_synth import analysis_params, rule_inputs, write_upstream
from prm_lessons.artifacts import plots
from prm_lessons.artifacts import registry as P
from prm_lessons.artifacts.cells import load_cells
from prm_lessons.artifacts.published import load_published
from prm_lessons.rules import analysis as rules_analysis

FIXTURES = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "figure_cells"
FIGURES = [aid for aid, a in P.ARTIFACTS.items() if a["kind"] == "figure"]
RUN = {"name": "embedded", "label": "Embedded default: SmolLM2-135M-Instruct (135M parameters) on generated "
                                    "problems, not the paper's models or data"}


def _params():
    p = analysis_params(run=RUN, grader="math_verify")
    return {**p, "figure": {**p["figure"], "dpi": 300}}  # as config/config.yaml writes the PNGs


def _module(aid):
    return importlib.import_module(f"prm_lessons.artifacts.defs.{P.ARTIFACTS[aid]['stem']}")


def fixture_cells(aid: str) -> pd.DataFrame:
    cells = load_cells(FIXTURES / f"{P.ARTIFACTS[aid]['stem']}.csv")
    if aid == "fig6":  # one judged response, not flawed: an empty bar whose interval spans 0 to 79 %
        one = cells.iloc[[0]].assign(row="policy samples, judge", column="test", paper_column="test", n=1,
                                     value=0.0, ci_low=0.0, ci_high=79.3)
        cells = pd.concat([cells, one], ignore_index=True)
    return cells


def plot_from_cells(aid: str, cells: pd.DataFrame):
    return getattr(_module(aid), f"plot_{aid}")(cells, load_published(), _params())


@pytest.fixture(scope="module")
def synthetic_figures(tmp_path_factory):
    """Every figure drawn by its rule from analysis_synth's upstream files; {aid: (figure, cells)}."""
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("figures")
    got = {}
    try:
        write_upstream(tmp)
        mp.chdir(tmp)
        mp.setattr(plots, "save_figure", lambda fig, aid, outputs, params: got.__setitem__(aid, fig))
        params = analysis_params()
        for aid in ["table5"] + FIGURES:  # Figure 7 reads Table 5's cells
            getattr(rules_analysis, P.ARTIFACTS[aid]["stem"])(inputs=rule_inputs(), outputs=P.artifact_paths(aid),
                                                              params=params, wildcards={}, threads=1)
        yield {aid: (got[aid], load_cells(P.artifact_paths(aid)["csv"])) for aid in FIGURES}
    finally:
        mp.undo()


# ------------------------------------------------------------------------------------------------
# what is drawn, from the rendered figure
# ------------------------------------------------------------------------------------------------

def _shown(t) -> bool:
    return t.get_visible() and bool(t.get_text().strip())


def texts(fig) -> list[tuple[str, object]]:
    """(what, Text) of every visible, non-empty text a reader sees."""
    out = [("figure text", t) for t in fig.texts if _shown(t)]
    for leg in fig.legends:
        out += [("figure legend", t) for t in [*leg.get_texts(), leg.get_title()] if _shown(t)]
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        out += [(f"axes {i} text", t) for t in ax.texts if _shown(t)]
        if not ax.axison:
            continue
        out += [(f"axes {i} title", t) for t in (ax.title, ax._left_title, ax._right_title) if _shown(t)]
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if _shown(axis.label):
                out.append((f"axes {i} {name} label", axis.label))
            if _shown(axis.get_offset_text()):
                out.append((f"axes {i} {name} offset", axis.get_offset_text()))
            lo, hi = sorted(axis.get_view_interval())
            eps = 1e-9 * max(1.0, abs(hi - lo))
            for tick in axis.get_major_ticks():
                if lo - eps <= tick.get_loc() <= hi + eps and tick.get_visible() and _shown(tick.label1):
                    out.append((f"axes {i} {name} tick", tick.label1))
        leg = ax.get_legend()
        if leg is not None:
            out += [(f"axes {i} legend", t) for t in [*leg.get_texts(), leg.get_title()] if _shown(t)]
    return out


def _overlap(a, b, tol: float = 0.5) -> bool:
    return a.x0 < b.x1 - tol and b.x0 < a.x1 - tol and a.y0 < b.y1 - tol and b.y0 < a.y1 - tol


def _inside(inner, outer, tol: float = 1.0) -> bool:
    return inner.x0 >= outer.x0 - tol and inner.y0 >= outer.y0 - tol and inner.x1 <= outer.x1 + tol \
        and inner.y1 <= outer.y1 + tol


def bar_axes(fig):
    """(axes, orientation) of every axes with bars."""
    out = []
    for ax in fig.axes:
        bars = [c for c in ax.containers if hasattr(c, "orientation") and hasattr(c, "patches")]
        if bars:
            out.append((ax, bars[0].orientation))
    return out


def layout_problems(fig) -> list[str]:
    """What a reviewer would send back, from the rendered bounding boxes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    shown = [(what, t, t.get_window_extent(renderer)) for what, t in texts(fig)]
    shown = [(w, t, bb) for w, t, bb in shown if bb.width > 0 and bb.height > 0]
    problems = []
    for i, (wa, ta, a) in enumerate(shown):
        if not _inside(a, canvas):
            problems.append(f"{wa} {ta.get_text()!r} is cut at the canvas's edge")
        for wb, tb, b in shown[i + 1:]:
            if _overlap(a, b):
                problems.append(f"{wa} {ta.get_text()!r} overlaps {wb} {tb.get_text()!r}")
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for leg in legends:
        if not _inside(leg.get_window_extent(renderer), canvas):
            problems.append(f"a legend ({[t.get_text() for t in leg.get_texts()]}) is cut at the canvas's edge")
    for ax, orientation in bar_axes(fig):
        lo = (ax.get_ylim() if orientation == "vertical" else ax.get_xlim())[0]
        if lo != 0:
            problems.append(f"a bar axis starts at {lo}, not 0")
        for line in ax.lines:
            if not _inside(line.get_window_extent(renderer), ax.bbox):
                problems.append(f"a whisker or line runs off its bar axes ({line.get_xydata().tolist()})")
        leg = ax.get_legend()
        if leg is not None:
            lb = leg.get_window_extent(renderer)
            for patch in ax.patches:
                pb = patch.get_window_extent(renderer)
                if pb.width > 0 and pb.height > 0 and _overlap(lb, pb):
                    problems.append("a legend is drawn over the bars")
                    break
    return problems


def _close(fig):
    import matplotlib.pyplot as plt

    plt.close(fig)


# ------------------------------------------------------------------------------------------------
# every figure
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("aid", FIGURES)
def test_a_real_runs_figure_has_no_text_over_text_nothing_cut_and_bars_from_zero(aid):
    fig = plot_from_cells(aid, fixture_cells(aid))
    try:
        assert layout_problems(fig) == []
    finally:
        _close(fig)


@pytest.mark.parametrize("aid", FIGURES)
def test_a_synthetic_runs_figure_has_no_text_over_text_nothing_cut_and_bars_from_zero(aid, synthetic_figures):
    fig, _ = synthetic_figures[aid]
    assert layout_problems(fig) == []


def _interval_artists(fig) -> int:
    """Whiskers drawn: two-point lines of bar axes and error-bar segments."""
    from matplotlib.collections import LineCollection

    n = 0
    for ax in fig.axes:
        n += sum(len(c.get_segments()) for c in ax.collections if isinstance(c, LineCollection))
        n += sum(1 for ln in ax.lines if len(ln.get_xydata()) == 2 and ax.containers)
    return n


@pytest.mark.parametrize("aid", FIGURES)
def test_this_runs_intervals_are_drawn_where_its_cells_have_them_and_said(aid):
    cells = fixture_cells(aid)
    fig = plot_from_cells(aid, cells)
    try:
        with_ci = cells[["ci_low", "ci_high"]].notna().all(axis=1).any()
        footer = fig.prm_footer.get_text().replace("\n", " ")
        if with_ci:
            assert _interval_artists(fig) > 0
            assert "Whiskers: this run's 95%" in footer
    finally:
        _close(fig)


def test_figure5_draws_every_interval_of_its_cells():
    from matplotlib.collections import LineCollection

    cells = fixture_cells("fig5")
    fig = plot_from_cells("fig5", cells)
    try:
        segments = sum(len(c.get_segments()) for ax in fig.axes for c in ax.collections
                       if isinstance(c, LineCollection))
        assert segments == cells[["ci_low", "ci_high"]].notna().all(axis=1).sum() > 0
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert labels == ["this run (whiskers: 95% interval)", "paper (Zhang et al. 2025)"]
        assert "percentile bootstrap" in fig.prm_footer.get_text().replace("\n", " ")
    finally:
        _close(fig)


def test_figure6_prints_the_n_of_every_run_bar_and_of_the_empty_one():
    fig = plot_from_cells("fig6", fixture_cells("fig6"))
    try:
        labels = [t.get_text() for t in fig.axes[0].texts]
        assert "0.0\nn=1" in labels and "0.0\nn=4" in labels and "66.7\nn=3" in labels
        assert not any("n=" in t.get_text() for t in fig.axes[1].texts)  # the paper's bars have no n here
        assert fig.axes[0].get_legend().get_title().get_text() == "this run"
    finally:
        _close(fig)


def test_an_interval_over_an_empty_bar_carries_its_n_even_unasked():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots()
    d = pd.DataFrame({"x": ["a", "b"], "value": [0.0, 40.0], "ci_low": [0.0, 30.0], "ci_high": [79.3, 50.0],
                      "n": [1, 90]})
    try:
        plots.draw_bars(ax, sns, d, "x", "value")
        assert sorted(t.get_text() for t in ax.texts) == ["0.0\nn=1", "40.0"]
        label = next(t for t in ax.texts if t.get_text() == "40.0")
        assert label.xy[1] == 50.0  # past the whisker, not on it
    finally:
        plt.close(fig)


def test_figure2_legend_names_this_runs_sizes_beside_the_papers():
    fig = plot_from_cells("fig2", fixture_cells("fig2"))
    try:
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "this run: mc_hard (66 samples) ↔ paper: MC estimation (860k)" in labels
        assert "this run: consensus_hard (7 samples) ↔ paper: Consensus filtering (350k)" in labels
    finally:
        _close(fig)


def test_figure1_reference_lines_are_named_in_a_legend_not_over_the_bars():
    fig = plot_from_cells("fig1", fixture_cells("fig1"))
    try:
        run_bon = fig.axes[0]
        labels = [t.get_text() for t in run_bon.get_legend().get_texts()]
        assert any(t.startswith("maj@") for t in labels) and any(t.startswith("pass@") for t in labels)
        assert run_bon.get_legend().get_title().get_text() == "this run"
        assert "o1-mini (published, not run here) 87.9" in [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
        assert not any("@" in t.get_text() for ax in fig.axes for t in ax.texts)  # no label drawn on a line
    finally:
        _close(fig)


@pytest.mark.parametrize("n", [0.0, 66, 7_000, 860_000, 3_000_000, np.nan])
def test_fmt_count(n):
    assert plots.fmt_count(n) == {0.0: "0", 66: "66", 7_000: "7k", 860_000: "860k", 3_000_000: "3M"}.get(n, "?")
