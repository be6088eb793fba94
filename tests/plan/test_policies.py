"""Several Best-of-N policies and several N in one run (bon.policies, bon.more_n): the plan, the config
checks, the prefix rule (every N on the first N samples of the same draws), the tables' policy and N
rows, and the DAG of a second policy."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from prm_lessons import plan
from prm_lessons.config import ConfigError, validate_config
from prm_lessons.metrics import bon as m_bon
from prm_lessons.rules.evaluation import bon_metrics, bon_table
from prm_lessons.rules.sampling import BASELINE_COLUMNS, bon_baselines
from prm_lessons.tables import read_csv, write_table

ROOT = Path(__file__).resolve().parents[2]
BON = {"n": 4, "aggregations": ["product", "min"], "maj_grouping": "normalized",
       "bootstrap": {"samples": 50, "seed": 0, "confidence": 0.95}}


def base() -> dict:
    """`make run-all`'s config (config.yaml + config/all.yaml): the one with a second policy."""
    from prm_lessons.config import deep_update

    return deep_update(yaml.safe_load((ROOT / "config/config.yaml").read_text()),
                       yaml.safe_load((ROOT / "config/all.yaml").read_text()))


def samples_frame(bench: str, n_problems: int, n: int, seed: int = 0) -> pd.DataFrame:
    """A scored samples table: n responses per problem, answers from a small set, random step scores."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_problems):
        for i in range(n):
            pred = str(int(rng.integers(0, 3)))
            rows.append({"problem_id": f"{bench}-{p:05d}", "sample_idx": i, "dataset": bench, "question": "q",
                         "answer": "1", "response": pred, "steps": [pred], "pred": pred, "correct": pred == "1",
                         "grade_status": "ok", "n_tokens": 3, "finish_reason": "stop",
                         "step_scores": [float(x) for x in rng.random(2)]})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------ the plan

def test_embedded_plan_names_two_policies_and_two_n():
    cfg = validate_config(base())
    pols = plan.bon_policies(cfg)
    assert list(pols) == ["smollm2", "smollm2_t1"] and plan.primary_policy(cfg) == "smollm2"
    assert pols["smollm2"]["sampling"] == cfg["sampling"] and pols["smollm2"]["limit"] is None
    assert pols["smollm2_t1"]["sampling"]["temperature"] == 1.0 and pols["smollm2_t1"]["limit"] == 30
    assert pols["smollm2_t1"]["sampling"]["max_tokens"] == cfg["sampling"]["max_tokens"]  # not overridden
    # more_n without `policies`: the primary only; every N is a prefix of one draw at the largest N
    assert plan.bon_ns(cfg, "arith") == [2, 4] and plan.bon_ns(cfg, "arith", "smollm2_t1") == [4]
    assert plan.sample_n(cfg, "arith") == 4 == plan.samples_per_problem(cfg, "arith", "smollm2_t1")
    assert plan.samples_per_problem(cfg, "train") == cfg["sampling"]["n"]
    assert plan.policy_dir(cfg, "smollm2") == "" and plan.policy_dir(cfg, "smollm2_t1") == "policies/smollm2_t1/"
    assert plan.policy_of_dir(cfg, "") == "smollm2" and plan.policy_of_dir(cfg, "policies/smollm2_t1/") == "smollm2_t1"
    assert plan.sample_shards(cfg, "arith", "smollm2_t1") == [
        "results/policies/smollm2_t1/responses/arith/shard0of1.parquet"]
    assert plan.sample_shards(cfg, "arith") == ["results/responses/arith/shard0of1.parquet"]
    assert cfg["analysis"]["n"] == cfg["bon"]["n"]  # the tables read bon.csv at bon.n, never at a more_n N


def test_a_policy_scored_by_some_prms_names_bad_entries():
    cfg = validate_config(base())
    specs = {"human": {}, "mc_hard": {}, "judge": {}}
    assert plan.policy_prms(cfg, "smollm2_t1", specs) == ["human", "mc_hard", "judge"]  # unset: every PRM
    cfg["bon"]["policies"]["smollm2_t1"]["prms"] = ["judge", "human"]
    assert plan.policy_prms(cfg, "smollm2_t1", specs) == ["human", "judge"]  # in the PRMs' order
    assert plan.policy_prms(cfg, "smollm2", specs) == list(specs)
    cfg["bon"]["policies"]["smollm2_t1"]["prms"] = ["human", "nope"]
    with pytest.raises(ValueError, match=r"bon\.policies\.smollm2_t1\.prms\.1.*'nope' is not a PRM"):
        plan.policy_prms(cfg, "smollm2_t1", specs)
    cfg["bon"]["policies"]["smollm2"]["prms"] = ["human"]
    with pytest.raises(ValueError, match=r"bon\.policies\.smollm2\.prms.*primary"):
        plan.policy_prms(cfg, "smollm2", specs)


def test_largest_n_is_sampled_and_named_policies_get_their_n():
    cfg = base()
    cfg["bon"]["more_n"] = [{"n": 8, "benchmarks": ["chain_sum"], "policies": ["smollm2", "smollm2_t1"]},
                            {"n": 2, "benchmarks": ["arith"]}]
    cfg["bon"]["policies"]["smollm2_t1"]["benchmarks"] = ["chain_sum"]
    cfg = validate_config(cfg)
    assert plan.bon_ns(cfg, "chain_sum", "smollm2_t1") == [4, 8] and plan.sample_n(cfg, "chain_sum") == 8
    assert plan.bon_ns(cfg, "arith") == [2, 4] and plan.bon_ns(cfg, "arith", "smollm2_t1") == []
    assert plan.bon_evaluations(cfg) == [("smollm2", "arith", [2, 4]), ("smollm2", "chain_sum", [4, 8]),
                                         ("smollm2_t1", "chain_sum", [4, 8])]
    with pytest.raises(ValueError, match="does not sample benchmark 'arith'"):
        plan.sample_n(cfg, "arith", "smollm2_t1")


def test_without_policies_the_one_policy_is_roles_policy():
    cfg = base()
    del cfg["bon"]["policies"], cfg["bon"]["more_n"]
    cfg = validate_config(cfg)
    assert list(plan.bon_policies(cfg)) == ["smollm2"] and plan.bon_ns(cfg, "arith") == [cfg["bon"]["n"]]
    assert plan.policy_dir_regex(cfg) == "(?:policies/(?:(?!))/)?"  # matches only the empty primary dir


# ------------------------------------------------------------------------------------- config checks

@pytest.mark.parametrize("edit, key", [
    (lambda b: b["policies"]["smollm2_t1"].update(model="nope"), "bon.policies.smollm2_t1.model"),
    (lambda b: b["policies"]["smollm2_t1"].pop("model"), "bon.policies.smollm2_t1.model"),
    (lambda b: b["policies"]["smollm2_t1"].update(benchmarks=["nope"]), "bon.policies.smollm2_t1.benchmarks.0"),
    (lambda b: b["policies"]["smollm2"].update(limit=3), "bon.policies.smollm2.limit"),
    (lambda b: b["policies"]["smollm2"].update(temperature=1.0), "bon.policies.smollm2.temperature"),
    (lambda b: b.update(policies={"x": {"model": "smollm2"}, "smollm2": {"model": "smollm2"}}) or
     b["policies"].update(x={"model": "smollm2", "limit": 2}), "bon.policies.x.limit"),
    (lambda b: b["more_n"][0].update(benchmarks=["arith", "nope"]), "bon.more_n.0.benchmarks.1"),
    (lambda b: b["more_n"][0].update(n=0), "bon.more_n.0.n"),
    (lambda b: b["more_n"][0].update(n=4), "bon.more_n.0.n"),  # = bon.n
    (lambda b: b["more_n"].append({"n": 2, "benchmarks": ["arith"]}), "bon.more_n.1.n"),  # twice
    (lambda b: b["more_n"][0].update(policies=["nope"]), "bon.more_n.0.policies.0"),
    (lambda b: b["more_n"][0].update(policies=["smollm2_t1"]) or
     b["policies"]["smollm2_t1"].update(benchmarks=["chain_sum"]), "bon.more_n.0.benchmarks.0"),
    (lambda b: b["more_n"][0].update(extra=1), "bon.more_n.0.extra"),
    (lambda b: b.update(judged=["nope"]), "bon_judges.policies.0"),
])
def test_bad_policies_and_n_name_the_key(edit, key):
    cfg = copy.deepcopy(base())
    edit(cfg["bon"])
    if "judged" in cfg["bon"]:  # bon_judges.policies, edited through the same hook
        cfg["bon_judges"]["policies"] = cfg["bon"].pop("judged")
    with pytest.raises(ConfigError, match=f"`{key}`"):
        validate_config(cfg)


def test_primary_policy_follows_roles_policy_in_an_overlay():
    cfg = base()
    cfg["models"]["other"] = dict(cfg["models"]["smollm2"])
    cfg["roles"]["policy"] = "other"  # the primary states no model: it samples with roles.policy
    cfg = validate_config(cfg)
    assert plan.bon_policies(cfg)["smollm2"]["model"] == "other"


def test_primary_policy_must_be_roles_policy():
    cfg = base()
    cfg["models"]["other"] = dict(cfg["models"]["smollm2"])
    cfg["bon"]["policies"] = {"other": {"model": "other"}, **cfg["bon"]["policies"]}
    with pytest.raises(ConfigError, match=r"`bon\.policies\.other\.model`: the first \(primary\) policy"):
        validate_config(cfg)


# --------------------------------------------------------------------------------- the prefix rule

def test_first_n_samples_is_the_prefix_and_refuses_gaps_and_short_problems():
    df = samples_frame("arith", 3, 4).assign(benchmark="arith")
    part = m_bon.first_n_samples(df, 2)
    assert sorted(part["sample_idx"].unique()) == [0, 1] and len(part) == 6
    gap = df[~((df["problem_id"] == "arith-00001") & (df["sample_idx"] == 1))]
    with pytest.raises(ValueError, match=r"benchmark 'arith': problem arith-00001 has 1 of sample_idx 0\.\.1"):
        m_bon.first_n_samples(gap, 2)
    assert len(m_bon.first_n_samples(gap, 1)) == 3  # the gap is after the prefix
    with pytest.raises(ValueError, match=r"benchmark 'arith': problem arith-00000 has 4 of sample_idx 0\.\.4"):
        m_bon.first_n_samples(df, 5)


def _scores(tmp_path: Path, benches=("arith", "chain_sum"), n=4, pdir="") -> dict[str, list[str]]:
    """bon_metrics' inputs: the graded samples and the score tables (keys and step scores)."""
    paths = {"samples": [], "scores": []}
    for k, b in enumerate(benches):
        df = samples_frame(b, 12, n, seed=k)
        s, p = tmp_path / f"results/{pdir}samples/{b}.parquet", tmp_path / f"results/{pdir}scores/prm_a/{b}.parquet"
        write_table(df.drop(columns=["step_scores"]), s, "samples")
        write_table(df[["problem_id", "sample_idx", "step_scores"]], p, "step_scores", meta={"outcome": False})
        paths["samples"].append(str(s))
        paths["scores"].append(str(p))
    return paths


