"""Rendering: the paper's tables as LaTeX (paper/tables/*.tex) and Markdown, paper/report.md,
paper/tables/run_info.tex, and paper/main.pdf (latexmk)."""
from __future__ import annotations

import logging
import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

import pandas as pd

from prm_lessons import text_rule
from prm_lessons.artifacts.cells import (
    count_label,
    data_comparability,
    data_notes,
    mc_experiment_comparability,
    read_trainsets,
    write_cells,
)
from prm_lessons.artifacts.comparability import apply_not_compared
from prm_lessons.artifacts.published import (
    EXTRA_FIELDS,
    PB_METRIC_LABELS,
    column_label,
    load_published,
    published_long,
)
from prm_lessons.artifacts.registry import ARTIFACTS, artifact_paths, stamp
from prm_lessons.tables import write_text_atomic

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------
# Display (wide) frames for LaTeX / Markdown
# ------------------------------------------------------------------------------------------------

def _fmt(v) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.1f}"


def display_frame(cells: pd.DataFrame, aid: str, pub: Mapping) -> pd.DataFrame:
    """Wide frame: one line per row of this run, then 'paper: <label>' with the published numbers of the
    matching cells and 'Δ' where comparable. Columns in the order they appear in the cells."""
    if cells.empty:
        return pd.DataFrame({"": []})
    tid = aid
    cols = list(dict.fromkeys(cells["column"]))
    pcol_of = dict(zip(cells["column"], cells["paper_column"]))
    # a benchmark merged with others into one paper column (cells._merge_paper_columns) keeps its own name
    shared = {p for p in pcol_of.values() if list(pcol_of.values()).count(p) > 1}
    headers = [column_label(pub, str(pcol_of.get(c) or c))
               if (pcol_of.get(c) in _paper_columns(pub, tid) and (pcol_of.get(c) not in shared or c == pcol_of.get(c)))
               or str(c).startswith("average") else _workflow_column_label(str(c)) for c in cols]
    id_cols = ["row"] + [c for c in ("aggregation", *EXTRA_FIELDS) if c in cells.columns and cells[c].notna().any()]
    # the data-source artifacts' "# samples" (cells.data_comparability): the row's training set, the paper's
    sized = any(c in cells.columns and cells[c].notna().any() for c in ("n_samples", "paper_n_samples"))
    out = []
    for ident, g in cells.groupby(id_cols, sort=False, dropna=False):
        ident = ident if isinstance(ident, tuple) else (ident,)
        name = str(ident[0]) + "".join(f" [{_fmt(x) if isinstance(x, float) else x}]" for x in ident[1:]
                                       if x is not None and not (isinstance(x, float) and math.isnan(x)))
        by_col = g.set_index("column")
        size = [count_label(g["n_samples"].iloc[0])] if sized else []
        out.append([name] + size + [_fmt(by_col["value"].get(c)) for c in cols])
        if "seed_sd" in by_col.columns and by_col["seed_sd"].notna().any():  # artifacts.seeds.seed_spread
            k = int(by_col["n_seeds"].max())
            out.append([f"seed s.d. ({k} seeds)"] + [""] * sized + [
                _fmt(by_col["seed_sd"].get(c)) if pd.notna(by_col["seed_sd"].get(c)) else "" for c in cols])
        if by_col["published"].notna().any():
            # a cell without a published label holds NaN, which is truthy: take the first real label
            label = next((x for x in by_col["label"] if isinstance(x, str) and x), by_col["key"].iloc[0])
            size = [count_label(g["paper_n_samples"].iloc[0])] if sized else []
            out.append([f"paper: {label}"] + size + [_fmt(by_col["published"].get(c)) for c in cols])
            if by_col["diff"].notna().any():
                out.append(["Δ"] + [""] * sized + [
                    (("+" if by_col["diff"].get(c) > 0 else "") + _fmt(by_col["diff"].get(c)))
                    if pd.notna(by_col["diff"].get(c)) else "" for c in cols])
    out += [r[:1] + [""] * sized + r[1:]
            for r in published_only_lines(pub, tid, cols, pcol_of, set(cells["key"].astype(str)))]
    return pd.DataFrame(out, columns=["row"] + ["# samples"] * sized + headers)


PUBLISHED_ONLY_PREFIX = "paper only"


