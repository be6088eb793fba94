"""Math-Shepherd's released labels as a training source: the reader on a small file in the released format
written here (question, then `Step k:` steps each ending with the tag ки; `label` = the same text with
each tag replaced by + or -), truncation after the first -, malformed rows counted by id (never raised),
decontamination, the rule and an end-to-end training-set build, the plan and the config keys."""
import json
from pathlib import Path

import pytest
import yaml

from prm_lessons.config import ConfigError, validate_config
from prm_lessons.labels.math_shepherd import TAG, convert_math_shepherd, convert_row, iter_rows
from prm_lessons.plan import trainset_inputs, variants
from prm_lessons.rules.labels import math_shepherd_labels, trainset, trainsets_table
from prm_lessons.steps import StepFormat, build_prm_input
from prm_lessons.tables import read_table, table_meta

Q1 = "Janet has 16 eggs. She eats 3 and bakes with 4. How many are left?"
Q2 = "What is $2 + 3 \\cdot 4$?"
Q3 = "Tom reads 5 pages a day. How many pages in a week?"


def row(question, steps, marks, task="GSM8K", sep="\n"):
    """A row as the released file has it: the tag after each step, the marks in its place in `label`."""
    text = question + " " + sep.join(f"Step {k}: {s} {TAG}" for k, s in enumerate(steps, 1))
    label = question + " " + sep.join(f"Step {k}: {s} {m}" for k, (s, m) in enumerate(zip(steps, marks), 1))
    return {"input": text, "label": label, "task": task}


ROWS = [
    row(Q1, ["16 - 3 = <<16-3=13>>13 eggs remain.", "13 - 4 = <<13-4=9>>9 are left.", "The answer is: 9"], "+++"),
    # a negative step then a positive one (MC estimates need not stay negative): cut after the first -
    row(Q2, ["First $2 + 3 = 5$.", "Then $5 \\cdot 4 = 20$.", "The answer is: 20"], "+-+", task="MATH"),
    row(Q3, ["7 days times 5 pages is 35.", "The answer is: 35"], "-+"),
]


def write_fixture(path, extra_lines=()):
    lines = [json.dumps(r, ensure_ascii=False) for r in ROWS] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


def bad_rows():
    wrong_mark = row(Q1, ["a.", "b."], "++")
    at = wrong_mark["input"].index(TAG)
    wrong_mark["label"] = wrong_mark["label"][:at] + "x" + wrong_mark["label"][at + 1:]
    short = row(Q1, ["a.", "b."], "++")
    short["label"] = short["label"][:-1]
    no_step1 = {"input": f"{Q1} 16 - 3 = 13. {TAG}", "label": f"{Q1} 16 - 3 = 13. +", "task": "GSM8K"}
    return [json.dumps(wrong_mark), "{not json", json.dumps(short), json.dumps(no_step1),
            json.dumps({"input": "no tags here", "label": "no tags here"}), json.dumps({"label": "x"}),
            json.dumps(["a", "list"]), json.dumps(row("", ["a."], "+"))]


def test_question_steps_and_labels():
    inst = convert_row(ROWS[0])
    assert inst["question"] == Q1
    assert inst["steps"] == ["16 - 3 = <<16-3=13>>13 eggs remain.", "13 - 4 = <<13-4=9>>9 are left.",
                             "The answer is: 9"]
    assert inst["labels"] == [1.0, 1.0, 1.0] and inst["task"] == "GSM8K"
    kept = convert_row(ROWS[0], strip_step_prefix=False)
    assert kept["steps"][0].startswith("Step 1: 16 - 3") and kept["steps"][2] == "Step 3: The answer is: 9"


def test_truncated_after_the_first_negative():
    inst = convert_row(ROWS[1])
    assert inst["labels"] == [1.0, 0.0] and inst["steps"] == ["First $2 + 3 = 5$.", "Then $5 \\cdot 4 = 20$."]
    assert inst["question"] == Q2  # a `+` inside the text is text, not a mark
    first = convert_row(ROWS[2])
    assert first["labels"] == [0.0] and first["steps"] == ["7 days times 5 pages is 35."]


def test_steps_separated_by_blank_lines_or_spaces_read_the_same():
    spaced = row(Q1, ["a b.", "c d."], "+-", sep=" ")
    assert convert_row(spaced)["steps"] == ["a b.", "c d."]
    assert convert_row(row(Q1, ["a b.", "c d."], "+-", sep="\n\n"))["steps"] == ["a b.", "c d."]


