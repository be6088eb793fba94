"""The paper's tables and figures under their own names, and their provenance records.

Naming follows the paper: `results/tables/table{N}_<slug>.csv` + `paper/tables/table{N}_<slug>.tex`
for tables, `figures/fig{N}_<slug>.{pdf,png}` + `results/tables/fig{N}_<slug>.csv` (the plotted data)
for figures; each has a provenance record `<same stem>.json` beside its CSV (run name and label,
config hash and files, input checksums, package version, git commit, time).

This module imports only the standard library: the workflow reads ARTIFACTS while parsing.
"""
from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

from prm_lessons import __version__

# The artifact modules (artifacts/defs/<stem>.py, one per table or figure), in the report's order.
MODULES = (
    "fig1_overview",
    "table1_preliminary_bon",
    "table2_preliminary_processbench",
    "table3_data_sources_bon",
    "table4_data_sources_processbench",
    "table5_prm_tolerance",
    "table6_bon_main",
    "table7_processbench_main",
    "table8_greedy_search",
    "table9_bon_second_policy",
    "table10_bon_large_n",
    "table11_llm_judge_bon",
    "table12_llm_judge_bon_second_policy",
    "table13_scoring_strategies",
    "table14_scoring_strategies_second_policy",
    "table15_scoring_strategies_chinese",
    "table16_scoring_strategies_chinese_second_policy",
    "fig2_consensus_filtering",
    "fig3_hard_soft_bon",
    "fig4_hard_soft_processbench",
    "fig5_mc_threshold",
    "fig6_flawed_process",
    "fig7_tolerance_vs_bon",
    "fig8_min_at_last_step",
    "fig9_scoring_strategies",
)
DEFS = Path(__file__).resolve().parent / "defs"
_FIELDS = ("ID", "KIND", "SOURCE", "TITLE", "SECTION", "INPUTS", "PARAMS")


def _definition(stem: str) -> dict:
    """The literal constants of an artifact module, read from its syntax tree: the workflow reads them
    while parsing, without importing the module (pandas, matplotlib) or running any of it."""
    path = DEFS / f"{stem}.py"
    values = {}
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in _FIELDS:
            values[node.targets[0].id] = ast.literal_eval(node.value)
    missing = [f for f in _FIELDS if f not in values]
    if missing:
        raise ValueError(f"artifact module {path} lacks {missing} (literal constants)")
    if values["KIND"] not in ("table", "figure"):
        raise ValueError(f"artifact module {path}: KIND must be 'table' or 'figure', not {values['KIND']!r}")
    return values


_DEFS = {d["ID"]: (stem, d) for stem, d in ((s, _definition(s)) for s in MODULES)}
# id -> kind, stem (the file name), paper source, title (a short caption), section (report subcategory)
ARTIFACTS: dict[str, dict] = {
    aid: {"kind": d["KIND"], "stem": stem, "source": d["SOURCE"], "title": d["TITLE"], "section": d["SECTION"]}
    for aid, (stem, d) in _DEFS.items()
}
# The config `analysis.*` keys each artifact rule reads (besides `run`, which every one gets; fig5's
# `threshold_sweep` is the trainsets' sweep). A rule receives only these as params, so changing one reruns
# only the artifacts that use it (e.g. `analysis.figure` redraws the figures and leaves the tables alone).
ARTIFACT_PARAMS: dict[str, tuple[str, ...]] = {aid: tuple(d["PARAMS"]) for aid, (_, d) in _DEFS.items()}
# The input groups each artifact rule reads (workflow/rules/analysis.smk maps a group to its files)
ARTIFACT_INPUTS: dict[str, tuple[str, ...]] = {aid: tuple(d["INPUTS"]) for aid, (_, d) in _DEFS.items()}


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
