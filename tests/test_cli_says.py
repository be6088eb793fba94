"""CLIs that say what they did (issue 43, item 2): `eval processbench --tune-on` implies tuning and flags that
would do nothing are errors; bootstrap intervals are printed; a subset without clean or without erroneous
cases has an undefined F1 (null in the JSON, a warning on stderr) and tuning on such cases warns;
`score` checks TRL rows' labels as the workflow's `trl_labels` does."""
from __future__ import annotations

import contextlib
import io
import json
import math

import pytest

from metric_inputs import bon_rows


def _nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _main(argv):
    """cli.main's exit status, stdout and stderr."""
    from prm_lessons.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


# cases: (id, subset, label); scores: one list per case (3 steps)
MIXED = [("g0", "gsm8k", -1, [0.9, 0.8, 0.7]), ("g1", "gsm8k", 1, [0.9, 0.2, 0.1]),
         ("g2", "gsm8k", 0, [0.3, 0.9, 0.9]), ("g3", "gsm8k", -1, [0.9, 0.9, 0.6]),
         ("g4", "gsm8k", 2, [0.8, 0.7, 0.4]), ("g5", "gsm8k", -1, [0.95, 0.9, 0.9]),
         ("m0", "math", 2, [0.9, 0.9, 0.2]), ("m1", "math", -1, [0.9, 0.7, 0.9]),
         ("m2", "math", 0, [0.1, 0.9, 0.9]), ("m3", "math", -1, [0.8, 0.8, 0.8])]
# every GSM8K case erroneous (the first 20 ProcessBench GSM8K cases are)
NO_CLEAN = [("g0", "gsm8k", 1, [0.9, 0.2, 0.1]), ("g1", "gsm8k", 0, [0.3, 0.9, 0.9]),
            ("g2", "gsm8k", 2, [0.8, 0.7, 0.4]), ("m0", "math", 2, [0.9, 0.9, 0.2]),
            ("m1", "math", -1, [0.9, 0.7, 0.9])]


def _write(tmp_path, cases, name="pb"):
    d = tmp_path / name
    d.mkdir()
    by_subset: dict = {}
    for i, sub, label, _ in cases:
        by_subset.setdefault(sub, []).append({"id": i, "generator": "x", "problem": "p", "steps": ["a", "b", "c"],
                                              "final_answer_correct": label == -1, "label": label})
    for sub, recs in by_subset.items():
        (d / f"{sub}.json").write_text(json.dumps(recs))
    pred = tmp_path / f"{name}.jsonl"
    pred.write_text("\n".join(json.dumps({"id": i, "step_scores": s}) for i, _, _, s in cases))
    return str(d), str(pred)


def _pb(tmp_path, cases, *extra, name="pb"):
    data, pred = _write(tmp_path, cases, name)
    out = tmp_path / f"{name}.json"
    rc, stdout, stderr = _main(["eval", "processbench", "--data", data, "--predictions", pred,
                                "--output", str(out), *extra])
    return rc, stdout, stderr, (json.loads(out.read_text()) if rc == 0 else None)


# -------------------------------------------------------------------------------- a. --tune-on, dev flags

def test_tune_on_alone_tunes(tmp_path):
    rc, stdout, _, m = _pb(tmp_path, MIXED, "--tune-on", "gsm8k")
    assert rc == 0 and m["tuned_on"] == "gsm8k" and m["threshold"] != 0.5
    assert "threshold" in stdout and "GSM8K" in stdout
    rc, _, _, m = _pb(tmp_path, MIXED, "--tune-on", "crossfit", name="again")
    assert rc == 0 and m["tuned_on"] == "crossfit"


def test_fixed_threshold_is_still_the_default(tmp_path):
    rc, stdout, _, m = _pb(tmp_path, MIXED)
    assert rc == 0 and m["tuned_on"] is None and m["threshold"] == 0.5 and m["threshold_policy"] == "fixed"


