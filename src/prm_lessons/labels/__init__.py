"""Step labels for sampled responses: Monte Carlo estimation (`mc`), LLM-as-a-judge
(`judge`), human labels (`human`: PRM800K or labels by construction), consensus filtering
(`consensus`) and the training sets built from them (`trainsets`).

Conventions shared by every labeller (and pinned by tests/labels/test_*.py):

* Steps are the sample table's ``steps`` after :func:`clean_steps` (whitespace-only steps removed),
  so MC, the judge and the training sets index the same steps.
* A *first error* is a 0-based step index, ``-1`` when no step is wrong, ``None`` when unknown
  (an unparsable judge verdict, an MC label that was not rolled out).
* Labels are truncated after the first negative step (the paper's rule): a first error ``k`` gives
  hard labels ``[1]*k + [0]``; ``-1`` gives all ones.
"""
from __future__ import annotations

from typing import Sequence

NOT_JUDGED = "not_run"  # audit_labels' judge_status where audit.judge is off (no verdict asked for)


def clean_steps(steps: Sequence[str] | None) -> list[str]:
    """The steps every labeller sees: strings, whitespace-only steps dropped (None → [])."""
    if steps is None:
        return []
    return [str(s) for s in steps if s is not None and str(s).strip()]


def labels_from_first_error(first_error: int | None, n_steps: int) -> list[float] | None:
    """Hard labels from a first-error index: ``[1]*k + [0]`` (truncated after the error) or all ones
    for ``-1``. ``None`` (unknown) or an index outside ``[-1, n_steps)`` gives ``None``."""
    if first_error is None or n_steps <= 0:
        return None
    k = int(first_error)
    if k == -1:
        return [1.0] * n_steps
    if 0 <= k < n_steps:
        return [1.0] * k + [0.0]
    return None


def first_error_from_labels(labels: Sequence[float]) -> int:
    """Index of the first negative hard label (value < 0.5); -1 if every step is positive."""
    for i, v in enumerate(labels):
        if float(v) < 0.5:
            return i
    return -1


def instance_id(problem_id: str, sample_idx: int) -> str:
    return f"{problem_id}#{int(sample_idx)}"
