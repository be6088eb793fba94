"""DeepSpeed ZeRO-3 as the GPU training jobs use it, shown on CPU: the repo's zero3.json leaves bucket sizes
"auto", which transformers fills from the hidden size of the model the Trainer gets (review paper-path-2,
B1: the PRM wrapper had no `config`, so every ZeRO-3 job failed at its first DeepSpeed step).

Needs the `deepspeed` package (installed without its CUDA ops by `make setup`): off CI a missing or broken
one skips, under CI=true it fails."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import score_steps, signal_rows, tiny_base, write_trainset  # noqa: E402
from conftest import on_ci  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.training import launch as train_launch  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402
from prm_lessons.training import trainer as train_setup  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ZERO3 = ROOT / "config" / "deepspeed" / "zero3.json"
HIDDEN = 32  # _prm_tiny.tiny_base


def need_deepspeed():
    try:
        import deepspeed  # noqa: F401
    except Exception as e:  # ImportError, or an install whose import fails
        if on_ci():
            pytest.fail(f"CI=true: deepspeed does not import ({e!r}); `make setup` installs it", pytrace=False)
        pytest.skip(f"deepspeed does not import: {e!r}")


@pytest.fixture
def ds_state():
    """TrainingArguments with a DeepSpeed config register it process-wide: undo that afterwards."""
    need_deepspeed()
    yield
    from accelerate.state import AcceleratorState
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    unset_hf_deepspeed_config()
    AcceleratorState._reset_state(reset_partial_state=True)


@pytest.fixture(scope="module")
def base_qwen(tmp_path_factory):
    return tiny_base(tmp_path_factory.mktemp("base_qwen"), with_step_token=True, arch="qwen2")


def paper_settings(**over) -> dict:
    """config/paper.yaml's training block (full fine-tuning, ZeRO-3, gradient checkpointing)."""
    block = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())["training"]
    return train_settings.settings_from({**block, "deepspeed": str(ZERO3), **over})


def autos(node, path=""):
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in autos(v, f"{path}.{k}" if path else k)]
    return [path] if node == "auto" else []


@pytest.mark.parametrize("mode", ["full", "lora"])
def test_zero3_autos_are_filled_from_the_model_the_trainer_gets(tmp_path, base_qwen, ds_state, mode):
    settings = paper_settings(mode=mode)
    assert settings["deepspeed"] and settings["gradient_checkpointing"]
    # the model exactly as train_prm builds it for full / LoRA fine-tuning
    backbone, tokenizer = P.load_base(str(base_qwen), torch.float32)
    P.ensure_step_token(tokenizer, backbone, settings["step_token"])
    model = T.trainable_model(backbone, P.StepHead(int(backbone.config.hidden_size)), settings, "hard")
    # the GPU job's TrainingArguments (bf16 off: this CPU has none); built after the model here, so that
    # transformers' zero.Init (which needs a process group) stays out of a CPU unit test
    args = train_setup.training_arguments(settings, tmp_path / "ck", on_gpu=True, bf16=False)
    assert Path(args.deepspeed) == ZERO3
    ds = args.hf_deepspeed_config
    assert ds.is_zero3() and autos(ds.config["zero_optimization"])  # the repo's file leaves them to the model

    # what transformers' deepspeed_init runs at the first step (trainer.py: trainer_config_finalize(args,
    # trainer.model, ...)), against the model object the Trainer is given
    ds.trainer_config_finalize(args, model, num_training_steps=100)

    zo = ds.config["zero_optimization"]
    assert zo["reduce_bucket_size"] == HIDDEN * HIDDEN
    assert zo["stage3_prefetch_bucket_size"] == int(0.9 * HIDDEN * HIDDEN)
    assert zo["stage3_param_persistence_threshold"] == 10 * HIDDEN
    assert autos(ds.config) == []  # nothing left for DeepSpeed to reject
    assert ds.config["train_micro_batch_size_per_gpu"] == settings["batch_size"]
    assert ds.config["gradient_accumulation_steps"] == settings["gradient_accumulation_steps"]

    from deepspeed.runtime.config import DeepSpeedConfig

    parsed = DeepSpeedConfig(ds.config)  # DeepSpeed's own parser accepts the finalised config
    assert parsed.zero_optimization_stage == 3
    assert parsed.zero_config.reduce_bucket_size == HIDDEN * HIDDEN