@pytest.mark.parametrize("extra, says", [
    (["--threshold", "0.3", "--tune-on", "gsm8k"], "--threshold 0.3 and --tune-on gsm8k: give a fixed threshold"),
    (["--threshold", "0.3", "--tune-threshold"], "--threshold 0.3 and --tune-threshold"),
    (["--dev-data", "DEV"], "--dev-data is read only when tuning"),
    (["--dev-predictions", "DEVP"], "--dev-predictions is read only when tuning"),
    (["--threshold", "0.4", "--dev-data", "DEV", "--dev-predictions", "DEVP"], "--dev-data is read only when"),
    (["--tune-on", "crossfit", "--dev-data", "DEV", "--dev-predictions", "DEVP"],
     "--dev-data: --tune-on crossfit does not read a dev split"),
])
def test_flags_that_would_do_nothing_are_errors(tmp_path, extra, says):
    dev, devp = _write(tmp_path, [("d0", "gsm8k", -1, [0.9, 0.9, 0.9])], "dev")
    extra = [dev if a == "DEV" else devp if a == "DEVP" else a for a in extra]
    rc, stdout, stderr, _ = _pb(tmp_path, MIXED, *extra)
    assert rc == 2 and says in stderr and not stdout


# -------------------------------------------------------------------------------- b. intervals printed

def test_processbench_prints_the_bootstrap_interval(tmp_path):
    rc, stdout, _, m = _pb(tmp_path, MIXED, "--bootstrap", "200")
    lo, hi = m["average_f1_ci"]
    assert f"average F1: {100 * m['average_f1']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]" in stdout
    glo, ghi = m["subsets"]["gsm8k"]["ci"]["f1"]
    assert f"[{100 * glo:.1f}, {100 * ghi:.1f}]" in stdout.splitlines()[0]
    assert "95% bootstrap interval" in stdout and "200 resamples" in stdout
    rc, stdout, _, _ = _pb(tmp_path, MIXED, name="again")
    assert "[" not in stdout


def test_bon_prints_the_bootstrap_interval(tmp_path):
    rows = (bon_rows("a", "p1", ["1", "2"], [False, True], [[0.2, 0.9], [0.8]])
            + bon_rows("a", "p2", ["1", "1"], [True, True], [[0.9], [0.1]])
            + bon_rows("b", "q1", ["3", "4"], [True, False], [[0.5], [0.6]]))
    s = tmp_path / "s.jsonl"
    s.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "m.json"
    rc, stdout, _ = _main(["eval", "bon", "--samples", str(s), "--bootstrap", "100", "--output", str(out)])
    m = json.loads(out.read_text())
    assert rc == 0
    lo, hi = m["average"]["ci"]["prm_product"]
    avg = [line for line in stdout.splitlines() if line.strip().startswith("average:")][0]
    assert f"prm_product={100 * m['average']['prm_product']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]" in avg
    assert "95% bootstrap interval" in stdout
    rc, stdout, _ = _main(["eval", "bon", "--samples", str(s), "--bootstrap", "0", "--output", str(out)])
    assert rc == 0 and "[" not in stdout


# -------------------------------------------------------------------------------- c. undefined F1

def test_subset_without_clean_cases_has_an_undefined_f1(tmp_path):
    rc, stdout, stderr, m = _pb(tmp_path, NO_CLEAN, "--bootstrap", "50")
    assert rc == 0
    g = m["subsets"]["gsm8k"]
    # NaN, as the metrics JSON writes every undefined number (tables.write_json), never 0.0
    assert _nan(g["f1"]) and _nan(g["correct_acc"]) and all(map(_nan, g["ci"]["f1"]))
    assert g["f1_undefined"] == "no clean cases"
    assert _nan(m["average_f1"]) and all(map(_nan, m["average_f1_ci"]))
    assert not _nan(m["subsets"]["math"]["f1"])  # the other subset is reported as usual
    gline = [line for line in stdout.splitlines() if line.strip().startswith("gsm8k")][0]
    assert "F1 undefined (no clean cases)" in gline
    assert "average F1: undefined" in stdout
    assert "warning" in stderr and "gsm8k" in stderr and "no clean cases" in stderr


