"""Sharded LLM-judge jobs (bon_judges.shards, critics.shards): the shard jobs and their merge write exactly
the tables of one unsharded job, the merges name problems (cases) in two shards, in none, or foreign, the
paper plan splits the long judge and critic jobs within cluster.max_runtime, and `enabled: false` drops a
judge or critic from the plan."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fakes import QualityJudge, ScriptedEngine
from prm_lessons import plan
from prm_lessons.config import load_config, used_models
from prm_lessons.errors import InputError
from prm_lessons.evaluation import verifiers as V
from prm_lessons.jobs.shards import in_shard
from prm_lessons.rules import evaluation
from prm_lessons.rules import verifiers as rules_verifiers
from prm_lessons.tables import read_table, table_meta, write_table

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------- Best-of-N judges

def bon_samples(bench: str, n_problems: int, n: int = 3) -> pd.DataFrame:
    """Samples whose steps carry QualityJudge's markers (q=<int> for pairwise, ok/bad for pointwise)."""
    rows = []
    for p in range(n_problems):
        for k in range(n):
            steps = [f"{bench} p{p} k{k} q={(7 * p + 3 * k) % 10} {'ok' if (p + k) % 2 else 'bad'}", "ok"][: 1 + k % 2]
            rows.append({"problem_id": f"{bench}-{p:05d}", "sample_idx": k, "dataset": bench,
                         "question": f"Q {bench} {p}",
                         "answer": "1", "response": "\n\n".join(steps), "steps": steps, "pred": "1",
                         "correct": bool((p + k) % 3 == 0), "grade_status": "ok", "n_tokens": 3,
                         "finish_reason": "stop"})
    return pd.DataFrame(rows)


@pytest.fixture
def judge_engines(monkeypatch):
    """rules.verifiers.load_engine → a fresh QualityJudge per job (recorded)."""
    made: list[QualityJudge] = []

    def load(model_dir, entry):
        made.append(QualityJudge(forced="1"))
        return made[-1]

    monkeypatch.setattr(rules_verifiers, "load_engine", load)
    return made


def _bon_judge(samples: list[str], outs: list[str], mode: str, shard=None, limit=None):
    settings = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 64, "seed": 0, "system_prompt": None,
                "force_answer": True, "force_truncated": False, "guided": True}
    wc = {"judge": "j", "mode": mode, **({"shard": str(shard[0]), "nshards": str(shard[1])} if shard else {})}
    rules_verifiers.bon_judge(inputs={"responses": samples, "template": str(V.template_file(mode))},
                              outputs={"judged": outs},
                              params={"settings": settings, "n": 3, "limit": limit, "model_entry": {"name": "m"},
                                      "model_dir": "unused"}, wildcards=wc, threads=1)


def _merge_bon(samples: list[str], shards: list[str], outs: list[str], limit=None):
    rules_verifiers.merge_bon_judge(inputs={"responses": samples, "shards": shards}, outputs={"judged": outs},
                                    params={"n": 3, "limit": limit}, wildcards={}, threads=1)


def _bon_setup(tmp_path) -> tuple[list[str], list[str]]:
    samples = []  # the ungraded responses the judge jobs read
    for bench, k in (("arith", 7), ("chain", 2)):
        samples.append(str(tmp_path / f"responses/{bench}.parquet"))
        write_table(bon_samples(bench, k).drop(columns=["pred", "correct", "grade_status"]), samples[-1], "responses")
    return samples, ["arith", "chain", "unsampled"]  # a judged benchmark the policy does not sample: empty