def test_malformed_rows_are_counted_by_id_not_raised(tmp_path):
    path = write_fixture(tmp_path / "ms.jsonl", bad_rows())
    inst, rep = convert_math_shepherd(iter_rows(path))
    assert rep["rows"] == 11 and rep["instances"] == 3 == len(inst) and rep["malformed"] == 8
    assert rep["malformed_by_reason"] == {"label_mismatch": 2, "not_an_object": 2, "no_first_step": 1,
                                          "no_tag": 1, "missing_field": 1, "empty_question": 1}
    assert rep["malformed_ids"]["label_mismatch"] == ["math_shepherd-0000003", "math_shepherd-0000005"]
    assert rep["malformed_ids"]["not_an_object"] == ["math_shepherd-0000004", "math_shepherd-0000009"]
    assert [x["instance_id"] for x in inst] == [f"math_shepherd-{i:07d}" for i in range(3)]
    assert rep["truncated"] == 2
    inst, rep = convert_math_shepherd(iter_rows(path), limit=2)
    assert rep["rows"] == 2 and len(inst) == 2


def test_steps_go_through_the_step_format_contract():
    from conftest import tiny_tokenizer

    tok = tiny_tokenizer(with_step_token=True)
    inst = convert_row(ROWS[0])
    assert not any(TAG in s or s.startswith("Step") for s in inst["steps"])
    enc = build_prm_input(tok, inst["question"], inst["steps"], StepFormat())
    assert len(enc.step_positions) == len(inst["steps"]) == enc.n_steps_kept
    step_id = tok.convert_tokens_to_ids("<extra_0>")
    assert all(enc.input_ids[p] == step_id for p in enc.step_positions)


SPEC = {"source": "local", "path": "", "id": "peiyi9979/Math-Shepherd", "revision": None,
        "file": "math-shepherd.jsonl", "limit": None, "strip_step_prefix": True}


def test_rule_decontaminates_and_an_end_to_end_trainset(tmp_path):
    import pandas as pd

    path = write_fixture(tmp_path / "ms.jsonl", bad_rows()[:2])
    pd.DataFrame({"question": [Q2.replace(" ", "  ")], "answer": ["14"]}).to_parquet(tmp_path / "bench.parquet")
    pd.DataFrame({"problem": ["unrelated"]}).to_parquet(tmp_path / "pb.parquet")
    labels = tmp_path / "math_shepherd.parquet"
    math_shepherd_labels(inputs={"eval_sets": [str(tmp_path / "bench.parquet"), str(tmp_path / "pb.parquet")]},
                         outputs={"table": str(labels)}, params={"math_shepherd": {**SPEC, "path": str(path)}},
                         wildcards={}, threads=1)
    df = read_table(labels, "trainset")
    meta = table_meta(labels)
    assert meta["summary"]["removed_by_decontamination"] == 1 and Q2 not in set(df["question"])
    assert meta["summary"]["malformed"] == 2 and meta["n_candidates"] == 3 and len(df) == 2
    assert meta["malformed_ids"] == {"label_mismatch": ["math_shepherd-0000003"],
                                     "not_an_object": ["math_shepherd-0000004"]}

    config = {"trainsets": {"variants": {"math_shepherd": {"source": "math_shepherd"}}}}
    spec = variants(config)["math_shepherd"]
    inputs = {k: str(labels) for k in trainset_inputs(config, "math_shepherd")}
    out = {"table": str(tmp_path / "ts.parquet"), "stats": str(tmp_path / "ts.json")}
    trainset(inputs=inputs, outputs=out, params={"variant": "math_shepherd", "spec": spec, "run": {}},
             wildcards={}, threads=1)
    ts = read_table(out["table"], "trainset")
    assert list(ts["instance_id"]) == ["math_shepherd-0000000", "math_shepherd-0000002"]
    assert set(ts["source"]) == {"math_shepherd"} and list(ts["dataset"]) == ["GSM8K", "GSM8K"]
    assert [list(x) for x in ts["labels"]] == [[1.0, 1.0, 1.0], [0.0]]
    st = json.loads((tmp_path / "ts.json").read_text())
    assert st["n_instances"] == 2 and st["paper_n_instances"] == 440_000 and st["n_steps"] == 4
    assert st["retained_fraction"] == pytest.approx(2 / 3)
    trainsets_table(inputs={"stats": [out["stats"]]}, outputs={"csv": str(tmp_path / "t.csv")},
                    params={"run_label": "test"}, wildcards={}, threads=1)
    row_ = pd.read_csv(tmp_path / "t.csv").iloc[0]
    assert row_["variant"] == "math_shepherd" and row_["n_instances"] == 2 and row_["paper_n_instances"] == 440000


