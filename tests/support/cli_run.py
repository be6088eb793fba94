"""`prm-lessons ARGV` in-process for the CLI tests: (exit status, stdout, stderr)."""
from __future__ import annotations

import contextlib
import io

from prm_lessons.cli import main


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Any exception other than SystemExit (argparse's) propagates: a traceback fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()