@pytest.mark.parametrize("mode", V.MODES)
@pytest.mark.parametrize("nshards,limit", [(3, None), (7, None), (2, 5)])
def test_sharded_bon_judge_and_merge_equal_the_unsharded_tables(tmp_path, judge_engines, capsys, mode, nshards, limit):
    samples, benches = _bon_setup(tmp_path)
    whole = [str(tmp_path / f"whole/{b}.parquet") for b in benches]
    _bon_judge(samples, whole, mode, limit=limit)
    prompts_whole = len(judge_engines[0].prompts)
    shard_files = []
    for i in range(nshards):
        outs = [str(tmp_path / f"judged/{b}/shard{i}of{nshards}.parquet") for b in benches]
        _bon_judge(samples, outs, mode, shard=(i, nshards), limit=limit)
        shard_files += outs
    log = capsys.readouterr().out
    assert f"shard {nshards - 1} of {nshards}: " in log and re.search(r"all problems: \d+ problems, \d+ responses", log)
    # each shard job judged only its problems: together exactly the unsharded job's requests; a shard
    # without problems loads no model (7 shards, 7 arith problems: every job has one)
    assert sum(len(e.prompts) for e in judge_engines[1:]) == prompts_whole
    assert len(judge_engines) == 1 + nshards
    sizes = [len(read_table(p, "bon_judge")) for p in shard_files if "/arith/" in p]
    assert all(sizes) and sum(sizes) == (limit or 7)
    merged = [str(tmp_path / f"judged/{b}.parquet") for b in benches]
    _merge_bon(samples, shard_files, merged, limit=limit)
    for w, m in zip(whole, merged):
        pd.testing.assert_frame_equal(read_table(m, "bon_judge"), read_table(w, "bon_judge"))
    assert len(read_table(merged[2], "bon_judge")) == 0
    # the merged metadata sums the shards' counts: the unsharded job's
    for c in V.COUNTS:
        assert table_meta(merged[0])[c] == table_meta(whole[0])[c]


def test_bon_judge_shard_without_problems_loads_no_model(tmp_path, judge_engines):
    samples, _ = _bon_setup(tmp_path)
    out = str(tmp_path / "judged/chain/shard5of8.parquet")  # chain has 2 problems, arith 7: shard 7 is empty
    _bon_judge(samples[1:], [out], "pointwise", shard=(5, 8))
    assert judge_engines == [] and len(read_table(out, "bon_judge")) == 0


def test_bon_judge_merge_refuses_duplicate_missing_and_foreign_problems(tmp_path, judge_engines):
    samples, _ = _bon_setup(tmp_path)
    n = 3
    shards = [str(tmp_path / f"j/arith/shard{i}of{n}.parquet") for i in range(n)]
    for i, s in enumerate(shards):
        _bon_judge(samples[:1], [s], "pointwise", shard=(i, n))
    out = [str(tmp_path / "j/arith.parquet")]
    ids = bon_samples("arith", 7)["problem_id"].drop_duplicates()
    in1 = sorted(ids[in_shard(ids, 1, n)])
    with pytest.raises(InputError) as err:  # a shard listed twice
        _merge_bon(samples[:1], [*shards, shards[1]], out)
    assert all(f"problem_id {p} is in 2 shards" in str(err.value) for p in in1)
    with pytest.raises(InputError) as err:  # a lost shard
        _merge_bon(samples[:1], shards[:1] + shards[2:], out)
    assert all(f"problem_id {p} is in no shard" in str(err.value) for p in in1)
    with pytest.raises(InputError, match=r"arith-00006 .*not in the table being scored"):  # foreign: judged
        _merge_bon(samples[:1], shards, out, limit=6)  # without the limit the merge expects
    assert not Path(out[0]).exists()


# ------------------------------------------------------------------------------------------------ critics

CRITIC_SPEC = {"n": 2, "temperature": 0.7, "top_p": 0.8, "top_k": None, "max_tokens": 64, "seed": 42,
               "system_prompt": None, "template": "project", "force_answer": False, "force_truncated": False,
               "parse": "lenient"}


def pb_cases(n_cases: int) -> pd.DataFrame:
    return pd.DataFrame([{"id": f"math-{c}", "subset": "math", "generator": "g", "problem": f"problem-{c:03d}-end",
                          "steps": [f"c{c}.{j}" for j in range(1 + c % 4)] if c != 3 else [],
                          "final_answer_correct": True, "label": c % 3 - 1} for c in range(n_cases)])


@pytest.fixture
def critic_engines(monkeypatch):
    made: list[ScriptedEngine] = []

    def load(model_dir, entry):
        made.append(ScriptedEngine({f"problem-{c:03d}-end": f"Paragraph {c % 2}: wrong. \\boxed{{{c % 3 - 1}}}"
                                    for c in range(40)}))
        return made[-1]

    monkeypatch.setattr(evaluation, "load_engine", load)
    return made


def _critic(cases: str, out: str, shard=None):
    wc = {"judge": "c", **({"shard": str(shard[0]), "nshards": str(shard[1])} if shard else {})}
    evaluation.critic_processbench(inputs={"cases": cases, "template": []}, outputs={"predictions": out},
                                   params={"spec": CRITIC_SPEC, "model_entry": {"name": "m"}, "model_dir": "x"},
                                   wildcards=wc, threads=1)


