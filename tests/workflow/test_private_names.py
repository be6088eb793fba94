"""No private name crosses a module boundary: `from prm_lessons.x import _name` makes x's internals part
of another module's contract (and of its rerun unit), so a shared helper must be public where it lives."""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "prm_lessons"


def private_imports(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prm_lessons"):
                found += [f"{path.relative_to(root)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_private_name_is_imported_across_modules():
    assert private_imports(SRC) == []


def test_the_check_sees_a_private_import(tmp_path):
    (tmp_path / "m.py").write_text("from prm_lessons.findings import _f1\n")
    assert private_imports(tmp_path) == ["m.py: prm_lessons.findings._f1"]
