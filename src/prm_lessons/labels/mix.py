"""A mix of data policies (config `data_policies`, several entries): their responses to one training set
as the one table every label rule reads."""
from __future__ import annotations

import pandas as pd

from ..errors import InputError
from ..tables import SCHEMAS


def mix_responses(parts: list[tuple[str, pd.DataFrame, int]]) -> pd.DataFrame:
    """One training set's responses from several data policies as one table: each part (name, responses,
    offset) with `data_policy` = its name and sample_idx + its offset, so (problem_id, sample_idx) stays a
    key. A part whose sample_idx reaches the next part's offset is an error (its policy sampled more
    responses per problem than the mix counted)."""
    frames = []
    ends = [off for _, _, off in parts[1:]] + [None]
    for (name, df, offset), end in zip(parts, ends):
        idx = df["sample_idx"].astype(int)
        if end is not None and len(df) and int(idx.max()) + offset >= end:
            raise InputError([f"data policy '{name}': sample_idx {int(idx.max())} reaches the next policy's "
                              f"offset {end} (responses per problem: data_policies.{name}.n)"])
        frames.append(df.assign(sample_idx=idx + int(offset), data_policy=name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SCHEMAS["responses"])
