"""Problem loaders (prm_lessons.data.problems): reasoning-gym, local files and their formats, the Hub, the
paper's pinned benchmark files (checksums, row counts), and the problems rule. ProcessBench:
test_processbench_loader.py; error injection: tests/labels/test_construction.py."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import FIXTURES, ROOT, shared_data_dir
from prm_lessons.data.problems import load_problems
from prm_lessons.data.processbench import load_processbench
from prm_lessons.labels.construction import final_answer_text
from prm_lessons.rules.data import problems as rule_problems
from prm_lessons.tables import read_table
from specs import ARITH, paper_config

FIX = FIXTURES / "data"


# ----------------------------------------------------------------------------------------- loaders

def test_reasoning_gym_loader_stable_ids_and_gold_steps():
    a = load_problems("arith", ARITH)
    b = load_problems("arith", ARITH)
    pd.testing.assert_frame_equal(a, b)
    assert list(a["problem_id"][:2]) == ["arith-00000", "arith-00001"]
    assert set(a["dataset"]) == {"arith"}
    assert all(isinstance(s, list) and s for s in a["gold_steps"])
    for row in a.itertuples():
        assert final_answer_text(row.gold_steps) == row.answer


def test_basic_arithmetic_answers_follow_operator_precedence(caplog):
    """reasoning-gym computes '1 - 7 * 3' left to right (-18); the question means -20. Seed 2001 (the
    embedded ProcessBench arith subset) has such items; every answer must equal the expression's value."""
    import reasoning_gym

    from prm_lessons.labels.arith import eval_arith, fmt_number

    spec = {"source": "reasoning_gym", "generator": "basic_arithmetic", "size": 40, "seed": 2001,
            "params": {"min_terms": 2, "max_terms": 4, "min_digits": 1, "max_digits": 1,
                       "operators": ["+", "-", "*"], "allow_parentheses": False, "allow_negation": False}}
    source = reasoning_gym.create_dataset("basic_arithmetic", size=40, seed=2001, **spec["params"])
    wrong = [i for i, item in enumerate(source)
             if fmt_number(eval_arith(item["metadata"]["expression"])) != item["answer"]]
    assert wrong, "the source no longer errs on this seed: pick one where it does"
    with caplog.at_level("WARNING"):
        df = load_problems("arith", spec)
    for i, row in enumerate(df.itertuples()):
        assert row.answer == fmt_number(eval_arith(source[i]["metadata"]["expression"]))
        assert row.gold_steps and final_answer_text(row.gold_steps) == row.answer  # no item lost its gold steps
    assert f"{len(wrong)} of 40 answers corrected" in caplog.text


def test_precedence_answer_leaves_inexact_divisions_and_other_generators():
    from prm_lessons.data.problems import precedence_answer

    assert precedence_answer("basic_arithmetic", "7 / 2 + 1", "4") == "4"  # floored by the source: kept
    assert precedence_answer("basic_arithmetic", "8 / 2 * 3", "12") == "12"
    assert precedence_answer("basic_arithmetic", "2 + 8 / 2", "5") == "6"
    assert precedence_answer("chain_sum", "1 - 7 * 3", "-18") == "-18"
    assert precedence_answer("basic_arithmetic", None, "3") == "3"


def test_reasoning_gym_gsm_symbolic_uses_worked_solution():
    df = load_problems("gsm", {"source": "reasoning_gym", "generator": "gsm_symbolic", "size": 2, "seed": 1})
    for row in df.itertuples():
        assert len(row.gold_steps) >= 2
        assert row.gold_steps[-1] == f"The final answer is $\\boxed{{{row.answer}}}$."
        assert not any("####" in s for s in row.gold_steps)


