"""The paper's tables and figures under their own names, provenance records, and paper/ (LaTeX tables,
report.md, main.pdf).

Naming follows the paper: `results/tables/table{N}_<slug>.csv` + `paper/tables/table{N}_<slug>.tex`
for tables, `figures/fig{N}_<slug>.{pdf,png}` + `results/tables/fig{N}_<slug>.csv` (the plotted data)
for figures; each has a provenance record `<same stem>.json` beside its CSV (run name and label,
config hash and files, input checksums, package version, git commit, time).

This module imports nothing heavy at import time: the workflow reads ARTIFACTS while parsing.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

log = logging.getLogger(__name__)

# id -> (kind, stem, paper source, title). The stem is the file name; titles are short captions.
ARTIFACTS: dict[str, dict] = {
    "table3": {"kind": "table", "stem": "table3_data_sources_bon", "source": "Table 3",
               "title": "Data source comparison: Best-of-N accuracy (%) of PRMs trained on MC, LLM-as-a-judge and human labels"},
    "table4": {"kind": "table", "stem": "table4_data_sources_processbench", "source": "Table 4",
               "title": "Data source comparison: ProcessBench error/correct accuracy and F1 (%)"},
    "table5": {"kind": "table", "stem": "table5_prm_tolerance", "source": "Table 5",
               "title": "PRM tolerance: accuracy (%) on ProcessBench cases whose final answer is correct but a step is wrong"},
    "table6": {"kind": "table", "stem": "table6_bon_main", "source": "Table 6",
               "title": "Main results: Best-of-N accuracy (%), product scoring, with pass@N and maj@N"},
    "table7": {"kind": "table", "stem": "table7_processbench_main", "source": "Table 7",
               "title": "Main results: ProcessBench error/correct accuracy and F1 (%)"},
    "table13": {"kind": "table", "stem": "table13_scoring_strategies", "source": "Table 13",
                "title": "Best-of-N accuracy (%) by scoring strategy (last / product / min)"},
    "fig2": {"kind": "figure", "stem": "fig2_consensus_filtering", "source": "Figure 2",
             "title": "Consensus filtering: Best-of-N mean accuracy and ProcessBench mean F1"},
    "fig3": {"kind": "figure", "stem": "fig3_hard_soft_bon", "source": "Figure 3",
             "title": "Hard vs soft labels before/after consensus filtering: Best-of-N mean accuracy"},
    "fig4": {"kind": "figure", "stem": "fig4_hard_soft_processbench", "source": "Figure 4",
             "title": "Hard vs soft labels before/after consensus filtering: ProcessBench mean F1"},
    "fig5": {"kind": "figure", "stem": "fig5_mc_threshold", "source": "Figure 5",
             "title": "MC hard-label threshold sweep: Best-of-N mean accuracy and ProcessBench mean F1"},
    "fig6": {"kind": "figure", "stem": "fig6_flawed_process", "source": "Figure 6",
             "title": "Unreliable policy: share of correct-answer responses whose process is flawed"},
    "fig7": {"kind": "figure", "stem": "fig7_tolerance_vs_bon", "source": "Figure 7",
             "title": "Best-of-N mean accuracy vs accuracy on answer-correct/process-wrong ProcessBench cases"},
    "fig8": {"kind": "figure", "stem": "fig8_min_at_last_step", "source": "Figure 8",
             "title": "Share of Best-of-N-selected responses whose minimum step score is on the final step"},
    "fig9": {"kind": "figure", "stem": "fig9_scoring_strategies", "source": "Figure 9",
             "title": "Best-of-N mean accuracy by scoring strategy (min / product / last) per training-data source"},
}
for _aid, _section in {"table3": "Data sources", "table4": "Data sources", "fig2": "Data sources",
                       "fig3": "Hard vs soft labels", "fig4": "Hard vs soft labels", "fig5": "MC threshold",
                       "fig6": "Best-of-N bias", "table5": "Best-of-N bias", "fig7": "Best-of-N bias",
                       "fig8": "Best-of-N bias", "fig9": "Scoring strategy", "table13": "Scoring strategy",
                       "table6": "Main results", "table7": "Main results"}.items():
    ARTIFACTS[_aid]["section"] = _section  # report subcategory
ORIGIN_RUN, ORIGIN_PAPER = "this run", "paper"


def artifact_paths(aid: str) -> dict[str, str]:
    """Output paths of one artifact (relative to the workflow's working directory)."""
    a = ARTIFACTS[aid]
    stem = a["stem"]
    paths = {"csv": f"results/tables/{stem}.csv", "provenance": f"results/tables/{stem}.json"}
    if a["kind"] == "table":
        paths["tex"] = f"paper/tables/{stem}.tex"
    else:
        paths["pdf"] = f"figures/{stem}.pdf"
        paths["png"] = f"figures/{stem}.png"
    return paths


# ------------------------------------------------------------------------------------------------
# Provenance
# ------------------------------------------------------------------------------------------------

def config_md5(config: Mapping) -> str:
    """Hash of a (validated) config: JSON with sorted keys, so key order does not matter."""
    return hashlib.md5(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def export_provenance_env(config: Mapping, configfiles) -> None:
    """Called by workflow/rules/analysis.smk while parsing: the invocation's config hash and config files
    for the jobs' provenance records (inherited by local jobs through the environment)."""
    os.environ["PRM_LESSONS_CONFIG_MD5"] = config_md5(config)
    os.environ["PRM_LESSONS_CONFIGFILES"] = os.pathsep.join(str(c) for c in configfiles)


def report_entry(aid: str) -> tuple[str, dict]:
    """(output key registered in the Snakemake report, report() keyword arguments) of one artifact:
    the PNG of a figure, the CSV of a table; caption workflow/report/<stem>.rst."""
    a = ARTIFACTS[aid]
    return ("png" if a["kind"] == "figure" else "csv",
            {"caption": f"../report/{a['stem']}.rst", "category": "Figures" if a["kind"] == "figure" else "Tables",
             "subcategory": a["section"], "labels": {"artifact": a["source"]}})


def _sha256(path: Path, limit: int = 1 << 30) -> str | None:
    if not path.is_file() or path.stat().st_size > limit:
        return None
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists() or not shutil.which("git"):
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(artifact: str, run: Mapping, inputs: Mapping[str, object]) -> dict:
    """What produced an artifact: run name/label, the invocation's config hash and config files
    (exported by workflow/rules/analysis.smk as PRM_LESSONS_CONFIG_MD5 / PRM_LESSONS_CONFIGFILES; they
    are deliberately not rule params, so an unrelated config edit does not rerun every figure), the
    checksums of the inputs, the package version, git commit and time."""
    from prm_lessons import __version__

    files = []
    for key, val in inputs.items():
        for p in (val if isinstance(val, (list, tuple)) else [val]):
            p = Path(str(p))
            if p.suffix == ".py":
                continue
            files.append({"input": key, "path": str(p), "sha256": _sha256(p),
                          "bytes": p.stat().st_size if p.exists() else None})
    info = ARTIFACTS.get(artifact, {})
    return {"artifact": artifact, "paper_source": info.get("source"), "title": info.get("title"),
            "run": {"name": run.get("name", ""), "label": run.get("label", "")},
            "config_md5": os.environ.get("PRM_LESSONS_CONFIG_MD5"),
            "configfiles": [c for c in os.environ.get("PRM_LESSONS_CONFIGFILES", "").split(os.pathsep) if c],
            "package_version": __version__, "git_commit": _git_commit(),
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "inputs": files}


def write_json(obj: Mapping, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, default=str, allow_nan=True) + "\n")


def stamp(run: Mapping) -> str:
    """One line naming what produced the numbers: run label (or name) and config hash."""
    label = run.get("label") or run.get("name") or "unnamed run"
    md5 = os.environ.get("PRM_LESSONS_CONFIG_MD5")
    return f"{label}" + (f" (config {md5[:8]})" if md5 else "")


# ------------------------------------------------------------------------------------------------
# Rendering: LaTeX and Markdown from a wide display frame
# ------------------------------------------------------------------------------------------------

_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: object) -> str:
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))


