"""Plan stage: PRM-guided greedy search (workflow/rules/search.smk)."""
from __future__ import annotations

from ..config import model_entry
from .base import shard_files, shard_log, shard_minutes, shard_outputs
from .evaluation import prm_gpus
from .models import gpus
from .policies import bon_n


def search_prms(config: dict, specs: dict) -> list[str]:
    """The PRMs that guide a search (search.prms), each one the workflow scores (`specs`)."""
    names = list(config.get("search", {}).get("prms", []))
    for i, n in enumerate(names):
        if n not in specs:
            raise ValueError(f"config error at `search.prms.{i}`: '{n}' is not a PRM of this run ({', '.join(specs)})")
    return names


def search_policy(config: dict) -> str:
    """The model that proposes the steps: search.policy, else roles.policy."""
    return config.get("search", {}).get("policy") or config["roles"]["policy"]


def search_policy_entry(config: dict) -> dict:
    """The policy's model entry in a search job: vLLM's memory share is search.gpu_memory_utilization
    (the PRM shares the GPUs) unless that is null."""
    entry = model_entry(config, search_policy(config))
    share = config.get("search", {}).get("gpu_memory_utilization")
    if share is not None:
        entry["gpu_memory_utilization"] = share
    return entry


def search_benchmarks(config: dict) -> list[str]:
    return list(config.get("search", {}).get("benchmarks", [])) or list(config.get("benchmarks", {}))


def search_n(config: dict) -> int:
    """N of the search baselines: search.n, else bon.n."""
    n = config.get("search", {}).get("n")
    return int(n) if n is not None else bon_n(config)


def search_reuses_samples(config: dict) -> bool:
    """The Best-of-N samples (and their scores) are the search baselines' when the search policy is the
    sampling policy and N is bon.n: nothing is sampled or scored again."""
    return search_policy(config) == config["roles"]["policy"] and search_n(config) == bon_n(config)


def search_samples_path(config: dict, benchmark: str) -> str:
    return (f"results/samples/{benchmark}.parquet" if search_reuses_samples(config)
            else f"results/search/samples/{benchmark}.parquet")


def search_greedy_path(config: dict, benchmark: str) -> str | None:
    """The greedy response per problem behind Table 8's pass@1 (search.pass1: greedy); None for `mean`."""
    if config.get("search", {}).get("pass1", "mean") != "greedy":
        return None
    return f"results/search/greedy/{benchmark}.parquet"


def greedy_sampling(config: dict) -> dict:
    """The sampling settings of the greedy pass@1 responses: `sampling`'s, decoded greedily (temperature
    0, top_p 1); one response per problem."""
    return {**config["sampling"], "temperature": 0.0, "top_p": 1.0, "n": 1}


def search_orm_path(config: dict, benchmark: str) -> str | None:
    orm = config.get("search", {}).get("orm")
    if orm is None:
        return None
    return (f"results/scores/{orm}/{benchmark}.parquet" if search_reuses_samples(config)
            else f"results/search/scores/{orm}/{benchmark}.parquet")


def search_shards(config: dict) -> int:
    """Jobs per guiding PRM over problem shards (search.shards); 1 = one job writes the tables."""
    return int(config.get("search", {}).get("shards", 1))


def search_outputs(config: dict, benchmarks: list[str]) -> list[str]:
    """search_greedy's outputs (wildcard {prm}): results/search/{prm}/{benchmark}.parquet unsharded, else each
    benchmark's `/shard{shard}of{nshards}.parquet` (joined by rule merge_search)."""
    return shard_outputs([f"results/search/{{prm}}/{b}" for b in benchmarks], search_shards(config))


def search_log(config: dict) -> str:
    return shard_log("search_greedy", "{prm}", search_shards(config))


def search_shard_paths(config: dict, benchmarks: list[str]) -> list[str]:
    """Every shard file of one PRM's searches (wildcard {prm}), rule merge_search's inputs."""
    return shard_files([f"results/search/{{prm}}/{b}" for b in benchmarks], search_shards(config))


# a search job's work, all searched benchmarks, attempt 1: a PRM on one GPU, × 3 for one spread over
# several (transformers' device_map runs one GPU at a time: the 72B PRM is est. 20-35 h of the search)
SEARCH_MINUTES, SEARCH_MULTI_GPU, SEARCH_FLOOR = 720, 3, 120


def search_minutes(config: dict, specs: dict, prm: str) -> int:
    """Minutes of one search job on attempt 1 (plan.runtime multiplies by the attempt and caps): the
    PRM's work split over search.shards, at least SEARCH_FLOOR (each job loads the policy and the PRM:
    a 72B one takes minutes from a shared file system)."""
    whole = SEARCH_MINUTES * (SEARCH_MULTI_GPU if search_gpus(config, specs, prm) > 1 else 1)
    return max(SEARCH_FLOOR, shard_minutes(whole, search_shards(config), SEARCH_FLOOR))


def search_gpus(config: dict, specs: dict, prm: str) -> int:
    """GPUs of a search job: the policy and the whole PRM (never stored features: candidates are new
    text) share them, vLLM taking search.gpu_memory_utilization of each, so the larger of the two."""
    return max(gpus(config, search_policy(config)), prm_gpus(config, specs, prm))