def test_local_jsonl_with_field_mapping_and_boxed_answers():
    spec = {"source": "local", "path": str(FIX / "local_problems.jsonl"), "answer_format": "boxed",
            "fields": {"question": "problem", "answer": "solution", "gold_steps": "solution", "id": "uid"}}
    df = load_problems("loc", spec)
    assert list(df["answer"]) == ["2", "\\frac{1}{2}", "12"]
    assert list(df["source_id"]) == ["p1", "p2", "p3"]
    assert df["gold_steps"][0] == ["We add.", "$1 + 1 = 2$, so the answer is $\\boxed{2}$."]
    assert len(df["gold_steps"][1]) == 2  # several blank lines are one separator
    spec["limit"] = 2
    assert len(load_problems("loc", spec)) == 2


def test_local_gsm8k_format():
    spec = {"source": "local", "path": str(FIX / "gsm8k_style.jsonl"), "answer_format": "gsm8k"}
    df = load_problems("g", spec)
    assert list(df["answer"]) == ["9", "2400"]
    assert df["gold_steps"][0] == ["She has 16 - 3 = 13 after breakfast.", "Then 13 - 4 = 9 are left.",
                                   "The final answer is $\\boxed{9}$."]


def test_local_choice_format_mmlu_style():
    spec = {"source": "local", "path": str(FIX / "mmlu_style.jsonl"), "answer_format": "choice",
            "fields": {"choices": "choices"}}
    df = load_problems("m", spec)
    assert df["answer"][0] == "C"
    assert df["question"][0].endswith("Answer Choices: (A) 4 (B) 6 (C) 7 (D) 9")


def test_local_parquet_and_json(tmp_path):
    rows = [{"question": "1+1?", "answer": "$2$"}, {"question": "Pick", "answer": ["3", "4"]}]
    pd.DataFrame([rows[0]]).to_parquet(tmp_path / "p.parquet")
    (tmp_path / "p.json").write_text(json.dumps(rows))
    assert load_problems("x", {"source": "local", "path": str(tmp_path / "p.parquet")})["answer"][0] == "2"
    df = load_problems("x", {"source": "local", "path": str(tmp_path / "p.json"), "fields": {"answer_list": True}})
    assert list(df["answer"]) == ["2", "3, 4"]


def test_bad_row_names_the_row():
    spec = {"source": "local", "path": str(FIX / "bad_problems.jsonl"),
            "fields": {"question": "q", "answer": "a", "id": "uid"}}
    with pytest.raises(ValueError, match=r"row b-00001 \(id bad-7\): missing answer"):
        load_problems("b", spec)


def test_empty_question_and_unknown_field_are_errors(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"question": "  ", "answer": "1"}) + "\n")
    with pytest.raises(ValueError, match=r"row e-00000: empty question"):
        load_problems("e", {"source": "local", "path": str(path)})
    with pytest.raises(ValueError, match=r"no field 'problem'"):
        load_problems("e", {"source": "local", "path": str(path), "fields": {"question": "problem"}})
    with pytest.raises(ValueError, match=r"no \\boxed"):
        load_problems("e", {"source": "local", "path": str(FIX / "gsm8k_style.jsonl"), "answer_format": "boxed"})
    with pytest.raises(FileNotFoundError):
        load_problems("e", {"source": "local", "path": str(tmp_path / "missing.jsonl")})


def test_rule_problems_writes_a_valid_table(tmp_path):
    out = tmp_path / "results" / "problems" / "arith.parquet"
    rule_problems(inputs={}, outputs={"problems": str(out)}, params={"spec": ARITH},
                  wildcards={"dataset": "arith"}, threads=1)
    df = read_table(out, "problems")
    assert len(df) == 12 and isinstance(df["gold_steps"][0], list)