def latex_table(display, title: str, source: str, run: Mapping, label: str, notes: list[str] | None = None) -> str:
    """A booktabs table from a display frame (first column = row label; a row whose label starts with
    "paper" or "Δ" is set in italics). Written by hand rather than with pandas' Styler.to_latex because
    the paper/difference sub-rows need per-row styling and the caption needs escaping either way."""
    cols = list(display.columns)
    spec = "l" + "r" * (len(cols) - 1)
    lines = [r"\begin{table}[htbp]", r"\centering", r"\small",
             r"\caption{" + tex_escape(title) + ". Reproduced by this workflow (" + tex_escape(stamp(run))
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
    """A GitHub-flavoured Markdown table (ten lines; pandas' to_markdown would add a dependency)."""
    cols = [str(c) for c in display.columns]

    def esc(v):
        return str(v).replace("|", r"\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(c) for c in cols) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|"]
    for _, row in display.iterrows():
        lines.append("| " + " | ".join(esc(v) for v in row.tolist()) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------
# paper/report.md, paper/tables/run_info.tex, paper/main.pdf
# ------------------------------------------------------------------------------------------------

def rule_report_md(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `paper_report`: paper/report.md (every table in Markdown beside the paper's numbers, every
    figure linked) and paper/tables/run_info.tex (run label and config hash for main.tex)."""
    from prm_lessons.figures import display_frame, load_cells, load_published

    run = params.get("run", {})
    pub = load_published()
    report = Path(outputs["report"])
    report.parent.mkdir(parents=True, exist_ok=True)
    md = [f"# Reproduction report: {pub['citation']['title']}",
          "",
          f"**What produced these numbers:** {stamp(run)}.",
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
        csv = inputs.get(f"{aid}_csv")
        md.append(f"## {a['source']}: {a['title']}")
        md.append("")
        if a["kind"] == "figure":
            rel = os.path.relpath(paths["png"], report.parent)
            md.append(f"![{a['source']}]({rel})")
            md.append("")
            md.append(f"PDF: [{paths['pdf']}]({os.path.relpath(paths['pdf'], report.parent)}) · data: "
                      f"[{paths['csv']}]({os.path.relpath(paths['csv'], report.parent)})")
            md.append("")
        if csv and Path(csv).exists():
            cells = load_cells(csv)
            if cells.empty:
                md.append("_No rows in this run (see the rule's log)._")
            else:
                md.append(markdown_table(display_frame(cells, aid, pub)))
            if a["kind"] == "table":
                md.append(f"Data: [{paths['csv']}]({os.path.relpath(paths['csv'], report.parent)})")
        md.append("")
    report.write_text("\n".join(md))
    info = Path(outputs["run_info"])
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text("\\newcommand{\\runlabel}{" + tex_escape(stamp(run)) + "}\n"
                    "\\newcommand{\\runname}{" + tex_escape(run.get("name", "")) + "}\n")
    log.info("wrote %s and %s", report, info)


def latexmk_available() -> bool:
    return shutil.which("latexmk") is not None


def rule_paper_pdf(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `paper_pdf`: latexmk builds paper/main.pdf from paper/main.tex, the generated tables and
    the figures. main.tex is copied next to the generated paper/tables/ when the working directory is
    not the repository (e.g. `snakemake --directory /tmp/run`)."""
    if not latexmk_available():
        raise RuntimeError("latexmk is not installed (Debian: apt-get install latexmk "
                           "texlive-latex-recommended texlive-latex-extra); set paper.pdf: false to skip")
    src = Path(inputs["tex"]).resolve()
    pdf = Path(outputs["pdf"]).resolve()
    build = pdf.parent
    build.mkdir(parents=True, exist_ok=True)
    main = build / "main.tex"
    if src != main:
        shutil.copyfile(src, main)
    cmd = ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", main.name]
    log.info("running %s in %s", " ".join(cmd), build)
    res = subprocess.run(cmd, cwd=build, capture_output=True, text=True, timeout=int(params.get("timeout_s", 600)))
    print(res.stdout[-20000:])
    print(res.stderr[-5000:])
    if res.returncode != 0 or not pdf.exists():
        raise RuntimeError(f"latexmk failed with exit code {res.returncode}; see the log above and {build / 'main.log'}")
