"""ProcessBench critics (prm_lessons.evaluation.critic): verdict parsing, voting, unparsable answers counted wrong and
reported; critics with their own settings: per-critic sampling reaches the engine,
the `official` parse is ProcessBench run_eval.py's, critics that differ only in parse share one generation,
config errors name the key, the official template is fetched with its checksums checked, Table 7 notes."""
from __future__ import annotations

import copy
import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import FakeTokenizer, ScriptedEngine
from prm_lessons import plan
from prm_lessons.config import ConfigError, load_config, validate_config
from prm_lessons.data.sources import file_digests
from prm_lessons.evaluation import critic
from prm_lessons.generation.engine import Completion, Engine, SamplingSpec
from prm_lessons.labels.judge import render_judge_prompt
from prm_lessons.metrics.processbench import processbench_metrics

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
MIRROR = Path("/work/.mirror/QwenLM+ProcessBench/repo")


# -- an independent re-implementation of ProcessBench code/run_eval.py (commit e8024636) ---------------

def ref_extract_answer(solution_text):
    matches = re.findall(r"\\boxed\{([^}]*)\}", solution_text)
    if matches:
        return matches[-1].strip()
    return None


def ref_prediction(critiques):
    """run_eval.py's prediction: greedy (one critique) or --use_voting (several)."""
    if len(critiques) == 1:
        pred = ref_extract_answer(critiques[0])
        try:
            return int(pred)
        except Exception:
            return None
    preds = [p for p in (ref_extract_answer(c) for c in critiques) if p is not None]
    if not preds:
        return None
    pred = Counter(preds).most_common(1)[0][0]
    try:
        return int(pred)
    except Exception:
        return None


def ref_prompt(template, problem, steps):
    tagged_response = ""
    for sdx, step in enumerate(steps):
        tagged_response += f"<paragraph_{sdx}>\n{step}\n</paragraph_{sdx}>\n\n"
    return template.format(problem=problem, tagged_response=tagged_response.strip())


def _ours(critiques, n_steps=10):
    """critic.official_prediction, with an index outside [-1, n_steps) read as no prediction."""
    return critic.official_prediction(critiques, n_steps)[0]


def _ref_in_range(critiques, n_steps=10):
    p = ref_prediction(critiques)
    return p if p is not None and -1 <= p < n_steps else None


REALISTIC = [
    ["The earliest error is in paragraph 2. \\boxed{2}"],
    ["All correct. \\boxed{-1}"],
    ["Paragraph 1 is wrong.\n\n\\boxed{ 1 }"],                       # whitespace inside
    ["\\boxed{\\text{2}}"],                                          # \text{}: official reads '\text{2' → wrong
    ["so \\boxed{{3}}"],                                             # nested braces: '{3' → wrong
    ["I think \\boxed{1} ... no, actually \\boxed{4}"],              # several boxes: the last
    ["no box at all, paragraph 3 is wrong"],
    ["\\boxed{paragraph_2}"],
    ["\\boxed{2.}"],
    ["cut off: \\boxed{5"],                                          # unclosed
    ["\\boxed {2}"],                                                 # space before the brace: no match
    ["$\\boxed{-1}$."],
    ["\\boxed{+2}"],
    ["\\boxed{1_0}"],                                                # int('1_0') == 10: out of range here
    ["\\boxed{12}"],                                                 # past the last step
    ["\\boxed{-2}"],
    # votes: raw strings, None dropped, ties → first seen, int() after the vote
    ["\\boxed{2}", "\\boxed{3}", "\\boxed{3}", "none"],
    ["\\boxed{2}", "\\boxed{3}", "\\boxed{3}", "\\boxed{2}"],        # tie: 2 seen first
    ["\\boxed{ 2}", "\\boxed{2 }", "\\boxed{02}", "\\boxed{02}"],    # stripped '2' twice vs '02' twice: '2' first
    ["\\boxed{02}", "\\boxed{02}", "\\boxed{2}"],                    # '02' wins → int 2
    ["\\boxed{x}", "\\boxed{x}", "\\boxed{1}"],                      # a non-integer wins → no prediction
    ["\\boxed{2}", "\\boxed{02}", "\\boxed{3}", "\\boxed{3}"],      # raw strings: '3' wins (as ints, 2 ties first)
    ["\\boxed{2}", "no box", "no box either"],                       # unmatched samples do not vote
    ["nothing", "\\boxed{", "also nothing"],
    ["\\boxed{\\text{1}}", "\\boxed{1}", "\\boxed{\\text{1}}"],      # '\text{1' wins → no prediction
]


