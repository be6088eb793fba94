"""Table 8's notes say how its pass@1 was measured (search.pass1) and that the search policy's prompt is the
project's choice."""
from prm_lessons.artifacts.defs.table8_greedy_search import table8_notes


def test_table8_notes_name_the_pass1_setting_and_mark_the_prompt():
    greedy = table8_notes({"search_pass1": "greedy"})
    assert "one greedy response per problem" in greedy[0] and "INFERRED" in greedy[0]
    mean = table8_notes({"search_pass1": "mean"})
    assert "mean correctness of the N sampled responses" in mean[0] and "project's choice" in mean[0]
    assert greedy[-1] == mean[-1] and "UNVERIFIED" in greedy[-1] and "sampling.system_prompt" in greedy[-1]
    assert len(table8_notes({})) == 1   # no setting given: the prompt note only