def _merge_critic(cases: str, shards: list[str], out: str):
    evaluation.merge_critic_processbench(inputs={"cases": cases, "shards": shards}, outputs={"predictions": out},
                                         params={}, wildcards={"judge": "c"}, threads=1)


@pytest.mark.parametrize("nshards", [3, 12])
def test_sharded_critic_and_merge_equal_the_unsharded_table(tmp_path, critic_engines, capsys, nshards):
    cases = str(tmp_path / "cases.parquet")
    write_table(pb_cases(10).sample(frac=1, random_state=1), cases, "processbench")  # not in id order
    whole = str(tmp_path / "whole.parquet")
    _critic(cases, whole)
    shards = [str(tmp_path / f"critic/shard{i}of{nshards}.parquet") for i in range(nshards)]
    for i, dst in enumerate(shards):
        _critic(cases, dst, shard=(i, nshards))
    log = capsys.readouterr().out
    assert "all cases: 10 cases x 2 critiques" in log and f"shard 0 of {nshards}: " in log
    # 9 cases with steps x 2 critiques, once over all shards; shards without cases load no model
    assert sum(len(e.prompts) for e in critic_engines[1:]) == len(critic_engines[0].prompts) == 18
    assert len(critic_engines) == 1 + min(nshards, 10)
    merged = str(tmp_path / "critic.parquet")
    _merge_critic(cases, shards, merged)
    out = read_table(merged, "critic")
    pd.testing.assert_frame_equal(out, read_table(whole, "critic"))
    assert out["id"].tolist() == read_table(cases, "processbench")["id"].tolist()  # the cases' order
    assert "no_steps" in set(out["status"]) and out["prediction"].notna().any()


def test_critic_merge_refuses_duplicate_missing_and_foreign_cases(tmp_path, critic_engines):
    cases = str(tmp_path / "cases.parquet")
    write_table(pb_cases(8), cases, "processbench")
    shards = [str(tmp_path / f"c/shard{i}of3.parquet") for i in range(3)]
    for i, dst in enumerate(shards):
        _critic(cases, dst, shard=(i, 3))
    out = str(tmp_path / "c.parquet")
    ids = pb_cases(8)["id"]
    in2 = sorted(ids[in_shard(ids, 2, 3)])
    with pytest.raises(InputError) as err:
        _merge_critic(cases, [*shards, shards[2]], out)
    assert all(f"id {c} is in 2 shards" in str(err.value) for c in in2)
    with pytest.raises(InputError) as err:
        _merge_critic(cases, shards[:2], out)
    assert all(f"id {c} is in no shard" in str(err.value) for c in in2)
    fewer = str(tmp_path / "fewer.parquet")  # the cases changed since the shards were written
    write_table(pb_cases(8)[lambda d: d["id"] != in2[0]], fewer, "processbench")
    with pytest.raises(InputError, match=rf"id {in2[0]} .*not in the table being scored"):
        _merge_critic(fewer, shards, out)
    assert not Path(out).exists()


def test_judge_and_critic_jobs_log_their_shard_and_engine_progress(tmp_path, judge_engines, critic_engines, capsys,
                                                                   caplog, monkeypatch):
    """A shard job's log names its shard and size at the start, and its engine calls go through
    Engine.generate_logged (a progress line per chunk), in the Best-of-N judge and the critic alike."""
    import logging

    from prm_lessons.generation.engine import Engine

    real = Engine.generate_logged
    monkeypatch.setattr(Engine, "generate_logged",
                        lambda self, prompts, spec, seeds, what, chunk=4: real(self, prompts, spec, seeds, what, chunk))
    samples, _ = _bon_setup(tmp_path)
    cases = str(tmp_path / "cases.parquet")
    write_table(pb_cases(10), cases, "processbench")
    with caplog.at_level(logging.INFO, logger="prm_lessons.generation.engine"):
        _bon_judge(samples[:1], [str(tmp_path / "j/arith/shard0of2.parquet")], "pointwise", shard=(0, 2))
        bon_lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("judged: ")]
        caplog.clear()
        _critic(cases, str(tmp_path / "c/shard1of2.parquet"), shard=(1, 2))
        critic_lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("judged: ")]
    out = capsys.readouterr().out
    # arith's 7 problems: shard 0 of 2 holds 4 (12 responses); the cases' shard 1 of 2 holds 5 (one without steps)
    assert "bon judge j (pointwise), shard 0 of 2: 4 problems, 12 responses of 1 benchmarks" in out
    assert "critic c, shard 1 of 2: 5 cases x 2 critiques" in out
    assert [ln.split(" done")[0] for ln in bon_lines] == ["judged: 4/12", "judged: 8/12", "judged: 12/12"]
    n_critiques = 2 * sum(1 for i in in_shard(pb_cases(10)["id"], 1, 2).nonzero()[0] if i != 3)
    assert critic_lines[-1].startswith(f"judged: {n_critiques}/{n_critiques} done") and len(critic_lines) > 1


