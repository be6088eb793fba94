"""The paper's tables and figures (artifacts), in layers; a module imports only from layers above it:

    registry   names, paths, report entries, the params each artifact rule receives, provenance
    published  the paper's numbers (published.yaml), workflow row/column → paper row/column
    cells      result tables → long "cells" tables (reproduced beside published), one builder each
    plots      matplotlib/seaborn figures          render   LaTeX / Markdown tables, report.md, main.pdf
    findings   the generated summary that opens report.md (from results/tables/*.csv; imported by rule glue only)

Rule glue: prm_lessons.rules.analysis (one function per artifact rule) and prm_lessons.rules.paper.
This __init__ imports nothing, so the workflow reads the registry while parsing without loading the rest.
"""
