"""The tokens file of rule tokenize_trainset (training/tokens.py): the same instances and data stats as
tokenising inside train_prm, int32 token ids, a bad row named, a file made for another tokenizer,
max_length or label_type refused, and a training on it identical to one that tokenises itself."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from _prm_tiny import signal_rows, tiny_base, write_trainset  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.rules import training as rules_training  # noqa: E402
from prm_lessons.tables import table_meta  # noqa: E402
from prm_lessons.training import data as train_data  # noqa: E402
from prm_lessons.training import launch as train_launch  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import tokens as train_tokens  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

FAST = {"epochs": 2, "batch_size": 4, "learning_rate": 1e-3, "save_steps": 0, "max_length": 256,
        "logging_steps": 1, "gradient_checkpointing": False}


@pytest.fixture(scope="module")
def base_plain(tmp_path_factory):
    """SmolLM2-like: no <extra_0> in the vocabulary, tokenisation adds it (as training does)."""
    return tiny_base(tmp_path_factory.mktemp("base_plain"), with_step_token=False)


@pytest.fixture(scope="module")
def trainset(tmp_path_factory):
    # one long row: truncation at FAST's max_length drops steps, so the stats are not all trivial
    rows = signal_rows(12)
    rows[3] = {**rows[3], "steps": rows[3]["steps"] * 8, "labels": list(rows[3]["labels"]) * 8}
    return write_trainset(tmp_path_factory.mktemp("ts") / "hard.parquet", rows)


@pytest.fixture(scope="module")
def tokens_file(tmp_path_factory, base_plain, trainset):
    out = tmp_path_factory.mktemp("tok") / "hard.parquet"
    train_tokens.tokenize_trainset(str(trainset), str(base_plain), FAST, "hard", out)
    return out


def _in_training(base, trainset, settings=FAST, label_type="hard"):
    """(instances, stats, tokenizer, format) as train_prm tokenises: load_base + ensure_step_token."""
    s = train_settings.settings_from(settings)
    backbone, tok = P.load_base(str(base), torch.float32)
    P.ensure_step_token(tok, backbone, s["step_token"])
    fmt = P.step_format(s)
    return (*train_data.training_instances(str(trainset), tok, fmt, s, label_type), tok, fmt)


def test_tokens_file_holds_what_training_would_tokenise(base_plain, trainset, tokens_file):
    want, want_stats, tok, fmt = _in_training(base_plain, trainset)
    got, stats = train_tokens.read_tokens(tokens_file, tok, fmt, FAST["max_length"], "hard")
    assert got == want and stats == want_stats
    assert stats["steps_dropped"] > 0 and stats["instances_truncated"] == 1  # the long row, counted
    schema = pq.read_schema(tokens_file)
    assert schema.field("input_ids").type == pa.list_(pa.int32())
    assert schema.field("step_pos").type == pa.list_(pa.int32())
    meta = table_meta(tokens_file)
    assert meta["data"] == want_stats and meta["trainset"] == str(trainset)
    assert meta["tokens"]["max_length"] == FAST["max_length"] and meta["tokens"]["label_type"] == "hard"
    assert meta["tokens"]["step_token_id"] == tok.convert_tokens_to_ids("<extra_0>")


@pytest.mark.parametrize("change,named", [
    ({"max_length": 512}, "max_length"),
    ({"label_type": "soft"}, "label_type"),
    ({"step_token": "<step>"}, "format"),
    ({"tokenizer": "qwen"}, "tokenizer"),
])
def test_a_file_made_for_other_token_ids_is_refused(tmp_path, base_plain, tokens_file, change, named):
    s = train_settings.settings_from({**FAST, **{k: v for k, v in change.items() if k in ("max_length", "step_token")}})
    base = tiny_base(tmp_path / "qwen", with_step_token=True, arch="qwen2") if "tokenizer" in change else base_plain
    tok = train_tokens.load_tokenizer(str(base), s["step_token"])
    with pytest.raises(train_settings.TrainingError, match=f"{tokens_file}: tokens made with .*{named}=.*rerun"):
        train_tokens.read_tokens(tokens_file, tok, P.step_format(s), s["max_length"], change.get("label_type", "hard"))


def test_a_bad_row_names_its_id(tmp_path, base_plain):
    rows = signal_rows(4)
    rows[2] = {**rows[2], "instance_id": "bad-7", "labels": [0.5] * len(rows[2]["steps"])}
    ts = write_trainset(tmp_path / "bad.parquet", rows)
    with pytest.raises(train_settings.TrainingError, match="bad-7.*hard-label"):
        train_tokens.tokenize_trainset(str(ts), str(base_plain), FAST, "hard", tmp_path / "tok.parquet")
    assert not (tmp_path / "tok.parquet").exists()


def test_a_row_that_cannot_be_tokenised_names_its_id(tmp_path, base_plain, trainset):
    with pytest.raises(train_settings.TrainingError, match="trainset row '.+': the prompt before the steps holds"):
        train_tokens.tokenize_trainset(str(trainset), str(base_plain), {**FAST, "system_prompt": "mark <extra_0>"},
                                       "hard", tmp_path / "tok.parquet")


def test_nothing_left_within_max_length_fails_at_tokenisation(tmp_path, base_plain, trainset):
    with pytest.raises(train_settings.TrainingError, match="no trainable instance"):
        train_tokens.tokenize_trainset(str(trainset), str(base_plain), {**FAST, "max_length": 5}, "hard",
                                       tmp_path / "tok.parquet")


@pytest.mark.parametrize("mode", ["full", "lora"])
def test_training_on_the_tokens_file_is_training_on_the_trainset(tmp_path, base_plain, trainset, tokens_file, mode):
    s = {**FAST, "mode": mode}
    own = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "own"), s, "hard",
                      checkpoint_dir=str(tmp_path / "ck1"), threads=1)
    read = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "read"), s, "hard",
                       checkpoint_dir=str(tmp_path / "ck2"), threads=1, tokens=str(tokens_file))
    assert read["loss_history"] == own["loss_history"] and read["train_tokens"] == own["train_tokens"]
    assert read["data"] == own["data"] and read["tokens_file"] == str(tokens_file) and own["tokens_file"] is None
    assert set(read["phase_seconds"]) == set(T.PHASES)


def test_rule_functions_tokenize_then_train_on_the_tokens(tmp_path, base_plain, trainset):
    tokens = tmp_path / "results" / "trainsets" / "tokens" / "v1.parquet"
    rules_training.tokenize_trainset(inputs={"trainset": str(trainset), "base": []}, outputs={"tokens": str(tokens)},
                                     params={"base_dir": str(base_plain), "tokens": {"max_length": 256},
                                             "label_type": "hard"},
                                     wildcards={"variant": "v1"}, threads=1)
    out = tmp_path / "results" / "prms" / "v1"
    rules_training.train_prm(inputs={"trainset": str(trainset), "tokens": str(tokens), "features": []},
                             outputs={"model": str(out), "metrics": str(out / T.METRICS_FILE)},
                             params={"base_dir": str(base_plain), "training": {**FAST, "mode": "lora", "epochs": 1},
                                     "label_type": "hard", "checkpoint_dir": str(tmp_path / "ck")},
                             wildcards={"variant": "v1"}, threads=1)
    saved = json.loads((out / T.METRICS_FILE).read_text())
    assert saved["tokens_file"] == str(tokens) and saved["data"] == table_meta(tokens)["data"]


@pytest.mark.slow
def test_two_ranks_read_one_tokens_file(tmp_path, base_plain, trainset, tokens_file):
    """The torchrun path: the spec carries the tokens file to every rank (gloo, 2 CPU processes)."""
    s = {**FAST, "mode": "full", "max_steps": 2, "batch_size": 2, "gpus": 0, "processes": 2}
    m = train_launch.run_training(str(trainset), str(base_plain), str(tmp_path / "prm"), s, "hard",
                                  checkpoint_dir=str(tmp_path / "ck"), threads=2, tokens=str(tokens_file))
    assert m["world_size"] == 2 and m["tokens_file"] == str(tokens_file) and m["global_steps"] == 2
