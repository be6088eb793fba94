# paper/: report.md (every table in Markdown beside the paper's numbers, every figure linked) and
# verdicts.html (its verdict table and tally, in Snakemake's HTML report) always;
# main.pdf with latexmk when it is installed (config paper.pdf: auto) or required (paper.pdf: true).
# Logic: prm_lessons.artifacts.render; rule functions in prm_lessons.rules.paper. The LaTeX source
# paper/main.tex lives in the repository and \input{}s the generated paper/tables/*.tex and includes
# figures/*.pdf.
from prm_lessons.artifacts.render import latexmk_available  # noqa: E402

PAPER = config["paper"]
PAPER_PDF = PAPER["pdf"] is True or (PAPER["pdf"] == "auto" and latexmk_available())


rule paper_report:
    input:
        code("paper:paper_report"),
        *checkout_data("src/prm_lessons/published.yaml"),
        **run_in(
            {
                **{f"{aid}_csv": artifact_paths(aid)["csv"] for aid in ANALYSIS_ARTIFACTS},
                # each artifact's notes (its provenance record's `notes`), printed under it
                **{f"{aid}_provenance": artifact_paths(aid)["provenance"] for aid in ANALYSIS_ARTIFACTS},
                **({"trainsets_table": "results/tables/trainsets.csv"} if TRAINSET_VARIANTS else {}),
                # the dtype and host the policy's samples were made with (their table's metadata)
                **({"provenance_samples": f"results/samples/{BON_BENCHMARKS[0]}.parquet"} if BON_BENCHMARKS else {}),
                **(
                    {"judge_processbench_table": "results/tables/judge_processbench.csv"}
                    if plan.judge_processbench_cases(config)
                    else {}
                ),
                **(
                    {"label_audit_table": "results/tables/label_audit.csv"}
                    if config["audit"]["enabled"] or plan.pool_responses(config)
                    else {}
                ),
                **({"process_check_bon_table": "results/tables/process_check_bon.csv"} if PROCESS_CHECK else {}),
                # lesson 4a's gate: the checker's false alarms on constructed gold solutions
                **(
                    {"process_check_table": "results/tables/process_check.csv"}
                    if PROCESS_CHECK and (config.get("processbench") or {}).get("source") == "constructed"
                    else {}
                ),
                # paired PRM differences over training resamples of the pool (made when training.resamples > 0)
                **(
                    {"processbench_paired_table": "results/tables/processbench_paired.csv"}
                    if plan.resampled_prms(config)
                    else {}
                ),
            }
        ),
        figures=run_in([artifact_paths(aid)["png"] for aid in ANALYSIS_ARTIFACTS if ARTIFACTS[aid]["kind"] == "figure"]),
        # the generated findings that open the report (artifacts.findings)
        processbench_table=run_in("results/tables/processbench.csv"),
        bon_table=run_in("results/tables/bon.csv"),
    output:
        report=run_out("paper/report.md"),
        run_info=run_out("paper/tables/run_info.tex"),
        # the verdict table and tally that open report.md, as HTML for Snakemake's report (make report)
        verdicts=report(
            run_out("paper/verdicts.html"),
            caption="../report/verdicts.rst",
            category="Verdicts",
            labels={"artifact": "verdicts"},
        ),
    log:
        run_out("logs/paper/report.log"),
    benchmark:
        bench("paper_report", "logs/paper/report.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="paper:paper_report",
        run=RUN_ID,
        aggregation=config["analysis"]["aggregation"],
        threshold_sweep=[list(x) for x in THRESHOLD_SWEEP],
        # the findings read analysis.policy's rows at the main tables' N; unplanned artifacts → why
        policy=ANALYSIS["policy"],
        n=ANALYSIS["n"],
        skipped=ANALYSIS_SKIPPED,
        audit_k=config["audit"]["completions"],
        # lesson 6: the Best-of-N problems behind bon.csv's average (None when a benchmark has no fixed size)
        bon_problems=(
            sum(int(config["benchmarks"][b]["size"]) for b in BON_BENCHMARKS)
            if all((config["benchmarks"][b] or {}).get("size") for b in BON_BENCHMARKS)
            else None
        ),
        # the verdict table's lesson 4 trusts the judge's flaw rate only if the labelling judge, as a
        # ProcessBench critic, beats the structure-only baseline
        judge_critics=[
            f"critic-{c}" for c, spec in CRITIC_SPECS.items() if spec.get("model") == config["roles"]["judge"]
        ],
    script:
        RUN


rule paper_pdf:
    input:
        checkout_data("paper/main.tex")[1],
        tex=checkout_data("paper/main.tex")[0],
        run_info=run_in("paper/tables/run_info.tex"),
        tables=run_in([artifact_paths(aid)["tex"] for aid in ANALYSIS_ARTIFACTS if ARTIFACTS[aid]["kind"] == "table"]),
        figures=run_in([artifact_paths(aid)["pdf"] for aid in ANALYSIS_ARTIFACTS if ARTIFACTS[aid]["kind"] == "figure"]),
        code=code("paper:paper_pdf"),
    output:
        pdf=run_out("paper/main.pdf"),
    log:
        run_out("logs/paper/main_pdf.log"),
    benchmark:
        bench("paper_pdf", "logs/paper/main_pdf.log")
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="paper:paper_pdf",
        timeout_s=PAPER["latexmk_timeout_s"],
    script:
        RUN


TARGETS.append("paper/report.md")
if PAPER_PDF:
    TARGETS.append("paper/main.pdf")


# run.compare: the named runs' headline numbers side by side (prm_lessons.artifacts.compare); each run's tables must
# exist (the base run's results/tables/, an ablation's runs/<name>/results/tables/)
COMPARE_RUNS = config["run"]["compare"]

if COMPARE_RUNS:

    rule compare_runs:
        input:
            code("paper:compare_runs"),
            bon=[RUNS.of_run(n, "results/tables/bon.csv") for n in COMPARE_RUNS],
            processbench=[RUNS.of_run(n, "results/tables/processbench.csv") for n in COMPARE_RUNS],
        output:
            csv="runs/comparison.csv",
            md="runs/comparison.md",
        log:
            run_out("logs/compare_runs.log"),
        localrule: True
        conda:
            "../../envs/analysis.yaml"
        params:
            func="paper:compare_runs",
            runs=COMPARE_RUNS,
        script:
            RUN

    TARGETS.extend(["runs/comparison.csv", "runs/comparison.md"])
