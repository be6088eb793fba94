"""Atomic writes and named reads (tables.atomic_path, write_json, write_text_atomic, write_plain_csv,
read_json, read_plain_csv): every writer of a JSON, CSV, JSONL or Parquet file the workflow and the CLIs
write is made to fail at each point of its write (the bytes, the flush to disk, the rename): the file that
was there stays byte for byte, no temporary file is left, and the error names the file. A source scan
keeps new writers on the one helper."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from prm_lessons.labels.stepwise import write_stepwise
from prm_lessons.tables import (
    atomic_path,
    read_json,
    read_plain_csv,
    write_csv,
    write_json,
    write_plain_csv,
    write_table,
    write_text_atomic,
)

ROOT = Path(__file__).resolve().parents[1]
BON = pd.DataFrame([dict(policy="p", prm="human", benchmark="b", metric="maj", n=4, accuracy=0.5, ci_low=0.4,
                          ci_high=0.6, run="r")])


def _jsonl_writer(path):
    from prm_lessons.scoring.score_file import write_jsonl  # torch: only this row needs it

    write_jsonl([{"id": "a", "step_scores": [0.5]}], str(path))


# every writer of the package's files: (name, file name, write(path))
WRITERS = [
    ("write_json", "m.json", lambda p: write_json({"a": 1, "b": [1.5, None]}, p)),
    ("write_text_atomic", "r.md", lambda p: write_text_atomic(p, "# report\n")),
    ("write_plain_csv", "c.csv", lambda p: write_plain_csv(pd.DataFrame({"x": [1, 2]}), p)),
    ("write_csv", "bon.csv", lambda p: write_csv(BON, p, "bon_csv")),
    ("write_table", "t.parquet", lambda p: write_table(pd.DataFrame({"x": [1]}), p, None)),
    ("write_stepwise jsonl", "s.jsonl",
     lambda p: write_stepwise([{"prompt": "Q", "completions": ["a"], "labels": [True]}], p)),
    ("write_stepwise parquet", "s.parquet",
     lambda p: write_stepwise([{"prompt": "Q", "completions": ["a"], "labels": [True]}], p)),
    ("score_file.write_jsonl", "scores.jsonl", _jsonl_writer),
]


def _full_disk(*a, **k):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


THROUGH_A_LIBRARY = {"write_plain_csv", "write_csv", "write_table", "write_stepwise parquet"}

# where the write fails: the flush to disk (a full disk shows there at the latest), the rename
FAILURES = [("fsync", "os.fsync"), ("rename", "os.replace")]


@pytest.mark.parametrize("point, target", FAILURES, ids=[f[0] for f in FAILURES])
@pytest.mark.parametrize("name, fname, write", WRITERS, ids=[w[0] for w in WRITERS])
def test_a_failed_write_leaves_the_old_file_and_names_it(tmp_path, monkeypatch, name, fname, write, point, target):
    path = tmp_path / fname
    write(path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    monkeypatch.setattr(target, _full_disk)
    with pytest.raises(OSError) as info:
        write(path)
    assert str(path) in f"{info.value.filename}", (name, point, info.value)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before, f"{name}: a failed write changed files"


@pytest.mark.parametrize("name, fname, write", WRITERS, ids=[w[0] for w in WRITERS])
def test_an_error_inside_the_write_leaves_no_file(tmp_path, monkeypatch, name, fname, write):
    """The writer's own bytes fail (a full disk during the write): nothing at the path, no temporary file."""
    path = tmp_path / fname
    real_open = open

    def full_disk_open(file, mode="r", *a, **k):
        fh = real_open(file, mode, *a, **k)
        if "w" in mode and str(file).endswith(".tmp"):
            def write(*_a, **_k):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            fh.write = write
        return fh

    monkeypatch.setattr("builtins.open", full_disk_open)
    if name in THROUGH_A_LIBRARY:  # pyarrow and pandas open their files themselves
        pytest.skip("bypasses builtins.open; the fsync and rename failures cover it")
    with pytest.raises(OSError) as info:
        write(path)
    assert str(path) in f"{info.value.filename}"
    assert list(tmp_path.iterdir()) == []


def test_a_device_path_is_written_in_place(tmp_path):
    """A device cannot be replaced by a rename: written in place, the full disk is an OSError naming the
    path. Through a link to /dev/full: a writer that renames would replace the link, never the device."""
    if not Path("/dev/full").is_char_device():
        pytest.skip("no /dev/full")
    link = tmp_path / "out.json"
    link.symlink_to("/dev/full")
    with pytest.raises(OSError) as info:
        write_text_atomic(link, "x" * 10_000)
    assert info.value.filename == str(link) and info.value.errno == errno.ENOSPC
    assert link.is_symlink() and link.is_char_device() and sorted(tmp_path.iterdir()) == [link]