def test_bon_metrics_at_every_n_equal_metrics_of_the_truncated_table(tmp_path):
    paths = _scores(tmp_path)
    out = tmp_path / "m.json"
    bon_metrics(inputs=paths, outputs={"metrics": str(out)},
                params={"bon": BON, "policy": "p1", "ns": {"arith": [2, 4], "chain_sum": [4]}, "run_label": "t"},
                wildcards={"prm": "prm_a"}, threads=1)
    m = json.loads(out.read_text())
    assert m["policy"] == "p1" and set(m["benchmarks"]) == {"arith", "chain_sum"} and list(m["by_n"]) == ["2"]
    m2 = m["by_n"]["2"]
    assert set(m2["benchmarks"]) == {"arith"} and m2["benchmarks"]["arith"]["n"] == 2
    # the same numbers as a table that only ever had 2 samples per problem
    short = samples_frame("arith", 12, 4, seed=0)
    short = short[short["sample_idx"] < 2].assign(benchmark="arith")
    ref = m_bon.bon_metrics(short, BON["aggregations"], n=2, maj_grouping="normalized", bootstrap=50, seed=0)
    for col in ("pass", "maj", "prm_product", "prm_min"):
        assert m2["benchmarks"]["arith"][col] == pytest.approx(ref["benchmarks"]["arith"][col])
        assert m2["benchmarks"]["arith"]["ci"][col] == pytest.approx(ref["benchmarks"]["arith"]["ci"][col])

    # bon.csv: a policy column, rows at every N, the N=2 average over its own benchmarks
    second = tmp_path / "m2.json"
    bon_metrics(inputs=_scores(tmp_path, ("arith",), pdir="policies/p2/"),
                outputs={"metrics": str(second)}, params={"bon": BON, "policy": "p2", "ns": {"arith": [4]}},
                wildcards={"prm": "prm_a"}, threads=1)
    table = tmp_path / "bon.csv"
    bon_table(inputs={"metrics": [str(out), str(second)]}, outputs={"table": str(table)}, params={"run_label": "t"},
              wildcards={}, threads=1)
    df = read_csv(table, "bon_csv")  # passes the table's checks, sidecar included
    assert list(df.columns) == ["policy", "prm", "benchmark", "metric", "n", "accuracy", "ci_low", "ci_high", "run"]
    assert df["policy"].drop_duplicates().tolist() == ["p1", "p2"]
    assert sorted(df.loc[df["policy"] == "p1", "n"].unique()) == [2, 4]
    avg2 = df[(df["policy"] == "p1") & (df["n"] == 2) & (df["benchmark"] == "average") & (df["metric"] == "maj")]
    assert avg2["accuracy"].iloc[0] == pytest.approx(m2["benchmarks"]["arith"]["maj"])
    assert set(df.loc[df["policy"] == "p2", "benchmark"]) == {"arith", "average"}


