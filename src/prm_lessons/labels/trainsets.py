"""Training sets: one table of (question, steps, per-step labels) per variant declared in the config.

A variant names a label source and type:

* ``mc``        — MC estimation; ``label_type`` hard (``mc_value > threshold``) or soft (``mc_value``);
* ``judge``     — LLM-as-a-judge first error → hard labels (unreadable verdicts excluded);
* ``human``     — PRM800K or labels by construction (results/labels/human.parquet);
* ``math_shepherd`` — Math-Shepherd's released labels (results/labels/math_shepherd.parquet,
  `labels.math_shepherd`);
* ``trl`` — a dataset in TRL's stepwise-supervision format named by the variant's ``trl`` key
  (results/labels/trl/{variant}.parquet, `labels.stepwise`);
* ``checker`` — the arithmetic process checker's exact step labels (prm_lessons.labels.process_check) on the
  same sampled responses MC and the judge label: truncated after the first wrong step; a wrong final
  answer with no step flagged gives no instance (:func:`checker_labels`);
* ``consensus`` — MC responses whose first error (hard, ``consensus.threshold``) matches the judge's;
  hard labels at that threshold or soft MC values;
* ``exact`` — the exact step truth of the constructed pool (``trainsets.responses: constructed``).

With ``trainsets.responses: constructed`` the mc / judge / consensus / exact variants label one pool: the
label audit's constructed solutions (gold, answer-changing error, answer-keeping error; labels.audit_slice)
with their MC counts and judge verdicts (rule audit_labels), as :func:`pool_inputs` lays them out. Every
source then labels the same instances, so their PRMs differ in the labels only.

Every label list is truncated after its first negative step (soft: after the first zero step) and
the steps are cut to match. The MC threshold sweep (``trainsets.mc_threshold_sweep``) adds one hard
MC variant per threshold, named ``mc_hard_t{p}of{q}`` (``mc_hard_t1of8``; wildcard-safe) — or the
explicitly declared variant with the same definition (threshold 0 → ``mc_hard``), so no PRM is
trained twice.

``results/tables/trainsets.csv``: variant, source, label_type, threshold, n_instances, n_steps,
positive_rate (share of positive steps; for soft labels the mean label), retained_fraction
(n_instances / candidate responses: all sampled responses for mc/judge/consensus/checker; instances before
decontamination for human, math_shepherd and trl), paper_n_instances (the paper's size of that data source,
`PAPER_N_INSTANCES`; empty for the paper's own 860k sets, which this run samples at its own scale); a
last column ``run`` holds the run label (provenance).
"""
from __future__ import annotations

import pandas as pd

from . import NOT_JUDGED, clean_steps, instance_id, labels_from_first_error
from .consensus import consensus_table
from .mc import LabelError, hard_labels, soft_labels

CSV_COLUMNS = ["variant", "source", "label_type", "threshold", "n_instances", "paper_n_instances", "n_steps",
               "positive_rate", "retained_fraction"]
# the paper's instance counts of the external data sources (S1 §3.1.2 and the row labels of Tables 3/4/13:
# "Math-Shepherd, 440k" (its text: 445k), "PRM800K, 264k" (its text: ~265k after deduplication))
PAPER_N_INSTANCES = {"prm800k": 264_000, "math_shepherd": 440_000}


# -- building one variant -------------------------------------------------------------------------------

def _instances_from_labels(samples: pd.DataFrame, labels: dict, source: str) -> list[dict]:
    rows = []
    for r in samples.itertuples():
        key = (r.problem_id, int(r.sample_idx))
        lab = labels.get(key)
        if lab is None:
            continue
        steps = clean_steps(r.steps)[: len(lab)]
        rows.append({"instance_id": instance_id(r.problem_id, r.sample_idx), "question": r.question, "steps": steps,
                     "labels": [float(x) for x in lab], "problem_id": r.problem_id, "sample_idx": int(r.sample_idx),
                     "dataset": getattr(r, "dataset", None), "source": source})
    return rows


