"""`make rehearsal`: the paper configuration executed for real on CPU.

config/paper.yaml runs unchanged but for the overlay config/rehearsal.yaml (sizes, GPUs -> 0, where
weights and data files come from). Weights are random-weight stand-ins of each Hub model's
architecture in a local Hugging Face cache (`hub_cache`), under the Hub id and pinned revision, so
rule download_model and every loader run the code a cluster runs, offline. Data: the harness and
ProcessBench files in ../shared/data, and small PRM800K and Math-Shepherd files in their released formats.

Layout (all under --out, default results/rehearsal/):
  hf-home/      HF_HOME holding the stand-in cache
  work/         the Snakemake working directory (results/, logs/, resources/ of the run);
                work/shared -> the shared data directory, work/data/prm800k/ -> the PRM800K stand-in,
                work/data/math_shepherd/math-shepherd.jsonl -> the Math-Shepherd stand-in,
                work/data/templates/critique_template.txt -> the critique template's stand-in,
                work/data/templates/app_c.tex -> the stand-in of the paper's LaTeX source of App. C,
                work/data/fewshot/examples.py -> the harness few-shot demonstrations' stand-in,
                work/data/prmbench/prmbench_fixture.jsonl -> a six-record file in PRMBench's format
  plan.txt      the dry run's job table before the run
  report.json   what ran and what it read (prm_lessons.rehearsal.report)
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from ..config.load import check_config_files
from ..labels.judge import PAPER_TEMPLATE, PROCESSBENCH_TEMPLATE
from ..tables import write_text_atomic
from .fewshot_file import write_fewshot_examples
from .hub_cache import build_hub_cache, claim_dir, cli_errors
from .math_shepherd_file import write_math_shepherd
from .prm800k_file import write_prm800k
from .report import REPO, snakemake_cmd, write_report

PRMBENCH_FIXTURE = REPO / "tests" / "support" / "fixtures" / "prmbench" / "prmbench_fixture.jsonl"

log = logging.getLogger("prm_lessons.rehearsal")
CONFIG_DIR = REPO / "config"  # paper.yaml and the rehearsal.yaml overlay


def needed_shared_files() -> list[str]:
    """The files of the shared data directory the rehearsal reads (relative paths, sorted): every
    `shared/...` path of config/rehearsal.yaml, with {subset} over paper.yaml's ProcessBench subsets, plus
    the harness file the stand-ins are built from."""
    overlay = yaml.safe_load((CONFIG_DIR / "rehearsal.yaml").read_text())
    subsets = yaml.safe_load((CONFIG_DIR / "paper.yaml").read_text())["processbench"]["subsets"]
    found: set[str] = {"data/bon/math_cot_100_samples.jsonl"}  # prepare_work's stand-ins read it

    def walk(v) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and v.startswith("shared/"):
            rel = v[len("shared/"):]
            found.update({rel.format(subset=s) for s in subsets} if "{subset}" in rel else {rel})

    walk(overlay)
    return sorted(found)


def find_shared(explicit: str | None = None) -> Path:
    """The shared data directory: --shared, $PRM_SHARED, or ../shared beside the checkout. One given
    explicitly (--shared, or a non-empty PRM_SHARED) is used or refused, never passed over: a directory that
    does not exist, or lacks a file the rehearsal reads (needed_shared_files), is an error naming it and the
    flag or variable, before anything is built. ../shared is checked the same way."""
    env = os.environ.get("PRM_SHARED", "").strip()
    if explicit:
        where, cand = f"--shared {explicit}", Path(explicit)
    elif env:
        where, cand = f"PRM_SHARED={env}", Path(env)
    else:
        cand = REPO.parent / "shared"
        where = f"{cand} (the default; pass --shared DIR or set PRM_SHARED)"
        if not (cand / "data").is_dir():
            raise SystemExit("rehearsal: no shared data directory (pass --shared DIR or set PRM_SHARED; it must "
                             "hold data/bon/*.jsonl and data/processbench/*.json)")
    if not cand.is_dir():
        raise SystemExit(f"rehearsal: {where}: no such directory")
    missing = [f for f in needed_shared_files() if not (cand / f).is_file()]
    if missing:
        raise SystemExit(f"rehearsal: {where}: lacks {len(missing)} file(s) the rehearsal reads: "
                         + ", ".join(missing[:8]) + (" …" if len(missing) > 8 else ""))
    return cand.resolve()


def prepare_work(work: Path, shared: Path) -> Path:
    """The working directory's data files (what config/rehearsal.yaml points at): the `shared` link, the
    PRM800K, Math-Shepherd, critique-template and few-shot stand-ins, the PRMBench fixture. Enough for a dry run."""
    work.mkdir(parents=True, exist_ok=True)
    link = work / "shared"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(shared, target_is_directory=True)
    write_prm800k(work / "data" / "prm800k", shared / "data" / "bon" / "math_cot_100_samples.jsonl")
    write_math_shepherd(work / "data" / "math_shepherd" / "math-shepherd.jsonl",
                        shared / "data" / "bon" / "math_cot_100_samples.jsonl")
    write_critique_template(work / "data" / "templates" / "critique_template.txt")
    write_app_c_source(work / "data" / "templates" / "app_c.tex")
    write_fewshot_examples(work / "data" / "fewshot" / "examples.py")
    # PRMBench: the project's fixture in the benchmark's format (the published file needs the network)
    (work / "data" / "prmbench").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(PRMBENCH_FIXTURE, work / "data" / "prmbench" / PRMBENCH_FIXTURE.name)
    return work


def prepare(out: Path, shared: Path, fresh: bool = True) -> dict:
    """Stand-in Hub cache, PRM800K file and the working directory; returns the environment to run in."""
    work, hf_home = out / "work", out / "hf-home"
    claim_dir(out, "--out", made_by_us=("work", "hf-home"))  # a folder of the user's is never wiped
    if fresh:
        shutil.rmtree(out)
        claim_dir(out, "--out")
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    t0 = time.time()
    built = build_hub_cache(paper, hf_home)
    prepare_work(work, shared)
    log.info("stand-in Hub cache: %d repos in %.1fs", len(built) if built else 0, time.time() - t0)
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONUNBUFFERED": "1",
           # its jobs run two at a time on the same cores (make rehearsal: cores = 2 x CORES), each binding
           # its OpenMP threads to all of them: waiting threads that spin take the other job's CPU
           # (4 rehearsal sample jobs: 54 s spinning, 46-49 s passive; docs/measurements.md)
           "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    env.pop("HF_HUB_CACHE", None)  # the stand-in cache lives under HF_HOME
    return env


def write_critique_template(path: Path) -> Path:
    """The stand-in of ProcessBench's critique_template.txt (config/rehearsal.yaml points
    critics.official_template.url here, checksums off): the PROJECT's ProcessBench-style text, which has
    the official placeholders ({problem}, {tagged_response}) but not its wording, so that rule
    critique_template and the critics' official-template path run offline."""
    write_text_atomic(path, PROCESSBENCH_TEMPLATE + "\n")
    return path


