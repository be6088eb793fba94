"""Grading outside the GPU jobs: `sample` writes ungraded responses, the local `grade_samples` grades their
merge, and score tables hold keys and scores only. A grading edit reruns no sampling or scoring job (their
code closures and inputs), the graded table is what grading inside the sampling job produced, and joining
the scores with the graded samples gives the Best-of-N metrics of the old full-copy score tables."""
from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from conftest import parsed_workflow
from fakes import FakeTokenizer
from prm_lessons.generation import engine as generation
from prm_lessons.generation.engine import Completion, Engine
from prm_lessons.generation.sampling import sample_problems, shard_rows
from prm_lessons.grading.pool import grade_many
from prm_lessons.metrics import bon as metrics
from prm_lessons.plan import codedeps
from prm_lessons.rules import evaluation as evaluation_rules
from prm_lessons.rules import sampling as sampling_rules
from prm_lessons.tables import TableError, join_scores, merge_shards, read_table, table_meta, write_json, write_table


class _Wildcards(SimpleNamespace):
    """Snakemake's Wildcards as input functions use them: attributes and items()."""

    def items(self):
        return vars(self).items()


ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "prm_lessons"
# the grading code: today's module, the package it may become, and the graded-table step
GRADING = re.compile(r"prm_lessons/(grading\.py|grading/|graded\.py)")
# a graded samples table: results/[policies/<name>/][search/]samples/<name>.parquet
GRADED_TABLE = re.compile(r"(^|/)samples/[^/]+\.parquet$")


# -- (a) a grading edit reruns no sampling and no scoring job ---------------------------------------------

def _inputs(rule, wc) -> list[str]:
    """The rule's declared input files for wildcards `wc` (input functions called)."""
    out = []
    for item in rule.input:
        vals = item(wc) if callable(item) else item
        stack = [vals]
        while stack:
            v = stack.pop()
            if isinstance(v, (list, tuple)):
                stack.extend(v)
            elif isinstance(v, dict):
                stack.extend(v.values())
            else:
                out.append(str(v))
    return out


def _plain(pattern: str) -> str:
    """An output pattern without its wildcard constraints ({name,regex} → {name})."""
    return re.sub(r"\{(\w+),[^{}]*(\{[^{}]*\}[^{}]*)*\}", r"{\1}", pattern)


# the GPU jobs (and their merges) whose work a grading fix must not redo
UNGRADED_RULES = ("sample", "merge_samples", "step_features", "score_samples", "merge_sample_scores", "judge",
                  "bon_judge", "merge_bon_judge")


@pytest.mark.parametrize("configfiles", [("config/config.yaml", "config/all.yaml"), ("config/paper.yaml",)],
                         ids=["embedded", "paper"])
def test_sampling_and_scoring_jobs_neither_run_grading_code_nor_read_the_graded_table(configfiles):
    with parsed_workflow(configfiles) as wf:
        g = wf.globals
        rules = {r.name: r for r in wf.rules}
        prm, bench = next(iter(g["PRM_SPECS"])), g["BON_BENCHMARKS"][0]
        judge, mode = g["JUDGE_RUNS"][0] if g["JUDGE_RUNS"] else ("none", "pointwise")
        wc = _Wildcards(policy_dir="", prm=prm, dataset=bench, shard="0", nshards="1", judge=judge, mode=mode,
                             source=f"responses/{bench}")
        seen = set()
        for name in UNGRADED_RULES:
            if name not in rules:  # merges exist only with shards > 1
                continue
            seen.add(name)
            func = dict(rules[name].params.items())["func"]
            closure = codedeps.rule_code_inputs(PKG, func)
            # the LLM judges of Best-of-N import grading through `metrics` (bon_judge_metrics' code shares the
            # module): their inputs are ungraded, their code closure is the metrics split's to cut
            if not name.endswith("bon_judge"):
                assert not [p for p in closure if GRADING.search(p)], f"{name} runs grading code"
            files = _inputs(rules[name], wc)
            assert not [f for f in files if GRADED_TABLE.search(f)], f"{name} reads a graded samples table: {files}"
            # nor a grading setting: a grading.grader edit reruns none of them
            given = {k: v for k, v in rules[name].params.items() if not callable(v)}
            assert '"grader":' not in json.dumps(given, default=str), f"{name} gets grading.grader"
        # what they read instead: the ungraded responses
        assert [f for f in _inputs(rules["score_samples"], wc) if f.startswith("results/responses/")]
        assert [_plain(str(f)) for f in rules["sample"].output] == [
            "results/{policy_dir}responses/{dataset}/shard{shard}of{nshards}.parquet"]
        sources = rules["step_features"].wildcard_constraints["source"]
        assert re.fullmatch(sources, f"responses/{bench}") and not re.fullmatch(sources, f"samples/{bench}")
        # grading itself runs in the local rule, which writes the graded table every consumer reads
        assert GRADING.search(" ".join(codedeps.rule_code_inputs(PKG, "sampling:grade_samples")))
        assert [_plain(str(f)) for f in rules["grade_samples"].output] == [
            "results/{policy_dir}samples/{dataset}.parquet"]
        # ... with the whole grading section as a param: a grader edit regrades
        want = "harness" if "config/paper.yaml" in configfiles else "math_verify"
        assert dict(rules["grade_samples"].params.items())["grading"]["grader"] == want
        assert {"sample", "merge_samples", "step_features", "score_samples", "judge", "bon_judge"} <= seen


