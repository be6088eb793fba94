import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prm_lessons.tables import (
    MAX_JSON_DEPTH,
    CorruptTableError,
    RowError,
    TableError,
    loads_strict,
    quarantine,
    read_records,
    read_table,
    table_meta,
    write_table,
)
from tamper import flip_last_byte_of_first_column


def _trainset():
    return pd.DataFrame({"instance_id": ["a", "b"], "question": ["q1", "q2"],
                         "steps": [["s1", "s2"], ["t1"]], "labels": [[1.0, 0.0], [0.5]]})


def test_roundtrip_gives_python_lists_and_metadata(tmp_path):
    p = tmp_path / "t.parquet"
    write_table(_trainset(), p, "trainset", meta={"variant": "mc_hard"})
    df = read_table(p, "trainset")
    assert df["steps"].tolist() == [["s1", "s2"], ["t1"]]
    assert isinstance(df["labels"].iloc[0], list)
    assert table_meta(p) == {"variant": "mc_hard"}
    assert not (tmp_path / "t.parquet.tmp").exists()


def test_missing_column_names_file_and_column(tmp_path):
    with pytest.raises(TableError, match=r"missing column\(s\) \['labels'\]"):
        write_table(_trainset().drop(columns="labels"), tmp_path / "x.parquet", "trainset")
    assert not (tmp_path / "x.parquet").exists()


def test_read_missing_file_is_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such table"):
        read_table(tmp_path / "nope.parquet", "trainset")


def test_flipped_byte_is_caught_by_the_page_checksum(tmp_path):
    p = tmp_path / "t.parquet"
    write_table(_trainset(), p, "trainset")
    flip_last_byte_of_first_column(p)
    with pytest.raises(CorruptTableError, match=r"t\.parquet: corrupt table \(.*CRC"):
        read_table(p, "trainset")


def test_truncated_table_names_the_file(tmp_path):
    p = tmp_path / "t.parquet"
    write_table(_trainset(), p, "trainset", meta={"k": 1})
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    for read in (lambda: read_table(p, "trainset"), lambda: table_meta(p), lambda: read_records(p)):
        with pytest.raises(CorruptTableError, match=r"t\.parquet: corrupt table"):
            read()


def test_recorded_row_count_and_kind_are_checked(tmp_path):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "t.parquet"
    write_table(_trainset(), p, "trainset")
    table = pq.read_table(p)
    md = dict(table.schema.metadata)
    # a valid Parquet file, one row short of what its producer wrote (e.g. a hand edit, a bad copy)
    pq.write_table(table.slice(0, 1).replace_schema_metadata(md), p)
    with pytest.raises(CorruptTableError, match="1 rows, 2 written"):
        read_table(p, "trainset")
    md[b"prm_lessons.integrity"] = json.dumps({"kind": "judge", "rows": 2}).encode()
    pq.write_table(pa.Table.from_pandas(_trainset(), preserve_index=False).replace_schema_metadata(md), p)
    with pytest.raises(TableError, match="a 'judge' table where a 'trainset' table is expected"):
        read_table(p, "trainset")
    assert len(read_table(p, None)) == 2  # kind None: any table


def test_quarantine_moves_only_a_job_input(tmp_path):
    p = tmp_path / "results" / "t.parquet"
    p.parent.mkdir()
    write_table(_trainset(), p, "trainset")
    assert "left in place" in quarantine(p, [str(tmp_path / "other.parquet")], workdir=tmp_path) and p.exists()
    msg = quarantine(p, [str(p)], workdir=tmp_path)
    assert not p.exists() and (p.parent / "t.parquet.corrupt").exists() and "producer rule" in msg


# where a user's own file may lie: beside or above the working directory, in its own folders other than
# results/, in results/ but named by the config, or reached through a link from results/
USER_PLACES = ["../data/set.parquet", "data/set.parquet", "set.parquet", "resources/data/set.parquet",
               "config/set.parquet", "results/mine/set.parquet", "results/link.parquet", "/abs/set.parquet"]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(place=st.sampled_from(USER_PLACES), name=st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
       relative=st.booleans())
