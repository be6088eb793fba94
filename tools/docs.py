"""Generated documentation: each file in GENERATORS is written from the code, never by hand.

    python tools/docs.py write   regenerate every registered file
    python tools/docs.py check   regenerate in memory; exit 1 naming each stale file (with a unified diff)

A new generated file is one entry of GENERATORS: its path (relative to the checkout) → a function of no
arguments that returns the file's text (a generated part of a hand-written page: the page with that part
spliced in, as docs/paper-scale.md's GPU-hour table). The module map reads source files (ast); the config's JSON schema
and key reference come from the config models (prm_lessons.config.docs: pydantic, no heavy dependency).
"""
from __future__ import annotations

import ast
import difflib
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "prm_lessons"
sys.path.insert(0, str(ROOT / "src"))  # this checkout's package, also without an install
from prm_lessons.config import docs as config_docs  # noqa: E402
from prm_lessons.preflight import gpu_hours  # noqa: E402

HOW_TO_REGENERATE = "python tools/docs.py write"


def _summary(file: Path) -> str:
    """The first line of a module's docstring ('' when it has none)."""
    doc = ast.get_docstring(ast.parse(file.read_text(encoding="utf-8")))
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def module_map() -> str:
    """docs/modules.md: every module of src/prm_lessons, one table per package (the package's own
    summary under its heading), one row per module: its dotted path and its docstring's first line."""
    out = [
        "# Module map",
        "",
        f"Generated from the module docstrings by `tools/docs.py` (`{HOW_TO_REGENERATE}`); do not edit by hand.",
        "Each package's stages and contracts: [architecture.md](architecture.md).",
        "",
    ]
    packages = sorted((p.parent for p in PKG.rglob("__init__.py")), key=lambda p: p.relative_to(PKG).parts)
    for pkg in packages:
        rel = pkg.relative_to(PKG.parent)
        dotted = ".".join(rel.parts)
        modules = sorted(f for f in pkg.glob("*.py") if f.name != "__init__.py")
        out += [f"## `{dotted}`", ""]
        summary = _summary(pkg / "__init__.py")
        if summary:
            out += [summary, ""]
        if modules:
            out += ["| module | what it is |", "|---|---|"]
            out += [f"| `{dotted}.{m.stem}` | {_cell(_summary(m))} |" for m in modules]
            out.append("")
    return "\n".join(out)


# path relative to the checkout → function of no arguments returning the file's text
GENERATORS: dict[str, Callable[[], str]] = {
    "docs/modules.md": module_map,
    **config_docs.GENERATED,  # workflow/schemas/config.schema.json, docs/config-reference.md
    # the GPU-hour table inside the hand-written page (between its BEGIN / END markers): config/paper.yaml's
    # work counts x docs/gpu_rates.yaml's rates
    "docs/paper-scale.md": gpu_hours.paper_scale_doc,
}


def stale(root: Path = ROOT) -> dict[str, str]:
    """Each registered file whose text differs from what its generator makes → a unified diff."""
    found = {}
    for rel, generate in GENERATORS.items():
        path = root / rel
        want = generate()
        have = path.read_text(encoding="utf-8") if path.is_file() else ""
        if have != want:
            diff = difflib.unified_diff(have.splitlines(keepends=True), want.splitlines(keepends=True),
                                        fromfile=f"{rel} (on disk)", tofile=f"{rel} (generated)")
            found[rel] = "".join(diff) or f"{rel}: missing\n"
    return found


def write(root: Path = ROOT) -> list[str]:
    """Regenerate every registered file; the paths rewritten."""
    written = []
    for rel, generate in GENERATORS.items():
        path = root / rel
        text = generate()
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(rel)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["write"]:
        for rel in write():
            print(f"wrote {rel}")
        return 0
    if args == ["check"]:
        found = stale()
        for rel, diff in found.items():
            sys.stdout.write(diff)
            print(f"stale: {rel} (regenerate: {HOW_TO_REGENERATE})")
        if not found:
            print(f"generated docs up to date ({len(GENERATORS)} files)")
        return 1 if found else 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
