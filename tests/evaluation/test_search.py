"""PRM-guided greedy search (prm_lessons.evaluation.search) with a scripted engine and PRM, its config, its sharded
jobs and their merge (the incremental candidate scorer: test_search_scorers.py)."""
from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fakes import FakeTokenizer
from prm_lessons.evaluation import search
from prm_lessons.evaluation.search import SearchSettings, greedy_search, pick
from prm_lessons.generation.engine import Completion, Engine


class _Tok(FakeTokenizer):
    def encode(self, text, add_special_tokens=True):
        return text.split()


class StepEngine(Engine):
    """Candidates that depend only on the request seed: candidate j of a request is "s<seed % 997>c<j>".
    A candidate ends the response when the seed says so (p_end), or never; `empty` candidates are blank."""

    backend = "fake"

    def __init__(self, p_end=0.3, n_tokens=5, empty=False):
        super().__init__()
        self.tokenizer = _Tok()
        self.p_end, self.n_tokens, self.empty = p_end, n_tokens, empty
        self.calls: list[int] = []

    def generate(self, prompts, spec, seeds=None):
        assert seeds is not None and spec.stop == ["\n\n"]
        self.calls.append(len(prompts))
        out = []
        for s in seeds:
            rnd = random.Random(s)
            out.append([Completion("  " if self.empty else f" s{s % 997}c{j} ", self.n_tokens, "stop",
                                   ended=rnd.random() < self.p_end) for j in range(spec.n)])
        return out


def _hash_score(prefix, cand) -> float:
    h = hashlib.sha256(("|".join(prefix) + "#" + cand).encode()).digest()
    return h[0] / 255.0


class FakeScorer:
    """Scores from a function of (prefix, candidate); records every call."""

    def __init__(self, fn=_hash_score):
        self.fn, self.calls, self.released = fn, [], []
        self.tokens_by_key: dict = {}

    def score(self, requests):
        self.calls.append(len(requests))
        out = []
        for key, q, prefix, cands in requests:
            out.append([self.fn(prefix, c) for c in cands])
            self.tokens_by_key[key] = self.tokens_by_key.get(key, 0) + len(cands)
        return out

    def release(self, key):
        self.released.append(key)


def _problems(n=5):
    return pd.DataFrame({"problem_id": [f"p-{i:05d}" for i in range(n)], "dataset": "p",
                         "question": [f"What is {i} + {i}?" for i in range(n)],
                         "answer": [str(2 * i) for i in range(n)]})


def _settings(**kw):
    base = dict(candidates=4, max_step_tokens=8, max_steps=6, max_tokens=1000, seed=3)
    base.update(kw)
    return SearchSettings(**base)


def test_pick_is_argmax_ties_lowest_nan_never():
    assert pick([0.1, 0.7, 0.7, 0.2]) == 1
    assert pick([float("nan"), 0.3, None, 0.3]) == 1
    assert pick([float("nan"), None]) is None


def test_chosen_path_is_the_argmax_at_every_depth():
    recs = greedy_search(StepEngine(), FakeScorer(), _problems(), _settings())
    for r in recs:
        assert len(r["steps"]) == r["n_depths"] == len(r["chosen"])
        for d, (cands, scores, j) in enumerate(zip(r["candidates"], r["candidate_scores"], r["chosen"])):
            want = [_hash_score(r["steps"][:d], c) for c in cands]
            assert scores == pytest.approx(want)
            assert j == int(np.argmax(want))  # numpy's argmax: first of the maxima
            assert r["steps"][d] == cands[j]
        # the step-format contract: the response splits back into the kept steps
        from prm_lessons.steps import split_steps
        assert split_steps(r["response"]) == r["steps"]
        assert r["status"] in ("ended", "max_steps")
        assert (r["status"] == "ended") == r["candidate_ended"][-1][r["chosen"][-1]]


def test_ties_go_to_the_lowest_candidate_index():
    recs = greedy_search(StepEngine(p_end=0.0), FakeScorer(lambda p, c: 0.5), _problems(3), _settings(max_steps=3))
    for r in recs:
        assert r["chosen"] == [0, 0, 0]
        assert all(s == c[0] for s, c in zip(r["steps"], r["candidates"]))


