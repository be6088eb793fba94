"""How a finished job's process ends (workflow/scripts/run.py): once its outputs are written, skip the
interpreter's teardown where nothing can be lost by it.

Tearing down torch and vLLM (vLLM's engine shutdown and full garbage collection, module finalisers) costs
~2.8 s per vLLM job and ~0.9 s per torch job on this project's 2-core hosts, measured: ~1/10 of
`make run`'s CPU time, for no output. `os._exit` skips it, and skips atexit handlers too, so it is taken
only when no child process and no other non-daemon thread is alive (a GPU job's spawned vLLM engine core,
a torchrun launch): those keep the normal exit, which waits for them.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading


def teardown_skippable() -> bool:
    """No child process of this one (multiprocessing's) and no non-daemon thread but the main one."""
    if multiprocessing.active_children():
        return False
    main = threading.main_thread()
    return not any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate())


def end_job() -> None:
    """Flush logging and the streams (stdout and stderr: run.py points both at the job log), then leave with
    status 0 without the interpreter's teardown where :func:`teardown_skippable`; else return (the normal
    exit follows)."""
    if not teardown_skippable():
        return
    logging.shutdown()
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            s.flush()
        except (AttributeError, ValueError, OSError):  # closed or not a stream: nothing left to write
            pass
    os._exit(0)
