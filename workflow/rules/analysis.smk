# The paper's tables and figures under their own names, each beside the published numbers, and the
# three Best-of-N bias analyses (Figure 6, Table 5 / Figure 7, Figure 8). Local, CPU-only, seconds each.
# Logic: prm_lessons.evaluation.bias_analysis (the analyses), prm_lessons.artifacts (registry ← published ← cells ←
# plots / render); one module per artifact, prm_lessons.artifacts.defs.<stem>, holding its input groups,
# params, cells builder, plot or notes, and the rule function `run`. Names, paths, each rule's inputs and
# params: prm_lessons.artifacts.registry (read from those modules); outputs in docs/architecture.md.
# ARTIFACTS and artifact_paths come from common.smk (paper.smk reads them too).
from prm_lessons.artifacts.registry import (  # noqa: E402
    ARTIFACT_INPUTS,
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
# Figure 6: the named datasets, else the Best-of-N benchmarks (the paper's population, and lesson 4's)
FLAW_DATASETS = plan.flaw_datasets(config)
FIG8_BENCHMARKS = ANALYSIS["benchmarks"] or BON_BENCHMARKS

# The input groups an artifact module names in its INPUTS → the files of each (empty: nothing to read,
# the artifact is written without those rows)
ARTIFACT_INPUT_GROUPS = {
    "bon": {"bon": "results/tables/bon.csv", "baselines": "results/tables/bon_baselines.csv"},
    "processbench": {"processbench": "results/tables/processbench.csv"},
    "predictions": {
        f"predictions__{p}": f"results/metrics/processbench/{p}_predictions.parquet" for p in ANALYSIS_PRMS
    },
    # greedy search (search.smk): nothing to read when search.prms is empty (an empty table)
    "search": {"search": "results/tables/search.csv"} if SEARCH_PRMS else {},
    # LLMs as Best-of-N verifiers (verifiers.smk; an empty table when bon_judges.judges is empty)
    "judges": {"judges": "results/tables/judge_bon.csv"},
    "flaws": {
        **{f"samples__{d}": f"results/samples/{d}.parquet" for d in FLAW_DATASETS},
        # analysis.flaw_judge: the judge labels these samples (its own jobs for a benchmark)
        **(
            {f"judge__{d}": f"results/labels/judge/{d}.parquet" for d in FLAW_DATASETS}
            if ANALYSIS["flaw_judge"]
            else {}
        ),
        # the arithmetic process checker's verdicts on the same responses (process_check.smk)
        **({f"checker__{d}": f"results/labels/checker/{d}.parquet" for d in FLAW_DATASETS} if PROCESS_CHECK else {}),
        **({"cases": "results/processbench/cases.parquet"} if config.get("processbench") else {}),
        # the annotation sheet filled in by annotators (analysis.fig6_annotation.labels): Figure 6's human rate
        **(
            {"annotation_sheet": plan.FIG6_SHEET, "human_labels": ANALYSIS["fig6_annotation"]["labels"]}
            if ANALYSIS["fig6_annotation"]["labels"]
            else {}
        ),
    },
    "table5": {"table5": artifact_paths("table5")["csv"]},
    # Table 6's seed spread (analysis.seeds): each seed replica's Best-of-N tables (runs/seed<s>/, made before)
    "seed_bon": {
        f"{k}__{r['name']}": RUNS.of_run(r["name"], f"results/tables/{f}.csv")
        for r in ANALYSIS["seed_runs"]["replicas"]
        for k, f in (("seed_bon", "bon"), ("seed_baselines", "bon_baselines"))
    },
    # the training sets' sizes: the "# samples" of the data-source artifacts (none without training sets)
    "trainsets": {"trainsets": "results/tables/trainsets.csv"} if TRAINSET_VARIANTS else {},
    # analysis.policy's step scores (results/policies/{name}/scores/ for a secondary policy)
    "scores": {
        f"scores__{p}__{b}": f"results/{plan.policy_dir(config, ANALYSIS['policy'])}scores/{p}/{b}.parquet"
        for p in ANALYSIS_PRMS
        for b in FIG8_BENCHMARKS
    },
}
for _aid, _groups in ARTIFACT_INPUTS.items():
    if set(_groups) - set(ARTIFACT_INPUT_GROUPS):
        raise ValueError(
            f"artifact {_aid}: INPUTS names unknown input group(s) {sorted(set(_groups) - set(ARTIFACT_INPUT_GROUPS))}"
            f" (workflow/rules/analysis.smk ARTIFACT_INPUT_GROUPS: {sorted(ARTIFACT_INPUT_GROUPS)})"
        )
ANALYSIS_INPUTS = {
    aid: {k: v for g in groups for k, v in ARTIFACT_INPUT_GROUPS[g].items()} for aid, groups in ARTIFACT_INPUTS.items()
}
# the values of the params an artifact module names in its PARAMS: analysis.* and the MC threshold sweep
ARTIFACT_PARAM_VALUES = {**ANALYSIS, "threshold_sweep": [list(x) for x in THRESHOLD_SWEEP]}
# One rule per artifact, named after it: rule `fig6_flawed_process` runs `run` of
# prm_lessons/artifacts/defs/fig6_flawed_process.py (func "analysis:fig6_flawed_process", resolved by
# prm_lessons.rules.analysis). Generated in a loop because the rules differ only in data (the modules'
# INPUTS and PARAMS); grep the stem to find its module.
# Params: only the analysis.* keys the artifact reads (ARTIFACT_PARAMS), so editing another key leaves
# it alone (e.g. analysis.figure redraws the figures, not the tables); code inputs: only the modules its
# function runs (a table renders LaTeX, a figure plots), so a plotting edit redraws only the figures.
for _aid in ANALYSIS_ARTIFACTS:

    rule:
        name:
            ARTIFACTS[_aid]["stem"]
        input:
            code(f"analysis:{ARTIFACTS[_aid]['stem']}"),
            *checkout_data("src/prm_lessons/published.yaml"),
            **run_in(ANALYSIS_INPUTS[_aid]),
        output:
            **{
                k: (report(v, **report_entry(_aid)[1]) if k == report_entry(_aid)[0] else v)
                for k, v in run_out(artifact_paths(_aid)).items()
            },
        log:
            run_out(f"logs/analysis/{ARTIFACTS[_aid]['stem']}.log"),
        benchmark:
            bench(ARTIFACTS[_aid]["stem"], f"logs/analysis/{ARTIFACTS[_aid]['stem']}.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            **{k: ARTIFACT_PARAM_VALUES[k] for k in ARTIFACT_PARAMS[_aid]},
            func=f"analysis:{ARTIFACTS[_aid]['stem']}",
            run=RUN_ID,
        script:
            RUN


TARGETS.extend(p for _aid in ANALYSIS_ARTIFACTS for p in artifact_paths(_aid).values())


# Figure 6's human path: a sheet of seeded random correct-answer responses per Figure 6 dataset
# (analysis.fig6_annotation.per_benchmark; prm_lessons.labels.annotation) for annotators; its filled-in
# copy (analysis.fig6_annotation.labels) is read back by the Figure 6 rule
if ANALYSIS["fig6_annotation"]["per_benchmark"]:

    rule fig6_annotation_sheet:
        input:
            code("analysis:fig6_annotation_sheet"),
            **run_in({f"samples__{d}": f"results/samples/{d}.parquet" for d in FLAW_DATASETS}),
        output:
            sheet=run_out(plan.FIG6_SHEET),
        log:
            run_out("logs/analysis/fig6_annotation_sheet.log"),
        benchmark:
            bench("fig6_annotation_sheet", "logs/analysis/fig6_annotation_sheet.log")
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="analysis:fig6_annotation_sheet",
            annotation=ANALYSIS["fig6_annotation"],
            n=ANALYSIS["n"],
        script:
            RUN

    TARGETS.append(plan.FIG6_SHEET)