def mc_labels(mc: pd.DataFrame, k: int, label_type: str, threshold: float | None) -> dict:
    out = {}
    for r in mc.itertuples():
        where = f"{r.problem_id}#{int(r.sample_idx)}"
        kk = int(getattr(r, "k", k) or k)
        inferred = getattr(r, "inferred", None)
        if label_type == "soft":
            if inferred is not None and any(inferred):
                raise LabelError(f"{where}: soft labels from a binary-search MC run (steps inferred, not rolled out)")
            lab = soft_labels(r.n_success, r.n_total, kk, where)
        else:
            lab = hard_labels(r.n_success, r.n_total, kk, threshold, inferred, where)
        out[(r.problem_id, int(r.sample_idx))] = lab
    return out


def judge_labels(judge: pd.DataFrame, samples: pd.DataFrame) -> dict:
    """Hard labels from the judge's first error; unreadable verdicts (null) give no instance."""
    n_steps = {(p, int(s)): len(clean_steps(st)) for p, s, st in zip(samples["problem_id"], samples["sample_idx"],
                                                                      samples["steps"])}
    out = {}
    for r in judge.itertuples():
        key = (r.problem_id, int(r.sample_idx))
        fe = None if pd.isna(r.first_error) else int(r.first_error)
        out[key] = labels_from_first_error(fe, n_steps.get(key, 0))
    return out


def checker_labels(checks: pd.DataFrame, samples: pd.DataFrame) -> tuple[dict, dict]:
    """Training labels from the checker: (problem_id, sample_idx) → hard labels truncated after the first
    wrong step, all ones when no step is wrong and the final answer is graded correct. A wrong final answer
    with no step flagged gets no labels (the error is where the checker cannot see; counted, not guessed),
    nor does a response without steps. Returns (labels, counts)."""
    correct = {(p, int(i)): bool(c) for p, i, c in zip(samples["problem_id"], samples["sample_idx"],
                                                       samples["correct"].fillna(False))}
    out, counts = {}, {"labelled": 0, "unlocated_wrong_answer": 0, "no_steps": 0, "ungraded": 0}
    for r in checks.itertuples():
        key = (r.problem_id, int(r.sample_idx))
        if key not in correct:
            counts["ungraded"] += 1
            continue
        fe = int(r.first_error)
        if int(r.n_steps) == 0:
            counts["no_steps"] += 1
            continue
        if fe == -1 and not correct[key]:
            counts["unlocated_wrong_answer"] += 1
            continue
        out[key] = labels_from_first_error(fe, int(r.n_steps))
        counts["labelled"] += 1
    return out, counts


def pool_inputs(pool: pd.DataFrame, labels: pd.DataFrame, k: int, consensus_threshold: float = 0.0) -> dict:
    """The constructed pool as :func:`build_variant`'s inputs: `samples` (its solutions; a solution's answer
    is correct unless its error changed it), `mc` (the audit's MC counts), `judge` (its verdicts, where the
    audit ran the judge), `consensus` and `exact` (problem_id, sample_idx) → truth labels."""
    recs = pool.merge(labels, on=["problem_id", "sample_idx"], how="inner", validate="one_to_one",
                      suffixes=("", "_labels"))
    if len(recs) != len(pool):
        raise ValueError(f"pool: {len(pool) - len(recs)} of {len(pool)} constructed solutions have no labels")
    samples = pool.assign(correct=pool["kind"] != "error", dataset="pool")
    mc = recs[["problem_id", "sample_idx", "n_steps", "k", "n_success", "n_total"]]
    out = {"samples": [samples], "mc": [mc], "judge": [], "consensus": []}
    if "judge_status" in recs.columns and (recs["judge_status"] != NOT_JUDGED).any():
        judge = recs[["problem_id", "sample_idx"]].assign(first_error=recs["judge_first_error"])
        out["judge"] = [judge]
        out["consensus"] = [consensus_table(mc, judge, k, consensus_threshold)]
    out["exact"] = {(p, int(s)): labels_from_first_error(int(e), len(clean_steps(st)))
                    for p, s, e, st in zip(pool["problem_id"], pool["sample_idx"], pool["error_index"], pool["steps"])}
    return out


