"""Helpers the plan stage modules share: wildcard regexes and the problem-shard layout."""
from __future__ import annotations

import re


def wildcard_alternatives(names) -> str:
    """Wildcard regex matching exactly these names (never matches when there are none)."""
    names = list(names)
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


# The layout of every problem-sharded job (scoring, greedy search, LLM judges, critics): a sharded job writes
# `<table>/shard{shard}of{nshards}.parquet` for each of its tables, a local merge rule joins them into
# `<table>.parquet` (prm_lessons.jobs.shards).

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


BENCHMARKS = "benchmarks"  # one folder per rule of Snakemake `benchmark:` files (bench/rule_times.py)


def benchmark_path(rule: str, log: str) -> str:
    """A job's `benchmark:` file: BENCHMARKS/<rule>/ + its log's path from the first component with a
    wildcard (the log's wildcards, as Snakemake requires, and unique per job as the log is), or
    BENCHMARKS/<rule>.tsv for a rule without wildcards; the rule is always the first path component."""
    parts = str(log).removeprefix("logs/").removesuffix(".log").split("/")
    first = next((i for i, part in enumerate(parts) if "{" in part), len(parts))
    rest = "/".join(parts[first:])
    return f"{BENCHMARKS}/{rule}/{rest}.tsv" if rest else f"{BENCHMARKS}/{rule}.tsv"


def shard_minutes(minutes: int, nshards: int, floor: int = 60) -> int:
    """Base minutes of one shard job: the whole job's split over the shards, at least `floor` (loading a
    32-72B model and capturing graphs takes minutes); unsharded, the whole. plan.runtime then multiplies
    by the attempt and caps at cluster.max_runtime."""
    n = int(nshards)
    return int(minutes) if n == 1 else max(int(floor), -(-int(minutes) // n))
