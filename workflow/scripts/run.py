"""The one `script:` adapter: every rule calls a single package function through it.

params.func = "<stage>:<rule>": the function `<rule>` of prm_lessons.rules.<stage> (the rule glue of
workflow/rules/<stage>.smk); it gets named inputs/outputs/params.
Output goes to the rule's log so a failed job's reason is in logs/, not lost in the scheduler.
"""
import importlib
import logging
import os
import sys
import time
import traceback
from pathlib import Path

# Injected by Snakemake. Absent when vLLM's spawned workers re-import this file as __mp_main__;
# they must import it without side effects, hence .get and the __main__ guard below.
snakemake = globals().get("snakemake")


def named(files) -> dict:
    """Named inputs/outputs as the rule declares them: a str for one file, a list of str for a list
    (also of one or none), so rule functions never guess which."""
    return {k: (str(v) if isinstance(v, str) else [str(x) for x in v]) for k, v in files.items()}


def main() -> None:
    # the package from this checkout, also inside conda envs where Snakemake blocks PYTHONPATH
    sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))
    # models come from local directories (rule download_model): only download/data rules may go online
    from prm_lessons.models.hub import job_offline

    job_offline(snakemake.rule)
    log_path = snakemake.log[0] if snakemake.log else None
    stream = open(log_path, "a", buffering=1) if log_path else sys.stderr
    sys.stdout = sys.stderr = stream
    logging.basicConfig(stream=stream, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    params = dict(snakemake.params.items())
    module_name, func_name = params.pop("func").split(":")
    try:
        # a rule that asked for GPUs and finds none (or a CPU-only torch) stops here, before any work
        from prm_lessons.jobs.hardware import ASKED_ENV, GPUNotFoundError, gpu_job_env, gpu_keys, require_gpus

        asked = int(snakemake.resources.get("gpu", 0) or 0)
        try:
            require_gpus(snakemake.rule, asked)
        except GPUNotFoundError:  # again, naming the config keys to change (read only when it fails)
            require_gpus(snakemake.rule, asked, gpu_keys(snakemake.rule, params, getattr(snakemake, "config", None)))
        os.environ[ASKED_ENV] = str(asked)  # deeper checks (the vLLM build) read it
        gpu_job_env(asked)  # vLLM spawns, never forks, in a GPU job (prm_lessons.jobs.hardware)
        func = getattr(importlib.import_module(f"prm_lessons.rules.{module_name}"), func_name)
        started = time.perf_counter()
        func(inputs=named(snakemake.input), outputs=named(snakemake.output),
             params=params, wildcards=dict(snakemake.wildcards.items()), threads=snakemake.threads)
        if log_path:  # the model tokens it used, beside its log (bench/token_budget.py sums them)
            from prm_lessons.jobs import budget

            budget.write_sidecar(log_path, snakemake.rule, dict(snakemake.wildcards.items()),
                                 time.perf_counter() - started)
    except Exception as exc:
        traceback.print_exc(file=stream)
        if type(exc).__name__ in ("GPUNotFoundError", "HubOfflineError"):
            # one line on the console saying what to set, beside Snakemake's pointer to the log
            print(f"prm-lessons: rule {snakemake.rule}: {exc}", file=sys.__stderr__, flush=True)
        from prm_lessons.tables import CorruptTableError, quarantine

        if isinstance(exc, CorruptTableError):
            # moved aside: the next run sees the input missing and regenerates it with its producer rule
            # (left in place, a corrupt input with a good mtime would be read again by every rerun)
            from prm_lessons.config import config_strings

            msg = quarantine(exc.path, [str(f) for f in snakemake.input], user_files=config_strings(snakemake.config))
            for out in {stream, sys.__stderr__}:  # the job's log and the console
                print(msg, file=out, flush=True)
        raise


if __name__ == "__main__":  # vLLM spawns worker processes; the guard keeps them from re-running the rule
    main()
    if type(snakemake).__module__.split(".")[0] == "snakemake":  # a job Snakemake started, not a test's stand-in
        from prm_lessons.jobs.exit import end_job

        end_job()  # outputs are written: skip the interpreter's teardown (seconds a job; prm_lessons.jobs.exit)
