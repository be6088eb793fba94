"""Sharded scoring (prms.shards, issue 16 item 3): the split covers every problem once, the sharded jobs
and their merge give the unsharded tables, the merge names overlapping and missing problems, and the DAG
keeps today's jobs with one shard and plans one job per (PRM, shard) plus a merge per PRM with more."""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from dag import dry_run, job_counts
from prm_lessons import plan
from prm_lessons.config import ConfigError, validate_config
from prm_lessons.errors import InputError
from prm_lessons.jobs.shards import in_shard, merge_problem_shards
from prm_lessons.rules import evaluation
from prm_lessons.tables import read_table, write_table

ROOT = Path(__file__).resolve().parents[2]


def samples_frame(bench: str, n_problems: int, n: int) -> pd.DataFrame:
    """A responses table (ungraded: what the scoring jobs read)."""
    rows = [{"problem_id": f"{bench}-{p:05d}", "sample_idx": k, "dataset": bench, "question": f"q{p}",
             "answer": "1", "response": "r", "steps": [f"s{p}.{k}.{j}" for j in range(1 + (p + k) % 3)],
             "n_tokens": 3, "finish_reason": "stop"}
            for p in range(n_problems) for k in range(n)]
    return pd.DataFrame(rows)


def cases_frame(n_cases: int) -> pd.DataFrame:
    return pd.DataFrame([{"id": f"gsm8k-{c}", "subset": "gsm8k", "generator": "g", "problem": f"q{c}",
                          "steps": [f"c{c}.{j}" for j in range(1 + c % 4)], "final_answer_correct": True,
                          "label": -1} for c in range(n_cases)])


class FakeAdapter:
    """What the scoring rules ask of an adapter besides the scores (stubbed by _fake_scores)."""

    def __init__(self, outcome: bool):
        self.outcome = outcome

    def token_info(self) -> dict:
        return {}


def _fake_scores(adapter, questions, steps_list, cfg, prefixes=False):
    """Deterministic scores from the text alone, one per step (an outcome RM: one per prefix)."""
    from prm_lessons.scoring.batch import ScoreStats

    scores = [[(hash((q, s)) % 1000) / 1000 for s in steps] for q, steps in zip(questions, steps_list)]
    return scores, ScoreStats(responses=len(scores))


@pytest.fixture
def fake_scoring(monkeypatch):
    pytest.importorskip("torch")

    monkeypatch.setattr(evaluation, "_score_frame", _fake_scores)
    monkeypatch.setattr("prm_lessons.scoring.load.load_adapter",
                        lambda spec, backend=None: FakeAdapter(spec["adapter"] == "qwen_orm"))


# ------------------------------------------------------------------------------------------- the split

@pytest.mark.parametrize("nshards", [1, 2, 3, 7, 40])
def test_shard_split_covers_every_problem_exactly_once(nshards):
    ids = samples_frame("b", 23, 3)["problem_id"]
    masks = [in_shard(ids, i, nshards) for i in range(nshards)]
    assert (sum(m.astype(int) for m in masks) == 1).all()  # every row in exactly one shard
    for m in masks:  # a problem's responses all in one shard
        assert not set(ids[m]) & set(ids[~m])
    with pytest.raises(ValueError, match="out of range"):
        in_shard(ids, nshards, nshards)


# ------------------------------------------------------------------------------- scoring and merging

def _score_samples(tmp, samples: dict[str, str], outs: list[str], shard=None, adapter="trained"):
    wc = {"prm": "p", **({"shard": str(shard[0]), "nshards": str(shard[1])} if shard else {})}
    evaluation.score_samples(inputs={"responses": list(samples.values()), "features": []}, outputs={"scores": outs},
                             params={"spec": {"adapter": adapter}, "scoring": {}}, wildcards=wc, threads=1)