def test_bon_metrics_refuses_a_table_with_fewer_samples_than_an_n(tmp_path):
    paths = _scores(tmp_path, ("arith",), n=3)
    with pytest.raises(ValueError, match="benchmark 'arith'"):
        bon_metrics(inputs=paths, outputs={"metrics": str(tmp_path / "m.json")},
                    params={"bon": BON, "policy": "p1", "ns": {"arith": [4]}}, wildcards={"prm": "prm_a"}, threads=1)


def test_bon_baselines_rows_per_policy_benchmark_and_n(tmp_path):
    paths, evals = [], [("p1", "arith", [2, 4]), ("p1", "chain_sum", [4]), ("p2", "arith", [4])]
    for k, (pol, b, _) in enumerate(evals):
        p = tmp_path / f"{pol}_{b}.parquet"
        write_table(samples_frame(b, 10, 4, seed=k).drop(columns=["step_scores"]), p, "samples")
        paths.append(str(p))
    out = tmp_path / "bon_baselines.csv"
    bon_baselines(inputs={"samples": paths}, outputs={"table": str(out)},
                  params={"evaluations": [list(e) for e in evals], "maj_grouping": "normalized", "run_label": "t"},
                  wildcards={}, threads=1)
    df = read_csv(out, "bon_baselines_csv")
    assert list(df.columns) == BASELINE_COLUMNS
    keys = list(zip(df["policy"], df["benchmark"], df["n"]))
    assert keys == [("p1", "arith", 2), ("p1", "average", 2), ("p1", "arith", 4), ("p1", "chain_sum", 4),
                    ("p1", "average", 4), ("p2", "arith", 4), ("p2", "average", 4)]
    short = samples_frame("arith", 10, 4, seed=0)
    ref = m_bon.baselines(short[short["sample_idx"] < 2], 2, "normalized")
    row = df[(df["policy"] == "p1") & (df["benchmark"] == "arith") & (df["n"] == 2)].iloc[0]
    assert row["maj"] == pytest.approx(ref["maj"]) and row["pass"] == pytest.approx(ref["pass"])  # fractions