def test_limits_are_counted():
    # never ends: every problem stops at max_steps with exactly max_steps steps
    recs = greedy_search(StepEngine(p_end=0.0), FakeScorer(), _problems(4), _settings(max_steps=3))
    assert [r["status"] for r in recs] == ["max_steps"] * 4 and all(len(r["steps"]) == 3 for r in recs)
    # the kept path's policy tokens reach max_tokens (5 tokens a step): after 2 steps
    recs = greedy_search(StepEngine(p_end=0.0), FakeScorer(), _problems(4), _settings(max_steps=10, max_tokens=10))
    assert [r["status"] for r in recs] == ["max_tokens"] * 4 and all(r["tokens_path"] == 10 for r in recs)
    assert all(r["tokens_generated"] == 2 * 4 * 5 for r in recs)  # K candidates of 5 tokens per depth
    # blank candidates: nothing to score, counted
    scorer = FakeScorer()
    recs = greedy_search(StepEngine(empty=True), scorer, _problems(2), _settings())
    assert [r["status"] for r in recs] == ["no_candidate"] * 2 and all(r["steps"] == [] for r in recs)
    assert scorer.calls == [0] and sorted(scorer.released) == ["p-00000", "p-00001"]
    # the prompt no longer fits the policy's context
    recs = greedy_search(StepEngine(), FakeScorer(), _problems(2), _settings(), max_model_len=5)
    assert [r["status"] for r in recs] == ["context"] * 2
    df = search.grade_records(greedy_search(StepEngine(p_end=0.0), FakeScorer(), _problems(3),
                                            _settings(max_steps=2)), {"timeout_s": 5.0})
    assert search.summary(df)["status"]["max_steps"] == 3


def test_batching_all_problems_gives_the_same_paths_as_one_at_a_time():
    probs = _problems(7)
    eng_b, sc_b = StepEngine(), FakeScorer()
    batched = greedy_search(eng_b, sc_b, probs, _settings(batch_size=64))
    eng_1 = StepEngine()
    single = greedy_search(eng_1, FakeScorer(), probs, _settings(batch_size=1))
    keys = ["steps", "status", "candidates", "candidate_scores", "chosen", "tokens_generated"]
    assert [{k: r[k] for k in keys} for r in batched] == [{k: r[k] for k in keys} for r in single]
    depth = max(r["n_depths"] for r in batched)
    assert len(eng_b.calls) == depth == len(sc_b.calls)  # one engine call and one scorer call per depth
    assert eng_b.calls[0] == len(probs) and len(eng_1.calls) == sum(r["n_depths"] for r in single)


def test_an_engine_that_cannot_tell_an_end_is_refused():
    class NoEnd(StepEngine):
        def generate(self, prompts, spec, seeds=None):
            return [[Completion(c.text, c.n_tokens, c.finish_reason) for c in cs]
                    for cs in super().generate(prompts, spec, seeds)]

    with pytest.raises(ValueError, match="ended"):
        greedy_search(NoEnd(), FakeScorer(), _problems(1), _settings())


def test_search_metrics_rows_and_paired_difference():
    rng = np.random.default_rng(0)
    rows = []
    for b in ("a", "b"):
        for i in range(10):
            for k in range(4):
                ok = bool(rng.random() < 0.5)
                rows.append({"benchmark": b, "problem_id": f"{b}-{i}", "sample_idx": k,
                             "pred": "1" if ok else str(k + 2), "correct": ok})
    samples = pd.DataFrame(rows)
    greedy = pd.DataFrame({"benchmark": ["a"] * 10 + ["b"] * 10,
                           "problem_id": [f"a-{i}" for i in range(10)] + [f"b-{i}" for i in range(10)],
                           "correct": [True] * 20})
    table = search.problem_table({"x": greedy}, samples, 4)
    assert table["greedy_x"].eq(1.0).all()
    out = pd.DataFrame(search.search_metrics(table, ["x"], n=4, candidates=8, bootstrap=200))
    g = out[(out["prm"] == "x") & (out["metric"] == "greedy")]
    assert (g["accuracy"] == 1.0).all() and (g["n"] == 8).all()
    for b in ("a", "b", "average"):
        maj = out[(out["metric"] == "maj") & (out["benchmark"] == b)]["accuracy"].iloc[0]
        d = out[(out["metric"] == "greedy-maj") & (out["benchmark"] == b)].iloc[0]
        assert d["accuracy"] == pytest.approx(1.0 - maj)
        assert d["ci_low"] <= d["accuracy"] <= d["ci_high"]
    p1 = out[(out["metric"] == "pass1") & (out["benchmark"] == "a")]["accuracy"].iloc[0]
    assert p1 == pytest.approx(samples[samples["benchmark"] == "a"]["correct"].mean())


# ----------------------------------------------------------------------------------------------
# config and DAG names
# ----------------------------------------------------------------------------------------------

def _embedded():
    """`make run-all`'s config (config.yaml + config/all.yaml): the one that searches."""
    from pathlib import Path

    import yaml

    from prm_lessons.config import deep_update

    root = Path(__file__).resolve().parents[2]
    return deep_update(yaml.safe_load((root / "config/config.yaml").read_text()),
                       yaml.safe_load((root / "config/all.yaml").read_text()))


