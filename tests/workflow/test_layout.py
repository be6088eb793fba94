"""tests/ mirrors the package (docs/testing.md): a test of `src/prm_lessons/<mod>.py` is `tests/test_<mod>.py`
(or `test_<mod>_<aspect>.py`), one of `src/prm_lessons/<sub>/<mod>.py` is `tests/<sub>/test_<mod>[_<aspect>].py`,
tests that run or plan the workflow live in `tests/workflow/`, helpers in `tests/support/`. A file outside
that layout fails here, so the layout cannot rot one file at a time."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APART = {"workflow", "support"}  # no package mirror: workflow tests (any name) and shared helpers


def _modules(pkg: Path) -> set[str]:
    """Names a test file may start with in the mirror of `pkg`: its modules, and its own name (its __init__)."""
    return {p.stem for p in pkg.glob("*.py") if p.stem != "__init__"} | {pkg.name}


def _named_after(name: str, modules: set[str], hostile_ok: bool) -> bool:
    stem = name.removesuffix(".py").removeprefix("test_")
    return (any(stem == m or stem.startswith(m + "_") for m in modules)
            or (hostile_ok and (stem == "hostile" or stem.startswith("hostile_"))))


def layout_problems(tests: Path, pkg: Path) -> list[str]:
    """Every file or folder of `tests` outside the layout, and every test basename used twice (pytest's
    default import mode imports test files by basename)."""
    problems, seen = [], {}
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests)
        if "__pycache__" in rel.parts:
            continue
        if rel.name.startswith("test_"):
            if rel.name in seen:
                problems.append(f"{rel}: basename also used by {seen[rel.name]}")
            seen.setdefault(rel.name, rel)
        if rel.parts[0] in APART:
            continue
        folder = pkg.joinpath(*rel.parts[:-1])
        if rel.parent != Path(".") and not (folder / "__init__.py").is_file():
            problems.append(f"{rel}: tests/{rel.parent}/ mirrors no package src/prm_lessons/{rel.parent}/ "
                            f"(workflow tests: tests/workflow/, helpers: tests/support/)")
        elif rel.name == "conftest.py" and rel.parent == Path("."):
            continue
        elif not rel.name.startswith("test_"):
            problems.append(f"{rel}: helpers belong in tests/support/")
        elif not _named_after(rel.name, _modules(folder) - {"prm_lessons"}, hostile_ok=rel.parent != Path(".")):
            where = f"src/prm_lessons/{rel.parent}/" if rel.parent != Path(".") else "src/prm_lessons/"
            problems.append(f"{rel}: named after no module of {where} (test_<module>[_<aspect>].py)")
    return problems


def test_tests_mirror_the_package():
    assert layout_problems(ROOT / "tests", ROOT / "src" / "prm_lessons") == []


def test_a_file_outside_the_layout_is_named(tmp_path):
    pkg, tests = tmp_path / "prm_lessons", tmp_path / "tests"
    for f in ("__init__.py", "tables.py", "metrics/__init__.py", "metrics/bon.py"):
        (pkg / f).parent.mkdir(parents=True, exist_ok=True)
        (pkg / f).touch()
    ok = ["conftest.py", "test_tables.py", "test_tables_csv.py", "metrics/test_bon.py", "metrics/test_hostile.py",
          "workflow/test_anything.py", "support/fakes.py"]
    bad = ["test_fixes_of_issue_9.py", "test_metrics.py", "helpers.py", "metrics/test_vote.py",
           "metrics/fakes.py", "scoring/test_adapters.py", "workflow/test_bon.py"]
    for f in ok + bad:
        (tests / f).parent.mkdir(parents=True, exist_ok=True)
        (tests / f).touch()
    problems = layout_problems(tests, pkg)
    assert [p.split(":")[0] for p in problems] == sorted(
        ["test_fixes_of_issue_9.py", "test_metrics.py", "helpers.py", "metrics/test_vote.py", "metrics/fakes.py",
         "scoring/test_adapters.py", "workflow/test_bon.py"])
    assert "workflow/test_bon.py: basename also used by metrics/test_bon.py" in problems
