"""The notes where users read them: paper/report.md prints each table's and figure's notes (the LaTeX
table's footnotes, kept in the provenance record), Best-of-N artifacts name their grader, data notes name the
artifact's own MC set, and "reproduced" is a verdict only (prm_lessons.artifacts.render / plots, rules.paper)."""
from __future__ import annotations

import json
import types
from pathlib import Path

import pandas as pd
import pytest

from analysis_synth import analysis_params, rule_inputs, write_upstream
from prm_lessons.artifacts import verdict_rules as R
from prm_lessons.artifacts.cells import data_notes, mc_set_notes
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.registry import ARTIFACT_PARAMS, ARTIFACTS, artifact_paths
from prm_lessons.artifacts.render import md_note, notes_markdown
from prm_lessons.rules import analysis as rules
from prm_lessons.rules.paper import paper_report

ROOT = Path(__file__).resolve().parents[2]
GRADED = [aid for aid in ARTIFACTS if "grader" in ARTIFACT_PARAMS[aid]]


def _section(md: str, aid: str) -> str:
    a = ARTIFACTS[aid]
    return md.split(f"## {a['source']}: {a['title']}\n", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """paper/report.md of a small synthetic run: every table's rule and the Best-of-N figures' rules, then
    rule paper_report on their cells and provenance records."""
    root = tmp_path_factory.mktemp("run")
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    try:
        write_upstream(root)
        pb = pd.read_csv("results/tables/processbench.csv")
        pb.assign(tuned_on="gsm8k").to_csv("results/tables/processbench.csv", index=False)
        inputs = rule_inputs()
        made = [aid for aid, a in ARTIFACTS.items() if a["kind"] == "table" or aid in GRADED]
        for aid in made:
            getattr(rules, ARTIFACTS[aid]["stem"])(inputs=inputs, outputs=artifact_paths(aid),
                                                   params=analysis_params(grader="harness"), wildcards={}, threads=1)
        report_inputs = {**{f"{aid}_csv": artifact_paths(aid)["csv"] for aid in made},
                         **{f"{aid}_provenance": artifact_paths(aid)["provenance"] for aid in made},
                         "processbench_table": "results/tables/processbench.csv", "bon_table": "results/tables/bon.csv"}
        outputs = {"report": "paper/report.md", "run_info": "paper/tables/run_info.tex",
                   "verdicts": "paper/verdicts.html"}
        paper_report(inputs=report_inputs, outputs=outputs,
                     params={"run": {"name": "synthetic", "label": "Synthetic"}, "skipped": {}},
                     wildcards={}, threads=1)
        yield root, (root / "paper/report.md").read_text()
    finally:
        mp.undo()


def test_report_shows_graded_by_under_every_best_of_n_table_and_figure(report):
    root, md = report
    assert {"table1", "table3", "table6", "table8", "table9", "table10", "table13"} <= set(GRADED)
    assert {"fig1", "fig2", "fig3", "fig5", "fig7", "fig9"} <= set(GRADED)
    for aid in GRADED:
        section = _section(md, aid).replace("\\", "")   # md_note's escapes
        assert "- Correctness graded by the Qwen2.5-Math evaluation harness's math_equal" in section, aid
        assert "(grading.grader: harness)" in section, aid
    # the same note strings as the LaTeX table's (one source: the provenance record)
    notes = json.loads((root / artifact_paths("table6")["provenance"]).read_text())["notes"]
    assert any(n.startswith("Correctness graded by") for n in notes)
    assert "Correctness graded by" in (root / artifact_paths("table6")["tex"]).read_text()


def test_report_shows_the_threshold_under_table7(report):
    root, md = report
    section = _section(md, "table7").replace("\\", "")
    assert "- Threshold tuned by ProcessBench's rule" in section and "(processbench_eval.tune_on: gsm8k)" in section
    # under the table, before the link to its data
    assert section.index("| row |") < section.index("Notes:") < section.index("- Threshold") < section.index("Data: [")
    assert "Threshold tuned by ProcessBench" in (root / artifact_paths("table7")["tex"]).read_text()


def test_the_html_report_gets_the_verdict_table_and_tally(report):
    root, md = report
    page = (root / "paper/verdicts.html").read_text()
    tally = next(ln for ln in md.splitlines() if ln.startswith("Tally: "))
    verdict_md = md[md.index(R.HEADING):md.index(tally)]
    body_rows = [ln for ln in verdict_md.splitlines() if ln.startswith("| ") and not ln.startswith("| Lesson |")]
    assert tally in page and "<table>" in page and page.count("<tr>") == len(body_rows) + 1


def test_verdicts_html_escapes_and_counts():
    rows = [R.Verdict("1. <b>", "x & y", "m", R.REPRODUCED), R.Verdict("2.", "p", "m", R.UNDECIDABLE, "r", "d")]
    page = R.verdicts_html(rows, "run <1>")
    assert "<b>" not in page.replace("<body>", "") and "&lt;b&gt;" in page and "x &amp; y" in page
    assert "Tally: 1 reproduced, 1 undecidable here." in page and "Would decide it: d" in page
    assert R.tally(rows) in R.verdicts_markdown(rows)


def test_data_notes_name_the_artifacts_own_mc_set():
    """Figures 3-5's rows come from the paper's 3M set: their note names it, and says a run standing for the
    860k set shows them, never compares them; Figure 9 names both sets; Table 3 only the 860k one."""
    pub = load_published()
    params = {"mc_experiment": "860k", "data_setting": {"name": "p", "model_id": "Qwen/Qwen2-Math-7B-Instruct",
                                                         "completer_id": "Qwen/Qwen2.5-Math-7B-Instruct"}}
    for aid in ("fig3", "fig4", "fig5"):
        text = " ".join(mc_set_notes(aid, pd.DataFrame({"key": ["mc_hard", "mc_soft"]}), pub, params))
        assert "the paper's 3M data" in text and "860k data" not in text, aid
        assert "does not match the paper's 3M set" in text and "rows from the paper's 3M set are shown" in text, aid
    fig9 = " ".join(mc_set_notes("fig9", pd.DataFrame({"key": ["mc_hard", "mc_soft"]}), pub, params))
    assert "the paper's 3M or 860k data" in fig9 and "matches the paper's 860k set" in fig9
    t3 = " ".join(mc_set_notes("table3", pd.DataFrame({"key": ["mc_hard", "human"]}), pub, params))
    assert "860k data" in t3 and "3M" not in t3 and "matches the paper's 860k set" in t3
    cells = pd.DataFrame({"row": ["mc_hard"], "key": ["mc_hard"], "n_samples": [1000.0],
                          "paper_n_samples": [3e6]})
    assert any("3M data" in n for n in data_notes("fig3", cells, pub, params))


def test_md_note_keeps_sentences_readable_and_user_text_inert():
    assert md_note("Correctness graded by x's math_equal (grading.grader: harness).") == \
        "Correctness graded by x's math\\_equal (grading.grader: harness)."
    assert md_note("a *b* [c](d) <e> | f\ng") == "a \\*b\\* \\[c\\](d) \\<e\\> \\| f g"
    assert md_note("# x").startswith("\\#") and md_note("1. x").startswith("\\1")
    assert notes_markdown([]) == [] and notes_markdown(["n"]) == ["Notes:", "", "- n", ""]


def _render_caption(path: Path) -> str:
    """A workflow/report caption as Snakemake's report renders it (Jinja with `snakemake`, then docutils)."""
    import jinja2
    from docutils.core import publish_parts

    snakemake = types.SimpleNamespace(params=types.SimpleNamespace(grader="harness"),
                                      config={"run": {"name": "embedded", "label": "Embedded: a run"}})
    text = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(path.read_text()).render(
        snakemake=snakemake)
    return publish_parts(text, writer_name="html", settings_overrides={"report_level": 5})["body"]


@pytest.mark.parametrize("aid", list(ARTIFACTS))
def test_no_caption_or_footer_says_reproduced(aid, tmp_path):
    """"reproduced" is a verdict: a figure's footer and every HTML caption say "regenerated (this run beside
    the paper)"; a Best-of-N artifact's caption names its grader."""
    a = ARTIFACTS[aid]
    caption = _render_caption(ROOT / "workflow/report" / f"{a['stem']}.rst")
    assert "reproduced" not in caption.lower()
    assert f"{a['source']} of Zhang et al. (2025), regenerated (this run beside the paper)" in caption
    assert ("Correctness graded by <tt" in caption and "harness" in caption) == (aid in GRADED)
    if a["kind"] == "figure":
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from prm_lessons.artifacts.plots import save_figure

        fig = plt.figure(figsize=(3.3, 2))
        outputs = {"pdf": str(tmp_path / "f.pdf"), "png": str(tmp_path / "f.png")}
        params = analysis_params(run={"name": "t"}, grader="harness")
        save_figure(fig, aid, outputs, {**params, "figure": {**params["figure"], "dpi": 20}})
        footer = " ".join(t.get_text() for t in fig.texts).replace("\n", " ")
        assert f"{a['source']} regenerated (this run beside the paper)" in footer and "reproduced" not in footer
        assert "Graded by harness." in footer


def test_the_verdicts_caption_renders():
    caption = _render_caption(ROOT / "workflow/report/verdicts.rst")
    assert "undecidable here" in caption and "Embedded: a run" in caption
