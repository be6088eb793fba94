"""Rules mix_responses and mc with a mix of data policies: the joined responses carry each policy's rows
at its offset, and an MC shard labels only its own policy's responses (its shard of them), so every
response is completed by its own policy's completer exactly once."""
from __future__ import annotations

import pandas as pd

import prm_lessons.generation.engine as generation
from fakes import SeededCompleter
from prm_lessons.plan import label_needs
from prm_lessons.rules.labels import mc as rule_mc
from prm_lessons.rules.labels import mix_responses as rule_mix
from prm_lessons.tables import read_table, table_meta, write_table

CONFIG = {"problems": {"train": {}}, "trainsets": {"variants": {"mc_hard": {"source": "mc", "label_type": "hard",
                                                                            "threshold": 0.0}}}}
MC = {"completions": 2, "temperature": 0.7, "top_p": 0.8, "max_tokens": 16, "seed": 0, "protocol": "early",
      "round_size": 1, "last_step": "rollout", "shards": 2}


def _responses(path, n):
    rows = [{"problem_id": f"train-{i}", "sample_idx": k, "dataset": "train", "question": f"q{i}", "answer": "42",
             "response": "s0\n\ns1", "steps": ["s0", "s1"], "n_tokens": 3, "finish_reason": "stop"}
            for i in range(4) for k in range(n)]
    # as rules sample / merge_samples write it: the problems skipped as too long (none here)
    write_table(pd.DataFrame(rows), path, "responses", meta={"long_questions": {"n_skipped": 0, "skipped": {}}})
    return str(path)


def test_mixed_responses_are_labelled_once_each_by_their_policys_shards(tmp_path, monkeypatch):
    parts = [{"name": "a", "model": "ma", "completer": "ca", "n": 2, "offset": 0},
             {"name": "b", "model": "mb", "completer": "cb", "n": 1, "offset": 2}]
    out = tmp_path / "responses.parquet"
    rule_mix(inputs={"responses": [_responses(tmp_path / "a.parquet", 2), _responses(tmp_path / "b.parquet", 1)]},
             outputs={"responses": str(out)}, params={"parts": parts}, wildcards={"dataset": "train"}, threads=1)
    mixed = read_table(out, "responses")
    assert len(mixed) == 12 and sorted(set(mixed["sample_idx"])) == [0, 1, 2]
    assert set(mixed.loc[mixed["sample_idx"] == 2, "data_policy"]) == {"b"}
    assert [p["name"] for p in table_meta(out)["data_policies"]] == ["a", "b"]

    samples = tmp_path / "samples.parquet"
    write_table(mixed.assign(pred=None, correct=False, grade_status="no_answer"), samples, "samples")
    loaded = []
    monkeypatch.setattr(generation, "load_engine",
                        lambda d, e, b="auto", **kw: loaded.append(e["name"]) or SeededCompleter(p_ok=0.5))
    labelled = []
    # 2 MC shards per policy, numbered over the mix: 0-1 policy a (completer ca), 2-3 policy b (cb)
    for shard in range(4):
        policy, completer = ("a", "ca") if shard < 2 else ("b", "cb")
        t = tmp_path / f"mc{shard}.parquet"
        rule_mc(inputs={"samples": str(samples)}, outputs={"table": str(t)},
                params={"mc": MC, "needs": label_needs(CONFIG), "system_prompt": "sys", "separator": "\n\n",
                        "grading_timeout_s": 5.0, "model_dir": "x", "model_entry": {"name": completer},
                        "part": {"data_policy": policy, "shard": shard % 2, "nshards": 2}},
                wildcards={"dataset": "train", "shard": str(shard), "nshards": "4"}, threads=1)
        got = read_table(t, "mc")
        idx = set(got["sample_idx"])
        assert idx <= ({0, 1} if policy == "a" else {2}), (shard, idx)
        labelled += list(zip(got["problem_id"], got["sample_idx"]))
    assert loaded == ["ca", "ca", "cb", "cb"]
    assert sorted(labelled) == sorted(zip(mixed["problem_id"], mixed["sample_idx"]))   # each once
