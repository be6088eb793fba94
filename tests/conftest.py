"""Shared test helpers: the read-only reference data in ../shared (see ../shared/data/README.md).

Tests on real data call :func:`shared_data_dir` (or use the ``shared_data`` fixture). Off CI a
missing ../shared skips them; under ``CI=true`` it FAILS them, because CI has ../shared and a silent
skip there would hide that the real-data checks never ran.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PRM_LESSONS_SHARED", ROOT / ".." / "shared"))


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def shared_data_dir(*parts: str) -> Path:
    """``../shared/data/<parts...>`` (a file or directory); skips the test when absent, fails under CI=true."""
    path = SHARED.joinpath("data", *parts)
    if not path.exists():
        msg = f"{path} not found (reference data from ../shared; set PRM_LESSONS_SHARED to its location)"
        if on_ci():
            pytest.fail(f"CI=true: {msg}", pytrace=False)
        pytest.skip(msg)
    return path


@pytest.fixture
def shared_data() -> Path:
    """The ../shared/data directory (skip off CI / fail under CI=true when it is missing)."""
    return shared_data_dir()


def run_rule_script(log_path, func: str, rule: str, gpu: int = 0) -> None:
    """Run workflow/scripts/run.py as Snakemake's `script:` runs it, with a stand-in `snakemake` object
    (params.func = `func`, the rule's name and gpu resource), restoring the streams it redirects."""
    import logging
    import runpy
    import sys
    from types import SimpleNamespace

    items = SimpleNamespace(items=lambda: {}.items())
    fake = SimpleNamespace(scriptdir=str(ROOT / "workflow/scripts"), log=[str(log_path)],
                           params=SimpleNamespace(items=lambda: {"func": func}.items()),
                           input=items, output=items, wildcards=items, threads=1, rule=rule,
                           resources={"gpu": gpu})
    out, err, handlers = sys.stdout, sys.stderr, logging.root.handlers[:]
    try:
        runpy.run_path(str(ROOT / "workflow/scripts/run.py"), init_globals={"snakemake": fake}, run_name="__main__")
    finally:
        sys.stdout, sys.stderr = out, err
        logging.root.handlers[:] = handlers
