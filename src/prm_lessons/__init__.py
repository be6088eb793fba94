"""prm-lessons: the experiments of 'The Lessons of Developing Process Reward Models in Mathematical
Reasoning' (arXiv 2501.07301) as a Snakemake workflow. All stage logic lives in this package."""
import os
from pathlib import Path

__version__ = "0.1.0"


def as_paths(value) -> list[str]:
    """A rule's named input/output as a list of paths (Snakemake gives a str for one file, a list for
    several; nothing -> [])."""
    if not value:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def checkout_env(base: dict | None = None) -> dict:
    """An environment whose Python imports this checkout's package: child processes (grading workers,
    torchrun ranks) inside conda envs, where the package is not installed and Snakemake passes no
    PYTHONPATH."""

    env = dict(os.environ if base is None else base)
    src = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
