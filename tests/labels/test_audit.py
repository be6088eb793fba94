"""The label audit: its slice (balanced per generator × kind, exact truth, disjoint from the evaluation
problems) and its analysis (threshold × K' grid, judge, consensus precision / share kept, calibration)
on hand-built completions whose answers are worked out by hand, plus MC's kept outcomes."""
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
import yaml

import prm_lessons.generation.engine as generation
from fakes import SeededCompleter, boxed_grade
from prm_lessons.data.problems import load_problems
from prm_lessons.evaluation.bias_analysis import wilson_interval
from prm_lessons.labels.audit import (
    audit_metrics,
    cost_rows,
    k_subsets,
    mc_hard,
    pad_outcomes,
    render_markdown,
    thresholds_for,
)
from prm_lessons.labels.audit_slice import KINDS, build_slice, truth_labels
from prm_lessons.labels.construction import final_answer_text
from prm_lessons.labels.human import normalize_question
from prm_lessons.labels.mc import MCInput, Needs, run_mc
from prm_lessons.tables import check_csv

ROOT = Path(__file__).resolve().parents[2]

# three solutions, K = 8, outcomes per step (1 = the completion reached the gold answer)
GOLD = [[1, 1, 1, 1, 0, 0, 0, 0], [1] * 8]                       # truth [1, 1]
ERROR = [[0] * 8, [0] * 8]                                         # error at step 0: truth [0, 0]
KEEP = [[1, 0, 0, 0, 0, 0, 0, 0], [1] * 8, [1] * 8]                # error at 0, answer kept: truth [0, 0, 0]


def records(judge=(-1, None, -1)) -> pd.DataFrame:
    return pd.DataFrame({"problem_id": ["g", "e", "k"], "sample_idx": [0, 0, 0], "generator": ["a", "a", "a"],
                         "kind": ["gold", "error", "keep"], "error_index": [-1, 0, 0], "n_steps": [2, 2, 3],
                         "outcomes": [GOLD, ERROR, KEEP], "judge_first_error": pd.array(list(judge), dtype="Int64")})


def pick(t: pd.DataFrame, **where) -> pd.Series:
    m = pd.Series(True, index=t.index)
    for c, v in where.items():
        m &= t[c].isna() if v is None else (t[c] == v)
    hit = t[m]
    assert len(hit) == 1, (where, hit)
    return hit.iloc[0]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return audit_metrics(records(), 8, 0.0)


def test_sweep_and_k_subsets_are_the_powers_of_two_and_j_over_k():
    assert k_subsets(8) == [1, 2, 4, 8]
    assert k_subsets(6) == [1, 2, 4, 6]
    assert thresholds_for(8) == [Fraction(j, 8) for j in range(8)]


def test_truth_is_prefix_correctness():
    assert truth_labels(-1, 3) == [1, 1, 1]
    assert truth_labels(1, 3) == [1, 0, 0]


def test_hard_labels_from_the_first_k_completions():
    assert mc_hard(GOLD, 8, Fraction(0)) == [1, 1]
    assert mc_hard(GOLD, 8, Fraction(1, 2)) == [0, 1]   # 4 of 8 is not > 4
    assert mc_hard(GOLD, 4, Fraction(1, 2)) == [1, 1]   # the first 4 are all successes
    assert mc_hard(KEEP, 8, Fraction(1, 8)) == [0, 1, 1]
    with pytest.raises(ValueError, match="K'=8"):
        mc_hard([[1, 0]], 8, Fraction(0))


def test_mc_grid_pooled_and_per_kind(table):
    at = dict(section="mc", generator="all", kind="all")
    # t = 0, K = 8: the answer-keeping error looks correct at every step (0 of 3 steps, first error missed)
    r = pick(table, **at, threshold=0.0, k_used=8, metric="step_accuracy")
    assert (r["successes"], r["n"]) == (4, 7)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx([x / 100 for x in wilson_interval(4, 7)])
    assert pick(table, **at, threshold=0.0, k_used=8, metric="first_error_accuracy")["successes"] == 2
    # t = 1/8 catches the kept error's step (1 of 8 succeeded) and keeps the gold solution
    assert pick(table, **at, threshold=0.125, k_used=8, metric="first_error_accuracy")["successes"] == 3
    assert pick(table, **at, threshold=0.125, k_used=8, metric="step_accuracy")["successes"] == 5
    # t = 1/2 wrongly rejects the gold solution's first step with all 8; with the first 4 it does not
    assert pick(table, section="mc", generator="all", kind="gold", threshold=0.5, k_used=8,
                metric="first_error_accuracy")["successes"] == 0
    assert pick(table, section="mc", generator="all", kind="gold", threshold=0.5, k_used=4,
                metric="first_error_accuracy")["successes"] == 1
    # K' = 1 (one completion, the first) misses the kept error at any threshold below 1
    assert pick(table, section="mc", generator="a", kind="keep", threshold=0.875, k_used=1,
                metric="first_error_accuracy")["successes"] == 0
    grid = table[(table["section"] == "mc") & (table["generator"] == "all") & (table["kind"] == "all")]
    assert len(grid) == 8 * 4 * 2  # 8 thresholds × 4 K' × 2 metrics


