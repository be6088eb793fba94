"""judge.reference: the reference-guided labelling judge's prompt (prm_lessons.labels.judge), the reference-free
prompt unchanged byte for byte, and rule `judge` reading the gold solutions of the responses' problems."""
import hashlib

import pandas as pd
import pytest

import prm_lessons.generation.engine as generation
from fakes import ScriptedJudge
from prm_lessons.labels.judge import REFERENCE_NOTE, judge_responses, reference_text, render_judge_prompt
from prm_lessons.rules.labels import judge as rule_judge
from prm_lessons.tables import read_table, write_table

QUESTION = "What is 3 + 4 * 2?"
GOLD = ["First, 4 * 2 = 8, so the expression becomes 3 + 8.", "Finally, 3 + 8 = 11.",
        "Therefore, the final answer is $\\boxed{11}$."]
WRONG = ["First, 4 * 2 = 9, so the expression becomes 3 + 9.", "Finally, 3 + 9 = 12."]
# SHA-256 of the two built-in prompts for (QUESTION, GOLD), recorded before judge.reference existed:
# with the option off the embedded judge's prompts (and so its outputs) stay what they were
DIGESTS = {"processbench": "06d802350bd496df4178a3c6c42768d63608a3eb6abba5c597765c0a838d9cd4",
           "paper": "744ffd81c36b625352a718995ca599fda6c55efcc4b970f85af48bd36d919c65"}


@pytest.mark.parametrize("style", ["processbench", "paper"])
def test_reference_free_prompt_is_byte_identical_to_before(style):
    for prompt in (render_judge_prompt(QUESTION, GOLD, style), render_judge_prompt(QUESTION, GOLD, style, None, None)):
        assert hashlib.sha256(prompt.encode()).hexdigest() == DIGESTS[style]
        assert "Reference" not in prompt and "reference" not in prompt and REFERENCE_NOTE not in prompt


def test_processbench_prompt_shows_the_reference_between_problem_and_solution():
    ref = reference_text(GOLD, "11")
    p = render_judge_prompt(QUESTION, WRONG, "processbench", reference=ref)
    free = render_judge_prompt(QUESTION, WRONG, "processbench")
    head, rest = p.split("[Reference Solution]")
    assert QUESTION in head and "[Solution]" not in head
    block, tail = rest.split("[Solution]")
    assert REFERENCE_NOTE in block and all(s in block for s in GOLD)
    # the solution to check keeps its 0-indexed paragraphs and the instructions are the reference-free ones
    assert "<paragraph_0>\n" + WRONG[0] in tail and "<paragraph_2>" not in tail
    assert tail == free.split("[Solution]")[1]


def test_paper_prompt_tags_the_reference_after_the_problem():
    p = render_judge_prompt(QUESTION, WRONG, "paper", reference=reference_text(None, "11"))
    assert f"<math_problem>\n{QUESTION}\n</math_problem>\n\n<reference_solution>\n{REFERENCE_NOTE}" in p
    assert "The final answer is 11.\n</reference_solution>\n\n<paragraph_1>" in p
    assert p.index("</reference_solution>") < p.index("<paragraph_1>") and "<paragraph_0>" not in p


def test_custom_template_gets_the_reference_through_its_problem_placeholder():
    p = render_judge_prompt("Q", ["a"], "processbench", template="P={problem} S={tagged_response}", reference="R")
    assert p == f"P=Q\n\n[Reference Solution]\n\n{REFERENCE_NOTE}\n\nR S=<paragraph_0>\na\n</paragraph_0>"


def test_reference_text_from_gold_steps_and_answer():
    assert reference_text(GOLD, "11") == "\n\n".join(GOLD)  # the steps box the answer: not repeated
    assert reference_text(GOLD[:2], "11") == "\n\n".join(GOLD[:2]) + "\n\nThe final answer is 11."
    assert reference_text(None, " 11 ") == "The final answer is 11."
    assert reference_text(["  ", ""], "7") == "The final answer is 7."
    assert reference_text(None, "") is None and reference_text([], None) is None