def paper_n_instances(source: str, human_source: str | None = None) -> int | None:
    """The paper's instance count for a variant's data: Math-Shepherd's, PRM800K's for human labels from
    PRM800K (labels by construction have none)."""
    return PAPER_N_INSTANCES.get("prm800k" if source == "human" and human_source == "prm800k" else source)


def stats(df: pd.DataFrame, name: str, spec: dict, n_candidates: int, paper_n: int | None = None) -> dict:
    labels = [x for lab in df["labels"] for x in lab] if len(df) else []
    thr = spec.get("threshold")
    return {"variant": name, "source": spec["source"], "label_type": spec["label_type"],
            "threshold": None if thr is None else round(float(thr), 6), "n_instances": int(len(df)),
            "paper_n_instances": paper_n,
            "n_steps": len(labels), "positive_rate": round(sum(labels) / len(labels), 6) if labels else None,
            "retained_fraction": round(len(df) / n_candidates, 6) if n_candidates else None,
            "n_candidates": int(n_candidates)}


def build_variant(name: str, spec: dict, *, samples: list[pd.DataFrame] = (), mc: list[pd.DataFrame] = (),
                  judge: list[pd.DataFrame] = (), consensus: list[pd.DataFrame] = (), human: pd.DataFrame | None = None,
                  math_shepherd: pd.DataFrame | None = None, trl: pd.DataFrame | None = None,
                  checker: list[pd.DataFrame] = (), exact: dict | None = None,
                  k: int | None = None,
                  n_human_candidates: int | None = None,
                  paper_n_instances: int | None = None) -> tuple[pd.DataFrame, dict]:
    """The training set of one variant (trainset table + extras) and its stats row. human / math_shepherd /
    trl: the labels table of that source (made by its own rule, decontaminated); n_human_candidates: its
    instances before decontamination."""
    src, lt = spec["source"], spec["label_type"]
    if src in ("human", "math_shepherd", "trl"):
        made = {"human": human, "math_shepherd": math_shepherd, "trl": trl}[src]
        if made is None:
            raise ValueError(f"variant {name}: {src} labels table missing")
        keep = ["instance_id", "question", "steps", "labels"] + (["dataset"] if "dataset" in made.columns else [])
        df = made[keep].copy()
        df["source"] = src
        n = n_human_candidates if n_human_candidates is not None else len(df)
        return df, stats(df, name, spec, n, paper_n_instances)
    sm = pd.concat(list(samples), ignore_index=True) if len(samples) else pd.DataFrame()
    if src == "mc":
        labels = mc_labels(pd.concat(list(mc), ignore_index=True), k, lt, spec["threshold"])
    elif src == "judge":
        labels = judge_labels(pd.concat(list(judge), ignore_index=True), sm)
    elif src == "checker":
        labels, _ = checker_labels(pd.concat(list(checker), ignore_index=True), sm)
    elif src == "exact":
        if exact is None:
            raise ValueError(f"variant {name}: exact labels need the constructed pool (trainsets.responses)")
        labels = exact
    elif src == "consensus":
        cons = pd.concat(list(consensus), ignore_index=True)
        keep = {(p, int(s)) for p, s, a in zip(cons["problem_id"], cons["sample_idx"], cons["agree"]) if a}
        m = pd.concat(list(mc), ignore_index=True)
        m = m[[(p, int(s)) in keep for p, s in zip(m["problem_id"], m["sample_idx"])]]
        labels = mc_labels(m, k, lt, spec["threshold"]) if len(m) else {}
    else:
        raise ValueError(f"variant {name}: unknown source {src!r}")
    df = pd.DataFrame(_instances_from_labels(sm, labels, src),
                      columns=["instance_id", "question", "steps", "labels", "problem_id", "sample_idx", "dataset",
                               "source"])
    return df, stats(df, name, spec, len(sm), paper_n_instances)


__all__ = ["build_variant", "checker_labels", "mc_labels", "judge_labels", "pool_inputs"]