def test_judge_and_consensus(table):
    j = dict(section="judge", generator="all", kind="all")
    assert (pick(table, **j, metric="parsed")["successes"], pick(table, **j, metric="parsed")["n"]) == (2, 3)
    # gold right; the unparsed verdict counts wrong; -1 on the kept error is wrong
    assert pick(table, **j, metric="first_error_accuracy")["successes"] == 1
    c = dict(section="consensus", generator="all", kind="all", threshold=0.0, k_used=8)
    kept = pick(table, **c, metric="share_kept")
    assert (kept["successes"], kept["n"]) == (2, 3)  # gold and keep agree on -1; error has no verdict
    prec = pick(table, **c, metric="precision")
    assert (prec["successes"], prec["n"]) == (1, 2)  # the kept answer-keeping error is a wrong label let through
    steps = pick(table, **c, metric="step_accuracy")
    assert (steps["successes"], steps["n"]) == (2, 5)


def test_an_unparsed_verdict_is_wrong_even_on_a_gold_solution():
    t = audit_metrics(records(judge=(None, 0, 0)), 8, 0.0)
    at = dict(section="judge", generator="all", kind="gold")
    assert pick(t, **at, metric="first_error_accuracy")["successes"] == 0
    assert pick(t, **at, metric="step_accuracy")["successes"] == 0
    # the answer-keeping error is found by the judge and missed by MC at t = 0
    assert pick(t, section="judge", generator="all", kind="keep", metric="first_error_accuracy")["successes"] == 1


def test_consensus_keeps_nothing_when_the_judge_never_agrees():
    t = audit_metrics(records(judge=(0, 1, 2)), 8, 0.0)
    prec = pick(t, section="consensus", generator="all", kind="all", metric="precision")
    assert prec["n"] == 0 and pd.isna(prec["value"])
    assert pick(t, section="consensus", generator="all", kind="all", metric="share_kept")["value"] == 0


def test_calibration_soft_vs_hard(table):
    soft = pick(table, section="calibration", source="mc_soft", generator="all", kind="all", metric="brier")
    hard = pick(table, section="calibration", source="mc_hard", generator="all", kind="all", metric="brier")
    # soft values 4/8, 1 | 0, 0 | 1/8, 1, 1 against truth 1, 1 | 0, 0 | 0, 0, 0
    assert soft["value"] == pytest.approx((0.25 + 1 / 64 + 2) / 7)
    assert hard["value"] == pytest.approx(3 / 7)  # = 1 - step accuracy at t = 0
    ece = pick(table, section="calibration", source="mc_soft", generator="all", kind="all", metric="ece")
    assert ece["value"] == pytest.approx((1 / 8 + 1 / 2 + 2) / 7)
    bins = table[(table["section"] == "reliability") & (table["generator"] == "all") & (table["kind"] == "all")]
    got = {round(r.threshold * 8): (r.successes, r.n) for r in bins.itertuples()}
    assert got == {0: (0, 2), 1: (0, 1), 4: (1, 1), 8: (1, 3)}


def test_table_is_a_valid_stage_table_and_renders(table):
    full = pd.concat([table, pd.DataFrame(cost_rows({"mc": {"prompt_tokens": 1000, "generated_tokens": 300}}))],
                     ignore_index=True)
    full["run"] = "test"
    check_csv(full, "label_audit_csv")
    lines = render_markdown(full, 8, "tiny")
    text = "\n".join(lines)
    assert lines[0].startswith("### Label audit")
    for kind in KINDS:
        assert f"| {kind} |" in text
    assert "mc generated tokens 300" in text
    # the sweep's ends and K' = 1, fixed in advance (never the best grid point: it is chosen on this slice)
    assert "t = 0, K' = 8: 67% [21, 94] (n=3); t = 7/8, K' = 8: 67%" in text and "t = 0, K' = 1: 67%" in text
    assert "t = 1/2, K' = 2" not in text


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="outcomes"):
        audit_metrics(records().drop(columns="outcomes"), 8)


