"""Training sets: one table of (question, steps, per-step labels) per variant declared in the config.

A variant names a label source and type:

* ``mc``        — MC estimation; ``label_type`` hard (``mc_value > threshold``) or soft (``mc_value``);
* ``judge``     — LLM-as-a-judge first error → hard labels (unreadable verdicts excluded);
* ``human``     — PRM800K or labels by construction (results/labels/human.parquet);
* ``consensus`` — MC responses whose first error (hard, ``consensus.threshold``) matches the judge's;
  hard labels at that threshold or soft MC values.

Every label list is truncated after its first negative step (soft: after the first zero step) and
the steps are cut to match. The MC threshold sweep (``trainsets.mc_threshold_sweep``) adds one hard
MC variant per threshold, named ``mc_hard_t{p}of{q}`` (``mc_hard_t1of8``; wildcard-safe) — or the
explicitly declared variant with the same definition (threshold 0 → ``mc_hard``), so no PRM is
trained twice.

``results/tables/trainsets.csv``: variant, source, label_type, threshold, n_instances, n_steps,
positive_rate (share of positive steps; for soft labels the mean label), retained_fraction
(n_instances / candidate responses: all sampled responses for mc/judge/consensus; instances before
decontamination for human); a last column ``run`` holds the run label (provenance).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import clean_steps, instance_id, labels_from_first_error
from .mc import LabelError, as_fraction, hard_labels, soft_labels

SOURCES = ("mc", "judge", "human", "consensus")
CSV_COLUMNS = ["variant", "source", "label_type", "threshold", "n_instances", "n_steps", "positive_rate",
               "retained_fraction"]


# -- variants from the config ------------------------------------------------------------------------

def threshold_name(t) -> str:
    f = as_fraction(t)
    return f"{f.numerator}" if f.denominator == 1 else f"{f.numerator}of{f.denominator}"


def _norm_spec(spec: dict) -> dict:
    src = spec["source"]
    lt = spec.get("label_type", "hard") if src in ("mc", "consensus") else "hard"
    thr = float(spec.get("threshold", 0.0)) if (src == "mc" and lt == "hard") else None
    return {"source": src, "label_type": lt, "threshold": thr,
            "datasets": list(spec["datasets"]) if spec.get("datasets") else None}


def variants(config: dict) -> dict[str, dict]:
    """All variants, declared and sweep, name → normalised spec (source, label_type, threshold, datasets)."""
    tcfg = config.get("trainsets", {}) or {}
    out: dict[str, dict] = {}
    for name, spec in (tcfg.get("variants") or {}).items():
        if spec.get("enabled") is False:  # switched off (overlays merge key by key and cannot delete one)
            continue
        s = _norm_spec(spec)
        if s["source"] not in SOURCES:
            raise ValueError(f"config error at `trainsets.variants.{name}.source`: must be one of {SOURCES}")
        if s["source"] == "consensus":
            s["threshold"] = float((config.get("consensus") or {}).get("threshold", 0.0)) if s["label_type"] == "hard" else None
        out[name] = s
    for t in tcfg.get("mc_threshold_sweep") or []:
        spec = {"source": "mc", "label_type": "hard", "threshold": float(as_fraction(t)), "datasets": None}
        if any(v == spec for v in out.values()):
            continue
        out[f"mc_hard_t{threshold_name(t)}"] = spec
    return out


def variant_names(config: dict) -> list[str]:
    """Names of every training set the config declares (training expands one PRM per name)."""
    return list(variants(config))


def threshold_sweep_variants(config: dict) -> list[tuple[float, str]]:
    """(threshold, variant name) for the MC threshold sweep, in threshold order (Figure 5)."""
    vs = variants(config)
    out = []
    for t in sorted({float(as_fraction(x)) for x in (config.get("trainsets", {}) or {}).get("mc_threshold_sweep") or []}):
        spec = {"source": "mc", "label_type": "hard", "threshold": t, "datasets": None}
        out.append((t, next(n for n, v in vs.items() if v == spec)))
    return out


def label_needs(config: dict) -> dict:
    """What MC must decide for the configured variants: {'thresholds': [...], 'soft': bool}
    (the MC rule stops each step's completions once these are decided)."""
    ts: set[float] = set()
    soft = False
    cons_t = float((config.get("consensus") or {}).get("threshold", 0.0))
    for v in variants(config).values():
        if v["source"] == "mc":
            if v["label_type"] == "soft":
                soft = True
            else:
                ts.add(float(as_fraction(v["threshold"])))
        elif v["source"] == "consensus":
            ts.add(cons_t)
            soft = soft or v["label_type"] == "soft"
    return {"thresholds": sorted(ts) or [0.0], "soft": soft}


def uses(config: dict, source: str) -> bool:
    """Whether any variant needs a label source (mc / judge / human / consensus)."""
    srcs = {v["source"] for v in variants(config).values()}
    if source in ("mc", "judge"):
        return source in srcs or "consensus" in srcs
    return source in srcs


def variant_datasets(config: dict, name: str) -> list[str]:
    spec = variants(config)[name]
    names = spec["datasets"] or list((config.get("problems") or {}).keys())
    unknown = [d for d in names if d not in (config.get("problems") or {})]
    if unknown:
        raise ValueError(f"config error at `trainsets.variants.{name}.datasets`: unknown problem set(s) {unknown}")
    return names


# -- workflow helpers (labels.smk) -------------------------------------------------------------------------

def role_model(config: dict, role: str) -> str:
    """Model name for a role; the completer and the judge default to the policy."""
    roles = config["roles"]
    return roles.get(role) or roles["policy"]


def label_shard_paths(config: dict, kind: str, dataset: str) -> list[str]:
    """Shard tables of `kind` (mc / judge) for one problem set."""
    n = int(config[kind]["shards"])
    return [f"results/labels/{kind}/{dataset}/shard{i}of{n}.parquet" for i in range(n)]


def eval_set_paths(config: dict) -> list[str]:
    """Every evaluation problem set (benchmarks + ProcessBench cases), for decontaminating human labels."""
    paths = [f"results/problems/{b}.parquet" for b in config.get("benchmarks") or {}]
    if config.get("processbench"):
        paths.append("results/processbench/cases.parquet")
    return paths


def trainset_inputs(config: dict, variant: str) -> dict:
    """Named inputs of one variant's trainset rule."""
    spec = variants(config)[variant]
    src = spec["source"]
    if src == "human":
        return {"human": "results/labels/human.parquet"}
    ds = variant_datasets(config, variant)
    inputs = {"samples": [f"results/samples/{d}.parquet" for d in ds]}
    if src in ("mc", "consensus"):
        inputs["mc"] = [f"results/labels/mc/{d}.parquet" for d in ds]
    if src == "judge":
        inputs["judge"] = [f"results/labels/judge/{d}.parquet" for d in ds]
    if src == "consensus":
        inputs["consensus"] = [f"results/labels/consensus/{d}.parquet" for d in ds]
    return inputs


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


def stats(df: pd.DataFrame, name: str, spec: dict, n_candidates: int) -> dict:
    labels = [x for lab in df["labels"] for x in lab] if len(df) else []
    thr = spec.get("threshold")
    return {"variant": name, "source": spec["source"], "label_type": spec["label_type"],
            "threshold": None if thr is None else round(float(thr), 6), "n_instances": int(len(df)),
            "n_steps": len(labels), "positive_rate": round(sum(labels) / len(labels), 6) if labels else None,
            "retained_fraction": round(len(df) / n_candidates, 6) if n_candidates else None,
            "n_candidates": int(n_candidates)}


def build_variant(name: str, spec: dict, *, samples: list[pd.DataFrame] = (), mc: list[pd.DataFrame] = (),
                  judge: list[pd.DataFrame] = (), consensus: list[pd.DataFrame] = (), human: pd.DataFrame | None = None,
                  k: int | None = None, n_human_candidates: int | None = None) -> tuple[pd.DataFrame, dict]:
    """The training set of one variant (trainset table + extras) and its stats row."""
    src, lt = spec["source"], spec["label_type"]
    if src == "human":
        if human is None:
            raise ValueError(f"variant {name}: human labels table missing")
        df = human[["instance_id", "question", "steps", "labels"]].copy()
        df["source"] = "human"
        return df, stats(df, name, spec, n_human_candidates if n_human_candidates is not None else len(df))
    sm = pd.concat(list(samples), ignore_index=True) if len(samples) else pd.DataFrame()
    if src == "mc":
        labels = mc_labels(pd.concat(list(mc), ignore_index=True), k, lt, spec["threshold"])
    elif src == "judge":
        labels = judge_labels(pd.concat(list(judge), ignore_index=True), sm)
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
    return df, stats(df, name, spec, len(sm))


def _as_list(x) -> list:
    return [] if x is None else [x] if isinstance(x, str) else list(x)


def rule_trainset(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """One variant's training set → results/trainsets/{variant}.parquet (+ .json stats)."""
    from ..tables import read_table, table_meta, write_table

    name, spec = params["variant"], params["spec"]
    human = None
    n_human = None
    k = None
    if inputs.get("mc"):
        k = int(table_meta(_as_list(inputs["mc"])[0]).get("k") or params.get("k"))
    if spec["source"] == "human":
        human = read_table(inputs["human"], "trainset")
        n_human = table_meta(inputs["human"]).get("n_candidates")
    df, st = build_variant(
        name, spec, samples=[read_table(p, "samples") for p in _as_list(inputs.get("samples"))],
        mc=[read_table(p, "mc") for p in _as_list(inputs.get("mc"))],
        judge=[read_table(p, "judge") for p in _as_list(inputs.get("judge"))],
        consensus=[pd.read_parquet(p) for p in _as_list(inputs.get("consensus"))], human=human, k=k,
        n_human_candidates=n_human)
    print(f"trainset {name}: {st}", flush=True)
    write_table(df, outputs["table"], "trainset", meta={"variant": name, "spec": spec, "stats": st,
                                                        "run": params.get("run", {})})
    Path(outputs["stats"]).write_text(json.dumps(st, indent=1) + "\n")


def rule_trainsets_table(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Every variant's stats → results/tables/trainsets.csv."""
    rows = [json.loads(Path(p).read_text()) for p in _as_list(inputs["stats"])]
    df = pd.DataFrame(rows)
    for c in CSV_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df = df[CSV_COLUMNS]
    df["run"] = params.get("run_label", "")  # provenance: which configuration made these numbers
    Path(outputs["csv"]).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(outputs["csv"], index=False)
    print(df.to_string(index=False), flush=True)


__all__ = ["variants", "variant_names", "threshold_sweep_variants", "label_needs", "uses", "variant_datasets",
           "build_variant", "mc_labels", "judge_labels"]
