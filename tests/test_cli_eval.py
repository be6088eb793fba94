"""The eval CLIs (`prm-lessons eval bon`, `eval processbench`; prm_lessons.cli) on small inputs; hostile
input to every CLI: test_cli.py."""
from __future__ import annotations

import json

import pytest

from metric_inputs import bon_rows, six_pb_cases

# ------------------------------------------------------------------------------------------- CLIs

def _run(argv):
    """The subcommand's function itself (cli.main would turn its errors into exit status 2)."""
    from prm_lessons.cli import build_parser

    args = build_parser().parse_args(argv)
    return args.func(args)


def test_cli_processbench(tmp_path):
    data = tmp_path / "pb"
    data.mkdir()
    for subset, g in six_pb_cases().groupby("subset"):
        recs = [{"id": r.id, "generator": "x", "problem": "p", "steps": ["a", "b", "c"],
                 "final_answer_correct": r.label == -1, "label": int(r.label)} for r in g.itertuples()]
        (data / f"{subset}.json").write_text(json.dumps(recs))
    pred = tmp_path / "p.jsonl"
    pred.write_text("\n".join(json.dumps(r) for r in [
        {"id": "g0", "prediction": -1}, {"id": "g1", "step_scores": [0.9, 0.2, 0.1]}, {"id": "g2", "prediction": 0},
        {"id": "g3", "step_scores": [0.9, 0.9, 0.9]}, {"id": "m0", "prediction": 2}, {"id": "m1", "prediction": -1}]))
    out = tmp_path / "m.json"
    _run(["eval", "processbench", "--data", str(data), "--predictions", str(pred), "--output", str(out)])
    m = json.loads(out.read_text())
    assert m["average_f1"] == 1.0 and set(m["subsets"]) == {"gsm8k", "math"}
    assert set(m["subsets"]["gsm8k"]) >= {"n", "error_acc", "correct_acc", "f1"}
    pred.write_text(pred.read_text() + "\n" + json.dumps({"id": "nope-7", "prediction": 1}))
    with pytest.raises(KeyError, match="nope-7"):
        _run(["eval", "processbench", "--data", str(data), "--predictions", str(pred), "--output", str(out)])


def test_cli_bon(tmp_path):
    rows = (bon_rows("a", "p1", ["1", "2"], [False, True], [[0.2, 0.9], [0.8]])
            + bon_rows("b", "q1", ["3", "3"], [True, True], [[0.5], [0.5]]))
    s = tmp_path / "s.jsonl"
    s.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "m.json"
    _run(["eval", "bon", "--samples", str(s), "--aggregations", "product,min,last", "--output", str(out)])
    m = json.loads(out.read_text())
    assert set(m["benchmarks"]["a"]) >= {"n_problems", "pass", "maj", "prm_product", "prm_min", "prm_last"}
    assert m["benchmarks"]["a"]["prm_product"] == 1.0 and m["average"]["pass"] == 1.0
    s.write_text(json.dumps({"benchmark": "a", "problem_id": "p1", "sample_idx": 0}))
    with pytest.raises(ValueError, match="p1.*lacks field"):
        _run(["eval", "bon", "--samples", str(s), "--output", str(out)])
