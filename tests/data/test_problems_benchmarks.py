"""The benchmarks of Tables 10, 15-16 and Figure 6's Omni-MATH bar (config/paper.yaml): their pinned
specs, the loader features they need (answer-field fallback, options in the 选项 style, a seeded
subsample), the harness's few-shot user turn for the Chinese multiple-choice sets and for MMLU STEM
(5-shot), and the harness's grading of Chinese answers and multi-letter choices."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import ROOT
from prm_lessons.data.problems import load_problems
from prm_lessons.generation.engine import render_chat
from prm_lessons.generation.fewshot import prompt_column, read_demos, user_message
from prm_lessons.generation.sampling import user_turns
from prm_lessons.grading.extract import extract_answer, extract_final, multi_choice_gold
from prm_lessons.grading.pool import grade
from prm_lessons.rehearsal.fewshot_file import STANDIN_DEMOS, STANDIN_MMLU_DEMOS, write_fewshot_examples
from prm_lessons.rules.data import problems as rule_problems
from prm_lessons.steps import COT_SYSTEM_PROMPT
from prm_lessons.tables import read_table

HARNESS_COMMIT = "a45202bd16f1ec06f433442dc1152d0074773465"
# name -> (rows, harness data name or None); the paper's n (paper_reference.md §2.21, §5)
NEW = {"math500": (500, None), "aime24": (30, "aime24"), "amc23": (40, "amc23"), "cmath": (600, "cmath"),
       "cn_middle_school24": (101, "cn_middle_school"), "gaokao_math_cloze": (118, "gaokao_math_cloze"),
       "gaokao_math_qa": (351, "gaokao_math_qa")}
SEVEN = ["gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem"]


@pytest.fixture(scope="module")
def paper():
    return yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------ pinned specs

@pytest.mark.parametrize("name", sorted(NEW))
def test_paper_pins_every_new_benchmark(paper, name):
    spec, (rows, data_name) = paper["benchmarks"][name], NEW[name]
    assert spec["source"] == "url" and spec["rows"] == rows
    assert re.fullmatch(r"[0-9a-f]{64}", spec["sha256"])
    assert spec.get("answer_format", "plain") in ("plain", "boxed", "choice", "gsm8k")
    assert {"question", "answer"} <= set(spec["fields"])
    if data_name:  # the harness's file at the commit the other benchmarks use, with its git blob id
        assert spec["url"].endswith(f"/{HARNESS_COMMIT}/evaluation/data/{data_name}/test.jsonl")
        assert re.fullmatch(r"[0-9a-f]{40}", spec["git_blob_sha1"])
    else:  # MATH500: Lightman et al.'s split, an LFS object at a commit
        assert "/openai/prm800k/7ecc794703b2877f63226f2477a49b34f9b25163/" in spec["url"]


def test_paper_omnimath_is_a_pinned_hub_subsample_judged_for_fig6_not_a_table_column(paper):
    om = paper["benchmarks"]["omnimath"]
    assert om["source"] == "hub" and om["id"] == "KbsdJames/Omni-MATH"
    assert re.fullmatch(r"[0-9a-f]{40}", om["revision"]) and om["rows"] == 4428
    assert om["subsample"]["n"] < om["rows"]
    an = paper["analysis"]
    assert an["benchmarks"] == SEVEN  # the main tables keep their seven columns
    assert "omnimath" in an["policy_flaw_datasets"]
    for section in ("search", "bon_judges"):  # Tables 8 and 11 stay on the seven
        assert paper[section]["benchmarks"] == SEVEN


def test_chinese_multiple_choice_sets_use_the_pinned_harness_demonstrations(paper):
    for name in ("cn_middle_school24", "gaokao_math_qa"):
        fs = paper["benchmarks"][name]["prompt"]["fewshot"]
        assert fs["url"].endswith(f"/{HARNESS_COMMIT}/evaluation/examples.py")
        assert (fs["key"], fs["k"], fs["when"]) == ("gaokao", 5, "choice")
        assert fs["sha256"] and fs["git_blob_sha1"]
    for name in ("cmath", "gaokao_math_cloze"):  # zero-shot in the harness
        assert not paper["benchmarks"][name].get("prompt")


def test_wrong_rows_is_an_error_naming_the_benchmark(tmp_path):
    f = _write_jsonl(tmp_path / "cmath.jsonl", [{"question": "1+1=?", "answer": "2"}] * 3)
    with pytest.raises(ValueError, match=r"dataset 'cmath'.*3 rows, expected 600"):
        load_problems("cmath", {"source": "local", "path": str(f), "rows": 600})


# -------------------------------------------------------------------------------- loader features

def test_answer_field_fallback_reads_the_choice_letter_else_the_answer(tmp_path):
    f = _write_jsonl(tmp_path / "cn.jsonl", [
        {"idx": 0, "question": "最小的数是()\nA.-2  B.0  C. 3", "answer": "-2", "choice_answer": "A"},
        {"idx": 1, "question": "计算 $1/3 \\times 1/3$", "answer": "1/9", "choice_answer": ""}])
    df = load_problems("cn", {"source": "local", "path": str(f),
                              "fields": {"question": "question", "answer": ["choice_answer", "answer"], "id": "idx"}})
    assert list(df["answer"]) == ["A", "1/9"]


def test_options_zh_appends_the_options_as_the_harness_does(tmp_path):
    f = _write_jsonl(tmp_path / "qa.jsonl", [{"question": "集合 $A \\cap B=$ ( ) ", "label": "D",
                                              "options": {"A": "$\\{1\\}$", "B": "2", "C": "3", "D": "4"}}])
    spec = {"source": "local", "path": str(f), "fields": {"question": "question", "answer": "label",
                                                          "choices": "options"}, "choices_style": "options_zh"}
    df = load_problems("qa", spec)
    assert df["question"][0] == "集合 $A \\cap B=$ ( )\n选项: (A) $\\{1\\}$ (B) 2 (C) 3 (D) 4"
    assert df["answer"][0] == "D"


def test_subsample_is_seeded_in_source_order_and_keeps_the_source_row(tmp_path):
    f = _write_jsonl(tmp_path / "om.jsonl", [{"problem": f"p{i}", "answer": str(i)} for i in range(20)])
    spec = {"source": "local", "path": str(f), "rows": 20, "subsample": {"n": 5, "seed": 3},
            "fields": {"question": "problem", "answer": "answer"}}
    a, b = load_problems("om", spec), load_problems("om", spec)
    pd.testing.assert_frame_equal(a, b)
    rows = [int(s) for s in a["source_id"]]
    assert rows == sorted(rows) and len(set(rows)) == 5 and list(a["answer"]) == [str(r) for r in rows]
    other = load_problems("om", {**spec, "subsample": {"n": 5, "seed": 4}})
    assert list(other["source_id"]) != list(a["source_id"])
    with pytest.raises(ValueError, match="subsample.n 21"):
        load_problems("om", {**spec, "subsample": {"n": 21}})


# --------------------------------------------------------------------------- the harness's prompt

def _harness_prompt(question: str, gold: str, demos: list[tuple[str, str]]) -> str:
    """What evaluation/math_eval.py sends with --prompt_type qwen25-math-cot --adapt_few_shot for a set
    that has demos (written from its logic, independently of prm_lessons.generation.fewshot): a one-letter gold
    gets every demo as "q\\na", blank-line separated, then a blank line and the stripped question, in
    one user turn; any other gold the stripped question alone."""
    q = question.strip()
    body = q
    if gold in ("A", "B", "C", "D", "E"):
        body = "\n\n".join(dq + "\n" + da for dq, da in demos) + "\n\n" + q
    full = ("<|im_start|>system\nPlease reason step by step, and put your final answer within \\boxed{}."
            "<|im_end|>\n<|im_start|>user\n" + body + "<|im_end|>\n<|im_start|>assistant\n")
    return full.strip(" ")


@pytest.fixture(scope="module")
def qwen_tokenizer():
    from prm_lessons.rehearsal.tokenizers import build_tokenizer

    return build_tokenizer("qwen2")  # the real Qwen2.5 tokenizer and chat template


def test_fewshot_user_turn_renders_what_the_harness_sends(tmp_path, qwen_tokenizer):
    demos_file = write_fewshot_examples(tmp_path / "examples.py")
    f = _write_jsonl(tmp_path / "qa.jsonl", [
        {"question": " 函数 $f(x)=x^2$ 的最小值是 ( )", "label": "B",
         "options": {"A": "-1", "B": "0", "C": "1", "D": "2"}},
        {"question": "下列说法正确的是 ( )", "label": "A B D", "options": {"A": "a", "B": "b", "C": "c", "D": "d"}}])
    spec = {"source": "local", "path": str(f), "choices_style": "options_zh",
            "fields": {"question": "question", "answer": "label", "choices": "options"},
            "prompt": {"fewshot": {"url": str(demos_file), "key": "gaokao", "k": 2, "when": "choice"}}}
    df = load_problems("gaokao_math_qa", spec)
    df["prompt"] = prompt_column(df, spec["prompt"], demos_file)
    rendered = [render_chat(qwen_tokenizer, COT_SYSTEM_PROMPT, u) for u in user_turns(df)]
    expected = [_harness_prompt(q, g, STANDIN_DEMOS) for q, g in zip(df["question"], ["B", "ABD"])]
    assert rendered == expected
    assert "答案是 A" in rendered[0] and "答案是" not in rendered[1]  # the multi-letter item is zero-shot


def test_read_demos_reads_the_examples_file_as_data_never_running_it(tmp_path):
    src = ('raise SystemExit("executed")\n'
           'def get_examples():\n    examples = {}\n'
           '    examples["math"] = [("q0", "a0")]\n'
           '    examples["gaokao"] = [("q1", "a1"), ("q2", "a2"), ("q3", "a3")]\n    return examples\n')
    (tmp_path / "examples.py").write_text(src)
    assert read_demos(tmp_path / "examples.py", "gaokao", 2) == [("q1", "a1"), ("q2", "a2")]
    (tmp_path / "d.json").write_text(json.dumps({"gaokao": [["q", "a"]]}))
    assert read_demos(tmp_path / "d.json", "gaokao", 1) == [("q", "a")]
    with pytest.raises(ValueError, match="asks 5"):
        read_demos(tmp_path / "examples.py", "gaokao", 5)
    with pytest.raises(ValueError, match="no demonstrations under 'cmath'"):
        read_demos(tmp_path / "examples.py", "cmath", 1)


def test_user_message_always_and_zero_shot():
    demos = [("q", "a")]
    assert user_message(" Q ", "12", demos, "choice") == "Q"
    assert user_message(" Q ", "12", demos, "always") == "q\na\n\nQ"
    assert user_message("Q", "C", [], "choice") == "Q"


def test_problems_rule_writes_the_prompt_column_and_sampling_uses_it(tmp_path):
    demos_file = write_fewshot_examples(tmp_path / "examples.py")
    f = _write_jsonl(tmp_path / "cn.jsonl", [
        {"idx": 0, "question": "最小的数是()\nA.-2  B.0", "answer": "-2", "choice_answer": "A"},
        {"idx": 1, "question": "计算 $3 \\times 3$", "answer": "9", "choice_answer": ""}])
    spec = {"source": "local", "path": str(f), "rows": 2,
            "fields": {"question": "question", "answer": ["choice_answer", "answer"], "id": "idx"},
            "prompt": {"fewshot": {"url": str(demos_file), "key": "gaokao", "k": 2}}}
    out = tmp_path / "problems.parquet"
    rule_problems(inputs={"source": [str(f)], "fewshot": [str(demos_file)]}, outputs={"problems": str(out)},
                  params={"spec": spec}, wildcards={"dataset": "cn_middle_school24"}, threads=1)
    df = read_table(out, "problems")
    turns = user_turns(df)
    assert turns[0].startswith(STANDIN_DEMOS[0][0]) and turns[0].endswith("\n\n最小的数是()\nA.-2  B.0")
    assert turns[1] == "计算 $3 \\times 3$"
    assert list(df["question"]) == ["最小的数是()\nA.-2  B.0", "计算 $3 \\times 3$"]  # PRMs see the question
    assert user_turns(df.drop(columns="prompt")) == list(df["question"])


# ---------------------------------------------------------------------------- MMLU STEM, 5-shot

# A fake evaluation/examples.py in the harness's layout (NOT its text): a `gaokao` list, and six
# `mmlu_stem` demos in the harness's MMLU STEM form ("\nAnswer Choices: (A) …", "The answer is (X).").
# The first keeps a non-raw "\frac" as the harness's own first mmlu_stem demo has it (examples.py:335):
# Python reads "\f" as a form feed, and so does the harness, which imports the file.
FAKE_EXAMPLES = r"""def get_examples():
    examples = {}
    examples["gaokao"] = [("计算 $1+1$ ( )\n从以下选项中选择:\n(A) 1\n(B) 2", "答案是 B")]
    # mammoth
    examples["mmlu_stem"] = [
        (
            "What is $\frac{1}{2}$ of 8?\nAnswer Choices: (A) 2 (B) 4 (C) 6 (D) 16",
            "Half of 8 is 4. The answer is (B).",
        ),
        ("Which organelle makes ATP?\nAnswer Choices: (A) Ribosome (B) Nucleus (C) Mitochondrion (D) Vacuole",
         "ATP is made in the mitochondrion. The answer is (C)."),
        ("What is the SI unit of charge?\nAnswer Choices: (A) Coulomb (B) Volt (C) Ohm (D) Tesla",
         "Charge is measured in coulombs. The answer is (A)."),
        ("What is $\\sqrt{81}$?\nAnswer Choices: (A) 7 (B) 8 (C) 9 (D) 10",
         "$9^2=81$, so $\\sqrt{81}=9$. The answer is (C)."),
        ('What does len("ab") return in Python 3? \nAnswer Choices: (A) 0 (B) 1 (C) 2 (D) Error',
         'The string "ab" has two characters. The answer is (C).'),
        ("SIXTH DEMO, beyond k\nAnswer Choices: (A) a (B) b (C) c (D) d", "The answer is (A)."),
    ]
    return examples
