"""Sampling stage: sharding covers every problem once, shard results don't depend on the layout,
merge rejects duplicates, and the pass@N / maj@N definitions."""
import pandas as pd
import pytest

from fakes import SeedEngine
from prm_lessons.generation.engine import derive_seed
from prm_lessons.generation.sampling import sample_problems, shard_rows
from prm_lessons.grading.samples import grade_samples
from prm_lessons.metrics.bon import baselines
from prm_lessons.tables import TableError, check_table


@pytest.mark.parametrize("n_rows, nshards", [(10, 3), (2, 4), (7, 7), (0, 2)])
def test_shards_partition_rows(n_rows, nshards):
    df = pd.DataFrame({"x": range(n_rows)})
    parts = [shard_rows(df, i, nshards)["x"].tolist() for i in range(nshards)]
    assert sorted(x for p in parts for x in p) == list(range(n_rows))


def problems(n=6):
    return pd.DataFrame({"problem_id": [f"d-{i:05d}" for i in range(n)], "dataset": "d",
                         "question": [f"q{i}" for i in range(n)],
                         "answer": [str(derive_seed(0, f"d-{i:05d}") % 3) if i % 2 else "7" for i in range(n)],
                         "gold_steps": None})


SAMPLING = {"temperature": 0.7, "top_p": 0.8, "max_tokens": 16, "seed": 0, "step_separator": "\n\n", "batch_size": 4}


def test_shard_results_do_not_depend_on_layout():
    probs = problems()
    whole = sample_problems(SeedEngine(), probs, n=2, sampling=SAMPLING)
    parts = pd.concat([sample_problems(SeedEngine(), shard_rows(probs, i, 3), n=2, sampling=SAMPLING)
                       for i in range(3)], ignore_index=True)
    pd.testing.assert_frame_equal(whole, parts)
    check_table(whole, "responses")
    assert not {"pred", "correct", "grade_status"} & set(whole.columns)  # graded by rule grade_samples
    whole = grade_samples(whole, timeout_s=5)
    check_table(whole, "samples")
    assert whole["steps"].iloc[0] == [whole["response"].iloc[0].split("\n\n")[0],
                                      whole["response"].iloc[0].split("\n\n")[1]]
    # odd problems have the gold answer the fake engine produces
    assert whole.groupby("problem_id")["correct"].all().tolist() == [i % 2 == 1 for i in range(6)]


def test_duplicate_rows_are_rejected():
    df = pd.DataFrame({c: [1, 1] for c in ["problem_id", "sample_idx", "dataset", "question", "answer", "response",
                                           "steps", "pred", "correct", "grade_status", "n_tokens", "finish_reason"]})
    with pytest.raises(TableError, match="duplicate"):
        check_table(df, "samples")


def _samples(preds, corrects, pid="p"):
    return pd.DataFrame({"problem_id": pid, "sample_idx": range(len(preds)), "pred": preds, "correct": corrects})


def test_maj_tie_goes_to_first_appearing_answer_and_none_does_not_vote():
    df = _samples(["2", None, "3", None, "3", "2"], [False, False, True, False, True, False])
    assert baselines(df)["maj"] == 0.0  # "2" and "3" tie at 2 votes, "2" came first
    df = _samples([None, None, "3"], [False, False, True])
    assert baselines(df)["maj"] == 1.0


def test_pass_and_first_n():
    df = pd.concat([_samples(["1", "2"], [False, True], "a"), _samples(["1", "1"], [False, False], "b")])
    assert baselines(df) ["pass"] == 0.5
    assert baselines(df, n=1)["pass"] == 0.0


def _shard_config(**sampling):
    from pathlib import Path

    import yaml

    from prm_lessons.config import deep_update, validate_config

    root = Path(__file__).resolve().parents[2]
    cfg = deep_update(yaml.safe_load((root / "config/config.yaml").read_text()),  # make run-all: two policies
                      yaml.safe_load((root / "config/all.yaml").read_text()))
    return validate_config(deep_update(cfg, {
        "sampling": sampling,
        "benchmarks": {"pinned": {"source": "local", "path": "x.jsonl", "rows": 1000},
                       "drawn": {"source": "local", "path": "x.jsonl", "rows": 1000,
                                 "subsample": {"n": 120, "seed": 0}},
                       "first": {"source": "local", "path": "x.jsonl", "rows": 1000, "limit": 30},
                       "unknown": {"source": "local", "path": "x.jsonl"},
                       "unknown_limited": {"source": "local", "path": "x.jsonl", "limit": 250}},
        "bon": {"policies": {"smollm2": {}, "smollm2_t1": {"limit": 30}}}}))


def test_sample_shards_follow_the_set_size_within_sampling_shards():
    from prm_lessons import plan

    cfg = _shard_config(shards=8, problems_per_shard=100)
    # arith: a generated set of `size` 100; the others pinned by rows, a subsample, a limit, or unknown
    expected = {"arith": 1, "pinned": 8, "drawn": 2, "first": 1, "unknown": 8, "unknown_limited": 3}
    assert {d: plan.sample_shard_count(cfg, d) for d in expected} == expected  # pinned: 10 capped at 8
    assert plan.dataset_problems(cfg, "unknown") is None and plan.dataset_problems(cfg, "drawn") == 120
    # a secondary policy's `limit` bounds every set it samples, even one of unknown size
    assert plan.sample_shard_count(cfg, "pinned", "smollm2_t1") == 1
    assert plan.sample_shards(cfg, "unknown", "smollm2_t1") == [
        "results/policies/smollm2_t1/responses/unknown/shard0of1.parquet"]
    assert plan.sample_shards(cfg, "drawn") == [f"results/responses/drawn/shard{i}of2.parquet" for i in range(2)]
    # null (the default): every set gets sampling.shards jobs, as before
    fixed = _shard_config(shards=8)
    assert fixed["sampling"]["problems_per_shard"] is None
    assert {d: plan.sample_shard_count(fixed, d) for d in expected} == dict.fromkeys(expected, 8)


def test_label_shards_follow_the_set_size_too():
    from prm_lessons import plan
    from prm_lessons.config import deep_update, validate_config

    cfg = _shard_config()
    sized = validate_config(deep_update(cfg, {"mc": {"shards": 4, "problems_per_shard": 500},
                                              "judge": {"shards": 4}}))
    assert plan.label_shard_paths(sized, "mc", "pinned") == [f"results/labels/mc/pinned/shard{i}of2.parquet"
                                                            for i in range(2)]
    assert len(plan.label_shard_paths(sized, "judge", "pinned")) == 4  # judge.problems_per_shard null


def test_problems_per_shard_must_be_positive():
    from prm_lessons.config import ConfigError

    with pytest.raises(ConfigError, match="`sampling.problems_per_shard`"):
        _shard_config(problems_per_shard=0)
