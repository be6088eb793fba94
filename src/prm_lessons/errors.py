"""The error type for bad input rows: every problem found in a file or frame, one line each, rather
than the first one only (the CLIs print the lines and exit with status 2; a workflow job fails with
them)."""
from __future__ import annotations

import numbers
from typing import Iterable

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
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "boolean"
    if isinstance(value, numbers.Number):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ndarray":
        return "array"
    return type(value).__name__
