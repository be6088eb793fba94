"""Config → DAG: every name and path the workflow derives from the (validated) config, in one place.

Runs only while Snakemake builds the DAG (workflow/rules/common.smk computes the shared names from it
once; the stage files read only those), so editing it reruns no job: jobs get config values through
their params. Every `results/...` path outside the .smk files is written here.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from .config import model_entry, model_path, sweep_variant_name
from .data.processbench import processbench_paths
from .data.sources import downloaded_path
from .fewshot import fewshot_path
from .labels.mc import as_fraction

TRAINSET_SOURCES = ("mc", "judge", "human", "consensus", "math_shepherd")
# training keys that change no result: kept out of params so editing them does not retrain every PRM
TRAINING_RESOURCE_KEYS = ("mem_mb", "runtime", "threads", "keep_checkpoints", "gpus_scoring", "base_params_b",
                          "checkpoint_write_gbps")


def wildcard_alternatives(names) -> str:
    """Wildcard regex matching exactly these names (never matches when there are none)."""
    names = list(names)
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


# -- models and resources ------------------------------------------------------------------------------

def model_input(config: dict, role_or_name: str) -> list[str]:
    """Input for rules that need a model: the directory rule embedded_model or download_model makes
    (so the download runs on the submit host before any GPU job); nothing for `source: local`."""
    entry = model_entry(config, role_or_name)
    return [model_path(config, role_or_name)] if entry["source"] in ("embedded", "hub") else []


def gpus(config: dict, role_or_name: str) -> int:
    """GPUs a model's jobs ask for: its `gpus` key, else its tensor-parallel size; none for the CPU-only
    embedded model."""
    entry = model_entry(config, role_or_name)
    if entry["source"] == "embedded":
        return 0
    return int(entry["gpus"]) if entry.get("gpus") is not None else int(entry.get("tensor_parallel_size", 1))


def mem_mb_for(n_gpus: int, per_gpu: int = 64000) -> int:
    """Host memory of a job on n GPUs: 64 GB per GPU (a 72B TP-4 job: 256 GB), within the per-GPU share
    of a standard 4- or 8-GPU node; a CPU-only job gets one share."""
    return per_gpu * max(1, int(n_gpus))


def runtime(config: dict, minutes: int, attempt: int) -> int:
    """SLURM minutes of a GPU job: `minutes` × the attempt (a job killed at its limit is resubmitted with
    more time), capped at cluster.max_runtime so no retry asks for more than the partition allows (sbatch
    would refuse it outright). Jobs whose work can exceed the cap are sharded instead."""
    return max(1, min(int(minutes) * max(1, int(attempt)), int(config["cluster"]["max_runtime"])))


def engine_threads(config: dict, role_or_name: str, pool: int = 0) -> int:
    """CPUs of a vLLM job (sbatch --cpus-per-task): the rule's process, vLLM's engine core, one worker
    per GPU, and `pool` grading processes. The embedded CPU model keeps 2 (the 2-core default)."""
    n = gpus(config, role_or_name)
    return 2 if n == 0 else 2 + n + int(pool)


# -- data and sampling ---------------------------------------------------------------------------------

def dataset_spec(config: dict, name: str) -> dict:
    """The spec of a dataset named under ``problems:`` or ``benchmarks:`` (names must not clash)."""
    found = [sec for sec in ("problems", "benchmarks") if name in (config.get(sec) or {})]
    if not found:
        raise KeyError(f"dataset '{name}' is not defined under `problems` or `benchmarks`")
    if len(found) > 1:
        raise ValueError(f"dataset name '{name}' is defined under both `problems` and `benchmarks`")
    return config[found[0]][name]


def local_source_inputs(spec: dict | None, name: str | None = None) -> list[str]:
    """Rule inputs for a spec: its local file or directory (so replacing it reruns the rule), the
    downloaded copy for `source: url` (made by rule benchmark_file / processbench_file), else none."""
    spec = spec or {}
    if spec.get("source") == "local" and spec.get("path"):
        return [spec["path"]]
    if spec.get("source") == "url":
        if name is None:  # the processbench section
            return list(processbench_paths(spec).values())
        return [downloaded_path(name, spec)]
    return []


def fewshot_inputs(spec: dict | None, name: str) -> list[str]:
    """The problems rule's few-shot demonstrations file (a dataset's `prompt.fewshot`): the copy rule
    fewshot_file makes, or none."""
    fs = ((spec or {}).get("prompt") or {}).get("fewshot") or {}
    return [fewshot_path(name, fs)] if fs else []


def fewshot_spec(config: dict, name: str) -> dict:
    """What rule fewshot_file's download depends on: the dataset's prompt.fewshot url and checksums."""
    return pinned_file_spec((dataset_spec(config, name).get("prompt") or {}).get("fewshot") or {})


def pinned_file_spec(spec: dict) -> dict:
    """What a download depends on (rule params), so editing `limit` or `fields` does not fetch again."""
    return {k: spec.get(k) for k in ("url", "sha256", "git_blob_sha1")}


def samples_per_problem(config: dict, dataset: str, policy: str | None = None) -> int:
    """Benchmarks are sampled once at the largest N evaluated on them (sample_n); training problems
    sampling.n times."""
    if dataset in config.get("benchmarks", {}):
        return sample_n(config, dataset, policy)
    return int(config["sampling"]["n"])


def _bon_n(config: dict) -> int:
    """N of Best-of-N: bon.n, else sampling.n."""
    return int((config.get("bon") or {}).get("n", config["sampling"]["n"]))


def dataset_problems(config: dict, name: str, policy: str | None = None) -> int | None:
    """Problems of a set as far as the config tells at DAG time (an upper bound: rows that fail to load
    only lower it): a generated set's `size`; else `rows`, the `subsample` size, `limit`; then the Best-of-N
    policy's `limit`. None when nothing bounds it (an unpinned Hub or local file without limit)."""
    spec = dataset_spec(config, name)
    if spec.get("source") == "reasoning_gym":  # data.load_dataset applies no subsample or limit to these
        n = spec.get("size")
    else:
        n = spec.get("rows")
        if spec.get("subsample"):
            n = int(spec["subsample"]["n"])
        if spec.get("limit"):
            n = int(spec["limit"]) if n is None else min(int(n), int(spec["limit"]))
    own = bon_policies(config)[policy or primary_policy(config)]["limit"]
    if own is not None:
        n = int(own) if n is None else min(int(n), int(own))
    return None if n is None else int(n)


