"""Training in two CPU processes (gloo) through the same torchrun launcher as the multi-GPU path, so the
rank != 0 code (collective gather, no write) really runs: the CPU rehearsal of an 8-GPU ZeRO-3 job."""
from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import score_steps, signal_rows, tiny_base, write_trainset  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.training import launch as train_launch  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402


@pytest.mark.slow
@pytest.mark.rehearsal_dup  # the rehearsal trains 6 PRMs on 2 gloo ranks
def test_full_fine_tune_in_two_cpu_processes(tmp_path):
    base = tiny_base(tmp_path / "base", with_step_token=False)
    trainset = write_trainset(tmp_path / "hard.parquet", signal_rows(16))
    out = tmp_path / "prm"
    settings = {"mode": "full", "max_steps": 3, "batch_size": 2, "learning_rate": 1e-3, "max_length": 256,
                "save_steps": 2, "gpus": 0, "processes": 2}
    m = train_launch.run_training(str(trainset), str(base), str(out), settings, "hard",
                                  checkpoint_dir=str(tmp_path / "ck"), threads=2)
    saved = json.loads((out / T.METRICS_FILE).read_text())
    assert m == saved
    assert saved["world_size"] == 2 and saved["saved_by_rank"] == 0 and saved["global_steps"] == 3
    assert saved["hardware"]["world_size"] == 2 and saved["hardware"]["device"] == "cpu"
    model, tok, fmt = P.load_prm(out, device="cpu")
    scores = score_steps(model, tok, fmt, [("What is 2 + 3?", ["2 + 3 = 5, this step is right.", "So 5."])])
    assert len(scores[0]) == 2 and all(math.isfinite(p) and 0 <= p <= 1 for p in scores[0])
    assert not (tmp_path / "ck").exists()  # rank 0 removed the checkpoints after the save
