"""The paper's figures from their cells: seaborn, colour-blind palette, one paper column wide; each
figure shows this run's numbers above (or beside) the paper's. The style, drawing helpers and the plots
several figures share live here; each figure's own plot lives in its module, artifacts/defs/<stem>.py.

matplotlib and seaborn are imported when a figure is drawn, not with this module (see figure_style)."""
from __future__ import annotations

import logging
import textwrap
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from prm_lessons.artifacts.cells import (
    data_comparability,
    data_notes,
    grader_notes,
    mc_experiment_comparability,
    read_trainsets,
    write_cells,
)
from prm_lessons.artifacts.comparability import apply_not_compared
from prm_lessons.artifacts.published import EXTRA_FIELDS, load_published, published_long
from prm_lessons.artifacts.registry import ARTIFACTS, stamp
from prm_lessons.tables import atomic_path
from prm_lessons.text_rule import MPL_TEXT_RC

ORIGIN_RUN, ORIGIN_PAPER = "this run", "paper"
# what a figure (its footer) and its HTML caption (workflow/report/<stem>.rst) say it is
REGENERATED = "regenerated (this run beside the paper)"


def figure_style(params: Mapping):
    """Set the figure theme from `analysis.figure` (params["figure"]); (pyplot, seaborn)."""
    import matplotlib  # lazy: table jobs import this module (through rules.analysis) but never draw

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: as matplotlib, and only after the Agg backend is chosen
    import seaborn as sns  # lazy: as matplotlib

    logging.getLogger("fontTools").setLevel(logging.WARNING)  # PDF font subsetting logs every glyph at INFO
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    fig_cfg = params["figure"]
    fs = float(fig_cfg["font_size"])
    sns.set_theme(context="paper", style="whitegrid", palette=fig_cfg["palette"],
                  rc={"font.size": fs, "axes.titlesize": fs, "axes.labelsize": fs, "xtick.labelsize": fs - 1,
                      "ytick.labelsize": fs - 1, "legend.fontsize": fs - 1, "legend.title_fontsize": fs - 1,
                      "pdf.fonttype": 42, "axes.linewidth": 0.6, "grid.linewidth": 0.4,
                      # laid out at the resolution the PNG is written at: text widths differ between resolutions
                      "figure.dpi": int(fig_cfg["dpi"]),
                      # labels are text: `$x$` in a PRM's label is not math (text_rule.MPL_TEXT_RC)
                      **MPL_TEXT_RC})
    return plt, sns


def figure_width(params) -> float:
    return float(params["figure"]["width_in"])


def mark_empty(ax, text: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, textwrap.fill(text, 40), ha="center", va="center", fontsize=6, color="0.3",
            transform=ax.transAxes)


def short_name(name: str, width: int = 18) -> str:
    return textwrap.shorten(str(name), width=width, placeholder="…") if len(str(name)) > width else str(name)


def wrap_name(name: str, width: int = 14) -> str:
    return "\n".join(textwrap.wrap(str(name), width=width, break_on_hyphens=False, break_long_words=False)) or str(name)


def key_palette(sns, keys: Iterable[str], params: Mapping) -> dict:
    """One colour per paper key, the same in the 'this run' and 'paper' panels."""
    keys = list(dict.fromkeys(k for k in keys if k is not None))
    colours = sns.color_palette(params["figure"]["palette"], max(len(keys), 1))
    return {k: colours[i % len(colours)] for i, k in enumerate(keys)}


def _renderer(fig):
    return fig.canvas.get_renderer()


def fmt_count(n) -> str:
    """A sample count as the paper writes its sizes: 860000 → "860k", 3000000 → "3M", 66 → "66"."""
    if n is None or pd.isna(n):
        return "?"
    n = float(n)
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:.0f}"


