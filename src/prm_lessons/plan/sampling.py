"""Plan stage: data and sampling (dataset specs, download inputs, problems per set, sampling shards)."""
from __future__ import annotations

from ..data.processbench import processbench_paths
from ..data.sources import downloaded_path
from ..generation.fewshot import fewshot_path
from .data_policies import sampler, sampling_dir
from .policies import sample_n

# keys added after runs existed, at the value that reproduces those runs' outputs (sampling.seed_mode, mc.lanes):
# left out of a job's params at that value, so adding them reruns no finished job (Snakemake's params trigger
# compares the whole dict); the rule functions read them with the same default
LATER_DEFAULTS = {"seed_mode": "per_request", "lanes": 1}


def stable_params(section: dict) -> dict:
    """`section` without the LATER_DEFAULTS keys that hold their default value."""
    return {k: v for k, v in section.items() if not (k in LATER_DEFAULTS and v == LATER_DEFAULTS[k])}


def dataset_spec(config: dict, name: str) -> dict:
    """The spec of a dataset named under ``problems:`` or ``benchmarks:`` (names must not clash)."""
    found = [sec for sec in ("problems", "benchmarks") if name in config.get(sec, {})]
    if not found:
        raise KeyError(f"dataset '{name}' is not defined under `problems` or `benchmarks`")
    if len(found) > 1:
        raise ValueError(f"dataset name '{name}' is defined under both `problems` and `benchmarks`")
    return config[found[0]][name]


def local_source_inputs(spec: dict | None, name: str | None = None) -> list[str]:
    """Rule inputs for a spec: its local file or directory (so replacing it reruns the rule), the
    downloaded copy for `source: url` (made by rule benchmark_file / processbench_file), else none."""
    spec = spec or {}
    if spec.get("source") == "mix":  # its local parts' files (a mix takes no url part)
        return [f for p in spec.get("parts", {}).values() for f in local_source_inputs(p, name)]
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
    sampling.n times, or the data policy's `n` (data_policies)."""
    if dataset in config.get("benchmarks", {}):
        return sample_n(config, dataset, policy)
    return int(sampler(config, dataset, policy)["n"] or config["sampling"]["n"])


def dataset_problems(config: dict, name: str, policy: str | None = None) -> int | None:
    """Problems of a set as far as the config tells at DAG time (an upper bound: rows that fail to load
    only lower it): a generated set's `size`; else `rows`, the `subsample` size, `limit`; then the Best-of-N
    policy's `limit` (a training set's: the data policy's, plan.sampler). None when nothing bounds it (an
    unpinned Hub or local file without limit)."""
    n = _entry_problems(dataset_spec(config, name))
    own = sampler(config, name, policy)["limit"]
    if own is not None:
        n = int(own) if n is None else min(int(n), int(own))
    return None if n is None else int(n)


def _entry_problems(spec: dict) -> int | None:
    """Problems of one dataset entry as far as its config tells (dataset_problems), None when unbounded."""
    if spec.get("source") == "mix":  # the sum of its parts', unknown if one part's is
        counts = [_entry_problems(p or {}) for p in spec.get("parts", {}).values()]
        return None if not counts or None in counts else sum(counts)
    if spec.get("source") == "reasoning_gym":  # data.load_dataset applies no subsample or limit to these
        return spec.get("size")
    n = spec.get("rows")
    if spec.get("subsample"):
        n = int(spec["subsample"]["n"])
    if spec.get("limit"):
        n = int(spec["limit"]) if n is None else min(int(n), int(spec["limit"]))
    return n


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
    """The shard files of one problem set (sample_shard_count jobs) of a Best-of-N policy (None: the primary)
    or of a mixed data policy (plan.sampling_dir): ungraded responses (rule grade_samples grades their merge)."""
    n = sample_shard_count(config, dataset, policy)
    return [f"results/{sampling_dir(config, policy)}responses/{dataset}/shard{i}of{n}.parquet" for i in range(n)]