@pytest.mark.parametrize("patch, path", [
    ({"search": {"prms": ["nope"]}}, "search.prms.0"),
    ({"search": {"orm": "nope"}}, "search.orm"),
    ({"search": {"policy": "nope"}}, "search.policy"),
    ({"search": {"benchmarks": ["nope"]}}, "search.benchmarks.0"),
    ({"search": {"candidates": 0}}, "search.candidates"),
    ({"search": {"scoring": "fast"}}, "search.scoring"),
    ({"search": {"prms": ["human"], "cand": 3}}, "search.cand"),
])
def test_bad_search_config_names_the_key(patch, path):
    from prm_lessons.config import ConfigError, deep_update, validate_config

    with pytest.raises(ConfigError, match=f"`{path}`"):
        validate_config(deep_update(_embedded(), patch))


def test_search_reuses_best_of_n_samples_only_for_the_same_policy_and_n():
    from prm_lessons import plan
    from prm_lessons.config import deep_update, validate_config

    cfg = validate_config(_embedded())
    assert plan.search_reuses_samples(cfg) and plan.search_samples_path(cfg, "arith") == "results/samples/arith.parquet"
    assert plan.search_prms(cfg, plan.resolve_prm_specs(cfg)) == ["human", "mc_hard"]
    other = validate_config(deep_update(_embedded(), {"search": {"n": 2, "orm": "judge"}}))
    assert plan.search_n(cfg) == cfg["bon"]["n"] and plan.search_n(other) == 2
    assert not plan.search_reuses_samples(other)
    assert plan.search_samples_path(other, "arith") == "results/search/samples/arith.parquet"
    assert plan.search_orm_path(other, "arith") == "results/search/scores/judge/arith.parquet"


# ----------------------------------------------------------------------------------------------
# sharded search (search.shards): shard jobs + merge == the one job; the merge refuses bad shard sets
# ----------------------------------------------------------------------------------------------

class _StatsScorer(FakeScorer):
    def __init__(self):
        super().__init__()
        from types import SimpleNamespace

        self.stats = SimpleNamespace(tokens=0, forward_passes=0, seconds=0.0)


@pytest.fixture
def fake_search(monkeypatch):
    pytest.importorskip("torch")
    from prm_lessons.generation import engine as generation

    monkeypatch.setattr(generation, "load_engine", lambda model_dir, entry: StepEngine(p_end=0.25))
    monkeypatch.setattr("prm_lessons.scoring.load.load_adapter", lambda spec, backend=None: object())
    monkeypatch.setattr("prm_lessons.evaluation.search_scorers.candidate_scorer", lambda *a, **k: _StatsScorer())


SEARCH_CFG = {"candidates": 3, "temperature": 1.0, "top_p": 1.0, "max_step_tokens": 8, "max_steps": 5,
              "max_tokens": 1000, "seed": 3, "batch_size": 4, "limit": 9}


def _problem_tables(tmp_path) -> list[str]:
    from prm_lessons.tables import write_table

    paths = []
    for bench, n in (("arith", 13), ("chain_sum", 2)):
        df = _problems(n).assign(dataset=bench, gold_steps=None)
        df["problem_id"] = [f"{bench}-{i:05d}" for i in range(n)]
        paths.append(str(tmp_path / f"problems/{bench}.parquet"))
        # not in id order; the metadata as rule problems writes it (the spec names the answer format)
        write_table(df.sample(frac=1, random_state=1), paths[-1], "problems",
                    meta={"dataset": bench, "spec": {"source": "reasoning_gym", "answer_format": "plain"}})
    return paths


def _run_search(problems, outs, shard=None):
    from prm_lessons.rules import search as rules

    wc = {"prm": "p", **({"shard": str(shard[0]), "nshards": str(shard[1])} if shard else {})}
    rules.search_greedy(inputs={"problems": problems}, outputs={"search": outs}, wildcards=wc, threads=1,
                        params={"search": SEARCH_CFG, "sampling": {"step_separator": "\n\n"},
                                "grading": {"timeout_s": 5.0, "workers": 1}, "model": {"name": "fake"},
                                "model_dir": "unused", "spec": {},
                                "scoring": {"batch_tokens": 16384, "batch_size": 64}})


def _sharded(tmp_path, problems, n) -> list[str]:
    files = []
    for i in range(n):
        outs = [str(tmp_path / f"search/{b}/shard{i}of{n}.parquet") for b in ("arith", "chain_sum")]
        _run_search(problems, outs, (i, n))
        files += outs
    return files