# the stand-in's prompt: the paper's opening words (where the reader starts), then the PROJECT's paraphrase
# with its placeholders last, as App. C has them; not the paper's wording
APP_C_STANDIN = ("I will provide a math problem along with a solution. "
                 + PAPER_TEMPLATE.replace("{tagged_problem}\n\n{tagged_response}\n\n", "")
                 + "\n\n[Math Problem]\n{tagged_problem}\n[Solution]\n{tagged_response}")


def write_app_c_source(path: Path) -> Path:
    """The stand-in of the paper's LaTeX source of App. C (config/rehearsal.yaml points
    judge.paper_template.url here, with the stand-in's words digest): APP_C_STANDIN in a verbatim box, so
    that rule judge_template and the judge's paper_app_c path run offline."""
    write_text_atomic(path, "\\section{Prompt Template for LLM-as-a-judge}\n\\begin{tcolorbox}[title=Prompt]\n"
                            "\\begin{verbatim}\n" + APP_C_STANDIN + "\n\\end{verbatim}\n\\end{tcolorbox}\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m prm_lessons.rehearsal.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/rehearsal", help="rehearsal directory (wiped unless --resume)")
    ap.add_argument("--shared", default=None,
                    help="shared data directory (default: $PRM_SHARED, else ../shared beside the checkout); "
                         "one that does not exist or lacks a file the rehearsal reads is an error")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--resume", action="store_true", help="keep --out and continue an interrupted rehearsal")
    ap.add_argument("snakemake_args", nargs="*", help="extra Snakemake arguments (after --)")
    args = ap.parse_args(argv)
    return cli_errors("rehearsal", lambda: _main(args))


def _main(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    out = Path(args.out).resolve()
    shared = find_shared(args.shared)
    env = prepare(out, shared, fresh=not args.resume)
    configs = [REPO / "config" / "paper.yaml", REPO / "config" / "rehearsal.yaml"]
    check_config_files(configs)  # strictly, naming the file, before Snakemake's own reader sees them
    work = out / "work"
    # one Snakemake run, its output shown and kept: the job table it prints first is the plan (which rules
    # the paper DAG has and how many jobs each); a separate dry run would build the same DAG again (~25 s)
    t0 = time.time()
    proc = subprocess.Popen(snakemake_cmd(work, configs, args.cores, ["--rerun-incomplete", "--show-failed-logs",
                                                                      *args.snakemake_args]),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line)
    run = subprocess.CompletedProcess(proc.args, proc.wait())
    text = "".join(lines)
    write_text_atomic(out / "snakemake.txt", text)
    write_text_atomic(out / "plan.txt", plan_text(text))
    wall = time.time() - t0

    report = write_report(out, configs, env, wall_seconds=wall, returncode=run.returncode)
    print(f"rehearsal: snakemake exit {run.returncode} after {wall / 60:.1f} min; report {out / 'report.json'}: "
          f"{len(report['rules_ran'])}/{len(report['rules_planned'])} rules ran, "
          f"{'all' if not report['rules_missing'] else 'missing ' + ', '.join(report['rules_missing'])}")
    return run.returncode


def plan_text(output: str) -> str:
    """The head of a Snakemake run's output up to the end of its first job table (the plan it starts
    with; parse_job_table reads it)."""
    head, sep, rest = output.partition("Job stats:")
    if not sep:
        return output
    return head + sep + rest.split("\n\n", 1)[0] + "\n"


if __name__ == "__main__":
    sys.exit(main())