def published_only_lines(pub: Mapping, tid: str, cols: list, pcol_of: Mapping, shown: set[str]) -> list[list[str]]:
    """Lines for the rows published.yaml lists under `published_only` (rows this workflow does not run, e.g.
    Table 7's proprietary critics): 'paper only: <label>' with the published number of each shown column's
    paper column, never a value of this run or Δ. A key this run measures anyway is not repeated."""
    t = pub["tables"].get(tid) or {}
    keep = [str(k) for k in t.get("published_only") or [] if str(k) not in shown]
    if not keep:
        return []
    pub_long = published_long(pub, tid)
    lines = []
    for key in keep:
        mine = pub_long[pub_long["key"] == key]
        if mine.empty:
            continue
        by_pcol = dict(zip(mine["column"], mine["published"]))
        lines.append([f"{PUBLISHED_ONLY_PREFIX}: {mine['label'].iloc[0]}"]
                     + [_fmt(by_pcol.get(str(pcol_of.get(c) or c))) for c in cols])
    return lines


def _paper_columns(pub, tid) -> set[str]:
    return set(pub["tables"].get(tid, {}).get("columns", []))


def _workflow_column_label(c: str) -> str:
    if "/" in c:
        sub, metric = c.split("/", 1)
        return f"{sub} {PB_METRIC_LABELS.get(metric, metric)}"
    return {"bon_average": "BoN avg.", "processbench_f1": "PB avg. F1", "tolerance_average": "PB tolerance avg.",
            "all": "all benchmarks"}.get(c, c)


# ------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------
# LaTeX and Markdown from a wide display frame
# ------------------------------------------------------------------------------------------------

# the text rule's LaTeX escape (config validation holds user text to what it can set)
tex_escape = text_rule.tex_escape


_MD_PUNCTUATION = set("\\`*_{}[]()<>#+-.!|~&^=:\"'$%@,;/?")


_MD_INLINE = set("\\`*_[]<>|~$&")
_MD_CELL = set("\\`[]<>|")


def md_note(text: object) -> str:
    """A note (project text that may hold user names: rows, policy labels) as one Markdown line that prints
    it: the characters with an inline meaning (emphasis, code, links, HTML, table cells, entities) and a
    leading block marker backslash-escaped, line breaks as spaces; unlike md_escape, the sentence's own
    punctuation is left readable."""
    out = "".join(("\\" + ch) if ch in _MD_INLINE else (" " if not ch.isprintable() else ch) for ch in str(text))
    head = out.lstrip()
    if head[:1] in ("#", "+", "-", "=", ">") or (head.split(" ", 1)[0][:-1].isdigit()
                                                 and head.split(" ", 1)[0][-1:] in (".", ")")):
        out = "\\" + head
    return out


def notes_markdown(notes) -> list[str]:
    """A table's or figure's notes under it in paper/report.md: one bullet each (md_note), then a blank line."""
    notes = [str(n) for n in notes or [] if str(n).strip()]
    return ["Notes:", ""] + [f"- {md_note(n)}" for n in notes] + [""] if notes else []


def md_escape(text: object) -> str:
    """User text (a run label) as Markdown that prints it: every ASCII punctuation character
    backslash-escaped (CommonMark then shows it literally: no emphasis, link, HTML tag or entity),
    line breaks and other control characters as spaces."""
    return "".join(("\\" + ch) if ch in _MD_PUNCTUATION else (" " if not ch.isprintable() else ch)
                   for ch in str(text))


