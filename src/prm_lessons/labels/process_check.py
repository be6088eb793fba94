"""An arithmetic process checker: exact step verdicts from the equations a solution writes (no model).

A step is checked by verifying every ``<expression> = <number>`` it writes with exact Fraction arithmetic
(prm_lessons.labels.arith; ``*`` and ``/`` bind tighter than ``+`` and ``-``, as written). One more thing is
checkable: a step that states the final answer (``\\boxed{x}``) must state the value the solution last
computed (the right side of the last equation written before the box, in that step or an earlier one);
a different number is a transcription error.

Verdicts per step: ``True`` (something checkable, all of it right), ``False`` (an equation is false or
the boxed answer contradicts the last computed value), ``None`` (nothing checkable: no equation, no
checkable box). The response's first error is the first ``False`` step (-1: none). A step with nothing
checkable counts as correct: the checker never guesses, so its errors are misses (an error it cannot
see: a wrong operation computed consistently, a misread question, reasoning in words), never false
alarms from guessing; `coverage` (the share of steps with a verdict) says how much it saw.

What it does not read: LaTeX fractions (``\\frac{1}{2}``), powers, units; such steps are unchecked.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

from ..grading.golds import last_boxed_content
from .arith import equations, to_fraction

__all__ = ["ResponseCheck", "StepCheck", "check_response", "check_step", "coverage"]


@dataclass(frozen=True)
class StepCheck:
    """One step's verdict (True / False / None), its equations checked and the false ones (``lhs = rhs``)."""
    verdict: bool | None
    n_checked: int = 0
    wrong: tuple[str, ...] = ()
    last_value: Fraction | None = None  # the right side of the last equation written (carried on)


@dataclass(frozen=True)
class ResponseCheck:
    steps: list[StepCheck] = field(default_factory=list)

    @property
    def verdicts(self) -> list[bool | None]:
        return [s.verdict for s in self.steps]

    @property
    def first_error(self) -> int:
        """0-based index of the first wrong step, -1 when no step is wrong."""
        return next((i for i, s in enumerate(self.steps) if s.verdict is False), -1)

    @property
    def n_checkable(self) -> int:
        return sum(s.verdict is not None for s in self.steps)


def _boxed_value(step: str) -> tuple[Fraction | None, int]:
    """The number in a step's last ``\\boxed{}`` and where the box starts (None, -1: no numeric box)."""
    pos = step.rfind("\\boxed{")
    if pos < 0:
        return None, -1
    shown = last_boxed_content(step)
    try:
        return to_fraction(str(shown).strip().strip("$").replace(" ", "")), pos
    except (ValueError, ZeroDivisionError):
        return None, pos


def check_step(step: str, carried: Fraction | None = None) -> StepCheck:
    """Verdict on one step. ``carried``: the last value computed by earlier steps (for a boxed answer)."""
    text = str(step)
    eqs = equations(text, strict=True)
    boxed, box_pos = _boxed_value(text)
    wrong = [f"{e['lhs']} = {text[e['rhs_span'][0]:e['rhs_span'][1]]}" for e in eqs if not e["holds"]]
    before_box = [e for e in eqs if box_pos < 0 or e["eq_pos"] < box_pos]
    last = before_box[-1]["rhs_value"] if before_box else carried
    n_checked = len(eqs)
    if boxed is not None and last is not None:
        n_checked += 1
        if boxed != last:
            wrong.append(f"boxed {boxed} != last computed {last}")
    after = eqs[-1]["rhs_value"] if eqs else carried
    verdict = None if n_checked == 0 else not wrong
    return StepCheck(verdict, n_checked, tuple(wrong), after)


def check_response(steps: Sequence[str]) -> ResponseCheck:
    """Verdicts on every step of a response (the last computed value carried from step to step)."""
    out, carried = [], None
    for s in steps:
        chk = check_step(s, carried)
        out.append(chk)
        carried = chk.last_value
    return ResponseCheck(out)


def coverage(checks: Sequence[ResponseCheck]) -> tuple[int, int]:
    """(steps with a verdict, steps) over responses."""
    return sum(c.n_checkable for c in checks), sum(len(c.steps) for c in checks)