def test_quarantine_never_moves_a_file_of_the_user(tmp_path_factory, place, name, relative):
    """A corrupt `source: local` file was renamed to <name>.corrupt outside the working directory."""
    root = tmp_path_factory.mktemp("q")
    wd = root / "a" / "wd"
    (wd / "results").mkdir(parents=True)
    place = place.replace("set", name)
    if place.startswith("/abs/"):
        user = root / "elsewhere" / place[5:]
    elif place == "results/link.parquet":
        user = root / "outside" / f"{name}.parquet"
    else:
        user = wd / place
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_bytes(b"not a parquet file")
    given_path = user
    named = []
    if place == "results/link.parquet":
        given_path = wd / "results" / "link.parquet"
        given_path.symlink_to(user)
    elif place.startswith("results/"):
        named = [str(user.relative_to(wd)) if relative else str(user)]
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    msg = quarantine(given_path, [str(given_path)], user_files=named, workdir=wd)
    assert "left untouched" in msg and str(given_path) in msg, msg
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert user.read_bytes() == b"not a parquet file"


def test_a_users_corrupt_parquet_names_the_file_and_promises_no_rule(tmp_path):
    p = tmp_path / "mine.parquet"
    p.write_bytes(b"PAR1 broken")
    with pytest.raises(CorruptTableError) as exc:
        read_records(p)
    assert str(p) in str(exc.value) and "producer rule" not in str(exc.value)


def test_records_that_are_not_objects_or_not_utf8_name_file_and_line(tmp_path):
    j = tmp_path / "rows.jsonl"
    j.write_bytes(b'{"a": 1}\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"rows\.jsonl: line 2 is a JSON list, not an object"):
        read_records(j)
    j.write_bytes(b'{"a": 1}\n\n{"a": "\xff"}\n')
    with pytest.raises(ValueError, match=r"rows\.jsonl: line 3 is not UTF-8 \(byte 0xff"):
        read_records(j)
    a = tmp_path / "rows.json"
    a.write_text('[{"a": 1}, "x", 3]')
    with pytest.raises(ValueError, match=r"rows\.json: element\(s\) 1, 2 of the list are not an object"):
        read_records(a)
    a.write_bytes(b'[{"a": 1},\n {"a": "\xfe"}]')
    with pytest.raises(ValueError, match=r"rows\.json: line 2 is not UTF-8"):
        read_records(a)


# -- strict JSON rows (generated) ---------------------------------------------------------------------------



@given(key=st.text(max_size=5), a=st.integers(), b=st.integers(), depth=st.integers(0, 4))
def test_a_repeated_key_at_any_depth_is_refused(key, a, b, depth):
    k = json.dumps(key)
    text = "{%s: %d, %s: %d}" % (k, a, k, b)
    for _ in range(depth):
        text = '{"x": [%s]}' % text
    with pytest.raises(RowError, match="appears twice"):
        loads_strict(text)


@given(token=st.sampled_from(["NaN", "Infinity", "-Infinity"]), depth=st.integers(0, 3))
def test_non_finite_constants_are_refused(token, depth):
    text = token
    for _ in range(depth):
        text = '{"v": [%s]}' % text
    with pytest.raises(RowError, match="not a JSON value"):
        loads_strict(text, constants=False)
    loads_strict(text)  # score files may hold them: the field checks decide, naming the row


@given(extra=st.integers(1, 100_000), kind=st.sampled_from(["[", '{"a":']))
def test_deep_nesting_is_an_error_not_a_recursion_traceback(extra, kind):
    n = MAX_JSON_DEPTH + extra
    close = "]" if kind == "[" else "}"
    with pytest.raises(RowError, match="nested more than"):
        loads_strict(kind * n + "1" + close * n)


def test_read_records_names_the_file_of_a_deep_row(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"a": 1}\n' + '{"a":' * 5000 + "1" + "}" * 5000 + "\n")
    with pytest.raises(ValueError, match=r"r\.jsonl: line 2: nested more than"):
        read_records(f)
    assert loads_strict('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