def test_harness_files_load_with_their_field_names():
    bon = shared_data_dir("bon")
    gsm = load_problems("gsm8k", {"source": "local", "path": str(bon / "gsm8k.jsonl"), "answer_format": "gsm8k",
                                  "limit": 50})
    assert gsm["answer"][0] == "18"
    minerva = load_problems("minerva_math", {"source": "local", "path": str(bon / "minerva_math.jsonl"),
                                             "answer_format": "boxed", "limit": 20,
                                             "fields": {"question": "problem", "answer": "solution"}})
    assert len(minerva) == 20
    oly = load_problems("olympiadbench", {"source": "local", "path": str(bon / "olympiadbench.jsonl"),
                                          "limit": 5, "fields": {"answer": "final_answer", "answer_list": True}})
    assert oly["answer"][0] == "2"
    mmlu = load_problems("mmlu_stem", {"source": "local", "path": str(bon / "mmlu_stem.jsonl"), "limit": 5,
                                       "answer_format": "choice", "fields": {"choices": "choices"}})
    assert set(mmlu["answer"]) <= set("ABCD")


def test_hub_sources_call_load_dataset_with_id_config_split(monkeypatch):
    """No network here: datasets.load_dataset is replaced; the loader's mapping is what is tested."""
    import datasets

    calls = []

    def fake_load_dataset(path, name=None, split=None, **kw):
        calls.append((path, name, split))
        if path == "Qwen/ProcessBench":
            return [{"id": f"{split}-0", "generator": "g", "problem": "P", "steps": ["a", "b"],
                     "final_answer_correct": False, "label": 1}]
        return [{"question": "Q1", "answer": "Work.\n#### 1,000"}]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    df = load_problems("gsm8k", {"source": "hub", "id": "openai/gsm8k", "config": "main", "split": "test",
                                 "answer_format": "gsm8k"})
    assert calls[-1] == ("openai/gsm8k", "main", "test")
    assert df["answer"][0] == "1000" and df["problem_id"][0] == "gsm8k-00000"
    pb = load_processbench({"source": "hub", "id": "Qwen/ProcessBench", "subsets": ["gsm8k", "math"]})
    assert [c[2] for c in calls[-2:]] == ["gsm8k", "math"]
    assert list(pb["id"]) == ["gsm8k-0", "math-0"] and list(pb["label"]) == [1, 1]


# ------------------------------------------------- the paper's benchmark sets (config/paper.yaml, issue 11 B)


# The harness files in ../shared/data/bon (MATH: its 100-problem output file, which names the problem
# `question` and whose checksum/row count are its own).
HARNESS_ROWS = {"gsm8k": 1319, "minerva_math": 272, "gaokao2023en": 385, "olympiadbench": 675,
                "college_math": 2818, "mmlu_stem": 3018}


def _shared_spec(name: str) -> tuple[dict, Path]:
    spec = dict(paper_config()["benchmarks"][name])
    if name == "math":
        path = shared_data_dir("bon", "math_cot_100_samples.jsonl")
        spec.update(sha256=None, git_blob_sha1=None, rows=100, fields={**spec["fields"], "question": "question"})
    else:
        path = shared_data_dir("bon", f"{name}.jsonl")
    return spec, path


def test_paper_yaml_takes_the_seven_harness_files_at_one_pinned_commit():
    bench = paper_config()["benchmarks"]
    # the seven of the main tables; Table 10's, the Chinese sets and Omni-MATH: test_benchmarks_extra.py
    assert set(bench) >= {*HARNESS_ROWS, "math"}
    for name, spec in ((n, bench[n]) for n in [*HARNESS_ROWS, "math"]):
        assert spec["source"] == "url" and spec["rows"] == HARNESS_ROWS.get(name, 5000)
        assert spec["url"] == ("https://raw.githubusercontent.com/QwenLM/Qwen2.5-Math/"
                               f"a45202bd16f1ec06f433442dc1152d0074773465/evaluation/data/{name}/test.jsonl")
        assert spec["sha256"] or spec["git_blob_sha1"], name


@pytest.mark.parametrize("name", ["gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench",
                                  "college_math", "mmlu_stem"])
