"""A TRL stepwise-supervision dataset enters through config alone: the embedded config plus one variant
`{source: trl, trl: {...}}` is validated, planned, labelled by rule trl_labels (a row whose prompt is an
evaluation problem is dropped, the count recorded) and built into a training set; a malformed row stops
the job naming it; the Hub form is checked and planned without any download; rule export_trl writes the
training set back in TRL's format (trainsets.export_trl)."""
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from prm_lessons.config import ConfigError, validate_config
from prm_lessons.labels.stepwise import StepwiseRowError
from prm_lessons.plan import (
    trainset_inputs,
    trl_exports,
    trl_labels_path,
    trl_local_files,
    trl_variants,
    variants,
)
from prm_lessons.rules.labels import export_trl, trainset, trainsets_table, trl_labels
from prm_lessons.tables import read_table, table_meta

ROOT = Path(__file__).resolve().parents[2]
EVAL_Q = "What is $2 + 3 \\cdot 4$?"
ROWS = [
    {"prompt": "Tom reads 5 pages a day. How many pages in a week?",
     "completions": ["7 * 5 = 35.", "The answer is 35."], "labels": [True, True]},
    # an evaluation problem, re-spaced: decontamination matches the normalised text
    {"prompt": EVAL_Q.replace(" ", "  "), "completions": ["2 + 3 = 5.", "5 * 4 = 20."], "labels": [True, False]},
    {"prompt": "Ann has 3 apples and buys 4. How many?", "completions": ["3 + 4 = 8.", "The answer is 8.", "x"],
     "labels": [False, False, True]},
]
HUB = {"source": "hub", "id": "trl-lib/prm800k", "revision": "82f00e1a1b3b474e895b856d32e6e38c9f58e440"}


def _config(trl: dict) -> dict:
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["trainsets"]["variants"]["mine"] = {"source": "trl", "trl": trl}
    return validate_config(cfg)


def _write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _eval_sets(tmp_path: Path) -> list[str]:
    pd.DataFrame({"question": [EVAL_Q], "answer": ["14"]}).to_parquet(tmp_path / "bench.parquet")
    pd.DataFrame({"problem": ["unrelated"]}).to_parquet(tmp_path / "pb.parquet")
    return [str(tmp_path / "bench.parquet"), str(tmp_path / "pb.parquet")]


def _label_and_build(tmp_path: Path, cfg: dict) -> tuple[pd.DataFrame, dict, Path]:
    spec = variants(cfg)["mine"]
    labels = tmp_path / "labels.parquet"
    trl_labels(inputs={"eval_sets": _eval_sets(tmp_path)}, outputs={"table": str(labels)},
               params={"variant": "mine", "trl": trl_variants(cfg)["mine"]}, wildcards={}, threads=1)
    assert trainset_inputs(cfg, "mine") == {"trl": trl_labels_path("mine")}
    out = {"table": str(tmp_path / "ts.parquet"), "stats": str(tmp_path / "ts.json")}
    trainset(inputs={"trl": str(labels)}, outputs=out, params={"variant": "mine", "spec": spec, "run": {}},
             wildcards={}, threads=1)
    return read_table(out["table"], "trainset"), json.loads(Path(out["stats"]).read_text()), labels


def test_local_jsonl_enters_through_config_and_builds_a_trainset(tmp_path):
    path = _write_jsonl(tmp_path / "mine.jsonl", ROWS)
    cfg = _config({"source": "local", "path": str(path)})
    assert cfg["trainsets"]["variants"]["mine"]["trl"] == {
        "source": "local", "path": str(path), "config": None, "split": "train", "limit": None,
        "malformed": "error", "deduplicate": False}
    assert trl_local_files(trl_variants(cfg)["mine"]) == [str(path)]  # a rule input: a missing file stops the DAG
    ts, st, labels = _label_and_build(tmp_path, cfg)
    summary = table_meta(labels)["summary"]
    assert summary["removed_by_decontamination"] == 1 and summary["instances_before_decontamination"] == 3
    assert EVAL_Q.replace(" ", "  ") not in set(ts["question"])
    assert list(ts["instance_id"]) == ["mine-0000000", "mine-0000002"] and set(ts["source"]) == {"trl"}
    assert [list(x) for x in ts["labels"]] == [[1.0, 1.0], [0.0]] and list(ts["steps"].iloc[1]) == ["3 + 4 = 8."]
    assert st["source"] == "trl" and st["n_instances"] == 2 and st["n_steps"] == 3
    assert st["retained_fraction"] == pytest.approx(2 / 3) and st["paper_n_instances"] is None
    trainsets_table(inputs={"stats": [str(tmp_path / "ts.json")]}, outputs={"csv": str(tmp_path / "t.csv")},
                    params={"run_label": "test"}, wildcards={}, threads=1)
    assert pd.read_csv(tmp_path / "t.csv").iloc[0]["source"] == "trl"


