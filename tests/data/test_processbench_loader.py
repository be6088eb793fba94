"""ProcessBench loaders and the constructed ProcessBench set (prm_lessons.data.processbench), and the
processbench rule: the paper's copy, held-out constructed cases."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import FIXTURES, shared_data_dir
from prm_lessons.data.problems import load_problems
from prm_lessons.data.processbench import build_constructed_processbench, load_processbench
from prm_lessons.labels.construction import final_answer_text
from prm_lessons.rules.data import processbench as rule_processbench
from prm_lessons.tables import read_table
from specs import ARITH, CHAIN, paper_config

FIX = FIXTURES / "data"


# -------------------------------------------------------------------------------------- ProcessBench

def test_processbench_local_directory():
    df = load_processbench({"source": "local", "path": str(FIX / "processbench"), "subsets": ["gsm8k", "math"]})
    assert list(df.columns) == ["id", "subset", "generator", "problem", "steps", "final_answer_correct", "label"]
    assert list(df["subset"]) == ["gsm8k", "gsm8k", "math"]
    assert list(df["label"]) == [1, -1, -1]
    with pytest.raises(FileNotFoundError, match="olympiadbench"):
        load_processbench({"source": "local", "path": str(FIX / "processbench")})


def test_processbench_empty_steps_names_the_case():
    with pytest.raises(ValueError, match="case math-9: empty steps"):
        load_processbench({"source": "local", "path": str(FIX / "processbench_bad"), "subsets": ["math"]})


def test_official_processbench_counts():
    df = load_processbench({"source": "local", "path": str(shared_data_dir("processbench"))})
    assert len(df) == 3400
    assert df["subset"].value_counts().to_dict() == {"gsm8k": 400, "math": 1000, "olympiadbench": 1000,
                                                     "omnimath": 1000}
    err = df["label"] != -1
    assert err.groupby(df["subset"]).sum().to_dict() == {"gsm8k": 207, "math": 594, "olympiadbench": 661,
                                                         "omnimath": 759}
    # Table 5 of the paper: correct final answer, erroneous process
    t5 = (err & df["final_answer_correct"]).groupby(df["subset"]).sum().to_dict()
    assert t5 == {"gsm8k": 7, "math": 94, "olympiadbench": 161, "omnimath": 259}


def test_constructed_processbench_format_and_labels():
    problems = pd.concat([load_problems("arith", ARITH), load_problems("chain", CHAIN)], ignore_index=True)
    cases = build_constructed_processbench(problems, n_per_subset=10, seed=0)
    assert cases["subset"].value_counts().to_dict() == {"arith": 10, "chain": 10}
    assert cases["id"].is_unique
    for row in cases.itertuples():
        gold = problems.set_index("problem_id").loc[row.problem_id]
        if row.label == -1:
            assert list(row.steps) == list(gold.gold_steps) and row.final_answer_correct
        else:
            assert list(row.steps[:row.label]) == list(gold.gold_steps[:row.label])
            assert row.steps[row.label] != gold.gold_steps[row.label]
            same = final_answer_text(row.steps) == gold.answer
            assert row.final_answer_correct == same
    per = cases.groupby("subset")
    assert (per["label"].apply(lambda s: (s != -1).sum()) == 5).all()          # half erroneous
    assert (cases["final_answer_correct"] & (cases["label"] != -1)).sum() >= 2  # some keep the answer
    again = build_constructed_processbench(problems, n_per_subset=10, seed=0)
    pd.testing.assert_frame_equal(cases, again)


def test_rule_processbench_constructed_is_held_out(tmp_path):
    spec = {"source": "constructed",
            "constructed": {"n_per_subset": 6, "seed": 1, "subsets": {"arith": ARITH}}}
    out = tmp_path / "cases.parquet"
    # the training problems are the very same generator and seed: every case must be dropped
    with pytest.raises(ValueError, match="no problems with gold steps|no problems"):
        rule_processbench(inputs={}, outputs={"cases": str(out)}, params={"spec": spec, "exclude": {"train": ARITH}},
                          wildcards={}, threads=1)
    rule_processbench(inputs={}, outputs={"cases": str(out)}, params={"spec": spec, "exclude": {}},
                      wildcards={}, threads=1)
    df = read_table(out, "processbench")
    assert len(df) == 6 and set(df["subset"]) == {"arith"}


# ------------------------------------------------- the paper's benchmark sets (config/paper.yaml, issue 11 B)


def test_paper_processbench_is_the_paper_era_github_copy(tmp_path):
    from prm_lessons.data.processbench import processbench_paths
    from prm_lessons.rules.data import processbench_file as rule_processbench_file

    spec = paper_config()["processbench"]
    assert spec["source"] == "url" and "2f2fd8ae590aeb949f7be265478b05280f93db68" in spec["url"]
    assert spec["rows"] == {"gsm8k": 400, "math": 1000, "olympiadbench": 1000, "omnimath": 1000}
    assert processbench_paths(spec)["math"] == "resources/data/processbench/math.json"
    local = {**spec, "url": str(shared_data_dir("processbench")) + "/{subset}.json"}
    files = {}
    for subset in spec["subsets"]:
        files[subset] = str(tmp_path / f"{subset}.json")
        rule_processbench_file(inputs={}, outputs={"file": files[subset]}, params={"spec": local},
                               wildcards={"subset": subset}, threads=1)
    cases = load_processbench(local, files=files)
    assert cases["subset"].value_counts().to_dict() == spec["rows"]
    # a changed label in one subset: the checksum names that subset
    math = json.loads(open(files["math"]).read())
    math[0]["label"] = -1 if math[0]["label"] != -1 else 0
    (tmp_path / "math.json").write_text(json.dumps(math))
    with pytest.raises(ValueError, match=r"ProcessBench subset 'math': sha256"):
        load_processbench(local, files=files)
    with pytest.raises(ValueError, match=r"ProcessBench subset 'gsm8k': 400 rows, expected 399"):
        load_processbench({**local, "rows": {"gsm8k": 399}, "subsets": ["gsm8k"]}, files=files)