def test_paper_benchmarks_load_the_harness_files_with_the_paper_mapping(name):
    spec, path = _shared_spec(name)
    df = load_problems(name, spec, path=path)  # checksums and `rows` checked on the way
    assert len(df) == spec["rows"]
    assert df["question"].map(bool).all()
    if name == "mmlu_stem":
        assert set(df["answer"]) == set("ABCD") and df["question"][0].count("Answer Choices: (A) ") == 1
    if name == "gaokao2023en":  # two rows of the harness file have no answer: kept, as the harness keeps them
        assert (df["answer"] == "").sum() == 2 and df["answer"].isin(list("ABCDE")).sum() == 37
    else:
        assert df["answer"].map(bool).all()
    if name == "math":  # the gold the harness extracted from the same solutions
        gt = [json.loads(line)["gt"] for line in open(path)]
        from prm_lessons.grading.extract import strip_answer
        assert sum(strip_answer(a) == strip_answer(g) for a, g in zip(df["answer"], gt)) >= 99


def test_shared_copies_are_the_pinned_files():
    for name in HARNESS_ROWS:
        spec, path = _shared_spec(name)
        from prm_lessons.data.sources import file_digests
        assert file_digests(path) == {"sha256": spec["sha256"], "git_blob_sha1": spec["git_blob_sha1"]}, name


def test_gaokao_empty_answers_stop_the_load_unless_kept():
    spec, path = _shared_spec("gaokao2023en")
    spec.pop("missing_answer")
    with pytest.raises(ValueError, match=r"row gaokao2023en-00167: missing answer"):
        load_problems("gaokao2023en", spec, path=path)


def test_checksum_mismatch_names_the_set(tmp_path):
    spec, path = _shared_spec("gsm8k")
    changed = tmp_path / "gsm8k.jsonl"
    changed.write_bytes(path.read_bytes().replace(b"Janet", b"Janey", 1))
    with pytest.raises(ValueError, match=r"dataset 'gsm8k': sha256 of .* expected 9f098df7"):
        load_problems("gsm8k", spec, path=changed)
    with pytest.raises(ValueError, match=r"dataset 'gsm8k': git_blob_sha1 .* expected 3e6e62b8"):
        load_problems("gsm8k", {**spec, "sha256": None}, path=changed)
    # source local takes the same checks
    with pytest.raises(ValueError, match=r"dataset 'gsm8k': sha256"):
        load_problems("gsm8k", {**spec, "source": "local", "path": str(changed)})


def test_row_count_mismatch_names_the_set_and_is_checked_before_limit(tmp_path):
    spec, path = _shared_spec("mmlu_stem")
    short = tmp_path / "mmlu_stem.jsonl"
    short.write_text("".join(open(path).readlines()[:-1]))
    with pytest.raises(ValueError, match=r"dataset 'mmlu_stem': 3017 rows, expected 3018"):
        load_problems("mmlu_stem", {**spec, "sha256": None, "git_blob_sha1": None, "limit": 5}, path=short)
    # and for the Hub copy (TIGER-Lab/MMLU-STEM has 3,153 rows): the same stop, before any job samples
    with pytest.raises(ValueError, match=r"dataset 'mmlu_stem': 3153 rows, expected 3018"):
        from prm_lessons.data.problems import check_rows
        check_rows(3153, 3018, "dataset 'mmlu_stem'")


