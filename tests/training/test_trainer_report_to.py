"""training.report_to: validation refuses a reporter whose package is not installed (naming the key), the
allowed values are transformers' integrations, and the value reaches the Trainer: a 2-step run with
report_to tensorboard leaves TensorBoard event files in the PRM's directory (runs/). tensorboard is not a
dependency of this project: the real-TensorBoard test skips without tensorboard or tensorboardX, and a
stand-in tensorboardX module (a SummaryWriter that writes an events file and records its scalars) checks
the same path through transformers' own TensorBoardCallback wherever neither is installed."""
from __future__ import annotations

import copy
import importlib.machinery
import importlib.util
import json
import sys
import types
import typing
from pathlib import Path

import pytest
import yaml

from prm_lessons.config import ConfigError, validate_config
from prm_lessons.config import model_run as M
from specs import set_key

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import signal_rows, tiny_base  # noqa: E402
from prm_lessons.rules import training as rules_training  # noqa: E402
from prm_lessons.tables import write_table  # noqa: E402
from prm_lessons.training import model_card as MC  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402
from prm_lessons.training import trainer as train_setup  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
HAS_TENSORBOARD = any(importlib.util.find_spec(m) is not None for m in ("tensorboard", "tensorboardX"))


def test_report_to_values_are_transformers_integrations():
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    allowed = set(typing.get_args(M.Reporter))
    assert allowed == set(M.REPORTER_PACKAGES) | {"none"}
    # every integration but kubeflow (no package to check: it reports to a Kubeflow Trainer server)
    assert allowed - {"none"} == set(INTEGRATION_TO_CALLBACK) - {"kubeflow"}
    assert train_settings.settings_from({})["report_to"] == "none"  # the default: no reporter


def test_validation_refuses_a_reporter_that_is_not_installed(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("tensorboard", "tensorboardX") else real(name, *a))
    with pytest.raises(ConfigError, match=r"config error at `training\.report_to`: 'tensorboard' .*tensorboard or "
                                          r"tensorboardX, which is not installed"):
        validate_config(set_key(copy.deepcopy(BASE), "training.report_to", "tensorboard"))
    with pytest.raises(ConfigError, match=r"`training\.report_to`"):
        validate_config(set_key(copy.deepcopy(BASE), "training.report_to", "tensorbored"))
    validate_config(set_key(copy.deepcopy(BASE), "training.report_to", "none"))


def test_validation_accepts_an_installed_reporter(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "tensorboardX" else real(name, *a))
    validate_config(set_key(copy.deepcopy(BASE), "training.report_to", "tensorboard"))


def test_report_to_reaches_training_arguments(tmp_path):
    s = train_settings.settings_from({"report_to": "tensorboard", "save_steps": 0})
    args = train_setup.training_arguments(s, tmp_path / "ck", on_gpu=False)
    assert args.report_to == ["tensorboard"]
    assert train_setup.training_arguments(train_settings.settings_from({"save_steps": 0}), tmp_path / "ck",
                                          on_gpu=False).report_to == []  # "none"


def _train(root: Path, extra: dict) -> Path:
    import pandas as pd

    ts = root / "mc_hard.parquet"
    write_table(pd.DataFrame(signal_rows(8)), ts, "trainset",
                meta={"variant": "mc_hard", "spec": {"source": "mc", "label_type": "hard", "threshold": 0.0}})
    out = root / "prm"
    rules_training.train_prm(
        inputs={"trainset": str(ts)}, outputs={"model": str(out), "metrics": str(out / T.METRICS_FILE)},
        params={"base_dir": str(tiny_base(root / "base")), "label_type": "hard", "checkpoint_dir": str(root / "ck"),
                "training": {"mode": "head", "max_steps": 2, "batch_size": 4, "save_steps": 0, "logging_steps": 1,
                             "precision": "fp32", "report_to": "tensorboard", **extra}},
        wildcards={"variant": "mc_hard"}, threads=1)
    return out


def _events(out: Path) -> list[Path]:
    return sorted((out / MC.LOG_DIR).rglob("events.out.tfevents.*"))


@pytest.mark.skipif(not HAS_TENSORBOARD, reason="neither tensorboard nor tensorboardX is installed (not a "
                                                "dependency); test_report_to_tensorboard_stand_in covers the path")
def test_report_to_tensorboard_writes_events_into_the_prm_dir(tmp_path):
    out = _train(tmp_path, {})
    assert _events(out), list(out.rglob("*"))
    assert not (tmp_path / "ck").exists()  # keep_checkpoints false: the logs outlived the checkpoints
    assert f"`{MC.LOG_DIR}/`" in (out / MC.CARD_FILE).read_text()


@pytest.fixture
def stand_in_tensorboard(monkeypatch):
    """A tensorboardX module whose SummaryWriter writes an events file in log_dir and records its scalars;
    transformers' TensorBoardCallback imports it when torch.utils.tensorboard (needs tensorboard) fails."""
    writers: list = []

    class SummaryWriter:
        def __init__(self, log_dir=None):
            self.log_dir, self.scalars = Path(log_dir), []
            self.log_dir.mkdir(parents=True, exist_ok=True)
            (self.log_dir / "events.out.tfevents.stand-in").write_text("")
            writers.append(self)

        def add_scalar(self, tag, value, step):
            self.scalars.append((tag, value, step))

        def add_text(self, *a, **k):
            pass

        def flush(self):
            (self.log_dir / "events.out.tfevents.stand-in").write_text(json.dumps(self.scalars))

        def close(self):
            self.flush()

    mod = types.ModuleType("tensorboardX")
    mod.__spec__ = importlib.machinery.ModuleSpec("tensorboardX", None)
    mod.SummaryWriter = SummaryWriter
    monkeypatch.setitem(sys.modules, "tensorboardX", mod)
    return writers


@pytest.mark.skipif(HAS_TENSORBOARD, reason="a TensorBoard package is installed: the real test runs")
def test_report_to_tensorboard_stand_in(tmp_path, stand_in_tensorboard):
    out = _train(tmp_path, {})
    (writer,) = stand_in_tensorboard
    # transformers' default log dir: the Trainer's output_dir (the checkpoint directory)/runs/<date_host>
    assert writer.log_dir.parent == tmp_path / "ck" / MC.LOG_DIR
    assert [s for t, _, s in writer.scalars if t == "train/loss"] == [1, 2]
    (ev,) = _events(out)  # copied into the PRM directory before the checkpoints were removed
    assert ev.parent.name == writer.log_dir.name and json.loads(ev.read_text()) == [list(x) for x in writer.scalars]
    assert not (tmp_path / "ck").exists()
    assert f"`{MC.LOG_DIR}/`" in (out / MC.CARD_FILE).read_text()
