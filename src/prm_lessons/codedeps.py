"""The package source files a rule's job runs, found from the imports (AST), so that editing a module
reruns exactly the rules whose code uses it.

A rule's function `rules/<stage>.py:<rule>` is the seed: its module, the package modules its body
refers to (through the names the rules module imports, and helpers of that module it calls), then
everything those modules import, top-level and function-local alike, with the `__init__.py` of every
package on the way (importing `prm_lessons.labels.mc` runs `labels/__init__.py`). Runs while the DAG
is built, like `plan` and `config`, which no job imports (a test holds that).

Snakemake's own `code` rerun trigger sees only workflow/scripts/run.py, the same for every rule, and
its `--rerun-triggers` cannot follow a package, hence the explicit inputs.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE = "prm_lessons"


def _module_file(root: Path, module: str) -> Path | None:
    """`prm_lessons.a.b` → its file under root (the package directory), None if not a package module."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _module_name(root: Path, file: Path) -> str:
    rel = file.relative_to(root).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(root: Path, module: str, node: ast.ImportFrom) -> list[tuple[str, str | None]]:
    """(module, bound name) pairs a `from ... import ...` makes package modules of."""
    if node.level:
        is_pkg = _module_file(root, module) is not None and _module_file(root, module).name == "__init__.py"
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        # `from pkg import submodule` binds the submodule; `from mod import name` binds a name of mod
        out.append((sub if _module_file(root, sub) else target, alias.asname or alias.name))
    return [(m, n) for m, n in out if _module_file(root, m)]


@lru_cache(maxsize=None)
def _imports(root: Path, file: Path) -> tuple[dict[str, str], frozenset[str]]:
    """(top-level bound name → package module, every package module imported anywhere in the file)."""
    module = _module_name(root, file)
    tree = ast.parse(file.read_text(), str(file))
    top: dict[str, str] = {}
    every: set[str] = set()
    for node in ast.walk(tree):
        pairs = []
        if isinstance(node, ast.ImportFrom):
            pairs = _resolve(root, module, node)
        elif isinstance(node, ast.Import):
            pairs = [(a.name, a.asname or a.name.split(".")[0]) for a in node.names if _module_file(root, a.name)]
        every.update(m for m, _ in pairs)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            top.update({n: m for m, n in _resolve(root, module, node)})
        elif isinstance(node, ast.Import):
            top.update({a.asname or a.name: a.name for a in node.names if _module_file(root, a.name)})
    return top, frozenset(every)


def _with_parents(root: Path, module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1) if _module_file(root, ".".join(parts[:i]))}


def module_closure(root: Path, modules) -> set[str]:
    """Package modules that importing `modules` runs (imports followed transitively, parents included)."""
    todo = [m for mod in modules for m in _with_parents(root, mod)]
    seen: set[str] = set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for dep in _imports(root, _module_file(root, m))[1]:
            todo.extend(_with_parents(root, dep) - seen)
    return seen


def function_modules(root: Path, module: str, func: str) -> set[str]:
    """Package modules a function of `module` uses: names its body (and the module's own helpers it
    calls) bind to imported package modules, and imports inside those bodies."""
    file = _module_file(root, module)
    if file is None:
        raise ValueError(f"no module {module} under {root}")
    tree = ast.parse(file.read_text(), str(file))
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    if func not in defs:
        raise ValueError(f"{module} has no function {func}")
    top = _imports(root, file)[0]
    used: set[str] = set()
    todo, done = [func], set()
    while todo:
        name = todo.pop()
        if name in done:
            continue
        done.add(name)
        for node in ast.walk(defs[name]):
            if isinstance(node, ast.Name):
                if node.id in top:
                    used.add(top[node.id])
                elif node.id in defs:
                    todo.append(node.id)
            elif isinstance(node, ast.ImportFrom):
                used.update(m for m, _ in _resolve(root, module, node))
            elif isinstance(node, ast.Import):
                used.update(a.name for a in node.names if _module_file(root, a.name))
    return used


def rule_code_inputs(root: str | Path, func: str) -> list[str]:
    """Source files of the package that the job of `func` ("<stage>:<rule>") runs, sorted: the rule
    module itself and the closure of the modules the function uses. Paths are under `root` as given (the
    workflow passes it relative to the working directory, so a moved checkout declares the same inputs)."""
    root = Path(root)
    stage, name = func.split(":")
    module = f"{PACKAGE}.rules.{stage}"
    # the rules module's other imports serve other rules: only what this function uses
    mods = module_closure(root, function_modules(root, module, name)) | _with_parents(root, module)
    return sorted(str(_module_file(root, m)) for m in mods)