# ------------------------------------------------------------------------------------- plan and runtime

def test_shard_minutes_split_the_whole_job_with_a_floor_and_the_cap_holds():
    assert plan.shard_minutes(720, 1) == 720  # unsharded: the rule's runtime of before
    assert plan.shard_minutes(2880, 8) == 360 and plan.shard_minutes(480, 4) == 120
    assert plan.shard_minutes(480, 16) == 60  # loading the model needs its minutes whatever the split
    cfg = {"cluster": {"max_runtime": 1440}}
    assert plan.runtime(cfg, plan.shard_minutes(2880, 1), 2) == 1440
    assert plan.shard_outputs(["results/x/{judge}/b"], 1) == ["results/x/{judge}/b.parquet"]
    assert plan.shard_outputs(["results/x/{judge}/b"], 4) == ["results/x/{judge}/b/shard{shard}of{nshards}.parquet"]
    assert plan.shard_files(["t"], 2) == ["t/shard0of2.parquet", "t/shard1of2.parquet"]


def test_enabled_false_drops_a_judge_and_a_critic_and_their_models():
    cfg = load_config(ROOT / "config/paper.yaml", overrides={
        "critics": {"judges": {"qwq_32b_preview": {"enabled": False}}},
        "bon_judges": {"judges": {"qwq_32b_preview": {"enabled": False}}}})
    assert "qwq_32b_preview" not in plan.critic_specs(cfg) and len(plan.critic_specs(cfg)) == 3
    assert plan.bon_judge_names(cfg) == ["qwen25_72b_instruct"]
    assert {j for j, _ in plan.bon_judge_runs(cfg)} == {"qwen25_72b_instruct"}
    assert "qwq_32b_preview" not in used_models(cfg)
    assert "qwq_32b_preview" in used_models(load_config(ROOT / "config/paper.yaml"))


def _dry(*args: str, cwd=ROOT) -> str:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "-n",
                           "--forceall", "--cores", "2", *args], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _counts(out: str) -> dict[str, int]:
    block = out.split("Job stats:")[1].split("\n\n")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", block, re.M)}


