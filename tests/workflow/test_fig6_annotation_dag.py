"""Figure 6's human path in the DAG (dry runs): the paper config exports the annotation sheet from the four
Figure 6 sets; with analysis.fig6_annotation.labels the Figure 6 rule reads the sheet and the labels."""
import dag


def test_paper_dag_exports_the_annotation_sheet(paper_plan):
    (job,) = paper_plan.of("fig6_annotation_sheet")
    assert job.output == ["results/annotation/fig6_sheet.csv"]
    assert {f"results/samples/{d}.parquet" for d in ("gsm8k", "math", "olympiadbench", "omnimath")} <= set(job.input)
    (fig,) = paper_plan.of("fig6_flawed_process")
    assert "results/annotation/fig6_sheet.csv" not in fig.input  # no labels given: the judge's proxy


def test_labels_feed_figure_6(tmp_path):
    labels = tmp_path / "filled.csv"
    labels.write_text("id,process_flawed\n")
    overlay = tmp_path / "human.yaml"
    overlay.write_text(f"analysis:\n  fig6_annotation: {{per_benchmark: 5, labels: {labels}}}\n")
    p = dag.plan(("config/config.yaml", str(overlay)))
    (fig,) = p.of("fig6_flawed_process")
    assert {"results/annotation/fig6_sheet.csv", str(labels)} <= set(fig.input)
    assert p.of("fig6_annotation_sheet")
