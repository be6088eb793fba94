"""Consensus filtering and training-set variants: agreement rule, variant naming and the threshold
sweep, what MC must decide for the configured variants, positive rate falling with the threshold,
consensus keeping no more than either source, and the trainsets.csv columns."""
import json

import pandas as pd
import pytest

from fakes import SeededCompleter, boxed_grade
from prm_lessons.labels.consensus import consensus_table
from prm_lessons.labels.mc import MCInput, Needs, run_mc
from prm_lessons.labels.trainsets import CSV_COLUMNS, build_variant
from prm_lessons.plan import label_needs, threshold_sweep_variants, uses, variants
from prm_lessons.rules.labels import trainsets_table as rule_trainsets_table
from prm_lessons.tables import check_table

SWEEP = [0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875]
CONFIG = {
    "problems": {"train": {}},
    "consensus": {"threshold": 0.0},
    "trainsets": {
        "variants": {
            "mc_hard": {"source": "mc", "label_type": "hard", "threshold": 0},
            "mc_soft": {"source": "mc", "label_type": "soft"},
            "judge": {"source": "judge"},
            "human": {"source": "human"},
            "consensus_hard": {"source": "consensus", "label_type": "hard"},
            "consensus_soft": {"source": "consensus", "label_type": "soft"},
        },
        "mc_threshold_sweep": SWEEP,
    },
}


def test_variant_names_and_sweep_naming():
    names = list(variants(CONFIG))
    assert names[:6] == ["mc_hard", "mc_soft", "judge", "human", "consensus_hard", "consensus_soft"]
    assert names[6:] == ["mc_hard_t1of8", "mc_hard_t1of4", "mc_hard_t3of8", "mc_hard_t1of2", "mc_hard_t5of8",
                         "mc_hard_t3of4", "mc_hard_t7of8"]  # threshold 0 is mc_hard itself, not a duplicate
    assert all("." not in n and "/" not in n for n in names)
    sweep = threshold_sweep_variants(CONFIG)
    assert sweep[0] == (0.0, "mc_hard") and sweep[1] == (0.125, "mc_hard_t1of8") and len(sweep) == 8


def test_label_needs_follow_the_variants():
    # soft labels roll out every step K times up to the first zero step: every threshold is decided, so
    # the thresholds stay out of the MC params (a new sweep point relabels nothing)
    assert label_needs(CONFIG) == {"thresholds": [0.0], "soft": True}
    hard_sweep = {**CONFIG, "trainsets": {**CONFIG["trainsets"], "variants": {
        k: v for k, v in CONFIG["trainsets"]["variants"].items() if v.get("label_type") != "soft"}}}
    assert label_needs(hard_sweep) == {"thresholds": SWEEP, "soft": False}
    assert label_needs({**CONFIG, "mc": {"protocol": "binary"}})["thresholds"] == SWEEP
    only_hard = {"problems": {"train": {}}, "trainsets": {"variants": {"m": {"source": "mc", "label_type": "hard"}}}}
    assert label_needs(only_hard) == {"thresholds": [0.0], "soft": False}
    assert uses(only_hard, "mc") and not uses(only_hard, "judge")
    assert uses({"trainsets": {"variants": {"c": {"source": "consensus"}}}}, "judge")


def test_unknown_source_is_a_config_error():
    with pytest.raises(ValueError, match="trainsets.variants.x.source"):
        variants({"trainsets": {"variants": {"x": {"source": "oracle"}}}})


# -- a small labelled dataset ----------------------------------------------------------------------------

