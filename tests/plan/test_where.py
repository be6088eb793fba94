"""prm_lessons.plan.where: the message after a successful run names the report, the HTML report and the logs,
and only the report files this run's directory has."""
from __future__ import annotations

from prm_lessons.plan.where import finish_message


def test_a_finished_run_is_told_where_its_report_and_logs_are(tmp_path):
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "report.md").write_text("# report\n")
    (tmp_path / "results" / "tables").mkdir(parents=True)
    msg = finish_message(tmp_path)
    assert "paper/report.md" in msg and "results/tables" in msg
    assert "paper/main.pdf" not in msg  # no LaTeX here: no PDF to point at
    assert "make report" in msg and "report.html" in msg and "logs/<rule>/" in msg and "benchmarks/" in msg


def test_a_run_of_a_few_targets_points_at_results(tmp_path):
    msg = finish_message(tmp_path)
    assert "no report yet" in msg and "paper/report.md" not in msg and "logs/<rule>/" in msg


def test_a_named_run_points_at_its_own_folder(tmp_path):
    """An ablation's message names runs/<name>/paper/report.md, not the base run's report."""
    from prm_lessons.plan.where import finish_message

    (tmp_path / "paper").mkdir()
    (tmp_path / "paper/report.md").write_text("base")
    (tmp_path / "runs/aggregation/paper").mkdir(parents=True)
    (tmp_path / "runs/aggregation/paper/report.md").write_text("ablation")
    msg = finish_message(tmp_path, prefix="runs/aggregation/")
    assert "runs/aggregation/paper/report.md" in msg and "runs/aggregation/logs/<rule>/" in msg
    assert "\n  paper/report.md" not in msg


def test_a_named_run_is_told_how_to_build_its_own_html_report(tmp_path, monkeypatch):
    """`make report` alone reports the base run: an ablation's message gives its config files and its
    own report file."""
    monkeypatch.chdir(tmp_path)
    files = [str(tmp_path / "config/config.yaml"), "config/ablations/aggregation.yaml"]
    msg = finish_message(tmp_path, prefix="runs/aggregation/", configfiles=files)
    assert ('make report REPORT=runs/aggregation/report.html SMK_ARGS="--configfile config/config.yaml '
            'config/ablations/aggregation.yaml"') in msg
    base = finish_message(tmp_path, configfiles=files[:1])
    assert "make report\n" in base and "SMK_ARGS" not in base
