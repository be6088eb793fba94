"""Plan stage: labels and training sets (variants, what MC must decide, label shards, trainset inputs)."""
from __future__ import annotations

from ..config import sweep_variant_name
from ..labels.mc import as_fraction
from .data_policies import mixed_policies
from .processbench import PROCESSBENCH_DEV, processbench_dev
from .sampling import sized_shard_count

TRAINSET_SOURCES = ("mc", "judge", "human", "consensus", "math_shepherd", "checker", "trl", "exact")
# the sources that label the constructed pool when trainsets.responses is `constructed`
POOL_SOURCES = ("mc", "judge", "consensus", "exact")
# the pool: the label audit's constructed solutions (rule audit_slice) and their MC (+ judge) labels
# (rule audit_labels, one table per shard)
POOL_SLICE = "results/labels/audit/slice.parquet"


def _norm_spec(spec: dict) -> dict:
    src = spec["source"]
    lt = spec.get("label_type", "hard") if src in ("mc", "consensus") else "hard"
    thr = float(spec.get("threshold", 0.0)) if (src == "mc" and lt == "hard") else None
    out = {"source": src, "label_type": lt, "threshold": thr,
           "datasets": list(spec["datasets"]) if spec.get("datasets") else None}
    if src == "trl":  # where its data is: the params of rule trl_labels
        out["trl"] = dict(spec["trl"])
    return out


def variants(config: dict) -> dict[str, dict]:
    """All training-set variants, declared and sweep, name → normalised spec (source, label_type,
    threshold, datasets). The MC threshold sweep adds `mc_hard_t{p}of{q}` unless a declared variant
    has the same definition, so no PRM is trained twice."""
    tcfg = config.get("trainsets", {})
    out: dict[str, dict] = {}
    for name, spec in tcfg.get("variants", {}).items():
        if spec.get("enabled") is False:  # switched off (overlays merge key by key and cannot delete one)
            continue
        s = _norm_spec(spec)
        if s["source"] not in TRAINSET_SOURCES:
            raise ValueError(f"config error at `trainsets.variants.{name}.source`: must be one of {TRAINSET_SOURCES}")
        if spec.get("trl") is not None and s["source"] != "trl":
            raise ValueError(f"config error at `trainsets.variants.{name}.trl`: only a variant with `source: trl` "
                             f"reads it (this one has source {s['source']!r})")
        if s["source"] == "checker" and not process_check_enabled(config):
            raise ValueError(f"config error at `trainsets.variants.{name}.source`: 'checker' labels need "
                             "`process_check.enabled: true` (the checker reads arithmetic only)")
        if s["source"] == "consensus":
            s["threshold"] = (float(config.get("consensus", {}).get("threshold", 0.0)) if s["label_type"] == "hard"
                              else None)
        out[name] = s
    for t in tcfg.get("mc_threshold_sweep") or []:
        spec = {"source": "mc", "label_type": "hard", "threshold": float(as_fraction(t)), "datasets": None}
        if any(v == spec for v in out.values()):
            continue
        out[sweep_variant_name(t)] = spec
    return out


def process_check_enabled(config: dict) -> bool:
    """Whether the arithmetic process checker runs (process_check.enabled; off unless set)."""
    return bool(config.get("process_check", {}).get("enabled", False))


def threshold_sweep_variants(config: dict) -> list[tuple[float, str]]:
    """(threshold, variant name) for the MC threshold sweep, in threshold order (Figure 5)."""
    vs = variants(config)
    out = []
    for t in sorted({float(as_fraction(x)) for x in config.get("trainsets", {}).get("mc_threshold_sweep", [])}):
        spec = {"source": "mc", "label_type": "hard", "threshold": t, "datasets": None}
        out.append((t, next(n for n, v in vs.items() if v == spec)))
    return out


def label_needs(config: dict) -> dict:
    """What MC must decide for the configured variants: {'thresholds': [...], 'soft': bool}
    (the MC rule stops each step's completions once these are decided)."""
    ts: set[float] = set()
    soft = False
    cons_t = float(config.get("consensus", {}).get("threshold", 0.0))
    for v in variants(config).values():
        if v["source"] == "mc":
            if v["label_type"] == "soft":
                soft = True
            else:
                ts.add(float(as_fraction(v["threshold"])))
        elif v["source"] == "consensus":
            ts.add(cons_t)
            soft = soft or v["label_type"] == "soft"
    if soft and config.get("mc", {}).get("protocol", "early") != "binary":
        # soft labels roll out all K completions of every step up to the first zero step, which decides
        # every threshold: the thresholds change no rollout, so they stay out of the MC rule's params
        # (adding a sweep point relabels nothing)
        return {"thresholds": [0.0], "soft": True}
    return {"thresholds": sorted(ts) or [0.0], "soft": soft}