@pytest.mark.parametrize("critiques", REALISTIC)
def test_official_parse_is_run_eval(critiques):
    assert _ours(critiques) == _ref_in_range(critiques)


def test_official_parse_statuses():
    assert critic.official_prediction(["\\boxed{x}", "\\boxed{x}", "\\boxed{1}"], 3) == (None, "not_integer")
    assert critic.official_prediction(["no box", "\\boxed{"], 3) == (None, "no_verdict")
    assert critic.official_prediction(["\\boxed{7}"], 3) == (None, "out_of_range")
    assert critic.official_prediction(["\\boxed{-1}"], 3) == (-1, "ok")


FRAGMENTS = ["\\boxed{", "}", "{", "2", "-1", " ", "\\text{", "paragraph_", "x", "\n\n", "03", "+1", "$"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join), min_size=1, max_size=8))
def test_official_parse_matches_run_eval_on_generated_critiques(critiques):
    assert _ours(critiques) == _ref_in_range(critiques)


def test_lenient_and_official_differ_where_the_lenient_reader_is_kinder():
    cases = pd.DataFrame({"id": ["a"], "steps": [["s0", "s1", "s2"]]})
    df = pd.DataFrame({"id": ["a"], "verdicts": [["\\boxed{\\text{2}}"]], "status": ["ok"], "cut": [[False]]})
    lenient = critic.apply_parse(df, critic.case_steps(cases), "lenient")
    official = critic.apply_parse(df, critic.case_steps(cases), "official")
    assert lenient["prediction"].iloc[0] == 2 and lenient["status"].iloc[0] == "ok"
    assert pd.isna(official["prediction"].iloc[0]) and official["status"].iloc[0] == "not_integer"
    assert official["parse"].iloc[0] == "official" and not official["parsed"].iloc[0]


def test_official_template_is_filled_as_run_eval_fills_it():
    template = ("Official-like header (indexed from 0):\n\n[Math Problem]\n\n{problem}\n\n[Solution]\n\n"
                "{tagged_response}\n\nPut the index in \\boxed{{}}.")
    steps = ["Step one: 2+2=4.", "  Step two, with {braces} and spaces  ", "So \\boxed{4}."]
    assert render_judge_prompt("What is 2+2?", steps, "processbench", template) == ref_prompt(
        template, "What is 2+2?", steps)


# -- per-critic settings reach the engine ---------------------------------------------------------------

class RecordingCritic(Engine):
    """Records every SamplingSpec; answers `\\boxed{1}`."""

    backend = "fake"

    def __init__(self):
        super().__init__()
        self.tokenizer, self.specs, self.prompts = FakeTokenizer(), [], []

    def generate(self, prompts, spec, seeds=None):
        self.specs.append(spec)
        self.prompts += prompts
        return [[Completion("paragraph 1 is wrong: \\boxed{1}", 7, "stop")] for _ in prompts]


CASES = pd.DataFrame({"id": ["g-0", "g-1"], "subset": ["g", "g"], "generator": ["x", "x"],
                      "problem": ["PROB0", "PROB1"], "steps": [["a", "b"], ["a", "b", "c"]],
                      "final_answer_correct": [False, True], "label": [1, -1]})


def _config(judges: dict, **section) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg["critics"] = {**cfg["critics"], **section, "judges": judges}
    return validate_config(cfg)


