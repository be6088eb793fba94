# The paper's tables and figures under their own names, each beside the published numbers, and the
# three Best-of-N bias analyses (Figure 6, Table 5 / Figure 7, Figure 8). Local, CPU-only, seconds each.
# Logic: prm_lessons.analysis (the analyses), prm_lessons.figures (tables/figures, one rule function
# per artifact: figures:rule_<id>), prm_lessons.paper (names, provenance, LaTeX/Markdown).
# Names and paths: prm_lessons.paper.ARTIFACTS; outputs documented in docs/architecture.md.
import os

from prm_lessons.labels.trainsets import threshold_sweep_variants  # noqa: E402
from prm_lessons.paper import ARTIFACTS, artifact_paths, config_md5  # noqa: E402

# Provenance of the invocation, read by the jobs (paper.provenance). Passed through the environment,
# not as params: a params change reruns a job, and an unrelated config edit must not redraw every figure.
os.environ["PRM_LESSONS_CONFIG_MD5"] = config_md5(config)
os.environ["PRM_LESSONS_CONFIGFILES"] = os.pathsep.join(str(c) for c in workflow.configfiles)

ANALYSIS = config["analysis"]
ANALYSIS_PRMS = list(PRM_SPECS)  # every scored PRM (trained variants + released models), evaluation.smk
FLAW_DATASETS = ANALYSIS["policy_flaw_datasets"] or list(config.get("problems") or {})
FIG8_BENCHMARKS = ANALYSIS["benchmarks"] or BON_BENCHMARKS

_BON = {"bon": "results/tables/bon.csv", "baselines": "results/tables/bon_baselines.csv"}
_PB = {"processbench": "results/tables/processbench.csv"}
ANALYSIS_INPUTS = {
    "table3": _BON,
    "table4": _PB,
    "table5": {f"predictions__{p}": f"results/metrics/processbench/{p}_predictions.parquet" for p in ANALYSIS_PRMS},
    "table6": _BON,
    "table7": _PB,
    "table13": _BON,
    "fig2": {**_BON, **_PB},
    "fig3": {**_BON, **_PB},
    "fig4": {**_BON, **_PB},
    "fig5": {**_BON, **_PB},
    "fig6": {
        **{f"samples__{d}": f"results/samples/{d}.parquet" for d in FLAW_DATASETS},
        **{f"judge__{d}": f"results/labels/judge/{d}.parquet" for d in FLAW_DATASETS},
        **({"cases": "results/processbench/cases.parquet"} if config.get("processbench") else {}),
    },
    "fig7": {**_BON, "table5": artifact_paths("table5")["csv"]},
    "fig8": {f"scores__{p}__{b}": f"results/scores/{p}/{b}.parquet" for p in ANALYSIS_PRMS for b in FIG8_BENCHMARKS},
    "fig9": _BON,
}
_SECTION = {"table3": "Data sources", "table4": "Data sources", "fig2": "Data sources",
            "fig3": "Hard vs soft labels", "fig4": "Hard vs soft labels", "fig5": "MC threshold",
            "fig6": "Best-of-N bias", "table5": "Best-of-N bias", "fig7": "Best-of-N bias",
            "fig8": "Best-of-N bias", "fig9": "Scoring strategy", "table13": "Scoring strategy",
            "table6": "Main results", "table7": "Main results"}


def _artifact_outputs(aid):
    """Output files of one artifact; figures (PNG) and tables (CSV) are registered in the report."""
    paths = artifact_paths(aid)
    stem = ARTIFACTS[aid]["stem"]
    caption = f"../report/{stem}.rst"
    labels = {"artifact": ARTIFACTS[aid]["source"]}
    out = {"provenance": paths["provenance"]}
    if ARTIFACTS[aid]["kind"] == "figure":
        out["csv"] = paths["csv"]
        out["pdf"] = paths["pdf"]
        out["png"] = report(paths["png"], caption=caption, category="Figures", subcategory=_SECTION[aid],
                            labels=labels)
    else:
        out["csv"] = report(paths["csv"], caption=caption, category="Tables", subcategory=_SECTION[aid],
                            labels=labels)
        out["tex"] = paths["tex"]
    return out


# One rule per artifact, named after it (e.g. `fig6_flawed_process` → figures:rule_fig6).
for _aid in ARTIFACTS:

    rule:
        name:
            ARTIFACTS[_aid]["stem"]
        input:
            pkg("analysis", "figures", "paper", "metrics"),
            str(PKG / "published.yaml"),
            **ANALYSIS_INPUTS[_aid],
        output:
            **_artifact_outputs(_aid),
        params:
            func=f"figures:rule_{_aid}",
            run=config["run"],
            aggregation=ANALYSIS["aggregation"],
            aggregations=ANALYSIS["aggregations"],
            n=ANALYSIS["n"],
            benchmarks=ANALYSIS["benchmarks"],
            paper_rows=ANALYSIS["paper_rows"],
            paper_columns=ANALYSIS["paper_columns"],
            figure=ANALYSIS["figure"],
            threshold_sweep=[list(x) for x in threshold_sweep_variants(config)] if _aid == "fig5" else [],
        log:
            f"logs/analysis/{ARTIFACTS[_aid]['stem']}.log",
        conda:
            "../../envs/analysis.yaml"
        localrule: True
        script:
            RUN


TARGETS.extend(p for _aid in ARTIFACTS for p in artifact_paths(_aid).values())
