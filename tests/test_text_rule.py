"""The text rule (prm_lessons.text_rule) and every renderer on what it lets through: the allowed characters
are those the paper's pdflatex declares (asked of the installed LaTeX) and each typesets; figures draw
`$...$` as text; no CSV the package writes holds a formula cell (every writer, found in the source); the
HTML link check. Without pdflatex the LaTeX tests skip, under CI=true (.ci/run installs TeX Live) they fail."""
from __future__ import annotations

import ast
import csv
import re
import shutil
import subprocess
import unicodedata

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, on_ci
from hostile_text import HOSTILE, REFUSED
from prm_lessons import tables, text_rule
from prm_lessons.artifacts import render as R
from prm_lessons.labels import annotation

SETTABLE = text_rule.settable_characters()


def test_hostile_text_passes_the_rule_and_the_refused_characters_do_not():
    assert all(text_rule.text_problem(t) is None for t in HOSTILE)
    for ch in REFUSED:
        assert text_rule.text_problem(f"a{ch}b"), repr(ch)
    assert text_rule.text_problem("x" * text_rule.TEXT_MAX) is None
    assert "at most" in text_rule.text_problem("x" * (text_rule.TEXT_MAX + 1))


def test_the_rule_is_settable_over_every_code_point_up_to_the_cjk_blocks():
    allowed = {chr(c) for c in range(0x3000) if text_rule.text_problem(chr(c)) is None}
    assert allowed == set(SETTABLE)
    assert {chr(c) for c in range(0x20, 0x7F)} <= allowed and set(text_rule.TEX_SYMBOLS) <= allowed


@given(prefix=st.text(alphabet=SETTABLE, max_size=40), bad=st.one_of(st.sampled_from(REFUSED), st.characters(
    min_codepoint=0x3000)), suffix=st.text(alphabet=SETTABLE, max_size=40))
def test_one_unsettable_character_anywhere_is_refused(prefix, bad, suffix):
    assert text_rule.text_problem(prefix + suffix) is None
    assert text_rule.text_problem(prefix + bad + suffix)


# -- LaTeX: what the encoding declares, and every allowed character typeset --------------------------------

def _pdflatex() -> str:
    exe = shutil.which("pdflatex")
    if exe is None:
        if on_ci():
            pytest.fail("CI=true: pdflatex is missing, but .ci/run installs TeX Live", pytrace=False)
        pytest.skip("needs pdflatex (TeX Live; .ci/run installs it)")
    return exe


def _preamble() -> str:
    """paper/main.tex up to its first generated input: the encodings and packages the PDF is built with."""
    return (ROOT / "paper/main.tex").read_text().split(r"\input{tables/run_info}")[0]


def _run_latex(tmp_path, body: str, name: str = "t") -> str:
    (tmp_path / f"{name}.tex").write_text(_preamble() + "\\tracinglostchars=3\n\\begin{document}\n" + body
                                          + "\n\\end{document}\n", encoding="utf-8")
    res = subprocess.run([_pdflatex(), "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
                          f"{name}.tex"], cwd=tmp_path, capture_output=True, text=True, errors="replace", timeout=300)
    log = (tmp_path / f"{name}.log").read_text(encoding="latin-1") if (tmp_path / f"{name}.log").exists() else ""
    assert res.returncode == 0, res.stdout[-3000:]
    return log


def test_every_allowed_character_is_one_the_installed_latex_declares(tmp_path):
    """Asks LaTeX itself (after paper/main.tex's preamble) whether each character has a UTF-8 definition,
    for every code point beyond ASCII up to the CJK blocks: LATEX_DECLARED must be among them (a TeX Live
    that declares more is fine; one that declares less makes the rule allow what stops the PDF)."""
    cands = [c for c in range(0xA0, 0x3000) if chr(c).isprintable() and not 0xD800 <= c < 0xE000]
    body = "\n".join(f"\\typeout{{U8 {c:04X} \\ifcsname u8:\\detokenize{{{chr(c)}}}\\endcsname Y\\else N\\fi}}"
                     for c in cands)
    log = _run_latex(tmp_path, body + "\nx", "probe")
    answered = dict(re.findall(r"^U8 ([0-9A-F]{4}) ([YN])$", log, re.M))
    assert len(answered) == len(cands), "the probe's \\typeout lines are missing from the log"
    declared = {chr(int(c, 16)) for c, yn in answered.items() if yn == "Y"}
    table = {chr(c) for lo, hi in text_rule.LATEX_DECLARED for c in range(lo, hi + 1)}
    assert not table - declared, sorted(table - declared)
    # beyond ASCII the rule allows the table and the symbols tex_escape writes as math, nothing else
    assert {ch for ch in SETTABLE if ord(ch) > 0x7E} == {ch for ch in table if ch.isprintable()} | set(
        text_rule.TEX_SYMBOLS)


