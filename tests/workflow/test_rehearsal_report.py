"""The rehearsal's report (results/rehearsal/report.json, written by `make rehearsal`) and Snakemake's
HTML report of the same run (results/rehearsal/report.html, written by `make report` in `.ci/run`).

`.ci/run` runs `make rehearsal`, `make report` on it, then this file with REHEARSAL_REQUIRED=1: a
missing report is then a failure. In `make test` (which runs before the rehearsal) the report-dependent
tests skip when there is none; the parsing helpers are tested on their own.
"""
from __future__ import annotations

import base64
import html
import json
import os
import re
from pathlib import Path

import pytest

from prm_lessons.artifacts.registry import ARTIFACTS, artifact_paths, report_entry
from prm_lessons.config import load_config
from prm_lessons.plan import analysis_skipped
from prm_lessons.rehearsal.report import parse_job_table, rules_from_summary
from prm_lessons.text_rule import html_link_problems

ROOT = Path(__file__).resolve().parents[2]
REPORT = Path(os.environ.get("REHEARSAL_REPORT", ROOT / "results/rehearsal/report.json"))
HTML_REPORT = REPORT.with_name("report.html")
WORK = REPORT.with_name("work")  # the rehearsal's working directory
# the rehearsal's configs (prm_lessons.rehearsal.run; .ci/run passes the same to make report)
REHEARSAL_CONFIGS = (ROOT / "config/paper.yaml", ROOT / "config/rehearsal.yaml")
VERDICTS_HTML = "paper/verdicts.html"  # rule paper_report's report item (workflow/rules/paper.smk)

# label-token ids as each model's own inference code computes them with its real tokenizer
EXPECTED_IDS = {
    "math_shepherd": {"step_tag_id": 12902, "label_token_ids": [648, 387]},
    "rlhflow": {"label_token_ids": [10, 12]},
    "qwen_prm": {"step_tag_id": 151651},
}


def test_parse_job_table():
    text = ("Job stats:\njob            count\n-----------  -------\n"
            "sample           8\nall              1\ntotal            9\n")
    assert parse_job_table(text) == {"sample": 8, "all": 1}


def test_rules_from_summary_counts_present_outputs_only():
    text = ("output_file\tdate\trule\tlog-file(s)\tstatus\tplan\n"
            "results/a.parquet\tMon Nov 23 10:00:00 2026\tsample\tlogs/a.log\tok\tno update\n"
            "results/b.parquet\t-\ttrain_prm\t\tmissing\tupdate pending\n")
    assert rules_from_summary(text) == {"sample": 1}


def snakemake_report_data(text: str) -> tuple[str, dict]:
    """(the workflow description as HTML, {path: entry}) of a Snakemake HTML report: the two JSON values
    its template embeds as `<script id="workflow-desc">var workflow_desc = ...` and `<script
    id="results">var results = ...` (Snakemake 9's single-file report)."""
    values = []
    for script, var in (("workflow-desc", "workflow_desc"), ("results", "results")):
        m = re.search(rf'<script id="{script}">\s*var {var} = ', text)
        assert m, f"no `var {var}` in the HTML report: has Snakemake's report template changed?"
        values.append(json.JSONDecoder().raw_decode(text, m.end())[0])
    return values[0], values[1]


def test_snakemake_report_data_reads_the_embedded_description_and_results():
    text = ('<script>var results = new Array();</script>\n<script id="workflow-desc">\n    var workflow_desc = '
            '"<p>Run: a \\u2014 b</p>";\n    </script>\n<script id="results">\n    var results = '
            '{"figures/f.png": {"caption": "<p>c;</p>", "labels": {}}};\n    </script>')
    desc, results = snakemake_report_data(text)
    assert desc == "<p>Run: a \u2014 b</p>"
    assert results == {"figures/f.png": {"caption": "<p>c;</p>", "labels": {}}}
    with pytest.raises(AssertionError, match="var results"):
        snakemake_report_data(text.replace('id="results"', 'id="other"'))


