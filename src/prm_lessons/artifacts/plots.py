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
                      "pdf.fonttype": 42, "axes.linewidth": 0.6, "grid.linewidth": 0.4})
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


def draw_bars(ax, sns, df: pd.DataFrame, x: str, y: str, hue: str | None = None, order=None, hue_order=None,
          palette=None, horizontal: bool = False, label_fmt: str = "{:.1f}") -> None:
    """Bars of precomputed values (no seaborn estimation), CI whiskers where the data has them, and value
    labels. Whiskers are placed from the drawn patches (one container per hue level, bars in `order`)."""
    order = order or list(dict.fromkeys(df[x]))
    levels = (hue_order or list(dict.fromkeys(df[hue]))) if hue else [None]
    kw = dict(hue=hue, order=order, hue_order=levels if hue else None, palette=palette, ax=ax, errorbar=None,
              legend=bool(hue) and hue != x, saturation=0.9)
    if horizontal:
        sns.barplot(data=df, y=x, x=y, orient="h", **kw)
    else:
        sns.barplot(data=df, x=x, y=y, **kw)
    if label_fmt:
        for cont in ax.containers:
            ax.bar_label(cont, fmt=label_fmt, fontsize=4.5, padding=1)
    if not ({"ci_low", "ci_high"} <= set(df.columns) and df["ci_low"].notna().any()):
        return
    if hue == x or hue is None:  # one container per level when hue == x, one container otherwise
        pairs = [(cont, [lvl]) for cont, lvl in zip(ax.containers, order)] if hue == x else [(ax.containers[0], order)]
        for cont, cats in pairs:
            for patch, cat in zip(cont.patches, cats):
                whisker(ax, patch, df[df[x] == cat], horizontal)
    else:
        for cont, lvl in zip(ax.containers, levels):
            present = [c for c in order if ((df[x] == c) & (df[hue] == lvl)).any()]
            patches = [p for p in cont.patches if not (np.isnan(p.get_height()) or np.isnan(p.get_width()))]
            for patch, cat in zip(patches, present):
                whisker(ax, patch, df[(df[x] == cat) & (df[hue] == lvl)], horizontal)


def whisker(ax, patch, r: pd.DataFrame, horizontal: bool) -> None:
    if r.empty or pd.isna(r["ci_low"].iloc[0]) or pd.isna(r["ci_high"].iloc[0]):
        return
    lo, hi = float(r["ci_low"].iloc[0]), float(r["ci_high"].iloc[0])
    if horizontal:
        yc = patch.get_y() + patch.get_height() / 2
        ax.plot([lo, hi], [yc, yc], color="0.15", lw=0.6, solid_capstyle="butt")
    else:
        xc = patch.get_x() + patch.get_width() / 2
        ax.plot([xc, xc], [lo, hi], color="0.15", lw=0.6, solid_capstyle="butt")


def legend_small(ax, title=None, loc="best", ncol: int = 1, outside: bool = False) -> None:
    if ax.get_legend() is None:
        return
    kw = dict(title=title, frameon=False, handlelength=1, borderaxespad=0.2, labelspacing=0.2, ncol=ncol,
              columnspacing=0.8)
    if outside:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), **kw)
    else:
        ax.legend(loc=loc, **kw)


def zoom_to(ax, values: pd.Series, horizontal: bool = False, headroom: float = 2.0) -> None:
    """Axis range around the values (the paper zooms its bar charts too); 0-100 bounds kept."""
    lo, hi = float(values.min()), float(values.max())
    pad = max(1.0, 0.25 * (hi - lo))
    rng = (max(0.0, lo - 3 * pad), min(100.0, hi + headroom * pad))
    (ax.set_xlim if horizontal else ax.set_ylim)(*rng)


def save_figure(fig, aid: str, outputs: Mapping, params: Mapping) -> None:
    """A figure artifact's PDF and PNG (outputs `pdf`, `png`), stamped with the run that made it."""
    run = params["run"]
    info = ARTIFACTS[aid]
    # "regenerated", never "reproduced": that word is a verdict (artifacts.verdict_rules), which a figure is not
    grader = params["grader"] if "grader" in params else None
    note = f"{info['source']} {REGENERATED}. {stamp(run)}" + (f" Graded by {grader}." if grader else "")
    fig.text(0.01, 0.003, textwrap.fill(note, int(figure_width(params) * 30)), fontsize=4.5, color="0.35",
             ha="left", va="bottom")
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
    keep = ["origin", "name", "key", "column", "value", "ci_low", "ci_high"] + \
        [c for c in ("aggregation", *EXTRA_FIELDS) if c in run.columns or c in paper.columns]
    return pd.concat([run.reindex(columns=keep), paper.reindex(columns=keep)], ignore_index=True)


def origin_title(ax, origin: str) -> None:
    ax.set_title(origin if origin == ORIGIN_RUN else "paper (Zhang et al. 2025)", fontsize=6, pad=2)


def plot_metric_grid(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping, ylabels: Mapping[str, str]):
    """Figure 2: rows = origin (this run, paper), columns = metric; one bar per training-data row,
    coloured by the paper row it reproduces (same colour in both panels; a legend names both)."""
    plt, sns = figure_style(params)
    from matplotlib.patches import Patch  # lazy: as in figure_style

    cols = list(ylabels)
    pub_long = published_long(pub, aid)
    data = run_and_paper(cells, pub_long, cols)
    keys = list(dict.fromkeys(list(pub_long["key"]) + [k for k in cells["key"] if k is not None]))
    palette = key_palette(sns, keys, params)
    fig, axes = plt.subplots(2, len(cols), figsize=(figure_width(params), 3.1), squeeze=False)
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
            zoom_to(ax, d["value"])
    handles = []
    for k in keys:
        run_rows = sorted(set(cells.loc[cells["key"] == k, "row"]))
        plabel = next(iter(pub_long.loc[pub_long["key"] == k, "label"]), None)
        text = " / ".join(run_rows) + (" ↔ " if run_rows and plabel else "") + (plabel or "")
        handles.append(Patch(color=palette[k], label=text))
    fig.legend(handles=handles, loc="lower center", ncol=1, frameon=False, fontsize=5, bbox_to_anchor=(0.5, 0.03))
    fig.tight_layout(rect=(0, 0.04 + 0.045 * len(handles), 1, 1), h_pad=0.6, w_pad=0.6)
    return fig


def plot_hard_soft(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping, col: str, ylabel: str):
    """Figures 3 / 4: x = before / after consensus filtering, hue = soft / hard; this run and paper."""
    plt, sns = figure_style(params)
    data = run_and_paper(cells, published_long(pub, aid), [col])
    fig, axes = plt.subplots(1, 2, figsize=(figure_width(params), 2.0), squeeze=False)
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
        origin_title(ax, origin)
        zoom_to(ax, pd.concat([d["value"], d["ci_high"].dropna()]), headroom=5.0)
        legend_small(ax, None, ncol=2, outside=False, loc="upper left")
    fig.tight_layout(rect=(0, 0.05, 1, 1), w_pad=0.6)
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
