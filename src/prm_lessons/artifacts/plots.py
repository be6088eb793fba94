"""The paper's figures from their cells: seaborn, colour-blind palette, one paper column wide; each
figure shows this run's numbers above (or beside) the paper's.

matplotlib and seaborn are imported when a figure is drawn, not with this module (see _style)."""
from __future__ import annotations

import logging
import textwrap
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from prm_lessons.artifacts.cells import REFERENCE_KEYS
from prm_lessons.artifacts.published import EXTRA_FIELDS, published_long
from prm_lessons.artifacts.registry import ARTIFACTS, stamp

ORIGIN_RUN, ORIGIN_PAPER = "this run", "paper"


def _style(params: Mapping):
    """Set the figure theme from `analysis.figure` (params["figure"]); (pyplot, seaborn)."""
    import matplotlib  # lazy: table jobs import this module (through rules.analysis) but never draw

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: as matplotlib, and only after the Agg backend is chosen
    import seaborn as sns  # lazy: as matplotlib

    logging.getLogger("fontTools").setLevel(logging.WARNING)  # PDF font subsetting logs every glyph at INFO
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    fig_cfg = params.get("figure") or {}
    fs = float(fig_cfg.get("font_size", 7))
    sns.set_theme(context="paper", style="whitegrid", palette=fig_cfg.get("palette", "colorblind"),
                  rc={"font.size": fs, "axes.titlesize": fs, "axes.labelsize": fs, "xtick.labelsize": fs - 1,
                      "ytick.labelsize": fs - 1, "legend.fontsize": fs - 1, "legend.title_fontsize": fs - 1,
                      "pdf.fonttype": 42, "axes.linewidth": 0.6, "grid.linewidth": 0.4})
    return plt, sns


def _width(params) -> float:
    return float((params.get("figure") or {}).get("width_in", 3.3))


def _empty(ax, text: str) -> None:
    ax.set_axis_off()
    ax.text(0.5, 0.5, textwrap.fill(text, 40), ha="center", va="center", fontsize=6, color="0.3",
            transform=ax.transAxes)


def _short(name: str, width: int = 18) -> str:
    return textwrap.shorten(str(name), width=width, placeholder="…") if len(str(name)) > width else str(name)


def _wrap(name: str, width: int = 14) -> str:
    return "\n".join(textwrap.wrap(str(name), width=width, break_on_hyphens=False, break_long_words=False)) or str(name)


def _key_palette(sns, keys: Iterable[str], params: Mapping) -> dict:
    """One colour per paper key, the same in the 'this run' and 'paper' panels."""
    keys = list(dict.fromkeys(k for k in keys if k is not None))
    colours = sns.color_palette((params.get("figure") or {}).get("palette", "colorblind"), max(len(keys), 1))
    return {k: colours[i % len(colours)] for i, k in enumerate(keys)}


def _bars(ax, sns, df: pd.DataFrame, x: str, y: str, hue: str | None = None, order=None, hue_order=None,
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
                _whisker(ax, patch, df[df[x] == cat], horizontal)
    else:
        for cont, lvl in zip(ax.containers, levels):
            present = [c for c in order if ((df[x] == c) & (df[hue] == lvl)).any()]
            patches = [p for p in cont.patches if not (np.isnan(p.get_height()) or np.isnan(p.get_width()))]
            for patch, cat in zip(patches, present):
                _whisker(ax, patch, df[(df[x] == cat) & (df[hue] == lvl)], horizontal)


def _whisker(ax, patch, r: pd.DataFrame, horizontal: bool) -> None:
    if r.empty or pd.isna(r["ci_low"].iloc[0]) or pd.isna(r["ci_high"].iloc[0]):
        return
    lo, hi = float(r["ci_low"].iloc[0]), float(r["ci_high"].iloc[0])
    if horizontal:
        yc = patch.get_y() + patch.get_height() / 2
        ax.plot([lo, hi], [yc, yc], color="0.15", lw=0.6, solid_capstyle="butt")
    else:
        xc = patch.get_x() + patch.get_width() / 2
        ax.plot([xc, xc], [lo, hi], color="0.15", lw=0.6, solid_capstyle="butt")


def _legend_small(ax, title=None, loc="best", ncol: int = 1, outside: bool = False) -> None:
    if ax.get_legend() is None:
        return
    kw = dict(title=title, frameon=False, handlelength=1, borderaxespad=0.2, labelspacing=0.2, ncol=ncol,
              columnspacing=0.8)
    if outside:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), **kw)
    else:
        ax.legend(loc=loc, **kw)