def _required(path: Path, made_by: str):
    if not path.exists():
        if os.environ.get("REHEARSAL_REQUIRED") == "1":
            pytest.fail(f"{path} is missing: `{made_by}` did not write it")
        pytest.skip(f"no {path.name} of a rehearsal (run `{made_by}`)")


@pytest.fixture(scope="module")
def report():
    _required(REPORT, "make rehearsal")
    return json.loads(REPORT.read_text())


@pytest.fixture(scope="module")
def html_report():
    _required(HTML_REPORT, "make report")
    return snakemake_report_data(HTML_REPORT.read_text())


def test_the_run_succeeded_and_every_rule_of_the_paper_dag_ran(report):
    assert report["snakemake_returncode"] == 0
    assert report["rules_planned"], "the dry run planned no job"
    assert report["rules_missing"] == [], f"planned rules that left no output: {report['rules_missing']}"
    for rule in ("download_model", "sample", "mc", "judge", "train_prm", "score_samples", "score_processbench",
                 "critic_processbench", "critique_template", "human_labels", "benchmark_file"):
        assert rule in report["rules_ran"], rule


def test_every_model_calling_rule_counted_its_tokens(report):
    """The paper DAG's engine rules (make run-all's among them: the tiny end-to-end test runs make run's
    DAG only) and the frozen-base / scoring passes wrote token sidecars with real counts."""
    tokens = report["tokens"]
    for rule in ("sample", "mc", "judge", "bon_judge", "critic_processbench", "search_greedy"):
        assert tokens.get(rule, {}).get("prefill_tokens", 0) > 0, (rule, tokens.get(rule))
        assert tokens[rule]["decode_tokens"] > 0, (rule, tokens[rule])
    assert not set(tokens) & {"grade_samples", "bon_metrics", "paper_report"}  # no model in these


def test_every_released_adapter_scored_real_processbench_cases_with_finite_scores(report):
    assert report["adapters"], "no released PRM in the report"
    for name, row in report["adapters"].items():
        assert row["scored"] and row["cases_scored"] > 0, name
        assert row["n_scores"] > 0 and row["scores_finite"], name


def test_label_token_ids_equal_what_the_models_own_code_computes(report):
    seen = set()
    for name, row in report["adapters"].items():
        want = EXPECTED_IDS.get(row["adapter"])
        if want is None:
            continue
        seen.add(row["adapter"])
        for key, value in want.items():
            assert row[key] == value, f"{name}: {key} {row[key]} != {value}"
    assert seen == set(EXPECTED_IDS), f"adapters missing from the report: {set(EXPECTED_IDS) - seen}"


def test_benchmarks_loaded_at_their_full_size_and_used_at_the_rehearsal_size(report):
    # every benchmark of config/paper.yaml (the seven of Table 6, Table 10's, the Chinese sets, Omni-MATH)
    import yaml
    paper = yaml.safe_load((Path(__file__).resolve().parents[2] / "config/paper.yaml").read_text())
    assert set(report["benchmarks"]) == set(paper["benchmarks"])
    for name, row in report["benchmarks"].items():
        assert row["used"] and row["used"] > 0, name
        assert row["loaded"] == row["expected"], f"{name}: loaded {row['loaded']} rows, expected {row['expected']}"


def test_training_ran_multi_process_and_rank0_saved_and_the_prm_loads_in_scoring(report):
    assert report["training"], "no trained PRM"
    for variant, row in report["training"].items():
        assert row["world_size"] == 2 and row["saved_by_rank"] == 0, variant
        assert row["scored"] and row["scores_finite"], variant
        # training.deepspeed_on_cpu: the GPU jobs' ZeRO-2 path (paper.yaml's zero2.json) ran, not plain DDP
        assert row["deepspeed"] and row["deepspeed"].endswith("zero2.json"), variant