def uses(config: dict, source: str) -> bool:
    """Whether any variant needs a label source (mc / judge / human / consensus)."""
    srcs = {v["source"] for v in variants(config).values()}
    if source in ("mc", "judge"):
        return source in srcs or "consensus" in srcs
    return source in srcs


def pool_responses(config: dict) -> bool:
    """Whether the mc / judge / consensus / exact variants label the constructed pool (the audit's
    solutions, trainsets.responses: constructed) rather than sampled responses."""
    return config.get("trainsets", {}).get("responses", "sampled") == "constructed"


def labels_pool(config: dict, variant: str) -> bool:
    """Whether `variant` is labelled on the constructed pool."""
    return pool_responses(config) and variants(config)[variant]["source"] in POOL_SOURCES


def audit_shard_paths(config: dict) -> list[str]:
    n = int(config["audit"]["shards"])
    return [f"results/labels/audit/labels/shard{i}of{n}.parquet" for i in range(n)]


def variant_datasets(config: dict, name: str) -> list[str]:
    spec = variants(config)[name]
    names = spec["datasets"] or list(config.get("problems", {}).keys())
    unknown = [d for d in names if d not in config.get("problems", {})]
    if unknown:
        raise ValueError(f"config error at `trainsets.variants.{name}.datasets`: unknown problem set(s) {unknown}")
    return names


def role_model(config: dict, role: str) -> str:
    """Model name for a role; the completer and the judge default to the policy."""
    roles = config["roles"]
    return roles.get(role) or roles["policy"]


def label_shard_paths(config: dict, kind: str, dataset: str) -> list[str]:
    """Shard tables of `kind` (mc / judge) for one problem set of the primary policy's samples, as many as
    sized_shard_count gives (<kind>.shards, fewer for a small set with <kind>.problems_per_shard); MC of a
    mix of data policies that many per policy, numbered over the policies in order (plan.mc_shard)."""
    n = sized_shard_count(config, kind, dataset) * (max(1, len(mixed_policies(config))) if kind == "mc" else 1)
    return [f"results/labels/{kind}/{dataset}/shard{i}of{n}.parquet" for i in range(n)]


def eval_set_paths(config: dict) -> list[str]:
    """Every evaluation problem set (benchmarks + ProcessBench cases and its dev split), for
    decontaminating human labels."""
    paths = [f"results/problems/{b}.parquet" for b in config.get("benchmarks", {})]
    if config.get("processbench"):
        paths.append("results/processbench/cases.parquet")
    if processbench_dev(config):
        paths.append(PROCESSBENCH_DEV)
    return paths


def trl_variants(config: dict) -> dict[str, dict]:
    """Variant name → its `trl` data spec, for the variants with source trl (rule trl_labels)."""
    return {n: v["trl"] for n, v in variants(config).items() if v["source"] == "trl"}


def trl_local_files(spec: dict) -> list[str]:
    """The local file of a `trl` spec as a rule input (none for the Hub: rule trl_labels downloads it)."""
    return [spec["path"]] if spec["source"] == "local" else []


def trl_exports(config: dict) -> dict[str, float | None]:
    """Variants written in TRL's format by rule export_trl (trainsets.export_trl.enabled) → the soft-label
    threshold they need (None for hard labels); soft variants only with export_trl.soft_threshold."""
    ex = config.get("trainsets", {}).get("export_trl", {})
    if not ex.get("enabled"):
        return {}
    thr = ex.get("soft_threshold")
    return {n: (None if v["label_type"] == "hard" else float(thr)) for n, v in variants(config).items()
            if v["label_type"] == "hard" or thr is not None}


def trl_labels_path(variant: str) -> str:
    return f"results/labels/trl/{variant}.parquet"


def trainset_inputs(config: dict, variant: str) -> dict:
    """Named inputs of one variant's trainset rule."""
    spec = variants(config)[variant]
    src = spec["source"]
    if src in ("human", "math_shepherd"):  # labelled once for every variant: rules human_labels, math_shepherd_labels
        return {src: f"results/labels/{src}.parquet"}
    if src == "trl":  # its own data, read by rule trl_labels
        return {"trl": trl_labels_path(variant)}
    if labels_pool(config, variant):  # the constructed solutions and their labels (rules audit_*)
        return {"pool": POOL_SLICE, "pool_labels": audit_shard_paths(config)}
    ds = variant_datasets(config, variant)
    inputs = {"samples": [f"results/samples/{d}.parquet" for d in ds]}
    if src in ("mc", "consensus"):
        inputs["mc"] = [f"results/labels/mc/{d}.parquet" for d in ds]
    if src == "judge":
        inputs["judge"] = [f"results/labels/judge/{d}.parquet" for d in ds]
    if src == "checker":  # the same responses MC and the judge label, checked (rule process_check_labels)
        inputs["checker"] = [f"results/labels/checker/{d}.parquet" for d in ds]
    if src == "consensus":
        inputs["consensus"] = [f"results/labels/consensus/{d}.parquet" for d in ds]
    return inputs
