"""The label rule functions chained on small tables, as the workflow calls them (engine replaced by the
test doubles): sharded MC and judge → merge → consensus → every training-set variant → trainsets.csv."""
import json

import pandas as pd

import prm_lessons.generation.engine as generation
from fakes import ScriptedJudge, SeededCompleter
from prm_lessons.plan import label_needs, variants
from prm_lessons.rules.labels import consensus as rule_consensus
from prm_lessons.rules.labels import judge as rule_judge
from prm_lessons.rules.labels import mc as rule_mc
from prm_lessons.rules.labels import merge_judge, merge_mc
from prm_lessons.rules.labels import trainset as rule_trainset
from prm_lessons.rules.labels import trainsets_table as rule_trainsets_table
from prm_lessons.tables import read_table, write_table

CONFIG = {"problems": {"train": {}}, "consensus": {"threshold": 0.0},
          "trainsets": {"variants": {"mc_hard": {"source": "mc", "label_type": "hard", "threshold": 0.0},
                                     "mc_soft": {"source": "mc", "label_type": "soft"},
                                     "judge": {"source": "judge"},
                                     "consensus_hard": {"source": "consensus", "label_type": "hard"},
                                     "consensus_soft": {"source": "consensus", "label_type": "soft"}},
                        "mc_threshold_sweep": [0.0, 0.5]}}
MC = {"completions": 4, "temperature": 0.7, "top_p": 0.8, "max_tokens": 16, "seed": 0, "protocol": "early",
      "round_size": 1, "last_step": "rollout", "shards": 2}
JUDGE = {"style": "processbench", "template_path": None, "system_prompt": None, "n": 1, "temperature": 0.0,
         "top_p": 1.0, "max_tokens": 64, "seed": 0, "force_answer": True, "guided": True, "shards": 2}


def samples(tmp_path):
    rows = []
    for i in range(6):
        steps = [f"s{j}" for j in range(i % 3 + 1)] if i != 5 else []
        if i == 2:
            steps[1] = "BAD"
        for k in range(2):
            rows.append({"problem_id": f"train-{i:05d}", "sample_idx": k, "dataset": "train", "question": f"q{i}",
                         "answer": "42", "response": "\n\n".join(steps), "steps": steps, "pred": None,
                         "correct": False, "grade_status": "no_answer", "n_tokens": 3, "finish_reason": "stop"})
    p = tmp_path / "samples.parquet"
    write_table(pd.DataFrame(rows), p, "samples")
    return str(p)


