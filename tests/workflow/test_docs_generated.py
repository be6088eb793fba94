"""Generated docs (tools/docs.py's GENERATORS, e.g. docs/modules.md) equal what the code generates: a moved
module or an edited module docstring without `python tools/docs.py write` fails here, naming the file."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _docs_tool():
    spec = importlib.util.spec_from_file_location("tools_docs", ROOT / "tools" / "docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_docs_are_up_to_date():
    docs = _docs_tool()
    found = docs.stale(ROOT)
    assert not found, "".join(f"stale: {rel} (regenerate: {docs.HOW_TO_REGENERATE})\n{diff}"
                              for rel, diff in found.items())


def test_the_module_map_names_every_module():
    docs = _docs_tool()
    text = docs.module_map()
    pkg = ROOT / "src" / "prm_lessons"
    for f in pkg.rglob("*.py"):
        if f.name != "__init__.py":
            assert f"`{'.'.join(f.relative_to(pkg.parent).with_suffix('').parts)}`" in text, f


def test_a_stale_file_is_named(tmp_path):
    docs = _docs_tool()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "modules.md").write_text("# hand-edited\n")
    found = docs.stale(tmp_path)
    assert set(found) == set(docs.GENERATORS) and "docs/modules.md" in found
    assert "-# hand-edited" in found["docs/modules.md"]
    assert docs.write(tmp_path) == list(docs.GENERATORS) and docs.stale(tmp_path) == {}
