"""Per-job cost records: every rule that runs a script writes a Snakemake `benchmark:` file under
benchmarks/<rule>/ (common.smk `bench`, plan.benchmark_path), and bench/rule_times.py builds its per-rule
table from those files."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from conftest import parsed_workflow

ROOT = Path(__file__).resolve().parents[2]


def _rule_times():
    spec = importlib.util.spec_from_file_location("rule_times", ROOT / "bench" / "rule_times.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass resolves annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


def _under_its_rule(path: str, rule: str) -> bool:
    return path == f"benchmarks/{rule}.tsv" or path.startswith(f"benchmarks/{rule}/")


@pytest.mark.parametrize("configfiles", [(), ("config/config.yaml", "config/all.yaml"), ("config/paper.yaml",)],
                         ids=["embedded", "all", "paper"])
def test_every_rule_with_a_script_has_a_benchmark_file_under_its_name(configfiles):
    with parsed_workflow(configfiles) as wf:
        rules = [r for r in wf.rules if r.name != "all"]
        scripted = [r for r in rules if r.script]
        assert len(scripted) > 40
        missing = [r.name for r in rules if not r.benchmark]
        assert not missing, f"rules without a benchmark: file (common.smk bench): {missing}"
        wrong = [(r.name, str(r.benchmark)) for r in rules if not _under_its_rule(str(r.benchmark), r.name)]
        assert not wrong, f"benchmark files outside benchmarks/<rule>/: {wrong}"


@pytest.mark.parametrize("plan_name", ["embedded_plan", "all_plan"])
def test_every_planned_job_has_its_own_benchmark_file(plan_name, request):
    """The dry run's jobs: each one but `all` names a benchmark file of its rule, no two the same."""
    jobs = [j for j in request.getfixturevalue(plan_name).jobs if j.rule != "all"]
    assert len(jobs) > 50
    assert all(_under_its_rule(j.benchmark, j.rule) for j in jobs), \
        [(j.rule, j.benchmark) for j in jobs if not _under_its_rule(j.benchmark, j.rule)]
    paths = [j.benchmark for j in jobs]
    assert len(set(paths)) == len(paths), sorted(p for p in paths if paths.count(p) > 1)


def test_rule_times_sums_snakemake_benchmark_files_per_rule(tmp_path):
    """Files written by Snakemake's own benchmark writer (one per job, `NA` where a job ended before the
    first memory sample) → jobs, job-seconds, CPU seconds and the largest max RSS per rule."""
    from snakemake.benchmark import BenchmarkRecord, write_benchmark_records

    def record(seconds, rss, cpu, sampled=True):
        r = BenchmarkRecord(running_time=seconds, max_rss=rss, max_vms=rss, max_uss=rss, max_pss=rss,
                            io_in=0, io_out=0, cpu_usage=cpu, cpu_time=cpu)
        r.data_collected = sampled
        return r

    files = {"mc/arith/shard0of2.tsv": record(30.0, 900.0, 55.0), "mc/arith/shard1of2.tsv": record(10.0, 1200.0, 19.0),
             "bon_table.tsv": record(0.4, None, None, sampled=False)}
    for rel, rec in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        write_benchmark_records([rec], str(tmp_path / rel), False)
    rt = _rule_times()
    jobs = rt.read_benchmarks(tmp_path)
    assert sorted((j.rule, j.seconds) for j in jobs) == [("bon_table", 0.4), ("mc", 10.0), ("mc", 30.0)]
    lines = rt.table(jobs)
    assert lines[0].startswith("3 jobs") and "job-seconds 40" in lines[0]
    mc = lines[2].split()
    assert mc[:3] == ["mc", "2", "40"] and mc[4:] == ["74", "1200"]  # cpu-s 55 + 19, the larger max RSS
    assert lines[3].split()[0] == "bon_table" and lines[3].split()[-1] == "NA"
    assert rt.main([str(tmp_path)]) == 0
    assert rt.main([str(tmp_path / "absent")]) == 1


def test_rule_times_still_reads_a_snakemake_text_log(tmp_path):
    log = tmp_path / "run.snakemake.log"
    log.write_text("[Fri Nov 27 10:00:00 2026]\nrule mc:\n    jobid: 3\n"
                   "[Fri Nov 27 10:01:30 2026]\nFinished jobid: 3 (Rule: mc)\n")
    rt = _rule_times()
    jobs = rt.from_log(log)
    assert [(j.rule, j.seconds) for j in jobs] == [("mc", 90.0)]
    assert rt.main(["--log", str(log)]) == 0


def test_rule_times_help_is_its_usage_not_a_folder(capsys):
    rt = _rule_times()
    with pytest.raises(SystemExit) as done:
        rt.main(["--help"])
    assert done.value.code == 0 and "--log" in capsys.readouterr().out
