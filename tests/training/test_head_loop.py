"""The resample heads' plain torch loop (prm_lessons.training.head_loop) against the transformers Trainer it
replaces: the same head weights (float32, atol 1e-5) and training loss on a tiny synthetic feature set, for
hard and soft labels, over several epochs, gradient accumulation with a short last step, clipping, weight
decay and a warm-up + cosine schedule; and a loop that differs in any of these gives other weights."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from transformers import set_seed  # noqa: E402

from prm_lessons.models.prm import StepCollator  # noqa: E402
from prm_lessons.training import head_loop as H  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402
from prm_lessons.training.settings import settings_from  # noqa: E402
from prm_lessons.training.trainer import training_arguments  # noqa: E402

HIDDEN = 12
SEED = 1234
# 27 instances in micro-batches of 4: 7 per epoch, the last of 3; 2 per optimizer step: 4 steps an epoch, the
# last of one micro-batch. A clipping norm the gradients exceed, decay and a warm-up that the weights feel.
SETTINGS = {"mode": "head", "epochs": 3, "batch_size": 4, "gradient_accumulation_steps": 2, "learning_rate": 5e-2,
            "weight_decay": 0.1, "warmup_ratio": 0.25, "lr_scheduler": "cosine", "max_grad_norm": 0.05,
            "save_steps": 0, "logging_steps": 1, "standardize_features": True}
TOKENIZER = SimpleNamespace(pad_token_id=0, eos_token_id=0)  # pad_id's only reads; unused by head batches


def features(label_type: str, n: int = 27, seed: int = 0) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        k = int(torch.randint(1, 5, (1,), generator=g))
        x = torch.randn(k, HIDDEN, generator=g) * 3 + 1
        t = torch.rand(k, generator=g)
        targets = (t >= 0.5).float() if label_type == "hard" else t
        out.append({"instance_id": f"i{i}", "step_features": x, "step_targets": targets.tolist(), "n_tokens": 10 + k})
    return out


def fresh(dataset, settings, label_type):
    """A head built as train_resample_heads builds it: its init drawn right after set_seed(seed)."""
    set_seed(int(settings["seed"]))
    return T.head_trainee(dataset, HIDDEN, settings, label_type)


def args_of(settings, tmp_path):
    return training_arguments(settings, tmp_path / "ck", on_gpu=False, bf16=False)


def by_trainer(dataset, settings, label_type, tmp_path):
    sub = fresh(dataset, settings, label_type)
    trainer, result, _ = T.run_trainer(sub, args_of(settings, tmp_path), TOKENIZER, None, tmp_path)
    return sub.head.state_dict(), float(result.training_loss), int(trainer.state.global_step)


def by_loop(dataset, settings, label_type, tmp_path):
    sub = fresh(dataset, settings, label_type)
    run = H.train_head(sub.model, sub.dataset, args_of(settings, tmp_path), StepCollator(0))
    return sub.head.state_dict(), run.training_loss, run.global_steps


def same(a: dict, b: dict, atol: float = 1e-5) -> bool:
    return a.keys() == b.keys() and all(torch.allclose(a[k].float(), b[k].float(), rtol=0, atol=atol) for k in a)


@pytest.mark.parametrize("label_type,extra", [("hard", {}), ("soft", {"soft_loss": "bce"}),
                                              ("soft", {"soft_loss": "mse"}),
                                              ("hard", {"max_steps": 6, "lr_scheduler": "linear"})],
                         ids=["hard", "soft-bce", "soft-mse", "hard-max-steps"])
def test_plain_loop_trains_the_head_the_trainer_trains(tmp_path, label_type, extra):
    settings = settings_from({**SETTINGS, **extra, "seed": SEED})
    data = features(label_type)
    want, want_loss, want_steps = by_trainer(data, settings, label_type, tmp_path)
    got, got_loss, got_steps = by_loop(data, settings, label_type, tmp_path)
    assert got_steps == want_steps == (extra.get("max_steps") or 12)
    init = fresh(data, settings, label_type).head.state_dict()
    assert not same(init, want, atol=1e-3)  # the head moved: equal weights are not two untrained heads
    assert same(got, want), max(float((got[k] - want[k]).abs().max()) for k in got)
    assert got_loss == pytest.approx(want_loss, rel=1e-5)


@pytest.fixture(scope="module")
def trainer_head(tmp_path_factory):
    settings = settings_from({**SETTINGS, "seed": SEED})
    data = features("hard")
    return settings, data, by_trainer(data, settings, "hard", tmp_path_factory.mktemp("trainer"))[0]


@pytest.mark.parametrize("change", ["weight_decay", "schedule", "warmup", "clipping", "data_seed",
                                    "accumulation", "epochs", "bias_decay"])
def test_a_loop_that_differs_from_the_trainer_gives_other_weights(tmp_path, monkeypatch, trainer_head, change):
    """The comparison above can fail: each setting the loop must reproduce, changed alone, moves the weights
    beyond its tolerance."""
    settings, data, want = trainer_head
    changed = {"weight_decay": {"weight_decay": 0.0}, "schedule": {"lr_scheduler": "linear"},
               "warmup": {"warmup_ratio": 0.0}, "clipping": {"max_grad_norm": 0.0},
               "accumulation": {"gradient_accumulation_steps": 1}, "epochs": {"epochs": 2},
               "data_seed": {}, "bias_decay": {}}[change]
    loop_settings = settings_from({**settings, **changed})
    sub = fresh(data, settings, "hard")  # the same initial head in every case
    args = args_of(loop_settings, tmp_path)
    if change == "data_seed":
        args.data_seed += 1
    if change == "bias_decay":  # decay on every parameter, biases included
        monkeypatch.setattr(H, "decay_parameter_names", lambda model: [n for n, _ in model.named_parameters()])
    H.train_head(sub.model, sub.dataset, args, StepCollator(0))
    assert not same(sub.head.state_dict(), want)


def test_the_optimizer_groups_are_the_trainers(tmp_path):
    settings = settings_from({**SETTINGS, "seed": SEED})
    sub = fresh(features("hard"), settings, "hard")
    args = args_of(settings, tmp_path)
    trainer = T.trainer_class()(model=sub.model, args=args, train_dataset=sub.dataset, data_collator=StepCollator(0))
    ref = trainer.create_optimizer()
    mine = H.trainer_optimizer(sub.model, args)
    assert type(mine) is type(ref)
    assert [([id(p) for p in g["params"]], g["weight_decay"]) for g in mine.param_groups] == \
        [([id(p) for p in g["params"]], g["weight_decay"]) for g in ref.param_groups]
    assert mine.defaults == ref.defaults
    assert [len(g["params"]) for g in mine.param_groups] == [2, 2]  # weights decayed, biases not


def test_several_processes_are_refused(tmp_path):
    args = SimpleNamespace(world_size=2)
    with pytest.raises(ValueError, match="one-process"):
        H.train_head(torch.nn.Linear(1, 1), [], args, StepCollator(0))
