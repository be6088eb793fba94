"""`make run` (config/config.yaml) against `make run-all` (+ config/all.yaml): what moves out of the
15-minute run is planned only by run-all, and the rest of the run is the same jobs."""
from __future__ import annotations

RUN_ALL_ONLY = ("bon_judge", "bon_judge_metrics", "bon_judge_table", "search_greedy", "search_table",
                "critic_processbench", "critic_reparse", "table8_greedy_search", "table9_bon_second_policy",
                "table11_llm_judge_bon", "table12_llm_judge_bon_second_policy",
                "table14_scoring_strategies_second_policy")


def test_make_run_leaves_the_run_all_rules_out_and_keeps_the_rest(embedded_plan, all_plan):
    run, every = embedded_plan.counts, all_plan.counts
    assert not [r for r in RUN_ALL_ONLY if r in run], run
    assert all(every.get(r, 0) >= 1 for r in RUN_ALL_ONLY), every
    # every rule of make run is in run-all with at least as many jobs (run-all adds, never drops)
    assert not {r: n for r, n in run.items() if every.get(r, 0) < n}
    assert "results/policies/" not in embedded_plan.out  # no second policy's files
    assert "results/policies/smollm2_t1/samples/arith.parquet" in all_plan.out
    for rule in ("audit_labels", "fig6_flawed_process", "paper_report"):
        assert run[rule] == every[rule]
    # Figure 6's judge row (analysis.flaw_judge) is run-all's: it judges the two Best-of-N sets
    assert "judge" not in run and every["judge"] == 2
    # run-all trains the judge's PRMs on the pool too (judge, consensus_hard, consensus_soft)
    for rule in ("trainset", "train_prm", "score_processbench"):
        assert every[rule] == run[rule] + 3, rule
