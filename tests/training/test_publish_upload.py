"""prm_lessons.training.publish and rule upload_prm's function, against a stand-in for huggingface_hub's HfApi (the
tests never reach the Hub): one commit with every file of the PRM directory and the card, which reports
the evaluation the workflow has; the receipt. Config and plan: tests/plan/test_publish.py."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from prm_lessons.rules import training as rules_training
from prm_lessons.training import model_card, publish


class FakeApi:
    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))
        return f"https://huggingface.co/{repo_id}"

    def create_commit(self, repo_id, operations, **kw):
        self.calls.append(("create_commit", repo_id, {**kw, "operations": operations}))
        return SimpleNamespace(oid="c" * 40, commit_url=f"https://huggingface.co/{repo_id}/commit/{'c' * 40}")


def _prm_dir(root: Path) -> Path:
    d = root / "results" / "prms" / "mc_hard"
    (d / "lora_adapter").mkdir(parents=True)
    for f in ("config.json", "model.safetensors", "prm_head.safetensors", "train_metrics.json", "README.md",
              "lora_adapter/adapter_config.json"):
        (d / f).write_text("{}")
    (d / "prm.json").write_text(json.dumps({"format": {"step_token": "<extra_0>"}, "mode": "lora", "layout": "project",
                                            "head": {"type": "linear-relu-linear", "hidden_size": 8}}))
    return d


def test_one_commit_with_every_file_and_the_card(tmp_path):
    d, api = _prm_dir(tmp_path), FakeApi()
    r = publish.upload_prm(d, "org/prm-mc_hard", "# card", private=True, api=api)
    (_, rid, kw), (_, rid2, ckw) = api.calls
    assert rid == rid2 == "org/prm-mc_hard" and kw["private"] is True and kw["exist_ok"] is True
    ops = {op.path_in_repo: op for op in ckw["operations"]}
    assert set(ops) == {"config.json", "model.safetensors", "prm_head.safetensors", "train_metrics.json", "prm.json",
                        "lora_adapter/adapter_config.json", model_card.CARD_FILE}
    assert ops[model_card.CARD_FILE].path_or_fileobj == b"# card"  # the card given, not the file on disk
    assert r["commit"] == "c" * 40 and r["url"].endswith("org/prm-mc_hard") and sorted(r["files"]) == sorted(ops)


def test_rule_function_cards_the_evaluation_and_writes_the_receipt(tmp_path, monkeypatch):
    import pandas as pd

    from prm_lessons.tables import write_table

    d = _prm_dir(tmp_path)
    # as train_prm writes it: settings with their defaults, the device, the fit
    (d / "train_metrics.json").write_text(json.dumps({"label_type": "hard", "settings": {"mode": "lora", "lora": {}},
                                                      "data": {"instances": 3}, "hardware": {"device": "cpu"},
                                                      "train_fit": {}}))
    ts = tmp_path / "ts.parquet"
    write_table(pd.DataFrame({"instance_id": ["a"], "question": ["q"], "steps": [["s"]], "labels": [[1.0]]}), ts,
                "trainset", meta={"variant": "mc_hard", "spec": {"source": "judge"}})
    pb, bon = tmp_path / "pb.json", tmp_path / "bon.json"
    pb.write_text(json.dumps({"subsets": {"gsm8k": {"f1": 0.5}}, "average_f1": 0.5}))
    bon.write_text(json.dumps({"average": {"prm_product": 0.25}}))
    api = FakeApi()
    monkeypatch.setattr(publish, "HfApi", lambda: api)
    receipt = tmp_path / "results" / "uploads" / "mc_hard.json"
    receipt.parent.mkdir(parents=True)
    rules_training.upload_prm(inputs={"model": str(d), "trainset": str(ts), "processbench": str(pb), "bon": str(bon)},
                              outputs={"receipt": str(receipt)},
                              params={"repo_id": "org/mc_hard", "private": False, "base_model": None},
                              wildcards={"variant": "mc_hard"}, threads=1)
    card = next(op for op in api.calls[1][2]["operations"] if op.path_in_repo == "README.md").path_or_fileobj.decode()
    assert ("| label source | `judge`: LLM-as-a-judge" in card and "| **average** | **50.0** |" in card
            and "| prm_product | 25.0 |" in card)
    assert "prm-lessons score --prm org/mc_hard" in card
    assert api.calls[0][2]["private"] is False
    assert json.loads(receipt.read_text())["repo_id"] == "org/mc_hard"


def test_empty_directory_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no files"):
        publish.upload_prm(tmp_path, "o/x", "card", api=FakeApi())
