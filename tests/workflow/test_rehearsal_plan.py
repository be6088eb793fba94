"""The rehearsal's plan (config/paper.yaml + config/rehearsal.yaml, `make rehearsal`) within a job budget.

CI runs the rehearsal on 2 cores near its time limit, and its cost is its job count: each vLLM engine start
takes both cores (~15-25 s, one at a time) and each per-PRM rule at paper scale multiplies into 16 PRMs x 2
policies x shards. These tests count the planned jobs (one dry run, in a working directory prepared as
prm_lessons.rehearsal.run prepares it) and fail above a budget, so that growth is a decision, not drift.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

import dag
from conftest import shared_data_dir
from prm_lessons import plan
from prm_lessons.config import load_config

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ("config/paper.yaml", "config/rehearsal.yaml")

# Rules whose job starts a vLLM engine (their threads come from plan.engine_threads); scoring rules start
# one too for a PRM scored with backend vllm (see engine_jobs)
ENGINE_RULES = {"sample", "mc", "judge", "bon_judge", "critic_processbench", "search_samples", "search_greedy",
                "judge_processbench", "audit_labels", "search_greedy_samples"}
SCORING_RULES = {"score_samples", "score_processbench", "score_prmbench", "search_orm_scores"}

# The budget: the counts of this plan when it was set, plus a small margin (2026-11-29, later: 363 jobs, + PRMBench
# on the six-record fixture: prmbench_file, prmbench, prmbench_table and per PRM (17) one score_prmbench (a
# transformers load of a random-weight stand-in and 7 cases, ~3-7 s) and one local prmbench_metrics (~2 s),
# 2 of them engine starts (the PRMs scored through vLLM, ~20 s each: 48 engine starts in all); 2026-11-29: 326
# jobs, + one
# tokenize_trainset per trained variant (6 CPU jobs, a tokenizer load each, ~2-3 s) and the MMLU STEM demos'
# fewshot_file; 2026-11-27, later: 319 jobs, the
# second policy scored by 4 PRMs, bon.policies.<name>.prms; 2026-11-27: 50 engine jobs, 357
# jobs: + the paper's judge prompt (judge_template), the labelling judge on ProcessBench, Table 8's greedy
# pass@1 on one benchmark, the released PRM800K model scored with transformers, Figure 6's annotation sheet,
# the data policy's model; the search on one benchmark instead of two. 2026-11-25: 48 engine jobs,
# 342 jobs, 18 of them the local grade_samples; before prms.shard_prms, the 72B policy's two benchmarks and the
# disabled duplicate critics/BoN judges, 69 and 393). To raise it, add what the new jobs cost the CI
# rehearsal (~20 s per engine job on 2 cores, ~3-7 s per other job, the two cores shared) to the commit
# message, check .ci/run's stage times still leave room under its 90 minutes, then raise these numbers.
ENGINE_BUDGET = 50
JOB_BUDGET = 367


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    from prm_lessons.rehearsal.run import prepare_work

    work = prepare_work(tmp_path_factory.mktemp("rehearsal") / "work", shared_data_dir().parent)
    cfg = load_config(*(ROOT / c for c in CONFIGS))
    return dag.plan(CONFIGS, directory=str(work)), cfg


def engine_jobs(p: dag.Plan, cfg: dict) -> Counter:
    """Engine starts per rule: the engine rules' jobs and the scoring jobs of PRMs scored through vLLM."""
    specs = plan.resolve_prm_specs(cfg)
    orm = (cfg.get("search") or {}).get("orm")
    out = Counter()
    for job in p.jobs:
        if job.rule in ENGINE_RULES:
            out[job.rule] += 1
        elif job.rule in SCORING_RULES:
            prm = orm if job.rule == "search_orm_scores" else job.wildcards["prm"]
            if specs[prm].get("backend") == "vllm":
                out[f"{job.rule} (vllm)"] += 1
    return out


def test_engine_rules_are_every_rule_that_starts_an_engine():
    """A new engine rule must join ENGINE_RULES (else the budget would not count it)."""
    found = set()
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for name, body in re.findall(r"(?ms)^\s*(?:rule|checkpoint) (\w+):\n(.*?)(?=^\s*(?:rule|checkpoint) \w+:|\Z)",
                                     smk.read_text()):
            if "engine_threads(" in body:
                found.add(name)
    assert found == ENGINE_RULES


