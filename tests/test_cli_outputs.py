"""Every `prm-lessons` command that writes a file, against every kind of output it cannot write (a full
disk: a link to /dev/full; a directory; a path under a regular file; a folder where no file can be made): exit
status 2, exactly one line on stderr naming the output, no traceback, and nothing left behind. The
commands run in-process on small valid inputs, so the only fault is the output. The score command's
model is stood in (its writer, scoring.score_file.write_jsonl, is the real one)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cli_run import run_cli as run
from prm_lessons.tables import write_table


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("in")
    pb = d / "cases.parquet"
    pd.DataFrame({"id": ["g0", "g1"], "subset": ["gsm8k"] * 2, "generator": ["x"] * 2, "problem": ["p"] * 2,
                  "final_answer_correct": [True, False], "steps": [["a", "b"], ["a", "b"]],
                  "label": [-1, 1]}).to_parquet(pb, index=False)
    write_table(pd.DataFrame({"instance_id": ["p#0"], "question": ["Q?"], "steps": [["a.", "b."]],
                              "labels": [[1.0, 0.0]]}), d / "ts.parquet", "trainset")
    (d / "prm").mkdir()
    return {
        "grade": _jsonl(d / "g.jsonl", [{"response": "so \\boxed{4}", "answer": "4"}]),
        "pb": pb,
        "pred": _jsonl(d / "p.jsonl", [{"id": "g0", "prediction": -1}, {"id": "g1", "prediction": 1}]),
        "bon": _jsonl(d / "b.jsonl", [{"benchmark": "b", "problem_id": "1", "sample_idx": i, "pred": "4",
                                       "correct": i == 0, "step_scores": [0.9 - i / 10]} for i in range(2)]),
        "ts": d / "ts.parquet",
        "score": _jsonl(d / "s.jsonl", [{"id": "a", "problem": "Q?", "steps": ["a.", "b."]}]),
        "prm": d / "prm",
    }


# every command that writes a file: its argv up to --output
COMMANDS = {
    "grade": lambda i: ["grade", "--input", str(i["grade"]), "--workers", "1"],
    "score": lambda i: ["score", "--prm", str(i["prm"]), "--adapter", "qwen_prm", "--input", str(i["score"])],
    "eval processbench": lambda i: ["eval", "processbench", "--data", str(i["pb"]), "--predictions", str(i["pred"])],
    "eval bon": lambda i: ["eval", "bon", "--samples", str(i["bon"]), "--bootstrap", "0"],
    "export-trl": lambda i: ["export-trl", "--trainset", str(i["ts"])],
}
SUFFIX = {"export-trl": ".jsonl", "grade": ".jsonl", "score": ".jsonl"}


def _outputs(tmp: Path, suffix: str) -> dict:
    """Output paths no command can write, by kind."""
    (tmp / "a_file").write_text("x")
    (tmp / "a_dir").mkdir()
    out = {"directory": tmp / "a_dir",
           "under-a-file": tmp / "a_file" / f"out{suffix}",
           "deeper-under-a-file": tmp / "a_file" / "sub" / f"out{suffix}",
           "proc": Path(f"/proc/prm-lessons-test-out{suffix}")}
    if Path("/dev/full").is_char_device():
        # a link to it, never /dev/full itself: a writer that renames a temporary file onto its output
        # (as root) would replace the system's device with a regular file; here it replaces the link
        (tmp / f"full{suffix}").symlink_to("/dev/full")
        out["disk-full"] = tmp / f"full{suffix}"
    return out


OUTPUT_KINDS = ["directory", "under-a-file", "deeper-under-a-file", "proc", "disk-full"]


@pytest.fixture
def stand_in_scorer(monkeypatch):
    """score_file without a model: the rows checked and written as the real one does."""
    pytest.importorskip("torch")
    from prm_lessons.scoring import score_file as SF

    def score_file(rows, prm, output, **kw):
        items = SF.parse_rows(rows)
        SF.write_jsonl([{**r, "step_scores": [0.5] * len(r["steps"])} for r in rows], output)
        return {"outcome": False, "steps_scored": 2, "steps": 2, "rows_truncated": 0, "max_length": None,
                "rows": len(items), "adapter": kw.get("adapter"), "prm_dir": prm, "forward_passes": 1,
                "seconds": 0.0, "nonfinite": 0}

    monkeypatch.setattr(SF, "score_file", score_file)


@pytest.mark.parametrize("kind", OUTPUT_KINDS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unwritable_output_is_one_line_and_status_2(tmp_path, inputs, request, command, kind):
    if command == "score":
        request.getfixturevalue("stand_in_scorer")
    outputs = _outputs(tmp_path, SUFFIX.get(command, ".json"))
    if kind not in outputs:
        pytest.skip(f"no {kind} output on this system")
    target = outputs[kind]
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    code, _, err = run([*COMMANDS[command](inputs), "--output", str(target)])
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1, (command, kind, code, err)
    assert lines[0].startswith("prm-lessons: error: ") and str(target) in lines[0], lines[0]
    assert "Traceback" not in err
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before  # no .tmp left
    if kind == "disk-full":
        assert target.is_symlink() and target.is_char_device()  # written in place, never replaced by a rename


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_same_commands_write_a_writable_output(tmp_path, inputs, request, command):
    """The rows above fail for their output only: the same command succeeds on a plain path."""
    if command == "score":
        request.getfixturevalue("stand_in_scorer")
    target = tmp_path / "new" / f"out{SUFFIX.get(command, '.json')}"
    code, _, err = run([*COMMANDS[command](inputs), "--output", str(target)])
    assert code == 0, err
    assert target.read_text().strip() and sorted(p.name for p in target.parent.iterdir()) == [target.name]
