"""Code fingerprints (prm_lessons.plan.codedeps): a docstring, comment, blank-line or formatting edit keeps a
module's fingerprint and leaves its fingerprint file untouched (content and mtime); a real code change
changes the fingerprint of exactly the rules whose closure holds the module. The workflow-level check
(a dry run on a finished checkout) is the slow test in test_structure.py."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from prm_lessons.plan import codedeps

ROOT = Path(__file__).resolve().parents[2]

# A package shaped like prm_lessons: two rules, one using `tables`, one using `other`.
PKG_FILES = {
    "__init__.py": "",
    "tables.py": '''"""Table I/O."""
import json


def write(path, rows):
    """Write rows."""
    return json.dumps(rows)


class Table:
    """A table."""

    def rows(self):
        """Its rows."""
        return []
''',
    "other.py": '''def helper(x):
    return x + 1
''',
    "unused.py": '''VALUE = 1
''',
    "cli.py": '''"""Help text of a command line."""
import argparse

PARSER = argparse.ArgumentParser(description=__doc__)
''',
    "rules/__init__.py": "",
    "rules/stage.py": '''from prm_lessons import other, tables


def uses_tables(*, inputs, outputs, params, wildcards, threads):
    tables.write(outputs["out"], [])


def uses_other(*, inputs, outputs, params, wildcards, threads):
    other.helper(1)
''',
}
FUNCS = ("stage:uses_tables", "stage:uses_other")


@pytest.fixture
def pkg(tmp_path):
    root = tmp_path / "src" / "prm_lessons"
    for rel, text in PKG_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _edit(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _fingerprints(root):
    return {f: codedeps.rule_fingerprint(root, f) for f in FUNCS}


@pytest.mark.parametrize("old, new", [
    ('"""Table I/O."""', '"""Table I/O: every stage table goes through here."""'),  # module docstring
    ('"""Write rows."""', '"""Write rows.\n\n    Atomically.\n    """'),  # function docstring
    ('    """A table."""\n', ""),  # a class docstring removed
    ('        """Its rows."""\n', ""),  # a method's docstring removed
    ("import json\n", "import json  # the format\n\n\n# a comment line\n"),  # comments and blank lines
    ("return json.dumps(rows)", "return json.dumps(\n        rows\n    )"),  # formatting
], ids=["module-doc", "function-doc", "class-doc", "method-doc", "comments-blank-lines", "formatting"])
def test_a_docstring_comment_or_layout_edit_keeps_every_fingerprint(pkg, old, new):
    before = _fingerprints(pkg), codedeps.module_fingerprint(pkg, "prm_lessons.tables")
    _edit(pkg / "tables.py", old, new)
    assert (_fingerprints(pkg), codedeps.module_fingerprint(pkg, "prm_lessons.tables")) == before


@pytest.mark.parametrize("old, new", [
    ("json.dumps(rows)", "json.dumps(rows, sort_keys=True)"),
    ("return []", "return [1]"),
    ("import json\n", "import json\n\nDEFAULT = 1\n"),
    ('"""Write rows."""', '"""Write rows."""\n    rows = list(rows)'),  # a statement after the docstring
], ids=["call", "constant", "new-name", "statement-after-docstring"])
def test_a_code_change_changes_the_fingerprint_of_exactly_the_rules_that_use_the_module(pkg, old, new):
    before = _fingerprints(pkg)
    _edit(pkg / "tables.py", old, new)
    after = _fingerprints(pkg)
    assert after["stage:uses_tables"] != before["stage:uses_tables"]
    assert after["stage:uses_other"] == before["stage:uses_other"]


def test_a_change_in_a_module_outside_every_closure_changes_nothing(pkg):
    before = _fingerprints(pkg)
    _edit(pkg / "unused.py", "VALUE = 1", "VALUE = 2")
    assert _fingerprints(pkg) == before


def test_a_module_that_reads_its_docstring_keeps_it_in_the_fingerprint(pkg):
    before = codedeps.module_fingerprint(pkg, "prm_lessons.cli")
    _edit(pkg / "cli.py", "Help text of a command line.", "Other help text.")
    assert codedeps.module_fingerprint(pkg, "prm_lessons.cli") != before


def test_fingerprint_files_are_rewritten_only_when_the_code_changes(pkg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = "state/codedeps"
    source = pkg / "tables.py"
    os.utime(source, (1_000_000, 1_000_000))
    paths = codedeps.rule_code_fingerprints(pkg, "stage:uses_tables", store)
    fp = Path(store, "prm_lessons/tables.py.fingerprint")
    assert str(fp) in paths and not any("other.py" in p for p in paths)
    # a new file takes its source's mtime: outputs made since the source last changed stay up to date
    assert fp.stat().st_mtime == 1_000_000
    assert fp.read_text() == f"{codedeps.module_fingerprint(pkg, 'prm_lessons.tables')}  prm_lessons/tables.py\n"

    os.utime(fp, (2_000_000, 2_000_000))
    _edit(source, '"""Write rows."""', '"""Write the rows."""')
    codedeps.rule_code_fingerprints(pkg, "stage:uses_tables", store)
    assert fp.stat().st_mtime == 2_000_000  # untouched: no job reruns

    text = fp.read_text()
    _edit(source, "json.dumps(rows)", "json.dumps(rows, indent=1)")
    codedeps.rule_code_fingerprints(pkg, "stage:uses_tables", store)
    assert fp.read_text() != text and fp.stat().st_mtime > 2_000_000  # rewritten now: newer than outputs
    assert not list(Path(store).rglob("*.tmp"))


def test_the_source_cache_is_keyed_by_the_source_text(pkg, tmp_path, monkeypatch):
    """The `.source` side file skips the tree walk for an unchanged module; a stale or foreign one is
    never trusted for another text."""
    monkeypatch.chdir(tmp_path)
    codedeps.rule_code_fingerprints(pkg, "stage:uses_tables", "s")
    side = Path("s/prm_lessons/tables.py.fingerprint.source")
    side.write_text(side.read_text().rsplit(" ", 1)[0] + " forged\n")  # same key, another value: trusted
    codedeps._store_file.cache_clear()
    codedeps.rule_code_fingerprints(pkg, "stage:uses_tables", "s")
    assert Path("s/prm_lessons/tables.py.fingerprint").read_text().startswith("forged ")
    _edit(pkg / "tables.py", "return []", "return [2]")  # another text: recomputed
    codedeps.rule_code_fingerprints(pkg, "stage:uses_tables", "s")
    expected = codedeps.module_fingerprint(pkg, "prm_lessons.tables")
    assert Path("s/prm_lessons/tables.py.fingerprint").read_text().startswith(expected + " ")


def _rule_funcs(root: Path) -> list[str]:
    import ast
    out = []
    for f in sorted((root / "rules").glob("*.py")):
        if f.stem != "__init__":
            tree = ast.parse(f.read_text())
            out += [f"{f.stem}:{n.name}" for n in tree.body
                    if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    return out


def test_on_the_package_a_tables_docstring_edit_changes_no_rule_and_a_code_change_exactly_its_importers(tmp_path):
    root = tmp_path / "prm_lessons"
    shutil.copytree(ROOT / "src" / "prm_lessons", root, ignore=shutil.ignore_patterns("__pycache__"))
    funcs = _rule_funcs(root)
    before = {f: codedeps.rule_fingerprint(root, f) for f in funcs}
    tables = root / "tables.py"
    text = tables.read_text()
    future = "from __future__ import annotations\n"
    assert text.startswith('"""') and future in text
    tables.write_text('"""Edited: ' + text[3:].replace(future, future + "  # a comment\n\n\n# another\n", 1))
    assert {f: codedeps.rule_fingerprint(root, f) for f in funcs} == before

    tables.write_text(text + "\n_EDITED = 1\n")
    changed = {f for f in funcs if codedeps.rule_fingerprint(root, f) != before[f]}
    importers = {f for f in funcs if str(tables) in codedeps.rule_code_inputs(root, f)}
    assert changed == importers
    assert 20 < len(importers) < len(funcs)  # tables is in most closures, not all (the downloads')