def test_every_allowed_character_and_hostile_text_typesets_in_the_papers_latex(tmp_path):
    """Every allowed character, the hostile strings and refused ones (tex_escape makes any text settable)
    through the LaTeX renderers (a table's caption, cells and note; run_info.tex's \\newcommand), with lost
    characters as errors (\\tracinglostchars=3)."""
    chunks = ["".join(SETTABLE[i:i + 40]) for i in range(0, len(SETTABLE), 40)]
    rows = chunks + HOSTILE + ["".join(REFUSED)]
    display = pd.DataFrame({"row": rows, "value": ["1.0"] * len(rows)})
    table = R.latex_table(display, "".join(SETTABLE), "Table 1", {"name": "n", "label": " ".join(HOSTILE)}, "t1",
                          notes=rows)
    info = R.run_info_tex({"name": "n", "label": "".join(SETTABLE) + "".join(REFUSED)}, {"table1": " ".join(HOSTILE)})
    body = info.replace("\\newcommand", "\\providecommand") + table + "\n\\runlabel\n\\runname\n"
    log = _run_latex(tmp_path, body)
    assert "Missing character" not in log, re.findall(r"Missing character.*", log)[:5]


def test_tex_escape_keeps_ligature_pairs_apart():
    assert text_rule.tex_escape("a--b") == "a-{}-b"
    assert text_rule.tex_escape("<<>>``''") == "<{}<>{}>`{}`'{}'"
    assert text_rule.tex_escape(",,!`?`") == ",{},!{}`?{}`"
    assert text_rule.tex_escape("x-y <z> 'q'") == "x-y <z> 'q'"
    assert text_rule.tex_escape("\u0126\u4e2d") == "??"


# -- figures -------------------------------------------------------------------------------------------------

def test_figure_text_is_never_math(tmp_path):
    """After figure_style, every text a figure makes (titles, labels, legends, ticks, annotations) is plain:
    `$\\frac{1}{0}$` is drawn as written instead of stopping the figure (matplotlib's mathtext)."""
    from prm_lessons.artifacts import plots

    plt, _ = plots.figure_style({"figure": {"font_size": 7, "palette": "colorblind", "dpi": 40}})
    fig, ax = plt.subplots()
    ax.bar(HOSTILE[:5], [1, 2, 3, 4, 5], label=HOSTILE[1])
    ax.set_title(HOSTILE[0])
    ax.set_xlabel("".join(SETTABLE[:60]))
    ax.annotate(HOSTILE[4], (0, 1))
    ax.legend(title=HOSTILE[2])
    fig.text(0, 0, " ".join(HOSTILE))
    for fmt in ("png", "pdf"):
        fig.savefig(tmp_path / f"f.{fmt}")
    texts = fig.findobj(lambda a: hasattr(a, "get_parse_math"))
    assert texts and not any(t.get_parse_math() for t in texts)
    assert HOSTILE[1] in {t.get_text() for t in texts}
    plt.close(fig)


# -- CSV: every writer, no formula cell, exact round trip -----------------------------------------------------

def _csv_writes() -> list[str]:
    """`module.function` of every call that writes CSV in src/prm_lessons (DataFrame.to_csv, csv.writer,
    csv.DictWriter)."""
    found = []
    for path in sorted((ROOT / "src/prm_lessons").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                        node.func.attr == "to_csv" or (node.func.attr in ("writer", "DictWriter")
                                                       and isinstance(node.func.value, ast.Name)
                                                       and node.func.value.id == "csv")):
                    found.append(f"{path.relative_to(ROOT / 'src').with_suffix('')}.{fn.name}".replace("/", "."))
    return sorted(set(found))


def test_every_csv_the_package_writes_goes_through_the_one_neutralising_write():
    assert _csv_writes() == ["prm_lessons.tables._to_csv"]


def _raw_cells(path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


def _assert_no_formula(path):
    bad = [c for c in _raw_cells(path)
           if c.startswith(text_rule.CSV_FORMULA_START) and not re.fullmatch(r"[+-]?[\d.]+([eE][+-]?\d+)?", c)]
    assert not bad, bad


FORMULAS = [p + "1+1" for p in text_rule.CSV_FORMULA_START] + ["'=1", "'plain", "=cmd|' /C calc'!A0", "-x", "@x"]


def test_write_plain_csv_neutralises_formulas_and_reads_back_what_it_was_given(tmp_path):
    df = pd.DataFrame({"row": FORMULAS + HOSTILE, "value": range(len(FORMULAS) + len(HOSTILE)),
                       "=col": [-0.5] * (len(FORMULAS) + len(HOSTILE))})
    path = tmp_path / "t.csv"
    tables.write_plain_csv(df, path)
    _assert_no_formula(path)
    assert "-0.5" in _raw_cells(path)  # a plain number is no formula and stays as written
    back = tables.read_plain_csv(path)
    assert list(back.columns) == list(df.columns) and list(back["row"]) == list(df["row"])


def _stage_row(kind: str, text: str) -> dict:
    value = {"str": text, "int": 1, "float": -0.5, "fraction": -0.25}
    return {col: value[typ] for col, typ in tables.CSV_DTYPES[kind].items()}


@pytest.mark.parametrize("kind", sorted(tables.CSV_DTYPES))
def test_every_csv_stage_table_neutralises_formulas_in_its_text_columns(tmp_path, kind):
    df = pd.DataFrame([_stage_row(kind, text) for text in FORMULAS])
    # the key columns differ row by row (check_table refuses duplicate keys)
    path = tmp_path / f"{kind}.csv"
    tables.write_csv(df, path, kind)
    _assert_no_formula(path)
    back = tables.read_csv(path, kind)
    for col, typ in tables.CSV_DTYPES[kind].items():
        if typ == "str":
            assert list(back[col]) == FORMULAS, col


def test_the_annotation_sheet_holds_no_formula_and_reads_back(tmp_path):
    sheet = pd.DataFrame([{"id": f"b/{i}/0", "benchmark": "b", "problem_id": str(i), "sample_idx": 0, "n_steps": 1,
                           "problem": text, "steps": "[1] " + text, "process_flawed": "", "first_error_step": "",
                           "notes": text} for i, text in enumerate(FORMULAS)], columns=annotation.SHEET_COLUMNS)
    path = tmp_path / "sheet.csv"
    annotation.write_sheet(sheet, path)
    _assert_no_formula(path)
    assert list(annotation.read_sheet(path)["problem"]) == FORMULAS


# -- HTML links ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "java\tscript:alert(1)",
                                 " javascript:x", "java&#10;script:x", "data:text/html,<b>", "http://e.x/",
                                 "https://e.x", "//e.x/a", "/etc/passwd", "\\\\host\\share", "vbscript:x", "file:x"])
