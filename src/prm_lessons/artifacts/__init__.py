"""The paper's tables and figures (artifacts), in layers; a module imports only from layers above it:

    registry   the artifact modules (MODULES), names, paths, report entries, each rule's inputs and params,
               provenance
    published  the paper's numbers (published.yaml), workflow row/column → paper row/column
    cells      result tables → long "cells" tables (this run beside published): loaders, shared builders
    inputs     a rule's named inputs as frames      plots  matplotlib/seaborn style, shared figures
    render     LaTeX / Markdown tables, report.md, main.pdf
    defs       one module per artifact (defs/<stem>.py): its inputs, params, builder, plot or notes, `run`
    findings   the generated summary that opens report.md (from results/tables/*.csv; imported by rule glue only)

Rule glue: prm_lessons.rules.analysis (resolves each artifact rule to its module's `run`) and
prm_lessons.rules.paper.
This __init__ imports nothing, so the workflow reads the registry while parsing without loading the rest.
"""