def _jobs(out: str) -> list[dict]:
    """(rule, wildcards, runtime) of every job of a dry run."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", out):
        m = re.match(r"(?:local)?rule (\w+):\n", block)
        if m:
            wc = re.search(r"^\s+wildcards: (.*)$", block, re.M)
            rt = re.search(r"runtime=(\d+)", block)
            jobs.append({"rule": m.group(1), "block": block, "runtime": int(rt.group(1)) if rt else None,
                         "wildcards": dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {}})
    return jobs


class _Wc(dict):
    __getattr__ = dict.__getitem__


def test_paper_plan_shards_the_judges_and_critics_and_no_retry_exceeds_max_runtime():
    from conftest import parsed_workflow

    cfg = load_config(ROOT / "config/paper.yaml")
    nj, nc = plan.bon_judge_shards(cfg), plan.critic_shards(cfg)
    assert nj > 1 and nc > 1
    out = _dry("--configfile", "config/paper.yaml")
    counts, jobs = _counts(out), _jobs(out)
    runs = len(plan.bon_judge_policies(cfg)) * len(plan.bon_judge_runs(cfg))
    generators = [c for c, s in plan.critic_generation_sources(plan.critic_specs(cfg)).items() if s == c]
    assert counts["bon_judge"] == nj * runs and counts["merge_bon_judge"] == runs
    assert counts["critic_processbench"] == nc * len(generators)
    assert counts["merge_critic_processbench"] == len(generators)
    assert f"results/bon_judges/qwq_32b_preview/pointwise/math/shard{nj - 1}of{nj}.parquet" in out
    assert f"results/critics/qwq_32b_preview/processbench/shard{nc - 1}of{nc}.parquet" in out
    cap = int(cfg["cluster"]["max_runtime"])
    with parsed_workflow(["config/paper.yaml"]) as wf:
        second = {}
        for j in jobs:
            runtime = wf.get_rule(j["rule"]).resources.get("runtime")
            if runtime is None or j["runtime"] is None:
                continue
            value = runtime.evaluate(_Wc(j["wildcards"]), attempt=2).value if runtime.is_evaluable() else runtime
            second[(j["rule"], tuple(sorted(j["wildcards"].items())))] = int(value)
    over = {k: v for k, v in second.items() if v > cap}
    assert second and not over, f"attempt 2 asks for more than cluster.max_runtime = {cap}: {over}"
    # a QwQ shard's first attempt covers the worst estimate of its work (paper.yaml's comments: 40 h of
    # Best-of-N judging over 8 shards, 20 h of critiques over 4), so the retry is for bad luck only
    worst = {"bon_judge": 40 * 60 // nj, "critic_processbench": 20 * 60 // nc}
    qwq = [j for j in jobs if j["rule"] in worst and j["wildcards"].get("judge") == "qwq_32b_preview"]
    assert len(qwq) == 4 * nj + nc
    assert all(worst[j["rule"]] <= j["runtime"] for j in qwq), {j["rule"]: j["runtime"] for j in qwq}


def test_embedded_plan_keeps_one_unsharded_judge_and_critic_job(tmp_path):
    files = [ROOT / "config/config.yaml", ROOT / "config/all.yaml"]  # make run-all: judges and critics on
    cfg = load_config(*files)
    assert plan.bon_judge_shards(cfg) == 1 and plan.critic_shards(cfg) == 1
    out = _dry("--configfile", *map(str, files))
    counts = _counts(out)
    assert "merge_bon_judge" not in counts and "merge_critic_processbench" not in counts
    assert counts["bon_judge"] == len(plan.bon_judge_policies(cfg)) * len(plan.bon_judge_runs(cfg))
    assert "output: results/bon_judges/smollm2/pointwise/arith.parquet" in out
    assert "log: logs/bon_judge/smollm2/pointwise.log" in out
    assert "output: results/critics/smollm2/processbench.parquet" in out
    assert not [j for j in _jobs(out)
                if j["rule"] in ("bon_judge", "critic_processbench") and re.search(r"shard\d+of", j["block"])]


def test_paper_rehearsal_with_one_critic_and_one_judge_plans(tmp_path):
    """The knob the rehearsal can be trimmed with: paper.yaml + rehearsal.yaml with every critic and BoN
    judge but one switched off plans (in a working directory prepared as prm_lessons.rehearsal.run does)."""
    from conftest import shared_data_dir  # skips without ../shared, fails under CI=true
    from prm_lessons.rehearsal.run import prepare_work

    work = prepare_work(tmp_path / "work", shared_data_dir().parent)
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    keep_critic, keep_judge = "qwq_32b_preview", "qwen25_72b_instruct"
    overlay = tmp_path / "one.yaml"
    overlay.write_text(yaml.safe_dump({
        "critics": {"judges": {c: {"enabled": c == keep_critic} for c in paper["critics"]["judges"]}},
        "bon_judges": {"judges": {j: {"enabled": j == keep_judge} for j in paper["bon_judges"]["judges"]}}}))
    out = _dry("--directory", str(work), "--configfile", str(ROOT / "config/paper.yaml"),
               str(ROOT / "config/rehearsal.yaml"), str(overlay), cwd=tmp_path)
    counts = _counts(out)
    assert counts["critic_processbench"] == 1 and "critic_reparse" not in counts
    assert counts["bon_judge"] == 2 * 2  # two policies, two modes, one judge
    for table in ("table7_processbench_main", "table11_llm_judge_bon", "table12_llm_judge_bon_second_policy"):
        assert counts[table] == 1
    assert f"results/critics/{keep_critic}/" in out and f"bon_judges/{keep_judge}/" in out
    for name in set(paper["critics"]["judges"]) - {keep_critic}:
        assert f"results/critics/{name}/" not in out and f"critic-{name}" not in out
    for name in set(paper["bon_judges"]["judges"]) - {keep_judge}:
        assert f"bon_judges/{name}/" not in out
