"""Training resamples (training.resamples, prm_lessons.training.resamples): the bootstrap draws depend on
the instance ids only (two variants with the same instances get the same draws) and differ across r;
a head-mode run trains R more heads, saves them stacked in the PRM directory and records them in
train_metrics.json; the ProcessBench scoring from stored features writes their step scores."""
from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import signal_rows, tiny_base, write_trainset  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.rules import evaluation as E  # noqa: E402
from prm_lessons.tables import write_table  # noqa: E402
from prm_lessons.training import features as F  # noqa: E402
from prm_lessons.training import resamples as RS  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

SETTINGS = {"mode": "head", "epochs": 2, "batch_size": 4, "learning_rate": 1e-2, "save_steps": 0,
            "max_length": 256, "logging_steps": 1}


def test_draws_follow_the_instance_ids_not_their_order_and_differ_across_r():
    ids = [f"p{i}#0" for i in range(40)]
    shuffled = ids[:]
    random.Random(3).shuffle(shuffled)
    a = [[ids[i] for i in d] for d in RS.resample_draws(ids, 7, 4)]
    b = [[shuffled[i] for i in d] for d in RS.resample_draws(shuffled, 7, 4)]
    assert a == b  # same instances, another row order (another variant's table): the same draws
    assert all(len(d) == len(ids) for d in a)
    assert len({tuple(d) for d in a}) == 4  # each r its own draw
    assert any(len(set(d)) < len(ids) for d in a)  # with replacement
    assert [[ids[i] for i in d] for d in RS.resample_draws(ids, 8, 4)] != a  # the seed matters
    assert RS.resample_draws(ids, -1, 1)[0].shape == (40,)  # a negative seed is a seed too
    assert RS.resample_seed(7, 0) != RS.resample_seed(7, 1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("resamples")
    base = tiny_base(d / "base", with_step_token=False)
    rows = signal_rows(16)
    ts = write_trainset(d / "ts.parquet", rows)
    m = T.train_prm(str(ts), str(base), str(d / "prm"), {**SETTINGS, "resamples": 3}, "hard",
                    checkpoint_dir=str(d / "ck"), threads=1)
    return d, base, m


def test_head_mode_trains_and_saves_resample_heads(trained):
    d, _, m = trained
    saved = json.loads((d / "prm" / T.METRICS_FILE).read_text())
    assert saved["resamples"] == 3 and saved["resample_draw"] == RS.DRAW_RULE
    assert [r["resample"] for r in saved["resample_runs"]] == [0, 1, 2]
    assert all(r["distinct_instances"] < 16 and r["final_train_loss"] is not None for r in saved["resample_runs"])
    heads = RS.load_resample_heads(d / "prm")
    assert len(heads) == 3 and all(h.standardize for h in heads)
    main = P.load_head(d / "prm", json.loads((d / "prm" / P.FORMAT_FILE).read_text()))
    w = [h.net[0].weight for h in heads]
    assert not torch.equal(w[0], w[1]) and not torch.equal(w[0], main.net[0].weight)
    # each head's standardisation is its own draw's
    assert not torch.equal(heads[0].feature_mean, heads[1].feature_mean)
    assert not (d / "ck").exists()  # the resamples' Trainer directories go with the checkpoints


def test_without_resamples_nothing_more_is_written(tmp_path, trained):
    d, base, _ = trained
    m = T.train_prm(str(d / "ts.parquet"), str(base), str(tmp_path / "prm"), {**SETTINGS, "epochs": 1}, "hard",
                    threads=1)
    assert m["resamples"] == 0 and not (tmp_path / "prm" / RS.RESAMPLE_FILE).exists()
    assert RS.load_resample_heads(tmp_path / "prm") == []


def test_processbench_scoring_from_features_writes_resample_scores(trained, tmp_path):
    d, base, _ = trained
    rows = signal_rows(5, seed=9)
    cases = pd.DataFrame({"id": [f"c{i}" for i in range(5)], "subset": ["a", "a", "b", "b", "b"],
                          "problem": [r["question"] for r in rows], "steps": [r["steps"] for r in rows],
                          "label": [-1, 0, -1, 1, 0], "final_answer_correct": [True, False, True, False, False],
                          "generator": "g"})
    write_table(cases, tmp_path / "cases.parquet", "processbench")
    feats = tmp_path / "f.safetensors"
    E.step_features(inputs={"texts": str(tmp_path / "cases.parquet")}, outputs={"features": str(feats)},
                    params={"base_dir": str(base), "training": train_settings.settings_from(SETTINGS),
                            "max_length": 256, "batch_size": 2}, wildcards={}, threads=1)
    spec = {"adapter": "trained", "path": str(d / "prm"), "max_length": 256, "params": {}, "trained": True}
    E.score_processbench(inputs={"cases": str(tmp_path / "cases.parquet"), "features": [str(feats)]},
                         outputs={"scores": str(tmp_path / "s.parquet")}, params={"spec": spec, "scoring": {}},
                         wildcards={"prm": "p"}, threads=1)
    df = pd.read_parquet(tmp_path / "s.parquet")
    res = [[list(s) for s in cell] for cell in df["resample_scores"]]
    assert [len(c) for c in res] == [3] * 5
    assert [[len(s) for s in c] for c in res] == [[len(s)] * 3 for s in cases["steps"]]
    # resample r's scores are head r's on the same features
    heads = RS.load_resample_heads(d / "prm")
    f, _ = F.load_features(feats)
    with torch.no_grad():
        want = torch.softmax(heads[1](f["features"]).float(), dim=-1)[:, 1].numpy()
    assert np.allclose([x for c in res for x in c[1]], want, atol=1e-6)
    assert not np.allclose([x for c in res for x in c[0]], want)
    main, _ = F.score_with_features(d / "prm", feats, cases["id"].tolist())  # unchanged API: the PRM's head
    assert np.allclose([x for s in df["step_scores"] for x in s], [x for s in main for x in s])
