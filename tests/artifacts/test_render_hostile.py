"""User text is data in every renderer: hostile run labels (generated, plus the known injections) through
the real renderers, the way the workflow uses them: Snakemake's report captions (jinja2 with Snakemake's
settings, then docutils' HTML writer, as snakemake.report does), paper/report.md (rendered by a CommonMark
renderer, markdown-it) and the LaTeX tables (pdflatex when TeX is installed)."""
from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from docutils.core import publish_parts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2 import Environment
from markdown_it import MarkdownIt

from conftest import ROOT, on_ci
from hostile_text import HOSTILE
from prm_lessons.artifacts import render as R
from prm_lessons.artifacts.registry import ARTIFACTS, artifact_paths
from prm_lessons.config import text_problem
from prm_lessons.text_rule import html_link_problems, settable_characters

CAPTIONS = sorted((ROOT / "workflow" / "report").glob("*.rst"))
SECRET = "s3cr3t-file-content"


def injections(secret_file: Path) -> list[str]:
    return ["x\n\n.. raw:: html\n\n   <script>alert(1)</script>\n",
            f"x\n\n.. include:: {secret_file}\n",
            "see `here <javascript:alert(1)>`_", ":raw-html:`<b>x</b>`", "|sub| and name_ and [1]_",
            "<script>alert(1)</script>", "**bold** _it_ `code` [l](javascript:alert(1)) &amp; <b>",
            "a\\ b \\\\ c", ".. raw:: html", "* item", "1. item", "#", "::", "`", "``", "*", "_"]


def render_caption(path: Path, run: dict, fig6_labels: str | None = None) -> str:
    """A caption as snakemake.report renders it (report/__init__.py: Environment(trim_blocks=True,
    lstrip_blocks=True), then publish_parts(..., writer_name="html"))."""
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    snakemake = SimpleNamespace(config={"run": run, "roles": {"policy": "smollm2"}, "benchmarks": {"arith": {}},
                                        "analysis": {"fig6_annotation": {"labels": fig6_labels}}},
                                params=SimpleNamespace(grader="harness"))  # the job's params (Best-of-N captions)
    text = env.from_string(path.read_text()).render(snakemake=snakemake, categories={}, files={})
    return publish_parts(text, writer_name="html",
                         settings_overrides={"report_level": 5, "halt_level": 5})["body"]


def visible_text(html_text: str) -> str:
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", html_text))


def assert_inert(out: str, label: str) -> None:
    assert html_link_problems(out) == [], out  # relative links only (none of ours has any)
    low = out.lower()
    assert "<script" not in low, out
    assert 'href="javascript' not in low, out
    assert SECRET not in out, out
    assert "system-message" not in low, out  # docutils reports a markup problem in the output


# what config validation lets through for every free-text key (prm_lessons.text_rule)
SETTABLE = settable_characters()
TEXT = st.text(alphabet=SETTABLE, max_size=60)
pytestmark = pytest.mark.filterwarnings("ignore:Argument \"writer_name\":PendingDeprecationWarning")


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda p: p.stem)
def test_known_injections_render_as_text_in_every_caption(tmp_path, caption):
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    for label in injections(secret):
        out = render_caption(caption, {"name": "run_1", "label": label})
        assert_inert(out, label)
        if "\n" not in label:
            assert " ".join(label.split()) in " ".join(visible_text(out).split()), (label, out)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=TEXT, name=TEXT)
def test_generated_labels_render_as_text_in_a_caption(label, name):
    out = render_caption(ROOT / "workflow/report/table6_bon_main.rst", {"name": name, "label": label})
    assert_inert(out, label)
    shown = " ".join(visible_text(out).split())
    assert " ".join(label.split()) in shown and " ".join(name.split()) in shown, (label, name, out)


@given(label=TEXT)
def test_generated_labels_render_as_text_in_markdown(label):
    md = MarkdownIt("commonmark").enable("table")
    out = md.render(f"**What produced these numbers:** {R.md_escape(label)}.")
    assert "<script" not in out.lower() and 'href="javascript' not in out.lower()
    assert " ".join(label.split()) in " ".join(visible_text(out).split()), (label, out)


def test_known_injections_render_as_text_in_markdown(tmp_path):
    md = MarkdownIt("commonmark")
    for label in injections(tmp_path / "x"):
        out = md.render("Run: " + R.md_escape(label))
        assert "<script" not in out and "<b>" not in out and 'href="javascript' not in out, out


_SPECIAL = set("\\&%$#_{}~^")