def draw_bars(ax, sns, df: pd.DataFrame, x: str, y: str, hue: str | None = None, order=None, hue_order=None,
          palette=None, horizontal: bool = False, label_fmt: str = "{:.1f}", show_n: bool = False) -> None:
    """Bars of precomputed values (no seaborn estimation), CI whiskers where the data has them, and value
    labels. Whiskers are placed from the drawn patches (one container per hue level, bars in `order`).
    A value label sits past its bar's whisker (never on it); it carries the bar's n where `show_n` and,
    always, where an interval is drawn over an empty bar (value 0): a wide interval is read with its n."""
    order = order or list(dict.fromkeys(df[x]))
    levels = (hue_order or list(dict.fromkeys(df[hue]))) if hue else [None]
    kw = dict(hue=hue, order=order, hue_order=levels if hue else None, palette=palette, ax=ax, errorbar=None,
              legend=bool(hue) and hue != x, saturation=0.9)
    if horizontal:
        sns.barplot(data=df, y=x, x=y, orient="h", **kw)
    else:
        sns.barplot(data=df, x=x, y=y, **kw)
    pairs = []  # (patch, its row frame)
    if hue == x or hue is None:  # one container per level when hue == x, one container otherwise
        groups = [(cont, [lvl]) for cont, lvl in zip(ax.containers, order)] if hue == x else \
            [(ax.containers[0], order)] if ax.containers else []
        for cont, cats in groups:
            for patch, cat in zip(cont.patches, cats):
                pairs.append((patch, df[df[x] == cat]))
    else:
        for cont, lvl in zip(ax.containers, levels):
            present = [c for c in order if ((df[x] == c) & (df[hue] == lvl)).any()]
            patches = [p for p in cont.patches if not (np.isnan(p.get_height()) or np.isnan(p.get_width()))]
            for patch, cat in zip(patches, present):
                pairs.append((patch, df[(df[x] == cat) & (df[hue] == lvl)]))
    has_ci = {"ci_low", "ci_high"} <= set(df.columns) and df["ci_low"].notna().any()
    for patch, r in pairs:
        end = whisker(ax, patch, r, horizontal) if has_ci else None
        if label_fmt:
            value_label(ax, patch, r, horizontal, label_fmt, end, show_n)


def value_label(ax, patch, r: pd.DataFrame, horizontal: bool, label_fmt: str, end: float | None,
                show_n: bool) -> None:
    """A bar's value past its bar end or, where it has one, past its whisker's end."""
    v = patch.get_width() if horizontal else patch.get_height()
    if v is None or np.isnan(v):
        return
    text = label_fmt.format(v)
    n = r["n"].iloc[0] if "n" in r.columns and len(r) and pd.notna(r["n"].iloc[0]) else None
    if n is not None and (show_n or (end is not None and v == 0)):
        text += ("  " if horizontal else "\n") + f"n={int(n)}"
    tip = max(v, end) if end is not None else v
    if horizontal:
        yc = patch.get_y() + patch.get_height() / 2
        ax.annotate(text, (tip, yc), xytext=(1.5, 0), textcoords="offset points", ha="left", va="center",
                    fontsize=4.5, annotation_clip=False)
    else:
        xc = patch.get_x() + patch.get_width() / 2
        ax.annotate(text, (xc, tip), xytext=(0, 1.5), textcoords="offset points", ha="center", va="bottom",
                    fontsize=4.5, annotation_clip=False, linespacing=1.0)


def whisker(ax, patch, r: pd.DataFrame, horizontal: bool) -> float | None:
    """The bar's interval as a whisker; its upper end (None when the row has no interval)."""
    if r.empty or pd.isna(r["ci_low"].iloc[0]) or pd.isna(r["ci_high"].iloc[0]):
        return None
    lo, hi = float(r["ci_low"].iloc[0]), float(r["ci_high"].iloc[0])
    if horizontal:
        yc = patch.get_y() + patch.get_height() / 2
        ax.plot([lo, hi], [yc, yc], color="0.15", lw=0.6, solid_capstyle="butt")
    else:
        xc = patch.get_x() + patch.get_width() / 2
        ax.plot([xc, xc], [lo, hi], color="0.15", lw=0.6, solid_capstyle="butt")
    return hi


def bar_limits(ax, values, horizontal: bool = False, at_least: float = 0.0, room: float = 0.2) -> None:
    """A bar axis from 0 (a bar's length is its value) to past the largest value or interval end, with
    room for the value labels; ticks of a percent axis stop at 100."""
    vals = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna()
    top = max([float(vals.max()) if len(vals) else 0.0, at_least, 1.0])
    hi = top * (1 + room)
    (ax.set_xlim if horizontal else ax.set_ylim)(0, hi)
    if hi > 100 >= top * 0.5:  # a percent axis: no tick past 100
        (ax.set_xticks if horizontal else ax.set_yticks)([t for t in range(0, 101, 20)])