def _run_critic(tmp_path, monkeypatch, spec, template_file=None) -> tuple[RecordingCritic, pd.DataFrame]:
    from prm_lessons.rules import evaluation
    from prm_lessons.tables import write_table

    eng = RecordingCritic()
    monkeypatch.setattr(evaluation, "load_engine", lambda *a, **k: eng)
    cases = tmp_path / "cases.parquet"
    write_table(CASES, cases, "processbench")
    out = tmp_path / "critic.parquet"
    evaluation.critic_processbench(
        inputs={"cases": str(cases), "model": [], "template": [str(template_file)] if template_file else []},
        outputs={"predictions": str(out)}, params={"spec": spec, "model_dir": "x", "model_entry": {}},
        wildcards={"judge": "c"}, threads=1)
    return eng, pd.read_parquet(out)


def test_each_critic_samples_with_its_own_settings(tmp_path, monkeypatch):
    cfg = _config({"math": {"model": "smollm2", "temperature": 0.7, "top_p": 0.8, "top_k": 20},
                   "other": {"model": "smollm2", "max_tokens": 99},
                   "greedy": {"model": "smollm2", "n": 1, "top_k": 20}},
                  n=3, temperature=1.0, top_p=0.9, top_k=None, max_tokens=32, seed=42)
    specs = plan.critic_specs(cfg)
    seen = {}
    for name, spec in specs.items():
        eng, df = _run_critic(tmp_path, monkeypatch, spec)
        assert len(eng.specs) == 1 and len(eng.prompts) == len(CASES) * spec["n"]
        seen[name] = eng.specs[0]
        assert df["prediction"].tolist() == [1, 1] and (df["parse"] == spec["parse"]).all()
    assert (seen["math"].temperature, seen["math"].top_p, seen["math"].top_k, seen["math"].max_tokens) == (
        0.7, 0.8, 20, 32)
    assert (seen["other"].temperature, seen["other"].top_p, seen["other"].top_k, seen["other"].max_tokens) == (
        1.0, 0.9, None, 99)
    # n = 1 is greedy whatever else is set: no temperature, no top-p, no top-k
    assert (seen["greedy"].temperature, seen["greedy"].top_p, seen["greedy"].top_k) == (0.0, 1.0, None)


def test_official_template_file_is_used_stripped(tmp_path, monkeypatch):
    tmpl = tmp_path / "critique_template.txt"
    tmpl.write_text("\n  OFFICIAL {problem} || {tagged_response} \\boxed{{}}\n\n")
    spec = plan.critic_specs(_config({"c": {"model": "smollm2", "template": "official"}}))["c"]
    assert plan.critic_template_input(spec) == [plan.OFFICIAL_CRITIC_TEMPLATE]
    eng, _ = _run_critic(tmp_path, monkeypatch, spec, template_file=tmpl)
    user = "OFFICIAL PROB0 || <paragraph_0>\na\n</paragraph_0>\n\n<paragraph_1>\nb\n</paragraph_1> \\boxed{}"
    assert eng.prompts[0] == FakeTokenizer().apply_chat_template([{"role": "user", "content": user}])


def test_engines_pass_top_k(monkeypatch):
    """VLLMEngine: SamplingParams.top_k (0 = none in vLLM 0.32) and no added BOS; HFEngine: generate(top_k=)."""
    from prm_lessons.generation import engine as generation

    pytest.importorskip("vllm")
    calls = []

    class FakeLLM:
        def generate(self, prompts, params, use_tqdm=False, **kw):
            calls.append((params, kw))
            return [type("R", (), {"outputs": []})() for _ in prompts]

    eng = object.__new__(generation.VLLMEngine)
    Engine.__init__(eng)
    eng.llm = FakeLLM()
    eng.generate(["p"], SamplingSpec(n=2, temperature=0.7, top_p=0.8, top_k=20, seed=1))
    eng.generate(["p"], SamplingSpec(n=2, temperature=1.0, top_p=0.9, top_k=None, seed=1))
    assert [c[0][0].top_k for c in calls] == [20, 0]
    assert all(c[1]["tokenization_kwargs"] == {"add_special_tokens": False} for c in calls)

    torch = pytest.importorskip("torch")
    got = {}

    class FakeModel:
        def generate(self, input_ids, attention_mask=None, **kw):
            got.update(kw)
            return torch.cat([input_ids, torch.zeros((input_ids.shape[0], 1), dtype=input_ids.dtype)], 1)

    class Tok:
        eos_token_id = pad_token_id = 0

        def decode(self, toks, **kw):
            return ""

        def __call__(self, prompts, **kw):
            return {"input_ids": torch.ones((len(prompts), 2), dtype=torch.long),
                    "attention_mask": torch.ones((len(prompts), 2), dtype=torch.long)}

    hf = object.__new__(generation.HFEngine)
    Engine.__init__(hf)
    hf.model, hf.tokenizer, hf.max_model_len, hf.batch_size = FakeModel(), Tok(), 64, 4
    hf._run(["p"], SamplingSpec(n=1, temperature=0.7, top_k=20), seed=1)
    assert got["top_k"] == 20
    hf._run(["p"], SamplingSpec(n=1, temperature=0.7, top_k=None), seed=1)
    assert got["top_k"] == 0  # no cut (transformers would otherwise apply its default 50)


