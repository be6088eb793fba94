"""Hostile and malformed input to the three CLIs (`prm-lessons grade`, `eval bon`, `eval processbench`;
issue 17, review reviews-2026-11/hostile-input.md §3): every case the review found wrong has an exact
outcome here (exit status 2 with a line naming the row or id, or the documented resolution and its
count), and property-based tests (hypothesis) feed the CLIs malformed rows and require that they never
crash and never report a number from an invalid row.

The CLIs run in-process (prm_lessons.cli.main); argparse errors arrive as SystemExit(2). The fixed cases
assert only what the CLI prints, exits with and writes, so the same tables can be run against an older
checkout to count the cases it got wrong."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]


def write_lines(path: Path, rows: list) -> Path:
    """JSONL: each row a JSON value (NaN/Infinity as Python's json writes them) or a raw line (bytes)."""
    path.write_text("".join((r.decode() if isinstance(r, bytes) else json.dumps(r)) + "\n" for r in rows))
    return path


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("prm-lessons: error: ")]


def strict_json_lines(text: str) -> list:
    """Parse JSONL refusing NaN/Infinity (the output must be standard JSON)."""
    def no_constant(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return [json.loads(line, parse_constant=no_constant) for line in text.splitlines()]


# ============================================================================================= grade

GRADE_BASE = [{"id": 1, "response": "so \\boxed{4}", "answer": "4"},
              {"id": 2, "response": "nothing to see", "answer": "7"}]

# (case id, rows after the change, extra argv, expected status, expected stderr fragments)
GRADE_CASES = [
    ("list-line", [GRADE_BASE[0], b"[1, 2]"], [], 2, ["line 2 is a JSON list, not an object"]),
    ("int-line", [GRADE_BASE[0], b"7"], [], 2, ["line 2 is a JSON int, not an object"]),
    ("string-line", [GRADE_BASE[0], b'"so \\\\boxed{4}"'], [], 2, ["line 2 is a JSON str, not an object"]),
    ("null-gold", [{"id": 1, "response": "\\boxed{None}", "answer": None}], [], 2,
     ["row 1 (id 1): gold answer (field 'answer') is null"]),
    ("nan-gold", [{"id": 1, "response": "\\boxed{nan}", "answer": math.nan}], [], 2,
     ["row 1 (id 1): gold answer (field 'answer') is null"]),
    ("empty-gold", [{"id": 1, "response": "\\boxed{4}", "answer": ""}], [], 2,
     ["row 1 (id 1): gold answer (field 'answer') is blank"]),
    ("blank-gold", [{"id": 1, "response": "\\boxed{4}", "answer": " $ $ "}], [], 2,
     ["row 1 (id 1): gold answer (field 'answer') is empty"]),
    ("empty-list-gold", [{"id": 1, "response": "\\boxed{4}", "answer": []}], [], 2,
     ["row 1 (id 1): gold answer (field 'answer') is an empty list"]),
    ("bool-gold", [{"id": 1, "response": "\\boxed{True}", "answer": True}], [], 2,
     ["row 1 (id 1): gold answer (field 'answer') True is a boolean, not an answer"]),
    ("object-gold", [{"id": 1, "response": "\\boxed{4}", "answer": {"value": 4}}], [], 2,
     ["row 1 (id 1): gold answer (field 'answer') is a JSON object"]),
    ("every-bad-row-listed", [{"id": 1, "response": "x", "answer": None}, GRADE_BASE[1],
                              {"id": 3, "answer": "1"}, {"id": 4, "response": "x", "answer": math.nan}], [], 2,
     ["row 1 (id 1): gold answer", "row 3 (id 3): no field 'response' (use --response-field)",
      "row 4 (id 4): gold answer (field 'answer') is null"]),
    ("timeout-0", GRADE_BASE, ["--timeout", "0"], 2, ["--timeout: expected a number of seconds > 0, got '0'"]),
    ("timeout-negative", GRADE_BASE, ["--timeout", "-1"], 2, ["--timeout: expected a number of seconds > 0"]),
    ("timeout-nan", GRADE_BASE, ["--timeout", "nan"], 2, ["--timeout: expected a finite number, got 'nan'"]),
    ("workers-0", GRADE_BASE, ["--workers", "0"], 2, ["--workers: expected an integer in 1..64, got 0"]),
    ("output-is-a-directory", GRADE_BASE, ["OUTPUT_DIR"], 2, ["is a directory; give a file path"]),
]


def assert_refused(case, code, err, out, status, fragments) -> None:
    """The exit status, no traceback, every expected fragment, no output file from invalid input, and
    one line per bad row where the case lists several."""
    assert code == status, err
    assert "Traceback" not in err
    for frag in fragments:
        assert frag in err, (frag, err)
    if status == 2 and not out.is_dir():
        assert not out.exists()  # nothing computed from invalid input, nothing written
    if case.startswith("every-bad-"):
        assert len(error_lines(err)) == 3


@pytest.mark.parametrize("case, rows, extra, status, fragments", GRADE_CASES, ids=[c[0] for c in GRADE_CASES])
def test_grade_hostile_rows(tmp_path, case, rows, extra, status, fragments):
    inp = write_lines(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    if extra == ["OUTPUT_DIR"]:
        out, extra = tmp_path / "a_dir", []
        out.mkdir()
    code, _, err = run_cli(["grade", "--input", str(inp), "--output", str(out), *extra])
    assert_refused(case, code, err, out, status, fragments)


def test_grade_never_writes_nan_and_reports_it(tmp_path):
    """A NaN in a field other than the response and gold is passed through as null (JSON has no NaN)."""
    inp = write_lines(tmp_path / "in.jsonl", [{"id": 1, "response": "\\boxed{4}", "answer": "4", "score": math.nan,
                                               "extra": [1.0, math.inf]}])
    out = tmp_path / "out.jsonl"
    code, printed, err = run_cli(["grade", "--input", str(inp), "--output", str(out)])
    assert code == 0, err
    (row,) = strict_json_lines(out.read_text())
    assert row["score"] is None and row["extra"] == [1.0, None] and row["correct"] is True
    assert "2 NaN/infinite value(s) of other fields written as null" in printed


def test_grade_null_or_number_response_has_no_answer(tmp_path):
    inp = write_lines(tmp_path / "in.jsonl", [{"id": 1, "response": None, "answer": "4"},
                                              {"id": 2, "response": 4, "answer": "4"}])
    out = tmp_path / "out.jsonl"
    code, _, err = run_cli(["grade", "--input", str(inp), "--output", str(out)])
    assert code == 0, err
    assert [r["grade_status"] for r in strict_json_lines(out.read_text())] == ["no_answer", "no_answer"]


def test_grade_with_the_harness_grader(tmp_path):
    """--grader harness compares as the Qwen2.5-Math harness: it never matches the gold "10{,}000" (math-verify
    does); --keep-units normalises as for Minerva Math ("5 m" is not 5)."""
    inp = write_lines(tmp_path / "in.jsonl", [{"id": 1, "response": "\\boxed{10000}", "answer": "10{,}000"},
                                              {"id": 2, "response": "\\boxed{5 m}", "answer": "5"}])
    verdicts = {}
    for extra in ([], ["--grader", "harness"], ["--grader", "harness", "--keep-units"]):
        out = tmp_path / f"out{len(extra)}.jsonl"
        code, _, err = run_cli(["grade", "--input", str(inp), "--output", str(out), *extra])
        assert code == 0, err
        verdicts[" ".join(extra)] = [r["correct"] for r in strict_json_lines(out.read_text())]
    assert verdicts == {"": [True, True], "--grader harness": [False, True],
                        "--grader harness --keep-units": [False, False]}


# ====================================================================================== ProcessBench

PB_CASES_TABLE = pd.DataFrame({
    "id": ["g0", "g1", "m0", "m1"], "subset": ["gsm8k", "gsm8k", "math", "math"], "label": [-1, 1, 0, -1],
    "generator": "x", "problem": "p", "final_answer_correct": [True, False, False, True],
    "steps": [["a", "b"], ["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"]]})
N_STEPS = {"g0": 2, "g1": 2, "m0": 3, "m1": 4}
PB_VALID = {"g0": {"id": "g0", "prediction": -1}, "g1": {"id": "g1", "step_scores": [0.9, 0.1]},
            "m0": {"id": "m0", "prediction": 0}, "m1": {"id": "m1", "step_scores": [0.9, 0.8, 0.7, 0.6]}}


@pytest.fixture(scope="module")
def pb_data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pb") / "cases.parquet"
    PB_CASES_TABLE.to_parquet(path, index=False)
    return path


def _pb_rows(**changes) -> list:
    """The valid predictions with some rows replaced (a dict, or raw bytes for a JSON line)."""
    return [changes.get(i, r) for i, r in PB_VALID.items()]


PB_CASES = [
    ("prediction-past-last-step", _pb_rows(g0={"id": "g0", "prediction": 99}), [], 2,
     ["id 'g0': prediction 99 is past the last step (the case has 2 step(s): predictions -1..1)"]),
    ("prediction-one-past", _pb_rows(g1={"id": "g1", "prediction": 2}), [], 2,
     ["id 'g1': prediction 2 is past the last step"]),
    ("more-scores-than-steps", _pb_rows(g1={"id": "g1", "step_scores": [0.9] * 7}), [], 2,
     ["id 'g1': 7 step score(s) for a case of 2 step(s)"]),
    ("error-past-last-step", _pb_rows(g1={"id": "g1", "step_scores": [0.9] * 6 + [0.1]}), [], 2,
     ["id 'g1': 7 step score(s) for a case of 2 step(s)"]),
    ("fewer-scores-than-steps", _pb_rows(m1={"id": "m1", "step_scores": [0.9, 0.8]}), [], 2,
     ["id 'm1': 2 step score(s) for a case of 4 step(s)"]),
    ("nan-score-json", _pb_rows(g1=b'{"id": "g1", "step_scores": [0.9, NaN]}'), [], 2,
     ["id 'g1': step_scores[1] is NaN"]),
    ("infinite-score", _pb_rows(g1=b'{"id": "g1", "step_scores": [Infinity, 0.2]}'), [], 2,
     ["id 'g1': step_scores[0] is inf"]),
    ("overflowing-score", _pb_rows(g1=b'{"id": "g1", "step_scores": [0.9, -1e999]}'), [], 2,
     ["id 'g1': step_scores[1] is -inf"]),
    ("empty-scores", _pb_rows(g1={"id": "g1", "step_scores": []}), [], 2, ["id 'g1': step_scores is empty"]),
    ("bool-scores", _pb_rows(g1={"id": "g1", "step_scores": [True, False]}), [], 2,
     ["id 'g1': step_scores[0] is a boolean (true) (1 more bad element(s))"]),
    ("bool-prediction", _pb_rows(g1={"id": "g1", "prediction": True}), [], 2,
     ["id 'g1': prediction true is a boolean, not a step index"]),
    ("float-prediction", _pb_rows(g1={"id": "g1", "prediction": 1.9}), [], 2,
     ["id 'g1': prediction 1.9 is not an integer"]),
    ("null-score", _pb_rows(g1={"id": "g1", "step_scores": [0.9, None]}), [], 2, ["id 'g1': step_scores[1] is null"]),
    ("string-score", _pb_rows(g1={"id": "g1", "step_scores": ["high", 0.2]}), [], 2,
     ["id 'g1': step_scores[0] is a string ('high'), not a number"]),
    ("scores-not-a-list", _pb_rows(g1={"id": "g1", "step_scores": 0.2}), [], 2,
     ["id 'g1': step_scores must be a list of numbers, got a JSON number (0.2)"]),
    ("threshold-nan", _pb_rows(), ["--threshold", "nan"], 2, ["--threshold: expected a finite number, got 'nan'"]),
    ("bootstrap-negative", _pb_rows(), ["--bootstrap", "-5"], 2,
     ["--bootstrap: expected an integer in 0..100,000, got -5"]),
    ("non-object-line", _pb_rows(g1=b'["g1", 1]'), [], 2, ["line 2 is a JSON list, not an object"]),
    ("unknown-id-without-quotes", _pb_rows() + [{"id": "zz", "prediction": 0}], [], 2,
     ["prm-lessons: error: prediction(s) for unknown ProcessBench id(s): zz"]),
    ("every-bad-id-listed", _pb_rows(g0={"id": "g0", "prediction": 99}, g1={"id": "g1", "prediction": "two"},
                                     m1={"id": "m1", "step_scores": [math.nan] * 4}), [], 2,
     ["id 'g0': prediction 99 is past", "id 'g1': prediction 'two' is not an integer",
      "id 'm1': step_scores[0] is NaN (3 more bad element(s))"]),
]


@pytest.mark.parametrize("case, rows, extra, status, fragments", PB_CASES, ids=[c[0] for c in PB_CASES])
def test_processbench_hostile_predictions(tmp_path, pb_data, case, rows, extra, status, fragments):
    pred = write_lines(tmp_path / "p.jsonl", rows)
    out = tmp_path / "m.json"
    code, _, err = run_cli(["eval", "processbench", "--data", str(pb_data), "--predictions", str(pred),
                            "--output", str(out), *extra])
    assert_refused(case, code, err, out, status, fragments)


def test_processbench_valid_predictions_score(tmp_path, pb_data):
    pred = write_lines(tmp_path / "p.jsonl", _pb_rows(g0={"id": "g0", "prediction": -1.0}))  # integral float: -1
    out = tmp_path / "m.json"
    code, _, err = run_cli(["eval", "processbench", "--data", str(pb_data), "--predictions", str(pred),
                            "--output", str(out)])
    assert code == 0, err
    assert json.loads(out.read_text())["average_f1"] == 1.0


def test_processbench_errors_are_capped_at_20_lines(tmp_path):
    cases = pd.DataFrame({"id": [f"c{k}" for k in range(25)], "subset": "math", "label": -1,
                          "steps": [["a"]] * 25})
    data = tmp_path / "cases.parquet"
    cases.to_parquet(data, index=False)
    pred = write_lines(tmp_path / "p.jsonl", [{"id": f"c{k}", "prediction": True} for k in range(25)])
    code, _, err = run_cli(["eval", "processbench", "--data", str(data), "--predictions", str(pred),
                            "--output", str(tmp_path / "m.json")])
    assert code == 2
    lines = error_lines(err)
    assert len(lines) == 21 and lines[-1] == "prm-lessons: error: … and 5 more"
    assert all("is a boolean" in line for line in lines[:20])


def test_processbench_hub_id_without_network_fails_fast(tmp_path, monkeypatch):
    """`--data Qwen/ProcessBench` with the Hub unreachable: one clear line at once, not a ConnectionError
    traceback after datasets' retries (~25 s)."""
    from prm_lessons import cli

    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cli, "_hub_unreachable", lambda: "huggingface.co:443: Name or service not known")

    def no_download(*a, **k):  # "at once": the loader (and datasets' retries) is never reached
        raise AssertionError("the Hub download was attempted")

    monkeypatch.setattr(cli, "load_processbench_cases", no_download)
    monkeypatch.chdir(tmp_path)  # no ./Qwen/ProcessBench directory
    pred = write_lines(tmp_path / "p.jsonl", _pb_rows())
    code, _, err = run_cli(["eval", "processbench", "--data", "Qwen/ProcessBench", "--predictions", str(pred),
                            "--output", str(tmp_path / "m.json")])
    assert code == 2
    assert "--data Qwen/ProcessBench: the Hugging Face Hub cannot be reached (huggingface.co:443" in err


def test_processbench_hub_id_offline_is_one_clear_line(tmp_path):
    """HF_HUB_OFFLINE=1 and an empty cache: the CLI (a real process, so the variable is read at import)
    exits 2 with one line."""
    pred = write_lines(tmp_path / "p.jsonl", _pb_rows())
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-m", "prm_lessons.cli", "eval", "processbench", "--data",
                           "Qwen/ProcessBench", "--predictions", str(pred), "--output", str(tmp_path / "m.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "--data Qwen/ProcessBench: cannot load the Hub dataset: offline (HF_HUB_OFFLINE=1) and not in the " \
           "datasets cache" in proc.stderr


# ========================================================================================= Best-of-N

def _bon_base() -> list[dict]:
    """Two problems × 4 responses. p1: "2" is the majority (wrong), sample 3 ("3", wrong) scores best,
    sample 0 ("4") is the only right one; p2: "5" (right) is the majority, sample 0 (right) scores best."""
    rows = []
    for pid, preds, correct, scores in (
            ("p1", ["4", "2", "2", "3"], [True, False, False, False], [[0.5], [0.4], [0.3], [0.9]]),
            ("p2", ["5", "5", "5", "6"], [True, True, True, False], [[0.9], [0.8], [0.7], [0.1]])):
        for j in range(4):
            rows.append({"benchmark": "arith", "problem_id": pid, "sample_idx": j, "pred": preds[j],
                         "correct": correct[j], "step_scores": scores[j]})
    return rows


def _bon_rows(**changes) -> list:
    """The base rows with some changed: key r<k> (0-based row) → a dict of field updates, None (drop the
    row), or raw bytes (a JSON line); key p1_scores → the step scores of every p1 response."""
    rows = _bon_base()
    if "p1_scores" in changes:
        for r in rows[:4]:
            r["step_scores"] = changes["p1_scores"]
    out = []
    for k, r in enumerate(rows):
        ch = changes.get(f"r{k}", {})
        out.append(ch if isinstance(ch, bytes) else {**r, **ch})
    return out


BON_CASES = [
    ("correct-string-False", _bon_rows(r1={"correct": "False"}), [], 2,  # bool("False") was True: maj 0.5 → 1.0
     ["row 2 (benchmark='arith', problem_id='p1', sample_idx=1): correct is the string 'False'; it must be the "
      "JSON boolean true/false (or 0/1)"]),
    ("correct-string-yes", _bon_rows(r4={"correct": "yes"}), [], 2,
     ["row 5 (benchmark='arith', problem_id='p2', sample_idx=0): correct is the string 'yes'"]),
    ("correct-null", _bon_rows(r0={"correct": None}), [], 2, ["row 1 (", "correct is null (an ungraded response)"]),
    ("correct-2", _bon_rows(r0={"correct": 2}), [], 2, ["row 1 (", "correct is 2; it must be true/false or 0/1"]),
    ("non-object-line", _bon_rows(r2=b'["arith", "p1", 2]'), [], 2, ["line 3 is a JSON list, not an object"]),
    ("string-score", _bon_rows(r1={"step_scores": ["0.9"]}), [], 2,
     ["row 2 (benchmark='arith', problem_id='p1', sample_idx=1): step_scores[0] is a string ('0.9'), not a number"]),
    ("null-in-scores", _bon_rows(r1={"step_scores": [0.5, None]}), [], 2, ["row 2 (", "step_scores[1] is null"]),
    ("bool-scores", _bon_rows(r1={"step_scores": [True]}), [], 2, ["row 2 (", "step_scores[0] is a boolean (true)"]),
    ("scalar-scores", _bon_rows(r1={"step_scores": 0.5}), [], 2,
     ["row 2 (", "step_scores must be a list of numbers, got a JSON number (0.5)"]),
    ("bool-pred", _bon_rows(r1={"pred": False}), [], 2, ["row 2 (", "pred is a boolean (false)"]),
    ("null-problem-id", _bon_rows(r1={"problem_id": None}), [], 2, ["row 2 (", "problem_id is null"]),
    ("negative-sample-idx", _bon_rows(r1={"sample_idx": -1}), [], 2,
     ["row 2 (", "sample_idx -1 is not an integer ≥ 0"]),
    ("every-bad-row-listed", _bon_rows(r0={"correct": "True"}, r5={"correct": "no"}, r7={"step_scores": "high"}), [], 2,
     ["row 1 (", "row 6 (", "row 8 ("]),
    ("n-0", _bon_rows(), ["--n", "0"], 2, ["--n: expected an integer ≥ 1, got 0"]),
    ("bootstrap-negative", _bon_rows(), ["--bootstrap", "-5"], 2,
     ["--bootstrap: expected an integer in 0..100,000, got -5"]),
    ("maj-timeout-0", _bon_rows(), ["--maj-timeout", "0"], 2, ["--maj-timeout: expected a number of seconds > 0"]),
]


@pytest.mark.parametrize("case, rows, extra, status, fragments", BON_CASES, ids=[c[0] for c in BON_CASES])
def test_bon_hostile_rows(tmp_path, case, rows, extra, status, fragments):
    samples = write_lines(tmp_path / "s.jsonl", rows)
    out = tmp_path / "m.json"
    code, _, err = run_cli(["eval", "bon", "--samples", str(samples), "--aggregations", "product,min",
                            "--bootstrap", "10", "--output", str(out), *extra])
    assert_refused(case, code, err, out, status, fragments)


# A problem none of whose responses has a finite score: it counts as WRONG for the selector and is counted
# and listed. Before, prm@N silently took sample 0, the only right response of p1 (prm@N 1.0 instead of 0.5).
BON_UNSCORED_CASES = [
    ("all-nan-scores", _bon_rows(p1_scores=[math.nan])),
    ("all-empty-scores", _bon_rows(p1_scores=[])),
    ("all-null-scores", _bon_rows(p1_scores=None)),
    ("all-infinite-scores", _bon_rows(p1_scores=[math.inf])),
]


@pytest.mark.parametrize("case, rows", BON_UNSCORED_CASES, ids=[c[0] for c in BON_UNSCORED_CASES])
def test_bon_problem_without_finite_scores_counts_wrong_and_is_reported(tmp_path, case, rows):
    samples = write_lines(tmp_path / "s.jsonl", rows)
    out = tmp_path / "m.json"
    code, printed, err = run_cli(["eval", "bon", "--samples", str(samples), "--aggregations", "product,min",
                                  "--bootstrap", "0", "--output", str(out)])
    assert code == 0, err
    m = json.loads(out.read_text())
    assert m["n_unscored"] == {"prm_product": 1, "prm_min": 1}
    assert m["unscored"] == {"arith": {"prm_product": ["p1"], "prm_min": ["p1"]}}
    assert m["benchmarks"]["arith"]["prm_product"] == 0.5 and m["benchmarks"]["arith"]["prm_min"] == 0.5
    assert "prm_product: 1 problem(s) without a finite score on any response, counted wrong: arith/p1" in printed


def test_bon_valid_rows_with_numeric_correct(tmp_path):
    """`correct` as 0/1 (and 1.0) is accepted and equals the booleans' result."""
    base = _bon_rows()
    numeric = [{**r, "correct": (1.0 if k == 0 else int(r["correct"]))} for k, r in enumerate(base)]
    res = []
    for name, rows in (("bool", base), ("num", numeric)):
        out = tmp_path / f"{name}.json"
        code, _, err = run_cli(["eval", "bon", "--samples", str(write_lines(tmp_path / f"{name}.jsonl", rows)),
                                "--bootstrap", "0", "--output", str(out)])
        assert code == 0, err
        res.append(json.loads(out.read_text())["benchmarks"]["arith"])
    assert res[0] == res[1]
    assert (res[0]["pass"], res[0]["maj"], res[0]["prm_product"]) == (1.0, 0.5, 0.5)


def test_bon_math_verify_grouping_is_bounded_on_hostile_answers(tmp_path):
    """SymPy-hostile answers under --maj-grouping math_verify: every comparison runs in a grading worker
    killed after --maj-timeout (the review's 12 rows took 78 s in-process); the timeouts are counted."""
    pytest.importorskip("math_verify")
    rows = [{"benchmark": "x", "problem_id": "p", "sample_idx": j, "pred": a, "correct": j == 2, "step_scores": [0.5]}
            for j, a in enumerate(["9^{9^{9^9}}", "10^{10^{10^{10}}}", "3"])]
    out = tmp_path / "m.json"
    code, printed, err = run_cli(["eval", "bon", "--samples", str(write_lines(tmp_path / "s.jsonl", rows)),
                                  "--maj-grouping", "math_verify", "--maj-timeout", "0.5", "--bootstrap", "0",
                                  "--output", str(out)])
    assert code == 0, err
    mc = json.loads(out.read_text())["maj_comparisons"]
    # each power tower times out once, in its parse (a loaded machine) or in its comparisons (an idle one):
    # at most the 3 pairs are compared, and the two hostile answers are counted as timeouts either way
    assert mc["answers"] == 3 and mc["comparisons"] <= 3 and mc["timeouts"] >= 2
    assert "answer comparisons timed out after 0.5 s" in printed


# ------------------------------------------------------------------ the same checks in the workflow's path

def test_library_functions_raise_the_same_errors():
    """The rules call the library functions, not the CLI: the checks live there (InputError)."""
    from prm_lessons.errors import InputError
    from prm_lessons.grading.rows import grade_rows
    from prm_lessons.metrics.bon import bon_metrics
    from prm_lessons.metrics.processbench import evaluate_processbench, first_error

    with pytest.raises(InputError, match="correct is the string 'False'"):
        bon_metrics(pd.DataFrame(_bon_rows(r2={"correct": "False"})), ["product"], bootstrap=0)
    with pytest.raises(InputError, match=r"row 2: a JSON array, not an object"):
        grade_rows([{"response": "x", "answer": "1"}, ["x", "1"]])
    with pytest.raises(InputError, match="gold answer .* is null"):
        grade_rows([{"response": "\\boxed{None}", "answer": None}])
    cases = PB_CASES_TABLE
    scores = {"g0": [0.9, 0.9], "g1": [0.9, 0.1], "m0": [0.1, 0.9, 0.9], "m1": [0.9] * 4}
    preds = {i: first_error(s) for i, s in scores.items()}
    # the workflow's PRMs may be truncated at their max length: fewer scores than steps are allowed there
    short = {**scores, "m1": [0.9, 0.9]}
    m, _ = evaluate_processbench(cases, {**preds, "m1": -1}, short, 0.5, truncated_ok=True)
    assert m["average_f1"] == 1.0
    with pytest.raises(InputError, match="id 'm1': 2 step score"):
        evaluate_processbench(cases, {**preds, "m1": -1}, short, 0.5)
    for bad, msg in (([0.9, 0.9, 0.9, 0.9, 0.9], "5 step score"), ([0.9, None], r"step_scores\[1\] is null"),
                     ([0.9, math.nan], r"step_scores\[1\] is NaN")):
        with pytest.raises(InputError, match=f"id 'm1': {msg}"):
            evaluate_processbench(cases, preds, {**scores, "m1": bad}, 0.5, truncated_ok=True)
    with pytest.raises(InputError, match="id 'g0': prediction 2 is past the last step"):
        evaluate_processbench(cases, {**preds, "g0": 2}, {}, 0.5)
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        evaluate_processbench(cases, preds, scores, math.nan)


def test_bon_baselines_rule_uses_the_configured_maj_grouping(monkeypatch, tmp_path):
    """Review item 17: bon_baselines.csv's maj@N ignored bon.maj_grouping. With "exact", " 5", "5" and
    "5 " are three answers (a 1-1-1-1 tie: maj picks "3", wrong); "normalized" groups them (" 5", right)."""
    from prm_lessons.rules import sampling as rs

    df = pd.DataFrame({"problem_id": "p", "sample_idx": range(4), "dataset": "arith",
                       "pred": ["3", " 5", "5", "5 "], "correct": [False, True, True, True]})
    evaluations = [["smollm2", "arith", [4]]]  # (policy, benchmark, Ns), parallel to the samples
    monkeypatch.setattr(rs, "read_table", lambda path, kind: df)
    got = {}
    for grouping in ("exact", "normalized"):
        out = tmp_path / f"{grouping}.csv"
        rs.bon_baselines(inputs={"samples": ["arith.parquet"]}, outputs={"table": str(out)},
                         params={"evaluations": evaluations, "maj_grouping": grouping, "run_label": "t"},
                         wildcards={}, threads=1)
        got[grouping] = pd.read_csv(out).set_index("benchmark").loc["arith", "maj"]
    assert got == {"exact": 0.0, "normalized": 1.0}  # fractions, as every stage table
    text = (ROOT / "workflow/rules/sampling.smk").read_text()
    block = text[text.index("rule bon_baselines:"):]
    assert 'maj_grouping=config.get("bon", {}).get("maj_grouping"' in block[:block.index("script:")]


# ================================================================================ property-based fuzz

_TEXT = st.text(alphabet="xyz $", max_size=4)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.integers(2 ** 63, 2 ** 70),
                     st.floats(allow_nan=True, allow_infinity=True), _TEXT)
JUNK = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["a", "id", "pred"]), inner, max_size=2), max_leaves=6)
# examples: the HYPOTHESIS_PROFILE's (tests/conftest.py: dev 25, ci 200) unless FUZZ_EXAMPLES says
FUZZ = settings(**({"max_examples": int(os.environ["FUZZ_EXAMPLES"])} if os.environ.get("FUZZ_EXAMPLES") else {}),
                deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int_like(v) -> bool:
    return _is_num(v) and math.isfinite(v) and float(v).is_integer()


def _fuzz_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# -- grade: the oracle is the documented rule (a gold answer must be a finite number, text with content,
#    or a non-empty list of those; any JSON response is fine: text or not, it is graded or has no answer)

def _gold_ok(g) -> bool:
    if isinstance(g, list):
        return bool(g) and all(not isinstance(x, list) and _scalar_gold_ok(x) for x in g)
    return _scalar_gold_ok(g)


def _scalar_gold_ok(g) -> bool:
    if _is_num(g):
        return math.isfinite(g)
    if isinstance(g, str):
        return bool(g.strip().replace("$", "").strip())
    return False


@FUZZ
@given(data=st.data())
def test_fuzz_grade(tmp_path_factory, monkeypatch, data):
    from prm_lessons.grading import pool as grading

    # the fuzz is about the rows, not math-verify: comparisons that need a worker are settled at once
    monkeypatch.setattr(grading.GradingPool, "run", lambda self, jobs, timeout_s, progress_every=0: {
        j[0]: grading.GradeResult(None, False, "error") for j in jobs})
    rows, valid = [], True
    for k in range(data.draw(st.integers(1, 4))):
        row = {"id": k, "response": data.draw(st.one_of(st.sampled_from(["\\boxed{3}", "no idea"]), JUNK)),
               "answer": data.draw(st.one_of(st.sampled_from(["3", 3, ["3"], "\\frac{1}{2}"]), JUNK))}
        kind = data.draw(st.sampled_from(["keep", "keep", "drop-answer", "drop-response", "junk-row"]))
        if kind == "junk-row":
            row = data.draw(JUNK.filter(lambda v: not isinstance(v, dict)))
        elif kind != "keep":
            row.pop(kind.removeprefix("drop-"))
        valid = valid and isinstance(row, dict) and "response" in row and "answer" in row and _gold_ok(row["answer"])
        rows.append(row)
    d = _fuzz_dir(tmp_path_factory)
    out = d / "out.jsonl"
    code, _, err = run_cli(["grade", "--input", str(write_lines(d / "in.jsonl", rows)), "--output", str(out)])
    event(f"valid={valid} status={code}")
    assert "Traceback" not in err
    if valid:
        assert code == 0, err
        got = strict_json_lines(out.read_text())  # standard JSON: no NaN
        assert len(got) == len(rows) and all("correct" in r for r in got)
    else:
        assert code == 2 and error_lines(err) and not out.exists(), err


# -- eval processbench: a row is valid when it is {"id": its case, "prediction": null or an integer in
#    [-1, n_steps - 1]} or {"id", "step_scores": n_steps finite numbers}; every case exactly once

def _pb_row_ok(r, i) -> bool:
    if not isinstance(r, dict) or r.get("id") != i or ("prediction" in r) == ("step_scores" in r):
        return False
    if "prediction" in r:
        p = r["prediction"]
        return p is None or (_int_like(p) and -1 <= p <= N_STEPS[i] - 1)
    s = r["step_scores"]
    return (isinstance(s, list) and len(s) == N_STEPS[i]
            and all(_is_num(x) and math.isfinite(float(x)) for x in s))


@FUZZ
@given(data=st.data())
def test_fuzz_processbench(tmp_path_factory, pb_data, data):
    rows, valid = [], True
    for i, base in PB_VALID.items():
        kind = data.draw(st.sampled_from(["keep"] * 6 + ["prediction", "scores", "score-elements", "drop-id",
                                                         "junk-row", "both"]))
        row = dict(base)
        if kind == "prediction":
            row = {"id": i, "prediction": data.draw(st.one_of(JUNK, st.integers(-2, 5)))}
        elif kind == "scores":
            row = {"id": i, "step_scores": data.draw(st.one_of(JUNK, st.lists(
                st.floats(-5, 5), min_size=N_STEPS[i], max_size=N_STEPS[i])))}
        elif kind == "score-elements":
            row = {"id": i, "step_scores": data.draw(st.lists(st.one_of(st.floats(0, 1), JUNK), min_size=0,
                                                              max_size=5))}
        elif kind == "drop-id":
            row.pop("id")
        elif kind == "junk-row":
            row = data.draw(JUNK.filter(lambda v: not isinstance(v, dict)))
        elif kind == "both":
            row = {"id": i, "prediction": -1, "step_scores": [0.9] * N_STEPS[i]}
        valid = valid and _pb_row_ok(row, i)
        rows.append(row)
    if data.draw(st.booleans()):  # sometimes a duplicate row
        rows.append(dict(PB_VALID["g0"]))
        valid = False
    d = _fuzz_dir(tmp_path_factory)
    out = d / "m.json"
    code, _, err = run_cli(["eval", "processbench", "--data", str(pb_data), "--predictions",
                            str(write_lines(d / "p.jsonl", rows)), "--output", str(out)])
    event(f"valid={valid} status={code}")
    assert "Traceback" not in err
    if valid:
        assert code == 0, err
        assert 0.0 <= json.loads(out.read_text())["average_f1"] <= 1.0
    else:
        assert code == 2 and error_lines(err) and not out.exists(), err


# -- eval bon: field by field, the documented rules (check_bon_rows); a changed but well-typed problem id,
#    benchmark or sample index may still make the file invalid (a duplicate, unequal N): either outcome,
#    but never a number from a row that breaks a rule

def _bon_field_ok(field, v) -> bool:
    if field in ("benchmark", "problem_id"):
        return (isinstance(v, str) and bool(v.strip())) or _int_like(v)
    if field == "sample_idx":
        return _int_like(v) and v >= 0
    if field == "pred":
        return v is None or isinstance(v, str) or (_is_num(v) and (math.isnan(v) or math.isfinite(v)))
    if field == "correct":
        return isinstance(v, bool) or (_is_num(v) and v in (0, 1))
    if field == "step_scores":
        return (v is None or (isinstance(v, float) and math.isnan(v))
                or (isinstance(v, list) and all(_is_num(x) for x in v)))
    raise AssertionError(field)


BON_VALID = {  # well-typed values of each field (the fuzz draws these or junk)
    "benchmark": st.sampled_from(["arith", "other", 7]), "problem_id": st.sampled_from(["p1", "p2", "p3", 3]),
    "sample_idx": st.integers(0, 5), "pred": st.one_of(st.none(), _TEXT, st.integers(0, 9), st.just(math.nan)),
    "correct": st.sampled_from([True, False, 0, 1, 1.0, 0.0]),
    "step_scores": st.one_of(st.none(), st.lists(st.floats(), max_size=3))}


@FUZZ
@given(data=st.data())
def test_fuzz_bon(tmp_path_factory, data):
    rows = _bon_base()
    valid, structural = True, False
    for k in data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=3, unique=True)):
        kind = data.draw(st.sampled_from(["benchmark", "problem_id", "sample_idx", "pred", "correct", "correct",
                                          "step_scores", "step_scores", "drop", "junk-row"]))
        if kind == "junk-row":
            rows[k] = data.draw(JUNK.filter(lambda v: not isinstance(v, dict)))
            valid = False
        elif kind == "drop":
            rows[k].pop(data.draw(st.sampled_from(sorted(rows[k]))))
            valid = False
        elif isinstance(rows[k], dict):
            v = data.draw(st.one_of(JUNK, BON_VALID[kind]))
            rows[k][kind] = v
            ok = _bon_field_ok(kind, v)
            valid = valid and ok
            structural = structural or (ok and kind in ("benchmark", "problem_id", "sample_idx"))
    d = _fuzz_dir(tmp_path_factory)
    out = d / "m.json"
    code, _, err = run_cli(["eval", "bon", "--samples", str(write_lines(d / "s.jsonl", rows)),
                            "--aggregations", "product,min,last", "--bootstrap", "5", "--output", str(out)])
    event(f"valid={valid} structural={structural} status={code}")
    assert "Traceback" not in err and code in (0, 2)
    if not valid:
        assert code == 2 and error_lines(err) and not out.exists(), err
    elif not structural:
        assert code == 0, err
    if code == 0:
        m = json.loads(out.read_text())
        for e in m["benchmarks"].values():
            assert all(0.0 <= e[k] <= 1.0 for k in ("pass", "maj", "prm_product", "prm_min", "prm_last"))