def test_the_html_report_holds_every_paper_figure_and_table_with_its_caption(html_report):
    """Each artifact the paper config makes is in the report under its own file name (a figure's PNG, a
    table's CSV), with the run's file byte for byte and its caption (workflow/report/<stem>.rst: the paper's figure or
    table it regenerates, and the run it comes from), and nothing else is but the verdicts (the test below)."""
    _, results = html_report
    config = load_config(*REHEARSAL_CONFIGS)
    made = [aid for aid in ARTIFACTS if aid not in analysis_skipped(config)]
    assert len(made) == len(ARTIFACTS), f"the paper config skips {sorted(set(ARTIFACTS) - set(made))}"
    label = html.escape(config["run"]["label"], quote=False)
    expected = {}
    for aid in made:
        key, kwargs = report_entry(aid)
        expected[artifact_paths(aid)[key]] = (aid, key, kwargs)
    assert set(results) == set(expected) | {VERDICTS_HTML}
    for path, (aid, key, kwargs) in expected.items():
        entry, a = results[path], ARTIFACTS[aid]
        assert entry["filename"] == Path(path).name, path
        assert entry["labels"] == {"artifact": a["source"]}, path
        assert entry["job_properties"]["rule"] == a["stem"], path
        head, _, data = entry["data_uri"].partition(";base64,")
        assert head.startswith("data:image/png" if key == "png" else "data:text/csv"), path
        assert base64.b64decode(data) == (WORK / path).read_bytes(), (
            f"{path}: not the run's file (a report older than the run? make report again)")
        caption = entry["caption"]
        assert f"{a['source']} of Zhang et al. (2025), regenerated (this run beside the paper)" in caption, path
        # "reproduced" is a verdict (the verdicts entry below), never what a figure or table is
        assert "reproduced" not in caption, path
        # the run label as written: its RST escapes (workflow/report/*.rst) leave no backslash behind
        assert f"<em>{config['run']['name']}</em>: {label}" in caption, path
        assert "\\" not in caption, path


def test_the_html_report_names_the_run_and_its_benchmarks(html_report):
    desc, _ = html_report
    config = load_config(*REHEARSAL_CONFIGS)
    label = html.escape(config["run"]["label"], quote=False)
    assert f"<strong>Run:</strong> {config['run']['name']} \u2014 {label}</p>" in desc
    assert "\\" not in desc
    for name in config["benchmarks"]:
        assert f'<tt class="docutils literal">{name}</tt>' in desc, name


def test_the_html_report_holds_the_verdict_table_and_tally(html_report):
    """paper/verdicts.html (rule paper_report): the verdict table and tally that open paper/report.md, byte for
    byte the run's file, under *Verdicts* with its caption (workflow/report/verdicts.rst)."""
    _, results = html_report
    entry = results[VERDICTS_HTML]
    assert entry["job_properties"]["rule"] == "paper_report" and entry["labels"] == {"artifact": "verdicts"}
    head, _, data = entry["data_uri"].partition(";base64,")
    assert head.startswith("data:text/html")
    page = base64.b64decode(data)
    assert page == (WORK / VERDICTS_HTML).read_bytes(), "not the run's file (a report older than the run?)"
    text = page.decode()
    assert "Tally: " in text and "<table>" in text and "Why undecidable" in text
    assert "undecidable here" in entry["caption"]


def test_the_html_report_links_only_to_relative_paths(html_report):
    """The workflow's description, every caption and the embedded verdict page link to no scheme (no
    `javascript:`, `http:`, `data:`) and no absolute path (text_rule.html_link_problems); the report's own
    embedding of each result (its `data_uri`, which the report's code, not an HTML attribute of ours, opens)
    is the one data URI."""
    desc, results = html_report
    problems = html_link_problems(desc)
    for path, entry in results.items():
        problems += [f"{path} caption: {p}" for p in html_link_problems(entry["caption"])]
    page = base64.b64decode(results[VERDICTS_HTML]["data_uri"].partition(";base64,")[2]).decode()
    problems += [f"{VERDICTS_HTML}: {p}" for p in html_link_problems(page)]
    assert not problems, problems