# -- critics that differ only in parse share one generation ---------------------------------------------

def test_generation_sources():
    cfg = _config({"a": {"model": "smollm2"}, "a_off": {"model": "smollm2", "parse": "official"},
                   "a_unforced": {"model": "smollm2", "force_answer": False},
                   "c_forced": {"model": "smollm2", "force_answer": True, "force_truncated": False},
                   "b": {"model": "smollm2", "top_k": 5, "n": 2}, "b2": {"model": "smollm2", "top_k": 6, "n": 2},
                   "b3": {"model": "smollm2", "top_k": 5, "n": 2, "parse": "official"},
                   "d": {"model": "smollm2", "seed": 7}},
                  n=1, parse="lenient", force_answer=True, force_truncated=True)
    src = plan.critic_generation_sources(plan.critic_specs(cfg))
    # a critic that forces other answers than the earlier one cannot read its critiques; one forcing none can
    assert src == {"a": "a", "a_off": "a", "a_unforced": "a", "c_forced": "c_forced", "b": "b", "b2": "b2",
                   "b3": "b", "d": "d"}
    # an unforced first critic cannot serve a forcing one
    cfg = _config({"u": {"model": "smollm2", "force_answer": False}, "f": {"model": "smollm2"}}, n=1,
                  force_answer=True)
    assert plan.critic_generation_sources(plan.critic_specs(cfg)) == {"u": "u", "f": "f"}


def test_reparse_reads_the_same_critiques_under_another_parse_and_without_forcing(tmp_path):

    from prm_lessons.rules import evaluation
    from prm_lessons.tables import write_table

    cases = tmp_path / "cases.parquet"
    write_table(CASES, cases, "processbench")
    forced = "I am not sure" + "\n\nSo the index of the paragraph with the earliest error is \\boxed{0}"
    source = pd.DataFrame({"id": ["g-0", "g-1"], "subset": ["g", "g"], "label": [1, -1],
                           "prediction": pd.array([1, 0], dtype="Int64"), "parsed": [True, True],
                           "status": ["ok", "ok"], "votes": [[1, 1], [0, 0]], "n_forced": [0, 1],
                           "n_truncated": [0, 0], "tokens_generated": [5, 5],
                           "verdicts": [["\\boxed{\\text{1}}", "\\boxed{1}"], [forced, "\\boxed{0}"]],
                           "cut": [[False, False], [False, True]], "forced_at": [[-1, -1], [13, -1]],
                           "parse": ["lenient", "lenient"]})
    src_path = tmp_path / "a.parquet"
    source.to_parquet(src_path, index=False)

    def reparse(parse, force):
        out = tmp_path / f"{parse}{force}.parquet"
        evaluation.critic_reparse(inputs={"cases": str(cases), "source": str(src_path)},
                                  outputs={"predictions": str(out)}, params={"parse": parse, "force_answer": force},
                                  wildcards={"judge": "x"}, threads=1)
        return pd.read_parquet(out)

    df = reparse("official", True)  # '\text{1' and '1' tie: the first seen wins and is no integer
    assert pd.isna(df["prediction"].iloc[0]) and df["status"].iloc[0] == "not_integer"
    assert df["prediction"].iloc[1] == 0 and df["n_forced"].tolist() == [0, 1]
    assert df["tokens_generated"].tolist() == [5, 5] and list(df["verdicts"].iloc[1]) == [forced, "\\boxed{0}"]
    df = reparse("lenient", False)  # the forced answer is gone: one vote left, the cut-off sample's
    assert df["prediction"].tolist() == [1, 0] and list(df["verdicts"].iloc[1]) == ["I am not sure", "\\boxed{0}"]
    assert list(df["votes"].iloc[1]) == [None, 0] or pd.isna(df["votes"].iloc[1][0])
    assert df["n_forced"].tolist() == [0, 0] and df["n_truncated"].tolist() == [0, 1]
    df = reparse("official", False)
    assert df["prediction"].iloc[1] == 0 and list(df["verdicts"].iloc[1])[0] == "I am not sure"