@given(text=st.text(max_size=80))
def test_tex_escape_leaves_no_special_or_unsettable_character(text):
    out = R.tex_escape(text)
    # every special character is escaped (a command or a backslash before it), no control character or
    # character beyond pdflatex's default fonts is left
    assert all(ch.isprintable() and ord(ch) <= 0x2FFF for ch in out), out
    stripped = out
    for cmd in (r"\textbackslash{}", r"\textasciitilde{}", r"\textasciicircum{}", r"$\Delta$", r"$\leq$",
                r"$\geq$", r"$-$", r"$\rightarrow$", r"$\pm$", r"$\approx$", r"$\times$"):
        stripped = stripped.replace(cmd, "")
    for ch in "&%$#_{}":
        stripped = stripped.replace("\\" + ch, "")
    stripped = re.sub(r"([-<>`',!?])\{\}", r"\1", stripped)  # the empty group between T1 ligature pairs
    stripped = stripped.replace("{[}", "").replace("{]}", "")
    assert not (_SPECIAL & set(stripped)), (text, out)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="needs pdflatex (TeX Live)")
def test_hostile_labels_typeset_with_pdflatex(tmp_path):
    labels = ([label.replace("\n", " ") for label in injections(tmp_path / "x")]
              + ["Ünïcödé — “quotes” … 1 ≤ 2", "中文 😀"])
    body = "\n\n".join(R.tex_escape(label) for label in labels)
    (tmp_path / "t.tex").write_text("\\documentclass{article}\\usepackage[T1]{fontenc}\\usepackage[utf8]{inputenc}"
                                    "\\begin{document}" + body + "\\end{document}\n")
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-2000:]


# -- config validation holds run.label / run.name to one line of settable text ------------------------------

@given(text=TEXT.filter(lambda t: t.strip()))
def test_labels_of_settable_text_pass(text):
    assert text_problem(text) is None


@given(prefix=TEXT, bad=st.one_of(st.sampled_from(["\n", "\r", "\t", "\x00", "\x1b", "\u2028", "\x85"]),
                                  st.characters(min_codepoint=0x3000)), suffix=TEXT)
def test_labels_with_a_line_break_control_or_unsettable_character_are_refused(prefix, bad, suffix):
    assert text_problem(prefix + bad + suffix)


# -- every caption with every config text it prints hostile: no link but relative ones ----------------------

def _caption_texts() -> set[str]:
    """The config sections the captions print (snakemake.config[...] / .get(...) in workflow/report/*.rst)."""
    return {m for p in CAPTIONS for m in re.findall(r"snakemake\.config(?:\[|\.get\()['\"](\w+)['\"]", p.read_text())}


def test_the_captions_print_only_the_texts_this_file_makes_hostile():
    """run (name, label), analysis (fig6_annotation.labels: a file name), roles.policy and the benchmarks'
    names (names: the name rule's characters only); a caption that prints another config text adds it here."""
    assert _caption_texts() <= {"run", "analysis", "roles", "benchmarks"}, _caption_texts()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=TEXT, path=TEXT.filter(lambda t: t.strip()))
def test_generated_file_names_render_as_text_in_the_figure6_caption(label, path):
    out = render_caption(ROOT / "workflow/report/fig6_flawed_process.rst", {"name": "r", "label": label}, path)
    assert_inert(out, path)
    assert " ".join(path.split()) in " ".join(visible_text(out).split()), (path, out)


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda p: p.stem)
def test_hostile_texts_leave_every_caption_without_a_link(caption):
    for text in HOSTILE:
        out = render_caption(caption, {"name": "run_1", "label": text}, text)
        assert_inert(out, text)


def test_markdown_table_cells_hold_no_link_or_html():
    md = MarkdownIt("commonmark").enable("table")
    display = pd.DataFrame({"row": HOSTILE, "x": ["1.0"] * len(HOSTILE)})
    out = md.render(R.markdown_table(display))
    assert "<script" not in out and "<a " not in out and "<b>" not in out, out
    shown = " ".join(visible_text(out).split())
    assert all(" ".join(t.split()) in shown for t in HOSTILE if "|" not in t), out


# -- end to end: every artifact rule with hostile labels ------------------------------------------------------

HOSTILE_RUN = {"name": "run_1", "label": " ".join(HOSTILE[:12])}
HOSTILE_POLICIES = {"smollm2": HOSTILE[10], "smollm2_t1": HOSTILE[19]}
HOSTILE_PRM = "-2+3"  # a name (the name rule allows a leading '-'): a spreadsheet reads it as a formula
TABLES = [aid for aid, a in ARTIFACTS.items() if a["kind"] == "table"]


