# paper/: report.md (every table in Markdown beside the paper's numbers, every figure linked) always;
# main.pdf with latexmk when it is installed (config paper.pdf: auto) or required (paper.pdf: true).
# Logic: prm_lessons.paper. The LaTeX source paper/main.tex lives in the repository and \input{}s the
# generated paper/tables/*.tex and includes figures/*.pdf.
from prm_lessons.paper import latexmk_available  # noqa: E402

PAPER = config["paper"]
PAPER_PDF = PAPER["pdf"] is True or (PAPER["pdf"] == "auto" and latexmk_available())


rule paper_report:
    input:
        pkg("paper", "figures", "analysis"),
        str(PKG / "published.yaml"),
        **{f"{aid}_csv": artifact_paths(aid)["csv"] for aid in ARTIFACTS},
        figures=[artifact_paths(aid)["png"] for aid in ARTIFACTS if ARTIFACTS[aid]["kind"] == "figure"],
    output:
        report="paper/report.md",
        run_info="paper/tables/run_info.tex",
    params:
        func="paper:rule_report_md",
        run=config["run"],
    log:
        "logs/paper/report.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


rule paper_pdf:
    input:
        tex=str(Path(workflow.basedir) / "paper/main.tex"),
        run_info="paper/tables/run_info.tex",
        tables=[artifact_paths(aid)["tex"] for aid in ARTIFACTS if ARTIFACTS[aid]["kind"] == "table"],
        figures=[artifact_paths(aid)["pdf"] for aid in ARTIFACTS if ARTIFACTS[aid]["kind"] == "figure"],
        code=pkg("paper"),
    output:
        pdf="paper/main.pdf",
    params:
        func="paper:rule_paper_pdf",
        timeout_s=PAPER["latexmk_timeout_s"],
    log:
        "logs/paper/main_pdf.log",
    conda:
        "../../envs/analysis.yaml"
    localrule: True
    script:
        RUN


TARGETS.append("paper/report.md")
if PAPER_PDF:
    TARGETS.append("paper/main.pdf")