def _zoom(ax, values: pd.Series, horizontal: bool = False, headroom: float = 2.0) -> None:
    """Axis range around the values (the paper zooms its bar charts too); 0-100 bounds kept."""
    lo, hi = float(values.min()), float(values.max())
    pad = max(1.0, 0.25 * (hi - lo))
    rng = (max(0.0, lo - 3 * pad), min(100.0, hi + headroom * pad))
    (ax.set_xlim if horizontal else ax.set_ylim)(*rng)


def save_figure(fig, aid: str, outputs: Mapping, params: Mapping) -> None:
    """A figure artifact's PDF and PNG (outputs `pdf`, `png`), stamped with the run that made it."""
    run = params.get("run") or {}
    info = ARTIFACTS[aid]
    note = f"{info['source']} reproduced. {stamp(run)}"
    fig.text(0.01, 0.003, textwrap.fill(note, int(_width(params) * 30)), fontsize=4.5, color="0.35",
             ha="left", va="bottom")
    meta = {"Title": f"{info['source']}: {info['title']}", "Subject": stamp(run),
            "Creator": "prm-lessons (workflow/rules/analysis.smk)"}
    dpi = int((params.get("figure") or {}).get("dpi", 300))
    for kind in ("pdf", "png"):
        Path(outputs[kind]).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(outputs["pdf"], metadata=meta)
    fig.savefig(outputs["png"], dpi=dpi, metadata={"Title": meta["Title"], "Description": meta["Subject"]})
    import matplotlib.pyplot as plt  # lazy: as in _style (already loaded by then)

    plt.close(fig)


def _run_and_paper(cells: pd.DataFrame, pub_long: pd.DataFrame, value_cols: Iterable[str]) -> pd.DataFrame:
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


def _origin_title(ax, origin: str) -> None:
    ax.set_title(origin if origin == ORIGIN_RUN else "paper (Zhang et al. 2025)", fontsize=6, pad=2)


def plot_metric_grid(aid: str, cells: pd.DataFrame, pub: Mapping, params: Mapping, ylabels: Mapping[str, str]):
    """Figure 2: rows = origin (this run, paper), columns = metric; one bar per training-data row,
    coloured by the paper row it reproduces (same colour in both panels; a legend names both)."""
    plt, sns = _style(params)
    from matplotlib.patches import Patch  # lazy: as in _style

    cols = list(ylabels)
    pub_long = published_long(pub, aid)
    data = _run_and_paper(cells, pub_long, cols)
    keys = list(dict.fromkeys(list(pub_long["key"]) + [k for k in cells["key"] if k is not None]))
    palette = _key_palette(sns, keys, params)
    fig, axes = plt.subplots(2, len(cols), figsize=(_width(params), 3.1), squeeze=False)
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        for j, col in enumerate(cols):
            ax = axes[i][j]
            d = data[(data["origin"] == origin) & (data["column"] == col)].copy()
            if d.empty:
                _empty(ax, f"{origin}: no rows" + (" (see the rule's log)" if origin == ORIGIN_RUN else ""))
                continue
            _bars(ax, sns, d, "key", "value", hue="key", order=[k for k in keys if k in set(d["key"])],
                  palette=palette)
            ax.set_xlabel("")
            ax.set_xticklabels([])
            ax.set_ylabel(ylabels[col])
            _origin_title(ax, origin)
            _zoom(ax, d["value"])
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
    plt, sns = _style(params)
    data = _run_and_paper(cells, published_long(pub, aid), [col])
    fig, axes = plt.subplots(1, 2, figsize=(_width(params), 2.0), squeeze=False)
    for j, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[0][j]
        d = data[data["origin"] == origin].copy()
        if d.empty or "stage" not in d or d["stage"].isna().all():
            _empty(ax, f"{origin}: no hard/soft rows before/after filtering")
            continue
        _bars(ax, sns, d, "stage", "value", hue="labels", order=[s for s in ("before", "after") if s in set(d["stage"])],
              hue_order=[h for h in ("soft", "hard") if h in set(d["labels"])])
        ax.set_xlabel("consensus filtering", fontsize=6)
        ax.set_ylabel(ylabel if j == 0 else "")
        _origin_title(ax, origin)
        _zoom(ax, pd.concat([d["value"], d["ci_high"].dropna()]), headroom=5.0)
        _legend_small(ax, None, ncol=2, outside=False, loc="upper left")
    fig.tight_layout(rect=(0, 0.05, 1, 1), w_pad=0.6)
    return fig