def test_benchmark_file_rule_fetches_plain_paths_and_http(tmp_path):
    from prm_lessons.data.sources import downloaded_path
    from prm_lessons.rules.data import benchmark_file as rule_benchmark_file

    spec, path = _shared_spec("minerva_math")
    checks = {k: spec[k] for k in ("sha256", "git_blob_sha1")}
    assert downloaded_path("minerva_math", spec) == "resources/data/benchmarks/minerva_math.jsonl"
    for i, url in enumerate([str(path), str(path.resolve())]):
        out = tmp_path / f"copy{i}.jsonl"
        rule_benchmark_file(inputs={}, outputs={"file": str(out)}, params={"spec": {"url": url, **checks}},
                            wildcards={"name": "minerva_math"}, threads=1)
        assert out.read_bytes() == path.read_bytes()
    for url in (path.resolve().as_uri(), f"ftp://host{path.resolve()}"):  # the config refuses these too
        with pytest.raises(ValueError, match="minerva_math.*only https://, http:// or a plain path"):
            rule_benchmark_file(inputs={}, outputs={"file": str(tmp_path / "x.jsonl")},
                                params={"spec": {"url": url, **checks}}, wildcards={"name": "minerva_math"}, threads=1)
        assert not (tmp_path / "x.jsonl").exists()
    # http(s): served from loopback
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(path.parent))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{path.name}"
        out = tmp_path / "http.jsonl"
        rule_benchmark_file(inputs={}, outputs={"file": str(out)}, params={"spec": {"url": url, **checks}},
                            wildcards={"name": "minerva_math"}, threads=1)
        assert out.read_bytes() == path.read_bytes()
        # a wrong file is not left behind for a later run to trust
        bad = tmp_path / "bad.jsonl"
        with pytest.raises(ValueError, match=r"dataset 'minerva_math': sha256"):
            rule_benchmark_file(inputs={}, outputs={"file": str(bad)},
                                params={"spec": {"url": url, "sha256": "0" * 64}},
                                wildcards={"name": "minerva_math"}, threads=1)
        assert not bad.exists() and not list(tmp_path.glob("*.part"))
    finally:
        server.shutdown()


def test_rule_problems_reads_the_downloaded_copy(tmp_path):
    spec, path = _shared_spec("college_math")
    out = tmp_path / "college_math.parquet"
    rule_problems(inputs={"source": str(path)}, outputs={"problems": str(out)}, params={"spec": {**spec, "limit": 4}},
                  wildcards={"dataset": "college_math"}, threads=1)
    df = read_table(out, "problems")
    assert len(df) == 4 and df["question"][0] == json.loads(path.open().readline())["question"]


