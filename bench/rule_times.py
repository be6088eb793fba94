"""Per-rule time shares of a Snakemake run, from its log (.snakemake/log/*.snakemake.log; the newest by
default): job start and finish times, summed per rule, beside the run's wall time. With --cores 2 two
jobs can overlap, so the job-seconds add up to more than the wall time.

    python bench/rule_times.py [LOG]
"""
from __future__ import annotations

import re
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

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


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else max(Path(".snakemake/log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime)
    spans = job_times(path.read_text().splitlines())
    if not spans:
        print(f"{path}: no finished jobs")
        return 1
    wall = (max(e for _, _, e in spans) - min(s for _, s, _ in spans)).total_seconds()
    per, count = defaultdict(float), defaultdict(int)
    for rule, s, e in spans:
        per[rule] += (e - s).total_seconds()
        count[rule] += 1
    total = sum(per.values())
    print(f"{path.name}: {len(spans)} jobs, wall {wall / 60:.1f} min, job-seconds {total:.0f} (2 cores: jobs overlap)")
    print(f"{'rule':32s} {'jobs':>4s} {'job-s':>7s} {'share':>6s}")
    for rule, sec in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"{rule:32s} {count[rule]:4d} {sec:7.0f} {100 * sec / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