def dataset(n=40, k=8):
    import random

    rnd = random.Random(1)
    rows, items = [], []
    for i in range(n):
        n_steps = rnd.randint(1, 5)
        bad = rnd.choice([None] + list(range(n_steps)))
        steps = ["BAD" if j == bad else f"s{j}" for j in range(n_steps)]
        if i == 0:
            steps = []  # an empty response
        correct = bool(steps) and bad is None  # mc.last_step "answer" labels the answer step by this grade
        rows.append({"problem_id": f"train-{i:05d}", "sample_idx": 0, "dataset": "train", "question": f"q{i}",
                     "answer": "42", "response": "\n\n".join(steps), "steps": steps, "pred": None, "correct": correct,
                     "grade_status": "ok", "n_tokens": 1, "finish_reason": "stop"})
        items.append(MCInput(f"train-{i:05d}", 0, f"q{i}", "42", steps, correct))
    samples = pd.DataFrame(rows)
    mc = pd.DataFrame(run_mc(items, SeededCompleter(p_ok=0.3), k=k, needs=Needs.from_params(label_needs(CONFIG)),
                             protocol="early", round_size=2, prompt_fn=lambda q, p: q + p, grade_fn=boxed_grade))
    # the judge: right about the BAD step on most responses, unreadable on a few
    fe = []
    for i, st in enumerate(samples["steps"]):
        if i % 7 == 3:
            fe.append(None)
        elif "BAD" in st:
            fe.append(st.index("BAD"))
        else:
            fe.append(-1 if i % 5 else 0)
    judge = pd.DataFrame({"problem_id": samples["problem_id"], "sample_idx": 0,
                          "n_steps": [len(s) for s in samples["steps"]], "first_error": pd.array(fe, dtype="Int64"),
                          "verdicts": [["v"]] * n, "parsed": [f is not None for f in fe]})
    return samples, mc, judge


def test_consensus_agreement_rule():
    samples, mc, judge = dataset()
    cons = consensus_table(mc, judge, 8, 0.0)
    assert cons.loc[0, "reason"] == "no_steps" and not cons.loc[0, "agree"]
    for r in cons.itertuples():
        if r.agree:
            assert r.mc_first_error == r.judge_first_error
        if r.reason == "judge_unparsed":
            assert pd.isna(r.judge_first_error)
    # both "no error" counts as agreement
    assert any(r.agree and r.mc_first_error == -1 for r in cons.itertuples())


def build_all(samples, mc, judge):
    cons = consensus_table(mc, judge, 8, 0.0)
    out = {}
    for name, spec in variants(CONFIG).items():
        if spec["source"] == "human":
            continue
        df, st = build_variant(name, spec, samples=[samples], mc=[mc], judge=[judge], consensus=[cons], k=8)
        check_table(df, "trainset")
        out[name] = (df, st)
    return out


def test_variants_follow_the_label_rules():
    samples, mc, judge = dataset()
    out = build_all(samples, mc, judge)
    for name, (df, st) in out.items():
        for steps, labels in zip(df["steps"], df["labels"]):
            assert len(steps) == len(labels) >= 1
            if variants(CONFIG)[name]["label_type"] == "hard":
                assert set(labels) <= {0.0, 1.0} and 0.0 not in labels[:-1]  # truncated after first negative
            else:
                assert all(0.0 <= x <= 1.0 for x in labels) and 0.0 not in labels[:-1]
        assert set(st) >= set(CSV_COLUMNS)
    # the empty response is in no training set; unreadable judge verdicts are not in the judge set
    assert all("train-00000#0" not in set(df["instance_id"]) for df, _ in out.values())
    assert out["judge"][1]["n_instances"] == sum(1 for i in range(1, 40) if i % 7 != 3)


def test_threshold_sweep_positive_rate_falls():
    samples, mc, judge = dataset()
    out = build_all(samples, mc, judge)
    rates = [out[name][1]["positive_rate"] for _, name in threshold_sweep_variants(CONFIG)]
    assert all(a >= b for a, b in zip(rates, rates[1:])) and rates[0] > rates[-1]


def test_consensus_keeps_no_more_than_either_source():
    samples, mc, judge = dataset()
    out = build_all(samples, mc, judge)
    n = {k: v[1]["n_instances"] for k, v in out.items()}
    assert n["consensus_hard"] <= min(n["mc_hard"], n["judge"])
    assert n["consensus_soft"] == n["consensus_hard"]
    # after agreement, consensus hard labels are the judge's labels for the same responses
    ch = out["consensus_hard"][0].set_index("instance_id")["labels"]
    jl = out["judge"][0].set_index("instance_id")["labels"]
    assert all(ch[i] == jl[i] for i in ch.index)
    assert 0 < out["consensus_hard"][1]["retained_fraction"] <= out["mc_hard"][1]["retained_fraction"]


def test_trainsets_csv_columns(tmp_path):
    samples, mc, judge = dataset()
    out = build_all(samples, mc, judge)
    paths = []
    for name, (_, st) in out.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(st))
        paths.append(str(p))
    rule_trainsets_table(inputs={"stats": paths}, outputs={"csv": str(tmp_path / "t.csv")}, params={},
                         wildcards={}, threads=1)
    df = pd.read_csv(tmp_path / "t.csv")
    assert list(df.columns) == CSV_COLUMNS + ["run"] and len(df) == len(out)