def test_subset_without_erroneous_cases_has_an_undefined_f1(tmp_path):
    cases = [c for c in MIXED if c[1] == "gsm8k"] + [("m1", "math", -1, [0.9, 0.7, 0.9])]
    rc, stdout, stderr, m = _pb(tmp_path, cases)
    assert rc == 0 and _nan(m["subsets"]["math"]["f1"]) and not _nan(m["subsets"]["gsm8k"]["f1"])
    assert "F1 undefined (no erroneous cases)" in stdout and "no erroneous cases" in stderr


def test_tuning_on_a_subset_without_clean_cases_warns(tmp_path):
    rc, stdout, stderr, m = _pb(tmp_path, NO_CLEAN, "--tune-on", "gsm8k")
    assert rc == 0
    assert "threshold tuning" in stderr and "arbitrary" in stderr and "gsm8k" in stderr


def test_normal_subsets_are_unchanged(tmp_path):
    """Subsets with both kinds of case: the metrics the library gives, no warning."""
    import pandas as pd

    from prm_lessons.metrics.processbench import evaluate_processbench, first_error

    rc, _, stderr, m = _pb(tmp_path, MIXED, "--bootstrap", "100")
    cases = pd.DataFrame([{"id": i, "subset": s, "label": la} for i, s, la, _ in MIXED])
    scores = {i: sc for i, _, _, sc in MIXED}
    lib, _ = evaluate_processbench(cases, {i: first_error(s, 0.5) for i, s in scores.items()}, scores, 0.5,
                                   bootstrap=100)
    assert rc == 0 and not stderr
    assert m["average_f1"] == lib["average_f1"] and m["average_f1_ci"] == lib["average_f1_ci"]
    assert {k: v["f1"] for k, v in m["subsets"].items()} == {k: v["f1"] for k, v in lib["subsets"].items()}
    assert all("f1_undefined" not in v for v in m["subsets"].values())


# -------------------------------------------------------------------------------- d. score checks TRL labels

def test_score_checks_trl_labels_as_trl_labels_does(tmp_path):
    """Rows whose labels would be passed through misaligned: refused before any model is loaded, each
    named, with the reasons of labels.stepwise (the checker of rule trl_labels)."""
    from prm_lessons.labels.stepwise import MALFORMED_REASONS

    rows = [{"prompt": "p", "completions": ["a", "b"], "labels": [True, True]},   # fine
            {"prompt": "p", "completions": ["a", "b"]},                            # no labels: scored only
            {"id": "short", "prompt": "p", "completions": ["a", "b"], "labels": [True]},
            {"id": "text", "prompt": "p", "completions": ["a"], "labels": ["true"]}]
    f = tmp_path / "trl.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows))
    rc, stdout, stderr = _main(["score", "--prm", str(tmp_path / "no_prm_needed"), "--input", str(f),
                                "--output", str(tmp_path / "o.jsonl")])
    assert rc == 2 and not stdout and not (tmp_path / "o.jsonl").exists()
    lines = stderr.splitlines()
    assert len(lines) == 2, stderr
    assert "row 3 (id='short')" in lines[0] and MALFORMED_REASONS["length_mismatch"] in lines[0]
    assert "1 labels, 2 completions" in lines[0]
    assert "row 4 (id='text')" in lines[1] and MALFORMED_REASONS["label_not_bool"] in lines[1]


def test_score_parse_rows_accepts_good_trl_rows():
    from prm_lessons.scoring.score_file import parse_rows

    assert parse_rows([{"prompt": "p", "completions": ["a", "b"], "labels": [True, False]},
                       {"prompt": "q", "completions": ["c"]}]) == [("p", ["a", "b"]), ("q", ["c"])]
