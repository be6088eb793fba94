# The paper's tables and figures under their own names, each beside the published numbers, and the
# three Best-of-N bias analyses (Figure 6, Table 5 / Figure 7, Figure 8). Local, CPU-only, seconds each.
# Logic: prm_lessons.analysis (the analyses), prm_lessons.artifacts (registry ← published ← cells ←
# plots / render); rule functions in prm_lessons.rules.analysis, one per artifact, named after its rule.
# Names, paths and each rule's params: prm_lessons.artifacts.registry; outputs in docs/architecture.md.
from prm_lessons.artifacts.registry import (  # noqa: E402
    ARTIFACT_PARAMS,
    export_provenance_env,
    report_entry,
)

# Provenance of the invocation (config hash, config files), read by the jobs through the environment:
# not rule params, because a params change reruns a job and an unrelated config edit must not redraw
# every figure.
export_provenance_env(config, workflow.configfiles)

# ANALYSIS, ANALYSIS_SKIPPED, ANALYSIS_ARTIFACTS, ARTIFACTS, artifact_paths: common.smk (paper.smk reads them)
ANALYSIS_PRMS = list(PRM_SPECS)  # every scored PRM (trained variants + released models), evaluation.smk
FLAW_DATASETS = ANALYSIS["policy_flaw_datasets"] or list(config.get("problems") or {})
FIG8_BENCHMARKS = ANALYSIS["benchmarks"] or BON_BENCHMARKS

_BON = {"bon": "results/tables/bon.csv", "baselines": "results/tables/bon_baselines.csv"}
_PB = {"processbench": "results/tables/processbench.csv"}
ANALYSIS_INPUTS = {
    "fig1": {**_BON, **_PB},
    "table1": _BON,
    "table2": _PB,
    "table3": _BON,
    "table4": _PB,
    "table5": {f"predictions__{p}": f"results/metrics/processbench/{p}_predictions.parquet" for p in ANALYSIS_PRMS},
    "table6": _BON,
    "table7": _PB,
    # greedy search (search.smk): nothing to read when search.prms is empty (an empty table)
    "table8": {"search": "results/tables/search.csv"} if SEARCH_PRMS else {},
    # LLMs as Best-of-N verifiers (verifiers.smk; an empty table when bon_judges.judges is empty)
    "table9": _BON,
    "table10": _BON,
    "table11": {**_BON, "judges": "results/tables/judge_bon.csv"},
    "table12": {**_BON, "judges": "results/tables/judge_bon.csv"},
    "table13": _BON,
    "table14": _BON,
    "table15": _BON,
    "table16": _BON,
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
    # analysis.policy's step scores (results/policies/{name}/scores/ for a secondary policy)
    "fig8": {
        f"scores__{p}__{b}": f"results/{plan.policy_dir(config, ANALYSIS['policy'])}scores/{p}/{b}.parquet"
        for p in ANALYSIS_PRMS
        for b in FIG8_BENCHMARKS
    },
    "fig9": _BON,
}
# One rule per artifact, named after it: rule `fig6_flawed_process` runs
# prm_lessons.rules.analysis:fig6_flawed_process. Generated in a loop because the rules differ only
# in data (registry names, ANALYSIS_INPUTS, ARTIFACT_PARAMS); grep the stem to find its function.
# Params: only the analysis.* keys the artifact reads (ARTIFACT_PARAMS), so editing another key leaves
# it alone (e.g. analysis.figure redraws the figures, not the tables); code inputs: only the modules its
# function runs (a table renders LaTeX, a figure plots), so a plotting edit redraws only the figures.
for _aid in ANALYSIS_ARTIFACTS:

    rule:
        name:
            ARTIFACTS[_aid]["stem"]
        input:
            code(f"analysis:{ARTIFACTS[_aid]['stem']}"),
            str(PKG / "published.yaml"),
            **ANALYSIS_INPUTS[_aid],
        output:
            **{
                k: (report(v, **report_entry(_aid)[1]) if k == report_entry(_aid)[0] else v)
                for k, v in artifact_paths(_aid).items()
            },
        log:
            f"logs/analysis/{ARTIFACTS[_aid]['stem']}.log",
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            **{k: ANALYSIS[k] for k in ARTIFACT_PARAMS[_aid]},
            **({"threshold_sweep": [list(x) for x in THRESHOLD_SWEEP]} if _aid == "fig5" else {}),
            func=f"analysis:{ARTIFACTS[_aid]['stem']}",
            run=config["run"],
        script:
            RUN


TARGETS.extend(p for _aid in ANALYSIS_ARTIFACTS for p in artifact_paths(_aid).values())
