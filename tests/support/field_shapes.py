"""The value shapes a JSON or parquet row can hold in a field, fed to every checked reader (tests/test_fields.py)
and to every field of every loader (tests/test_fields_loaders.py); `declared` says whether a reader kind
of prm_lessons.fields takes a shape."""
from __future__ import annotations

import numpy as np

from prm_lessons import fields as F

SHAPES = {
    "text": "a text",
    "bracketed_text": "[0, 1]",
    "object": {"text": "2"},
    "integer": 1,
    "fraction": 0.5,
    "null": None,
    "nan": float("nan"),
    "infinity": float("inf"),
    "bool": True,
    "numpy_bool": np.bool_(False),
    "blank": "  ",
    "none_text": "None",
}
# shapes read as another: numpy's bool is a bool, "None" is text
SAME = {"numpy_bool": "bool", "none_text": "text"}


def declared(kind: str, shape: str, items: bool = False) -> bool:
    """Whether the reader of `kind` takes the shape ("None" is text, except as a gold: what a missing value is
    written as); `items`: as an element of a list-valued field."""
    reader = F.READERS[kind]
    taken = reader.items if items else reader.accepts
    if shape == "none_text" and kind.startswith("gold"):
        return False
    return shape in taken or SAME.get(shape) in taken