# -- (b) the graded table is what grading in the sampling job produced -------------------------------------

class VariedEngine(Engine):
    """Responses that differ by sample: right, wrong, and without an answer (no pred)."""

    backend = "fake"
    tokenizer = FakeTokenizer()

    def generate(self, prompts, spec, seeds=None):
        texts = ["first step\n\nso \\boxed{{{a}}}", "a step\n\nthe answer is \\boxed{{{b}}}", "I give up\n\nno idea"]
        return [[Completion(texts[(s + k) % 3].format(a=s % 3, b=(s + 1) % 3), 5 + k, "stop")
                 for k in range(spec.n)] for s in seeds]


SAMPLING = {"temperature": 0.7, "top_p": 0.8, "max_tokens": 16, "seed": 0, "step_separator": "\n\n", "batch_size": 3,
            "long_questions": "error"}
GRADING_CFG = {"timeout_s": 5, "workers": 1}


def _problems(n=7) -> pd.DataFrame:
    return pd.DataFrame({"problem_id": [f"d-{i:05d}" for i in range(n)], "dataset": "d",
                         "question": [f"q{i}" for i in range(n)], "answer": [str(i % 3) for i in range(n)],
                         "gold_steps": None})


def _old_graded_table(problems: pd.DataFrame, nshards: int, n: int, tmp: Path, engines: list) -> Path:
    """What the workflow wrote before: each sample job graded its shard (sampling.sample_problems then
    grade_many, columns pred/correct/grade_status appended), merge_samples merged the graded shards."""
    shards = []
    for i in range(nshards):
        df = sample_problems(VariedEngine(), shard_rows(problems, i, nshards), n=n, sampling=SAMPLING)
        results = grade_many(list(df["response"]), list(df["answer"]), timeout_s=5, workers=1, answer_format="plain")
        df["pred"] = [r.pred for r in results]
        df["correct"] = [bool(r.correct) for r in results]
        df["grade_status"] = [r.status for r in results]
        path = tmp / f"old/shard{i}of{nshards}.parquet"
        write_table(df, path, "samples", meta={"policy": "p", "sampling": SAMPLING,
                                               "long_questions": df.attrs["long_questions"]})
        shards.append(path)
    df, _ = merge_shards(shards, "samples")
    out = tmp / "old/d.parquet"
    write_table(df, out, "samples", meta={"long_questions": {"n_skipped": 0, "skipped": {}}, "engines": engines,
                                          "grading": {"grader": "math_verify", "timeout_s": 5}})
    return out


