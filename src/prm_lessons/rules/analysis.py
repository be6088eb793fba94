"""Rule glue of workflow/rules/analysis.smk: the artifact rule `<stem>` (params.func "analysis:<stem>") runs
`run` of its own module, prm_lessons.artifacts.defs.<stem> (DELEGATE), resolved here on access. codedeps
reads DELEGATE, so a rule's code inputs are that module and the shared artifact code it imports, not every
other artifact's. Names, paths, inputs and params: prm_lessons.artifacts.registry. One rule function of
its own: `fig6_annotation_sheet` (Figure 6's human path; not an artifact).
"""
from __future__ import annotations

import importlib

from prm_lessons.artifacts.registry import ARTIFACTS
from prm_lessons.evaluation.bias_analysis import named_inputs
from prm_lessons.labels.annotation import sample_sheet, write_sheet
from prm_lessons.tables import read_table

DELEGATE = "prm_lessons.artifacts.defs.{name}:run"
_STEMS = frozenset(a["stem"] for a in ARTIFACTS.values())


def __getattr__(name: str):
    if name not in _STEMS:
        raise AttributeError(f"module {__name__} has no attribute {name}")
    module, _, func = DELEGATE.format(name=name).partition(":")
    return getattr(importlib.import_module(module), func)


def __dir__():
    return sorted([*globals(), *_STEMS])


def fig6_annotation_sheet(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `fig6_annotation_sheet`: seeded random correct-answer responses of each Figure 6 dataset
    (analysis.fig6_annotation.per_benchmark, among the first analysis.n samples) → an annotation sheet
    (CSV: id, benchmark, problem, numbered steps, empty label columns) for annotators."""
    cfg = params["annotation"]
    samples = {d: read_table(p, None) for d, p in named_inputs(inputs, "samples").items()}
    sheet = sample_sheet(samples, int(cfg["per_benchmark"]), int(cfg["seed"]), params.get("n"))
    write_sheet(sheet, outputs["sheet"])
    print(f"annotation sheet: {len(sheet)} responses ({sheet['benchmark'].value_counts().to_dict()}) -> "
          f"{outputs['sheet']}; fill in process_flawed (yes/no) and first_error_step, then set "
          "analysis.fig6_annotation.labels to the filled-in copy", flush=True)