def test_embedded_config_has_two_critic_settings_from_one_generation():
    assert plan.critic_specs(load_config(ROOT / "config/config.yaml")) == {}  # make run: no critic
    specs = plan.critic_specs(load_config(ROOT / "config/config.yaml", ROOT / "config/all.yaml"))
    assert len(specs) >= 2 and {s["parse"] for s in specs.values()} == {"lenient", "official"}
    src = plan.critic_generation_sources(specs)
    assert len(set(src.values())) == 1  # one generation job
    assert {s["force_answer"] for s in specs.values()} == {True, False}  # the project's and ProcessBench's


def test_paper_config_lists_the_four_open_critics_with_processbench_settings():
    cfg = load_config(ROOT / "config/paper.yaml")
    specs = plan.critic_specs(cfg)
    ids = {n: cfg["models"][s["model"]]["id"] for n, s in specs.items()}
    assert sorted(ids.values()) == ["Qwen/QwQ-32B-Preview", "Qwen/Qwen2.5-72B-Instruct",
                                    "Qwen/Qwen2.5-Math-72B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"]
    for name, s in specs.items():
        assert (s["n"], s["seed"], s["template"], s["parse"], s["force_answer"]) == (8, 42, "official", "official",
                                                                                   False)
        math = "Math" in ids[name]
        assert (s["temperature"], s["top_p"], s["top_k"]) == ((0.7, 0.8, 20) if math else (1.0, 0.9, None))
        assert s["max_tokens"] == (32768 if "QwQ" in ids[name] else 8192)
        assert cfg["analysis"]["paper_rows"][f"critic-{name}"] == name  # the published Table 7 row


# -- config errors name the key --------------------------------------------------------------------------

@pytest.mark.parametrize("judges, section, key, message", [
    ({"c": {"model": "nope"}}, {}, "critics.judges.c.model", "nope"),
    ({"c": {"model": "smollm2", "parse": "strict"}}, {}, "critics.judges.c.parse", "strict"),
    ({"c": {"model": "smollm2"}}, {"parse": "exact"}, "critics.parse", "exact"),
    ({"c": {"model": "smollm2", "top_k": 0}}, {}, "critics.judges.c.top_k", "minimum|less than"),
    ({"c": {"model": "smollm2", "top_k": -1}}, {}, "critics.judges.c.top_k", "minimum|less than"),
    ({"c": {"model": "smollm2", "top_k": 2.5}}, {}, "critics.judges.c.top_k", "integer"),
    ({"c": {"model": "smollm2"}}, {"top_k": "20"}, "critics.top_k", "integer"),
    ({"c": {"model": "smollm2", "template": "paper"}}, {}, "critics.judges.c.template", "paper"),
    ({"c": {"model": "smollm2", "temprature": 1.0}}, {}, "critics.judges.c.temprature", "unknown key"),
    ({"c": {"n": 2}}, {}, "critics.judges.c.model", "missing"),
    ({"c": {"model": "smollm2", "template": "official", "template_path": "t.txt"}}, {},
     "critics.judges.c.template_path", "official"),
    ({"c": {"model": "smollm2", "template": "official"}}, {"template_path": "t.txt"}, "critics.template_path",
     "official"),
    ({"c": {"model": "smollm2"}}, {"official_template": {"sha256": "abc"}}, "critics.official_template.sha256", ""),
])
def test_bad_critic_config_names_the_key(judges, section, key, message):
    cfg = copy.deepcopy(BASE)
    cfg["critics"] = {**cfg["critics"], **section, "judges": judges}
    with pytest.raises(ConfigError) as exc:
        validate_config(cfg)
    assert f"config error at `{key}`:" in str(exc.value), str(exc.value)
    assert re.search(message, str(exc.value)), str(exc.value)