def _config(**section):
    cfg = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "config.yaml").read_text())
    cfg["trainsets"]["variants"]["math_shepherd"] = {"source": "math_shepherd"}
    if section:
        cfg["math_shepherd"] = section
    return cfg


def test_config_keys():
    cfg = validate_config(_config())
    assert cfg["math_shepherd"]["source"] == "hub" and cfg["math_shepherd"]["id"] == "peiyi9979/Math-Shepherd"
    assert len(cfg["math_shepherd"]["revision"]) == 40 and cfg["math_shepherd"]["limit"] is None
    for section, key in (({"source": "local"}, "math_shepherd.path"), ({"limit": 0}, "math_shepherd.limit"),
                         ({"sourse": "hub"}, "math_shepherd.sourse"), ({"source": "url"}, "math_shepherd.source")):
        with pytest.raises(ConfigError, match=f"config error at `{key}`"):
            validate_config(_config(**section))


def test_paper_config_trains_the_variant_under_the_papers_row_key():
    from prm_lessons.artifacts.published import load_published, published_long

    paper = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "paper.yaml").read_text())
    assert paper["trainsets"]["variants"]["math_shepherd"] == {"source": "math_shepherd"}
    assert paper["math_shepherd"]["source"] == "hub" and paper["math_shepherd"]["limit"] is None
    key = paper["analysis"]["paper_rows"]["math_shepherd"]
    pub = load_published()
    tables = [t for t in ("table3", "table4", "table6", "table7", "table13")
              if key in set(published_long(pub, t)["key"])]
    assert tables == ["table3", "table4", "table6", "table7", "table13"]
    assert paper["human"]["prm800k"]["expand"] == "alternatives"


def test_rehearsal_standin_file_reads_with_one_malformed_row(tmp_path, shared_data):
    from prm_lessons.rehearsal.math_shepherd_file import write_math_shepherd

    n = write_math_shepherd(tmp_path / "ms.jsonl", shared_data / "bon" / "math_cot_100_samples.jsonl")
    inst, rep = convert_math_shepherd(iter_rows(tmp_path / "ms.jsonl"))
    assert rep["rows"] == n and rep["malformed"] == 1 and len(inst) == n - 1
    assert rep["malformed_ids"] == {"label_mismatch": [f"math_shepherd-{n - 1:07d}"]}
    assert rep["truncated"] > 0 and all(len(x["steps"]) == len(x["labels"]) for x in inst)


@pytest.mark.parametrize("line", ['{"input": "a", "label": "b", "label": "c", "task": "GSM8K"}',
                                  '{"input": NaN, "label": "b", "task": "GSM8K"}',
                                  '{"x": ' * 200 + "1" + "}" * 200])
def test_a_row_with_a_repeated_key_a_constant_or_deep_nesting_is_malformed(tmp_path, line):
    """json.loads kept the last of two keys (and read NaN, or recursed); such a row is one malformed row."""
    f = tmp_path / "ms.jsonl"
    f.write_text(line + "\n")
    assert list(iter_rows(f)) == [None]


def test_task_null_or_absent_is_no_task_and_any_other_non_text_is_malformed(tmp_path):
    """`task` is optional text: null or absent gives no dataset; a number, a bool, an object or a blank text
    is a malformed row (bad_task), never silently no task."""
    ok = ROWS[0]
    absent = {k: v for k, v in ok.items() if k != "task"}
    tasks = [None, 3, True, {"name": "MATH"}, " ", "MATH"]
    lines = [json.dumps({**ok, "task": t}) for t in tasks] + [json.dumps(absent)]
    (tmp_path / "ms.jsonl").write_text("\n".join(lines) + "\n")
    inst, rep = convert_math_shepherd(iter_rows(tmp_path / "ms.jsonl"))
    assert rep["malformed_by_reason"] == {"bad_task": 4}
    assert rep["malformed_ids"]["bad_task"] == [f"math_shepherd-{i:07d}" for i in (1, 2, 3, 4)]
    assert [(x["instance_id"], x["dataset"]) for x in inst] == [
        ("math_shepherd-0000000", None), ("math_shepherd-0000005", "MATH"), ("math_shepherd-0000006", None)]
