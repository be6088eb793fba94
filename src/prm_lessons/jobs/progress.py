"""Progress lines of long jobs: `what: done/total unit (rate unit/s, ETA ...)`, at most once per
`every_s` seconds of work (the first after `every_s`, so a short call logs nothing), and a last line at
the end of a call that logged any. `Progress` follows a loop (batches of a forward pass, requests of the
transformers engine, training steps); `vllm_bar` is vLLM's `use_tqdm` hook, so one `LLM.generate` /
`LLM.encode` call over thousands of prompts logs as its requests finish, in the same single call (the
outputs, their order and seeds are unchanged). A job's log then shows it is alive, how far it got when
killed, and when it will end.
"""
from __future__ import annotations

import logging
import time

EVERY_S = 60.0  # seconds of work between two lines of one call (read at each call: tests set it to 0)


def duration(seconds: float) -> str:
    """`45 s`, `12 min 03 s`, `2 h 05 min`."""
    s = int(round(max(seconds, 0.0)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def line(what: str, done: int, total: int | None, seconds: float, unit: str, before: int = 0) -> str:
    """One progress line: done / total, rate (of the `done - before` units of these `seconds`) and the ETA
    at that rate."""
    rate = (done - before) / seconds if seconds > 0 else 0.0
    if total and rate > 0:
        eta = f", ETA {duration((total - min(done, total)) / rate)}"
    else:
        eta = ""
    return f"{what}: {done}/{total if total is not None else '?'} {unit} ({rate:.2f} {unit}/s{eta})"


class Progress:
    """A loop of `total` units: `advance(n)` after each piece of work; a line when `every_s` seconds have
    passed since the last one (or since the start), and at `close()` if any line was written."""

    def __init__(self, logger: logging.Logger, what: str, total: int, unit: str = "inputs",
                 every_s: float | None = None, clock=None, done: int = 0):
        """`done`: units finished before this call (a resumed training's steps): counted in done / total,
        not in the rate."""
        self.logger, self.what, self.total, self.unit = logger, what, total, unit
        self.every_s = EVERY_S if every_s is None else every_s
        self.clock = clock or time.monotonic
        self.start = self.last = self.clock()
        self.done = self.before = done
        self.logged: int | None = None  # `done` at the last line written

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= self.every_s:
            self._write(now)

    def close(self) -> None:
        if self.logged is not None and self.logged != self.done:
            self._write(self.clock())

    def _write(self, now: float) -> None:
        self.logger.info(line(self.what, self.done, self.total, now - self.start, self.unit, self.before))
        self.last, self.logged = now, self.done


class _NoOutput:
    """The bar's file: every line goes to the logger instead (the job log), none to stderr."""

    def write(self, _text: str) -> None:
        pass

    def flush(self) -> None:
        pass


def vllm_bar(logger: logging.Logger, what: str, unit: str = "requests", every_s: float | None = None):
    """A tqdm class for vLLM's `use_tqdm` (vLLM 0.32: `LLM.generate/encode(..., use_tqdm=<callable>)`) that
    writes `line(...)` to `logger` every `every_s` seconds instead of drawing a bar. vLLM counts finished
    requests (a request's n samples count n)."""
    from tqdm import tqdm  # lazy: only the jobs that call vLLM (tqdm comes with it)

    every_s = EVERY_S if every_s is None else every_s

    class LoggedBar(tqdm):
        monitor_interval = 0  # no monitor thread: lines come only from vLLM's own updates

        def __init__(self, *args, **kwargs):
            kwargs.update(file=_NoOutput(), mininterval=every_s, maxinterval=max(every_s, 1.0), delay=every_s,
                          dynamic_ncols=False)
            self._logged_n = 0
            super().__init__(*args, **kwargs)

        def display(self, msg=None, pos=None):
            # vLLM refreshes the bar when the last request finishes: a call shorter than every_s stays silent
            if self.n and self.n != self._logged_n and self.format_dict["elapsed"] >= every_s:
                self._logged_n = self.n
                label = what if self.desc in ("", "Processed prompts") else f"{what} ({self.desc.lower()})"
                logger.info(line(label, int(self.n), self.total, self.format_dict["elapsed"], unit))
            return True

    return LoggedBar
