"""Head-only training from shared frozen-base features (training.train_prm(features=...)): one pass of the
base over the sampled responses (rule step_features) serves every variant cut from them, and the heads it
trains equal those of each variant's own pass; a variant it cannot serve (other text, base, max_length,
mode) is refused, never trained on mixed features."""
from __future__ import annotations

import json
import random

import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

from _prm_tiny import tiny_base, write_trainset  # noqa: E402
from prm_lessons.jobs import budget  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.rules import evaluation as E  # noqa: E402
from prm_lessons.rules import training as rules_training  # noqa: E402
from prm_lessons.training import data as train_data  # noqa: E402
from prm_lessons.training import features as F  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

SETTINGS = {"mode": "head", "epochs": 4, "batch_size": 4, "learning_rate": 1e-2, "save_steps": 0,
            "max_length": 256, "logging_steps": 1}


def _responses(n: int = 16, seed: int = 3) -> pd.DataFrame:
    """Sampled-like responses (problem_id, sample_idx): 2-4 steps, some of them "wrong"."""
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = rnd.randint(1, 9), rnd.randint(1, 9)
        wrong = [rnd.random() < 0.4 for _ in range(rnd.randint(2, 4))]
        steps = [f"Step {j + 1}: {a} + {b} = {a + b + int(w)}, this step is done." for j, w in enumerate(wrong)]
        rows.append({"problem_id": f"p{i // 2}", "sample_idx": i % 2, "question": f"What is {a} + {b}?",
                     "steps": steps, "wrong": wrong})
    return pd.DataFrame(rows)


def _variants(responses: pd.DataFrame) -> dict[str, tuple[str, pd.DataFrame]]:
    """Two trainsets cut from the same responses as labels.trainsets cuts them: hard labels truncated after
    the first negative step (prefixes of the responses) and soft labels on a subset, whole responses."""
    hard, soft = [], []
    for r in responses.itertuples():
        iid = f"{r.problem_id}#{r.sample_idx}"
        bad = list(r.wrong)
        first = next((i for i, x in enumerate(bad) if x), None)
        labels = [1.0] * len(r.steps) if first is None else [1.0] * first + [0.0]
        hard.append({"instance_id": iid, "question": r.question, "steps": list(r.steps)[:len(labels)],
                     "labels": labels})
        if r.Index % 3:
            soft.append({"instance_id": iid, "question": r.question, "steps": list(r.steps),
                         "labels": [0.25 if x else 0.875 for x in bad]})
    return {"mc_hard": ("hard", pd.DataFrame(hard)), "mc_soft": ("soft", pd.DataFrame(soft))}


@pytest.fixture(scope="module", params=["float32", "host"])
def setup(request, tmp_path_factory):
    """The frozen base in float32, and in the dtype this host's `auto` gives it (bfloat16 where the CPU
    has native bf16: what the embedded run uses there)."""
    mp = pytest.MonkeyPatch()
    if request.param == "float32":
        mp.setattr(P, "resolve_dtype", lambda name, on_gpu=None: ("float32", "test"))
    d = tmp_path_factory.mktemp(f"shared-{request.param}")
    base = tiny_base(d / "base", with_step_token=False)  # SmolLM2-like: the step token is added
    responses = _responses()
    # two problem sets' responses, one pass over their union (the rule's training source)
    responses.iloc[:7].to_parquet(d / "r1.parquet")
    responses.iloc[7:].to_parquet(d / "r2.parquet")
    settings = train_settings.settings_from(SETTINGS)
    # another batch size than training's: the rows share batches with other rows than in a variant's pass
    E.step_features(inputs={"texts": [str(d / "r1.parquet"), str(d / "r2.parquet")]},
                    outputs={"features": str(d / "f.safetensors")},
                    params={"base_dir": str(base), "training": settings, "max_length": settings["max_length"],
                            "batch_size": 5}, wildcards={}, threads=1)
    trainsets = {name: (lt, write_trainset(d / f"{name}.parquet", df))
                 for name, (lt, df) in _variants(responses).items()}
    yield d, base, trainsets, request.param
    mp.undo()


def _train(d, base, trainset, label_type, name, features=None):
    budget.reset()
    out = d / name
    metrics = T.train_prm(str(trainset), str(base), str(out), SETTINGS, label_type,
                          checkpoint_dir=str(d / f"ck-{name}"), threads=1, features=features)
    return load_file(str(out / P.HEAD_FILE)), metrics, budget.job_record()


