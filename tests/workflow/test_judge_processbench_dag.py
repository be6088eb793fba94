"""Rules judge_processbench / judge_processbench_table in the embedded DAG (dry runs, both settings) and in
the paper's (its ProcessBench is the released one, no gold solutions: the reference-free setting with the
App. C prompt only), the judge rules reading the configured prompt file, and judge.reference giving rule
`judge` the problems tables it reads the gold solutions from."""
import dag


def test_embedded_dag_scores_both_judge_settings_beside_the_structure_baseline(embedded_plan):
    (job,) = embedded_plan.of("judge_processbench")  # both settings in one job: one engine start-up
    assert "results/processbench/cases.parquet" in job.input
    assert job.output == [f"results/labels/judge_processbench/{s}.parquet" for s in ("judge", "judge_reference")]
    (table,) = embedded_plan.of("judge_processbench_table")
    assert "results/metrics/processbench/baseline_structure_predictions.parquet" in table.input
    assert {"results/labels/judge_processbench/judge.parquet",
            "results/labels/judge_processbench/judge_reference.parquet"} <= set(table.input)
    assert set(table.output) == {"results/tables/judge_processbench.csv", "results/metrics/judge_processbench.json"}
    assert "results/tables/judge_processbench.csv" in embedded_plan.of("all")[0].input
    # the configured judge is reference-free: its labelling jobs read no problems table
    assert all(not any(p.startswith("results/problems/") for p in j.input) for j in embedded_plan.of("judge"))


def test_paper_dag_scores_the_labelling_judge_with_its_app_c_prompt(paper_plan):
    (job,) = paper_plan.of("judge_processbench")  # reference-free only: the official cases have no gold solution
    assert job.output == ["results/labels/judge_processbench/judge.parquet"]
    assert "resources/templates/judge_paper_app_c.txt" in job.input
    assert "results/processbench/cases.parquet" in job.input
    (table,) = paper_plan.of("judge_processbench_table")
    assert "results/labels/judge_processbench/judge.parquet" in table.input
    (fetch,) = paper_plan.of("judge_template")
    assert fetch.output == ["resources/templates/judge_paper_app_c.txt"]
    jobs = paper_plan.of("judge")  # the labelling judge itself reads the same prompt
    assert jobs and all("resources/templates/judge_paper_app_c.txt" in j.input for j in jobs)


def test_embedded_dag_judges_with_the_project_paraphrase(embedded_plan):
    assert not embedded_plan.of("judge_template")
    assert all(not any("templates/" in p for p in j.input) for j in embedded_plan.of("judge"))


def test_reference_guided_judge_reads_each_sets_problems_table(tmp_path):
    overlay = tmp_path / "reference.yaml"
    # the judge labels Figure 6's Best-of-N samples (make run's judge labels nothing: analysis.flaw_judge off)
    overlay.write_text("judge:\n  reference: true\n  processbench_cases: 0\nanalysis:\n  flaw_judge: true\n")
    p = dag.plan(("config/config.yaml", str(overlay)))
    jobs = p.of("judge")
    assert jobs and all(f"results/problems/{j.wildcards['dataset']}.parquet" in j.input for j in jobs)
    assert not p.of("judge_processbench")  # processbench_cases 0: off