def test_links_with_a_scheme_or_an_absolute_path_are_found(url):
    for tag in (f'<a href="{url}">x</a>', f"<img src='{url}'>", f"<form action='{url}'></form>"):
        assert text_rule.html_link_problems(tag), tag


@pytest.mark.parametrize("url", ["a/b.png", "../results/x.csv", "#section", "x.html#a", "?q=1", "", "a%3Ab"])
def test_relative_links_pass(url):
    assert text_rule.html_link_problems(f'<a href="{url}">x</a><img src="{url}">') == []


def test_the_verdict_page_has_no_link_whatever_its_text():
    from prm_lessons.artifacts.verdict_rules import Verdict, verdicts_html

    rows = [Verdict(t, t, t, "reproduced", t, t) for t in HOSTILE]
    page = verdicts_html(rows, " ".join(HOSTILE))
    assert text_rule.html_link_problems(page) == [] and "<script>" not in page


def test_csv_cells_keep_numbers_and_text_without_a_formula_start():
    assert [text_rule.csv_cell(v) for v in ("-0.5", "+3", "1e-3", "-.5", "mc_hard", 1, None)] == \
        ["-0.5", "+3", "1e-3", "-.5", "mc_hard", 1, None]
    assert [text_rule.csv_cell(v) for v in ("-x", "=1", "'a", "\t=1")] == ["'-x", "'=1", "''a", "'\t=1"]
    assert all(text_rule.csv_cell_read(text_rule.csv_cell(v)) == v for v in FORMULAS + HOSTILE)


# white space and invisible characters (from the character database) before a formula character, and the
# full-width formula characters: a spreadsheet importer may trim the one and read the other as ASCII
HIDDEN = [chr(c) for c in range(0x110000) if chr(c).isspace() or unicodedata.category(chr(c)) in ("Cc", "Cf")]
FORMULA_CHARS = ["=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20"]


@settings(max_examples=150, deadline=None)
@given(hidden=st.text(alphabet=st.sampled_from(HIDDEN), max_size=4), start=st.sampled_from(FORMULA_CHARS),
       payload=st.text(max_size=12))
def test_a_formula_behind_invisible_characters_is_neutralised_and_reads_back(tmp_path_factory, hidden, start,
                                                                             payload):
    cell = hidden + start + payload
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", start + payload):
        return  # a plain number is no formula
    assert text_rule.csv_cell(cell).startswith("'"), repr(cell)
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    tables.write_plain_csv(pd.DataFrame({"row": [cell, "plain"]}), path)
    assert tables.read_plain_csv(path, keep_default_na=False)["row"].tolist() == [cell, "plain"]


ACCENTS = "\u0300\u0301\u0302\u0303\u0308\u0327"  # grave, acute, circumflex, tilde, diaeresis, cedilla


@pytest.mark.parametrize("base, accent", [(b, a) for b in "aeiouAEIOUnc" for a in ACCENTS])
def test_a_decomposed_letter_is_refused_with_its_composed_form_named(base, accent):
    """Base letter + combining accent (as macOS writes file names): refused (the character is not declared),
    and the message says the composed text is accepted wherever that composed text is."""
    import unicodedata

    from prm_lessons.text_rule import text_problem

    text = f"run {base}{accent}"
    problem = text_problem(text)
    assert problem and f"U+{ord(accent):04X}" in problem
    composed_ok = text_problem(unicodedata.normalize("NFC", text)) is None
    assert ("is accepted" in problem) == composed_ok


def test_the_composed_hint_is_given_for_e_acute():
    from prm_lessons.text_rule import text_problem

    assert "is accepted" in text_problem("Caf\u0065\u0301") and text_problem("Caf\u00e9") is None
