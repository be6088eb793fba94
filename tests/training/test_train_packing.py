"""training.packing through the Trainer: a full or LoRA fine-tuning run of a tiny random-weight Qwen2 base
(float32, CPU) with packed micro-batches trains on the same tokens with the same loss history as the padded run
(the collator, the forward's position_ids and the Trainer's input preparation wired together)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import signal_rows, tiny_base, write_trainset  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

RUN = {"mode": "full", "max_steps": 3, "batch_size": 4, "learning_rate": 1e-3, "save_steps": 0, "max_length": 256,
       "logging_steps": 1, "gradient_checkpointing": True, "precision": "fp32", "lr_scheduler": "constant",
       # LoRA dropout draws its masks in the batch's shape, [1, T] packed and [B, L] padded: off, to compare
       "lora": {"dropout": 0.0}}


@pytest.mark.parametrize("mode", ["full", "lora"])
def test_packed_training_matches_padded(tmp_path, mode):
    base = tiny_base(tmp_path / "base", with_step_token=True, arch="qwen2")
    trainset = write_trainset(tmp_path / "hard.parquet", signal_rows(12))
    runs = {}
    for packing in (False, True):
        out = tmp_path / f"prm-{packing}"
        settings = {**RUN, "mode": mode, "packing": packing}
        runs[packing] = T.train_prm(str(trainset), str(base), str(out), settings, "hard",
                                    checkpoint_dir=str(tmp_path / f"ckpt-{packing}"), threads=1)
    padded, packed = runs[False], runs[True]
    assert packed["settings"]["packing"] is True and padded["settings"]["packing"] is False
    assert packed["train_tokens"] == padded["train_tokens"] > 0
    assert len(packed["loss_history"]) == len(padded["loss_history"]) == 3
    # the same batches in the same order: the same losses, also after two optimizer steps
    assert packed["loss_history"] == pytest.approx(padded["loss_history"], abs=1e-5)