@pytest.mark.parametrize("n", [3, 1])  # 1: a PRM left out of prms.shard_prms (one shard0of1 table, merged)
def test_sharded_scoring_and_merge_equal_the_unsharded_tables(tmp_path, fake_scoring, n):
    samples = {}
    for bench, k in (("arith", 11), ("chain_sum", 4)):
        samples[bench] = str(tmp_path / f"responses/{bench}.parquet")
        write_table(samples_frame(bench, k, 3), samples[bench], "responses")
    benches = ["arith", "chain_sum", "unsampled"]  # a benchmark the policy does not sample: empty tables
    whole = [str(tmp_path / f"whole/{b}.parquet") for b in benches]
    _score_samples(tmp_path, samples, whole)
    # keys and scores only, in the responses' order: consumers join them with the graded samples
    got = read_table(whole[0], "step_scores")
    assert list(got.columns) == ["problem_id", "sample_idx", "step_scores", "n_steps_scored"]
    pd.testing.assert_frame_equal(got[["problem_id", "sample_idx"]],
                                  read_table(samples["arith"], "responses")[["problem_id", "sample_idx"]])
    shard_files = []
    for i in range(n):
        outs = [str(tmp_path / f"scores/{b}/shard{i}of{n}.parquet") for b in benches]
        _score_samples(tmp_path, samples, outs, shard=(i, n))
        shard_files += outs
    sizes = [len(read_table(p, "step_scores")) for p in shard_files if "/arith/" in p]
    assert len(sizes) == n and all(sizes) and sum(sizes) == 33  # each shard job scored only its part
    merged = [str(tmp_path / f"scores/{b}.parquet") for b in benches]
    evaluation.merge_sample_scores(inputs={"responses": list(samples.values()), "shards": shard_files},
                                   outputs={"scores": merged}, params={}, wildcards={"prm": "p"}, threads=1)
    for w, m in zip(whole, merged):
        pd.testing.assert_frame_equal(read_table(m, "step_scores"), read_table(w, "step_scores"))
    assert len(read_table(merged[2], "step_scores")) == 0


def test_sharded_processbench_of_an_outcome_rm_keeps_every_prefix_of_a_case(tmp_path, fake_scoring):
    cases = str(tmp_path / "cases.parquet")
    write_table(cases_frame(10).sample(frac=1, random_state=0), cases, "processbench")  # not in id order
    spec = {"spec": {"adapter": "qwen_orm"}, "scoring": {}}
    whole = str(tmp_path / "whole.parquet")
    evaluation.score_processbench(inputs={"cases": cases}, outputs={"scores": whole}, params=spec,
                                  wildcards={"prm": "orm"}, threads=1)
    shards = [str(tmp_path / f"pb/shard{i}of4.parquet") for i in range(4)]
    for i, dst in enumerate(shards):
        evaluation.score_processbench(inputs={"cases": cases}, outputs={"scores": [dst], "dev_scores": []},
                                      params=spec, wildcards={"prm": "orm", "shard": str(i), "nshards": "4"},
                                      threads=1)
    merged = str(tmp_path / "merged.parquet")
    evaluation.merge_processbench_scores(inputs={"cases": cases, "shards": shards, "dev_shards": []},
                                         outputs={"scores": merged, "dev_scores": []}, params={},
                                         wildcards={"prm": "orm"}, threads=1)
    out = read_table(merged, "pb_scores")
    pd.testing.assert_frame_equal(out, read_table(whole, "pb_scores"))
    assert (out["n_steps_scored"] == out["n_steps"]).all()  # one score per prefix, none lost to a split


def _shards(tmp_path, n_problems=6, n=3) -> tuple[pd.DataFrame, list[str]]:
    df = samples_frame("b", n_problems, 2).assign(step_scores=lambda d: [[0.5] * len(s) for s in d["steps"]])
    paths = []
    for i in range(n):
        paths.append(str(tmp_path / f"shard{i}of{n}.parquet"))
        write_table(df[in_shard(df["problem_id"], i, n)], paths[-1], "step_scores")
    return df, paths


def test_merge_refuses_a_problem_in_two_shards_naming_it(tmp_path):
    df, paths = _shards(tmp_path)
    with pytest.raises(InputError) as err:
        merge_problem_shards([*paths, paths[1]], "step_scores", df[["problem_id", "sample_idx"]])
    owned = sorted(set(df["problem_id"][in_shard(df["problem_id"], 1, 3)]))
    assert all(f"problem_id {p} is in 2 shards" in str(err.value) for p in owned)