def test_a_directory_is_refused_naming_it(tmp_path):
    with pytest.raises(IsADirectoryError) as info:
        write_json({}, tmp_path)
    assert info.value.filename == str(tmp_path)


@given(st.text(max_size=40), st.integers(min_value=1, max_value=60))
def test_atomic_path_replaces_whole_or_not_at_all(tmp_path_factory, text, cut):
    """Generated contents, the write interrupted after `cut` characters: the old file stays whole."""
    path = tmp_path_factory.mktemp("a") / "f.json"
    write_text_atomic(path, "old\n")
    with pytest.raises(RuntimeError), atomic_path(path) as tmp:
        tmp.write_text((text * 3)[:cut])
        raise RuntimeError("killed")
    assert path.read_text() == "old\n" and sorted(p.name for p in path.parent.iterdir()) == ["f.json"]


def _truncations():
    good = json.dumps({"prm": "p", "benchmarks": {"b": {"n": 3, "ci": [0.1, 0.9]}}}, indent=2)
    return st.integers(min_value=0, max_value=len(good) - 1).map(lambda k: good[:k])


@given(_truncations())
def test_read_json_names_the_file_of_a_truncated_json(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("r") / "metrics.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        read_json(path)


@pytest.mark.parametrize("data", [b"\xff\xfe", b"[" * 100_000, b""], ids=["not-utf8", "deep", "empty"])
def test_read_json_names_the_file_of_bytes_that_are_no_json(tmp_path, data):
    path = tmp_path / "x.json"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        read_json(path)


def test_reads_name_a_missing_file(tmp_path):
    for read in (read_json, read_plain_csv):
        with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "gone"))):
            read(tmp_path / "gone")


@pytest.mark.parametrize("data", [b"", b'a,b\n1,"2\n', b"\xff\xfe,\x00"], ids=["empty", "open-quote", "binary"])
def test_read_plain_csv_names_the_file(tmp_path, data):
    path = tmp_path / "cells.csv"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        read_plain_csv(path)


# direct writes of a JSON/CSV file (not through tables.atomic_path); the rehearsal's fixture builders
# write files of a fake Hub cache, not outputs of the workflow or of a CLI
DIRECT_WRITE = re.compile(r"\.write_text\(json\.dumps|\.to_csv\(|json\.dump\(|open\([^)]*[\"']w[\"']")
ALLOWED = {"tables.py",  # the helpers themselves
           "plan/codedeps.py",  # its own pid-named atomic write (concurrent SLURM jobs)
           "rehearsal/hub_cache.py", "rehearsal/math_shepherd_file.py", "rehearsal/tokenizers.py"}
# single writes allowed by what they write: a log stream a subprocess appends to while it runs (no whole
# file to swap in)
LINE_ALLOWED = {("preflight/cost.py", 'f"{m.name}.log"')}


def test_every_writer_goes_through_the_atomic_helper():
    src = ROOT / "src" / "prm_lessons"
    found = []
    for path in src.rglob("*.py"):
        rel = path.relative_to(src).as_posix()
        if rel in ALLOWED:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if any(rel == f and token in line for f, token in LINE_ALLOWED):
                continue
            if DIRECT_WRITE.search(line) and "atomic_path" not in line and "tmp" not in line:
                found.append(f"{rel}:{i}: {line.strip()}")
    assert not found, "write through tables.atomic_path / write_json / write_text_atomic:\n" + "\n".join(found)


@given(st.lists(st.text(min_size=1, max_size=30), min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_writers_to_one_output_never_mix(tmp_path_factory, contents, rnd):
    """Generated writers open one output together and finish in a generated order: each has its own
    temporary file, the file after every finish is that writer's whole output, none is left behind."""
    path = tmp_path_factory.mktemp("w") / "out.json"
    with contextlib.ExitStack() as stack:
        open_ = [(stack.enter_context(contextlib.ExitStack()), text) for text in contents]
        tmps = []
        for inner, text in open_:
            tmp = inner.enter_context(atomic_path(path))
            tmp.write_bytes(text.encode())
            tmps.append(tmp)
        assert len(set(tmps)) == len(tmps) and all(t.parent == path.parent and t.name.endswith(".tmp") for t in tmps)
        order = list(range(len(open_)))
        rnd.shuffle(order)
        for k in order:
            open_[k][0].close()
            assert path.read_bytes() == contents[k].encode()
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.json"]


def test_an_atomic_write_has_the_umask_mode(tmp_path):
    """A fresh temporary file is private (0600); the output gets what open() would have given it."""
    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "m.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "m.json").stat().st_mode & 0o777 == 0o640
