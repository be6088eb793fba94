"""One Snakemake dry run per configuration per test session, parsed into jobs.

`plan(configfiles)` runs `snakemake -n --forceall` once per distinct argument list in a process
(lru-cached) and returns a :class:`Plan`: the raw output, the "Job stats" counts and every job block
(rule, wildcards, input, output, log, benchmark, threads, resources). Tests that only read a shipped config's DAG share
the session fixtures `embedded_plan` / `paper_plan` (tests/conftest.py) instead of planning it again.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

EMBEDDED: tuple[str, ...] = ()  # the Snakefile's default, config/config.yaml
PAPER = ("config/paper.yaml",)
ALL = ("config/config.yaml", "config/all.yaml")  # `make run-all`: the embedded default + config/all.yaml


@dataclass
class Job:
    rule: str
    local: bool = False
    wildcards: dict[str, str] = field(default_factory=dict)
    input: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    benchmark: str = ""  # the job's `benchmark:` file (plan.benchmark_path), "" when the rule has none
    threads: int = 1
    resources: dict[str, int | str] = field(default_factory=dict)
    text: str = ""

    def __getitem__(self, key: str):  # job["rule"], as the dict-based helpers this replaces read jobs
        return getattr(self, key)


@dataclass
class Plan:
    out: str  # stdout + stderr of the dry run (Snakemake 9 prints the job list on stderr)
    counts: dict[str, int]  # rule -> jobs, from the "Job stats" table
    jobs: list[Job]

    def of(self, rule: str) -> list[Job]:
        return [j for j in self.jobs if j.rule == rule]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def job_counts(out: str) -> dict[str, int]:
    """The "Job stats" table of a dry run: rule -> number of jobs (without the `total` row)."""
    block = out.split("Job stats:")[1].split("\n\n")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", block, re.M) if m.group(1) != "total"}


def _items(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_jobs(out: str) -> list[Job]:
    """Every `rule x:` / `localrule x:` block of a dry run's job list."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", out):
        m = re.match(r"(local)?rule (\w+):\n", block)
        if not m:
            continue
        job = Job(rule=m.group(2), local=bool(m.group(1)), text=block)
        for line in block.splitlines()[1:]:
            if not line.startswith("    "):
                break  # the block ends at the next unindented line (a timestamp, a summary)
            key, _, value = line.strip().partition(": ")
            if key in ("input", "output", "log"):
                setattr(job, key, _items(value))
            elif key == "benchmark":
                job.benchmark = value.strip()
            elif key == "threads":
                job.threads = int(value)
            elif key == "wildcards":
                job.wildcards = dict(item.partition("=")[::2] for item in value.split(", "))
            elif key == "resources":
                for item in value.split(", "):
                    k, _, v = item.partition("=")
                    job.resources[k] = int(v) if v.isdigit() else v
        jobs.append(job)
    return jobs


def dry_run(*args: str, cwd: Path = ROOT, env: dict | None = None) -> str:
    """`snakemake -n --forceall *args` as a subprocess (as users run it); its output, or an AssertionError
    holding the tail of a failure."""
    proc = subprocess.run([*SNAKEMAKE, "-n", "--forceall", *args], cwd=cwd, env=env or ENV, capture_output=True,
                          text=True, timeout=900)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"snakemake -n {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return out


@functools.lru_cache(maxsize=None)
def plan(configfiles: tuple[str, ...] = EMBEDDED, *, profile: str | None = None, cores: int = 2,
         directory: str | None = None, env: tuple[tuple[str, str], ...] = ()) -> Plan:
    """The parsed dry run of `configfiles` (relative to the repository; none = the embedded default),
    once per process for each argument list. `directory`: a prepared working directory (--directory);
    `env`: extra environment variables. Treat the result as read-only: it is shared."""
    args = ["--cores", str(cores)]
    if profile:
        args += ["--profile", profile]
    if directory:
        args += ["--snakefile", str(ROOT / "Snakefile"), "--directory", directory]
    if configfiles:
        args += ["--configfile", *(str(ROOT / c) for c in configfiles)]
    out = dry_run(*args, env={**ENV, **dict(env)})
    return Plan(out=out, counts=job_counts(out), jobs=parse_jobs(out))