def test_merge_refuses_a_missing_shard_or_response_naming_them(tmp_path):
    df, paths = _shards(tmp_path)
    expected = df[["problem_id", "sample_idx"]]
    lost = sorted(set(df["problem_id"][in_shard(df["problem_id"], 2, 3)]))
    with pytest.raises(InputError) as err:
        merge_problem_shards(paths[:2], "step_scores", expected)
    assert all(f"problem_id {p} is in no shard" in str(err.value) for p in lost)
    # a shard from another table (a stale split): its problems are named as foreign
    with pytest.raises(InputError, match="not in the table being scored"):
        merge_problem_shards(paths, "step_scores", expected[expected["problem_id"] != lost[0]])
    # one response of a problem missing from its shard
    part = read_table(paths[0], "step_scores")
    write_table(part.iloc[1:], paths[0], "step_scores")
    with pytest.raises(InputError, match=rf"'sample_idx': '{part['sample_idx'].iloc[0]}'.*missing"):
        merge_problem_shards(paths, "step_scores", expected)
    with pytest.raises(FileNotFoundError, match="shard9of3"):  # a shard file that is not there
        merge_problem_shards([*paths, str(tmp_path / "shard9of3.parquet")], "step_scores", expected)


# --------------------------------------------------------------------------------------- runtime and DAG

def test_scoring_runtime_grows_with_the_attempt_and_splits_over_shards():
    cap = {"cluster": {"max_runtime": 100_000}}  # above every runtime here
    one, eight = {"prms": {"shards": 1}, **cap}, {"prms": {"shards": 8}, **cap}
    for cfg in (one, eight):
        times = [plan.scoring_runtime(cfg, 480, 4, a, 3) for a in (1, 2, 3)]
        assert times[0] < times[1] < times[2] and times[1] == 2 * times[0]
    assert plan.scoring_runtime(one, 480, 4, 2, 3) == 480 * 2 * 3  # unsharded: the rule's former runtime
    assert plan.scoring_runtime(eight, 480, 4, 1, 3) == 180 and plan.scoring_runtime(eight, 120, 1, 1) == 60


def test_shards_below_one_name_the_key():
    import yaml

    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    with pytest.raises(ConfigError, match=r"prms\.shards"):
        validate_config({**cfg, "prms": {**cfg["prms"], "shards": 0}})


def test_shard_prms_split_only_the_prms_listed():
    """prms.shard_prms: a listed PRM gets prms.shards jobs, any other one job (shard0of1, the same merge);
    unset, every PRM is split; the layout (shard files or not) stays prms.shards'."""
    some = {"prms": {"shards": 3, "shard_prms": ["a"]}, "cluster": {"max_runtime": 100_000}}
    every = {"prms": {"shards": 3}}
    assert [plan.score_shards(some, p) for p in ("a", "b", None)] == [3, 1, 3]
    assert [plan.score_shards(every, p) for p in ("a", "b", None)] == [3, 3, 3]
    tables = ["results/{policy_dir}scores/{prm}/gsm8k"]
    assert plan.score_shard_paths(some, tables, {"policy_dir": "", "prm": "b"}) == [
        "results/scores/b/gsm8k/shard0of1.parquet"]
    assert plan.score_shard_paths(some, tables, {"policy_dir": "policies/x/", "prm": "a"}) == [
        f"results/policies/x/scores/a/gsm8k/shard{i}of3.parquet" for i in range(3)]
    assert plan.score_shard_paths(every, tables) == [f"{tables[0]}/shard{i}of3.parquet" for i in range(3)]
    assert plan.scoring_runtime(some, 480, 0, 1, prm="b") == 480
    assert plan.scoring_runtime(some, 480, 0, 1, prm="a") == 160


def test_shard_prms_name_prms_of_the_run():
    import yaml

    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    specs = plan.resolve_prm_specs(validate_config(cfg))
    ok = validate_config({**cfg, "prms": {**cfg["prms"], "shards": 2, "shard_prms": [next(iter(specs))]}})
    assert ok["prms"]["shard_prms"] == [next(iter(specs))]
    with pytest.raises(ConfigError, match=r"prms\.shard_prms\.1.*'mc_hrad'"):
        validate_config({**cfg, "prms": {**cfg["prms"], "shard_prms": [next(iter(specs)), "mc_hrad"]}})