def test_a_malformed_row_stops_the_job_naming_it_unless_skipped(tmp_path):
    bad = {"prompt": "Q?", "completions": ["a.", "b."], "labels": [True, "false"]}
    path = _write_jsonl(tmp_path / "mine.jsonl", ROWS[:1] + [bad])
    with pytest.raises(StepwiseRowError, match=r"mine: row 1 \(0-based, id mine-0000001\).*not a boolean"):
        _label_and_build(tmp_path, _config({"source": "local", "path": str(path)}))
    ts, _, labels = _label_and_build(tmp_path, _config({"source": "local", "path": str(path), "malformed": "skip"}))
    assert list(ts["instance_id"]) == ["mine-0000000"]
    assert table_meta(labels)["malformed_ids"] == {"label_not_bool": ["mine-0000001"]}


def test_hub_form_is_validated_and_planned_without_a_download():
    cfg = _config(dict(HUB))
    spec = trl_variants(cfg)["mine"]
    assert spec["split"] == "train" and spec["config"] is None and trl_local_files(spec) == []
    assert trainset_inputs(cfg, "mine") == {"trl": "results/labels/trl/mine.parquet"}
    for trl, key in (({"source": "hub", "id": "trl-lib/prm800k"}, "trainsets.variants.mine.trl.revision"),
                     ({**HUB, "revision": "main"}, "trainsets.variants.mine.trl.revision"),
                     ({"source": "local"}, "trainsets.variants.mine.trl.path"),
                     ({**HUB, "malformed": "ignore"}, "trainsets.variants.mine.trl.malformed"),
                     ({**HUB, "file": "x"}, "trainsets.variants.mine.trl.file")):
        with pytest.raises(ConfigError, match=f"config error at `{key}`"):
            _config(trl)
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["trainsets"]["variants"]["mine"] = {"source": "trl"}
    with pytest.raises(ConfigError, match="config error at `trainsets.variants.mine.trl`: missing required"):
        validate_config(cfg)
    cfg["trainsets"]["variants"]["mine"] = {"source": "mc", "trl": dict(HUB)}
    with pytest.raises(ValueError, match="`trainsets.variants.mine.trl`: only a variant with `source: trl`"):
        variants(validate_config(cfg))


def test_rule_export_trl_writes_the_trainset_back(tmp_path):
    path = _write_jsonl(tmp_path / "mine.jsonl", ROWS)
    cfg = _config({"source": "local", "path": str(path)})
    assert trl_exports(cfg) == {}  # off by default
    ts, _, _ = _label_and_build(tmp_path, cfg)
    out = tmp_path / "trl" / "mine.jsonl"
    export_trl(inputs={"table": str(tmp_path / "ts.parquet")}, outputs={"rows": str(out)},
               params={"soft_threshold": None}, wildcards={"variant": "mine"}, threads=1)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows == [{"prompt": ROWS[0]["prompt"], "completions": ROWS[0]["completions"], "labels": [True, True]},
                    {"prompt": ROWS[2]["prompt"], "completions": ["3 + 4 = 8."], "labels": [False]}]
    cfg["trainsets"]["export_trl"] = {"enabled": True, "soft_threshold": None}
    hard = trl_exports(cfg)
    assert hard["mine"] is None and "mc_hard" in hard and "mc_soft" not in hard
    cfg["trainsets"]["export_trl"]["soft_threshold"] = 0.25
    assert trl_exports(cfg)["mc_soft"] == 0.25 and trl_exports(cfg)["mc_hard"] is None