def _merge(problems, shards, outs):
    from prm_lessons.rules import search as rules

    rules.merge_search(inputs={"problems": problems, "shards": shards}, outputs={"search": outs},
                       params={"limit": SEARCH_CFG["limit"]}, wildcards={"prm": "p"}, threads=1)


def test_sharded_search_and_merge_write_the_unsharded_tables(tmp_path, fake_search, caplog):
    import logging

    import pyarrow.parquet as pq

    problems = _problem_tables(tmp_path)
    whole = [str(tmp_path / f"whole/{b}.parquet") for b in ("arith", "chain_sum")]
    _run_search(problems, whole)
    # 4 shards of chain_sum's 2 problems: two shards are empty (and so is every table of one shard job)
    with caplog.at_level(logging.INFO):
        shards = _sharded(tmp_path, problems, 4)
    started = [r.getMessage() for r in caplog.records if r.getMessage().startswith("search_greedy p: shard")]
    assert len(started) == 4 and sum(int(m.split(", ")[1].split()[0]) for m in started) == 9 + 2
    progress = [r.getMessage() for r in caplog.records if "depth" in r.getMessage() and "done" in r.getMessage()]
    assert progress and all("tokens/s" in m and "ETA" in m for m in progress)
    sizes = [len(pd.read_parquet(p)) for p in shards if "/arith/" in p]
    assert all(sizes) and sum(sizes) == 9  # search.limit first, then whole problems per shard
    merged = [str(tmp_path / f"search/{b}.parquet") for b in ("arith", "chain_sum")]
    _merge(problems, shards, merged)
    for w, m in zip(whole, merged):
        assert pq.read_table(m).equals(pq.read_table(w))  # same columns, types, rows and order
        assert pq.read_schema(m).names == pq.read_schema(w).names == search.SEARCH_COLUMNS
    assert len(pd.read_parquet(merged[0])) == 9


def test_merge_refuses_overlapping_missing_and_foreign_problems_naming_them(tmp_path, fake_search):
    from prm_lessons.errors import InputError
    from prm_lessons.tables import read_table, write_table

    problems = _problem_tables(tmp_path)
    shards = _sharded(tmp_path, problems, 2)
    arith = [p for p in shards if "/arith/" in p]
    out = [str(tmp_path / f"m/{b}.parquet") for b in ("arith", "chain_sum")]
    rest = [p for p in shards if p not in arith]
    # a shard twice (another split's copy of it): its problems are in two shards
    with pytest.raises(InputError, match=r"problem_id arith-\d+ is in 2 shard rows"):
        _merge(problems, arith + [arith[0]] + rest, out)
    # a lost row: a shard table without one of its problems
    first = read_table(arith[0], None)
    lost = str(first["problem_id"].iloc[0])
    write_table(first.iloc[1:], arith[0], None)
    with pytest.raises(InputError, match=f"problem_id {lost} is in no shard"):
        _merge(problems, shards, out)
    # a foreign problem: a stale shard of another problems table
    write_table(pd.concat([first, first.iloc[:1].assign(problem_id="arith-99999")]), arith[0], None)
    with pytest.raises(InputError, match="problem_id arith-99999 .* is not a searched problem"):
        _merge(problems, shards, out)
    assert not any(Path(p).exists() for p in out)  # nothing half-merged is left to trust


def test_search_shards_plan_paths_and_runtime():
    from prm_lessons import plan
    from prm_lessons.config import ConfigError, deep_update, validate_config

    cfg = validate_config(_embedded())
    specs = plan.resolve_prm_specs(cfg)
    assert plan.search_shards(cfg) == 1  # the default keeps today's paths and runtime
    assert plan.search_outputs(cfg, ["arith"]) == ["results/search/{prm}/arith.parquet"]
    assert plan.search_log(cfg) == "logs/search_greedy/{prm}.log"
    assert plan.search_minutes(cfg, specs, "human") == 720
    four = validate_config(deep_update(_embedded(), {"search": {"shards": 4}}))
    assert plan.search_outputs(four, ["arith"]) == ["results/search/{prm}/arith/shard{shard}of{nshards}.parquet"]
    assert plan.search_shard_paths(four, ["arith"]) == [f"results/search/{{prm}}/arith/shard{i}of4.parquet"
                                                        for i in range(4)]
    assert plan.search_minutes(four, specs, "human") == 180
    assert plan.search_minutes(validate_config(deep_update(_embedded(), {"search": {"shards": 64}})), specs,
                               "human") == plan.SEARCH_FLOOR
    with pytest.raises(ConfigError, match="`search.shards`"):
        validate_config(deep_update(_embedded(), {"search": {"shards": 0}}))
