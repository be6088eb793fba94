"""The paper's tables and figures under their own names, and their provenance records.

Naming follows the paper: `results/tables/table{N}_<slug>.csv` + `paper/tables/table{N}_<slug>.tex`
for tables, `figures/fig{N}_<slug>.{pdf,png}` + `results/tables/fig{N}_<slug>.csv` (the plotted data)
for figures; each has a provenance record `<same stem>.json` beside its CSV (run name and label,
config hash and files, input checksums, package version, git commit, time).

This module imports only the standard library: the workflow reads ARTIFACTS while parsing.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

from prm_lessons import __version__

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
    "table8": {"kind": "table", "stem": "table8_greedy_search", "source": "Table 8",
               "title": "PRM-guided greedy search: accuracy (%) beside pass@1, pass@N, maj@N and orm@N of the same policy"},
    "table11": {"kind": "table", "stem": "table11_llm_judge_bon", "source": "Table 11",
                "title": "LLMs as Best-of-N verifiers: accuracy (%) of pointwise and pairwise judges beside pass@N, maj@N and PRMs"},
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
             "title": "Share of Best-of-N responses (all of them; the selected ones beside) whose minimum step score is on the final step"},
    "fig9": {"kind": "figure", "stem": "fig9_scoring_strategies", "source": "Figure 9",
             "title": "Best-of-N mean accuracy by scoring strategy (min / product / last) per training-data source"},
}
for _aid, _section in {"table3": "Data sources", "table4": "Data sources", "fig2": "Data sources",
                       "fig3": "Hard vs soft labels", "fig4": "Hard vs soft labels", "fig5": "MC threshold",
                       "fig6": "Best-of-N bias", "table5": "Best-of-N bias", "fig7": "Best-of-N bias",
                       "fig8": "Best-of-N bias", "fig9": "Scoring strategy", "table13": "Scoring strategy",
                       "table6": "Main results", "table7": "Main results", "table8": "Greedy search"}.items():
    ARTIFACTS[_aid]["section"] = _section  # report subcategory
ARTIFACTS["table11"]["section"] = "LLM judges"

# The config `analysis.*` keys each artifact rule reads (besides `run`, which every one gets; fig5 also
# gets `threshold_sweep`). A rule receives only these as params, so changing one reruns only the
# artifacts that use it (e.g. `analysis.figure` redraws the figures and leaves the tables alone).
_BON_CELLS = ("n", "benchmarks", "paper_rows", "paper_columns")  # cells.bon_cells
_PB_CELLS = ("paper_rows", "paper_columns")  # cells.pb_cells
_SUMMARY = ("aggregation", *_BON_CELLS)  # cells.build_summary_figure: BoN and ProcessBench averages
ARTIFACT_PARAMS: dict[str, tuple[str, ...]] = {
    "table3": ("aggregation", *_BON_CELLS),
    "table4": _PB_CELLS,
    "table5": ("paper_rows", "paper_columns"),
    "table6": ("aggregation", *_BON_CELLS),
    "table7": _PB_CELLS,
    "table8": ("paper_rows", "paper_columns"),  # cells.build_table8: the searched benchmarks, search.n
    "table11": ("aggregation", *_BON_CELLS),
    "table13": ("aggregations", *_BON_CELLS),
    "fig2": (*_SUMMARY, "figure"),
    "fig3": (*_SUMMARY, "figure"),
    "fig4": (*_SUMMARY, "figure"),
    "fig5": (*_SUMMARY, "figure"),
    "fig6": ("paper_columns", "figure"),
    "fig7": (*_SUMMARY, "figure"),
    "fig8": ("aggregation", "n", "paper_rows", "paper_columns", "figure"),
    "fig9": (*_BON_CELLS, "figure"),
}


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


def report_entry(aid: str) -> tuple[str, dict]:
    """(output key registered in the Snakemake report, report() keyword arguments) of one artifact:
    the PNG of a figure, the CSV of a table; caption workflow/report/<stem>.rst."""
    a = ARTIFACTS[aid]
    return ("png" if a["kind"] == "figure" else "csv",
            {"caption": f"../report/{a['stem']}.rst", "category": "Figures" if a["kind"] == "figure" else "Tables",
             "subcategory": a["section"], "labels": {"artifact": a["source"]}})


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


def _sha256(path: Path, limit: int = 1 << 30) -> str | None:
    if not path.is_file() or path.stat().st_size > limit:
        return None
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parents[3]  # src/prm_lessons/artifacts/registry.py → the checkout
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


def stamp(run: Mapping) -> str:
    """One line naming what produced the numbers: run label (or name) and config hash."""
    label = run.get("label") or run.get("name") or "unnamed run"
    md5 = os.environ.get("PRM_LESSONS_CONFIG_MD5")
    return f"{label}" + (f" (config {md5[:8]})" if md5 else "")