def test_label_rules_end_to_end(tmp_path, monkeypatch):
    sp = samples(tmp_path)
    monkeypatch.setattr(generation, "load_engine", lambda d, e, b="auto", **kw: SeededCompleter(p_ok=0.5))
    shards = []
    for s in range(2):
        out = tmp_path / f"mc{s}.parquet"
        rule_mc(inputs={"samples": sp}, outputs={"table": str(out)},
                params={"mc": MC, "needs": label_needs(CONFIG), "system_prompt": "sys", "separator": "\n\n",
                        "grading_timeout_s": 5.0, "model_dir": "x", "model_entry": {}},
                wildcards={"dataset": "train", "shard": str(s), "nshards": "2"}, threads=1)
        shards.append(str(out))
    # the fake grader inside rule_mc is the real grade_many; SeededCompleter writes \boxed{42} or \boxed{wrong}
    merge_mc(inputs={"shards": shards}, outputs={"table": str(tmp_path / "mc.parquet")},
             params={}, wildcards={}, threads=1)
    mc = read_table(tmp_path / "mc.parquet", "mc")
    assert len(mc) == 12 and set(mc["problem_id"]) == {f"train-{i:05d}" for i in range(6)}

    # the judge reads the ungraded responses (rule grade_samples grades them for MC and the metrics)
    rp = str(tmp_path / "responses.parquet")
    write_table(read_table(sp, "samples").drop(columns=["pred", "correct", "grade_status"]), rp, "responses")
    verdicts = ["\\boxed{-1}", "\\boxed{0}", "no idea", "\\boxed{1}", "\\boxed{7}"] * 2
    monkeypatch.setattr(generation, "load_engine", lambda d, e, b="auto": ScriptedJudge(verdicts, forced="-1}"))
    jshards = []
    for s in range(2):
        out = tmp_path / f"j{s}.parquet"
        rule_judge(inputs={"responses": rp}, outputs={"table": str(out)},
                   params={"judge": JUDGE, "model_dir": "x", "model_entry": {}},
                   wildcards={"dataset": "train", "shard": str(s), "nshards": "2"}, threads=1)
        jshards.append(str(out))
    merge_judge(inputs={"shards": jshards}, outputs={"table": str(tmp_path / "judge.parquet")},
                params={}, wildcards={}, threads=1)
    judge = read_table(tmp_path / "judge.parquet", "judge")
    assert len(judge) == 12
    assert set(judge.loc[judge["n_steps"] == 0, "status"]) == {"no_steps"}

    rule_consensus(inputs={"mc": str(tmp_path / "mc.parquet"), "judge": str(tmp_path / "judge.parquet")},
                   outputs={"table": str(tmp_path / "cons.parquet")}, params={"consensus": {"threshold": 0.0}, "k": 4},
                   wildcards={"dataset": "train"}, threads=1)
    stats = []
    for name, spec in variants(CONFIG).items():
        inputs = {"samples": [sp]}
        if spec["source"] in ("mc", "consensus"):
            inputs["mc"] = [str(tmp_path / "mc.parquet")]
        if spec["source"] == "judge":
            inputs["judge"] = [str(tmp_path / "judge.parquet")]
        if spec["source"] == "consensus":
            inputs["consensus"] = [str(tmp_path / "cons.parquet")]
        out = {"table": str(tmp_path / f"{name}.parquet"), "stats": str(tmp_path / f"{name}.json")}
        rule_trainset(inputs=inputs, outputs=out, params={"variant": name, "spec": spec, "k": 4, "run": {}},
                      wildcards={"variant": name}, threads=1)
        df = read_table(out["table"], "trainset")
        assert all(len(s) == len(lab) for s, lab in zip(df["steps"], df["labels"]))
        stats.append(out["stats"])
    rule_trainsets_table(inputs={"stats": stats}, outputs={"csv": str(tmp_path / "t.csv")}, params={},
                         wildcards={}, threads=1)
    t = pd.read_csv(tmp_path / "t.csv").set_index("variant")
    assert t.loc["mc_hard", "n_instances"] == 10  # the two empty responses get no labels
    assert t.loc["consensus_hard", "n_instances"] <= min(t.loc["mc_hard", "n_instances"], t.loc["judge", "n_instances"])
    assert t.loc["mc_hard", "positive_rate"] >= t.loc["mc_hard_t1of2", "positive_rate"]
    assert json.loads((tmp_path / "mc_hard.json").read_text())["retained_fraction"] == round(10 / 12, 6)


def test_rule_mc_pipelined_grading_gives_the_sequential_table_and_records_its_timing(tmp_path, monkeypatch):
    """mc.lanes 2 (grading overlapped with generation) writes the same table as lanes 1 (sequential rounds);
    the table's summary records the seconds and the engine's idle share; sampling.seed_mode reaches the engine."""
    from prm_lessons.tables import table_meta

    sp = samples(tmp_path)
    modes = []
    monkeypatch.setattr(generation, "load_engine", lambda d, e, b="auto", seed_mode="per_request":
                        modes.append(seed_mode) or SeededCompleter(p_ok=0.5))
    tables, summaries = {}, {}
    for lanes in (1, 2):
        out = tmp_path / f"mc_lanes{lanes}.parquet"
        rule_mc(inputs={"samples": sp}, outputs={"table": str(out)},
                params={"mc": {**MC, "lanes": lanes}, "needs": label_needs(CONFIG), "system_prompt": "sys",
                        "separator": "\n\n", "grading_timeout_s": 5.0, "model_dir": "x", "model_entry": {},
                        "seed_mode": "per_request"},
                wildcards={"dataset": "train", "shard": "0", "nshards": "1"}, threads=1)
        tables[lanes] = read_table(out, "mc")
        summaries[lanes] = table_meta(out)["summary"]
    pd.testing.assert_frame_equal(tables[1], tables[2])
    assert modes == ["per_request", "per_request"]
    for lanes, s in summaries.items():
        t = s["timing"]
        assert t["lanes"] == lanes and t["calls"] > 0 and 0 <= t["engine_idle_share"] <= 1
        assert {"generate_seconds", "grade_seconds", "wait_seconds", "wall_seconds"} <= set(t)
    assert summaries[2]["timing"]["calls"] > summaries[1]["timing"]["calls"]
