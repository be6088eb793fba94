"""Grading rows of a file (prm_lessons.grading.rows) and `prm-lessons grade`."""
from __future__ import annotations

import json

from prm_lessons.grading.rows import grade_rows

# -------------------------------------------------------------------------------------------- CLI

def test_cli_grade_writes_rows_and_counts(tmp_path, capsys):
    from prm_lessons.cli import main

    inp = tmp_path / "in.jsonl"
    rows = [{"id": 1, "response": "so \\boxed{4}", "answer": "4"},
            {"id": 2, "response": "nothing", "answer": "4"},
            {"id": 3, "code": ["\\boxed{1}", "\\boxed{2}"], "response": "x", "answer": "2"}]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    out = tmp_path / "out.jsonl"
    assert main(["grade", "--input", str(inp), "--output", str(out)]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(g["id"], g["pred"], g["correct"]) for g in got] == [(1, "4", True), (2, None, False)]
    printed = capsys.readouterr().out
    assert "2 responses" in printed and "1 without an answer" in printed and "0 timed out" in printed

    # a list-valued response field (the harness's `code`) gives lists of the same length
    inp.write_text(json.dumps(rows[2]) + "\n")
    assert main(["grade", "--input", str(inp), "--output", str(out), "--response-field", "code"]) == 0
    got = json.loads(out.read_text())
    assert got["pred"] == ["1", "2"] and got["correct"] == [False, True]

    # a missing field is a clear error naming the row
    assert main(["grade", "--input", str(inp), "--output", str(out), "--response-field", "nope"]) == 2
    assert "row 1 (id 3): no field 'nope'" in capsys.readouterr().err


def test_grade_rows_empty_list():
    out, summary = grade_rows([{"response": [], "answer": "1"}])
    assert out[0]["pred"] == [] and summary["n"] == 0
