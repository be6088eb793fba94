"""Shared frozen-base step features (prm_lessons.training.features): scoring a head-only PRM from them gives the
scores of the full PRM; a PRM of another base, another format or other rows is refused, never mixed."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import score_steps, signal_rows, tiny_base, write_trainset  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.rules import evaluation as E  # noqa: E402
from prm_lessons.training import features as F  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

SETTINGS = {"mode": "head", "epochs": 3, "batch_size": 4, "learning_rate": 1e-2, "save_steps": 0,
            "max_length": 256, "logging_steps": 1}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("features")
    base = tiny_base(d / "base", with_step_token=False)  # SmolLM2-like: the step token is added
    ts = write_trainset(d / "ts.parquet", signal_rows(16))
    T.train_prm(str(ts), str(base), str(d / "prm"), SETTINGS, "hard", checkpoint_dir=str(d / "ck"), threads=1)
    rows = signal_rows(6, seed=5)
    samples = pd.DataFrame({"problem_id": [f"p{i}" for i in range(6)], "sample_idx": [0, 1, 0, 1, 0, 1],
                            "question": [r["question"] for r in rows], "steps": [r["steps"] for r in rows]})
    samples.loc[5, "steps"] = []  # a response without steps
    samples.to_parquet(d / "samples.parquet")
    return d, base, samples


def _features(d, base, name="f.safetensors", max_length=256, batch_size=1, settings=SETTINGS):
    out = d / name
    E.step_features(inputs={"texts": str(d / "samples.parquet")}, outputs={"features": str(out)},
                    params={"base_dir": str(base), "training": train_settings.settings_from(settings),
                            "max_length": max_length, "batch_size": batch_size}, wildcards={}, threads=1)
    return out


def test_scores_from_features_equal_the_full_prm(setup):
    d, base, samples = setup
    feats = _features(d, base)
    got, truncated = F.score_with_features(d / "prm", feats, F.row_ids(samples))
    model, tok, fmt = P.load_prm(d / "prm")
    want = [score_steps(model, tok, fmt, [(q, list(s))], batch_size=1)[0] if len(s) else []
            for q, s in zip(samples["question"], samples["steps"])]
    assert truncated == 0 and [len(g) for g in got] == [len(s) for s in samples["steps"]]
    for g, w in zip(got, want):  # same shapes, same bf16 kernels: the same numbers
        assert g == pytest.approx(w, abs=1e-6)
    assert len(set(round(x, 4) for g in got for x in g)) > 1  # the head is not constant


def test_batched_features_agree_and_truncation_gives_nan(setup):
    d, base, samples = setup
    batched = F.score_with_features(d / "prm", _features(d, base, "b.safetensors", batch_size=4),
                                    F.row_ids(samples))[0]
    single = F.score_with_features(d / "prm", _features(d, base), F.row_ids(samples))[0]
    for a, b in zip(batched, single):
        assert a == pytest.approx(b, abs=2e-2)  # bf16 batching differences only
    short = _features(d, base, "short.safetensors", max_length=48)
    got, truncated = F.score_with_features(d / "prm", short, F.row_ids(samples), max_length=48)
    model, tok, fmt = P.load_prm(d / "prm")
    want = score_steps(model, tok, fmt, [(samples["question"][0], list(samples["steps"][0]))], max_length=48,
                         batch_size=1)[0]
    assert truncated >= 1 and any(math.isnan(x) for x in got[0])
    assert [math.isnan(x) for x in got[0]] == [math.isnan(x) for x in want]


def test_added_step_token_embedding_is_deterministic(setup):
    d, base, _ = setup
    a = P.frozen_base(str(base), train_settings.settings_from(SETTINGS))
    torch.manual_seed(123)  # a different RNG state must not change the base
    b = P.frozen_base(str(base), train_settings.settings_from(SETTINGS))
    assert a[3] == b[3]
    emb = a[0].get_input_embeddings().weight
    sid = a[1].convert_tokens_to_ids("<extra_0>")
    assert torch.equal(emb[sid], emb[:sid].float().mean(0).to(emb.dtype))
    assert json.loads((d / "prm" / P.FORMAT_FILE).read_text())["base_fingerprint"] == a[3]


def test_other_base_format_rows_or_mode_are_refused(setup, tmp_path):
    d, base, samples = setup
    feats = _features(d, base)
    other = tiny_base(tmp_path / "other", with_step_token=False, seed=1)
    wrong_base = _features(d, other, "other.safetensors")
    with pytest.raises(ValueError, match="fingerprint"):
        F.score_with_features(d / "prm", wrong_base, F.row_ids(samples))
    fmt = _features(d, base, "fmt.safetensors", settings={**SETTINGS, "system_prompt": "Be brief."})
    with pytest.raises(ValueError, match="step format"):
        F.score_with_features(d / "prm", fmt, F.row_ids(samples))
    with pytest.raises(ValueError, match="max_length"):
        F.score_with_features(d / "prm", feats, F.row_ids(samples), max_length=128)
    with pytest.raises(ValueError, match="other rows"):
        F.score_with_features(d / "prm", feats, F.row_ids(samples)[::-1])
    lora = tmp_path / "lora"
    T.train_prm(str(d / "ts.parquet"), str(base), str(lora), {**SETTINGS, "mode": "lora", "epochs": 1}, "hard",
                checkpoint_dir=str(tmp_path / "ck"), threads=1)
    with pytest.raises(ValueError, match="head-only"):
        F.score_with_features(lora, feats, F.row_ids(samples))


def test_score_rule_uses_features_when_given(setup, tmp_path):
    d, base, samples = setup
    from prm_lessons.tables import write_table

    samples = samples.assign(dataset="x", answer="1", response="", n_tokens=1, finish_reason="stop")
    write_table(samples, tmp_path / "s.parquet", "responses")  # scoring reads the ungraded responses
    spec = {"adapter": "trained", "path": str(d / "prm"), "max_length": 256, "params": {}, "trained": True}
    outs = {}
    for name, inputs in (("full", {}), ("feat", {"features": [str(_features(d, base))]})):
        out = tmp_path / f"{name}.parquet"
        E.score_samples(inputs={"responses": str(tmp_path / "s.parquet"), **inputs}, outputs={"scores": str(out)},
                        params={"spec": spec, "scoring": {"batch_tokens": 4096, "batch_size": 8}},
                        wildcards={"prm": "p"}, threads=1)
        outs[name] = pd.read_parquet(out)
    for a, b in zip(outs["full"]["step_scores"], outs["feat"]["step_scores"]):
        assert list(a) == pytest.approx(list(b), abs=2e-2)
