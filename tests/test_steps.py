from prm_lessons.steps import split_steps


def test_split_on_blank_lines_drops_empty_steps():
    assert split_steps("a\n\nb\n\n\n\nc\n\n") == ["a", "b", "c"]
    assert split_steps("") == [] and split_steps(None) == []
    assert split_steps("one step only") == ["one step only"]


def test_custom_separator():
    assert split_steps("x ки y ки", separator="ки") == ["x", "y"]
