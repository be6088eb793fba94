"""prm_lessons.jobs.progress: long loops and single vLLM calls log done / total, rate and ETA at most once per
interval of work, with a last line at the end of a call that logged any; short calls log nothing."""
from __future__ import annotations

import logging

import pytest

from prm_lessons.jobs import progress

LOG = logging.getLogger("prm_lessons.test_progress")


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def _lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == LOG.name]


def test_line_counts_rate_and_eta():
    assert progress.line("scored", 30, 120, 60.0, "inputs") == "scored: 30/120 inputs (0.50 inputs/s, ETA 3 min 00 s)"
    # a resumed run: the rate is of the steps of this run only
    assert progress.line("trained", 150, 200, 100.0, "steps", before=100) == \
        "trained: 150/200 steps (0.50 steps/s, ETA 1 min 40 s)"
    assert progress.duration(7500) == "2 h 05 min"


def test_progress_logs_once_per_interval_of_work_and_at_the_end(caplog):
    clock = Clock()
    with caplog.at_level(logging.INFO, logger=LOG.name):
        p = progress.Progress(LOG, "scored", 100, "inputs", every_s=60, clock=clock)
        for step in range(10):  # 10 batches of 10 inputs, 25 s each
            clock.t += 25
            p.advance(10)
        p.close()
    lines = _lines(caplog)
    # after 75 s (30 done), 150 s (60), 225 s (90): each 60 s or more after the one before; then the end
    assert [ln.split(" (")[0] for ln in lines] == ["scored: 30/100 inputs", "scored: 60/100 inputs",
                                                   "scored: 90/100 inputs", "scored: 100/100 inputs"]
    assert lines[0].endswith("(0.40 inputs/s, ETA 2 min 55 s)")


def test_a_call_shorter_than_the_interval_logs_nothing(caplog):
    clock = Clock()
    with caplog.at_level(logging.INFO, logger=LOG.name):
        p = progress.Progress(LOG, "scored", 5, every_s=60, clock=clock)
        for _ in range(5):
            clock.t += 1
            p.advance()
        p.close()
    assert _lines(caplog) == []


def _drive_like_vllm(bar_cls, n, clock, seconds_each):
    """What vLLM 0.32's LLM._run_engine does with a use_tqdm callable (entrypoints/common/offline.py)."""
    assert list(bar_cls(range(n), desc="Rendering prompts")) == list(range(n))  # maybe_tqdm over the prompts
    bar = bar_cls(total=n, desc="Processed prompts", dynamic_ncols=True,
                  postfix="est. speed input: 0.00 toks/s, output: 0.00 toks/s")
    for _ in range(n):
        clock.t += seconds_each
        bar.postfix = "est. speed input: 1.00 toks/s, output: 1.00 toks/s"
        bar.update(1)
        if bar.n == n:
            bar.refresh()
    bar.close()


def test_vllm_bar_logs_inside_one_engine_call(caplog, capsys, monkeypatch):
    import tqdm.std

    clock = Clock()
    monkeypatch.setattr(tqdm.std, "time", clock)  # tqdm reads its clock from there
    with caplog.at_level(logging.INFO, logger=LOG.name):
        _drive_like_vllm(progress.vllm_bar(LOG, "judged", every_s=60), 8, clock, 25.0)
    lines = _lines(caplog)
    assert [ln.split(" (")[0] for ln in lines] == ["judged: 3/8 requests", "judged: 6/8 requests",
                                                   "judged: 8/8 requests"]
    assert "ETA 2 min 05 s" in lines[0]
    assert capsys.readouterr().err == ""  # no bar drawn on stderr (the job log gets the lines only)


def test_vllm_bar_stays_silent_on_a_short_call(caplog, monkeypatch):
    import tqdm.std

    clock = Clock()
    monkeypatch.setattr(tqdm.std, "time", clock)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        _drive_like_vllm(progress.vllm_bar(LOG, "judged", every_s=60), 8, clock, 1.0)
    assert _lines(caplog) == []


@pytest.mark.parametrize("every_s", [0.0, None])
def test_interval_default_is_read_at_each_call(monkeypatch, every_s):
    monkeypatch.setattr(progress, "EVERY_S", 5.0)
    assert progress.Progress(LOG, "x", 1, every_s=every_s).every_s == (5.0 if every_s is None else 0.0)
