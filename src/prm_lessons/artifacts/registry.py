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
    "fig1": {"kind": "figure", "stem": "fig1_overview", "source": "Figure 1",
             "title": "Overview: Best-of-N average accuracy and ProcessBench average F1 per PRM, with pass@N, maj@N and o1-mini (published) reference lines"},
    "table1": {"kind": "table", "stem": "table1_preliminary_bon", "source": "Table 1",
               "title": "Preliminary trials: Best-of-N accuracy (%) of PRMs trained on MC hard and soft labels and on PRM800K"},
    "table2": {"kind": "table", "stem": "table2_preliminary_processbench", "source": "Table 2",
               "title": "Preliminary trials: ProcessBench error/correct accuracy and F1 (%) of PRMs trained on MC hard and soft labels and on PRM800K"},
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
    "table9": {"kind": "table", "stem": "table9_bon_second_policy", "source": "Table 9",
               "title": "Best-of-N accuracy (%) with the second policy, product scoring, with pass@N and maj@N"},
    "table10": {"kind": "table", "stem": "table10_bon_large_n", "source": "Table 10",
                "title": "Best-of-N accuracy (%) at the larger N (the paper: Best-of-64), product scoring, with pass@N and maj@N"},
    "table11": {"kind": "table", "stem": "table11_llm_judge_bon", "source": "Table 11",
                "title": "LLMs as Best-of-N verifiers: accuracy (%) of pointwise and pairwise judges beside pass@N, maj@N and PRMs"},
    "table12": {"kind": "table", "stem": "table12_llm_judge_bon_second_policy", "source": "Table 12",
                "title": "LLMs as Best-of-N verifiers with the second policy: accuracy (%) of pointwise and pairwise judges beside pass@N, maj@N and PRMs"},
    "table13": {"kind": "table", "stem": "table13_scoring_strategies", "source": "Table 13",
                "title": "Best-of-N accuracy (%) by scoring strategy (last / product / min)"},
    "table14": {"kind": "table", "stem": "table14_scoring_strategies_second_policy", "source": "Table 14",
                "title": "Best-of-N accuracy (%) by scoring strategy (last / product / min) with the second policy"},
    "table15": {"kind": "table", "stem": "table15_scoring_strategies_chinese", "source": "Table 15",
                "title": "Chinese benchmarks: Best-of-N accuracy (%) by scoring strategy (last / product / min)"},
    "table16": {"kind": "table", "stem": "table16_scoring_strategies_chinese_second_policy", "source": "Table 16",
                "title": "Chinese benchmarks with the second policy: Best-of-N accuracy (%) by scoring strategy (last / product / min)"},
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
for _aid, _section in {"fig1": "Overview", "table1": "Preliminary trials", "table2": "Preliminary trials",
                       "table9": "Second policy", "table12": "Second policy", "table14": "Second policy",
                       "table10": "Larger N", "table15": "Chinese benchmarks", "table16": "Chinese benchmarks"}.items():
    ARTIFACTS[_aid]["section"] = _section

# The config `analysis.*` keys each artifact rule reads (besides `run`, which every one gets; fig5 also
# gets `threshold_sweep`). A rule receives only these as params, so changing one reruns only the
# artifacts that use it (e.g. `analysis.figure` redraws the figures and leaves the tables alone).
# cells.bon_cells on the rows of analysis.policy (`policy`), the table's notes naming it (`policy_labels`)
_BON_CELLS = ("n", "benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels")
# the second policy's tables (9, 12, 14, 16) read its rows instead
_SECOND = ("n", "benchmarks", "paper_rows", "paper_columns", "second_policy", "policy_labels")
_PB_CELLS = ("paper_rows", "paper_columns")  # cells.pb_cells
_SUMMARY = ("aggregation", *_BON_CELLS)  # cells.build_summary_figure: BoN and ProcessBench averages
ARTIFACT_PARAMS: dict[str, tuple[str, ...]] = {
    "fig1": (*_SUMMARY, "figure"),
    "table1": ("aggregation", *_BON_CELLS),
    "table2": _PB_CELLS,
    "table3": ("aggregation", *_BON_CELLS),
    "table4": _PB_CELLS,
    "table5": ("paper_rows", "paper_columns"),
    "table6": ("aggregation", *_BON_CELLS),
    "table7": _PB_CELLS,
    "table8": ("paper_rows", "paper_columns"),  # cells.build_table8: the searched benchmarks, search.n
    "table9": ("aggregation", *_SECOND),
    "table10": ("aggregation", "table10", "paper_rows", "paper_columns", "policy", "policy_labels"),
    "table11": ("aggregation", *_BON_CELLS),
    "table12": ("aggregation", *_SECOND),
    "table13": ("aggregations", *_BON_CELLS),
    "table14": ("aggregations", *_SECOND),
    "table15": ("aggregations", "n", "chinese_benchmarks", "paper_rows", "paper_columns", "policy", "policy_labels"),
    "table16": ("aggregations", "n", "chinese_benchmarks", "paper_rows", "paper_columns", "second_policy",
                "policy_labels"),
    "fig2": (*_SUMMARY, "figure"),
    "fig3": (*_SUMMARY, "figure"),
    "fig4": (*_SUMMARY, "figure"),
    "fig5": (*_SUMMARY, "figure"),
    "fig6": ("n", "paper_columns", "figure"),  # n: a benchmark's first N samples (plan.judge_sample_cap)
    "fig7": (*_SUMMARY, "figure"),
    "fig8": ("aggregation", "n", "paper_rows", "paper_columns", "figure"),
    "fig9": (*_BON_CELLS, "figure"),
}
# the paper's MC data set the run reproduces (analysis.mc_experiment): rows of the other are not compared
for _aid in ("table1", "table2", "table3", "table4", "fig2", "fig3", "fig4", "fig5", "fig7", "fig9"):
    ARTIFACT_PARAMS[_aid] = (*ARTIFACT_PARAMS[_aid], "mc_experiment")


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
