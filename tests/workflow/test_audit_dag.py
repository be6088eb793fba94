"""The label audit in the shipped configurations' DAGs: in the embedded run (one slice, one labelling job on
the completer, one CPU analysis), absent from the paper run (audit.enabled false there)."""


def test_audit_rules_are_in_the_embedded_dag(embedded_plan):
    for rule in ("audit_slice", "audit_labels", "label_audit"):
        assert embedded_plan.counts.get(rule) == 1, rule
    (job,) = embedded_plan.of("label_audit")
    assert "results/tables/label_audit.csv" in job.output
    assert "results/labels/audit/labels/shard0of1.parquet" in job.input
    (labels,) = embedded_plan.of("audit_labels")
    assert "results/labels/audit/slice.parquet" in labels.input
    # the slice reads the evaluation sets it must stay disjoint from
    (sl,) = embedded_plan.of("audit_slice")
    assert "results/processbench/cases.parquet" in sl.input


def test_paper_dag_has_no_audit(paper_plan):
    assert not {"audit_slice", "audit_labels", "label_audit"} & set(paper_plan.counts)
