"""No checkpoint code runs unless the config says so: every loading path that takes a model directory
(prm.load_base / frozen_base / load_prm, the scoring loader, the tokenizer loaders) passes the model
entry's trust_remote_code. The checkpoints here name their own configuration, modeling and tokenization
code in auto_map; importing any of it appends to a marker file. stdin answers "y": transformers asks
there when trust_remote_code is None, which would then run the code and write the marker."""
from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import torch

from _prm_tiny import qwen2_prm, tiny_base
from prm_lessons import plan
from prm_lessons.models import prm as P
from prm_lessons.scoring import heads
from prm_lessons.scoring import load as L
from prm_lessons.steps import StepFormat

MODULE = '''
with open({marker!r}, "a") as _f:  # the checkpoint's code ran
    _f.write("{name}\\n")
'''
CONFIGURATION = 'from transformers import Qwen2Config\n\n\nclass CustomConfig(Qwen2Config):\n    pass\n'
MODELING = ('from transformers import Qwen2ForCausalLM, Qwen2ForTokenClassification, Qwen2Model\n\n'
            'from .configuration_custom import CustomConfig\n\n\n'
            'class CustomModel(Qwen2Model):\n    config_class = CustomConfig\n\n\n'
            'class CustomForCausalLM(Qwen2ForCausalLM):\n    config_class = CustomConfig\n\n\n'
            'class CustomForTokenClassification(Qwen2ForTokenClassification):\n    config_class = CustomConfig\n')
TOKENIZATION = ('from transformers import PreTrainedTokenizerFast\n\n\n'
                'class CustomTokenizerFast(PreTrainedTokenizerFast):\n    pass\n')
AUTO_MAP = {"AutoConfig": "configuration_custom.CustomConfig", "AutoModel": "modeling_custom.CustomModel",
            "AutoModelForCausalLM": "modeling_custom.CustomForCausalLM",
            "AutoModelForTokenClassification": "modeling_custom.CustomForTokenClassification"}


