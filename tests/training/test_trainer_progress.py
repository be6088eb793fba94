"""prm_lessons.training.trainer.progress_callback: training logs optimizer steps done / max_steps, rate and ETA
on rank 0 (transformers' own bar is off), counting a resumed run from its checkpoint's step."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

pytest.importorskip("transformers")

from prm_lessons.jobs import progress  # noqa: E402
from prm_lessons.training.trainer import progress_callback  # noqa: E402


def _run(rank0: bool, start: int, steps: int):
    cb = progress_callback()
    state = SimpleNamespace(is_world_process_zero=rank0, max_steps=10, global_step=start)
    cb.on_train_begin(None, state, None)
    for _ in range(steps):
        state.global_step += 1
        cb.on_step_end(None, state, None)
    cb.on_train_end(None, state, None)


@pytest.mark.parametrize("rank0", [True, False])
def test_steps_are_logged_on_rank_zero_only(caplog, monkeypatch, rank0):
    monkeypatch.setattr(progress, "EVERY_S", 0.0)  # a line per step
    with caplog.at_level(logging.INFO, logger="prm_lessons.training.trainer"):
        _run(rank0, start=6, steps=4)  # resumed at step 6
    lines = [r.getMessage().split(" (")[0] for r in caplog.records if r.name == "prm_lessons.training.trainer"]
    assert lines == ([f"trained: {s}/10 steps" for s in (7, 8, 9, 10)] if rank0 else [])
