"""docs/extending.md's recipes, followed on a copy of the checkout: the example snippets are read from the
doc itself (each fenced block after a `<!-- recipe: NAME OP: PATH [after|line: ANCHOR] -->` marker), applied
as the doc says, and the result dry-runs with the new benchmark's, table's and rule's jobs planned. The
table's and the rule's functions also run on small synthetic inputs, so the examples are working code.

Markers: `file: PATH` writes the block as a new file, `append: PATH` adds it at the end of a file,
`insert: PATH after: ANCHOR` after the first line holding ANCHOR, `replace: PATH line: ANCHOR` in place of
that line. Paths are relative to the checkout (an overlay config lands in its root)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dag import dry_run, job_counts, parse_jobs

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"
CHECKOUT_PARTS = ("Snakefile", "workflow", "src", "config", "envs", "paper", "profiles")
MARKER = re.compile(
    r"<!-- recipe: (?P<name>\w+) (?P<op>file|append|insert|replace): (?P<path>\S+)"
    r"(?: (?:after|line): (?P<anchor>.*?))? -->\n```[\w-]*\n(?P<body>.*?)^```",
    re.S | re.M,
)
ABLATION = "run: {name: x, ablation: true}\n"  # as config/ablations/*.yaml set it


def recipe(name: str) -> list[dict]:
    steps = [m.groupdict() for m in MARKER.finditer(DOC.read_text()) if m["name"] == name]
    assert steps, f"docs/extending.md has no `<!-- recipe: {name} ... -->` block"
    return steps


def _copy_checkout(dest: Path) -> Path:
    """The workflow files of the checkout under dest (as tests/workflow/test_structure.py copies them)."""
    dest.mkdir(parents=True)
    for part in CHECKOUT_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / part)
    return dest


def apply(checkout: Path, steps: list[dict]) -> None:
    """Do what each marked block says, failing on an anchor that is not in its file (the doc drifted)."""
    for s in steps:
        path, body = checkout / s["path"], s["body"]
        if s["op"] == "file":
            assert not path.exists(), f"{s['path']} exists already: the recipe would overwrite it"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
            continue
        text = path.read_text()
        if s["op"] == "append":
            path.write_text(text.rstrip("\n") + "\n" + body)
            continue
        lines = text.splitlines(keepends=True)
        at = next((i for i, line in enumerate(lines) if s["anchor"] in line), None)
        assert at is not None, f"{s['path']}: no line holds {s['anchor']!r}"
        if s["op"] == "insert":
            lines.insert(at + 1, body)
        else:
            lines[at] = body
        path.write_text("".join(lines))


@pytest.fixture
def checkout(tmp_path):
    return _copy_checkout(tmp_path / "checkout")


def _plan(checkout: Path, *args: str):
    out = dry_run("--cores", "2", *args, cwd=checkout)
    return job_counts(out), parse_jobs(out)


def _run_python(checkout: Path, code: str) -> str:
    """Python code with the copy's package (its src/ first on the path), as a job would run it."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow  # dry runs of the whole workflow on copies of the checkout (~10 s each)
def test_benchmark_recipe_plans_the_new_benchmarks_jobs(checkout):
    steps = recipe("benchmark")
    apply(checkout, steps)
    overlay = next(s["path"] for s in steps if s["path"].endswith(".yaml"))
    counts, jobs = _plan(checkout, "--configfile", "config/config.yaml", overlay)
    outputs = {o for j in jobs for o in j.output}
    assert {"results/problems/my_bench.parquet", "results/responses/my_bench.parquet",
            "results/samples/my_bench.parquet"} <= outputs
    problems = [j for j in jobs if j.rule == "problems" and j.wildcards.get("dataset") == "my_bench"]
    assert len(problems) == 1 and "data/my_bench.jsonl" in problems[0].input
    scoring = [j for j in jobs if j.rule == "score_samples"]
    assert scoring and all("results/responses/my_bench.parquet" in j.input for j in scoring)
    assert counts["problems"] == 2 + 1  # the embedded default's two Best-of-N sets, and this one


