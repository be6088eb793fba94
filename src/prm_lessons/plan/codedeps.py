"""The package code a rule's job runs, found from the imports (AST), and its fingerprint, so that a
real code change reruns exactly the rules whose code uses it, and a docstring or comment edit reruns
nothing.

A rule's function `rules/<stage>.py:<rule>` is the seed: its module, the package modules its body
refers to (through the names the rules module imports, and helpers of that module it calls), then
everything those modules import, top-level and function-local alike, with the `__init__.py` of every
package on the way (importing `prm_lessons.labels.mc` runs `labels/__init__.py`). Runs while the DAG
is built, like `plan` and `config`, which no job imports (a test holds that).

A module's fingerprint is a hash of its syntax tree without docstrings (comments, blank lines and
formatting are not in the tree). A rule declares, as inputs, one small file per module of its closure
holding that module's fingerprint (`rule_code_fingerprints`, under `STORE` in the working directory).
A file is rewritten only when its fingerprint changes, so Snakemake's mtime and checksum triggers see
real code changes only, and the dry run's reason names the changed module.

Snakemake's own `code` rerun trigger sees only workflow/scripts/run.py, the same for every rule, and
its `--rerun-triggers` cannot follow a package, hence the explicit inputs.
"""
from __future__ import annotations

import ast
import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path

PACKAGE = "prm_lessons"
# Where the fingerprint files live, relative to the working directory: next to Snakemake's own records
# (.snakemake/metadata holds the checksums they are compared with), so they share their lifetime, sit on
# the same shared file system as the results, are gitignored in every Snakemake project, and a fresh
# clone or another --directory starts its own.
STORE = ".snakemake/codedeps"
# The fingerprint's form, part of the key of the `.source` cache: changing _canonical means a new scheme,
# and a new scheme reruns every job once (every fingerprint changes)
SCHEME = "ast1"


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


def _imports(root: Path, file: Path) -> tuple[dict[str, str], frozenset[str]]:
    """(top-level bound name → package module, every package module imported anywhere in the file)."""
    return _analyse(root, _module_name(root, file), file.read_text(), str(file))


@lru_cache(maxsize=None)
def _analyse(root: Path, module: str, text: str, filename: str) -> tuple[dict[str, str], frozenset[str]]:
    """`_imports` of a module's source, cached by its text (an edit is seen)."""
    tree = ast.parse(text, filename)
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


# -- fingerprints ----------------------------------------------------------------------------------------

_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _canonical(node, keep_docs: bool = False) -> str:
    """A node as text, like `ast.dump` (no line numbers), without docstrings unless `keep_docs`, and
    leaving out empty fields (None, []): Python versions add fields (3.12 `type_params`) and change
    ast.dump's defaults (3.13 omits empty ones), and a Python upgrade should not rerun every job."""
    if isinstance(node, ast.AST):
        fields = []
        for k, v in ast.iter_fields(node):
            if k == "body" and not keep_docs and isinstance(node, _DOCUMENTED) and v and _is_docstring(v[0]):
                v = v[1:]
            if v is not None and v != []:
                fields.append(f"{k}={_canonical(v, keep_docs)}")
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(_canonical(v, keep_docs) for v in node) + "]"
    return repr(node)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


@lru_cache(maxsize=None)
def _fingerprint(text: str, filename: str) -> str:
    # a module that reads `__doc__` (a CLI's help text) keeps its docstrings in the fingerprint
    tree = ast.parse(text, filename)  # not kept from _analyse: held trees slow every garbage collection
    return hashlib.sha256(_canonical(tree, keep_docs="__doc__" in text).encode()).hexdigest()


def module_fingerprint(root: str | Path, module: str) -> str:
    """The fingerprint of a package module: equal for two versions that differ only in comments,
    docstrings, blank lines or formatting."""
    root = Path(root)
    file = _module_file(root, module)
    if file is None:
        raise ValueError(f"no module {module} under {root}")
    return _fingerprint(file.read_text(), str(file))


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
        target = _delegate(root, tree, func)
        if target is None:
            raise ValueError(f"{module} has no function {func}")
        # the function lives in its own module: that module (its closure follows) and what the function uses
        return {target[0]} | function_modules(root, *target)
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