# -- MC keeps every completion's outcome ---------------------------------------------------------------

def test_run_mc_keeps_outcomes_and_k_prime_prefixes_are_a_smaller_run():
    its = [MCInput(f"p{i}", 0, f"q{i}", "42", [f"s{j}" if j != i else "BAD" for j in range(3)]) for i in range(4)]

    def run(k):
        return run_mc(its, SeededCompleter(p_ok=0.5), k=k, needs=Needs(), protocol="naive", seed=1,
                      prompt_fn=lambda q, p: f"{q}|{p}", grade_fn=boxed_grade, keep_outcomes=True)

    full, small = run(8), run(2)
    for r, s in zip(full, small):
        assert [sum(o) for o in r["outcomes"]] == r["n_success"]
        assert all(len(o) == 8 for o in r["outcomes"])
        assert [o[:2] for o in r["outcomes"]] == s["outcomes"]  # per-completion seeds: K'=2 is a K=2 run
    assert "outcomes" not in run_mc(its, SeededCompleter(), k=2, needs=Needs(), protocol="naive",
                                    prompt_fn=lambda q, p: p, grade_fn=boxed_grade)[0]


# -- the slice -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def embedded():
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def eval_questions(embedded):
    """Questions of every embedded evaluation problem set: the benchmarks and the problems the
    ProcessBench cases and their dev split are built from."""
    pb = embedded["processbench"]["constructed"]
    sets = {**embedded["benchmarks"], **{f"pb_{k}": v for k, v in pb["subsets"].items()},
            **{f"pbdev_{k}": v for k, v in pb["dev"]["subsets"].items()}}
    return [q for name, spec in sets.items() for q in load_problems(name, spec)["question"]]


@pytest.fixture(scope="module")
def embedded_slice(embedded, eval_questions):
    a = embedded["audit"]
    probs = {name: load_problems(name, spec) for name, spec in a["problems"].items()}
    return build_slice(probs, int(a["per_cell"]), int(a["seed"]), eval_questions)


def test_embedded_slice_is_balanced_with_exact_errors(embedded, embedded_slice):
    df, counts = embedded_slice
    per_cell = embedded["audit"]["per_cell"]
    assert df.groupby(["generator", "kind"]).size().to_dict() == {
        (g, k): per_cell for g in embedded["audit"]["problems"] for k in KINDS}
    assert df["problem_id"].is_unique and df["question"].map(normalize_question).is_unique
    for r in df.itertuples():
        n = len(r.steps)
        if r.kind == "gold":
            assert r.error_index == -1
        elif r.kind == "keep":
            assert 0 <= r.error_index < n - 1
            assert final_answer_text(r.steps) is not None
        else:
            assert 0 <= r.error_index < n
    # answer-changing errors end elsewhere than the gold answer; answer-keeping ones at it
    for r in df[df["kind"] != "gold"].itertuples():
        same = str(final_answer_text(r.steps)).strip() == str(r.answer).strip()
        assert same == (r.kind == "keep"), (r.kind, r.steps, r.answer)
    # errors are not all at one depth
    assert df[df["kind"] == "error"]["error_index"].nunique() > 1


def test_embedded_slice_is_disjoint_from_evaluation_problems(embedded, embedded_slice, eval_questions):
    df, counts = embedded_slice
    banned = {normalize_question(q) for q in eval_questions}
    assert not banned & set(df["question"].map(normalize_question))
    assert sum(c["evaluation_question"] for c in counts.values()) > 0  # one-digit questions do repeat
    # own seeds: no audit problem set shares (generator, seed) with an evaluation or training set
    pb = embedded["processbench"]["constructed"]
    # mix: its parts
    train = [part for s in embedded["problems"].values() for part in (s.get("parts") or {"": s}).values()]
    others = [*embedded["benchmarks"].values(), *train, *pb["subsets"].values(), *pb["dev"]["subsets"].values()]
    used = {(s["generator"], s["seed"]) for s in others}
    assert not used & {(s["generator"], s["seed"]) for s in embedded["audit"]["problems"].values()}


