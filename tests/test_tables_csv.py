"""The CSV stage tables (results/tables/{bon,judge_bon,search,bon_baselines,processbench,trainsets}.csv):
tables.write_csv / read_csv check columns, keys, dtypes and units (fractions), write atomically, and a
sidecar catches bytes changed after the write; every writer's columns are in its kind's schema."""
import json

import pandas as pd
import pytest

from prm_lessons import tables as T
from prm_lessons.tables import CorruptTableError, TableError, read_csv, write_csv


def _bon(**over) -> pd.DataFrame:
    rows = [dict(policy="p", prm="human", benchmark=b, metric=m, n=4, accuracy=0.5, ci_low=0.4, ci_high=0.6, run="r")
            for b in ("arith", "average") for m in ("pass", "maj", "prm_product")]
    df = pd.DataFrame(rows)
    for c, v in over.items():
        df.loc[1, c] = v
    return df


def test_roundtrip_keeps_the_frame_and_writes_a_sidecar(tmp_path):
    p = tmp_path / "bon.csv"
    write_csv(_bon(), p, "bon_csv")
    back = read_csv(p, "bon_csv")
    pd.testing.assert_frame_equal(back, _bon())
    side = json.loads((tmp_path / "bon.csv.integrity.json").read_text())
    assert side["kind"] == "bon_csv" and side["rows"] == 6 and len(side["sha256"]) == 64
    assert sorted(f.name for f in tmp_path.iterdir()) == ["bon.csv", "bon.csv.integrity.json"]  # no .tmp left


def test_missing_column_names_the_file_and_the_column(tmp_path):
    p = tmp_path / "bon.csv"
    with pytest.raises(TableError, match=r"bon\.csv: missing column\(s\) \['ci_low'\]"):
        write_csv(_bon().drop(columns="ci_low"), p, "bon_csv")
    assert not p.exists()  # nothing written
    _bon().drop(columns="ci_low").to_csv(p, index=False)  # by hand: the reader refuses it too
    with pytest.raises(TableError, match=r"bon\.csv: missing column\(s\) \['ci_low'\]"):
        read_csv(p, "bon_csv")


def test_the_old_spelling_N_is_a_missing_n(tmp_path):
    p = tmp_path / "bon.csv"
    _bon().rename(columns={"n": "N"}).to_csv(p, index=False)
    with pytest.raises(TableError, match=r"bon\.csv: missing column\(s\) \['n'\]"):
        read_csv(p, "bon_csv")


def test_duplicate_key_names_the_file_and_the_row(tmp_path):
    df = pd.concat([_bon(), _bon().iloc[[2]]], ignore_index=True)
    with pytest.raises(TableError, match=r"bon\.csv: duplicate row id \{'policy': 'p', 'prm': 'human', "
                                         r"'benchmark': 'arith', 'metric': 'prm_product', 'n': 4\}"):
        write_csv(df, tmp_path / "bon.csv", "bon_csv")
    # policy is optional; without it the other key columns must be unique
    df.drop(columns="policy").to_csv(tmp_path / "old.csv", index=False)
    with pytest.raises(TableError, match=r"old\.csv: duplicate row id"):
        read_csv(tmp_path / "old.csv", "bon_csv")
    # the same (prm, benchmark, metric, n) under two policies is two rows
    two = pd.concat([_bon(), _bon().assign(policy="q")], ignore_index=True)
    write_csv(two, tmp_path / "two.csv", "bon_csv")
    assert len(read_csv(tmp_path / "two.csv", "bon_csv")) == 12


def test_percent_in_a_fraction_column_names_the_file_the_column_and_the_value(tmp_path):
    with pytest.raises(TableError, match=r"bon\.csv: column 'accuracy' row 2: 50\.0 is outside \[-1, 1\]: "
                                         r"the column is a fraction, not percent"):
        write_csv(_bon(accuracy=50.0), tmp_path / "bon.csv", "bon_csv")
    base = pd.DataFrame([dict(policy="p", run="r", benchmark="arith", n_problems=6, n=4, **{"pass": 50.0, "maj": 0.3,
                                                                                            "mean_acc": 0.2})])
    base.to_csv(tmp_path / "bon_baselines.csv", index=False)  # the old percent table
    with pytest.raises(TableError, match=r"bon_baselines\.csv: column 'pass' row 1: 50\.0 is outside"):
        read_csv(tmp_path / "bon_baselines.csv", "bon_baselines_csv")
    # a paired difference (metric "<m>-maj") is a fraction in [-1, 1]; missing intervals are fine
    write_csv(_bon(metric="prm_product-maj", accuracy=-0.25, ci_low=float("nan")), tmp_path / "d.csv", "bon_csv")


