"""PRMBench in the plans: `make run-all` (a stand-in, offline) and config/paper.yaml (the pinned file) score
every PRM of the run on it; `make run` (the embedded default) leaves it out."""
from __future__ import annotations

PRMBENCH_RULES = ("prmbench", "score_prmbench", "prmbench_metrics", "prmbench_table")


def _prms(p) -> set[str]:
    return {j.wildcards["prm"] for j in p.of("processbench_metrics") if not j.wildcards["prm"].startswith("critic-")}


def test_make_run_plans_no_prmbench(embedded_plan):
    assert not [r for r in PRMBENCH_RULES + ("prmbench_file",) if r in embedded_plan.counts]


def test_make_run_all_scores_every_prm_on_the_standin(all_plan):
    prms = _prms(all_plan)
    assert prms
    assert {j.wildcards["prm"] for j in all_plan.of("score_prmbench")} == prms
    outs = {o for j in all_plan.of("prmbench_metrics") for o in j.output}
    assert outs == {f"results/metrics/prmbench/{p}.json" for p in prms}
    assert all_plan.counts["prmbench"] == all_plan.counts["prmbench_table"] == 1
    assert "prmbench_file" not in all_plan.counts  # the stand-in is built, nothing is fetched


def test_the_paper_plans_prmbench_from_the_pinned_file(paper_plan):
    prms = _prms(paper_plan)
    assert {j.wildcards["prm"] for j in paper_plan.of("prmbench_metrics")} == prms
    assert paper_plan.counts["prmbench_file"] == 1
    assert paper_plan.of("prmbench_file")[0].output == ["resources/data/prmbench/prmbench.jsonl"]
    # each PRM's step decisions use the threshold of its ProcessBench evaluation
    for j in paper_plan.of("prmbench_metrics"):
        assert f"results/metrics/processbench/{j.wildcards['prm']}.json" in j.input