def test_slice_is_deterministic_and_excludes_what_it_is_told(embedded):
    spec = embedded["audit"]["problems"]["audit_arith"]
    probs = {"a": load_problems("a", spec)}
    first, _ = build_slice(probs, 2, 0)
    again, _ = build_slice(probs, 2, 0)
    pd.testing.assert_frame_equal(first, again)
    other, _ = build_slice(probs, 2, 0, exclude_questions=list(first["question"]))
    assert not set(other["question"]) & set(first["question"])


def test_too_few_problems_names_the_set(embedded):
    spec = {**embedded["audit"]["problems"]["audit_arith"], "size": 4}
    with pytest.raises(ValueError, match="audit.problems.tiny"):
        build_slice({"tiny": load_problems("tiny", spec)}, 3, 0)


# -- the rule functions chained as the workflow calls them (engine replaced by a test double) ---------------

class _Tokenizer:
    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": text.split()}


class _CompleterAndJudge(SeededCompleter):
    """MC completions as SeededCompleter (never right after a BAD step), and the judge's verdict (a prompt
    with no assistant prefix) always "no error"."""

    def __init__(self):
        super().__init__(p_ok=0.6)
        self.tokenizer = _Tokenizer()

    def generate(self, prompts, spec, seeds=None):
        mc = [i for i, p in enumerate(prompts) if not p.endswith("<assistant>")]
        outs = dict(zip(mc, super().generate([prompts[i] for i in mc], spec, [seeds[i] for i in mc]))) if mc else {}
        return [outs.get(i) or [generation.Completion("\\boxed{-1}", 4, "stop")] for i in range(len(prompts))]


def test_audit_rules_chained(tmp_path, monkeypatch):
    from prm_lessons.rules.audit import audit_labels, label_audit
    from prm_lessons.tables import read_csv, write_table

    rows = []
    for g in ("a", "b"):
        for kind, steps, err in (("gold", ["s0", "s1"], -1), ("error", ["BAD", "s1"], 0),
                                 ("keep", ["s0", "BAD", "s2"], 1)):
            rows.append({"problem_id": f"{g}-{kind}", "sample_idx": 0, "generator": g, "kind": kind,
                         "question": f"q {g}",
                         "answer": "42", "steps": steps, "error_index": err})
    sl = tmp_path / "slice.parquet"
    write_table(pd.DataFrame(rows), sl, "audit_slice")
    monkeypatch.setattr(generation, "load_engine", lambda d, e, b="auto": _CompleterAndJudge())
    judge = {"style": "processbench", "template_path": None, "system_prompt": None, "n": 1, "temperature": 0.0,
             "top_p": 1.0, "max_tokens": 64, "seed": 0, "force_answer": True, "guided": True}
    mc = {"temperature": 0.7, "top_p": 0.8, "max_tokens": 16, "seed": 0}
    shards = []
    for s in range(2):
        out = tmp_path / f"labels{s}.parquet"
        audit_labels(inputs={"slice": str(sl)}, outputs={"table": str(out)},
                     params={"k": 4, "mc": mc, "judge": judge, "system_prompt": None, "separator": "\n\n",
                             "grading_timeout_s": 5.0, "model_dir": "x", "model_entry": {}},
                     wildcards={"shard": str(s), "nshards": "2"}, threads=1)
        shards.append(str(out))
    csv = tmp_path / "label_audit.csv"
    label_audit(inputs={"slice": str(sl), "shards": shards}, outputs={"csv": str(csv)},
                params={"k": 4, "consensus_threshold": 0.0, "run_label": "test"}, wildcards={}, threads=1)
    t = read_csv(csv, "label_audit_csv")
    # after a BAD step no completion succeeds: MC finds the answer-changing error exactly at any threshold
    r = pick(t, section="mc", generator="all", kind="error", threshold=0.0, k_used=4, metric="first_error_accuracy")
    assert (r["successes"], r["n"]) == (2, 2)
    assert pick(t, section="judge", generator="all", kind="gold", metric="first_error_accuracy")["successes"] == 2
    cost = t[t["section"] == "cost"].set_index(["source", "metric"])["value"]
    # early protocol: a generator's gold rolls out step 0 (its last step is labelled by the correct answer),
    # error stops at its BAD step 0, keep rolls out s0 and stops at BAD: 4 steps × K=4 × 10 tokens, × 2 generators
    assert cost[("mc", "generated_tokens")] == (1 + 1 + 2) * 2 * 4 * 10
    assert cost[("mc", "prompt_tokens")] > cost[("mc", "prompt_tokens_distinct")] > 0  # K prompts share one
    assert cost[("judge", "generated_tokens")] == 6 * 4


