"""Written claims kept true by tests: every file the package writes goes through tables' atomic writer
(tables.py's docstring); no pointer to the review process in shipped code, docs or config."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "prm_lessons"

# methods that write a file named by their first argument (write_text / write_bytes: by their receiver)
WRITERS = {"to_parquet", "to_csv", "to_json", "savefig", "write_text", "write_bytes"}
# direct writes kept on purpose: (file name, the written path's expression as ast.unparse writes it) -> why
ALLOWED = {
    # every job's adapter imports hub first (job_offline), before logging: it stays stdlib-only; a marker
    ("hub.py", "'.revision'"): "the revision marker beside the model's links, rewritten by every download",
    # DAG-time module: writes with its own pid-named temporary file (SLURM jobs parse the workflow at
    # once) and keeps the mtime of the file it describes; it must not import pandas
    ("codedeps.py", "tmp"): "own tmp + os.replace, pid-named for concurrent parsers",
    # a blob under huggingface_hub's own in-progress name (.incomplete), then os.replace: the hub's layout
    ("hub_cache.py", "tmp"): "the hub cache's own .incomplete file, then os.replace",
    # a download: into <dest>.part, its checksums verified, then moved onto dest (nothing unverified moves)
    ("sources.py", "tmp"): "download to .part, verify checksums, then replace",
    # the cost preflight's worker writes its log as it runs (a subprocess's stdout): a stream, no whole file
    ("cost.py", "f'{m.name}.log'"): "a subprocess's log stream, appended while it runs",
}


def _written(call: ast.Call) -> ast.expr | None:
    """The expression naming the file a call writes, or None if it writes no file."""
    f = call.func
    if isinstance(f, ast.Name) and f.id == "open":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"),
                                                              None)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
            return call.args[0]
        return None
    if isinstance(f, ast.Attribute) and f.attr in WRITERS:
        if f.attr in ("write_text", "write_bytes"):
            return f.value
        return call.args[0] if call.args else None
    return None


def _atomic_names(tree: ast.AST) -> dict[int, set[str]]:
    """id(call) -> the names bound by the `with atomic_path(...) as NAME` blocks around it."""
    inside: dict[int, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.With):
            continue
        names = {item.optional_vars.id for item in node.items
                 if isinstance(item.context_expr, ast.Call) and isinstance(item.optional_vars, ast.Name)
                 and ast.unparse(item.context_expr.func).split(".")[-1] == "atomic_path"}
        if names:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    inside.setdefault(id(sub), set()).update(names)
    return inside


def direct_writes(root: Path = SRC) -> list[tuple[str, int, str]]:
    """(file, line, path expression) of every write outside tables.py not through atomic_path."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "tables.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        atomic = _atomic_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            target = _written(node)
            if target is None:
                continue
            if isinstance(target, ast.Name) and target.id in atomic.get(id(node), ()):
                continue
            text = ast.unparse(target)
            if any(path.name == name and text.endswith(expr) for name, expr in ALLOWED):
                continue
            found.append((str(path.relative_to(root)), node.lineno, text))
    return sorted(found)


def test_every_write_goes_through_the_atomic_writer():
    assert direct_writes() == [], ("write through tables (write_table, write_csv, write_plain_csv, write_json, "
                                   "write_text_atomic, atomic_path), or allow it in ALLOWED with its reason")


def test_the_scan_sees_direct_writes(tmp_path):
    (tmp_path / "m.py").write_text(
        "from prm_lessons.tables import atomic_path\n"
        "def f(df, p, fig):\n"
        "    df.to_parquet(p, index=False)\n"
        "    p.write_text('x')\n"
        "    with open(p, 'w') as fh:\n        fh.write('x')\n"
        "    fig.savefig(p)\n"
        "    with atomic_path(p) as tmp:\n        df.to_csv(tmp, index=False)\n"
        "    with atomic_path(p) as tmp, open(tmp, 'w') as fh:\n        fh.write('x')\n"
        "    open(p).read()\n")
    assert [line for _, line, _ in direct_writes(tmp_path)] == [3, 4, 5, 7]


# the review process's traces: pointers to files outside the repository, and issue numbers
LEAK = re.compile(r"shared/(research|DESIGN)|reviews-20\d\d|paper_reference\.md|research notes|issue\s*#?\d+",
                  re.IGNORECASE)
SHIPPED = ["src", "workflow", "docs", "config", "bench", "profiles", "README.md", "Makefile", "Snakefile"]


def test_no_review_process_in_shipped_files():
    hits = []
    for name in SHIPPED:
        top = ROOT / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary (figures, PDFs)
            for i, line in enumerate(text.splitlines(), 1):
                if LEAK.search(line):
                    hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:120]}")
    assert hits == [], "state it in the file itself:\n" + "\n".join(hits)


# the modules that print the paper's numbers beside this run's: they read them from published.yaml
PRINTS_PAPER = [SRC / "artifacts" / "verdicts.py", SRC / "metrics" / "judge_processbench.py"]
# a number with a decimal point, not a section (§3.1.2) nor a size (1.5M, 1.5B)
DECIMAL = re.compile(r"(?<![\d.§\w])\d+\.\d+(?![\d.\w])")


def _published_numbers() -> set[str]:
    from prm_lessons.artifacts.published import load_published

    return {f"{v:.1f}" for t in load_published()["tables"].values() for r in t["rows"] for v in r["values"]
            if v is not None}


def test_the_paper_numbers_are_not_restated():
    published = _published_numbers()
    for path in PRINTS_PAPER:
        # 0.0: the null of an interval verdict, not a paper number
        restated = {m for m in DECIMAL.findall(path.read_text()) if f"{float(m):.1f}" in published - {"0.0"}}
        assert not restated, f"{path.name}: {sorted(restated)} restate published.yaml; read them from it"


def test_the_printed_paper_numbers_are_published_ones():
    import pandas as pd

    from prm_lessons.artifacts import verdicts
    from prm_lessons.artifacts.published import published_value
    from prm_lessons.metrics import judge_processbench as jp

    published = _published_numbers()
    unsigned = re.compile(r"(?<![+-])" + DECIMAL.pattern)  # +1.4: a difference of two published numbers
    for name in (k for k in dir(verdicts) if k.endswith("_PAPER")):
        for m in unsigned.findall(getattr(verdicts, name)):
            assert m in published, f"verdicts.{name}: {m} is not in published.yaml"
    no_judge_beats_structure = pd.DataFrame([{"judge": "judge", "subset": "average", "n": 50, "f1": 0.3,
                                              "delta_f1_structure": -0.1, "delta_ci_low": -0.2,
                                              "delta_ci_high": 0.05}])
    text = jp.lesson2_verdict(no_judge_beats_structure)["text"]
    paper = f"F1 {published_value(*jp.PAPER_JUDGE, 'average/f1'):.1f} as a critic, the paper's Table 7"
    assert paper in text and "Qwen2.5-72B-Instruct" in text
