"""Per-rule cost of a Snakemake run, from the jobs' `benchmark:` files (benchmarks/<rule>/....tsv or
benchmarks/<rule>.tsv, one per job; Snakemake writes wall seconds, max RSS and CPU seconds): jobs,
job-seconds, share, CPU seconds and the largest max RSS per rule, and the span from the first job's start
to the last job's end (file times). With --cores 2 two jobs can overlap, so the job-seconds add up to
more than the span. A job rerun later replaces its file: the table is of the newest run of every job.

    python bench/rule_times.py [BENCHMARKS_DIR]     # default: benchmarks
    python bench/rule_times.py --log [LOG]          # older runs without benchmark files: job start and
                                                    # finish times from Snakemake's text log (newest
                                                    # .snakemake/log/*.snakemake.log by default)
"""
from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass
class JobCost:
    rule: str
    seconds: float
    cpu_seconds: float | None
    max_rss_mb: float | None
    end: float  # the file's mtime: when the job finished


def _number(value: str | None) -> float | None:
    try:
        return float(value)  # "NA": a job shorter than Snakemake's first sample has no memory figures
    except (TypeError, ValueError):
        return None


def read_benchmarks(root: Path) -> list[JobCost]:
    """One JobCost per benchmark file under `root`; the rule is the first path component (plan.benchmark_path).
    A file with several rows (--benchmark-repeats) counts its mean."""
    jobs = []
    for path in sorted(root.rglob("*.tsv")):
        rel = path.relative_to(root)
        rule = rel.parts[0].removesuffix(".tsv")
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        if not rows:
            continue
        secs = [s for s in (_number(r.get("s")) for r in rows) if s is not None]
        if not secs:
            continue
        cpu = [c for c in (_number(r.get("cpu_time")) for r in rows) if c is not None]
        rss = [m for m in (_number(r.get("max_rss")) for r in rows) if m is not None]
        jobs.append(JobCost(rule, sum(secs) / len(secs), sum(cpu) / len(cpu) if cpu else None,
                            max(rss) if rss else None, path.stat().st_mtime))
    return jobs


def table(jobs: list[JobCost]) -> list[str]:
    """The per-rule lines, largest job-seconds first, under a header with the span and totals."""
    per, count = defaultdict(float), defaultdict(int)
    cpu, rss = defaultdict(lambda: None), defaultdict(lambda: None)
    for j in jobs:
        per[j.rule] += j.seconds
        count[j.rule] += 1
        if j.cpu_seconds is not None:
            cpu[j.rule] = (cpu[j.rule] or 0.0) + j.cpu_seconds
        if j.max_rss_mb is not None:
            rss[j.rule] = max(j.max_rss_mb, rss[j.rule] or 0.0)
    total = sum(per.values())
    span = max(j.end for j in jobs) - min(j.end - j.seconds for j in jobs)
    lines = [f"{len(jobs)} jobs, span {span / 60:.1f} min, job-seconds {total:.0f} (jobs overlap on several cores)",
             f"{'rule':32s} {'jobs':>4s} {'job-s':>7s} {'share':>6s} {'cpu-s':>7s} {'max RSS MB':>10s}"]
    for rule, sec in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])):
        mem = f"{rss[rule]:10.0f}" if rss[rule] is not None else f"{'NA':>10s}"
        cpu_s = f"{cpu[rule]:7.0f}" if cpu[rule] is not None else f"{'NA':>7s}"  # the text log has none
        lines.append(f"{rule:32s} {count[rule]:4d} {sec:7.0f} {100 * sec / max(total, 1e-9):5.1f}% {cpu_s} {mem}")
    return lines


# -- the older source: Snakemake's text log (not a stable interface; kept for runs made before benchmark files)
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
START = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
DONE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")


def job_times(lines):
    now, pending, started, spans = None, None, {}, []
    for line in lines:
        line = line.rstrip("\n")
        if m := STAMP.match(line):
            now = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := START.match(line):
            pending = m.group(1)
        elif (m := JOBID.match(line)) and pending:
            started[m.group(1)] = (pending, now)
            pending = None
        elif m := DONE.match(line):
            rule, t0 = started.pop(m.group(1), (m.group(2), now))
            spans.append((rule, t0, now))
    return spans


def from_log(path: Path) -> list[JobCost]:
    return [JobCost(rule, (e - s).total_seconds(), None, None, e.timestamp())
            for rule, s, e in job_times(path.read_text().splitlines())]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python bench/rule_times.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("benchmarks", nargs="?", default="benchmarks", help="benchmark folder (default: benchmarks)")
    ap.add_argument("--log", nargs="?", const="", metavar="LOG",
                    help="read Snakemake's text log instead (default: the newest .snakemake/log/*.snakemake.log)")
    args = ap.parse_args(argv)
    if args.log is not None:
        path = Path(args.log) if args.log else max(Path(".snakemake/log").glob("*.snakemake.log"),
                                                   key=lambda p: p.stat().st_mtime)
        jobs = from_log(path)
    else:
        path = Path(args.benchmarks)
        jobs = read_benchmarks(path) if path.is_dir() else []
    if not jobs:
        print(f"{path}: no finished jobs")
        return 1
    print(f"{path}: " + "\n".join(table(jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
