"""The labelling judge scored on the constructed ProcessBench (prm_lessons.metrics.judge_processbench): the case
slice, the paired difference to the structure baseline, the lesson-2 verdict for both outcomes, and rules
judge_processbench / judge_processbench_table chained on a real constructed set (engine replaced)."""
import json

import pandas as pd
import pytest

import prm_lessons.generation.engine as generation
from fakes import FakeTokenizer
from prm_lessons.data.processbench import constructed_processbench
from prm_lessons.generation.engine import Completion, Engine
from prm_lessons.metrics import judge_processbench as jp
from prm_lessons.rules.labels import judge_processbench as rule_judge_pb
from prm_lessons.rules.labels import judge_processbench_table as rule_table
from prm_lessons.tables import read_csv, read_table, write_table


def cases(n_per_subset=10, subsets=("a", "b")):
    rows = []
    for s in subsets:
        for k in range(n_per_subset):
            label = -1 if k % 2 else k % 3
            rows.append({"id": f"{s}-{k}", "subset": s, "generator": "constructed", "problem": f"q {s} {k}",
                         "steps": ["x", "y", "z"], "final_answer_correct": label == -1, "label": label,
                         "problem_id": f"processbench-{s}-{k:05d}"})
    return pd.DataFrame(rows)


def test_case_slice_is_stratified_and_independent_of_row_order():
    c = cases(10)
    sl = jp.case_slice(c, 8)
    assert sl.groupby("subset").size().to_dict() == {"a": 4, "b": 4}
    assert sl.groupby(["subset", sl["label"] == -1]).size().tolist() == [2, 2, 2, 2]
    shuffled = jp.case_slice(c.sample(frac=1, random_state=3), 8)
    assert set(shuffled["id"]) == set(sl["id"])
    assert sl["id"].tolist() == [i for i in c["id"] if i in set(sl["id"])]  # the cases' order
    assert jp.case_slice(c, 7).groupby("subset").size().to_dict() == {"a": 4, "b": 3}  # remainder to the first
    assert len(jp.case_slice(c, 100)) == 20  # more than there are: all of them
    few_errors = c[(c["label"] == -1) | c["id"].isin(["a-0", "b-0"])]
    got = jp.case_slice(few_errors, 8)  # one error per subset: the rest of the share from correct cases
    assert len(got) == 8 and int((got["label"] != -1).sum()) == 2
    with pytest.raises(ValueError, match="judge.processbench_cases"):
        jp.case_slice(c, 0)


def test_case_golds_names_cases_whose_problem_is_unknown():
    c = cases(2)
    golds = pd.DataFrame({"problem_id": ["processbench-a-00000", "processbench-a-00001"], "answer": ["1", "2"],
                          "gold_steps": [["g"], None]})
    assert jp.case_golds(c.iloc[:2], golds) == [(["g"], "1"), (None, "2")]
    with pytest.raises(ValueError, match="b-0, b-1"):
        jp.case_golds(c, golds)
    with pytest.raises(ValueError, match="problem_id"):
        jp.case_golds(c.drop(columns=["problem_id"]), golds)


def _judged(c, preds, tokens=10):
    return pd.DataFrame({"id": c["id"], "subset": c["subset"], "label": c["label"],
                         "prediction": pd.array(preds, dtype="Int64"), "tokens_generated": tokens})