@pytest.mark.slow
def test_table_recipe_plans_the_new_artifacts_rule_and_its_run_writes_it(checkout):
    apply(checkout, recipe("table"))
    counts, jobs = _plan(checkout, "results/tables/table17_bon_min.csv", "paper/tables/table17_bon_min.tex")
    job = next(j for j in jobs if j.rule == "table17_bon_min")
    assert set(job.output) >= {"results/tables/table17_bon_min.csv", "results/tables/table17_bon_min.json",
                               "paper/tables/table17_bon_min.tex"}
    assert "results/tables/bon.csv" in job.input and counts["bon_table"] == 1
    counts, _ = _plan(checkout, "paper/report.md")  # the report reads every artifact's cells
    assert counts["table17_bon_min"] == 1
    # the module's run() on a synthetic bon.csv (the documented columns), as its job calls it
    from analysis_synth import bon_frame

    bon_frame().to_csv(checkout / "bon.csv", index=False)
    out = _run_python(checkout, (
        "import json\n"
        "from prm_lessons.rules import analysis\n"
        "params = dict(n=4, benchmarks=[], paper_rows={}, paper_columns={}, policy='smollm2', policy_labels={},"
        " not_compared=[], run={'name': 'recipe', 'label': 'recipe'})\n"
        "outputs = dict(csv='t/table17.csv', provenance='t/table17.json', tex='t/table17.tex')\n"
        "analysis.table17_bon_min(inputs={'bon': 'bon.csv'}, outputs=outputs, params=params, wildcards={}, threads=1)\n"
        "import pandas as pd\n"
        "cells = pd.read_csv('t/table17.csv')\n"
        "print(json.dumps(sorted(set(cells['row']))))\n"))
    assert json.loads(out.splitlines()[-1]) == sorted(set(bon_frame()["prm"]))
    assert "Best-of-N accuracy (\\%) with min scoring" in (checkout / "t/table17.tex").read_text()


@pytest.mark.slow
def test_rule_recipe_plans_the_rule_and_keeps_ablations_working(checkout):
    apply(checkout, recipe("rule"))
    counts, jobs = _plan(checkout, "results/tables/problem_stats.csv")
    assert counts == {"problems": 2, "problem_stats": 1}  # the embedded default's two benchmarks
    job = next(j for j in jobs if j.rule == "problem_stats")
    assert job.output == ["results/tables/problem_stats.csv"] and job.benchmark == "benchmarks/problem_stats.tsv"
    assert any(".snakemake/codedeps/prm_lessons/rules/data.py.fingerprint" == p for p in job.input)
    counts, _ = _plan(checkout)  # rule all: TARGETS holds it
    assert counts["problem_stats"] == 1

    # an ablation: the base run's problems tables are read (they exist after a base run), the table is its own
    (checkout / "x.yaml").write_text(ABLATION)
    for b in ("arith", "chain_sum"):
        (checkout / f"results/problems/{b}.parquet").parent.mkdir(parents=True, exist_ok=True)
        (checkout / f"results/problems/{b}.parquet").touch()
    counts, jobs = _plan(checkout, "runs/x/results/tables/problem_stats.csv",
                         "--configfile", "config/config.yaml", "x.yaml")
    assert counts == {"problem_stats": 1}
    assert set(jobs[0].input) >= {"results/problems/arith.parquet", "results/problems/chain_sum.parquet"}
    # the same rule writing outside the per-run folders and the path families: every ablation stops
    smk = checkout / "workflow/rules/data.smk"
    smk.write_text(smk.read_text().replace('"results/tables/problem_stats.csv"', '"results/problem_stats.csv"'))
    with pytest.raises(AssertionError, match="no fingerprint for the result path 'results/problem_stats.csv'"):
        _plan(checkout, "--configfile", "config/config.yaml", "x.yaml")

    # the function on two small problems tables, as its job calls it
    out = _run_python(checkout, (
        "import pandas as pd\n"
        "from prm_lessons.rules import data\n"
        "from prm_lessons.tables import read_csv, write_table\n"
        "for name, qs in {'a': ['1 + 1?', '2 + 22?'], 'b': ['3 * 3?']}.items():\n"
        "    df = pd.DataFrame({'problem_id': [f'{name}-{i}' for i in range(len(qs))], 'dataset': name,\n"
        "                       'question': qs, 'answer': ['x'] * len(qs), 'gold_steps': [None] * len(qs)})\n"
        "    write_table(df, f'p/{name}.parquet', 'problems')\n"
        "data.problem_stats(inputs={'problems': ['p/a.parquet', 'p/b.parquet']}, outputs={'csv': 's.csv'},\n"
        "                   params={}, wildcards={}, threads=1)\n"
        "print(read_csv('s.csv', 'problem_stats_csv').to_json(orient='records'))\n"))
    assert json.loads(out.splitlines()[-1]) == [
        {"dataset": "a", "n_problems": 2, "mean_question_chars": 6.5},
        {"dataset": "b", "n_problems": 1, "mean_question_chars": 6.0},
    ]


def test_every_recipe_block_is_well_formed():
    """Each marker is followed by its block (a marker the regex misses would silently drop a step), every
    `file:` path is new and every anchor is in its file in this checkout."""
    text = DOC.read_text()
    assert text.count("<!-- recipe:") == len(list(MARKER.finditer(text)))
    for s in (m.groupdict() for m in MARKER.finditer(text)):
        path = ROOT / s["path"]
        if s["op"] == "file":
            assert not path.exists(), s["path"]
        else:
            assert path.is_file(), s["path"]
            if s["anchor"]:
                assert s["anchor"] in path.read_text(), (s["path"], s["anchor"])
