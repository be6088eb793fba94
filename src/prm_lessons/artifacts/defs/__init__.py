"""One module per paper artifact, named after its file stem (`table6_bon_main.py` writes
results/tables/table6_bon_main.{csv,json} and paper/tables/table6_bon_main.tex). Each holds, as literal
constants the registry reads without importing it: ID, KIND, SOURCE, TITLE, SECTION, INPUTS (the input
groups of workflow/rules/analysis.smk it reads) and PARAMS (the `analysis.*` keys it receives); then its
cells builder, its plot (figures) or notes (tables), and `run`, the rule function. Shared code (loaders,
bon_cells / pb_cells, summary figures, rendering, plot style) lives in artifacts.cells / inputs / plots /
render. Registered in artifacts.registry.MODULES (the report's order)."""