def test_variants_train_the_same_heads_from_one_shared_pass(setup):
    d, base, trainsets, dtype = setup
    feats = [str(d / "f.safetensors")]
    # float32: the same numbers up to summation order (measured: <= 3e-7); bf16: the base's rounding differs
    # with the batch a row shares, as it already does between two own passes (measured: <= 1.3e-4)
    atol = 2e-6 if dtype == "float32" else 2e-3
    for name, (label_type, path) in trainsets.items():
        own, own_m, own_rec = _train(d, base, path, label_type, f"{name}-own")
        shared, shared_m, shared_rec = _train(d, base, path, label_type, f"{name}-shared", feats)
        assert own.keys() == shared.keys()
        for k in own:
            assert torch.allclose(own[k], shared[k], atol=atol, rtol=0), (name, k, (own[k] - shared[k]).abs().max())
        assert own_m["loss_history"] == pytest.approx(shared_m["loss_history"], abs=atol)
        assert own_m["train_fit"]["steps"] == shared_m["train_fit"]["steps"] > 0
        # the shared run ran no base forward: its tokens are the step_features job's
        assert own_m["feature_tokens"] > 0 and own_rec["prefill_tokens"] == own_m["feature_tokens"]
        assert shared_m["feature_tokens"] == 0 and shared_rec is None and shared_m["features"] == feats
        # the trained PRM scores from the benchmark features like any other head-only PRM
        info = json.loads((d / f"{name}-shared" / P.FORMAT_FILE).read_text())
        own = json.loads((d / f"{name}-own" / P.FORMAT_FILE).read_text())
        assert info["base_fingerprint"] == own["base_fingerprint"]


def test_shared_items_are_the_own_pass_items(setup):
    """Item by item: a prefix instance reads the first steps of its response's stored features."""
    d, base, trainsets, dtype = setup
    settings = train_settings.settings_from(SETTINGS)
    backbone, tok, fmt, fp = P.frozen_base(str(base), settings)
    label_type, path = trainsets["mc_hard"]
    instances, _ = train_data.training_instances(str(path), tok, fmt, settings, label_type)
    assert any(len(it["step_pos"]) < n for it, n in zip(instances, _responses()["steps"].map(len)))  # prefixes
    own = P.step_features(backbone, instances, P.pad_id(tok), 4, torch.device("cpu"))
    shared = F.training_features([d / "f.safetensors"], instances, fp, fmt, settings["max_length"])
    # features of magnitude ~3; measured: float32 <= 5e-7, bf16 0.002 (an own pass at batch size 1 instead
    # of 4 moves them by 0.008): a wrong row or step would be off by ~1
    atol = 1e-5 if dtype == "float32" else 2e-2
    for a, b in zip(own, shared):
        assert a["step_targets"] == b["step_targets"] and a["n_tokens"] == b["n_tokens"]
        assert torch.allclose(a["step_features"], b["step_features"], atol=atol, rtol=0)


def test_what_the_shared_pass_cannot_serve_is_refused(setup, tmp_path):
    d, base, trainsets, _ = setup
    feats = [str(d / "f.safetensors")]
    label_type, path = trainsets["mc_hard"]
    df = pd.read_parquet(path)
    other_text = df.assign(steps=[[f"Step {j + 1}: something else." for j in range(len(x))] for x in df["labels"]])
    with pytest.raises(ValueError, match="not a prefix"):
        _train(tmp_path, base, write_trainset(tmp_path / "t.parquet", other_text), label_type, "t", feats)
    unknown = df.assign(instance_id=[f"q{i}#0" for i in range(len(df))])
    with pytest.raises(ValueError, match="in none of the features"):
        _train(tmp_path, base, write_trainset(tmp_path / "u.parquet", unknown), label_type, "u", feats)
    with pytest.raises(ValueError, match="occurs twice"):  # the same response ids in two files
        _train(tmp_path, base, path, label_type, "twice", feats + feats)
    other = tiny_base(tmp_path / "other", with_step_token=False, seed=1)
    with pytest.raises(ValueError, match="fingerprint"):
        _train(tmp_path, other, path, label_type, "o", feats)
    with pytest.raises(ValueError, match="max_length"):
        T.train_prm(str(path), str(base), str(tmp_path / "m"), {**SETTINGS, "max_length": 128}, label_type,
                    checkpoint_dir=str(tmp_path / "ck-m"), threads=1, features=feats)
    with pytest.raises(train_settings.TrainingError, match="head mode only"):
        T.train_prm(str(path), str(base), str(tmp_path / "l"), {**SETTINGS, "mode": "lora"}, label_type,
                    checkpoint_dir=str(tmp_path / "ck-l"), threads=1, features=feats)


def test_rule_passes_the_features_input(setup, tmp_path):
    d, base, trainsets, _ = setup
    label_type, path = trainsets["mc_soft"]
    out = tmp_path / "prm"
    rules_training.train_prm(inputs={"trainset": str(path), "features": [str(d / "f.safetensors")]},
                             outputs={"model": str(out), "metrics": str(out / T.METRICS_FILE)},
                             params={"training": SETTINGS, "base_dir": str(base), "label_type": label_type,
                                     "checkpoint_dir": str(tmp_path / "ck")}, wildcards={"variant": "v"}, threads=1)
    assert json.loads((out / T.METRICS_FILE).read_text())["feature_tokens"] == 0