def test_grade_samples_writes_what_grading_in_the_sampling_job_wrote(tmp_path, monkeypatch):
    problems, nshards, n = _problems(), 3, 4
    probs_path = tmp_path / "problems/d.parquet"
    write_table(problems, probs_path, "problems", meta={"spec": {"answer_format": "plain"}})
    monkeypatch.setattr(generation, "load_engine", lambda *a, **k: VariedEngine())
    shards = []
    for i in range(nshards):
        shards.append(str(tmp_path / f"responses/d/shard{i}of{nshards}.parquet"))
        sampling_rules.sample(inputs={"problems": str(probs_path)}, outputs={"responses": shards[-1]},
                              params={"model": {"name": "p"}, "model_dir": "unused", "sampling": SAMPLING, "n": n,
                                      "limit": None},
                              wildcards={"shard": str(i), "nshards": str(nshards), "dataset": "d"}, threads=1)
        assert not {"pred", "correct", "grade_status"} & set(read_table(shards[-1], "responses").columns)
    responses = str(tmp_path / "responses/d.parquet")
    sampling_rules.merge_samples(inputs={"shards": shards}, outputs={"responses": responses}, params={},
                                 wildcards={"dataset": "d"}, threads=1)
    graded = tmp_path / "samples/d.parquet"
    sampling_rules.grade_samples(inputs={"responses": responses, "problems": str(probs_path)},
                                 outputs={"samples": str(graded)}, params={"grading": GRADING_CFG},
                                 wildcards={"dataset": "d"}, threads=1)
    # where the shards were sampled (the report's provenance line): one record, this host
    engines = table_meta(graded)["engines"]
    assert len(engines) == 1 and engines[0]["host"] == platform.node() and engines[0]["cpus"] == os.cpu_count()
    old = _old_graded_table(problems, nshards, n, tmp_path, engines)
    new_df, old_df = read_table(graded, "samples"), read_table(old, "samples")
    pd.testing.assert_frame_equal(new_df, old_df)
    # every grade status the fixture can give: right, wrong, no answer
    assert new_df["correct"].any() and not new_df["correct"].all() and new_df["pred"].isna().any()
    assert table_meta(graded) == table_meta(old)
    assert graded.read_bytes() == old.read_bytes()  # the same file, byte for byte


def test_grade_samples_grades_with_the_configured_grader_and_records_it(tmp_path):
    """`grading.grader` picks the comparison and the samples table's metadata records it: the harness never
    matches the gold "10{,}000" (math-verify does), and Minerva Math keeps its units (answer_key.KEEP_UNITS)."""
    responses = tmp_path / "responses.parquet"
    rows = [{"problem_id": f"d-{i}", "sample_idx": 0, "dataset": "d", "question": "q", "answer": gold,
             "response": text, "steps": ["s"], "n_tokens": 3, "finish_reason": "stop"}
            for i, (text, gold) in enumerate([("\\boxed{10000}", "10{,}000"), ("\\boxed{5 m}", "5")])]
    write_table(pd.DataFrame(rows), responses, "responses", meta={"long_questions": None})
    probs = tmp_path / "problems.parquet"
    write_table(_problems(1), probs, "problems", meta={"spec": {"answer_format": "plain"}})
    out = {}
    for grader, dataset in (("math_verify", "d"), ("harness", "d"), ("harness", "minerva_math")):
        dst = tmp_path / f"{grader}-{dataset}.parquet"
        sampling_rules.grade_samples(inputs={"responses": str(responses), "problems": str(probs)},
                                     outputs={"samples": str(dst)},
                                     params={"grading": {**GRADING_CFG, "grader": grader}},
                                     wildcards={"dataset": dataset}, threads=1)
        assert table_meta(dst)["grading"] == {"grader": grader, "timeout_s": 5}
        out[grader, dataset] = read_table(dst, "samples")["correct"].tolist()
    assert out == {("math_verify", "d"): [True, True], ("harness", "d"): [False, True],
                   ("harness", "minerva_math"): [False, False]}


# -- (c) the join gives the Best-of-N metrics of the old full-copy score tables ---------------------------

BON = {"n": 4, "aggregations": ["product", "min", "last"], "maj_grouping": "normalized",
       "bootstrap": {"samples": 50, "seed": 0, "confidence": 0.95}}