def test_judge_table_names_the_policy_of_each_row(tmp_path):
    from prm_lessons.evaluation.verifiers import COUNTS, JUDGED_COLUMNS
    from prm_lessons.rules.verifiers import bon_judge_metrics, bon_judge_table

    paths = []
    for pol in ("p1", "p2"):
        samples = tmp_path / pol / "arith.parquet"
        df = samples_frame("arith", 5, 4, seed=len(paths))
        write_table(df.drop(columns=["step_scores"]), samples, "samples")
        first = df[df["sample_idx"] == 0]  # the judge always picks sample 0
        judged = pd.DataFrame({"dataset": "arith", "problem_id": first["problem_id"], "n": 4,
                               "sample_idxs": [[0, 1, 2, 3]] * len(first), "selected_idx": 0,
                               "selected_correct": first["correct"], **{c: 0 for c in COUNTS}})
        judged = judged.reindex(columns=JUDGED_COLUMNS)
        write_table(judged, tmp_path / pol / "judged" / "arith.parquet", "bon_judge")
        out = tmp_path / pol / "m.json"
        bon_judge_metrics(inputs={"samples": [str(samples)],
                                  "judged": [str(tmp_path / pol / "judged" / "arith.parquet")]},
                          outputs={"metrics": str(out)}, params={"bon": BON, "model": "m", "policy": pol},
                          wildcards={"judge": "j", "mode": "pointwise"}, threads=1)
        paths.append(str(out))
        judge_acc = json.loads(out.read_text())["benchmarks"]["arith"]["judge"]
        assert judge_acc == pytest.approx(first["correct"].mean())
    table = tmp_path / "judge_bon.csv"
    bon_judge_table(inputs={"metrics": paths}, outputs={"table": str(table)}, params={}, wildcards={}, threads=1)
    df = read_csv(table, "judge_bon_csv")
    assert df.columns[0] == "policy" and df["policy"].drop_duplicates().tolist() == ["p1", "p2"]