def legend_small(ax, title=None, loc="best", ncol: int = 1, outside: bool = False, handles=None) -> None:
    """The axes' legend (its own, or `handles`), small; `outside`: above the axes (its title then names the
    panel, in place of an axes title), in `ncol` columns, fewer where finish_layout finds it past the canvas."""
    old = ax.get_legend()
    if handles is None:
        if old is None:
            return
        handles = list(old.legend_handles)
        labels = [t.get_text() for t in old.get_texts()]
    else:
        labels = [h.get_label() for h in handles]
    kw = dict(title=title, frameon=False, handlelength=1, borderaxespad=0.2, labelspacing=0.2, columnspacing=0.8)
    if not outside:
        ax.legend(handles, labels, loc=loc, ncol=ncol, **kw)
        return
    kw.update(loc="lower center", bbox_to_anchor=(0.5, 1.0))
    ax.legend(handles, labels, ncol=max(int(ncol), 1), **kw)
    ax.prm_legend = (handles, labels, kw)  # for finish_layout's refit


def _refit_legends(fig) -> bool:
    """One column fewer for each outside legend (legend_small) that runs past the canvas; whether any changed."""
    renderer = _renderer(fig)
    changed = False
    for ax in fig.axes:
        leg, spec = ax.get_legend(), getattr(ax, "prm_legend", None)
        if leg is None or spec is None or leg._ncols <= 1:
            continue
        bb = leg.get_window_extent(renderer)
        if bb.x0 < 0.01 * fig.bbox.width or bb.x1 > 0.99 * fig.bbox.width:
            handles, labels, kw = spec
            ax.legend(handles, labels, ncol=leg._ncols - 1, **kw)
            changed = True
    return changed


def fit_figure_legend(fig, handles, ncol: int = 1, fontsize: float = 5):
    """A figure legend across the top, with as many of `ncol` columns as fit in the figure's width."""
    for k in range(max(int(ncol), 1), 0, -1):
        leg = fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1.0), ncol=k, frameon=False,
                         fontsize=fontsize, handlelength=1, borderaxespad=0.2, labelspacing=0.2, columnspacing=0.8)
        if k == 1 or leg.get_window_extent(_renderer(fig)).width <= fig.bbox.width * 0.98:
            return leg
        leg.remove()


def overlaps(a, b, tol: float = 0.5) -> bool:
    """Whether two display-space bounding boxes overlap by more than `tol` pixels each way."""
    return a.x0 < b.x1 - tol and b.x0 < a.x1 - tol and a.y0 < b.y1 - tol and b.y0 < a.y1 - tol


def rotate_crowded_ticks(fig) -> bool:
    """Slant the x tick labels of an axes where two of them run together; whether any was slanted."""
    renderer = _renderer(fig)
    changed = False
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in labels]
        if labels and labels[0].get_rotation() == 0 and any(
                overlaps(a, b, tol=-3 * fig.dpi / 72) for i, a in enumerate(boxes) for b in boxes[i + 1:]):
            for t in labels:
                t.set_rotation(40)
                t.set_horizontalalignment("right")
                t.set_rotation_mode("anchor")
            changed = True
    return changed


def declutter_annotations(ax, step: float = 5.0, tries: int = 12) -> None:
    """Move an axes' text annotations (point labels) down, one text height at a time, off those placed before
    them; one still overlapping after `tries` moves is left where it is."""
    fig = ax.figure
    renderer = _renderer(fig)
    placed = []
    for t in [t for t in ax.texts if hasattr(t, "xyann")]:
        for _ in range(tries):
            bb = t.get_window_extent(renderer)
            if not any(overlaps(bb, p) for p in placed):
                break
            x, y = t.xyann
            t.xyann = (x, y - step)
        placed.append(t.get_window_extent(renderer))


def footer_text(aid: str, params: Mapping, interval: str | None = None) -> str:
    info = ARTIFACTS[aid]
    # "regenerated", never "reproduced": that word is a verdict (artifacts.verdict_rules), which a figure is not
    grader = params["grader"] if "grader" in params else None
    return (f"{info['source']} {REGENERATED}." + (f" {interval}." if interval else "") + f" {stamp(params['run'])}"
            + (f" Graded by {grader}." if grader else ""))


def add_footer(fig, aid: str, params: Mapping, interval: str | None = None):
    """The figure's footer (what it is, which run made it, what its whiskers are), once, at the bottom."""
    if getattr(fig, "prm_footer", None) is not None:
        return fig.prm_footer
    text = textwrap.fill(footer_text(aid, params, interval), int(fig.get_figwidth() * 28))
    fig.prm_footer = fig.text(0.01, 0.003, text, fontsize=4.5, color="0.35", ha="left", va="bottom")
    return fig.prm_footer


