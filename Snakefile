# prm-lessons: the experiments of "The Lessons of Developing Process Reward Models in Mathematical
# Reasoning" (arXiv 2501.07301) as one workflow. Logic lives in src/prm_lessons; rules are thin.
from pathlib import Path

from snakemake.utils import min_version

min_version("9.19")


# The embedded default applies when no --configfile is given. A --configfile list replaces it
# (files merge left to right, later wins): `--configfile config/paper.yaml` is the paper alone, and
# an ablation layers on a base: `--configfile config/config.yaml config/ablations/mc_threshold.yaml`.
if not workflow.overwrite_configfiles:

    configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


report: str(Path(workflow.basedir) / "workflow" / "report" / "workflow.rst")


include: "workflow/rules/common.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/sampling.smk"
include: "workflow/rules/labels.smk"
include: "workflow/rules/process_check.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/evaluation.smk"
include: "workflow/rules/verifiers.smk"
include: "workflow/rules/search.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/paper.smk"


onsuccess:
    # where the report, the HTML report and the logs are (only in the run's own process, not in jobs)
    print(where.finish_message(prefix=RUNS.prefix, configfiles=workflow.configfiles))


rule all:
    default_target: True
    input:
        run_in(TARGETS),
