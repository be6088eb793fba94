"""Rule glue of workflow/rules/paper.smk: paper/report.md and paper/tables/run_info.tex (rule
`paper_report`), paper/main.pdf (rule `paper_pdf`). Rendering: prm_lessons.artifacts.render."""
from __future__ import annotations

import logging
from pathlib import Path

from prm_lessons.artifacts.cells import load_cells
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.registry import ARTIFACTS
from prm_lessons.artifacts.render import latexmk_pdf, report_markdown, run_info_tex

log = logging.getLogger(__name__)


def paper_report(*, inputs, outputs, params, wildcards, threads) -> None:
    """paper/report.md (every table in Markdown beside the paper's numbers, every figure linked) and
    paper/tables/run_info.tex (run label and config hash for main.tex). Inputs `<id>_csv`: each
    artifact's cells; one that does not exist is left out of the report."""
    run = params.get("run", {})
    report = Path(outputs["report"])
    report.parent.mkdir(parents=True, exist_ok=True)
    cells_of = {}
    for aid in ARTIFACTS:
        csv = inputs.get(f"{aid}_csv")
        if csv and Path(csv).exists():
            cells_of[aid] = load_cells(csv)
    report.write_text(report_markdown(load_published(), run, cells_of, report.parent))
    info = Path(outputs["run_info"])
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text(run_info_tex(run))
    log.info("wrote %s and %s", report, info)


def paper_pdf(*, inputs, outputs, params, wildcards, threads) -> None:
    """latexmk builds paper/main.pdf from paper/main.tex, the generated tables and the figures. main.tex
    is copied next to the generated paper/tables/ when the working directory is not the repository
    (e.g. `snakemake --directory /tmp/run`)."""
    latexmk_pdf(inputs["tex"], outputs["pdf"], int(params.get("timeout_s", 600)))
