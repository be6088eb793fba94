"""paper/: names, provenance, LaTeX/Markdown rendering, report.md, main.tex ↔ generated files, PDF build
(prm_lessons.artifacts.registry / .render, prm_lessons.rules.paper)."""
import hashlib
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis_synth import analysis_params, rule_inputs, write_upstream
from prm_lessons.artifacts import registry as P
from prm_lessons.artifacts import render as R
from prm_lessons.rules import analysis as rules_analysis
from prm_lessons.rules import paper as rules_paper

ROOT = Path(__file__).resolve().parents[2]


def test_artifact_names_follow_the_paper():
    for aid, a in P.ARTIFACTS.items():
        n = re.sub(r"\D", "", aid)
        paths = P.artifact_paths(aid)
        if a["kind"] == "table":
            assert paths["csv"] == f"results/tables/table{n}_{a['stem'].split('_', 1)[1]}.csv"
            assert paths["tex"].startswith(f"paper/tables/table{n}_") and a["source"] == f"Table {n}"
        else:
            assert paths["pdf"] == f"figures/fig{n}_{a['stem'].split('_', 1)[1]}.pdf" and paths["png"].endswith(".png")
            assert a["source"] == f"Figure {n}"
        assert (ROOT / f"workflow/report/{a['stem']}.rst").exists(), "every artifact has a report caption"


def test_main_tex_inputs_every_table_and_figure():
    tex = (ROOT / "paper/main.tex").read_text()
    for aid, a in P.ARTIFACTS.items():
        if a["kind"] == "table":  # \optionaltable: a table some configs do not produce (run_info says why)
            assert f"\\input{{tables/{a['stem']}}}" in tex or f"\\optionaltable{{{a['stem']}}}" in tex, aid
        else:
            assert f"\\artifact{{{a['stem']}}}" in tex or re.search(r"\\includegraphics\[[^]]*\]\{" + a["stem"] + "}",
                                                                    tex), aid
    assert "\\input{tables/run_info}" in tex and "\\runlabel" in tex


def test_unplanned_artifacts_are_named_with_their_reason(tmp_path):
    """An artifact the config cannot produce: report.md says why in its place, run_info.tex defines the
    reason main.tex's \\optionaltable prints instead of \\input (which would fail on a missing file)."""
    skipped = {"table15": "analysis.chinese_benchmarks is empty", "table9": "no second policy"}
    md = R.report_markdown({"citation": {"title": "T", "text": "x", "url": "u", "setup": "s"}, "tables": {}},
                           {"name": "r"}, {}, tmp_path, skipped=skipped)
    assert "_Not produced by this configuration: analysis.chinese\\_benchmarks is empty._" not in md
    assert "_Not produced by this configuration: analysis.chinese_benchmarks is empty._" in md
    assert "fig1_overview.png" in md and "table15_scoring_strategies_chinese.csv" not in md
    info = R.run_info_tex({"name": "r"}, skipped)
    assert "\\expandafter\\def\\csname skip@table15_scoring_strategies_chinese\\endcsname" \
           "{analysis.chinese\\_benchmarks is empty}" in info
    assert "skip@table9_bon_second_policy" in info and "skip@table10" not in info


def test_tex_escape_and_latex_table():
    assert R.tex_escape("mc_hard 50% & {x} #1 $y ~^\\") == \
        r"mc\_hard 50\% \& \{x\} \#1 \$y \textasciitilde{}\textasciicircum{}\textbackslash{}"
    d = pd.DataFrame({"row": ["mc_hard", "paper: MC (our data)", "Δ"], "GSM8K": ["1.0", "97.0", "-96.0"]})
    tex = R.latex_table(d, "T_title", "Table 3", {"label": "Embedded: 135M model"}, "table3", ["a note"])
    assert r"\toprule" in tex and r"\bottomrule" in tex and r"mc\_hard & 1.0 \\" in tex
    assert r"\textit{-96.0}" in tex and r"$\Delta$" in tex and "Embedded: 135M model" in tex and "a note" in tex
    assert tex.count("&") - tex.count(r"\&") == 4  # header + 3 rows, one column separator each


def test_markdown_table_escapes_pipes():
    md = R.markdown_table(pd.DataFrame({"row": ["a|b"], "x": ["1.0"]}))
    assert md.splitlines() == ["| row | x |", "|---|---:|", r"| a\|b | 1.0 |"]