@pytest.mark.parametrize("kind,col,value,what", [
    ("bon_csv", "n", 2.5, "is not a whole number"),
    ("bon_csv", "n", "four", "is not a number"),
    ("processbench_csv", "f1", "high", "is not a number"),
    ("trainsets_csv", "positive_rate", 63.0, "is outside"),
])
def test_dtypes_are_checked(tmp_path, kind, col, value, what):
    frames = {
        "bon_csv": _bon(),
        "processbench_csv": pd.DataFrame([dict(prm="h", subset=s, n=10, error_acc=.5, correct_acc=.6, f1=.55)
                                          for s in ("gsm8k", "average")]),
        "trainsets_csv": pd.DataFrame([dict(variant=v, source="mc", label_type="hard", threshold=0.0, n_instances=5,
                                            n_steps=20, positive_rate=.6, retained_fraction=.9) for v in ("a", "b")]),
    }
    df = frames[kind].astype({col: object})
    df.loc[1, col] = value
    df.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(TableError, match=rf"t\.csv: column '{col}' row 2: .* {what}"):
        read_csv(tmp_path / "t.csv", kind)


def test_bytes_changed_after_the_write_are_corrupt(tmp_path):
    p = tmp_path / "bon.csv"
    write_csv(_bon(), p, "bon_csv")
    good = p.read_bytes()
    p.write_bytes(good.replace(b"0.5", b"0.7", 1))  # still a valid table: only the checksum sees it
    with pytest.raises(CorruptTableError, match=r"bon\.csv: corrupt table \(its bytes differ"):
        read_csv(p, "bon_csv")
    p.write_bytes(good[: len(good) // 2])  # truncated
    with pytest.raises(CorruptTableError) as exc:
        read_csv(p, "bon_csv")
    assert exc.value.path == str(p)  # run.py moves exactly this file aside
    p.write_bytes(good)
    assert len(read_csv(p, "bon_csv")) == 6


def test_the_recorded_kind_is_checked(tmp_path):
    p = tmp_path / "search.csv"
    write_csv(_bon().drop(columns="policy").assign(n_problems=6), p, "search_csv")
    with pytest.raises(TableError, match=r"search\.csv: a 'search_csv' table where a 'bon_csv' table is expected"):
        read_csv(p, "bon_csv")
    with pytest.raises(TableError, match="'samples' is no CSV table kind"):
        write_csv(_bon(), p, "samples")


def test_a_failed_write_leaves_the_previous_table_intact(tmp_path):
    p = tmp_path / "bon.csv"
    write_csv(_bon(), p, "bon_csv")
    before = p.read_bytes(), (tmp_path / "bon.csv.integrity.json").read_bytes()
    with pytest.raises(TableError):
        write_csv(_bon(accuracy=95.0), p, "bon_csv")
    assert (p.read_bytes(), (tmp_path / "bon.csv.integrity.json").read_bytes()) == before
    assert len(read_csv(p, "bon_csv")) == 6


def test_every_writer_column_has_a_dtype_and_every_schema_column_is_written():
    from prm_lessons.labels.audit import COLUMNS as AUDIT_COLUMNS
    from prm_lessons.labels.trainsets import CSV_COLUMNS
    from prm_lessons.metrics.checker import BON_COLUMNS as CHECK_BON_COLUMNS
    from prm_lessons.metrics.checker import VALIDATION_COLUMNS as CHECK_COLUMNS
    from prm_lessons.metrics.judge_processbench import COLUMNS as JUDGE_PB_COLUMNS
    from prm_lessons.metrics.prmbench import PRMBENCH_LONG_COLUMNS
    from prm_lessons.metrics.processbench import PROCESSBENCH_LONG_COLUMNS
    from prm_lessons.metrics.resampled import PAIRED_COLUMNS
    from prm_lessons.rules.evaluation import TABLE_COLUMNS
    from prm_lessons.rules.sampling import BASELINE_COLUMNS
    from prm_lessons.rules.search import TABLE_COLUMNS as SEARCH_COLUMNS
    from prm_lessons.rules.verifiers import TABLE_COLUMNS as JUDGE_COLUMNS

    written = {"bon_csv": TABLE_COLUMNS["bon"] + ["run"], "processbench_csv": PROCESSBENCH_LONG_COLUMNS + ["run"],
               "search_csv": ["run"] + SEARCH_COLUMNS, "judge_bon_csv": JUDGE_COLUMNS,
               "bon_baselines_csv": BASELINE_COLUMNS, "trainsets_csv": CSV_COLUMNS + ["run"],
               "judge_processbench_csv": JUDGE_PB_COLUMNS + ["run"],
               "label_audit_csv": AUDIT_COLUMNS + ["run"], "process_check_csv": CHECK_COLUMNS + ["run"],
               "process_check_bon_csv": CHECK_BON_COLUMNS + ["run"],
               "processbench_paired_csv": PAIRED_COLUMNS + ["run"],
               "prmbench_csv": PRMBENCH_LONG_COLUMNS + ["run"]}
    assert set(written) == set(T.CSV_DTYPES)
    for kind, cols in written.items():
        assert set(cols) == set(T.CSV_DTYPES[kind]), kind
        assert set(T.SCHEMAS[kind]) <= set(cols) and set(T.KEYS[kind]) <= set(cols), kind
        assert "N" not in cols, kind  # one spelling: n
