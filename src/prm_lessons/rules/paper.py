"""Rule glue of workflow/rules/paper.smk: paper/report.md and paper/tables/run_info.tex (rule
`paper_report`), paper/main.pdf (rule `paper_pdf`). Rendering: prm_lessons.artifacts.render."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from prm_lessons.artifacts.cells import load_cells
from prm_lessons.artifacts.compare import comparison, comparison_markdown
from prm_lessons.artifacts.findings import findings_markdown
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.registry import ARTIFACTS
from prm_lessons.artifacts.render import latexmk_pdf, report_markdown, run_info_tex
from prm_lessons.artifacts.verdict_rules import verdicts_html, verdicts_markdown
from prm_lessons.artifacts.verdicts import verdict_rows
from prm_lessons.labels.audit import render_markdown as render_audit
from prm_lessons.tables import (
    CorruptTableError,
    read_csv,
    table_meta,
    write_plain_csv,
    write_text_atomic,
)

log = logging.getLogger(__name__)


def _read_csv(path, kind: str) -> pd.DataFrame | None:
    """A result table (tables.read_csv, `kind`), or None (with a logged note) when it is not an input,
    absent or fails its checks; a corrupt one raises (the rule adapter moves it aside)."""
    if not path or not Path(path).exists():
        return None
    try:
        return read_csv(path, kind)
    except CorruptTableError:
        raise
    except (OSError, ValueError) as e:  # pandas' EmptyDataError / ParserError are ValueErrors
        log.warning("findings: cannot read %s (%s); its sentences are left out", path, e)
        return None




def _notes(path) -> list[str]:
    """The notes an artifact's rule kept in its provenance record (cells.write_cells); none when the record is
    not an input, absent, or older than the notes."""
    if not path or not Path(path).exists():
        return []
    try:
        return [str(n) for n in json.loads(Path(path).read_text()).get("notes") or []]
    except (OSError, ValueError, AttributeError) as e:
        log.warning("report: cannot read the notes of %s (%s); left out", path, e)
        return []


def _main_rows(bon: pd.DataFrame | None, params) -> pd.DataFrame | None:
    """bon.csv's rows of analysis.policy (params `policy`; a table without a policy column holds one
    policy's) at the main tables' N (params `n`), so the findings never mix policies or N."""
    if bon is None:
        return None
    if params.get("policy") and "policy" in bon.columns and bon["policy"].notna().any():
        bon = bon[bon["policy"].astype(str) == str(params["policy"])]
    if params.get("n") is not None and "n" in bon.columns:
        bon = bon[pd.to_numeric(bon["n"], errors="coerce") == float(params["n"])]
    return bon


def paper_report(*, inputs, outputs, params, wildcards, threads) -> None:
    """paper/report.md (opening with the lesson-by-lesson verdicts (artifacts.verdicts) and what this run
    found, then every table in Markdown beside the paper's numbers, every figure linked, each with its notes),
    paper/tables/run_info.tex (run label and config hash for main.tex) and, where the rule has the output
    `verdicts`, paper/verdicts.html (the verdict table and tally, for Snakemake's HTML report).
    Inputs `<id>_csv`: each artifact's cells; one that does not exist is left out of the report; `<id>_provenance`:
    its provenance record, whose `notes` (the LaTeX table's footnotes, a figure's) are printed under it.
    `processbench_table`, `bon_table`, `trainsets_table` (results/tables/*.csv, each optional): the
    findings; params `aggregation`, `threshold_sweep` (optional) as the analysis rules get them, `policy` and
    `n` (the main tables' policy and N: the findings read those rows), `skipped` (artifact id → why this
    config does not produce it: printed in its place in the report and, via run_info.tex, in main.pdf),
    `process_check_bon_table` (optional: lesson 4 from the checker on the Best-of-N samples),
    `label_audit_table` (optional: rendered after the verdicts; param `audit_k`),
    `judge_processbench_table` (optional: the labelling judge on ProcessBench with its own prompt),
    `judge_critics` (the ProcessBench critic rows of the labelling judge's model: lesson 4's instrument check),
    `processbench_paired_table` (optional: paired PRM differences with training resamples, the verdicts' first
    source), `process_check_table` (optional: the checker's validation, lesson 4a's gate), param `bon_problems`
    (the Best-of-N problems behind bon.csv's average: lesson 6's deciding size)."""
    run = params.get("run", {})
    report = Path(outputs["report"])
    report.parent.mkdir(parents=True, exist_ok=True)
    cells_of, notes_of = {}, {}
    for aid in ARTIFACTS:
        csv = inputs.get(f"{aid}_csv")
        if csv and Path(csv).exists():
            cells_of[aid] = load_cells(csv)
        notes_of[aid] = _notes(inputs.get(f"{aid}_provenance"))
    skipped = dict(params["skipped"])
    processbench = _read_csv(inputs.get("processbench_table"), "processbench_csv")
    bon = _main_rows(_read_csv(inputs.get("bon_table"), "bon_csv"), params)
    trainsets = _read_csv(inputs.get("trainsets_table"), "trainsets_csv")
    judge_pb = _read_csv(inputs.get("judge_processbench_table"), "judge_processbench_csv")
    audit = _read_csv(inputs.get("label_audit_table"), "label_audit_csv")
    checker_bon = _read_csv(inputs.get("process_check_bon_table"), "process_check_bon_csv")
    checker_validation = _read_csv(inputs.get("process_check_table"), "process_check_csv")
    paired = _read_csv(inputs.get("processbench_paired_table"), "processbench_paired_csv")
    aggregation = str(params.get("aggregation") or "product")
    rows = verdict_rows(
        processbench=processbench, bon=bon, trainsets=trainsets, judge_pb=judge_pb, audit=audit,
        checker_bon=checker_bon, fig6=cells_of.get("fig6"),
        fig8=cells_of.get("fig8"), aggregation=aggregation, threshold_sweep=params.get("threshold_sweep"),
        judge_critics=params.get("judge_critics") or (), paired=paired, checker_validation=checker_validation,
        table5=cells_of.get("table5"), bon_problems=params.get("bon_problems"))
    verdicts = verdicts_markdown(rows)
    if outputs.get("verdicts"):  # the verdict table and tally for Snakemake's HTML report (paper.smk)
        write_text_atomic(outputs["verdicts"], verdicts_html(rows, str(run.get("label") or run.get("name") or "")))
    findings = findings_markdown(processbench, bon, trainsets, str(run.get("label") or run.get("name") or ""),
                                 aggregation=aggregation, threshold_sweep=params.get("threshold_sweep"),
                                 paired=paired)
    where = _engines_line(inputs.get("provenance_samples"))
    if where:
        verdicts += "\n" + where + "\n"
    if audit is not None:  # the label audit: the mechanism behind the label lessons, after the verdicts
        verdicts += "\n" + "\n".join(render_audit(audit, int(params.get("audit_k") or 8))) + "\n"
    # the lesson-by-lesson verdicts open the report, the findings' detail follows
    write_text_atomic(report, report_markdown(load_published(), run, cells_of, report.parent,
                                              verdicts + "\n" + findings, skipped, notes_of))
    info = Path(outputs["run_info"])
    write_text_atomic(info, run_info_tex(run, skipped))
    log.info("wrote %s and %s", report, info)


def engines_text(engines: list[dict]) -> str:
    """One sentence: the dtype and host(s) the policy's samples were made with (sample jobs' metadata)."""
    parts = []
    for e in engines:
        flags = ", ".join(e.get("cpu_flags") or []) or "none of avx2 / avx512f / avx512_bf16 / amx"
        gpus = f", {e['gpus']} GPU(s)" if e.get("gpus") else ""
        parts.append(f"{e.get('dtype') or 'unknown dtype'} ({e.get('dtype_reason') or 'as configured'}) on "
                     f"`{e.get('host')}` ({e.get('cpu')}, {e.get('cpus')} CPUs{gpus}; CPU flags: {flags})")
    return ("Where these numbers come from: the policy sampled in " + "; ".join(parts) + ". The same config "
            "gives other samples, and so other numbers, in another dtype (bf16 on CPUs with native bf16, "
            "float32 elsewhere).") if parts else ""


def _engines_line(path) -> str:
    if not path or not Path(path).exists():
        return ""
    try:
        return engines_text(list(table_meta(path).get("engines") or []))
    except (OSError, ValueError) as e:  # provenance is context: a report is still written without it
        log.warning("report: cannot read the engine record of %s (%s)", path, e)
        return ""


def paper_pdf(*, inputs, outputs, params, wildcards, threads) -> None:
    """latexmk builds paper/main.pdf from paper/main.tex, the generated tables and the figures. main.tex
    is copied next to the generated paper/tables/ when the working directory is not the repository
    (e.g. `snakemake --directory /tmp/run`)."""
    latexmk_pdf(inputs["tex"], outputs["pdf"], int(params.get("timeout_s", 600)))


def compare_runs(*, inputs, outputs, params, wildcards, threads) -> None:
    """Rule `compare_runs` (run.compare): each named run's bon.csv and processbench.csv → one table with a
    column per run, runs/comparison.csv and .md."""
    names = list(params["runs"])
    bon, pb = list(inputs["bon"]), list(inputs["processbench"])
    table = comparison({n: (read_csv(b, "bon"), read_csv(p, "processbench")) for n, b, p in zip(names, bon, pb)})
    write_plain_csv(table, outputs["csv"])
    write_text_atomic(outputs["md"], comparison_markdown(table))
    log.info("compared runs %s: %d rows", ", ".join(names), len(table))