def test_the_wrapper_exposes_the_base_config_and_trainer_keeps_it_a_plain_module(tmp_path, base_qwen):
    """The PRM's `config` is its base's (one object, so the Trainer's use_cache=False reaches the base);
    the Trainer still saves it as a state dict, not through save_pretrained (it is no PreTrainedModel)."""
    from transformers import PreTrainedModel

    settings = train_settings.settings_from({"mode": "full", "gradient_checkpointing": False})
    backbone, tokenizer = P.load_base(str(base_qwen), torch.float32)
    model = T.trainable_model(backbone, P.StepHead(HIDDEN), settings, "hard")
    assert model.config is backbone.config and model.config.hidden_size == HIDDEN
    assert not isinstance(model, PreTrainedModel)
    assert "config" not in dict(model.named_modules()) and "config" not in model.state_dict()
    args = train_setup.training_arguments(settings, tmp_path / "ck", on_gpu=False)
    trainer = train_setup.trainer_class()(model=model, args=args, train_dataset=[], data_collator=P.StepCollator(0))
    assert backbone.config.use_cache is False  # the Trainer's own setting, on the base
    trainer.save_model(str(tmp_path / "saved"))
    assert (tmp_path / "saved" / "model.safetensors").exists()
    assert not (tmp_path / "saved" / "config.json").exists()  # no save_pretrained of a half model


def test_head_mode_with_deepspeed_names_the_key():
    settings = train_settings.settings_from({"mode": "head", "deepspeed": str(ZERO3)})
    assert train_setup.deepspeed_config(settings, on_gpu=False) is None
    with pytest.raises(train_settings.TrainingError, match="training.deepspeed"):
        train_setup.deepspeed_config(settings, on_gpu=True)


def test_make_setup_installs_the_gpu_stacks_deepspeed():
    """`make setup` (CPU) installs the DeepSpeed that requirements/gpu.txt pins for the cluster, without
    its CUDA ops, so these tests run where the GPU jobs' version runs."""
    import re

    pin = re.search(r"^deepspeed==(\S+)", (ROOT / "requirements" / "gpu.txt").read_text(), re.M).group(1)
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\n$(STAMP):")[1].split("\n\n")[0]
    line = next(ln for ln in recipe.splitlines() if "deepspeed==" in ln)
    assert f"deepspeed=={pin}" in line and "DS_BUILD_OPS=0" in line and "--no-deps" in line


@pytest.mark.slow
def test_zero3_on_cpu_trains_saves_the_released_layout_and_scores(tmp_path, base_qwen):
    """training.deepspeed_on_cpu: the GPU jobs' ZeRO-3 path in two gloo ranks through the project's torchrun
    launcher: zero.Init at load, the config filled from the PRM, partitioned steps, a DeepSpeed checkpoint,
    the weights gathered from both ranks' shards on rank 0 and saved as Qwen2.5-Math-PRM is published."""
    need_deepspeed()
    from transformers import AutoModel

    trainset = write_trainset(tmp_path / "hard.parquet", signal_rows(8))
    out = tmp_path / "prm"
    settings = {"mode": "full", "deepspeed": str(ZERO3), "deepspeed_on_cpu": True, "max_steps": 2,
                "batch_size": 2, "learning_rate": 1e-3, "max_length": 256, "save_steps": 1, "logging_steps": 1,
                "gradient_checkpointing": True, "gpus": 0, "processes": 2,
                "precision": "fp32"}  # saved in fp32: the gathered tensors are written as they are (no cast)
    m = train_launch.run_training(str(trainset), str(base_qwen), str(out), settings, "hard",
                                  checkpoint_dir=str(tmp_path / "ck"), threads=2)
    assert m["deepspeed"] == str(ZERO3)  # the Trainer ran the DeepSpeed engine
    assert m["world_size"] == 2 and m["saved_by_rank"] == 0 and m["global_steps"] == 2
    assert m["layout"] == "released" and all(math.isfinite(x) for x in m["loss_history"])
    assert not (tmp_path / "ck").exists()  # checkpoints written, then removed after the save

    model, tok, fmt = P.load_prm(out, device="cpu")  # strict: partitioned (empty) tensors would not load
    base = AutoModel.from_pretrained(str(base_qwen), dtype=torch.float32)
    trained = dict(model.backbone.named_parameters())
    assert all(p.shape == trained[n].shape for n, p in base.named_parameters())
    assert any(not torch.equal(p, trained[n]) for n, p in base.named_parameters())  # the trained weights
    scores = score_steps(model, tok, fmt, [("What is 2 + 3?", ["2 + 3 = 5, this step is right.", "So 5."])])
    assert len(scores[0]) == 2 and all(math.isfinite(p) and 0 <= p <= 1 for p in scores[0])


