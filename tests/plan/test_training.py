"""plan/training.py: the checkpoints a training writes (save_steps as transformers reads it) and their
cost, paper.yaml's bound on them, and what the tokens file of rule tokenize_trainset is keyed on."""
from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from prm_lessons import plan
from prm_lessons.config import validate_config

ROOT = Path(__file__).resolve().parents[2]


def _config(path: str) -> dict:
    return validate_config(copy.deepcopy(yaml.safe_load((ROOT / path).read_text())))


def _saves(save_steps: float, max_steps: int) -> int:
    """Checkpoints of a run of `max_steps` optimizer steps as transformers 5 makes them: every
    TrainerState.compute_steps interval (DefaultFlowCallback) and at the last step."""
    from transformers import TrainerState

    state = TrainerState()
    state.compute_steps(SimpleNamespace(logging_steps=1, eval_steps=None, save_steps=save_steps), max_steps)
    return len({s for s in range(1, max_steps + 1) if s % state.save_steps == 0 or s == max_steps})


@pytest.mark.parametrize("save_steps,bound", [(0.1, 10), (0.25, 4), (0.34, 3), (0.5, 2), (0.99, 2)])
def test_checkpoints_per_training_bounds_what_transformers_saves(save_steps, bound):
    pytest.importorskip("transformers")
    assert plan.checkpoints_per_training({"save_steps": save_steps}) == bound
    counts = [_saves(save_steps, n) for n in range(1, 1200)]
    assert max(counts) == bound  # reached, never passed, whatever the trainset's size
    assert _saves(save_steps, 470) == bound  # the paper's one epoch


def test_no_checkpoints_or_a_count_that_follows_the_run():
    assert plan.checkpoints_per_training({"save_steps": 0}) == 0
    assert plan.checkpoints_per_training({"save_steps": 200}) is None  # whole steps: ceil(N / 200)
    assert plan.checkpoint_seconds({"save_steps": 200, "base_params_b": 7.62, "checkpoint_write_gbps": 1}) is None
    assert plan.checkpoint_seconds({"save_steps": 0.5, "base_params_b": None, "checkpoint_write_gbps": 1}) is None


def test_paper_trainings_write_at_most_three_checkpoints():
    """10 checkpoints of ~122 GB (save_steps 0.1) cost ~20 min of 8 idle GPUs per training at 1 GB/s."""
    train = _config("config/paper.yaml")["training"]
    assert plan.checkpoints_per_training(train) <= 3
    assert train["jit_checkpoint"]  # the time limit is still covered by the SIGTERM checkpoint
    seconds = plan.checkpoint_seconds(train)
    n = plan.checkpoints_per_training(train)
    assert seconds == pytest.approx(n * plan.checkpoint_gb(train) / train["checkpoint_write_gbps"])
    assert seconds < plan.checkpoint_seconds({**train, "save_steps": 0.1}) / 3


def test_only_full_and_lora_trainings_read_a_tokens_file():
    paper, embedded = _config("config/paper.yaml"), _config("config/config.yaml")
    assert plan.tokenized(paper) and not plan.tokenized(embedded)
    assert plan.training_tokens_input(paper, "mc_hard") == ["results/trainsets/tokens/mc_hard.parquet"]
    assert plan.training_tokens_input(embedded, "mc_hard") == []
    lora = copy.deepcopy(embedded)
    lora["training"]["mode"] = "lora"
    assert plan.tokenized(lora)


def test_tokens_are_keyed_on_what_changes_the_token_ids():
    """The rule's params: a max_length or step-format edit tokenises again, a learning-rate edit does not."""
    cfg = _config("config/paper.yaml")
    params = plan.token_params(cfg)
    assert set(params) == {"step_token", "system_prompt", "use_chat_template", "max_length"}
    edited = copy.deepcopy(cfg)
    edited["training"]["learning_rate"] *= 2
    edited["training"]["save_steps"] = 0.5
    assert plan.token_params(edited) == params
    edited["training"]["max_length"] = 2048
    assert plan.token_params(edited) != params
