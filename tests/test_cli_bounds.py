"""Resource and seed arguments of every `prm-lessons` command are bounded as the config's keys are
(generated values outside each bound): an argparse error naming the flag, exit status 2, nothing run.
`--bootstrap 2000000000` would allocate resamples x problems indices; `--workers 10**6` would start a
million processes; a seed past 2**32-1 fails in numpy."""
from __future__ import annotations

import contextlib
import io

from hypothesis import given
from hypothesis import strategies as st

from prm_lessons.cli import build_parser, main
from prm_lessons.grading.pool import MAX_WORKERS
from prm_lessons.metrics.stats import MAX_BOOTSTRAP

REQUIRED = {  # each command's other required arguments (never read: argparse stops first)
    "grade": ["grade", "--input", "in.jsonl", "--output", "out.jsonl"],
    "score": ["score", "--prm", "p", "--input", "in.jsonl", "--output", "out.jsonl"],
    "eval processbench": ["eval", "processbench", "--data", "d", "--predictions", "p.jsonl", "--output", "m.json"],
    "eval bon": ["eval", "bon", "--samples", "s.jsonl", "--output", "m.json"],
}
# (command, flag, lowest accepted, highest accepted)
BOUNDS = [
    ("grade", "--workers", 1, MAX_WORKERS),
    ("eval bon", "--workers", 1, MAX_WORKERS),
    ("eval bon", "--bootstrap", 0, MAX_BOOTSTRAP),
    ("eval processbench", "--bootstrap", 0, MAX_BOOTSTRAP),
    ("eval bon", "--seed", 0, 2**32 - 1),
    ("eval processbench", "--seed", 0, 2**32 - 1),
    ("score", "--batch-size", 1, 65_536),
    ("score", "--batch-tokens", 1, 2**24),
]


def _out_of(bounds):
    _, _, low, high = bounds
    return st.one_of(st.integers(max_value=low - 1), st.integers(min_value=high + 1, max_value=10**30))


@given(data=st.data(), case=st.sampled_from(BOUNDS))
def test_a_value_outside_the_bound_is_an_argparse_error_naming_the_flag(data, case):
    command, flag, low, high = case
    value = data.draw(_out_of(case))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main([*REQUIRED[command], flag, str(value)])
        except SystemExit as exc:
            code = exc.code
    assert code == 2
    assert f"argument {flag}: expected an integer in {low:,}..{high:,}, got {value}" in err.getvalue()
    assert "Traceback" not in err.getvalue()


@given(case=st.sampled_from(BOUNDS), data=st.data())
def test_the_bounds_themselves_parse(case, data):
    command, flag, low, high = case
    value = data.draw(st.sampled_from([low, high]))
    args = build_parser().parse_args([*REQUIRED[command], flag, str(value)])
    assert getattr(args, flag.lstrip("-").replace("-", "_")) == value
