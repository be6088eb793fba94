"""Rule glue of workflow/rules/analysis.smk: the artifact rule `<stem>` (params.func "analysis:<stem>") runs
`run` of its own module, prm_lessons.artifacts.defs.<stem> (DELEGATE), resolved here on access. codedeps
reads DELEGATE, so a rule's code inputs are that module and the shared artifact code it imports, not every
other artifact's. Names, paths, inputs and params: prm_lessons.artifacts.registry.
"""
from __future__ import annotations

import importlib

from prm_lessons.artifacts.registry import ARTIFACTS

DELEGATE = "prm_lessons.artifacts.defs.{name}:run"
_STEMS = frozenset(a["stem"] for a in ARTIFACTS.values())


def __getattr__(name: str):
    if name not in _STEMS:
        raise AttributeError(f"module {__name__} has no attribute {name}")
    module, _, func = DELEGATE.format(name=name).partition(":")
    return getattr(importlib.import_module(module), func)


def __dir__():
    return sorted([*globals(), *_STEMS])
