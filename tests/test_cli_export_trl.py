"""`prm-lessons export-trl`: a training set out in TRL's stepwise-supervision format, read back by a
`source: trl` variant's rule to the same (question, steps, labels); soft labels need a threshold."""
import json

import pandas as pd

from prm_lessons import cli
from prm_lessons.rules.labels import trl_labels
from prm_lessons.tables import read_table, write_table

SPEC = {"source": "local", "config": None, "split": "train", "limit": None, "malformed": "error",
        "deduplicate": False}


def test_export_then_import_round_trips(tmp_path, capsys):
    df = pd.DataFrame({"instance_id": ["p#0", "p#1", "q#0"], "question": ["Q one?", "Q one?", "Q two?"],
                       "steps": [["a.", "b."], ["a.", "c."], ["d."]],
                       "labels": [[1.0, 1.0], [1.0, 0.0], [0.0]], "source": ["mc"] * 3})
    write_table(df, tmp_path / "mc_hard.parquet", "trainset")
    out = tmp_path / "out" / "mc_hard.jsonl"
    assert cli.main(["export-trl", "--trainset", str(tmp_path / "mc_hard.parquet"), "--output", str(out)]) == 0
    assert "exported 3 instances (5 steps, 3 positive)" in capsys.readouterr().out
    assert json.loads(out.read_text().splitlines()[1]) == {"prompt": "Q one?", "completions": ["a.", "c."],
                                                           "labels": [True, False]}
    labels = tmp_path / "back.parquet"
    trl_labels(inputs={"eval_sets": []}, outputs={"table": str(labels)},
               params={"variant": "back", "trl": {**SPEC, "path": str(out)}}, wildcards={}, threads=1)
    ts = read_table(labels, "trainset")
    assert [(q, list(s), list(lab)) for q, s, lab in zip(ts["question"], ts["steps"], ts["labels"])] == \
        [(q, list(s), list(lab)) for q, s, lab in zip(df["question"], df["steps"], df["labels"])]


def test_export_of_soft_labels_names_the_instance(tmp_path, capsys):
    df = pd.DataFrame({"instance_id": ["p#0"], "question": ["Q?"], "steps": [["a.", "b."]], "labels": [[1.0, 0.375]]})
    write_table(df, tmp_path / "mc_soft.parquet", "trainset")
    args = ["export-trl", "--trainset", str(tmp_path / "mc_soft.parquet"), "--output", str(tmp_path / "s.jsonl")]
    assert cli.main(args) == 2
    assert "instance p#0: soft label 0.375" in capsys.readouterr().err and not (tmp_path / "s.jsonl").exists()
    assert cli.main(args + ["--soft-threshold", "0.5"]) == 0
    assert json.loads((tmp_path / "s.jsonl").read_text())["labels"] == [True, False]