def latex_table(display, title: str, source: str, run: Mapping, label: str, notes: list[str] | None = None) -> str:
    """A booktabs table from a display frame (first column = row label; a row whose label starts with
    "paper" or "Δ" is set in italics). Written by hand rather than with pandas' Styler.to_latex because
    the paper/difference sub-rows need per-row styling and the caption needs escaping either way."""
    cols = list(display.columns)
    spec = "l" + "r" * (len(cols) - 1)
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small",
             r"\caption{" + tex_escape(title) + ". Regenerated by this workflow (" + tex_escape(stamp(run))
             + r"); rows marked \emph{paper} are " + tex_escape(source)
             + r" of Zhang et al.\ (2025), arXiv:2501.07301v2.}",
             r"\label{tab:" + label + "}",
             r"\begin{adjustbox}{max width=\linewidth, max totalheight=0.8\textheight, keepaspectratio}",
             r"\begin{tabular}{" + spec + "}",
             r"\toprule", " & ".join(tex_escape(c) for c in cols) + r" \\", r"\midrule"]
    for _, row in display.iterrows():
        cells = [tex_escape(v) for v in row.tolist()]
        first = str(row.iloc[0])
        if first.startswith(("paper", "Δ")):
            cells = [r"\textit{" + c + "}" if c else c for c in cells]
            cells[0] = r"\quad " + cells[0].replace("Δ", r"$\Delta$")
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{adjustbox}"]
    for note in notes or []:
        lines.append(r"\par\smallskip{\footnotesize " + tex_escape(note) + "}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def markdown_table(display) -> str:
    """A GitHub-flavoured Markdown table (ten lines; pandas' to_markdown would add a dependency); user names
    in its cells are text (no link, HTML or code span)."""
    cols = [str(c) for c in display.columns]

    def esc(v):  # a cell: no link, HTML tag, code span or cell break (names stay readable: mc_hard)
        return "".join(("\\" + ch) if ch in _MD_CELL else (" " if not ch.isprintable() else ch) for ch in str(v))

    lines = ["| " + " | ".join(esc(c) for c in cols) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|"]
    for _, row in display.iterrows():
        lines.append("| " + " | ".join(esc(v) for v in row.tolist()) + " |")
    return "\n".join(lines) + "\n"


def table_notes(aid: str, cells: pd.DataFrame, pub: Mapping) -> list[str]:
    """Footnotes of a table's LaTeX: no comparable cell, the paper's own note, no rows in this run."""
    notes = []
    if len(cells) and cells["published"].notna().any() and not cells["comparable"].any():
        notes.append("No cell is comparable with the paper (different benchmarks/subsets or Best-of-N N), "
                     "so no difference is given; the paper's numbers are shown for orientation only.")
    if len(cells) and published_only_lines(pub, aid, list(dict.fromkeys(cells["column"])),
                                           dict(zip(cells["column"], cells["paper_column"])),
                                           set(cells["key"].astype(str))):
        notes.append("Rows marked 'paper only' are the paper's published numbers for models this workflow does "
                     "not run (proprietary API critics); nothing is measured or compared for them.")
    if pub["tables"].get(aid, {}).get("notes"):
        notes.append("Paper: " + " ".join(str(pub["tables"][aid]["notes"]).split()))
    if cells.empty:
        notes.append("This run has no rows for this table (see the rule's log).")
    return notes


def table_tex(aid: str, cells: pd.DataFrame, pub: Mapping, run: Mapping, extra_notes: list[str] | None = None) -> str:
    """A table artifact's paper/tables/<stem>.tex from its cells (`extra_notes`: the artifact's own
    footnotes, e.g. what each critic row ran with)."""
    a = ARTIFACTS[aid]
    display = display_frame(cells, aid, pub) if len(cells) else pd.DataFrame({"row": ["(no rows in this run)"]})
    return latex_table(display, a["title"], a["source"], run, aid,
                       table_notes(aid, cells, pub) + list(extra_notes or []))


# ------------------------------------------------------------------------------------------------
# paper/report.md, paper/tables/run_info.tex, paper/main.pdf
# ------------------------------------------------------------------------------------------------

def report_markdown(pub: Mapping, run: Mapping, cells_of: Mapping[str, pd.DataFrame], report_dir: str | Path,
                    findings: str = "", skipped: Mapping[str, str] | None = None,
                    notes_of: Mapping[str, list[str]] | None = None) -> str:
    """paper/report.md: every table in Markdown beside the paper's numbers, every figure linked (links
    relative to `report_dir`), each with its notes under it (`notes_of`: artifact id → the notes its rule
    kept in the provenance record: the LaTeX table's footnotes, a figure's grader and data notes).
    `cells_of` holds the cells of each artifact whose CSV exists. `findings`
    (Markdown, prm_lessons.artifacts.findings.findings_markdown; passed in so that this module, which the
    table rules import, does not depend on it) opens the report, right after the title. `skipped`: artifact
    id → why this configuration does not produce it (plan.analysis_skipped), printed in its place."""
    skipped, notes_of = skipped or {}, notes_of or {}
    report_dir = Path(report_dir)
    md = [f"# Reproduction report: {pub['citation']['title']}", ""]
    if findings.strip():
        md += [findings.strip(), ""]
    md += [f"**What produced these numbers:** {md_escape(stamp(run))}.",
          "",
          f"Published numbers: {pub['citation']['text']} <{pub['citation']['url']}>. "
          f"Paper setup: {pub['citation']['setup']}",
          "",
          "Each table shows this run's numbers; rows marked *paper* give the published number of the "
          "matching row, *Δ* the difference where the cells are comparable (same benchmark set and N). "
          "The CSV beside each table holds the long form with confidence intervals; the JSON beside it the "
          "provenance (config hash, input checksums).", ""]
    for aid, a in ARTIFACTS.items():
        paths = artifact_paths(aid)
        md.append(f"## {a['source']}: {a['title']}")
        md.append("")
        if aid in skipped:
            md += [f"_Not produced by this configuration: {skipped[aid]}._", ""]
            continue
        if a["kind"] == "figure":
            rel = os.path.relpath(paths["png"], report_dir)
            md.append(f"![{a['source']}]({rel})")
            md.append("")
            md.append(f"PDF: [{paths['pdf']}]({os.path.relpath(paths['pdf'], report_dir)}) · data: "
                      f"[{paths['csv']}]({os.path.relpath(paths['csv'], report_dir)})")
            md.append("")
            md += notes_markdown(notes_of.get(aid))
        if aid in cells_of:
            cells = cells_of[aid]
            if cells.empty:
                md.append("_No rows in this run (see the rule's log)._")
            else:
                md.append(markdown_table(display_frame(cells, aid, pub)))
            if a["kind"] == "table":
                md += notes_markdown(notes_of.get(aid))
                md.append(f"Data: [{paths['csv']}]({os.path.relpath(paths['csv'], report_dir)})")
        md.append("")
    return "\n".join(md)


def run_info_tex(run: Mapping, skipped: Mapping[str, str] | None = None) -> str:
    """paper/tables/run_info.tex: run label and config hash (\\runlabel, \\runname) for main.tex, and for
    each artifact this configuration does not produce, `skip@<stem>` = why (main.tex's \\optionaltable
    prints it in the table's place)."""
    skips = "".join("\\expandafter\\def\\csname skip@" + ARTIFACTS[aid]["stem"] + "\\endcsname{"
                    + tex_escape(why) + "}\n" for aid, why in (skipped or {}).items() if aid in ARTIFACTS)
    return ("\\newcommand{\\runlabel}{" + tex_escape(stamp(run)) + "}\n"
            "\\newcommand{\\runname}{" + tex_escape(run.get("name", "")) + "}\n" + skips)


def latexmk_available() -> bool:
    return shutil.which("latexmk") is not None


def latexmk_pdf(tex: str | Path, pdf: str | Path, timeout_s: int = 600) -> None:
    """Build `pdf` from the LaTeX source `tex` with latexmk, in pdf's directory (the source is copied
    there when it lives elsewhere, e.g. `snakemake --directory /tmp/run`); latexmk's output is printed."""
    if not latexmk_available():
        raise RuntimeError("latexmk is not installed (Debian: apt-get install latexmk "
                           "texlive-latex-recommended texlive-latex-extra); set paper.pdf: false to skip")
    src = Path(tex).resolve()
    pdf = Path(pdf).resolve()
    build = pdf.parent
    build.mkdir(parents=True, exist_ok=True)
    main = build / "main.tex"
    if src != main:
        shutil.copyfile(src, main)
    cmd = ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", main.name]
    log.info("running %s in %s", " ".join(cmd), build)
    res = subprocess.run(cmd, cwd=build, capture_output=True, text=True, timeout=int(timeout_s))
    print(res.stdout[-20000:])
    print(res.stderr[-5000:])
    if res.returncode != 0 or not pdf.exists():
        raise RuntimeError(f"latexmk failed with exit code {res.returncode}; "
                           f"see the log above and {build / 'main.log'}")


def emit_table(aid: str, cells: pd.DataFrame, outputs: Mapping, params: Mapping, inputs: Mapping,
               notes: list[str] | None = None) -> None:
    """A table rule's outputs: its cells CSV and provenance record, and its LaTeX table (`notes` below it)."""
    pub = load_published()
    cells = mc_experiment_comparability(aid, cells, pub, params)
    cells, setting_notes = apply_not_compared(aid, cells, params)
    if "data_setting" in params:  # the data-source tables: # samples, provenance, the data rule
        cells = data_comparability(aid, cells, pub, params, read_trainsets(inputs))
        notes = list(notes or []) + data_notes(aid, cells, pub, params)
    notes = list(notes or []) + setting_notes
    # the LaTeX table's footnotes, also kept in the provenance record: paper/report.md prints them under the table
    write_cells(aid, cells, outputs, params, inputs, notes=table_notes(aid, cells, pub) + notes)
    write_text_atomic(outputs["tex"], table_tex(aid, cells, pub, params["run"], notes))