# what a figure's whiskers are, said in its footer
BOOTSTRAP_CI = "Whiskers: this run's 95% percentile bootstrap intervals (problems resampled); the paper gives none"
WILSON_CI = "Whiskers: this run's 95% Wilson intervals of a share; the paper gives none"


def finish_layout(fig, aid: str, params: Mapping, interval: str | None = None, legend=None, **tight) -> None:
    """Lay a figure out inside its canvas: the footer at the bottom, `legend` (handles, ncol) as a figure legend
    across the top, the axes (their labels and legends) in the space between; x tick labels that run together
    are slanted and the layout redone."""
    renderer = _renderer(fig)
    foot = add_footer(fig, aid, params, interval)
    bottom = foot.get_window_extent(renderer).height / fig.bbox.height + 0.01
    top = 1.0
    if legend is not None and len(legend[0]):
        leg = fit_figure_legend(fig, legend[0], legend[1])
        top = 1.0 - leg.get_window_extent(renderer).height / fig.bbox.height - 0.01
    fig.tight_layout(rect=(0, bottom, 1, top), **tight)
    for _ in range(4):  # legends narrowed and tick labels slanted until they fit
        if not (_refit_legends(fig) | rotate_crowded_ticks(fig)):
            break
        fig.tight_layout(rect=(0, bottom, 1, top), **tight)


def save_figure(fig, aid: str, outputs: Mapping, params: Mapping) -> None:
    """A figure artifact's PDF and PNG (outputs `pdf`, `png`), stamped with the run that made it (the footer
    finish_layout placed; added here to a figure laid out without it)."""
    run = params["run"]
    info = ARTIFACTS[aid]
    add_footer(fig, aid, params)
    meta = {"Title": f"{info['source']}: {info['title']}", "Subject": stamp(run),
            "Creator": "prm-lessons (workflow/rules/analysis.smk)"}
    dpi = int(params["figure"]["dpi"])
    with atomic_path(outputs["pdf"]) as tmp:  # format named: the temporary file's suffix is .tmp
        fig.savefig(tmp, format="pdf", metadata=meta)
    with atomic_path(outputs["png"]) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, metadata={"Title": meta["Title"], "Description": meta["Subject"]})
    import matplotlib.pyplot as plt  # lazy: as in figure_style (already loaded by then)

    plt.close(fig)


def run_and_paper(cells: pd.DataFrame, pub_long: pd.DataFrame, value_cols: Iterable[str]) -> pd.DataFrame:
    """Both origins in one long frame: this run's cells (name = workflow row) and the paper's figure rows
    (name = the paper's label)."""
    run = cells[cells["column"].isin(list(value_cols))].copy()
    run["origin"] = ORIGIN_RUN
    run["name"] = run["row"]
    paper = pub_long[pub_long["column"].isin(list(value_cols))].copy()
    paper = paper.rename(columns={"published": "value"})
    paper["origin"] = ORIGIN_PAPER
    paper["name"] = paper["label"]
    paper["ci_low"] = paper["ci_high"] = np.nan
    keep = ["origin", "name", "key", "column", "value", "ci_low", "ci_high", "n"] + \
        [c for c in ("aggregation", *EXTRA_FIELDS) if c in run.columns or c in paper.columns]
    return pd.concat([run.reindex(columns=keep), paper.reindex(columns=keep)], ignore_index=True)


PAPER_ORIGIN = "paper (Zhang et al. 2025)"


def origin_label(origin: str) -> str:
    return origin if origin == ORIGIN_RUN else PAPER_ORIGIN


def origin_title(ax, origin: str) -> None:
    ax.set_title(origin_label(origin), fontsize=6, pad=2)


def size_legend_label(cells: pd.DataFrame, key: str, plabel: str | None) -> str:
    """A legend entry naming this run's rows with their training-set size beside the paper's row (whose label
    carries the paper's size): "this run: mc_hard (66 samples) ↔ paper: MC estimation (860k)"."""
    mine = cells[cells["key"] == key]
    rows = []
    for row in dict.fromkeys(mine["row"]):
        n = mine.loc[mine["row"] == row, "n_samples"].dropna() if "n_samples" in mine.columns else pd.Series()
        rows.append(f"{row} ({fmt_count(n.iloc[0])} samples)" if len(n) else f"{row} (size not recorded)")
    run = ("this run: " + " / ".join(rows)) if rows else ""
    paper = f"paper: {plabel}" if plabel else ""
    return " ↔ ".join(t for t in (run, paper) if t)