# -- the official template: fetched, checksums checked ----------------------------------------------------

def _fetch(tmp_path, url, checks):
    from prm_lessons.rules.data import critique_template

    out = tmp_path / "resources" / "templates" / "critique_template.txt"
    critique_template(inputs={}, outputs={"file": str(out)}, params={"spec": {"url": str(url), **checks}},
                      wildcards={}, threads=1)
    return out


def test_fetch_rule_checks_the_checksums(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("Header {problem} {tagged_response} \\boxed{{}}\n")
    out = _fetch(tmp_path, good, file_digests(good))
    assert out.read_bytes() == good.read_bytes()
    out.unlink()
    bad = tmp_path / "bad.txt"
    bad.write_text("Another text {problem} {tagged_response}\n")
    with pytest.raises(ValueError, match="sha256 .* expected"):
        _fetch(tmp_path, bad, file_digests(good))
    with pytest.raises(ValueError, match="git_blob_sha1 .* expected"):
        _fetch(tmp_path, bad, {"git_blob_sha1": file_digests(good)["git_blob_sha1"], "sha256": None})
    assert not out.exists() and not list(out.parent.glob("*.part"))  # nothing a later run would trust


def test_pinned_template_checksums_are_the_official_files():
    """The schema's defaults: the file at commit e8024636 (checked against the mirror when it is here)."""
    from prm_lessons.config import load_schema

    props = load_schema()["properties"]["critics"]["properties"]["official_template"]["properties"]
    assert "/e8024636bcabdf8bd514440551b531d3f90dd18b/code/templates/critique_template.txt" in props["url"]["default"]
    if not MIRROR.exists():
        pytest.skip("no ProcessBench mirror here")
    blob = subprocess.run(["git", "-C", str(MIRROR), "show",
                           "e8024636bcabdf8bd514440551b531d3f90dd18b:code/templates/critique_template.txt"],
                          capture_output=True, check=True).stdout
    tree = subprocess.run(["git", "-C", str(MIRROR), "ls-tree", "e8024636bcabdf8bd514440551b531d3f90dd18b",
                           "code/templates/critique_template.txt"], capture_output=True, text=True, check=True)
    import hashlib

    assert hashlib.sha256(blob).hexdigest() == props["sha256"]["default"]
    assert tree.stdout.split()[2] == props["git_blob_sha1"]["default"]
    # the placeholders run_eval.py fills, and nothing else
    assert set(re.findall(r"(?<!\{)\{(\w+)\}(?!\})", blob.decode())) == {"problem", "tagged_response"}


def test_rehearsal_template_stand_in_is_not_the_official_text(tmp_path):
    from prm_lessons.rehearsal.run import write_critique_template

    path = write_critique_template(tmp_path / "t.txt")
    text = path.read_text()
    assert "{problem}" in text and "{tagged_response}" in text
    overlay = yaml.safe_load((ROOT / "config/rehearsal.yaml").read_text())["critics"]["official_template"]
    assert overlay["url"] == "data/templates/critique_template.txt" and overlay["sha256"] is None
    if MIRROR.exists():
        official = subprocess.run(["git", "-C", str(MIRROR), "show", "HEAD:code/templates/critique_template.txt"],
                                  capture_output=True, text=True, check=True).stdout
        assert text.strip() != official.strip()


# -- Table 7: every critic is a row, its setting in the notes ---------------------------------------------

def test_table7_rows_and_setting_notes(tmp_path):
    from prm_lessons.rules.analysis import table7_processbench_main

    setting = plan.critic_setting(plan.critic_specs(load_config(ROOT / "config/paper.yaml"))["qwq_32b_preview"])
    rows = []
    for prm, st_ in (("critic-qwq_32b_preview", setting), ("critic-mine", "smollm2: project template, lenient "
                                                           "parse, greedy"), ("human", None)):
        for sub in ("gsm8k", "math", "olympiadbench", "omnimath", "average"):
            rows.append({"prm": prm, "subset": sub, "n": 10, "error_acc": 0.5, "correct_acc": 0.5, "f1": 0.5,
                         "setting": st_})
    pb = tmp_path / "processbench.csv"
    pd.DataFrame(rows).to_csv(pb, index=False)
    outs = {k: str(tmp_path / f"t7.{k}") for k in ("csv", "tex")}
    outs["provenance"] = str(tmp_path / "t7.json")
    table7_processbench_main(inputs={"processbench": str(pb)}, outputs=outs,
                             params={"paper_rows": {"critic-qwq_32b_preview": "qwq_32b_preview"}, "paper_columns": {},
                                     "run": {"name": "t"}}, wildcards={}, threads=1)
    cells = pd.read_csv(outs["csv"])
    assert set(cells["row"]) == {"critic-qwq_32b_preview", "critic-mine", "human"}
    qwq = cells[(cells["row"] == "critic-qwq_32b_preview") & (cells["column"] == "average/f1")].iloc[0]
    assert qwq["published"] == 71.5  # the paper's QwQ-32B-Preview row
    tex = Path(outs["tex"]).read_text()
    assert "official critique" in tex and "official parse" in tex and "32768" in tex
    assert "lenient parse" in tex
    json.loads(Path(outs["provenance"]).read_text())


def test_forced_answers_are_recorded_and_can_be_cut_off_again():
    from fakes import ScriptedJudge

    eng = ScriptedJudge(["no answer here", "\\boxed{-1}"], forced="1}")
    cases = CASES.assign(problem=["P0", "P1"])
    df = critic.critic_predictions(eng, cases, n=1, max_tokens=64, force_answer=True)
    assert df["prediction"].tolist() == [1, -1] and df["n_forced"].tolist() == [1, 0]
    assert list(df["forced_at"].iloc[0]) == [len("no answer here")] and list(df["forced_at"].iloc[1]) == [-1]
    plain = critic.apply_parse(df, critic.case_steps(cases), "official", force=False)
    assert list(plain["verdicts"].iloc[0]) == ["no answer here"] and pd.isna(plain["prediction"].iloc[0])
    assert plain["prediction"].iloc[1] == -1 and plain["n_forced"].tolist() == [0, 0]


# ------------------------------------------------------------------ predictions, voting, unparsable answers

PB_CASES = pd.DataFrame({"id": ["a-0", "a-1", "a-2"], "subset": ["a"] * 3,
                      "problem": ["PROB0", "PROB1", "PROB2"], "steps": [["x", "y"], ["x", "y", "z"], ["x"]],
                      "label": [1, -1, 0], "final_answer_correct": [False, True, False]})


def test_critic_predictions_and_metric():
    eng = ScriptedEngine({"PROB0": "the second paragraph is wrong: \\boxed{1}", "PROB1": "all fine \\boxed{-1}",
                          "PROB2": "I cannot decide"})
    df = critic.critic_predictions(eng, PB_CASES, n=1, force_answer=False)
    assert df["prediction"].tolist()[:2] == [1, -1] and pd.isna(df["prediction"].iloc[2])
    assert str(df["prediction"].dtype) == "Int64"
    assert "<paragraph_0>" in eng.prompts[0]  # ProcessBench template: paragraphs indexed from 0
    preds = {i: (None if pd.isna(p) else int(p)) for i, p in zip(df["id"], df["prediction"])}
    m = processbench_metrics(PB_CASES, preds)
    assert m["n_unparsed"] == 1
    assert m["subsets"]["a"]["error_acc"] == 0.5 and m["subsets"]["a"]["correct_acc"] == 1.0


def test_out_of_range_index_is_unparsable():
    eng = ScriptedEngine({"PROB0": "\\boxed{7}", "PROB1": "\\boxed{-1}", "PROB2": "\\boxed{0}"})
    df = critic.critic_predictions(eng, PB_CASES, n=1)
    assert pd.isna(df["prediction"].iloc[0]) and df["prediction"].iloc[2] == 0