def _delegate(root: Path, tree: ast.Module, func: str) -> tuple[str, str] | None:
    """A rules module that resolves its rule functions in other modules (a module `__getattr__`) says where
    in a literal `DELEGATE = "<module, {name} = the rule>:<function>"`: (module, function) of `func` there,
    None when it declares none or that module does not exist."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["DELEGATE"]:
            module, _, name = ast.literal_eval(node.value).format(name=func).partition(":")
            return (module, name) if _module_file(root, module) else None
    return None


def rule_modules(root: str | Path, func: str) -> set[str]:
    """Package modules the job of `func` ("<stage>:<rule>") runs: the rule module itself (and its
    packages) and the closure of the modules the function uses."""
    root = Path(root)
    stage, name = func.split(":")
    module = f"{PACKAGE}.rules.{stage}"
    # the rules module's other imports serve other rules: only what this function uses
    return module_closure(root, function_modules(root, module, name)) | _with_parents(root, module)


def rule_code_inputs(root: str | Path, func: str) -> list[str]:
    """Source files of the package that the job of `func` runs, sorted. Paths are under `root` as given."""
    root = Path(root)
    return sorted(str(_module_file(root, m)) for m in rule_modules(root, func))


def rule_fingerprint(root: str | Path, func: str) -> str:
    """One hash of the code the job of `func` runs: over (module, module fingerprint) of its closure."""
    lines = sorted(f"{m}\t{module_fingerprint(root, m)}\n" for m in rule_modules(root, func))
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def rule_code_fingerprints(root: str | Path, func: str, store: str | Path = STORE) -> list[str]:
    """The fingerprint files of the modules the job of `func` runs, sorted, each brought up to date: the
    rule's code inputs. `store` is relative to the working directory (the workflow passes STORE), so a
    moved checkout declares the same inputs."""
    root = Path(root)
    out = []
    for m in sorted(rule_modules(root, func)):
        file = _module_file(root, m)
        rel = Path(PACKAGE, file.relative_to(root)).as_posix()
        out.append(_store_file(rel, str(store), file.read_text(), str(file)))
    return sorted(out)


def script_fingerprint(checkout: str | Path, script: str, store: str | Path = STORE) -> str:
    """The fingerprint file of a workflow script (`script`, relative to the checkout: the rules' one
    `script:`, workflow/scripts/run.py), brought up to date like a module's. The workflow declares it as
    every rule's input and leaves Snakemake's own `code` trigger out (profiles/default): that trigger
    compares the script's mtime with the outputs', so a clone or a copy of the checkout, which gives
    the script a new mtime, would rerun every job although no code changed."""
    file = Path(checkout) / script
    return _store_file(Path(script).as_posix(), str(store), file.read_text(), str(file))


def data_fingerprint(checkout: str | Path, rel: str, store: str | Path = STORE) -> str:
    """The fingerprint file of a data file of the checkout that jobs read (`rel`, relative to the checkout:
    published.yaml, a built-in prompt, paper/main.tex): the hash of its text, rewritten only when the
    text changes. The workflow declares it beside the file and ignores the file's own mtime (`ancient`),
    so a clone or copy reruns nothing and an edit reruns the jobs that read it."""
    file = Path(checkout) / rel
    return _store_file(Path(rel).as_posix(), str(store), file.read_text(), str(file), code=False)


@lru_cache(maxsize=None)
def _store_file(rel: str, store: str, text: str, source: str, code: bool = True) -> str:
    """Bring the fingerprint file of a source file (`<store>/<rel>.fingerprint`, rel e.g.
    `prm_lessons/tables.py`) up to date, and return its path. A side file `.source` keeps the fingerprint
    of the source text last seen, so an unchanged module costs a hash of its text, not a walk of its tree
    (a dry run repeats this for every module). `code=False`: a data file, fingerprinted by its text."""
    path = os.path.join(store, rel + ".fingerprint")
    key = f"{SCHEME} python{sys.version_info[0]}.{sys.version_info[1]} {hashlib.sha256(text.encode()).hexdigest()} "
    try:
        with open(path + ".source") as f:
            seen = f.read()
    except FileNotFoundError:
        seen = ""
    if seen.startswith(key):
        fp = seen[len(key):].strip()
    else:
        fp = _fingerprint(text, source) if code else hashlib.sha256(text.encode()).hexdigest()
        _write_if_changed(path + ".source", f"{key}{fp}\n")
    _write_if_changed(path, f"{fp}  {rel}\n", mtime_of=source)
    return path


def _write_if_changed(path: str, text: str, mtime_of: str | None = None) -> None:
    """Write a file only if its text changed, so its mtime moves only with its content. A new file takes
    the mtime of `mtime_of`: for a fingerprint, its source's, so outputs made since the source last
    changed stay up to date when the store is first built (a fresh .snakemake, this scheme's first run).
    A changed one is written now, which is newer than every output made with the old code."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
        new = False
    except FileNotFoundError:
        new = True
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"  # whole file or none: SLURM jobs parse the workflow concurrently
    with open(tmp, "w") as f:
        f.write(text)
    if new and mtime_of:
        st = os.stat(mtime_of)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, path)