def plot_metric_grid(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping, ylabels: Mapping[str, str]):
    """Figure 2: rows = origin (this run, paper), columns = metric; one bar per training-data row,
    coloured by the paper row it reproduces (same colour in both panels; a legend names both, each with its
    training-set size)."""
    plt, sns = figure_style(params)
    from matplotlib.patches import Patch  # lazy: as in figure_style

    cols = list(ylabels)
    pub_long = published_long(pub, aid)
    data = run_and_paper(cells, pub_long, cols)
    keys = list(dict.fromkeys(list(pub_long["key"]) + [k for k in cells["key"] if k is not None]))
    palette = key_palette(sns, keys, params)
    fig, axes = plt.subplots(2, len(cols), figsize=(figure_width(params), 3.4), squeeze=False)
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        for j, col in enumerate(cols):
            ax = axes[i][j]
            d = data[(data["origin"] == origin) & (data["column"] == col)].copy()
            if d.empty:
                mark_empty(ax, f"{origin}: no rows" + (" (see the rule's log)" if origin == ORIGIN_RUN else ""))
                continue
            draw_bars(ax, sns, d, "key", "value", hue="key", order=[k for k in keys if k in set(d["key"])],
                      palette=palette)
            ax.set_xlabel("")
            ax.set_xticklabels([])
            ax.set_ylabel(ylabels[col])
            origin_title(ax, origin)
            bar_limits(ax, pd.concat([d["value"], d["ci_high"]]))
    handles = [Patch(color=palette[k], label=size_legend_label(
        cells, k, next(iter(pub_long.loc[pub_long["key"] == k, "label"]), None))) for k in keys]
    finish_layout(fig, aid, params, BOOTSTRAP_CI, legend=(handles, 1), h_pad=0.6, w_pad=0.6)
    return fig


def plot_hard_soft(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping, col: str, ylabel: str):
    """Figures 3 / 4: x = before / after consensus filtering, hue = soft / hard; this run and paper."""
    plt, sns = figure_style(params)
    data = run_and_paper(cells, published_long(pub, aid), [col])
    fig, axes = plt.subplots(1, 2, figsize=(figure_width(params), 2.2), squeeze=False)
    for j, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[0][j]
        d = data[data["origin"] == origin].copy()
        if d.empty or "stage" not in d or d["stage"].isna().all():
            mark_empty(ax, f"{origin}: no hard/soft rows before/after filtering")
            continue
        draw_bars(ax, sns, d, "stage", "value", hue="labels",
                  order=[s for s in ("before", "after") if s in set(d["stage"])],
                  hue_order=[h for h in ("soft", "hard") if h in set(d["labels"])])
        ax.set_xlabel("consensus filtering", fontsize=6)
        ax.set_ylabel(ylabel if j == 0 else "")
        bar_limits(ax, pd.concat([d["value"], d["ci_high"]]))
        if ax.get_legend() is not None:
            legend_small(ax, origin_label(origin), ncol=2, outside=True)
        else:
            origin_title(ax, origin)
    finish_layout(fig, aid, params, BOOTSTRAP_CI, w_pad=0.6)
    return fig


def emit_figure(aid: str, cells: pd.DataFrame, plot: Callable, outputs: Mapping, params: Mapping,
                inputs: Mapping) -> None:
    """A figure rule's outputs: its cells CSV and provenance record, and the figure `plot` draws (PDF, PNG)."""
    pub = load_published()
    cells = mc_experiment_comparability(aid, cells, pub, params)
    # the figure's notes, printed under it in paper/report.md (kept in its provenance record): the grader of a
    # Best-of-N figure, the reasons of analysis.not_compared, the data-source figures' provenance
    cells, notes = apply_not_compared(aid, cells, params)
    if "data_setting" in params:  # the data-source figures: # samples and the data rule (cells.data_comparability)
        cells = data_comparability(aid, cells, pub, params, read_trainsets(inputs))
        notes += data_notes(aid, cells, pub, params) if len(cells) else []
    graded = grader_notes(params) if "grader" in params else []  # only a Best-of-N figure is given `grader`
    write_cells(aid, cells, outputs, params, inputs, notes=graded + notes)
    save_figure(plot(cells, pub, params), aid, outputs, params)
