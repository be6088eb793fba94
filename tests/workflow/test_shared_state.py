"""common.smk's rule: "Stage files read only what this file defines". A stage .smk that reads an upper-case
module-level name (a constant, an import) defined in another stage .smk depends on the include order in
the Snakefile and on that file's internals; every such name belongs in common.smk."""
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "workflow/rules"
UPPER = re.compile(r"_?[A-Z][A-Z0-9_]+")
# module level (column 0): `NAME = …`, `A, B = …`, `NAME: type = …` (not `==`, not `+=`: that reads)
ASSIGN = re.compile(r"^(_?[A-Z][A-Z0-9_]*(?:\s*,\s*_?[A-Z][A-Z0-9_]*)*)\s*(?::[^=\n]*)?=(?!=)", re.M)
# module level `from x import A, B` / `from x import (\n    A,\n    b,\n)` / `import X`
IMPORT = re.compile(r"^from\s+\S+\s+import\s+(\([^)]*\)|[^\n]*)|^import\s+([^\n]*)", re.M)


def defined(text: str) -> set[str]:
    names = {n.strip() for m in ASSIGN.finditer(text) for n in m.group(1).split(",")}
    for m in IMPORT.finditer(text):
        body = re.sub(r"#[^\n]*", "", m.group(1) or m.group(2))
        for part in body.strip("()").split(","):
            words = part.split()
            if words:
                names.add(words[-1])  # `X as Y` defines Y
    return {n for n in names if UPPER.fullmatch(n)}


def read(text: str) -> dict[str, int]:
    """Upper-case names the file's code reads → first line; strings and comments skipped, except the
    expressions inside f-strings (Python 3.11 tokenizes an f-string as one token)."""
    out: dict[str, int] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME and UPPER.fullmatch(tok.string):
            out.setdefault(tok.string, tok.start[0])
        elif tok.type == tokenize.STRING and "f" in tok.string.split("'")[0].split('"')[0].lower():
            for expr in re.findall(r"(?<!\{)\{([^{}]+)\}", tok.string):
                for name in re.findall(r"\b_?[A-Z][A-Z0-9_]+\b", expr):
                    out.setdefault(name, tok.start[0])
    return out


def cross_stage_reads(files: dict[str, str]) -> list[str]:
    common = defined(files["common.smk"])
    owners: dict[str, list[str]] = {}
    for name, text in files.items():
        if name != "common.smk":
            for n in defined(text):
                owners.setdefault(n, []).append(name)
    problems = [f"{n} is defined in {len(fs)} stage files ({', '.join(fs)})" for n, fs in owners.items() if len(fs) > 1]
    for name, text in files.items():
        if name == "common.smk":
            continue
        own = defined(text)  # a name defined here and elsewhere too: reported once, above
        for n, line in read(text).items():
            others = [f for f in owners.get(n, []) if f != name]
            if others and n not in common and n not in own:
                problems.append(f"{name}:{line} reads {n}, defined in {others[0]}: move it into common.smk")
    return problems


def test_no_stage_file_reads_another_stage_files_names():
    files = {p.name: p.read_text() for p in sorted(RULES.glob("*.smk"))}
    assert "common.smk" in files and len(files) > 5
    assert cross_stage_reads(files) == []


def test_the_check_sees_assignments_imports_and_f_strings():
    files = {
        "common.smk": "SHARED = 1\n",
        "a.smk": ("from prm_lessons.x import (\n    ARTS,\n    helper,\n)\nCFG = {}\nA_LIST, B_LIST = [], []\n"
                  "if SHARED:\n    LOCAL = 2\n"),
        "b.smk": ('rule r:\n    input:\n        f"results/{A_LIST[0]}",\n    params:\n        cfg=CFG,\n'
                  '# ARTS in a comment\nX = "ARTS in a string" + str(SHARED)\n'),
        "c.smk": "for aid in ARTS:\n    pass\nCFG = 3\n",
    }
    got = cross_stage_reads(files)
    assert "b.smk:3 reads A_LIST, defined in a.smk: move it into common.smk" in got  # inside an f-string
    assert "b.smk:5 reads CFG, defined in a.smk: move it into common.smk" in got
    assert "c.smk:1 reads ARTS, defined in a.smk: move it into common.smk" in got  # an imported name
    assert "CFG is defined in 2 stage files (a.smk, c.smk)" in got
    assert not any("SHARED" in g or "b.smk:6" in g or "b.smk:7" in g for g in got)  # common's; comment; string
    assert len(got) == 4