def test_setting_rows_pair_the_judge_with_the_structure_baseline():
    c = cases(20)
    structure = {i: -1 for i in c["id"]}  # "no error" everywhere: F1 0
    perfect, m = jp.setting_rows(c, _judged(c, c["label"].tolist()), structure, "judge_reference", configured=False,
                                 setting="s", bootstrap=200, seed=0, confidence=0.95)
    avg = next(r for r in perfect if r["subset"] == "average")
    assert list(avg) == jp.COLUMNS
    assert avg["f1"] == 1.0 and avg["delta_f1_structure"] == 1.0 and avg["delta_ci_low"] > 0
    assert avg["reference"] == "true" and avg["configured"] == "false" and avg["tokens_generated"] == 400
    assert [r["tokens_generated"] for r in perfect if r["subset"] != "average"] == [200, 200]
    assert m["vs_structure"]["f1_b"] == 0.0
    # a judge that says what the baseline says: difference 0, interval not above 0
    same, _ = jp.setting_rows(c, _judged(c, [-1] * len(c)), structure, "judge", configured=True, setting="s",
                              bootstrap=200, seed=0, confidence=0.95)
    avg = next(r for r in same if r["subset"] == "average")
    assert avg["delta_f1_structure"] == 0.0 and not avg["delta_ci_low"] > 0 and avg["configured"] == "true"
    with pytest.raises(ValueError, match="structure baseline has no prediction for case"):
        jp.setting_rows(c, _judged(c, [-1] * len(c)), {}, "judge", configured=True, setting="s", bootstrap=0,
                        seed=0, confidence=0.95)


def _table(deltas):
    """Hand-built `average` rows: judge -> (delta, low, high)."""
    return pd.DataFrame([{"judge": j, "subset": "average", "n": 50, "f1": 0.3, "delta_f1_structure": d,
                          "delta_ci_low": lo, "delta_ci_high": hi} for j, (d, lo, hi) in deltas.items()]
                        + [{"judge": "judge", "subset": "a", "n": 25, "f1": 0.9, "delta_f1_structure": None,
                            "delta_ci_low": None, "delta_ci_high": None}])


def test_verdict_undecidable_when_no_judge_beats_structure():
    v = jp.lesson2_verdict(_table({"judge": (-0.12, -0.3, 0.05), "judge_reference": (0.08, -0.02, 0.2)}),
                           model="smollm2")
    assert v["verdict"] == "undecidable" and v["best"] == "judge_reference"
    t = v["text"]
    assert t.startswith("Lesson 2 (LLM-as-a-judge labels vs MC labels) is undecidable at this size")
    assert "smollm2" in t and "even with the gold solution in its prompt" in t
    assert "judge_reference: F1 0.300, ΔF1 vs structure +0.080 [-0.020, +0.200] (n=50)" in t
    assert "Qwen2.5-72B-Instruct" in t and "61.2 as a critic, the paper's Table 7)" in t
    # without a reference-guided row the text does not claim one was tried
    assert "gold solution" not in jp.lesson2_verdict(_table({"judge": (0.0, -0.1, 0.1)}))["text"]


def test_verdict_decidable_when_a_judge_beats_structure():
    v = jp.lesson2_verdict(_table({"judge": (0.05, -0.01, 0.1), "judge_reference": (0.2, 0.05, 0.35)}),
                           model="qwen25_72b_instruct")
    assert v["verdict"] == "decidable" and v["best"] == "judge_reference"
    assert "setting 'judge_reference') beats the structure baseline" in v["text"]
    assert "+0.200" in v["text"] and "[+0.050, +0.350]" in v["text"] and "undecidable" not in v["text"]
    with pytest.raises(ValueError, match="no 'average' rows"):
        jp.lesson2_verdict(_table({}).iloc[0:0])


class GoldDiffJudge(Engine):
    """A judge double that reads its prompt: it names the first paragraph that is not a line of the
    reference solution (-1 when all are), and says -1 without a reference."""

    backend = "fake"

    def __init__(self):
        super().__init__()
        self.tokenizer, self.prompts, self.calls = FakeTokenizer(), [], []

    def generate(self, prompts, spec, seeds=None):
        self.prompts += prompts
        self.calls.append(len(prompts))
        out = []
        for p in prompts:
            if "[Reference Solution]" not in p:
                out.append([Completion("\\boxed{-1}", 7, "stop")])
                continue
            ref = p.split("[Reference Solution]")[1].split("[Solution]")[0]
            paras = p.split("[Solution]")[1].split("<paragraph_")[1:]
            texts = [x.split(">\n", 1)[1].split("\n</paragraph")[0] for x in paras]
            first = next((i for i, t in enumerate(texts) if t not in ref), -1)
            out.append([Completion(f"\\boxed{{{first}}}", 7, "stop")])
        return out