"""

# What the harness sends for the two rows of the test below, written out by hand from its code at the pinned
# commit a45202bd16f1ec06f433442dc1152d0074773465 (evaluation/):
# - sh/eval.sh: mmlu_stem runs with `--prompt_type qwen25-math-cot ... --num_shots 5`, without --adapt_few_shot;
# - utils.py:176-178 construct_prompt -> load_prompt(data_name, prompt_type, args.num_shots), and
#   utils.py:77 returns EXAMPLES["mmlu_stem"][:5] (no alias for mmlu_stem at utils.py:59-72);
# - utils.py:141-147: the qwen25-math-cot template (system = the CoT prompt, user = {input}; splitter "\n\n");
# - utils.py:193-195: demo_prompt = "\n\n".join(q + "\n" + a) (the "Hotfix": all demos in one user turn);
# - utils.py:204-212: without --adapt_few_shot every row gets the demos (the gold is not looked at):
#   full_prompt = template(demo_prompt + "\n\n" + example["question"]);
# - utils.py:240: full_prompt.strip(" ");
# - parser.py:675-682 parse_question: question.strip() + "\nAnswer Choices: " + "(A) opt.strip() (B) …",
#   parser.py:719: .strip().
MMLU_HEAD = ("<|im_start|>system\nPlease reason step by step, and put your final answer within \\boxed{}."
             "<|im_end|>\n<|im_start|>user\n")
MMLU_DEMOS = ("What is $\x0crac{1}{2}$ of 8?\nAnswer Choices: (A) 2 (B) 4 (C) 6 (D) 16\n"
              "Half of 8 is 4. The answer is (B).\n\n"
              "Which organelle makes ATP?\nAnswer Choices: (A) Ribosome (B) Nucleus (C) Mitochondrion (D) Vacuole\n"
              "ATP is made in the mitochondrion. The answer is (C).\n\n"
              "What is the SI unit of charge?\nAnswer Choices: (A) Coulomb (B) Volt (C) Ohm (D) Tesla\n"
              "Charge is measured in coulombs. The answer is (A).\n\n"
              "What is $\\sqrt{81}$?\nAnswer Choices: (A) 7 (B) 8 (C) 9 (D) 10\n"
              "$9^2=81$, so $\\sqrt{81}=9$. The answer is (C).\n\n"
              'What does len("ab") return in Python 3? \nAnswer Choices: (A) 0 (B) 1 (C) 2 (D) Error\n'
              'The string "ab" has two characters. The answer is (C).\n\n')
MMLU_TAIL = "<|im_end|>\n<|im_start|>assistant\n"
MMLU_EXPECTED = [
    MMLU_HEAD + MMLU_DEMOS + "A 2 kg mass moves at 3 m/s. What is its kinetic energy?\n"
    "Answer Choices: (A) 3 J (B) 6 J (C) 9 J (D) 18 J" + MMLU_TAIL,
    MMLU_HEAD + MMLU_DEMOS + "Which gate outputs 1 only when both inputs are 1?\n"
    "Answer Choices: (A) OR (B) AND (C) XOR (D) NOR" + MMLU_TAIL,
]


def test_mmlu_stem_is_sampled_5_shot_with_the_harness_demonstrations_on_every_item(paper):
    fs = paper["benchmarks"]["mmlu_stem"]["prompt"]["fewshot"]
    assert fs["url"].endswith(f"/{HARNESS_COMMIT}/evaluation/examples.py")
    assert (fs["key"], fs["k"], fs["when"]) == ("mmlu_stem", 5, "always")  # --num_shots 5, no --adapt_few_shot
    gaokao = paper["benchmarks"]["gaokao_math_qa"]["prompt"]["fewshot"]  # the same pinned file
    assert (fs["sha256"], fs["git_blob_sha1"]) == (gaokao["sha256"], gaokao["git_blob_sha1"])
    for name in SEVEN[:-1]:  # the other English sets stay zero-shot, as eval.sh runs them
        assert not paper["benchmarks"][name].get("prompt")


def test_mmlu_stem_user_turn_renders_what_the_harness_construct_prompt_builds(tmp_path, paper, qwen_tokenizer):
    demos_file = tmp_path / "examples.py"
    demos_file.write_text(FAKE_EXAMPLES, encoding="utf-8")
    f = _write_jsonl(tmp_path / "mmlu_stem.jsonl", [  # the harness's test.jsonl layout; answer = option index
        {"question": "  A 2 kg mass moves at 3 m/s. What is its kinetic energy? ", "type": "high_school_physics",
         "choices": ["3 J", " 6 J", "9 J ", "18 J"], "answer": 2},
        {"question": "Which gate outputs 1 only when both inputs are 1?", "type": "electrical_engineering",
         "choices": ["OR", "AND", "XOR", "NOR"], "answer": 1}])
    # paper.yaml's own entry (fields, answer format, prompt.fewshot key/k/when), read from the local copies
    spec = {k: v for k, v in paper["benchmarks"]["mmlu_stem"].items() if k not in ("rows", "sha256", "git_blob_sha1")}
    out = tmp_path / "problems.parquet"
    rule_problems(inputs={"source": [str(f)], "fewshot": [str(demos_file)]}, outputs={"problems": str(out)},
                  params={"spec": spec}, wildcards={"dataset": "mmlu_stem"}, threads=1)
    df = read_table(out, "problems")
    rendered = [render_chat(qwen_tokenizer, COT_SYSTEM_PROMPT, u) for u in user_turns(df)]
    assert rendered == MMLU_EXPECTED
    assert "SIXTH DEMO" not in rendered[0]  # the first k only
    assert list(df["answer"]) == ["C", "B"]  # graded on the letter, as parser.py:612-614
    assert not any("The answer is" in q for q in df["question"])  # the PRMs see the question alone


def test_rehearsal_samples_mmlu_stem_5_shot_on_the_offline_stand_in(tmp_path):
    from prm_lessons.config import load_config

    cfg = load_config(ROOT / "config" / "paper.yaml", ROOT / "config" / "rehearsal.yaml")
    fs = cfg["benchmarks"]["mmlu_stem"]["prompt"]["fewshot"]
    assert fs["url"] == "data/fewshot/examples.py" and not fs["sha256"] and not fs["git_blob_sha1"]
    assert (fs["key"], fs["when"]) == ("mmlu_stem", "always")
    demos = read_demos(write_fewshot_examples(tmp_path / "examples.py"), fs["key"], fs["k"])
    assert demos == STANDIN_MMLU_DEMOS
    assert all("\nAnswer Choices: (A) " in q and a.endswith(").") for q, a in demos)  # the harness's layout


# ------------------------------------------------------------------------------------------ grading

def test_chinese_answer_phrase_is_read_after_the_first_occurrence():
    assert extract_answer("先算乘法, 再算加法。\n答案是 C\n\n答案是 D") == "C"
    assert extract_answer("所以 \\boxed{14}。答案是 A") == "14"  # boxed comes first, as in the harness
    # without the phrase the letter would be the last one in the text (A): the harness reads B
    assert grade("答案是 B\n\n检查: 选项 A 不对", "B").correct


def test_multi_letter_golds_keep_only_the_letters_of_the_answer():
    assert multi_choice_gold("A B D") == "ABD" and multi_choice_gold("AD") == "AD"
    assert multi_choice_gold("D") is None and multi_choice_gold("x") is None and multi_choice_gold("") is None
    assert extract_final("故选 \\boxed{A, D}", "AD") == "AD"
    assert grade("故选 \\boxed{A, D}", "AD").correct
    assert grade("故选 \\boxed{ABD}", "A B D").correct
    assert not grade("故选 \\boxed{D}", "AD").correct
    assert not grade("故选 \\boxed{DA}", "AD").correct  # a string match, as the harness's


def test_a_fewshot_file_that_is_not_py_or_json_is_a_config_error_naming_the_key(paper):
    from prm_lessons.config import ConfigError, validate_config

    bad = json.loads(json.dumps(paper))
    bad["benchmarks"]["cmath"]["prompt"] = {"fewshot": {"url": "examples.txt"}}
    with pytest.raises(ConfigError, match=r"benchmarks\.cmath\.prompt\.fewshot\.url"):
        validate_config(bad)


def test_yes_no_hint_marks_the_items_the_harness_marks(tmp_path):
    f = _write_jsonl(tmp_path / "cm.jsonl", [{"question": "Are they inverses?", "answer": "Yes"},
                                             {"question": "Is it a density?", "answer": "$false$"},
                                             {"question": "Find x.", "answer": "no solution"}])
    spec = {"source": "local", "path": str(f)}
    assert list(load_problems("cm", spec)["question"]) == ["Are they inverses?", "Is it a density?", "Find x."]
    assert list(load_problems("cm", {**spec, "yes_no_hint": True})["question"]) == [
        "Are they inverses? (Yes or No)", "Is it a density? (True or False)", "Find x."]


def test_paper_college_math_gets_the_yes_no_hint_on_its_16_items(paper):
    from conftest import shared_data_dir

    spec = paper["benchmarks"]["college_math"]
    assert spec["yes_no_hint"] is True
    df = load_problems("college_math", spec, path=shared_data_dir("bon", "college_math.jsonl"))
    assert df["question"].str.endswith(" (Yes or No)").sum() == 16
    assert not df["question"].str.endswith("(True or False)").any()


def test_answers_are_compared_case_insensitively_first_as_the_harness_does():
    assert grade("So \\boxed{True}", "true").correct
    assert grade("\\boxed{yes}", "Yes").correct
    assert not grade("\\boxed{no}", "Yes").correct