def plot_fig2(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 2: consensus filtering, Best-of-N mean accuracy and ProcessBench mean F1."""
    return plot_metric_grid("fig2", cells, pub, params,
                            {"bon_average": "BoN mean acc. (%)", "processbench_f1": "ProcessBench F1 (%)"})


def plot_fig3(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 3: hard vs soft labels, Best-of-N mean accuracy."""
    return plot_hard_soft("fig3", cells, pub, params, "bon_average", "BoN mean acc. (%)")


def plot_fig4(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 4: hard vs soft labels, ProcessBench mean F1."""
    return plot_hard_soft("fig4", cells, pub, params, "processbench_f1", "ProcessBench F1 (%)")


def plot_fig5(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 5: metric against the MC threshold, this run and the paper as two lines."""
    plt, sns = _style(params)
    cols = {"bon_average": "BoN mean acc. (%)", "processbench_f1": "ProcessBench F1 (%)"}
    data = _run_and_paper(cells, published_long(pub, "fig5"), cols)
    data["origin"] = data["origin"].map({ORIGIN_RUN: ORIGIN_RUN, ORIGIN_PAPER: "paper"})
    fig, axes = plt.subplots(1, 2, figsize=(_width(params), 1.9), squeeze=False)
    for j, (col, ylabel) in enumerate(cols.items()):
        ax = axes[0][j]
        d = data[data["column"] == col].dropna(subset=["threshold"])
        if d.empty:
            _empty(ax, "no threshold-sweep rows")
            continue
        sns.lineplot(data=d, x="threshold", y="value", hue="origin", style="origin", markers=True, dashes=False,
                     hue_order=[o for o in (ORIGIN_RUN, "paper") if o in set(d["origin"])], ax=ax, markersize=3,
                     linewidth=0.9)
        ax.set_xlabel("MC threshold (hard labels)")
        ax.set_ylabel(ylabel)
        ax.set_xticks([0, 0.25, 0.5, 0.75])
        _legend_small(ax, None, loc="best")
    fig.tight_layout(rect=(0, 0.05, 1, 1), w_pad=0.6)
    return fig


def plot_fig6(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 6: flawed-process rate among correct answers; this run (judge on the policy's samples,
    ProcessBench's annotation of its cases) over the paper (human annotation, ProcessBench)."""
    plt, sns = _style(params)
    pub_long = published_long(pub, "fig6")
    run = cells.copy()
    run["series"] = run["row"]
    run["x"] = run["column"]
    paper = pub_long.rename(columns={"published": "value"}).copy()
    paper["series"] = paper["key"].map({"policy": "policy samples, human", "processbench": "ProcessBench annotation"})
    paper["x"] = paper["column"].map(lambda c: pub["columns"].get(c, c))
    paper["ci_low"] = paper["ci_high"] = np.nan
    fig, axes = plt.subplots(2, 1, figsize=(_width(params), 3.4), squeeze=False)
    for i, (origin, d) in enumerate(((ORIGIN_RUN, run), (ORIGIN_PAPER, paper))):
        ax = axes[i][0]
        if d.empty:
            _empty(ax, f"{origin}: no rates (no judge labels or ProcessBench cases)")
            continue
        _bars(ax, sns, d, "x", "value", hue="series")
        ax.set_xlabel("")
        ax.set_ylabel("flawed process among\ncorrect answers (%)")
        top = max(10.0, float(d["ci_high"].max() if d["ci_high"].notna().any() else 0), float(d["value"].max()))
        ax.set_ylim(0, min(100.0, top * 1.2) if top * 1.2 < 100 else 115)
        _legend_small(ax, None, ncol=2, loc="upper left")
        _origin_title(ax, origin)
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.8)
    return fig


def plot_fig7(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 7: BoN mean accuracy against accuracy on answer-correct/process-wrong cases."""
    plt, sns = _style(params)
    pub_long = published_long(pub, "fig7")
    data = _run_and_paper(cells, pub_long, ["bon_average", "tolerance_average"])
    palette = _key_palette(sns, list(pub_long["key"]) + list(cells["key"]), params)
    fig, axes = plt.subplots(1, 2, figsize=(_width(params), 2.0), squeeze=False)
    for j, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[0][j]
        d = data[data["origin"] == origin].pivot_table(index=["name", "key"], columns="column", values="value",
                                                       aggfunc="first")
        if d.empty or not {"bon_average", "tolerance_average"} <= set(d.columns):
            _empty(ax, f"{origin}: needs both BoN and tolerance results")
            continue
        d = d.dropna().reset_index()
        sns.scatterplot(data=d, x="tolerance_average", y="bon_average", hue="key", palette=palette, ax=ax, s=18,
                        legend=False)
        for _, r in d.iterrows():
            ax.annotate(_wrap(r["name"], 14), (r["tolerance_average"], r["bon_average"]), fontsize=4.5,
                        xytext=(2, 2), textcoords="offset points")
        ax.set_xlabel("acc. on answer-correct,\nprocess-wrong cases (%)")
        ax.set_ylabel("BoN mean acc. (%)" if j == 0 else "")
        _origin_title(ax, origin)
        ax.margins(0.3)
    fig.tight_layout(rect=(0, 0.05, 1, 1), w_pad=0.6)
    return fig


def plot_fig8(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 8: share of Best-of-N responses whose minimum step score is on the final step, per PRM:
    over all responses (the paper's population) and over the selected ones (hue)."""
    plt, sns = _style(params)
    run = cells[cells["column"] == "all"].copy()
    run["name"] = run["row"].map(lambda s: _short(s, 24))
    paper = published_long(pub, "fig8").rename(columns={"published": "value"})
    paper["name"] = paper["label"]
    paper["ci_low"] = paper["ci_high"] = np.nan
    n_run = run["name"].nunique()
    heights = [max(0.8, 0.25 * n_run + 0.4), 0.15 * len(paper) + 0.3]
    fig, axes = plt.subplots(2, 1, figsize=(_width(params), sum(heights) + 0.7), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for i, (origin, d) in enumerate(((ORIGIN_RUN, run), (ORIGIN_PAPER, paper))):
        ax = axes[i][0]
        if d.empty:
            _empty(ax, f"{origin}: no scored Best-of-N responses")
            continue
        if i == 0:
            order = list(d[d["stage"] == "all responses"].sort_values("value")["name"]) or None
            _bars(ax, sns, d, "name", "value", hue="stage", order=order,
                  hue_order=[s for s in ("all responses", "selected responses") if s in set(d["stage"])],
                  horizontal=True)
            _legend_small(ax, None, ncol=1, loc="upper right")  # the top bar is the shortest
        else:
            _bars(ax, sns, d.sort_values("value"), "name", "value", horizontal=True)
        ax.set_ylabel("")
        ax.set_xlabel("min. step score on the final step (%)" if i == 1 else "")
        ax.tick_params(axis="y", labelsize=5)
        _origin_title(ax, origin)
        ax.set_xlim(0, min(100, max(10, float(d[["value", "ci_high"]].max().max()) * 1.2)))
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.5)
    return fig


def plot_fig9(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 9: BoN mean accuracy by scoring strategy per training-data row; this run over the paper."""
    plt, sns = _style(params)
    cols = ["min", "product", "last"]
    data = _run_and_paper(cells, published_long(pub, "fig9"), cols)
    fig, axes = plt.subplots(2, 1, figsize=(_width(params), 3.3), squeeze=False)
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        ax = axes[i][0]
        d = data[data["origin"] == origin].copy()
        if d.empty:
            _empty(ax, f"{origin}: no rows")
            continue
        d["name"] = d["name"].map(lambda s: _wrap(s, 12))
        _bars(ax, sns, d, "name", "value", hue="column", hue_order=[c for c in cols if c in set(d["column"])],
              label_fmt="")
        ax.set_xlabel("")
        ax.set_ylabel("BoN mean acc. (%)")
        _origin_title(ax, origin)
        _zoom(ax, pd.concat([d["value"], d["ci_high"].dropna()]), headroom=4.0)
        ax.tick_params(axis="x", labelsize=5)
        _legend_small(ax, None, ncol=3, loc="upper left")
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.6)
    return fig


def plot_fig1(cells: pd.DataFrame, pub: Mapping, params: Mapping):
    """Figure 1: per PRM, Best-of-N average accuracy and ProcessBench average F1 (two bar panels, PRMs in
    one order, by Best-of-N), this run above the paper; pass@N / maj@N as labelled lines on the Best-of-N
    panels, o1-mini's published ProcessBench F1 on the ProcessBench panels (in this run's: "published, not
    reproduced")."""
    plt, sns = _style(params)
    cols = {"bon_average": "BoN avg. acc. (%)", "processbench_f1": "ProcessBench avg. F1 (%)"}
    data = _run_and_paper(cells, published_long(pub, "fig1"), cols)
    data["name"] = data["name"].map(lambda s: _short(s, 30))
    lines = data[data["key"].isin(REFERENCE_KEYS)]
    bars = data[~data["key"].isin(REFERENCE_KEYS)].dropna(subset=["value"])
    n_rows = max([bars[bars["origin"] == o]["name"].nunique() for o in (ORIGIN_RUN, ORIGIN_PAPER)] + [1])
    fig, axes = plt.subplots(2, 2, figsize=(2 * _width(params), 0.6 + 2 * (0.14 * n_rows + 0.5)), squeeze=False)
    styles = {"pass": ("0.2", ":"), "maj": ("0.45", "--"), "o1_mini": ("tab:red", "-.")}
    o1_paper = lines[(lines["origin"] == ORIGIN_PAPER) & (lines["key"] == "o1_mini")]
    for i, origin in enumerate((ORIGIN_RUN, ORIGIN_PAPER)):
        mine = bars[bars["origin"] == origin]
        order = list(mine[mine["column"] == "bon_average"].sort_values("value")["name"])
        order += [n for n in dict.fromkeys(mine["name"]) if n not in order]
        for j, (col, xlabel) in enumerate(cols.items()):
            ax = axes[i][j]
            d = mine[mine["column"] == col]
            ref = lines[(lines["column"] == col) & (lines["origin"] == origin)].dropna(subset=["value"])
            if col == "processbench_f1" and origin == ORIGIN_RUN:  # o1-mini: the paper's number, not this run's
                ref = pd.concat([ref, o1_paper])
            if d.empty:
                _empty(ax, f"{origin}: no {xlabel.split(' (')[0]} rows")
                continue
            _bars(ax, sns, d, "name", "value", order=[n for n in order if n in set(d["name"])], horizontal=True)
            for _, r in ref.iterrows():
                colour, ls = styles.get(r["key"], ("0.3", "--"))
                text = ("o1-mini (published, not reproduced)" if r["key"] == "o1_mini" and origin == ORIGIN_RUN
                        else str(r["name"]).split(" (")[0]) + f" {float(r['value']):.1f}"
                ax.axvline(float(r["value"]), color=colour, ls=ls, lw=0.8)
                ax.text(float(r["value"]), 0.99, text, transform=ax.get_xaxis_transform(), rotation=90, ha="right",
                        va="top", fontsize=4.5, color=colour,
                        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5})
            ax.set_ylabel("")
            ax.set_xlabel(xlabel if i == 1 else "")
            ax.tick_params(axis="y", labelsize=5)
            ax.set_xlim(0, 100)
            _origin_title(ax, origin)
    fig.tight_layout(rect=(0, 0.03, 1, 1), h_pad=0.6, w_pad=0.8)
    return fig