@pytest.mark.slow
def test_zero2_on_cpu_with_token_batches_trains_and_saves(tmp_path, base_qwen):
    """paper.yaml's path as the rehearsal runs it: ZeRO-2 (config/deepspeed/zero2.json) on DeepSpeed's CPU
    accelerator in two gloo ranks, token-sized micro-batches (both ranks the same count, or the collectives
    would hang), a DeepSpeed checkpoint, the replicated weights saved by rank 0 in the released layout."""
    need_deepspeed()
    from transformers import AutoModel

    zero2 = ROOT / "config" / "deepspeed" / "zero2.json"
    trainset = write_trainset(tmp_path / "hard.parquet", signal_rows(12))
    out = tmp_path / "prm"
    settings = {"mode": "full", "deepspeed": str(zero2), "deepspeed_on_cpu": True, "max_steps": 3,
                "batch_size": 1, "batch_tokens": 400, "learning_rate": 1e-3, "max_length": 256, "save_steps": 2,
                "logging_steps": 1, "gradient_checkpointing": True, "gpus": 0, "processes": 2, "precision": "fp32"}
    m = train_launch.run_training(str(trainset), str(base_qwen), str(out), settings, "hard",
                                  checkpoint_dir=str(tmp_path / "ck"), threads=2)
    assert m["deepspeed"] == str(zero2)
    assert m["world_size"] == 2 and m["saved_by_rank"] == 0 and m["global_steps"] == 3
    assert m["layout"] == "released" and all(math.isfinite(x) for x in m["loss_history"])
    b = m["batches"]  # token-sized micro-batches, padded to a count both ranks share
    assert b["batch_tokens"] == 400 and b["padded_count"] % 2 == 0 and b["rows_p50"] >= 2
    assert b["padded_tokens_max"] <= 400 and m["train_tokens"] > 0
    model, tok, fmt = P.load_prm(out, device="cpu")
    base = AutoModel.from_pretrained(str(base_qwen), dtype=torch.float32)
    trained = dict(model.backbone.named_parameters())
    assert any(not torch.equal(p, trained[n]) for n, p in base.named_parameters())  # the trained weights
    scores = score_steps(model, tok, fmt, [("What is 2 + 3?", ["2 + 3 = 5, this step is right.", "So 5."])])
    assert len(scores[0]) == 2 and all(math.isfinite(p) and 0 <= p <= 1 for p in scores[0])


def test_deepspeed_on_cpu_outside_torchrun_names_the_key(tmp_path, monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    settings = train_settings.settings_from({"mode": "full", "deepspeed": str(ZERO3), "deepspeed_on_cpu": True})
    with pytest.raises(train_settings.TrainingError, match="training.deepspeed_on_cpu"):
        train_setup.training_arguments(settings, tmp_path / "ck", on_gpu=False)
    assert train_setup.deepspeed_config({**settings, "deepspeed_on_cpu": False}, on_gpu=False) is None  # the default