# -- the early protocol's outcomes and the label-level mechanism rows ------------------------------------

def test_steps_after_the_first_step_without_a_success_read_as_negative():
    assert pad_outcomes([[1, 0], [0, 0], []], 2) == [[1, 0], [0, 0], [0, 0]]
    with pytest.raises(ValueError, match="step 1 has 1 of K=2"):
        pad_outcomes([[1, 0], [1], []], 2, "x")


def _mech(error_outcomes, keep_outcomes) -> pd.DataFrame:
    rows = []
    for i, oc in enumerate(error_outcomes):
        rows.append({"problem_id": f"e{i}", "generator": "a", "kind": "error", "error_index": 1, "n_steps": 2,
                     "outcomes": oc})
    for i, oc in enumerate(keep_outcomes):
        rows.append({"problem_id": f"k{i}", "generator": "a", "kind": "keep", "error_index": 1, "n_steps": 3,
                     "outcomes": oc})
    df = pd.DataFrame(rows)
    df["judge_first_error"] = pd.array([None] * len(df), dtype="Int64")
    t = audit_metrics(df, 2, 0.0)
    return t[t["section"] == "mechanism"]


def test_mc_detects_answer_changing_errors_and_misses_answer_keeping_ones():
    found = [[[1, 1], [0, 0]]] * 10                        # error step reached, no completion succeeds
    missed = [[[1, 1], [1, 0], [1, 1]]] * 10               # the kept answer: a completion still succeeds
    never = [[[0, 0], [], []]]                             # stopped before the error: not reached
    t = _mech(found, missed + never)
    det = t[t["metric"] == "error_step_detected"].set_index("kind")
    assert (det.loc["error", "successes"], det.loc["error", "n"]) == (10, 10)
    assert (det.loc["keep", "successes"], det.loc["keep", "n"]) == (0, 10)
    gap = t[t["metric"] == "detection_gap"].iloc[0]
    assert gap["value"] == 1.0 and 0 < gap["ci_low"] <= gap["ci_high"] <= 1.0
    # the other way round the gap is negative with an interval below 0
    t2 = _mech(missed[:1] * 10, [[[1, 1], [0, 0], []]] * 10)
    gap2 = t2[t2["metric"] == "detection_gap"].iloc[0]
    assert gap2["value"] == -1.0 and gap2["ci_high"] < 0


def test_the_threshold_gap_is_paired_over_the_same_solutions():
    # one success in two at the error-free first step: positive at t = 0, negative at t = 1/2
    t = _mech([[[1, 0], [0, 0]]] * 6, [])
    gap = t[t["metric"] == "first_error_accuracy_gap"].iloc[0]
    assert gap["threshold"] == 0.5 and gap["n"] == 6
    assert gap["value"] == 1.0 and gap["ci_low"] == gap["ci_high"] == 1.0  # every pair differs the same way


def test_audit_without_the_judge_has_no_judge_rows_and_says_not_run():
    """audit.judge off: every judge_status is NOT_JUDGED; the table has no judge or consensus rows (a judge
    never asked is not a judge that was wrong 100 % of the time) and the Markdown says it was not run."""
    from prm_lessons.labels import NOT_JUDGED
    from prm_lessons.labels.audit import audit_metrics, render_markdown

    recs = pd.DataFrame({"generator": ["g"] * 2, "kind": ["gold", "error"], "error_index": [-1, 1],
                         "n_steps": [2, 2], "outcomes": [[[1, 1], [1, 1]], [[1, 1], [0, 0]]],
                         "judge_first_error": pd.array([None, None], dtype="Int64"),
                         "judge_status": [NOT_JUDGED] * 2})
    table = audit_metrics(recs, k=2)
    assert not table["section"].isin(["judge", "consensus"]).any()
    assert "not run (audit.judge off)" in "\n".join(render_markdown(table, 2))
    judged = audit_metrics(recs.assign(judge_status=["ok", "ok"],
                                       judge_first_error=pd.array([-1, 1], dtype="Int64")), k=2)
    assert judged["section"].eq("judge").any() and judged["section"].eq("consensus").any()
    assert "not run" not in "\n".join(render_markdown(judged, 2))