@pytest.fixture(autouse=True)
def _hostile_env(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n" * 20))


def add_custom_code(d: Path, marker: Path, auto_map: dict | None = None, model_type: str | None = None) -> Path:
    """Give the checkpoint in `d` its own code (auto_map in config.json and tokenizer_config.json)."""
    files = {"configuration_custom": CONFIGURATION, "modeling_custom": MODELING,
             "tokenization_custom": TOKENIZATION}
    for name, body in files.items():
        (d / f"{name}.py").write_text(MODULE.format(marker=str(marker), name=name) + body)
    cfg = json.loads((d / "config.json").read_text())
    cfg["auto_map"] = {**(auto_map or AUTO_MAP), "AutoTokenizer": [None, "tokenization_custom.CustomTokenizerFast"]}
    if model_type:
        cfg["model_type"] = model_type
    (d / "config.json").write_text(json.dumps(cfg))
    tcfg = json.loads((d / "tokenizer_config.json").read_text())
    tcfg["auto_map"] = {"AutoTokenizer": [None, "tokenization_custom.CustomTokenizerFast"]}
    (d / "tokenizer_config.json").write_text(json.dumps(tcfg))
    return d


def custom_base(tmp_path: Path, model_type: str | None = None) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    d = tiny_base(tmp_path / "base", with_step_token=True, arch="qwen2")
    return add_custom_code(d, marker, model_type=model_type), marker


def custom_prm(tmp_path: Path) -> tuple[Path, Path]:
    """A project-layout PRM directory (save_prm) whose saved base names its own code."""
    base = tiny_base(tmp_path / "base", with_step_token=True, arch="qwen2")
    backbone, tok = P.load_base(str(base), torch.float32)
    head = P.StepHead(backbone.config.hidden_size)
    out = tmp_path / "prm"
    P.save_prm(out, backbone, tok, head.state_dict(), StepFormat(),
               {"mode": "full", "label_type": "hard", "max_length": 64}, dtype=torch.float32)
    marker = tmp_path / "marker"
    return add_custom_code(out, marker), marker


def released_prm(tmp_path: Path) -> tuple[Path, Path]:
    """A released Qwen2.5-Math-PRM with its auto_map (configuration/modeling_qwen2_rm), the code shipped."""
    d = qwen2_prm(tmp_path / "qwen_prm", "qwen_prm", hidden=32, layers=1, heads=4, kv=2, inter=64)
    marker = tmp_path / "marker"
    cfg = json.loads((d / "config.json").read_text())
    cfg["auto_map"] = {"AutoConfig": "configuration_qwen2_rm.Qwen2RMConfig",
                       "AutoModel": "modeling_qwen2_rm.Qwen2ForProcessRewardModel"}
    (d / "config.json").write_text(json.dumps(cfg))
    (d / "configuration_qwen2_rm.py").write_text(
        MODULE.format(marker=str(marker), name="configuration_qwen2_rm")
        + "from transformers import Qwen2Config\n\n\nclass Qwen2RMConfig(Qwen2Config):\n    pass\n")
    (d / "modeling_qwen2_rm.py").write_text(
        MODULE.format(marker=str(marker), name="modeling_qwen2_rm")
        + "from transformers import Qwen2Model\n\nfrom .configuration_qwen2_rm import Qwen2RMConfig\n\n\n"
          "class Qwen2ForProcessRewardModel(Qwen2Model):\n    config_class = Qwen2RMConfig\n")
    return d, marker


def ran(marker: Path) -> bool:
    return marker.exists()


def not_run(marker: Path, load) -> None:
    """`load` either loads without the checkpoint's code or fails naming trust_remote_code."""
    try:
        load()
    except ValueError as e:
        assert "trust_remote_code" in str(e)
    assert not ran(marker), marker.read_text()


@pytest.mark.parametrize("model_type", [None, "custom_evil"])
def test_base_loaders_never_run_checkpoint_code(tmp_path, model_type):
    d, marker = custom_base(tmp_path, model_type)
    not_run(marker, lambda: P.load_base(str(d), torch.float32))
    not_run(marker, lambda: P.load_base(str(d), torch.float32, trust_remote_code=False))
    not_run(marker, lambda: P.frozen_base(str(d), {"mode": "head", "precision": "fp32", "step_token": "<extra_0>",
                                                   "system_prompt": None, "use_chat_template": True}))
    not_run(marker, lambda: L._tokenizer(str(d)))
    not_run(marker, lambda: L._causal_lm(str(d), "float32"))
    not_run(marker, lambda: L.load_adapter({"adapter": "token_classification", "path": str(d), "dtype": "float32",
                                            "trust_remote_code": False, "max_length": 64, "params": {}}))
    if model_type is None:  # a known architecture loads, as its own transformers class
        backbone, tok = P.load_base(str(d), torch.float32)
        assert type(backbone).__name__ == "Qwen2Model" and type(tok).__name__ != "CustomTokenizerFast"


def test_base_config_trust_runs_the_code(tmp_path):
    """The test can fail: with the entry's trust_remote_code the code does run (training settings carry it)."""
    d, marker = custom_base(tmp_path)
    config = {"training": {"base": "policy"}, "roles": {"policy": "tiny"},
              "models": {"tiny": {"source": "local", "id": str(d), "trust_remote_code": True}}}
    settings = plan.training_settings(config, tmp_path)
    assert settings["trust_remote_code"] is True
    backbone, tok, _, _ = P.frozen_base(str(d), {**settings, "mode": "head", "precision": "fp32",
                                                 "step_token": "<extra_0>", "system_prompt": None,
                                                 "use_chat_template": True})
    assert type(backbone).__name__ == "CustomModel" and type(tok).__name__ == "CustomTokenizerFast"
    assert set(marker.read_text().split()) == {"configuration_custom", "modeling_custom", "tokenization_custom"}


def test_untrusted_base_leaves_the_params_as_they_were(tmp_path):
    config = {"training": {"base": "policy"}, "roles": {"policy": "tiny"},
              "models": {"tiny": {"source": "local", "id": "x", "trust_remote_code": False}}}
    assert "trust_remote_code" not in plan.training_settings(config, tmp_path)
    assert "trust_remote_code" not in plan.training_settings({**config, "models": {}}, tmp_path)


def test_prm_loaders_never_run_checkpoint_code(tmp_path):
    d, marker = custom_prm(tmp_path)
    not_run(marker, lambda: P.load_prm(d, device="cpu"))
    not_run(marker, lambda: L.load_adapter({"adapter": "trained", "path": str(d), "params": {}}))
    model, tok, _ = P.load_prm(d, device="cpu")
    assert type(model.backbone).__name__ == "Qwen2Model"
    P.load_prm(d, device="cpu", trust_remote_code=True)  # proof the test can fail
    assert ran(marker)


def test_released_prm_loads_with_the_head_built_here(tmp_path):
    d, marker = released_prm(tmp_path)
    spec = {"adapter": "qwen_prm", "path": str(d), "dtype": "float32", "trust_remote_code": False,
            "max_length": 64, "params": {}}
    not_run(marker, lambda: heads.load_head_model(str(d), "qwen_prm", "float32"))
    not_run(marker, lambda: L.load_adapter(spec))
    try:  # proof the test can fail: the entry's trust runs the shipped code (a stand-in, no real PRM)
        L.load_adapter({**spec, "trust_remote_code": True})
    except Exception:  # noqa: BLE001 - whether the stand-in scores does not matter here
        pass
    assert ran(marker)


def test_config_entry_threads_trust_into_the_specs(monkeypatch):
    from prm_lessons.plan import evaluation as E

    monkeypatch.setattr(E, "trained_variants", lambda c: ["v"])  # one trained PRM, no trainsets section
    config = {"training": {"base": "policy"}, "roles": {"policy": "pol"},
              "models": {"pol": {"source": "local", "id": "b", "trust_remote_code": True},
                         "qp": {"source": "local", "id": "q", "trust_remote_code": True},
                         "ms": {"source": "local", "id": "m"}},
              "prms": {"models": {"qp": {"model": "qp", "adapter": "qwen_prm"},
                                  "ms": {"model": "ms", "adapter": "math_shepherd"}}}}
    specs = E.resolve_prm_specs(config)
    assert specs["v"]["trust_remote_code"] is True
    assert specs["qp"]["trust_remote_code"] is True and specs["ms"]["trust_remote_code"] is False
    config["models"]["pol"]["trust_remote_code"] = False  # the trained spec stays as it was
    assert "trust_remote_code" not in E.resolve_prm_specs(config)["v"]