def sized_shard_count(config: dict, section: str, dataset: str, policy: str | None = None) -> int:
    """Jobs of one problem set in a sharded stage (`section`: sampling, mc, judge): ceil(problems /
    <section>.problems_per_shard), at least 1 and at most <section>.shards; <section>.shards when
    problems_per_shard is null or the set's size is unknown at DAG time (dataset_problems). A 30-problem
    set thus loads a 72B model once, not 16 times."""
    most = int(config[section]["shards"])
    per = config[section].get("problems_per_shard")
    n = dataset_problems(config, dataset, policy) if per else None
    return most if n is None else max(1, min(most, -(-n // int(per))))


def sample_shard_count(config: dict, dataset: str, policy: str | None = None) -> int:
    """Sampling jobs of one problem set of a policy (sized_shard_count of the `sampling` section)."""
    return sized_shard_count(config, "sampling", dataset, policy)


def sample_shards(config: dict, dataset: str, policy: str | None = None) -> list[str]:
    """The shard files of one problem set (sample_shard_count jobs) of a Best-of-N policy (None: the primary):
    ungraded responses (rule grade_samples grades their merge)."""
    n = sample_shard_count(config, dataset, policy)
    return [f"results/{policy_dir(config, policy)}responses/{dataset}/shard{i}of{n}.parquet" for i in range(n)]


# -- Best-of-N policies and N (bon.policies, bon.more_n) ------------------------------------------------

# what a policy may set for itself; the rest of its sampling is the `sampling` section
POLICY_SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "system_prompt")


def bon_policies(config: dict) -> dict[str, dict]:
    """bon.policies in order, the primary first: name → {model, label, sampling (the `sampling` section
    with the policy's overrides), benchmarks (its subset, else every benchmark), limit, primary}. None
    configured: one policy named after roles.policy. The primary's files are results/samples/,
    results/scores/, results/metrics/bon/ (what labels, search, judges and the figures read); any other
    policy's live under results/policies/{name}/."""
    entries = (config.get("bon") or {}).get("policies") or {config["roles"]["policy"]: {}}
    every = list(config.get("benchmarks") or {})
    out = {}
    for i, (name, e) in enumerate(entries.items()):
        sampling = {**config["sampling"], **{k: e[k] for k in POLICY_SAMPLING_KEYS if e.get(k) is not None}}
        out[name] = {"model": e.get("model") or config["roles"]["policy"], "label": e.get("label") or name,
                     "sampling": sampling, "benchmarks": list(e.get("benchmarks") or []) or every,
                     "limit": e.get("limit"), "primary": i == 0}
    return out


def primary_policy(config: dict) -> str:
    """The first policy of bon.policies (roles.policy's name when none is configured)."""
    return next(iter(bon_policies(config)))


def policy_dir(config: dict, policy: str | None = None) -> str:
    """The part of a policy's paths after `results/`: '' for the primary, else 'policies/{name}/'."""
    return "" if policy is None or policy == primary_policy(config) else f"policies/{policy}/"


def policy_of_dir(config: dict, pdir: str) -> str:
    """The policy a `policy_dir` wildcard value names ('' → the primary)."""
    return pdir.split("/")[1] if pdir else primary_policy(config)


def policy_dir_regex(config: dict, policies: list[str] | None = None) -> str:
    """The `policy_dir` wildcard: policies/{name}/ of a secondary policy (of `policies`, default all), or
    empty for the primary (when it is one of `policies`)."""
    names = list(bon_policies(config)) if policies is None else list(policies)
    primary = primary_policy(config)
    alts = f"policies/(?:{wildcard_alternatives([p for p in names if p != primary])})/"
    return f"(?:{alts})?" if primary in names else alts


def bon_judge_policies(config: dict) -> list[str]:
    """The policies whose samples the LLM judges choose among: bon_judges.policies, else every policy;
    only those that sample a judged benchmark."""
    pols = bon_policies(config)
    judged = set(bon_judge_benchmarks(config))
    names = list((config.get("bon_judges") or {}).get("policies") or []) or list(pols)
    return [p for p in names if judged & set(pols[p]["benchmarks"])]


def bon_ns(config: dict, benchmark: str, policy: str | None = None) -> list[int]:
    """Every N a policy's benchmark is evaluated at, ascending: bon.n and each bon.more_n entry naming the
    benchmark and the policy (an entry without `policies`: the primary only); [] when the policy does
    not sample the benchmark."""
    pols = bon_policies(config)
    policy = policy or next(iter(pols))
    if benchmark not in pols[policy]["benchmarks"]:
        return []
    ns = {_bon_n(config)}
    for e in (config.get("bon") or {}).get("more_n") or []:
        if benchmark in e["benchmarks"] and policy in (e.get("policies") or [next(iter(pols))]):
            ns.add(int(e["n"]))
    return sorted(ns)


def sample_n(config: dict, benchmark: str, policy: str | None = None) -> int:
    """Responses sampled per problem of a benchmark: the largest N evaluated on it (every smaller N is
    evaluated on the first n samples of the same draws)."""
    ns = bon_ns(config, benchmark, policy)
    if not ns:
        raise ValueError(f"policy '{policy}' does not sample benchmark '{benchmark}' (bon.policies.{policy}.benchmarks)")
    return ns[-1]


def judge_sample_cap(config: dict, dataset: str) -> int | None:
    """How many samples per problem rule `judge` labels: a benchmark's first bon.n (Figure 6 judges the
    main Best-of-N samples; Table 10's larger N for the same benchmark is not judged), all of a problem set."""
    return _bon_n(config) if dataset in (config.get("benchmarks") or {}) else None


def bon_evaluations(config: dict) -> list[tuple[str, str, list[int]]]:
    """(policy, benchmark, Ns) of every sampled benchmark of every policy, the primary's first."""
    return [(p, b, bon_ns(config, b, p)) for p, spec in bon_policies(config).items() for b in spec["benchmarks"]]


def policy_path(config: dict, policy: str | None, rel: str) -> str:
    """results/{rel} of the primary policy, results/policies/{policy}/{rel} of another."""
    return f"results/{policy_dir(config, policy)}{rel}"


# -- labels and training sets --------------------------------------------------------------------------

def _norm_spec(spec: dict) -> dict:
    src = spec["source"]
    lt = spec.get("label_type", "hard") if src in ("mc", "consensus") else "hard"
    thr = float(spec.get("threshold", 0.0)) if (src == "mc" and lt == "hard") else None
    return {"source": src, "label_type": lt, "threshold": thr,
            "datasets": list(spec["datasets"]) if spec.get("datasets") else None}


def variants(config: dict) -> dict[str, dict]:
    """All training-set variants, declared and sweep, name → normalised spec (source, label_type,
    threshold, datasets). The MC threshold sweep adds `mc_hard_t{p}of{q}` unless a declared variant
    has the same definition, so no PRM is trained twice."""
    tcfg = config.get("trainsets", {}) or {}
    out: dict[str, dict] = {}
    for name, spec in (tcfg.get("variants") or {}).items():
        if spec.get("enabled") is False:  # switched off (overlays merge key by key and cannot delete one)
            continue
        s = _norm_spec(spec)
        if s["source"] not in TRAINSET_SOURCES:
            raise ValueError(f"config error at `trainsets.variants.{name}.source`: must be one of {TRAINSET_SOURCES}")
        if s["source"] == "consensus":
            s["threshold"] = float((config.get("consensus") or {}).get("threshold", 0.0)) if s["label_type"] == "hard" else None
        out[name] = s
    for t in tcfg.get("mc_threshold_sweep") or []:
        spec = {"source": "mc", "label_type": "hard", "threshold": float(as_fraction(t)), "datasets": None}
        if any(v == spec for v in out.values()):
            continue
        out[sweep_variant_name(t)] = spec
    return out


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
    if soft and (config.get("mc") or {}).get("protocol", "early") != "binary":
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


def variant_datasets(config: dict, name: str) -> list[str]:
    spec = variants(config)[name]
    names = spec["datasets"] or list((config.get("problems") or {}).keys())
    unknown = [d for d in names if d not in (config.get("problems") or {})]
    if unknown:
        raise ValueError(f"config error at `trainsets.variants.{name}.datasets`: unknown problem set(s) {unknown}")
    return names


def role_model(config: dict, role: str) -> str:
    """Model name for a role; the completer and the judge default to the policy."""
    roles = config["roles"]
    return roles.get(role) or roles["policy"]


def label_shard_paths(config: dict, kind: str, dataset: str) -> list[str]:
    """Shard tables of `kind` (mc / judge) for one problem set of the primary policy's samples, as many as
    sized_shard_count gives (<kind>.shards, fewer for a small set with <kind>.problems_per_shard)."""
    n = sized_shard_count(config, kind, dataset)
    return [f"results/labels/{kind}/{dataset}/shard{i}of{n}.parquet" for i in range(n)]


def eval_set_paths(config: dict) -> list[str]:
    """Every evaluation problem set (benchmarks + ProcessBench cases and its dev split), for
    decontaminating human labels."""
    paths = [f"results/problems/{b}.parquet" for b in config.get("benchmarks") or {}]
    if config.get("processbench"):
        paths.append("results/processbench/cases.parquet")
    if processbench_dev(config):
        paths.append(PROCESSBENCH_DEV)
    return paths


# -- ProcessBench dev split and model-free baselines -----------------------------------------------------

PROCESSBENCH_DEV = "results/processbench/dev.parquet"
# model-free ProcessBench predictors reported beside every PRM (metrics.baseline_predictions kinds)
PROCESSBENCH_BASELINES = ("always_correct", "first_step", "structure")


def processbench_dev(config: dict) -> bool:
    """Whether the run has a ProcessBench dev split (constructed sets with `processbench.constructed.dev`);
    without one, tuned choices are cross-fitted over folds of the evaluation cases."""
    pb = config.get("processbench") or {}
    return pb.get("source", "constructed") == "constructed" and bool((pb.get("constructed") or {}).get("dev"))


def trainset_inputs(config: dict, variant: str) -> dict:
    """Named inputs of one variant's trainset rule."""
    spec = variants(config)[variant]
    src = spec["source"]
    if src in ("human", "math_shepherd"):  # labelled once for every variant: rules human_labels, math_shepherd_labels
        return {src: f"results/labels/{src}.parquet"}
    ds = variant_datasets(config, variant)
    inputs = {"samples": [f"results/samples/{d}.parquet" for d in ds]}
    if src in ("mc", "consensus"):
        inputs["mc"] = [f"results/labels/mc/{d}.parquet" for d in ds]
    if src == "judge":
        inputs["judge"] = [f"results/labels/judge/{d}.parquet" for d in ds]
    if src == "consensus":
        inputs["consensus"] = [f"results/labels/consensus/{d}.parquet" for d in ds]
    return inputs


# -- training ------------------------------------------------------------------------------------------

def training_settings(config: dict, basedir: str | Path) -> dict:
    """The `training` section, with a DeepSpeed config path not found in the working directory read
    from the workflow (config/deepspeed/...)."""
    train = dict(config["training"])
    if train.get("deepspeed") and not Path(train["deepspeed"]).exists():
        train["deepspeed"] = str(Path(basedir) / train["deepspeed"])
    return train


def training_params(train: dict) -> dict:
    """The training settings a PRM depends on (rule params): resources and bookkeeping left out."""
    return {k: v for k, v in train.items() if k not in TRAINING_RESOURCE_KEYS}


# Bytes per base parameter in one checkpoint of a full fine-tune under ZeRO-3: the 16-bit weights rank 0
# gathers for the model file (2) and the partitions the ranks write (bf16 weights 2, fp32 master 4, Adam's
# two moments 4 + 4). A 7.6B base: ~122 GB.
CHECKPOINT_BYTES_PER_PARAM = 16
# ASSUMED training throughput per GPU for the longest optimizer step (bf16; ~10% of an H100's dense peak,
# low on purpose: too long a grace costs a few minutes at the time limit, too short loses the checkpoint)
STEP_TFLOPS_PER_GPU = 100
# transformers' CheckpointManager waits this long after SIGTERM before it asks for the checkpoint
JIT_KILL_WAIT_S = 3


def checkpoint_gb(train: dict) -> float:
    """GB of one training checkpoint (full fine-tuning, ZeRO-3 states) of a `base_params_b` base."""
    return float(train["base_params_b"]) * CHECKPOINT_BYTES_PER_PARAM


def jit_grace_seconds(train: dict) -> int:
    """Seconds the JIT checkpoint needs between SIGTERM and the kill. transformers (enable_jit_checkpoint):
    "grace period >= longest iteration time + checkpoint save time". The longest optimizer step is every
    sequence at max_length (forward + backward, + the recomputed forward with gradient checkpointing) at
    STEP_TFLOPS_PER_GPU; the save is checkpoint_gb at `checkpoint_write_gbps`. × 1.5, in 30 s steps."""
    params = float(train["base_params_b"]) * 1e9
    n_gpus = max(1, int(train["gpus"]))
    tokens = int(train["batch_size"]) * int(train["gradient_accumulation_steps"]) * n_gpus * int(train["max_length"])
    flops = (8 if train["gradient_checkpointing"] else 6) * params * tokens
    step = flops / (n_gpus * STEP_TFLOPS_PER_GPU * 1e12)
    save = checkpoint_gb(train) / float(train["checkpoint_write_gbps"])
    return int(math.ceil((JIT_KILL_WAIT_S + step + save) * 1.5 / 30) * 30)


def training_slurm_extra(config: dict) -> str:
    """sbatch options of a training job: `--signal=TERM@<grace>`, so SLURM sends SIGTERM that long before
    the time limit and transformers' JIT checkpoint (training.jit_checkpoint) is written before the kill;
    the retry (more time) resumes from it. Only for GPU training with checkpoints: the CPU default and the
    rehearsal get none."""
    train = config["training"]
    if not (int(train["gpus"]) > 0 and train["jit_checkpoint"] and float(train["save_steps"]) > 0):
        return ""
    if train.get("base_params_b") is None:
        raise ValueError("training.base_params_b: set the base model's parameters (billions) to size the "
                         "SIGTERM grace of GPU training's JIT checkpoint (or set training.jit_checkpoint: false)")
    grace = jit_grace_seconds(train)
    limit = 60 * min(int(train["runtime"]), int(config["cluster"]["max_runtime"]))
    if 2 * grace > limit:
        raise ValueError(f"training.runtime: {limit // 60} min leaves no room for the JIT checkpoint's "
                         f"{grace} s grace (training.base_params_b, training.checkpoint_write_gbps)")
    return f"--signal=TERM@{grace}"


# -- evaluation ----------------------------------------------------------------------------------------

def trained_variants(config: dict) -> list[str]:
    """Training-set variants scored as PRMs (one trained PRM each); none when `prms.include_trained` is off."""
    if not config.get("prms", {}).get("include_trained", True):
        return []
    return list(variants(config))


def resolve_prm_specs(config: dict) -> dict[str, dict]:
    """All PRMs to evaluate, name → spec: one per training-set variant (named after it, model under
    results/prms/{variant}) plus the released models of `prms.models` (model entries under `models`)."""
    cfg = config.get("prms", {}) or {}
    out: dict[str, dict] = {}
    for v in trained_variants(config):
        out[v] = {"adapter": "trained", "path": f"results/prms/{v}", "max_length": cfg.get("max_length"),
                  "params": {}, "threshold": None, "trained": True}
        if cfg.get("trained_backend") == "vllm":
            tr = config.get("training") or {}
            tp = tr["gpus_scoring"] if tr.get("gpus_scoring") is not None else gpus(config, tr.get("base", "policy"))
            base = model_entry(config, tr.get("base", "policy"))
            out[v].update(backend="vllm", vllm={"tensor_parallel_size": max(1, int(tp)),
                                                "gpu_memory_utilization": base.get("gpu_memory_utilization", 0.9)})
    for name, e in (cfg.get("models") or {}).items():
        if name in out:
            raise ValueError(f"config error at `prms.models.{name}`: name clashes with a trained PRM variant")
        ent = model_entry(config, e["model"])
        spec = {"adapter": e["adapter"], "model": e["model"], "path": model_path(config, e["model"]),
                "dtype": ent.get("dtype"),
                "trust_remote_code": bool(ent.get("trust_remote_code", False)),
                "max_length": e.get("max_length", cfg.get("max_length")) or ent.get("max_model_len"),
                "params": dict(e.get("params") or {}), "threshold": e.get("threshold"), "trained": False,
                "label": e.get("label", name)}
        if e.get("backend") == "vllm":  # only then: a transformers spec (and its jobs' params) stays as it was
            spec.update(backend="vllm", vllm={"tensor_parallel_size": int(ent.get("tensor_parallel_size", 1)),
                                              "gpu_memory_utilization": ent.get("gpu_memory_utilization", 0.9)})
        if e["adapter"] == "eurus":
            if not e.get("ref_model"):
                raise ValueError(f"config error at `prms.models.{name}.ref_model`: adapter eurus needs a reference model")
            ref = model_entry(config, e["ref_model"])
            spec.update(ref_model=e["ref_model"], ref_path=model_path(config, e["ref_model"]), ref_dtype=ref.get("dtype"),
                        ref_trust_remote_code=bool(ref.get("trust_remote_code", False)))
        out[name] = spec
    return out


def spec_inputs(config: dict, spec: dict) -> list[str]:
    """What a scoring job needs on disk: the trained PRM directory, or the model directories (converted
    embedded model or linked Hub snapshot) of the PRM and its reference model."""
    if spec["trained"]:
        return [spec["path"]]
    entries = [spec["model"]] + ([spec["ref_model"]] if spec.get("ref_model") else [])
    return [p for e in entries for p in model_input(config, e)]


def shared_features(config: dict) -> bool:
    """Head-only trained PRMs share one frozen base: its step features are computed once per text table."""
    return bool(config["prms"]["shared_base_features"]) and config["training"]["mode"] == "head"


def features_input(config: dict, specs: dict, prm: str, source: str) -> list[str]:
    """Head-only trained PRMs: the frozen base's step features of results/{source}.parquet (rule
    step_features)."""
    return [f"results/features/{source}.safetensors"] if shared_features(config) and specs[prm]["trained"] else []


def scoring_gpus(config: dict, specs: dict, prm: str) -> int:
    """GPUs of a scoring job: none when only a head is applied to stored features; a trained PRM gets
    training.gpus_scoring, else its base model's tensor-parallel size (load_prm spreads it over them)."""
    if features_input(config, specs, prm, "x"):
        return 0
    return _prm_gpus(config, specs, prm)


def _prm_gpus(config: dict, specs: dict, prm: str) -> int:
    """GPUs of a job that loads the whole PRM: a trained PRM gets training.gpus_scoring, else its base
    model's tensor-parallel size."""
    if specs[prm]["trained"]:
        asked = config["training"].get("gpus_scoring")
        return int(asked) if asked is not None else gpus(config, config["training"]["base"])
    return gpus(config, specs[prm]["model"])


def score_shards(config: dict, prm: str | None = None) -> int:
    """Scoring jobs per PRM (and policy) over problem shards (prms.shards); 1 = one job writes the tables.
    With `prm`: that PRM's count; prms.shard_prms (when set) lists the PRMs split, the others get one
    shard (`shard0of1`) through the same merge, so the rules keep one file layout. Without `prm`: the layout's."""
    prms = config.get("prms") or {}
    only = prms.get("shard_prms")
    if prm is not None and only is not None and prm not in only:
        return 1
    return int(prms.get("shards", 1))


def score_outputs(config: dict, tables: list[str]) -> list[str]:
    """A scoring job's outputs for tables given as `results/...` paths without `.parquet` (wildcards kept):
    the tables themselves when unsharded, else each table's `/shard{shard}of{nshards}.parquet` (joined by
    rules merge_sample_scores / merge_processbench_scores)."""
    suffix = "" if score_shards(config) == 1 else "/shard{shard}of{nshards}"
    return [f"{t}{suffix}.parquet" for t in tables]


def score_log(config: dict, rule: str, name: str) -> str:
    """The log of a scoring job (`name`: its wildcards, e.g. '{policy_dir}{prm}'), per shard when sharded."""
    return f"logs/{rule}/{name}" + ("" if score_shards(config) == 1 else "/shard{shard}of{nshards}") + ".log"


def score_shard_paths(config: dict, tables: list[str], wildcards: dict | None = None) -> list[str]:
    """Every shard file of these tables (paths without `.parquet`), the merge rules' inputs. With a merge
    job's `wildcards` ({prm}, {policy_dir}): filled in, and that PRM's shard count (prms.shard_prms)."""
    if wildcards is None:
        n = score_shards(config)
    else:
        n = score_shards(config, wildcards["prm"])
        tables = [t.format(**wildcards) for t in tables]
    return [f"{t}/shard{i}of{n}.parquet" for t in tables for i in range(n)]


def scoring_runtime(config: dict, minutes: int, n_gpus: int, attempt: int, multi_gpu: int = 1,
                    prm: str | None = None) -> int:
    """Minutes of one scoring job: `minutes` for all of a PRM's inputs (× `multi_gpu` for a PRM spread over
    several GPUs), split over the PRM's shards (prms.shards; at least 60: loading a 72B model takes minutes), × the attempt, so a job killed
    at its limit is resubmitted with more time (retries), within cluster.max_runtime."""
    whole = int(minutes) * (int(multi_gpu) if n_gpus > 1 else 1)
    return runtime(config, max(60, -(-whole // score_shards(config, prm))), attempt)


# -- ProcessBench critics (critics.judges) ---------------------------------------------------------------

# every setting a critic takes from the `critics` section unless its own entry overrides it
CRITIC_SETTINGS = ("n", "temperature", "top_p", "top_k", "max_tokens", "seed", "system_prompt", "template",
                   "template_path", "force_answer", "force_truncated", "parse")
OFFICIAL_CRITIC_TEMPLATE = "resources/templates/critique_template.txt"  # rule critique_template


def critic_specs(config: dict) -> dict[str, dict]:
    """critic name → {model, every CRITIC_SETTINGS value} of every enabled critic: the section's values with
    the critic's own overrides. n = 1 is greedy: temperature 0, top_p 1, no top_k (what the engine is given)."""
    sec = config.get("critics") or {}
    out = {}
    for name, entry in (sec.get("judges") or {}).items():
        if entry.get("enabled") is False:  # switched off (overlays merge key by key and cannot delete one)
            continue
        spec = {"model": entry["model"], **{k: entry.get(k, sec.get(k)) for k in CRITIC_SETTINGS}}
        if int(spec["n"]) == 1:
            spec.update(temperature=0.0, top_p=1.0, top_k=None)
        out[name] = spec
    return out


def critic_generation_sources(specs: dict[str, dict]) -> dict[str, str]:
    """critic → the critic whose critiques it reads: the first generating critic (in config order) with
    the same model and sampling, template and prompt settings that either forces answers exactly as it
    does or, when it forces none, forces any (the forced continuations are cut off again); itself when
    there is none. So critics that differ only in `parse` or in not forcing share one generation job."""
    force = ("force_answer", "force_truncated")
    out: dict[str, str] = {}
    for name, spec in specs.items():
        key = [repr(spec[k]) for k in ("model", *CRITIC_SETTINGS) if k != "parse" and k not in force]
        out[name] = next((g for g in out if out[g] == g and key == [
            repr(specs[g][k]) for k in ("model", *CRITIC_SETTINGS) if k != "parse" and k not in force]
            and (not spec["force_answer"] or all(spec[f] == specs[g][f] for f in force))), name)
    return out


def critic_shards(config: dict) -> int:
    """Jobs per generating critic over ProcessBench case shards (critics.shards); 1 = one job writes the table."""
    return int((config.get("critics") or {}).get("shards", 1))


def critic_minutes(spec: dict) -> int:
    """Minutes of a critic's whole generation (before sharding): 3,400 cases x 8 critiques at paper scale,
    ~1k tokens each (~3 h for a 72B on TP-4); critiques longer than ProcessBench's 8,192 tokens (QwQ:
    32,768 allowed, 4-8k written) up to ~20 h."""
    return 480 * (3 if int(spec["max_tokens"]) > 8192 else 1)


def critic_template_input(spec: dict) -> list[str]:
    """The template file a critic job reads: the fetched official text, a template_path, or none."""
    if spec["template"] == "official":
        return [OFFICIAL_CRITIC_TEMPLATE]
    return [spec["template_path"]] if spec.get("template_path") else []


def critic_setting(spec: dict) -> str:
    """One line naming what a critic row ran with (the table notes)."""
    if int(spec["n"]) == 1:
        sampling = "greedy"
    else:
        sampling = f"majority of {spec['n']} samples, T {spec['temperature']:g}, top_p {spec['top_p']:g}" + (
            f", top_k {spec['top_k']}" if spec.get("top_k") else "")
    template = ("official critique_template.txt" if spec["template"] == "official" else
                f"project template{' ' + str(spec['template_path']) if spec.get('template_path') else ''}")
    forced = ", unparsable answers forced" + (" (cut-off ones too)" if spec["force_truncated"] else "") \
        if spec["force_answer"] else ""
    return (f"{spec['model']}: {template}, {spec['parse']} parse, {sampling}, max {spec['max_tokens']} tokens, "
            f"seed {spec['seed']}{forced}")


# -- PRM-guided greedy search (workflow/rules/search.smk) ----------------------------------------------

def search_prms(config: dict, specs: dict) -> list[str]:
    """The PRMs that guide a search (search.prms), each one the workflow scores (`specs`)."""
    names = list((config.get("search") or {}).get("prms") or [])
    for i, n in enumerate(names):
        if n not in specs:
            raise ValueError(f"config error at `search.prms.{i}`: '{n}' is not a PRM of this run ({', '.join(specs)})")
    return names


def search_policy(config: dict) -> str:
    """The model that proposes the steps: search.policy, else roles.policy."""
    return (config.get("search") or {}).get("policy") or config["roles"]["policy"]


def search_policy_entry(config: dict) -> dict:
    """The policy's model entry in a search job: vLLM's memory share is search.gpu_memory_utilization
    (the PRM shares the GPUs) unless that is null."""
    entry = model_entry(config, search_policy(config))
    share = (config.get("search") or {}).get("gpu_memory_utilization")
    if share is not None:
        entry["gpu_memory_utilization"] = share
    return entry


def search_benchmarks(config: dict) -> list[str]:
    return list((config.get("search") or {}).get("benchmarks") or []) or list(config.get("benchmarks") or {})


def search_n(config: dict) -> int:
    """N of the search baselines: search.n, else bon.n."""
    n = (config.get("search") or {}).get("n")
    return int(n) if n is not None else _bon_n(config)


def search_reuses_samples(config: dict) -> bool:
    """The Best-of-N samples (and their scores) are the search baselines' when the search policy is the
    sampling policy and N is bon.n: nothing is sampled or scored again."""
    return search_policy(config) == config["roles"]["policy"] and search_n(config) == _bon_n(config)


def search_samples_path(config: dict, benchmark: str) -> str:
    return (f"results/samples/{benchmark}.parquet" if search_reuses_samples(config)
            else f"results/search/samples/{benchmark}.parquet")


def search_orm_path(config: dict, benchmark: str) -> str | None:
    orm = (config.get("search") or {}).get("orm")
    if orm is None:
        return None
    return (f"results/scores/{orm}/{benchmark}.parquet" if search_reuses_samples(config)
            else f"results/search/scores/{orm}/{benchmark}.parquet")


def search_shards(config: dict) -> int:
    """Jobs per guiding PRM over problem shards (search.shards); 1 = one job writes the tables."""
    return int((config.get("search") or {}).get("shards", 1))


def search_outputs(config: dict, benchmarks: list[str]) -> list[str]:
    """search_greedy's outputs (wildcard {prm}): results/search/{prm}/{benchmark}.parquet unsharded, else each
    benchmark's `/shard{shard}of{nshards}.parquet` (joined by rule merge_search)."""
    suffix = "" if search_shards(config) == 1 else "/shard{shard}of{nshards}"
    return [f"results/search/{{prm}}/{b}{suffix}.parquet" for b in benchmarks]


def search_log(config: dict) -> str:
    return "logs/search_greedy/{prm}" + ("" if search_shards(config) == 1 else "/shard{shard}of{nshards}") + ".log"


def search_shard_paths(config: dict, benchmarks: list[str]) -> list[str]:
    """Every shard file of one PRM's searches (wildcard {prm}), rule merge_search's inputs."""
    n = search_shards(config)
    return [f"results/search/{{prm}}/{b}/shard{i}of{n}.parquet" for b in benchmarks for i in range(n)]


# a search job's work, all searched benchmarks, attempt 1: a PRM on one GPU, × 3 for one spread over
# several (transformers' device_map runs one GPU at a time: the 72B PRM is est. 20-35 h of the search)
SEARCH_MINUTES, SEARCH_MULTI_GPU, SEARCH_FLOOR = 720, 3, 120


def search_minutes(config: dict, specs: dict, prm: str) -> int:
    """Minutes of one search job on attempt 1 (plan.runtime multiplies by the attempt and caps): the
    PRM's work split over search.shards, at least SEARCH_FLOOR (each job loads the policy and the PRM:
    a 72B one takes minutes from a shared file system)."""
    whole = SEARCH_MINUTES * (SEARCH_MULTI_GPU if search_gpus(config, specs, prm) > 1 else 1)
    return max(SEARCH_FLOOR, -(-whole // search_shards(config)))


def search_gpus(config: dict, specs: dict, prm: str) -> int:
    """GPUs of a search job: the policy and the whole PRM (never stored features: candidates are new
    text) share them, vLLM taking search.gpu_memory_utilization of each, so the larger of the two."""
    return max(gpus(config, search_policy(config)), _prm_gpus(config, specs, prm))


# -- LLM-as-a-judge Best-of-N (verifiers.smk) ----------------------------------------------------------
BON_JUDGE_MODES = ("pointwise", "pairwise")
# what a judge job's results depend on (bon_judges.* with the judge's own overrides)
BON_JUDGE_SETTING_KEYS = ("temperature", "top_p", "max_tokens", "seed", "system_prompt", "force_answer",
                          "force_truncated", "guided")


def bon_judge_benchmarks(config: dict) -> list[str]:
    """The benchmarks the judges choose on: bon_judges.benchmarks, else every Best-of-N benchmark."""
    return list((config.get("bon_judges") or {}).get("benchmarks") or []) or list(config.get("benchmarks") or {})


def bon_judge_model(config: dict, judge: str) -> str:
    """The model entry a judge runs (bon_judges.judges.<judge>.model)."""
    return config["bon_judges"]["judges"][judge]["model"]


def bon_judge_settings(config: dict, judge: str) -> dict:
    """A judge's settings: the bon_judges.* values with the judge's overrides."""
    bj = config["bon_judges"]
    own = bj["judges"][judge]
    return {k: own.get(k, bj.get(k)) for k in BON_JUDGE_SETTING_KEYS}


def bon_judge_template(config: dict, mode: str, package_dir: str | Path) -> str:
    """The prompt file a judge job reads: bon_judges.<mode>_template, else the package's built-in one."""
    return (config.get("bon_judges") or {}).get(f"{mode}_template") or str(
        Path(package_dir) / "prompts" / f"bon_judge_{mode}.txt")


def bon_judge_names(config: dict) -> list[str]:
    """The enabled judges (bon_judges.judges.<name>.enabled, default true), in config order."""
    judges = (config.get("bon_judges") or {}).get("judges") or {}
    return [j for j, e in judges.items() if (e or {}).get("enabled") is not False]


def bon_judge_runs(config: dict) -> list[tuple[str, str]]:
    """(judge, mode) of every judge job (enabled judges only)."""
    bj = config.get("bon_judges") or {}
    return [(j, m) for j in bon_judge_names(config) for m in bj.get("modes") or BON_JUDGE_MODES]


def bon_judge_shards(config: dict) -> int:
    """Jobs per (policy, judge, mode) over problem shards (bon_judges.shards); 1 = one job writes the tables."""
    return int((config.get("bon_judges") or {}).get("shards", 1))


def bon_judge_minutes(config: dict, judge: str) -> int:
    """Minutes of one (policy, judge, mode)'s whole judging (before sharding): ~13.5k problems x 8
    responses at paper scale, 500-800 tokens a judgement for a 72B on TP-4 (up to ~10 h); a reasoning judge
    allowed more than 8,192 tokens (QwQ: 16,384; 1.5-4k written at 3-6k tokens/s) up to ~40 h."""
    return 720 * (4 if int(bon_judge_settings(config, judge)["max_tokens"]) > 8192 else 1)


# -- problem shards of the LLM-judge jobs (bon_judges.shards, critics.shards) -----------------------------
# The scoring jobs' layout (score_outputs): a sharded job writes `<table>/shard{shard}of{nshards}.parquet`
# for each of its tables, a local merge rule joins them into `<table>.parquet` (prm_lessons.shards).

def shard_outputs(tables: list[str], nshards: int) -> list[str]:
    """A job's outputs for tables given as paths without `.parquet` (wildcards kept): the tables when
    unsharded, else each table's `/shard{shard}of{nshards}.parquet`."""
    suffix = "" if int(nshards) == 1 else "/shard{shard}of{nshards}"
    return [f"{t}{suffix}.parquet" for t in tables]


def shard_files(tables: list[str], nshards: int) -> list[str]:
    """Every shard file of these tables (paths without `.parquet`): a merge rule's inputs."""
    return [f"{t}/shard{i}of{nshards}.parquet" for t in tables for i in range(int(nshards))]


def shard_log(rule: str, name: str, nshards: int) -> str:
    """The log of a job (`name`: its wildcards), per shard when sharded."""
    return f"logs/{rule}/{name}" + ("" if int(nshards) == 1 else "/shard{shard}of{nshards}") + ".log"


def shard_minutes(minutes: int, nshards: int, floor: int = 60) -> int:
    """Base minutes of one shard job: the whole job's split over the shards, at least `floor` (loading a
    32-72B model and capturing graphs takes minutes); unsharded, the whole. plan.runtime then multiplies
    by the attempt and caps at cluster.max_runtime."""
    n = int(nshards)
    return int(minutes) if n == 1 else max(int(floor), -(-int(minutes) // n))


# ------------------------------------------------------------------------------------------------
# Analysis: the resolved analysis.* values the artifact rules get, and which artifacts this config plans
# ------------------------------------------------------------------------------------------------

def _table10(config: dict) -> tuple[int | None, list[str]]:
    """(N, benchmarks) of Table 10: analysis.table10, else the largest N of bon.more_n and its benchmarks;
    (None, []) when this config evaluates no larger N."""
    t10 = (config.get("analysis") or {}).get("table10") or {}
    more = list((config.get("bon") or {}).get("more_n") or [])
    n = t10.get("n") or (max(int(e["n"]) for e in more) if more else None)
    if n is None:
        return None, []
    if t10.get("benchmarks"):
        return int(n), list(t10["benchmarks"])
    entry = next((e for e in more if int(e["n"]) == int(n)), None)
    return int(n), list(entry["benchmarks"]) if entry else list(config.get("benchmarks") or {})


def analysis_settings(config: dict) -> dict:
    """The analysis.* values the artifact rules get (prm_lessons.artifacts.registry.ARTIFACT_PARAMS), with
    the defaults resolved: `n` (analysis.n, else bon.n: the N of the main tables when bon.csv holds several),
    `policy` and `second_policy` (policy names; None: no second policy), `policy_labels` (name → label of
    every policy), `table10` ({n, benchmarks}; n None: not planned), `chinese_benchmarks`."""
    a = dict(config.get("analysis") or {})
    pols = bon_policies(config)
    policy = a.get("policy") or next(iter(pols))
    second = a.get("second_policy") or next((p for p in pols if p != policy), None)
    n10, b10 = _table10(config)
    return {**a, "n": a.get("n") or _bon_n(config), "policy": policy, "second_policy": second,
            "policy_labels": {p: str((s or {}).get("label") or p) for p, s in pols.items()},
            "table10": {"n": n10, "benchmarks": b10},
            "chinese_benchmarks": list(a.get("chinese_benchmarks") or [])}


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
        own = (pols.get(s["second_policy"]) or {}).get("benchmarks")
        if own and not set(own) & set(chinese):
            out["table16"] = (f"the second policy '{s['second_policy']}' samples none of "
                              f"analysis.chinese_benchmarks {chinese} (bon.policies.{s['second_policy']}.benchmarks)")
    return out
