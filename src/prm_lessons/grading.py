"""Answer extraction (Qwen2.5-Math harness convention) and grading with math-verify under a timeout."""
from __future__ import annotations

import re


def last_boxed_content(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` (nested braces matched), or of ``\\boxed 5``.

    Follows the Qwen2.5-Math harness (``parser.extract_answer``): the last occurrence wins; an
    unclosed brace yields None.
    """
    if not text:
        return None
    idx = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if idx < 0:
        return None
    rest = text[idx:]
    rest = rest[len("\\boxed"):] if rest.startswith("\\boxed") else rest[len("\\fbox"):]
    if rest.startswith(" "):  # "\boxed 5": up to the next "$" or whitespace
        m = re.match(r" +([^\s$]+)", rest)
        return m.group(1) if m else None
    if not rest.startswith("{"):
        return None
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return rest[1:i]
    return None