CON = {"n_per_subset": 12, "error_fraction": 0.5, "keep_answer_fraction": 0.3, "seed": 0,
       "subsets": {"arith": {"source": "reasoning_gym", "generator": "basic_arithmetic", "size": 20, "seed": 2001,
                             "params": {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 1,
                                        "operators": ["+", "-", "*"], "allow_parentheses": False,
                                        "allow_negation": False}},
                   "chain_sum": {"source": "reasoning_gym", "generator": "chain_sum", "size": 20, "seed": 2002,
                                 "params": {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 1}}}}
JUDGE = {"style": "processbench", "template_path": None, "system_prompt": None, "n": 1, "temperature": 0.0,
         "top_p": 1.0, "max_tokens": 64, "seed": 0, "force_answer": True, "guided": True, "shards": 1,
         "force_truncated": True, "reference": False, "processbench_cases": 16}


def test_rules_score_both_judge_settings_and_write_the_table_and_verdict(tmp_path, monkeypatch, capsys):
    c = constructed_processbench(CON)
    cp = str(tmp_path / "cases.parquet")
    write_table(c, cp, "processbench")
    sp = str(tmp_path / "structure.parquet")
    pd.DataFrame({"id": c["id"], "prediction": pd.array([-1] * len(c), dtype="Int64")}).to_parquet(sp)
    made = []
    monkeypatch.setattr(generation, "load_engine", lambda d, e, b="auto": made.append(GoldDiffJudge()) or made[-1])
    tables = [str(tmp_path / f"{setting}.parquet") for setting in jp.SETTINGS]
    rule_judge_pb(inputs={"cases": cp}, outputs={"tables": tables},
                  params={"judge": JUDGE, "n_cases": 16, "constructed": CON, "model_dir": "x", "model_entry": {},
                          "settings": list(jp.SETTINGS)}, wildcards={}, threads=1)
    free, ref = (read_table(t, "critic") for t in tables)
    assert len(free) == 16 and free["id"].tolist() == ref["id"].tolist()
    assert len(made) == 1  # one engine for every setting, the settings' cases in one batch
    assert len(made[0].calls) == 1 and len(made[0].prompts) == 32
    assert all("[Reference Solution]" not in p for p in made[0].prompts[:16])
    assert all("[Reference Solution]" in p for p in made[0].prompts[16:])
    # the reference is the case problem's gold solution: a diff against it finds every injected error
    assert ref["prediction"].astype(int).tolist() == ref["label"].tolist()
    assert "at most 1024 generated tokens" in capsys.readouterr().out

    csv, js = str(tmp_path / "judge_processbench.csv"), str(tmp_path / "judge_processbench.json")
    rule_table(inputs={"cases": cp, "tables": tables, "structure": sp}, outputs={"csv": csv, "metrics": js},
               params={"judge": JUDGE, "processbench_eval": {"bootstrap": {"samples": 200, "seed": 0,
                                                                           "confidence": 0.95}},
                       "model": "smollm2", "run_label": "test"}, wildcards={}, threads=1)
    t = read_csv(csv, "judge_processbench_csv").set_index(["judge", "subset"])
    assert t.loc[("judge_reference", "average"), "f1"] == 1.0
    assert t.loc[("judge_reference", "average"), "delta_ci_low"] > 0
    assert t.loc[("judge", "average"), "n"] == 16
    assert [str(t.loc[(j, "average"), "configured"]).lower() for j in jp.SETTINGS] == ["true", "false"]
    assert [str(t.loc[(j, "average"), "reference"]).lower() for j in jp.SETTINGS] == ["false", "true"]
    assert "reference=on" in t.loc[("judge_reference", "average"), "setting"]
    m = json.loads(open(js).read())
    assert m["lesson2"]["verdict"] == "decidable" and m["configured"] == "judge"
    assert "lesson 2: decidable" in capsys.readouterr().out