def test_a_policy_limit_samples_its_first_problems_only(monkeypatch, tmp_path):
    from fakes import SAMPLING, LimitedEngine, four_problems
    from prm_lessons.generation import engine as generation
    from prm_lessons.rules.sampling import sample
    from prm_lessons.tables import read_table

    monkeypatch.setattr(generation, "load_engine", lambda *a, **k: LimitedEngine(4096))
    pfile = tmp_path / "problems.parquet"
    write_table(four_problems(long_at=()), pfile, "problems", meta={"spec": {}})
    params = {"sampling": SAMPLING, "model": {"name": "smollm2", "max_model_len": 4096},
              "model_dir": "x", "n": 2, "limit": 3}
    shards = [tmp_path / f"shard{i}of2.parquet" for i in range(2)]
    for i, shard in enumerate(shards):
        sample(inputs={"problems": str(pfile)}, outputs={"responses": str(shard)}, params=params,
               wildcards={"shard": str(i), "nshards": "2"}, threads=1)
    ids = sorted(set().union(*(set(read_table(s, "responses")["problem_id"]) for s in shards)))
    assert ids == ["d-00000", "d-00001", "d-00002"]  # the first 3 of 4, sharded as usual


# ------------------------------------------------------------------------------------------- the DAG

def test_dry_run_plans_the_second_policy_sampling_and_scoring(all_plan):
    out = all_plan.out
    cfg = validate_config(base())
    second = list(plan.bon_policies(cfg))[1]
    for b in cfg["benchmarks"]:
        assert f"results/policies/{second}/responses/{b}/shard0of1.parquet" in out
        assert f"results/policies/{second}/samples/{b}.parquet" in out  # graded by grade_samples
        assert f"results/features/policies/{second}/responses/{b}.safetensors" in out
        assert f"results/policies/{second}/scores/mc_hard/{b}.parquet" in out
    assert f"results/policies/{second}/metrics/bon/mc_hard.json" in out
    if cfg["bon_judges"]["judges"] and second in plan.bon_judge_policies(cfg):
        assert f"results/policies/{second}/metrics/bon_judges/" in out  # Table 12: the second policy judged
    assert "results/metrics/bon/mc_hard.json" in out and "results/responses/arith/shard0of1.parquet" in out
