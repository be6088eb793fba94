"""labels.mix.mix_responses: a mix of data policies' responses as one table, every (problem_id, sample_idx)
once, each row naming its data policy."""
from __future__ import annotations

import pandas as pd
import pytest

from prm_lessons.errors import InputError
from prm_lessons.labels.mix import mix_responses


def _responses(n: int, problems=("p0", "p1"), tag="") -> pd.DataFrame:
    return pd.DataFrame([{"problem_id": p, "sample_idx": k, "response": f"{tag}{p}-{k}"}
                         for p in problems for k in range(n)])


def test_offsets_keep_the_key_unique_and_the_rows_their_policy():
    df = mix_responses([("a", _responses(2, tag="a"), 0), ("b", _responses(3, tag="b"), 2)])
    assert len(df) == 10 and not df.duplicated(["problem_id", "sample_idx"]).any()
    p0 = df[df["problem_id"] == "p0"].set_index("sample_idx")
    assert list(p0.index) == [0, 1, 2, 3, 4]
    assert list(p0["data_policy"]) == ["a", "a", "b", "b", "b"]
    assert p0.loc[2, "response"] == "bp0-0"   # b's first response, after a's two


def test_a_policy_that_sampled_more_than_counted_is_refused():
    # a's 3 responses per problem would reach b's offset 2: (p0, 2) twice
    with pytest.raises(InputError, match=r"data policy 'a'.*data_policies\.a\.n"):
        mix_responses([("a", _responses(3), 0), ("b", _responses(2), 2)])