@pytest.fixture(scope="module")
def built_hostile(tmp_path_factory):
    """Every table and figure rule, paper/report.md and run_info.tex on analysis_synth's upstream files, with a
    run label and policy labels the text rule allows but that mean something to each renderer."""
    from analysis_synth import PRMS, analysis_params, rule_inputs, write_upstream
    from prm_lessons.artifacts import registry as P
    from prm_lessons.rules import analysis as rules_analysis
    from prm_lessons.rules import paper as rules_paper

    assert text_problem(HOSTILE_RUN["label"]) is None and not any(map(text_problem, HOSTILE_POLICIES.values()))
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("hostile_paper")
    try:
        prms = [*PRMS, HOSTILE_PRM]
        write_upstream(tmp, prms=prms)
        mp.chdir(tmp)
        params = analysis_params(run=HOSTILE_RUN, policy_labels=HOSTILE_POLICIES)
        for aid in TABLES + ["fig1"]:  # the tables, and one figure (every figure's text: tests/test_text_rule.py)
            getattr(rules_analysis, P.ARTIFACTS[aid]["stem"])(inputs=rule_inputs(prms=prms),
                                                              outputs=P.artifact_paths(aid), params=params,
                                                              wildcards={}, threads=1)
        skipped = {aid: "not built here" for aid in P.ARTIFACTS if aid not in TABLES + ["fig1"]}
        rules_paper.paper_report(inputs={f"{aid}_csv": P.artifact_paths(aid)["csv"] for aid in P.ARTIFACTS
                                         if aid not in skipped},
                                 outputs={"report": "paper/report.md", "run_info": "paper/tables/run_info.tex"},
                                 params={"run": HOSTILE_RUN, "skipped": skipped}, wildcards={}, threads=1)
        yield tmp
    finally:
        mp.undo()


def test_hostile_labels_leave_every_artifact_csv_without_a_formula_and_the_report_without_a_link(built_hostile):
    import csv as csv_module

    from prm_lessons.artifacts.published import load_published
    from prm_lessons.text_rule import CSV_FORMULA_START

    # what the rules wrote (the upstream tables are analysis_synth's, written by pandas)
    csvs = [built_hostile / artifact_paths(aid)["csv"] for aid in TABLES + ["fig1"]]
    for path in csvs:
        with open(path, newline="", encoding="utf-8") as fh:
            cells = [c for row in csv_module.reader(fh) for c in row]
        bad = [c for c in cells if c.startswith(CSV_FORMULA_START) and not re.fullmatch(r"[+-]?[\d.]+(e[+-]?\d+)?", c)]
        assert not bad, (path.name, bad[:5])
    shown = [path.name for path in csvs if "'" + HOSTILE_PRM in path.read_text()]
    assert len(shown) > 5, shown  # the PRM's rows are in the tables, neutralised
    md = (built_hostile / "paper/report.md").read_text()
    out = MarkdownIt("commonmark").enable("table").render(md)
    # relative links to the figures and CSVs, and the paper's own address (published.yaml's citation) only
    paper_url = load_published()["citation"]["url"]
    assert [p for p in html_link_problems(out) if repr(paper_url) not in p] == [], html_link_problems(out)
    assert "<script" not in out.lower()
    assert " ".join(HOSTILE_RUN["label"].split()) in " ".join(visible_text(out).split())


@pytest.mark.skipif(shutil.which("latexmk") is None and not on_ci(),
                    reason="latexmk not installed (.ci/run installs it)")
def test_main_pdf_builds_with_hostile_labels(built_hostile):
    from prm_lessons.artifacts import registry as P
    from prm_lessons.rules import paper as rules_paper

    figure = built_hostile / P.artifact_paths("fig1")["png"]
    for aid, a in P.ARTIFACTS.items():  # main.tex includes every figure: fig1's drawing stands in for the rest
        if a["kind"] == "figure" and not (built_hostile / P.artifact_paths(aid)["png"]).exists():
            shutil.copyfile(figure, built_hostile / P.artifact_paths(aid)["png"])
            shutil.copyfile(figure.with_suffix(".pdf"), built_hostile / P.artifact_paths(aid)["pdf"])
    rules_paper.paper_pdf(inputs={"tex": str(ROOT / "paper/main.tex")},
                          outputs={"pdf": str(built_hostile / "paper/main.pdf")}, params={"timeout_s": 300},
                          wildcards={}, threads=1)
    assert (built_hostile / "paper/main.pdf").read_bytes()[:5] == b"%PDF-"
