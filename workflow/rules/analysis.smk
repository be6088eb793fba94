# The paper's tables and figures under their own names, each beside the published numbers, and the
# three Best-of-N bias analyses (Figure 6, Table 5 / Figure 7, Figure 8). Local, CPU-only, seconds each.
# Logic: prm_lessons.analysis (the analyses), prm_lessons.figures (tables/figures, one rule function
# per artifact: figures:rule_<id>), prm_lessons.paper (names, provenance, LaTeX/Markdown).
# Names and paths: prm_lessons.paper.ARTIFACTS; outputs documented in docs/architecture.md.
from prm_lessons.labels.trainsets import threshold_sweep_variants  # noqa: E402
from prm_lessons.paper import ARTIFACTS, artifact_paths, export_provenance_env, report_entry  # noqa: E402

# Provenance of the invocation (config hash, config files), read by the jobs through the environment:
# not rule params, because a params change reruns a job and an unrelated config edit must not redraw
# every figure.
export_provenance_env(config, workflow.configfiles)

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
            **{k: (report(v, **report_entry(_aid)[1]) if k == report_entry(_aid)[0] else v)
               for k, v in artifact_paths(_aid).items()},
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