def _graded(bench: str, n_problems: int, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_problems):
        for i in range(n):
            pred = [None, "1", "2", "1.0"][int(rng.integers(0, 4))]
            rows.append({"problem_id": f"{bench}-{p:05d}", "sample_idx": i, "dataset": bench, "question": "q",
                         "answer": "1", "response": str(pred), "steps": ["a", "b"], "pred": pred,
                         "correct": pred in ("1", "1.0"), "grade_status": "ok" if pred else "no_answer",
                         "n_tokens": 3, "finish_reason": "stop"})
    return pd.DataFrame(rows)


def _scores(samples: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    scores = [[float(x) for x in rng.random(2)] for _ in range(len(samples))]
    scores[1] = []  # a response without a scored step
    return pd.DataFrame({"problem_id": samples["problem_id"], "sample_idx": samples["sample_idx"],
                         "step_scores": scores, "n_steps_scored": [len(s) for s in scores]})


def test_bon_metrics_from_joined_scores_equal_those_of_full_copy_score_tables(tmp_path):
    samples_paths, score_paths, old_frames = [], [], []
    for k, bench in enumerate(("arith", "chain")):
        samples = _graded(bench, 6, 4, seed=k)
        scores = _scores(samples, seed=10 + k)
        samples_paths.append(str(tmp_path / f"samples/{bench}.parquet"))
        score_paths.append(str(tmp_path / f"scores/prm/{bench}.parquet"))
        write_table(samples, samples_paths[-1], "samples")
        write_table(scores, score_paths[-1], "step_scores", meta={"outcome": False})
        # the old score table: a full copy of the samples with the scores
        old = samples.assign(step_scores=scores["step_scores"], n_steps_scored=scores["n_steps_scored"])
        write_table(old, tmp_path / f"old_{bench}.parquet", "step_scores")
        pd.testing.assert_frame_equal(join_scores(read_table(samples_paths[-1], "samples"),
                                                  read_table(score_paths[-1], "step_scores")),
                                      read_table(tmp_path / f"old_{bench}.parquet", "step_scores"))
        old_frames.append(old.assign(benchmark=bench))
    out = tmp_path / "m.json"
    evaluation_rules.bon_metrics(inputs={"samples": samples_paths, "scores": score_paths},
                                 outputs={"metrics": str(out)},
                                 params={"bon": BON, "policy": "p", "ns": {"arith": [4, 2], "chain": [4]}},
                                 wildcards={"prm": "prm"}, threads=1)
    got = json.loads(out.read_text())
    df = pd.concat(old_frames, ignore_index=True)
    for n, benches in ((4, ["arith", "chain"]), (2, ["arith"])):
        want = metrics.bon_metrics(metrics.first_n_samples(df[df["benchmark"].isin(benches)], n), BON["aggregations"],
                                   n=n, maj_grouping="normalized", bootstrap=50, seed=0, confidence=0.95, workers=1)
        write_json(want, tmp_path / f"want{n}.json")  # the rule's encoding
        want = json.loads((tmp_path / f"want{n}.json").read_text())
        part = got if n == 4 else got["by_n"]["2"]
        for key in ("benchmarks", "average", "vs_maj", "unscored", "n_unscored", "maj_comparisons"):
            assert part[key] == want[key], (n, key)


def test_a_stale_score_table_is_an_error_naming_a_response():
    samples = _graded("arith", 2, 2, seed=0)
    scores = _scores(samples, seed=1)
    with pytest.raises(TableError, match=r"response \('arith-00001', 1\) has no score row"):
        join_scores(samples, scores.iloc[:-1])
    extra = pd.concat([scores, scores.iloc[:1].assign(problem_id="arith-00009")], ignore_index=True)
    with pytest.raises(TableError, match=r"score row \('arith-00009', 0\) is no response"):
        join_scores(samples, extra)


def test_problems_tables_need_only_the_gold_helpers_of_grading():
    """Rule `problems` (upstream of every sampling job) reads golds with grading.golds only: a fix to the
    harness's prediction extraction (grading.extract) or to math-verify grading (grading.pool) reruns no
    problems table, so no sampling or scoring job either."""
    closure = codedeps.rule_code_inputs(ROOT / "src/prm_lessons", "data:problems")
    grading = sorted(p for p in closure if "prm_lessons/grading/" in p)
    assert [p.rsplit("/", 1)[-1] for p in grading] == ["__init__.py", "golds.py"], grading
