"""The error type for bad input rows: every problem found in a file or frame, one line each, rather
than the first one only (the CLIs print the lines and exit with status 2; a workflow job fails with
them); and the strict readers of JSON values that the row checks share (no bool()/int() casts)."""
from __future__ import annotations

import math
import numbers
from typing import Iterable

import numpy as np

MAX_PROBLEM_LINES = 20  # lines shown; the rest are counted ("… and N more")


class InputError(ValueError):
    """Bad input: `problems` holds one line per problem found (each names its row, line or id);
    str() shows the first MAX_PROBLEM_LINES of them and "… and N more"."""

    def __init__(self, problems: Iterable[str], where: str | None = None):
        problems = [str(p) for p in problems] or ["invalid input"]
        self.problems = [f"{where}: {p}" for p in problems] if where else problems
        super().__init__("\n".join(self.lines()))

    def lines(self, limit: int = MAX_PROBLEM_LINES) -> list[str]:
        shown = self.problems[:limit]
        rest = len(self.problems) - len(shown)
        return shown + ([f"… and {rest} more"] if rest > 0 else [])

    def within(self, where: str) -> "InputError":
        """The same problems, each prefixed with `where` (a file name)."""
        return InputError(self.problems, where)


def json_type(value) -> str:
    """The JSON name of a value's type, for messages ("a JSON string"); numpy scalars and arrays too."""
    if value is None:
        return "null"
    if is_bool(value):
        return "boolean"
    if isinstance(value, numbers.Number):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple, np.ndarray)):
        return "array"
    return type(value).__name__


def is_bool(value) -> bool:
    """A JSON boolean (numpy's too): never read as a number, though Python's bool is an int."""
    return isinstance(value, (bool, np.bool_))


def as_int(value) -> int | None:
    """An integer, or a finite integral float (Parquet stores integers beside a missing value as
    floats); None for anything else: booleans, 1.7, NaN, strings ("2" is not read as 2)."""
    if is_bool(value):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


def as_bool01(value) -> bool | None:
    """A boolean, or a number equal to 0 or 1 (1.0 too); None for anything else: bool("False") would be
    True, so strings, null/NaN, 2 and lists are never read as a truth value."""
    if is_bool(value):
        return bool(value)
    if isinstance(value, numbers.Real) and (value == 0 or value == 1):
        return bool(value == 1)
    return None
