"""Gold answers as the harness reads them (prm_lessons.grading.golds)."""
from __future__ import annotations

from prm_lessons.grading.golds import gold_answer_text, last_boxed_content
from prm_lessons.grading.pool import grade


def test_last_boxed_content_none_without_box():
    assert last_boxed_content("no box") is None


def test_gold_dollars_are_dropped_as_the_harness_does():
    assert gold_answer_text("$2: 15$ PM") == "2: 15 PM"          # college_math: $ inside the answer
    assert gold_answer_text(["$x=1$"]) == "x=1"
    assert gold_answer_text("\\$6") == "6"                       # MATH: an escaped dollar goes too
    assert grade("so \\boxed{4 \\frac{4}{9} days}", "$4 \\frac{4}{9}$ days", timeout_s=10).correct
