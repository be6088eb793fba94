"""Every `from_pretrained` call in the project's code (src/, bench/, tools/) passes trust_remote_code: the
config's value (a name or expression) or a literal False, never nothing (transformers then asks on stdin and
runs the checkpoint's code on "y"), never a literal None or True. A `**kw` counts when `kw` is built in the
same function with the key. tests/models/test_prm_trust_remote_code.py proves the loaders run no code."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "bench", "tools")


def _kwargs_with_trust(scope: ast.AST, name: str) -> bool:
    """Whether `name` is assigned, in `scope`, a dict(...) or {...} that holds trust_remote_code."""
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)):
            continue
        v = node.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "dict":
            if any(k.arg == "trust_remote_code" and _allowed(k.value) for k in v.keywords):
                return True
        if isinstance(v, ast.Dict):
            for k, val in zip(v.keys, v.values):
                if isinstance(k, ast.Constant) and k.value == "trust_remote_code" and _allowed(val):
                    return True
    return False


def _allowed(value: ast.expr) -> bool:
    """A value from the config (any expression) or False; a literal None or True is not."""
    return not (isinstance(value, ast.Constant) and value.value is not False)


def call_problems(source: str, where: str) -> list[str]:
    """One line per from_pretrained call of `source` that does not pass trust_remote_code as allowed."""
    tree = ast.parse(source)
    scopes = {}  # call -> its innermost function (or the module)
    for scope in [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        for node in ast.walk(scope):
            if isinstance(node, ast.Call):
                scopes[node] = scope  # inner functions come later in the walk and win
    out = []
    for call, scope in scopes.items():
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "from_pretrained"):
            continue
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if "trust_remote_code" in kw:
            if not _allowed(kw["trust_remote_code"]):
                out.append(f"{where}:{call.lineno}: trust_remote_code={ast.unparse(kw['trust_remote_code'])}")
            continue
        spread = [k.value for k in call.keywords if k.arg is None]
        if any(isinstance(s, ast.Name) and _kwargs_with_trust(scope, s.id) for s in spread):
            continue
        out.append(f"{where}:{call.lineno}: {ast.unparse(call.func)} without trust_remote_code")
    return out


def project_files() -> list[Path]:
    return sorted(p for d in SCANNED for p in (ROOT / d).rglob("*.py"))


def test_scan_covers_bench_and_tools():
    dirs = {p.relative_to(ROOT).parts[0] for p in project_files()}
    assert dirs == set(SCANNED)
    calls = sum(src.count(".from_pretrained(") for src in
                (p.read_text() for p in project_files() if p.relative_to(ROOT).parts[0] == "bench"))
    assert calls >= 1  # bench loads models: the scan sees them


def test_every_from_pretrained_passes_trust_remote_code():
    problems = [line for p in project_files() for line in call_problems(p.read_text(), str(p.relative_to(ROOT)))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("code,bad", [
    ("AutoModel.from_pretrained(d)", True),
    ("AutoModel.from_pretrained(d, trust_remote_code=None)", True),
    ("AutoModel.from_pretrained(d, trust_remote_code=True)", True),
    ("AutoModel.from_pretrained(d, **kw)", True),
    ("def f():\n    kw = dict(x=1)\n    AutoModel.from_pretrained(d, **kw)", True),
    ("def f():\n    kw = {'trust_remote_code': None}\n    AutoModel.from_pretrained(d, **kw)", True),
    ("AutoModel.from_pretrained(d, trust_remote_code=False)", False),
    ("AutoModel.from_pretrained(d, trust_remote_code=entry['trust_remote_code'])", False),
    ("def f():\n    kw = dict(trust_remote_code=False)\n    AutoTokenizer.from_pretrained(d, **kw)", False),
    ("def f():\n    kw = {'trust_remote_code': trust}\n    AutoConfig.from_pretrained(d, **kw)", False),
])
def test_the_scan_can_fail(code, bad):
    assert bool(call_problems(code, "x.py")) is bad
