"""Where a finished run's results are: the message the workflow prints when it succeeds (Snakefile
`onsuccess`), naming only what this run's directory has (a run of a few targets made no report)."""
from __future__ import annotations

import os
from pathlib import Path

# (path, what it is), in the order a reader opens them
PLACES = [
    ("paper/report.md", "the report: each lesson's verdict, the paper's tables and figures beside this run's"),
    ("paper/main.pdf", "the same as a paper PDF (built when LaTeX is installed)"),
    ("results/tables", "every table as CSV (and figures/: every figure)"),
]


def report_command(prefix: str = "", configfiles=()) -> str:
    """The `make report` call that builds this run's HTML report: a named run's (an ablation) needs its
    config files, else the base run's figures and tables would be reported."""
    if not prefix:
        return "make report"
    files = " ".join(os.path.relpath(f) if not os.path.relpath(f).startswith("..") else str(f) for f in configfiles)
    return f'make report REPORT={prefix}report.html SMK_ARGS="--configfile {files}"'


def finish_message(root: str | Path = ".", prefix: str = "", configfiles=()) -> str:
    """The lines printed after a successful run in `root` (the working directory); `prefix`: a named
    run's folder (`runs/<name>/`, what run_out adds to its paths); `configfiles`: the run's config files."""
    root = Path(root)
    found = [(prefix + p, what) for p, what in PLACES if (root / prefix / p).exists()]
    lines = ["", "prm-lessons: done. Open:"] if found else ["", "prm-lessons: done (no report yet: results/ so far)."]
    lines += [f"  {p:18s} {what}" for p, what in found]
    lines += [f"  {prefix + 'report.html':18s} Snakemake's HTML report of every figure and table (with provenance), "
              "made by",
              f"  {'':18s} {report_command(prefix, configfiles)}",
              f"  {prefix + 'logs/<rule>/':18s} one log per job (progress lines of long jobs, errors)",
              f"  {prefix + 'benchmarks/':18s} each job's time and memory: python bench/rule_times.py sums them "
              "per rule", ""]
    return "\n".join(lines)