def test_provenance_records_config_hash_files_and_checksums(tmp_path, monkeypatch):
    f = tmp_path / "bon.csv"
    f.write_text("a\n1\n")
    monkeypatch.setenv("PRM_LESSONS_CONFIG_MD5", "feedbeef")
    monkeypatch.setenv("PRM_LESSONS_CONFIGFILES", "config/config.yaml")
    prov = P.provenance("table3", {"name": "embedded", "label": "L"}, {"bon": str(f), "code": ["x.py"]})
    assert prov["config_md5"] == "feedbeef" and prov["configfiles"] == ["config/config.yaml"]
    assert prov["run"] == {"name": "embedded", "label": "L"} and prov["paper_source"] == "Table 3"
    assert prov["inputs"] == [{"input": "bon", "path": str(f), "bytes": 4,
                               "sha256": hashlib.sha256(b"a\n1\n").hexdigest()}]  # .py code inputs are skipped
    assert P.config_md5({"a": 1, "b": 2}) == P.config_md5({"b": 2, "a": 1})


def _build_all(tmp_path, monkeypatch):
    write_upstream(tmp_path)
    monkeypatch.chdir(tmp_path)
    inputs = rule_inputs()
    params = analysis_params()
    for aid in P.ARTIFACTS:
        getattr(rules_analysis, P.ARTIFACTS[aid]["stem"])(inputs=inputs, outputs=P.artifact_paths(aid), params=params,
                                                          wildcards={}, threads=1)
    rules_paper.paper_report(inputs={f"{aid}_csv": P.artifact_paths(aid)["csv"] for aid in P.ARTIFACTS},
                             outputs={"report": "paper/report.md", "run_info": "paper/tables/run_info.tex"},
                             params={"run": params["run"], "skipped": {}}, wildcards={}, threads=1)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("paper")
    try:
        _build_all(tmp, mp)
        yield tmp
    finally:
        mp.undo()


def test_report_md_has_every_table_and_links_every_figure(built):
    md = (built / "paper/report.md").read_text()
    assert "Synthetic test run" in md and "arXiv:2501.07301v2" in md
    for aid, a in P.ARTIFACTS.items():
        assert f"## {a['source']}:" in md
        if a["kind"] == "figure":
            link = f"../figures/{a['stem']}.png"
            assert f"]({link})" in md and (built / "paper" / link).resolve().exists()
    assert "| row |" in md and "paper: Human annotation (PRM800K), 264k" in md
    assert r"\newcommand{\runlabel}{Synthetic test run" in (built / "paper/tables/run_info.tex").read_text()


@pytest.mark.skipif(shutil.which("latexmk") is None, reason="latexmk not installed (CI installs Debian texlive)")
def test_main_pdf_builds_with_latexmk(built):
    rules_paper.paper_pdf(inputs={"tex": str(ROOT / "paper/main.tex")}, outputs={"pdf": str(built / "paper/main.pdf")},
                          params={"timeout_s": 300}, wildcards={}, threads=1)
    pdf = built / "paper/main.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000
    log = (built / "paper/main.log").read_text(errors="replace")
    assert "Float too large" not in log and "undefined" not in log.lower()


def test_pdf_rule_explains_missing_latexmk(monkeypatch, tmp_path):
    monkeypatch.setattr(R.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="latexmk is not installed"):
        rules_paper.paper_pdf(inputs={"tex": "x"}, outputs={"pdf": str(tmp_path / "m.pdf")}, params={}, wildcards={},
                              threads=1)


def test_findings_read_the_main_tables_policy_and_n():
    from analysis_synth import policy_bon_frame

    bon = policy_bon_frame()
    rows = rules_paper._main_rows(bon, {"policy": "smollm2", "n": 4})
    assert set(rows["policy"]) == {"smollm2"} and set(rows["n"]) == {4} and (rows["accuracy"] == 0.2).all()
    old = policy_bon_frame(policy_column=False)  # before bon.policies: one policy's rows
    assert len(rules_paper._main_rows(old, {"policy": "smollm2", "n": 2})) == len(old[old["n"] == 2])


@pytest.mark.parametrize("configfiles", [("config.yaml",), ("config.yaml", "all.yaml"), ("paper.yaml",)])
def test_every_table_a_config_skips_is_optional_in_main_tex(configfiles):
    """`\\input` of a table the config does not produce stops latexmk (make run's PDF once did, on
    Table 8 after greedy search moved to make run-all); such a table must be an `\\optionaltable`."""
    from prm_lessons.config import load_config
    from prm_lessons.plan.analysis import analysis_skipped

    tex = (ROOT / "paper/main.tex").read_text()
    skipped = analysis_skipped(load_config(*[ROOT / "config" / c for c in configfiles]))
    for aid in skipped:
        a = P.ARTIFACTS[aid]
        if a["kind"] == "table":
            assert f"\\optionaltable{{{a['stem']}}}" in tex, aid
