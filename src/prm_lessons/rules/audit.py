"""Rule glue of workflow/rules/audit.smk: the label audit. Its slice of constructed solutions (CPU), MC with
every completion kept plus the judge on one shard of it (one engine), and the analysis against exact truth
(CPU: changing it reruns no model call)."""
from __future__ import annotations

import pandas as pd

from .. import as_paths
from ..data.problems import load_problems
from ..generation import engine as generation
from ..generation.engine import Engine
from ..jobs.shards import shard_by_problem
from ..labels import NOT_JUDGED, clean_steps, instance_id
from ..labels.audit import audit_metrics, cost_rows, render_markdown
from ..labels.audit_slice import build_slice
from ..labels.human import eval_questions
from ..labels.judge import judge_responses, load_template
from ..labels.mc import MCInput, Needs, make_grade_fn, make_prompt_fn, run_mc, spec_from_config
from ..tables import merge_shards, read_table, table_meta, write_csv, write_table


def audit_slice(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `audit_slice`: the stratified slice (generators × gold / error / keep) →
    results/labels/audit/slice.parquet."""
    cfg = params["audit"]
    problems = {name: load_problems(name, spec) for name, spec in cfg["problems"].items()}
    df, counts = build_slice(problems, int(cfg["per_cell"]), int(cfg["seed"]),
                             eval_questions(as_paths(inputs.get("eval_sets", []))))
    print(f"audit slice: {len(df)} solutions, {df.groupby(['generator', 'kind']).size().to_dict()}; "
          f"skipped {counts}", flush=True)
    write_table(df, outputs["table"], "audit_slice", meta={"audit": cfg, "counts": counts})


class _CountingEngine(Engine):
    """The loaded engine, counting the prompt tokens it is sent: every request, and distinct prompts
    (an upper bound of what prefix caching prefills: the K completions of a step share one prompt)."""

    def __init__(self, engine):
        self.inner, self.tokenizer, self.stats, self.backend = engine, engine.tokenizer, engine.stats, engine.backend
        self.prompt_tokens = 0
        self.distinct: dict[str, int] = {}

    def generate(self, prompts, spec, seeds=None):
        for p in prompts:
            if p not in self.distinct:
                self.distinct[p] = len(self.tokenizer(p, add_special_tokens=False)["input_ids"])
            self.prompt_tokens += self.distinct[p]
        return self.inner.generate(prompts, spec, seeds)

    def take(self) -> dict:
        out = {"prompt_tokens": self.prompt_tokens, "prompt_tokens_distinct": sum(self.distinct.values())}
        self.prompt_tokens, self.distinct = 0, {}
        return out


def audit_labels(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `audit_labels`: MC with every completion kept up to each solution's first step without a success
    (the early protocol with soft labels: every threshold and K' is read from these completions) and, with
    audit.judge, the judge on one shard of the slice, one engine for both →
    results/labels/audit/labels/shard{s}of{n}.parquet (audit_labels table)."""
    mc_cfg, judge_cfg, k = params["mc"], params.get("judge"), int(params["k"])
    sl = read_table(inputs["slice"], "audit_slice")
    shard, nshards = int(wildcards.get("shard", 0)), int(wildcards.get("nshards", 1))
    part = shard_by_problem(sl, shard, nshards)
    # a constructed solution's final answer is correct unless its error changed it: the last step, which
    # states it, is labelled by it (mc.last_step answer), as MC labels a sampled response's last step
    items = [MCInput(r.problem_id, int(r.sample_idx), r.question, str(r.answer), list(r.steps), r.kind != "error")
             for r in part.itertuples()]
    print(f"audit labels: {len(items)} solutions in shard {shard} of {nshards}; MC K={k} (every completion of "
          f"every step up to the first without a success), judge "
          f"{'style=' + judge_cfg['style'] if judge_cfg else 'off'}", flush=True)
    engine = _CountingEngine(generation.load_engine(params["model_dir"], params["model_entry"]))
    timing: dict = {}
    grade_fn = make_grade_fn(float(params.get("grading_timeout_s", 5.0)), params.get("grading_workers"))
    try:
        rows = run_mc(items, engine, k=k, needs=Needs(soft=True), protocol="early", seed=int(mc_cfg["seed"]),
                      spec=spec_from_config(mc_cfg),
                      prompt_fn=make_prompt_fn(engine.tokenizer, params.get("system_prompt")), grade_fn=grade_fn,
                      separator=params.get("separator", "\n\n"), keep_outcomes=True,
                      last_step=mc_cfg.get("last_step", "answer"), lanes=int(mc_cfg.get("lanes", 1)), timing=timing)
    finally:
        grade_fn.close()
    engine.stats.extra["mc"] = timing  # into the job's tokens sidecar (jobs.budget)
    mc_cost = {**engine.take(), "generated_tokens": sum(r["tokens_generated"] for r in rows)}
    steps = [clean_steps(s) for s in part["steps"]]
    verdicts = judge_responses(
        engine, list(part["question"]), steps,
        [instance_id(p, s) for p, s in zip(part["problem_id"], part["sample_idx"])],
        style=judge_cfg["style"], n=int(judge_cfg["n"]), temperature=float(judge_cfg["temperature"]),
        top_p=float(judge_cfg["top_p"]), max_tokens=int(judge_cfg["max_tokens"]), seed=int(judge_cfg["seed"]),
        template=load_template(inputs.get("template")), system_prompt=judge_cfg.get("system_prompt"),
        force_answer=bool(judge_cfg["force_answer"]), guided=bool(judge_cfg["guided"]),
        force_truncated=bool(judge_cfg.get("force_truncated", False))) if items and judge_cfg else []
    if not judge_cfg:
        verdicts = [{"first_error": None, "status": NOT_JUDGED, "tokens_generated": 0} for _ in items]
    judge_cost = {**engine.take(), "generated_tokens": sum(int(v["tokens_generated"]) for v in verdicts)}
    df = pd.DataFrame(rows, columns=["problem_id", "sample_idx", "n_steps", "k", "n_success", "n_total", "outcomes",
                                     "tokens_generated", "n_completions", "n_truncated"])
    df["judge_first_error"] = pd.array([v["first_error"] for v in verdicts], dtype="Int64")
    df["judge_status"] = [v["status"] for v in verdicts]
    df["judge_tokens_generated"] = [int(v["tokens_generated"]) for v in verdicts]
    cost = {"mc": mc_cost, **({"judge": judge_cost} if judge_cfg else {})}
    print(f"audit labels: model tokens {cost}; engine {engine.stats.seconds:.1f}s", flush=True)
    write_table(df, outputs["table"], "audit_labels", meta={"k": k, "mc": mc_cfg, "judge": judge_cfg, "cost": cost,
                                                           "mc_timing": timing})


def label_audit(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `label_audit`: the audit's labels against exact truth → results/tables/label_audit.csv."""
    sl = read_table(inputs["slice"], "audit_slice")
    labels, _ = merge_shards(as_paths(inputs["shards"]), "audit_labels")
    recs = sl.merge(labels, on=["problem_id", "sample_idx"], how="inner", validate="one_to_one")
    if len(recs) != len(sl):
        raise ValueError(f"audit: {len(sl) - len(recs)} slice solutions have no labels in {inputs['shards']}")
    k = int(params["k"])
    cost: dict[str, dict] = {}  # the shards' token counts (their metadata), summed
    for p in as_paths(inputs["shards"]):
        for src, d in table_meta(p)["cost"].items():
            for m, v in d.items():
                cost.setdefault(src, {}).setdefault(m, 0)
                cost[src][m] += int(v)
    table = pd.concat([audit_metrics(recs, k, float(params["consensus_threshold"])), pd.DataFrame(cost_rows(cost))],
                      ignore_index=True)
    table["run"] = params.get("run_label", "")
    write_csv(table, outputs["csv"], "label_audit_csv")
    print("\n".join(render_markdown(table, k, params.get("run_label", ""))), flush=True)