def test_rehearsal_engine_starts_and_jobs_stay_within_the_budget(rehearsal):
    p, cfg = rehearsal
    engines = engine_jobs(p, cfg)
    assert set(ENGINE_RULES) & set(p.counts), "no engine rule planned: the parse is broken"
    assert sum(engines.values()) <= ENGINE_BUDGET, (
        f"the rehearsal plans {sum(engines.values())} vLLM engine starts (budget {ENGINE_BUDGET}): {dict(engines)}; "
        "see the comment above ENGINE_BUDGET before raising it")
    assert p.total <= JOB_BUDGET, (
        f"the rehearsal plans {p.total} jobs (budget {JOB_BUDGET}): {p.counts}; see the comment above JOB_BUDGET")


def test_rehearsal_splits_one_prm_per_scoring_path(rehearsal):
    """prms.shard_prms: the split and merge run for a vLLM-pooled ORM, a transformers PRM and a trained PRM;
    every other PRM is one scoring job per policy, through the same merge."""
    p, cfg = rehearsal
    specs = plan.resolve_prm_specs(cfg)
    split = cfg["prms"]["shard_prms"]
    n = cfg["prms"]["shards"]
    assert n > 1
    kinds = {("trained" if specs[s]["trained"] else specs[s].get("backend", "transformers")) for s in split}
    assert kinds == {"vllm", "transformers", "trained"}, kinds
    per_prm = Counter(j.wildcards["prm"] for j in p.of("score_samples"))
    scoring = {prm: sum(prm in plan.policy_prms(cfg, pol, specs) for pol in plan.bon_policies(cfg)) for prm in specs}
    for prm in specs:
        assert per_prm[prm] == scoring[prm] * (n if prm in split else 1), prm
    assert {j.wildcards["nshards"] for j in p.of("score_processbench") if j.wildcards["prm"] not in split} == {"1"}
    assert Counter(j.wildcards["prm"] for j in p.of("merge_processbench_scores")) == Counter(set(specs))


def test_second_policy_tables_are_still_planned(rehearsal):
    """The 72B policy samples two benchmarks (one English, one few-shot Chinese): Tables 9, 12, 14 and 16
    (its Best-of-N, LLM-judge and scoring-strategy columns) stay in the plan."""
    p, cfg = rehearsal
    for table in ("table9_bon_second_policy", "table12_llm_judge_bon_second_policy",
                  "table14_scoring_strategies_second_policy", "table16_scoring_strategies_chinese_second_policy"):
        assert p.counts.get(table) == 1, table


def test_the_second_policy_is_scored_by_its_prms_only(rehearsal):
    """bon.policies.<second>.prms: its samples are scored, merged and evaluated by those PRMs only (one per
    scoring path, so every path still runs on it); the primary's by every PRM."""
    p, cfg = rehearsal
    specs = plan.resolve_prm_specs(cfg)
    primary, second = list(plan.bon_policies(cfg))
    own = set(cfg["bon"]["policies"][second]["prms"])
    assert own and own < set(specs) and set(cfg["prms"]["shard_prms"]) <= own
    for rule in ("score_samples", "merge_sample_scores", "bon_metrics"):
        by_policy = {d: {j.wildcards["prm"] for j in p.of(rule) if j.wildcards.get("policy_dir", "") == d}
                     for d in ("", f"policies/{second}/")}
        assert by_policy[f"policies/{second}/"] == own, rule
        assert by_policy[""] == set(specs), rule


def test_training_problems_are_sampled_by_the_data_policy_and_completed_by_its_completer(rehearsal):
    """config/paper.yaml's data policy (data_policies) samples the training problem sets, the Best-of-N policy
    the benchmarks, and MC loads the data policy's completer; the training sets are sampled once either way."""
    p, cfg = rehearsal
    from prm_lessons.config import model_path

    data, bon_model = plan.data_policy(cfg), plan.bon_policies(cfg)[plan.primary_policy(cfg)]["model"]
    assert data["configured"] and data["model"] != bon_model
    data_dir, bon_dir = model_path(cfg, data["model"]), model_path(cfg, bon_model)
    train = set(cfg["problems"])
    primary_samples = [j for j in p.of("sample") if not j.wildcards.get("policy_dir")]
    assert {j.wildcards["dataset"] for j in primary_samples} >= train
    for j in primary_samples:
        want = data_dir if j.wildcards["dataset"] in train else bon_dir
        assert want in j.input, (j.wildcards, j.input)
    assert p.of("mc") and all(model_path(cfg, data["completer"]) in j.input for j in p.of("mc"))


def test_every_model_of_the_paper_config_runs_on_cpu_in_the_rehearsal():
    """A model config/paper.yaml adds must get gpus: 0 here, else its jobs stop on the CPU host
    (GPUNotFoundError) after the dry run passed."""
    cfg = load_config(*(ROOT / c for c in CONFIGS))
    assert {name: plan.gpus(cfg, name) for name in cfg["models"] if plan.gpus(cfg, name)} == {}