def test_judge_responses_puts_each_items_reference_in_its_prompt_only():
    eng = ScriptedJudge(["\\boxed{0}", "\\boxed{-1}", "\\boxed{1}"])
    rows = judge_responses(eng, ["q0", "q1", "q2"], [WRONG, GOLD, WRONG], ["a", "b", "c"],
                           references=["REF-A", None, "REF-C"])
    assert [r["first_error"] for r in rows] == [0, -1, 1]
    assert "REF-A" in eng.prompts[0] and "REF-C" not in eng.prompts[0]
    assert "[Reference Solution]" not in eng.prompts[1] and "REF-C" in eng.prompts[2]
    with pytest.raises(ValueError, match="2 references for 3 responses"):
        judge_responses(ScriptedJudge([]), ["q0", "q1", "q2"], [WRONG] * 3, ["a", "b", "c"], references=["x", "y"])


JUDGE = {"style": "processbench", "template_path": None, "system_prompt": None, "n": 1, "temperature": 0.0,
         "top_p": 1.0, "max_tokens": 64, "seed": 0, "force_answer": True, "guided": True, "shards": 1}


def _tables(tmp_path, problem_ids=("train-00000", "train-00001")):
    rows = [{"problem_id": p, "sample_idx": 0, "dataset": "train", "question": f"q{i}", "answer": str(10 + i),
             "response": "x", "steps": WRONG, "n_tokens": 3, "finish_reason": "stop"}
            for i, p in enumerate(["train-00000", "train-00001"])]
    rp, pp = str(tmp_path / "responses.parquet"), str(tmp_path / "problems.parquet")
    write_table(pd.DataFrame(rows), rp, "responses")
    problems = [{"problem_id": p, "dataset": "train", "question": f"q{i}", "answer": str(10 + i),
                 "gold_steps": [f"gold step of {p}"] if i == 0 else None} for i, p in enumerate(problem_ids)]
    write_table(pd.DataFrame(problems), pp, "problems")
    return rp, pp


def test_rule_judge_with_reference_reads_the_problems_gold_solutions(tmp_path, monkeypatch):
    rp, pp = _tables(tmp_path)
    made = []
    monkeypatch.setattr(generation, "load_engine",
                        lambda d, e, b="auto": made.append(ScriptedJudge(["\\boxed{0}"] * 2)) or made[-1])
    out = str(tmp_path / "judge.parquet")
    rule_judge(inputs={"responses": rp, "problems": pp}, outputs={"table": out},
               params={"judge": {**JUDGE, "reference": True}, "model_dir": "x", "model_entry": {}},
               wildcards={"dataset": "train", "shard": "0", "nshards": "1"}, threads=1)
    prompts = made[0].prompts
    assert "gold step of train-00000" in prompts[0] and "The final answer is 10." in prompts[0]
    assert "The final answer is 11." in prompts[1] and "gold step" not in prompts[1]  # no gold steps: the answer
    assert read_table(out, "judge")["first_error"].tolist() == [0, 0]
    # off: no reference, no problems table needed
    rule_judge(inputs={"responses": rp}, outputs={"table": out},
               params={"judge": {**JUDGE, "reference": False}, "model_dir": "x", "model_entry": {}},
               wildcards={"dataset": "train", "shard": "0", "nshards": "1"}, threads=1)
    assert all("[Reference Solution]" not in p for p in made[1].prompts)


def test_rule_judge_with_reference_names_responses_without_a_gold(tmp_path, monkeypatch):
    rp, pp = _tables(tmp_path, problem_ids=("train-00000", "other-00001"))
    monkeypatch.setattr(generation, "load_engine", lambda d, e, b="auto": ScriptedJudge(["\\boxed{0}"] * 2))
    with pytest.raises(ValueError, match=r"judge\.reference: no gold solution or answer for 1 item\(s\): train-00001"):
        rule_judge(inputs={"responses": rp, "problems": pp}, outputs={"table": str(tmp_path / "j.parquet")},
                   params={"judge": {**JUDGE, "reference": True}, "model_dir": "x", "model_entry": {}},
                   wildcards={"dataset": "train", "shard": "0", "nshards": "1"}, threads=1)
