"""Helpers the plan stage modules share."""
from __future__ import annotations

import re


def wildcard_alternatives(names) -> str:
    """Wildcard regex matching exactly these names (never matches when there are none)."""
    names = list(names)
    return "|".join(re.escape(n) for n in names) if names else "(?!)"
