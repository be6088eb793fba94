"""LLM-as-a-judge: prompt rendering for both styles, verdict parsing on realistic outputs
(fixtures/judge_verdicts.yaml), majority vote, forced answers, and responses without steps."""

import pytest
import yaml

from conftest import FIXTURES
from fakes import ScriptedJudge
from prm_lessons.labels.judge import judge_responses, parse_verdict, parse_verdict_detail, render_judge_prompt, vote

CASES = yaml.safe_load((FIXTURES / "judge_verdicts.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_parse_realistic_verdicts(case):
    value, status = parse_verdict_detail(case["text"], case["n_steps"], case["style"])
    assert value == case["expected"]
    assert status == case["status"]
    assert parse_verdict(case["text"], case["n_steps"], case["style"]) == case["expected"]


def test_parse_empty_and_unknown_style():
    assert parse_verdict("", 3) is None and parse_verdict(None, 3, "paper") is None
    with pytest.raises(ValueError, match="judge style"):
        parse_verdict("\\boxed{1}", 3, "likert")


def test_processbench_prompt_is_zero_indexed_with_boxed_instruction():
    p = render_judge_prompt("What is 2+3?", ["2+3=5", "So \\boxed{5}"], "processbench")
    assert "<paragraph_0>\n2+3=5\n</paragraph_0>\n\n<paragraph_1>" in p
    assert "<paragraph_2>" not in p and "indexed from 0" in p and "\\boxed{}" in p and "-1" in p
    assert "What is 2+3?" in p


def test_paper_prompt_is_one_indexed_with_conclusion():
    p = render_judge_prompt("What is 2+3?", ["2+3=5", "So 5"], "paper")
    assert "<math_problem>\nWhat is 2+3?\n</math_problem>" in p
    assert "<paragraph_1>\n2+3=5\n</paragraph_1>" in p and "<paragraph_2>" in p and "<paragraph_0>" not in p
    assert "<conclusion>Correct</conclusion>" in p and "<analysis_i>" in p


def test_custom_template():
    p = render_judge_prompt("Q", ["a"], "processbench", template="P={problem} S={tagged_response} \\boxed{{}}")
    assert p == "P=Q S=<paragraph_0>\na\n</paragraph_0> \\boxed{}"


def test_vote():
    assert vote([2, None, 2, 1]) == 2
    assert vote([1, 2]) == 1  # tie → first seen
    assert vote([None, None]) is None
    assert vote([-1, -1, 0]) == -1


def test_judge_responses_majority_force_and_no_steps():
    texts = ["\\boxed{1}", "\\boxed{1}", "I think it is fine", "\\boxed{9}", "rambling on", "no box"]
    eng = ScriptedJudge(texts, forced="0}")
    rows = judge_responses(eng, ["q1", "q2", "q3", "q4"], [["a", "b"], ["a", "b", "c"], [], ["x"]],
                           ["i1", "i2", "i3", "i4"], style="processbench", n=2, temperature=0.7, force_answer=True)
    assert rows[0]["first_error"] == 1 and rows[0]["parsed"] and rows[0]["n_forced"] == 0
    # sample 1 rambled → forced "\boxed{0}"; sample 2 out of range → no vote → majority of [0] = 0
    assert rows[1]["votes"] == [0, None] and rows[1]["first_error"] == 0 and rows[1]["n_forced"] == 1
    assert rows[2] == {"first_error": None, "verdicts": [], "parsed": False, "status": "no_steps", "votes": [],
                       "n_forced": 0, "n_truncated": 0, "tokens_generated": 0, "cut": [], "forced_at": []}
    assert rows[3]["first_error"] == 0 and rows[3]["n_forced"] == 2
    assert len(rows[1]["verdicts"]) == 2


def test_unparsable_without_forcing_is_recorded_not_raised():
    eng = ScriptedJudge(["no verdict at all", "\\boxed{5}"])
    rows = judge_responses(eng, ["q", "q"], [["a"], ["a", "b"]], ["i", "j"], force_answer=False)
    assert rows[0]["first_error"] is None and rows[0]["status"] == "no_verdict" and not rows[0]["parsed"]
    assert rows[1]["first_error"] is None and rows[1]["status"] == "out_of_range"
    assert rows[0]["verdicts"] == ["no verdict at all"]


def test_cut_off_verdict_is_not_forced_but_counted():
    # sample 0 was cut off at max_tokens mid-analysis, sample 1 ended on its own without an answer:
    # only the latter may be forced; the former stays unread and is counted as truncated
    eng = ScriptedJudge(["<paragraph_0> looks fine, now paragraph 1 ...", "I am done."], forced="0}", cut={0})
    rows = judge_responses(eng, ["q", "q"], [["a", "b"], ["a", "b"]], ["i", "j"], force_answer=True)
    assert rows[0]["first_error"] is None and rows[0]["status"] == "truncated"
    assert rows[0]["n_truncated"] == 1 and rows[0]["n_forced"] == 0
    assert rows[1]["first_error"] == 0 and rows[1]["n_forced"] == 1 and rows[1]["n_truncated"] == 0
    # the opt-in keeps the old behaviour
    eng = ScriptedJudge(["<paragraph_0> looks fine ..."], forced="1}", cut={0})
    rows = judge_responses(eng, ["q"], [["a", "b"]], ["i"], force_answer=True, force_truncated=True)
    assert rows[0]["first_error"] == 1 and rows[0]["n_forced"] == 1 and rows[0]["n_truncated"] == 0