DELEGATING = {
    "defs/__init__.py": "",
    "defs/a.py": '''from prm_lessons import tables


def run(*, inputs, outputs, params, wildcards, threads):
    tables.write(outputs["out"], [])
''',
    "defs/b.py": '''from prm_lessons import other


def run(*, inputs, outputs, params, wildcards, threads):
    other.helper(1)
''',
    "rules/art.py": '''import importlib

DELEGATE = "prm_lessons.defs.{name}:run"


def __getattr__(name):
    module, _, func = DELEGATE.format(name=name).partition(":")
    return getattr(importlib.import_module(module), func)
''',
}


def test_a_delegated_rule_function_is_its_own_module_and_what_it_imports_not_its_siblings(pkg):
    """rules/analysis.py resolves each artifact rule to `run` of artifacts/defs/<stem>.py (DELEGATE): a rule's
    closure is that module's, so an edit of another artifact's module reruns only that artifact."""
    for rel, text in DELEGATING.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    a, b = codedeps.rule_modules(pkg, "art:a"), codedeps.rule_modules(pkg, "art:b")
    assert {"prm_lessons.defs.a", "prm_lessons.tables", "prm_lessons.rules.art"} <= a
    assert not {"prm_lessons.defs.b", "prm_lessons.other"} & a
    assert "prm_lessons.defs.b" in b and "prm_lessons.defs.a" not in b
    before = {f: codedeps.rule_fingerprint(pkg, f) for f in ("art:a", "art:b")}
    _edit(pkg / "defs/b.py", "other.helper(1)", "other.helper(2)")
    assert codedeps.rule_fingerprint(pkg, "art:a") == before["art:a"]
    assert codedeps.rule_fingerprint(pkg, "art:b") != before["art:b"]
    with pytest.raises(ValueError, match="has no function missing"):
        codedeps.rule_modules(pkg, "art:missing")  # DELEGATE names a module that does not exist


def test_on_the_package_an_artifact_rule_holds_its_own_module_not_the_other_artifacts():
    pkg = ROOT / "src" / "prm_lessons"
    defs = "prm_lessons.artifacts.defs."
    table6 = codedeps.rule_modules(pkg, "analysis:table6_bon_main")
    assert {m for m in table6 if m.startswith(defs)} == {defs + "table6_bon_main"}
    assert "prm_lessons.artifacts.plots" not in table6  # a plotting edit rebuilds no table
    # Table 9 is Table 6's builder on the second policy's rows: it holds that module too, and no other
    table9 = codedeps.rule_modules(pkg, "analysis:table9_bon_second_policy")
    assert {m for m in table9 if m.startswith(defs)} == {defs + "table9_bon_second_policy", defs + "table6_bon_main"}
    fig8 = codedeps.rule_modules(pkg, "analysis:fig8_min_at_last_step")
    assert {m for m in fig8 if m.startswith(defs)} == {defs + "fig8_min_at_last_step"}
    assert "prm_lessons.artifacts.plots" in fig8 and "prm_lessons.artifacts.render" not in fig8
