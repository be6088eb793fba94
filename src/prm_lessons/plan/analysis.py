"""Plan stage: analysis (the resolved analysis.* values, the artifacts this config cannot have)."""
from __future__ import annotations

from .data_policies import data_setting
from .judges import bon_judge_policies, bon_judge_runs
from .policies import bon_n, bon_policies


def _table10(config: dict) -> tuple[int | None, list[str]]:
    """(N, benchmarks) of Table 10: analysis.table10, else the largest N of bon.more_n and its benchmarks;
    (None, []) when this config evaluates no larger N."""
    t10 = config.get("analysis", {}).get("table10", {})
    more = list(config.get("bon", {}).get("more_n", []))
    n = t10.get("n") or (max(int(e["n"]) for e in more) if more else None)
    if n is None:
        return None, []
    if t10.get("benchmarks"):
        return int(n), list(t10["benchmarks"])
    entry = next((e for e in more if int(e["n"]) == int(n)), None)
    return int(n), list(entry["benchmarks"]) if entry else list(config.get("benchmarks", {}))


# Figure 6's annotation sheet (rule fig6_annotation_sheet; prm_lessons.labels.annotation)
FIG6_SHEET = "results/annotation/fig6_sheet.csv"
FIG6_ANNOTATION_DEFAULTS = {"per_benchmark": 0, "seed": 0, "labels": None}


def flaw_datasets(config: dict) -> list[str]:
    """Figure 6's datasets: analysis.policy_flaw_datasets, else the Best-of-N benchmarks (analysis.benchmarks,
    else every benchmark): the paper's population, and lesson 4's."""
    ana = config["analysis"]
    return list(ana["policy_flaw_datasets"]) or list(ana["benchmarks"] or config.get("benchmarks") or {})


def seed_runs(config: dict) -> list[dict]:
    """The seed replicas Table 6's seed spread reads (analysis.seeds): {seed, name} of every listed seed
    other than this run's own sampling.seed, named seed<value> (run.seed). None for a named run (an ablation
    or a replica): the replicas are the base run's, not draws of its setting."""
    if config.get("run", {}).get("ablation"):
        return []
    own = int(config["sampling"]["seed"])
    return [{"seed": int(s), "name": f"seed{int(s)}"}
            for s in config.get("analysis", {}).get("seeds", []) if int(s) != own]


def analysis_settings(config: dict) -> dict:
    """The analysis.* values the artifact rules get (prm_lessons.artifacts.registry.ARTIFACT_PARAMS), with
    the defaults resolved: `n` (analysis.n, else bon.n: the N of the main tables when bon.csv holds several),
    `policy` and `second_policy` (policy names; None: no second policy), `policy_labels` (name → label of
    every policy), `table10` ({n, benchmarks}; n None: not planned), `chinese_benchmarks`, `grader`
    (grading.grader: the Best-of-N tables name it), `fig6_annotation` ({per_benchmark, seed, labels}),
    `search_pass1` (search.pass1: Table 8 says how its pass@1 was measured), `data_setting` (who produced the
    labelled data: plan.data_setting), `seed_runs` (Table 6's seed replicas: seed_runs, with this run's own
    seed first)."""
    a = dict(config.get("analysis", {}))
    pols = bon_policies(config)
    policy = a.get("policy") or next(iter(pols))
    second = a.get("second_policy") or next((p for p in pols if p != policy), None)
    n10, b10 = _table10(config)
    return {**a, "n": a.get("n") or bon_n(config), "policy": policy, "second_policy": second,
            "policy_labels": {p: str((s or {}).get("label") or p) for p, s in pols.items()},
            "table10": {"n": n10, "benchmarks": b10},
            "chinese_benchmarks": list(a.get("chinese_benchmarks") or []),
            "grader": str(config.get("grading", {}).get("grader") or "math_verify"),
            "fig6_annotation": {**FIG6_ANNOTATION_DEFAULTS, **a.get("fig6_annotation", {})},
            "search_pass1": str(config.get("search", {}).get("pass1") or "mean"),
            "data_setting": data_setting(config),
            "seed_runs": {"seed": int(config["sampling"]["seed"]), "replicas": seed_runs(config)}}


def analysis_skipped(config: dict) -> dict[str, str]:
    """Artifacts (registry ids) whose data this config cannot have → why (rules are generated only for the
    others; paper/report.md and paper/main.pdf print the reason in their place)."""
    s = analysis_settings(config)
    pols = bon_policies(config)
    out = {}
    if s["second_policy"] is None:
        why = ("no second policy: bon.policies has no entry besides analysis.policy "
               f"('{s['policy']}'); config/paper.yaml adds the paper's Qwen2.5-Math-72B-Instruct")
        out.update({aid: why for aid in ("table9", "table12", "table14", "table16")})
    if not (bon_judge_runs(config) and bon_judge_policies(config)):
        why = ("no LLM judge of Best-of-N: bon_judges.judges has no enabled judge (or bon_judges.policies no "
               "policy that samples a judged benchmark); `make run-all` (config/all.yaml) and config/paper.yaml "
               "add them")
        out["table11"] = why
        out.setdefault("table12", why)
    if not config.get("search", {}).get("prms"):
        out["table8"] = ("no greedy search: search.prms is empty; `make run-all` (config/all.yaml) and "
                         "config/paper.yaml search with trained PRMs")
    if s["table10"]["n"] is None:
        out["table10"] = ("no larger N: bon.more_n is empty and analysis.table10.n is null "
                          "(config/paper.yaml evaluates N = 64 on MATH500, AIME24, AMC23, Minerva Math, "
                          "GaoKao 2023 En and OlympiadBench)")
    chinese = s["chinese_benchmarks"]
    if not chinese:
        why = ("analysis.chinese_benchmarks is empty: this config samples no Chinese benchmark "
               "(config/paper.yaml: CMATH, CN Middle School 24, GaoKao)")
        out.update({"table15": why, "table16": out.get("table16", why)})
    elif s["second_policy"] is not None:
        own = pols.get(s["second_policy"], {}).get("benchmarks")
        if own and not set(own) & set(chinese):
            out["table16"] = (f"the second policy '{s['second_policy']}' samples none of "
                              f"analysis.chinese_benchmarks {chinese} (bon.policies.{s['second_policy']}.benchmarks)")
    return out
