import pandas as pd
import pytest

from prm_lessons.tables import TableError, read_table, table_meta, write_table


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
