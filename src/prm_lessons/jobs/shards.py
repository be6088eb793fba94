"""Problem shards: which rows a shard job takes (the MC and judge labellers' jobs, and the scoring jobs
of prms.shards), and the merge that refuses shard tables which do not hold every expected problem
exactly once.

The split is :func:`shard_by_problem` (whole problems, round-robin in sorted id order; :func:`in_shard` applies
it to ids), so a killed job loses one shard and a rerun writes the same rows again; the merge is
:func:`prm_lessons.tables.merge_shards` after a check that names every overlapping, missing or foreign
problem, so a stale shard from another split or a lost one cannot pass as a complete table.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from ..tables import KEYS, merge_shards, read_table


def shard_by_problem(df, shard: int, nshards: int):
    """Rows of shard `shard` (0-based) of `nshards`: whole problems, assigned round-robin in sorted id
    order (all samples of a problem share its question prefix in the engine's cache). MC and the judge
    shard this way; sampling.shard_rows takes contiguous rows instead."""
    if not 0 <= shard < nshards:
        raise ValueError(f"shard {shard} out of range for {nshards} shards")
    pids = sorted(df["problem_id"].unique())
    mine = {p for j, p in enumerate(pids) if j % nshards == shard}
    return df[df["problem_id"].isin(mine)].reset_index(drop=True)


def in_shard(ids: Sequence, shard: int, nshards: int) -> np.ndarray:
    """Boolean mask of the rows whose problem id (ProcessBench: case id) falls in shard `shard` of
    `nshards`; every id lands in exactly one shard, all rows of an id in the same one."""
    ids = pd.Series([str(i) for i in ids], dtype=object)
    mine = set(shard_by_problem(pd.DataFrame({"problem_id": ids}), shard, nshards)["problem_id"])
    return ids.isin(mine).to_numpy()


def _keys(df: pd.DataFrame, cols: list[str]) -> list[tuple]:
    return [tuple(str(v) for v in row) for row in df[cols].itertuples(index=False, name=None)]


def merge_problem_shards(paths: Sequence[str | Path], kind: str, expected: pd.DataFrame,
                         group: str = "problem_id") -> tuple[pd.DataFrame, dict]:
    """Shard tables of `kind` → one table holding exactly the rows of `expected` (its key columns,
    tables.KEYS[kind]), in `expected`'s order, and the first shard's metadata. `group` is the shards'
    unit (problem_id; ProcessBench: id). Raises InputError naming each problem found in two shards,
    each expected problem in none, each problem no shard should hold, and each expected row (response)
    missing from its problem's shard."""
    paths = [str(p) for p in paths]
    owners: dict[str, list[str]] = {}
    for p in paths:
        for g in read_table(p, None, columns=[group])[group].astype(str).unique():
            owners.setdefault(g, []).append(p)
    want = [str(g) for g in pd.unique(expected[group].astype(str))]
    problems = [f"{group} {g} is in {len(ps)} shards: {', '.join(ps)}" for g, ps in owners.items() if len(ps) > 1]
    problems += [f"{group} {g} is in no shard (a shard table is missing it: rerun its scoring job)"
                 for g in want if g not in owners]
    problems += [f"{group} {g} (in {', '.join(ps)}) is not in the table being scored (a stale shard?)"
                 for g, ps in owners.items() if g not in set(want)]
    where = f"merge of {len(paths)} '{kind}' shards"
    if problems:
        raise InputError(problems, where)
    df, meta = merge_shards(paths, kind)
    cols = KEYS[kind]
    order = {k: i for i, k in enumerate(_keys(expected, cols))}
    got = _keys(df, cols)
    lost = [k for k in order if k not in set(got)]
    extra = [k for k in got if k not in order]
    if lost or extra:
        raise InputError([f"row {dict(zip(cols, k))} is missing from its shard" for k in lost]
                         + [f"row {dict(zip(cols, k))} is not in the table being scored" for k in extra], where)
    df = df.iloc[np.argsort([order[k] for k in got], kind="stable")].reset_index(drop=True)
    return df, meta