def test_hub_revision_is_passed_to_load_dataset(monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(path, name=None, split=None, **kw):
        calls.append((path, kw.get("revision")))
        if path == "Qwen/ProcessBench":
            return [{"id": f"{split}-{i}", "generator": "g", "problem": "P", "steps": ["a"],
                     "final_answer_correct": True, "label": -1} for i in range(3)]
        return [{"question": "Q1", "answer": "1"}, {"question": "Q2", "answer": "2"}]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    load_problems("x", {"source": "hub", "id": "a/b", "revision": "c0ffee", "rows": 2})
    assert calls[-1] == ("a/b", "c0ffee")
    with pytest.raises(ValueError, match=r"dataset 'x': 2 rows, expected 3"):
        load_problems("x", {"source": "hub", "id": "a/b", "rows": 3})
    load_processbench({"source": "hub", "revision": "beef", "subsets": ["math"], "rows": {"math": 3}})
    assert calls[-1] == ("Qwen/ProcessBench", "beef")


def test_source_url_without_url_is_a_config_error():
    import yaml

    from prm_lessons.config import ConfigError, validate_config

    with open(ROOT / "config" / "paper.yaml") as fh:
        cfg = yaml.safe_load(fh)
    del cfg["benchmarks"]["gsm8k"]["url"]
    with pytest.raises(ConfigError, match="benchmarks.gsm8k"):
        validate_config(cfg)
    cfg["benchmarks"]["gsm8k"]["url"] = "x.jsonl"
    cfg["processbench"]["url"] = "https://example.org/dataset/math.json"  # no {subset}
    with pytest.raises(ConfigError, match="processbench"):
        validate_config(cfg)


def test_problems_table_records_the_rows_of_the_whole_set(tmp_path):
    """The rehearsal report compares them with `rows`: the set is read whole, then `limit` applies."""
    from prm_lessons.tables import table_meta

    f = tmp_path / "set.jsonl"
    f.write_text("".join(json.dumps({"question": f"q{i}", "answer": str(i)}) + "\n" for i in range(5)))
    out = tmp_path / "p.parquet"
    spec = {"source": "local", "path": str(f), "rows": 5, "limit": 2,
            "fields": {"question": "question", "answer": "answer"}}
    rule_problems(inputs={}, outputs={"problems": str(out)}, params={"spec": spec}, wildcards={"dataset": "s"},
                  threads=1)
    assert table_meta(out)["rows_loaded"] == 5 and len(pd.read_parquet(out)) == 2


# ----------------------------------------------------------------------------------------- source mix

def test_mix_is_its_parts_in_order_as_one_set(tmp_path):
    """The embedded training set: both generators, one set (one sampling, MC and judge job)."""
    chain = {"source": "reasoning_gym", "generator": "chain_sum", "size": 3, "seed": 12,
             "params": {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 1}}
    f = tmp_path / "own.jsonl"
    f.write_text(json.dumps({"question": "q0", "answer": "7"}) + "\n")
    spec = {"source": "mix", "parts": {"arith": ARITH, "chain": chain,
                                       "own": {"source": "local", "path": str(f), "answer_format": "plain"}}}
    df = load_problems("train", spec)
    a, c = load_problems("x", ARITH), load_problems("y", chain)
    assert list(df["question"]) == list(a["question"]) + list(c["question"]) + ["q0"]
    assert list(df["answer"]) == list(a["answer"]) + list(c["answer"]) + ["7"]
    assert list(df["problem_id"]) == [f"train-{i:05d}" for i in range(len(df))] and set(df["dataset"]) == {"train"}
    assert list(df["source_id"][: len(a)]) == list(a["source_id"])  # the generator's own ids
    assert df.attrs["rows_loaded"] == len(df)


def test_mix_part_errors_name_the_set_and_the_part():
    with pytest.raises(ValueError, match="dataset 'train': part 'web' has source 'url'"):
        load_problems("train", {"source": "mix", "parts": {"web": {"source": "url", "url": "x.jsonl"}}})
    with pytest.raises(ValueError, match="dataset 'train', part 'bad': reasoning_gym dataset 'chain_sum' needs `size`"):
        load_problems("train", {"source": "mix",
                                "parts": {"bad": {"source": "reasoning_gym", "generator": "chain_sum"}}})


def test_mix_in_the_config_is_checked_before_any_job():
    import yaml

    from prm_lessons.config import ConfigError, validate_config

    with open(ROOT / "config" / "config.yaml") as fh:
        cfg = yaml.safe_load(fh)
    assert cfg["problems"]["train"]["source"] == "mix"
    validate_config(cfg)
    bad = yaml.safe_load(yaml.safe_dump(cfg))
    del bad["problems"]["train"]["parts"]["chain"]["size"]
    with pytest.raises(ConfigError, match="problems.train.parts.chain"):
        validate_config(bad)
    bad = yaml.safe_load(yaml.safe_dump(cfg))
    bad["problems"]["train"]["parts"]["chain"] = {"source": "url", "url": "x.jsonl"}
    with pytest.raises(ConfigError, match="problems.train.parts.chain"):
        validate_config(bad)
    del bad["problems"]["train"]["parts"]
    with pytest.raises(ConfigError, match="problems.train"):
        validate_config(bad)


def test_mix_size_at_dag_time_is_the_sum_of_its_parts():
    from prm_lessons import plan

    parts = {"a": {"source": "reasoning_gym", "generator": "chain_sum", "size": 30},
             "b": {"source": "local", "path": "x.jsonl", "rows": 50, "limit": 20}}
    cfg = {"problems": {"m": {"source": "mix", "parts": parts},
                        "open": {"source": "mix", "parts": {**parts, "c": {"source": "local", "path": "y.jsonl"}}}},
           "benchmarks": {}, "roles": {"policy": "p"}, "sampling": {"n": 4}}
    assert plan.dataset_problems(cfg, "m") == 50
    assert plan.dataset_problems(cfg, "open") is None  # one part of unknown size
    assert plan.local_source_inputs(cfg["problems"]["open"], "open") == ["x.jsonl", "y.jsonl"]