def _dry(*configfiles) -> str:
    return dry_run("--cores", "2", *(["--configfile", *map(str, configfiles)] if configfiles else []))


def _jobs(out: str, rule: str) -> list[str]:
    return [b for b in re.split(r"\n(?=\[)", out) if re.search(rf"^(local)?rule {rule}:", b, re.M)]


def _plan(cfg: dict) -> tuple[dict, list[str]]:
    cfg = validate_config(cfg)
    return plan.resolve_prm_specs(cfg), list(plan.bon_policies(cfg))


def test_one_shard_plans_the_scoring_jobs_and_paths_of_before(embedded_plan):
    import yaml

    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    assert (cfg.get("prms") or {}).get("shards", 1) == 1
    specs, policies = _plan(cfg)
    out, counts = embedded_plan.out, embedded_plan.counts
    assert counts["score_samples"] == len(specs) * len(policies)
    assert counts["score_processbench"] == len(specs)
    assert "merge_sample_scores" not in counts and "merge_processbench_scores" not in counts
    assert "shard0of1" not in "".join(_jobs(out, "score_samples") + _jobs(out, "score_processbench"))
    for prm in specs:
        for b in cfg["benchmarks"]:
            assert f"results/scores/{prm}/{b}.parquet" in out
        assert f"log: logs/score_samples/{prm}.log" in out
        assert f"output: results/scores/{prm}/processbench.parquet" in out


@pytest.mark.slow
def test_three_shards_plan_three_scoring_jobs_per_prm_and_a_merge(tmp_path):
    import yaml

    overlay = tmp_path / "shards.yaml"
    overlay.write_text("prms:\n  shards: 3\n")
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    specs, policies = _plan({**cfg, "prms": {**cfg["prms"], "shards": 3}})
    out = _dry(ROOT / "config/config.yaml", overlay)
    counts = job_counts(out)
    assert counts["score_samples"] == 3 * len(specs) * len(policies)
    assert counts["merge_sample_scores"] == len(specs) * len(policies)
    assert counts["score_processbench"] == 3 * len(specs)
    assert counts["merge_processbench_scores"] == len(specs)
    prm, bench = next(iter(specs)), next(iter(cfg["benchmarks"]))
    for i in range(3):
        assert f"results/scores/{prm}/{bench}/shard{i}of3.parquet" in out
        assert f"results/scores/{prm}/processbench/shard{i}of3.parquet" in out
    jobs = _jobs(out, "score_samples")
    runtimes = {int(m) for j in jobs for m in re.findall(r"runtime=(\d+)", j)}
    assert runtimes == {plan.scoring_runtime({"prms": {"shards": 3}, "cluster": {"max_runtime": 1440}}, 480, 0, 1, 3)}


def test_more_shards_than_problems_leave_empty_shards_and_the_merge_keeps_an_orms_outcome(tmp_path, fake_scoring):
    from prm_lessons.tables import table_meta

    samples = {"arith": str(tmp_path / "responses/arith.parquet")}
    write_table(samples_frame("arith", 2, 2), samples["arith"], "responses")
    shards = [str(tmp_path / f"scores/arith/shard{i}of5.parquet") for i in range(5)]
    for i, dst in enumerate(shards):
        _score_samples(tmp_path, samples, [dst], shard=(i, 5), adapter="qwen_orm")
    assert sorted(len(read_table(p, "step_scores")) for p in shards) == [0, 0, 0, 2, 2]
    merged = str(tmp_path / "scores/arith.parquet")
    evaluation.merge_sample_scores(inputs={"responses": [samples["arith"]], "shards": shards},
                                   outputs={"scores": [merged]}, params={}, wildcards={"prm": "orm"}, threads=1)
    assert len(read_table(merged, "step_scores")) == 4
    assert table_meta(merged)["outcome"] is True and table_meta(merged)["shards"] == 5  # bon_metrics: orm@N
