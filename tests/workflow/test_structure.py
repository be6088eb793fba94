"""The codebase's structure, held by tests: every rule's `func` resolves to the rule function of its own
stage module under the rule's name, library modules never import the rule glue, the package import graph
has no cycle (function-local imports included), own-package imports sit at module top, and a package edit
reruns exactly the rules whose code imports it."""
from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from snakemake.io import is_flagged

from conftest import parsed_workflow
from prm_lessons.plan import codedeps

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "prm_lessons"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
# modules that run only while the DAG is built: no job may import them (plan: the package and its modules,
# codedeps and where among them)
DAG_ONLY = {"prm_lessons.config", "prm_lessons.plan"} | {
    f"prm_lessons.plan.{f.stem}" for f in (PKG / "plan").glob("*.py") if f.stem != "__init__"}


def load_rules(configfiles=()):
    """The workflow's rules as Snakemake parses them (no job runs), with their inputs made absolute (the
    workflow declares checkout files relative to the working directory, a temporary one here)."""
    with parsed_workflow(configfiles) as wf:
        cwd = os.getcwd()
        rules = list(wf.rules)
        for rule in rules:
            rule.abs_inputs = [os.path.normpath(os.path.join(cwd, str(p))) for p in rule.input]
        return rules


def package_modules() -> dict[str, Path]:
    return {codedeps._module_name(PKG, f): f for f in sorted(PKG.rglob("*.py"))}


@pytest.mark.parametrize("configfiles", [(), ("config/paper.yaml",)], ids=["embedded", "paper"])
def test_every_rule_func_resolves_to_its_stage_module_under_the_rule_name(configfiles):
    rules = [r for r in load_rules(configfiles) if r.name != "all"]
    assert len(rules) > 20
    for rule in rules:
        func = dict(rule.params.items()).get("func")
        assert func, f"rule {rule.name} has no params.func"
        stage, name = func.split(":")
        assert stage == Path(rule.snakefile).stem, f"rule {rule.name}: func {func} is not in its .smk's module"
        assert name == rule.name, f"rule {rule.name}: func {func} is not named after the rule"
        target = getattr(importlib.import_module(f"prm_lessons.rules.{stage}"), name, None)
        assert callable(target), f"rule {rule.name}: {func} does not resolve"
        # a rule's code inputs are the fingerprint files of its function's closure (downloads declare none),
        # never the sources themselves, whose checksum a docstring edit changes
        assert not [p for p in rule.abs_inputs if p.startswith(str(PKG)) and p.endswith(".py")], rule.name
        code = {str(p) for p in rule.input if str(p).startswith(codedeps.STORE + "/prm_lessons/")}
        if code:
            sources = {Path(p).relative_to(PKG).as_posix() for p in codedeps.rule_code_inputs(PKG, func)}
            assert code == {f"{codedeps.STORE}/prm_lessons/{s}.fingerprint" for s in sources}, rule.name
            # the one `script:` too, by fingerprint (Snakemake's code trigger would compare its mtime)
            assert f"{codedeps.STORE}/workflow/scripts/run.py.fingerprint" in map(str, rule.input), rule.name
        # a checkout data file a job reads is followed by content (its fingerprint), not by mtime
        for p in rule.input:
            if str(p).startswith(("src/", "paper/main.tex")) and not str(p).endswith(".py"):
                assert is_flagged(p, "ancient"), f"rule {rule.name}: {p} without ancient()"
                assert f"{codedeps.STORE}/{p}.fingerprint" in map(str, rule.input), f"rule {rule.name}: {p}"
        assert not [p for p in rule.input if os.path.isabs(str(p)) and str(p).startswith(str(ROOT))], \
            f"rule {rule.name} declares a checkout file by absolute path (a moved checkout would rerun it)"


def test_no_job_imports_the_dag_time_modules_and_no_library_module_imports_rule_glue():
    mods = package_modules()
    for name, file in mods.items():
        if name.startswith("prm_lessons.rules."):
            tree = ast.parse(file.read_text())
            funcs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
            for f in funcs:
                closure = codedeps.module_closure(PKG, codedeps.function_modules(PKG, name, f))
                assert not closure & DAG_ONLY, f"{name}:{f} runs DAG-time code {closure & DAG_ONLY}"
        elif not name.startswith(("prm_lessons.rules", "prm_lessons.rehearsal")) and name not in DAG_ONLY:
            deps = codedeps._imports(PKG, file)[1]
            assert not {d for d in deps if d.startswith("prm_lessons.rules")}, (
                f"library module {name} imports rule glue")


def test_package_import_graph_has_no_cycle():
    graph = {name: set(codedeps._imports(PKG, f)[1]) - {name} for name, f in package_modules().items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):  # depth-first search; a grey node reached again closes a cycle
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                pytest.fail("import cycle: " + " -> ".join(stack[stack.index(dep):] + [dep]))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def _local_imports(file: Path):
    """(line, imported module, is own package, comment on the line or the line above) per import
    statement inside a function body."""
    lines = file.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                own = isinstance(node, ast.ImportFrom) and (
                    node.level > 0 or (node.module or "").startswith("prm_lessons"))
                own = own or any(a.name.startswith("prm_lessons") for a in getattr(node, "names", []))
                near = lines[node.lineno - 1] + " " + (lines[node.lineno - 2] if node.lineno > 1 else "")
                yield node.lineno, ast.unparse(node), own, near


def test_imports_sit_at_module_top_except_lazy_heavy_ones_with_a_reason():
    bad = []
    for name, file in package_modules().items():
        for line, stmt, own, near in _local_imports(file):
            # rule glue, and the console script whose `score` alone needs torch, import such modules lazily
            if own and not (name.startswith("prm_lessons.rules.") or name == "prm_lessons.cli"):
                bad.append(f"{file.relative_to(ROOT)}:{line}: own-package import inside a function: {stmt}")
            elif "lazy" not in near:  # rule glue may import a torch module lazily, with its reason
                bad.append(f"{file.relative_to(ROOT)}:{line}: "
                           f"function-local import without a '# lazy: <reason>': {stmt}")
    assert not bad, "\n".join(bad)


# -- a package edit reruns exactly the rules that import it -------------------------------------------

CHECKOUT_PARTS = ("Snakefile", "workflow", "src", "config", "envs", "paper", "profiles")


def _copy_checkout(dest: Path, copy=shutil.copy2) -> Path:
    """The checkout's workflow files under dest; `copy=shutil.copy` gives them new mtimes, as a clone does."""
    for part in CHECKOUT_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, copy_function=copy, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            copy(src, dest / part)
    return dest


RUN_ALL = ("config/config.yaml", "config/all.yaml")


def _smk(cwd: Path, *args) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    # make run-all's DAG (config/all.yaml): every rule the package has, the search's and the critics' too
    proc = subprocess.run([*SNAKEMAKE, "--cores", "1", "--configfile", *RUN_ALL, "--rerun-triggers", "mtime", *args],
                          cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def _rerun_rules(out: str) -> dict[str, str]:
    """rule → the text of its jobs' blocks in a dry run (`rule x:` header, input, output, …, reason)."""
    rules, current = {}, None
    for line in out.splitlines():
        s = line.strip()
        if (s.startswith("rule ") or s.startswith("localrule ")) and s.endswith(":"):
            current = s.split()[1][:-1]
            rules[current] = rules.get(current, "") + " |"
        elif current and s and not s.startswith("["):
            rules[current] += " " + s
        if s.startswith("reason:"):
            current = None
    return rules


# every rerun trigger (Snakemake's default): a docstring edit must not reach a job through any of them
ALL_TRIGGERS = ("--rerun-triggers", "mtime", "params", "input", "software-env", "code")
DAG_RULES: dict[Path, set[str]] = {}  # finished checkout → the rules of its DAG


@pytest.fixture(scope="module")
def finished_checkout():
    """A copy of the checkout whose every output exists and is up to date (created empty, then marked done
    with --touch): the state of a finished run, without running anything."""
    dest = _copy_checkout(Path(tempfile.mkdtemp()))
    summary = _smk(dest, "--summary")
    rows = [ln.split("\t") for ln in summary.splitlines() if "\t" in ln and not ln.startswith("output_file")]
    files = [r[0] for r in rows]
    DAG_RULES[dest] = {r[2] for r in rows}
    for f in files:
        p = dest / f
        if not p.suffix:  # directory() outputs: model directories (every file output has a suffix)
            p.mkdir(parents=True, exist_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.touch()
    _smk(dest, "--touch")
    assert not _rerun_rules(_smk(dest, "-n", *ALL_TRIGGERS)), "the touched checkout is not up to date"
    yield dest
    shutil.rmtree(dest, ignore_errors=True)


@contextlib.contextmanager
def _edited(checkout: Path, module: str, code: bool = True):
    """An edit of `src/prm_lessons/<module>` with a newer mtime: a code change (a new module-level name),
    or with `code=False` an edit of its docstring and comments only (module docstring, a comment, blank
    lines). Afterwards the source and the fingerprint files (which a dry run rewrites) are restored."""
    path = checkout / "src/prm_lessons" / module
    store = checkout / codedeps.STORE
    text, stat = path.read_text(), path.stat()
    future = "from __future__ import annotations\n"
    if code:
        edited = text + "\n_EDITED = 1\n"
    else:
        assert text.startswith('"""') and future in text, path
        edited = '"""Edited. ' + text[3:].replace(future, future + "# a comment\n\n\n", 1)
    saved = Path(tempfile.mkdtemp()) / "store"
    shutil.copytree(store, saved)  # copy2: with mtimes
    try:
        path.write_text(edited)
        os.utime(path, (time.time() + 10, time.time() + 10))
        yield
    finally:
        path.write_text(text)
        os.utime(path, (stat.st_atime, stat.st_mtime))
        shutil.rmtree(store)
        shutil.copytree(saved, store)
        shutil.rmtree(saved.parent)


FIGURE_RULES = {"fig1_overview", "fig2_consensus_filtering", "fig3_hard_soft_bon", "fig4_hard_soft_processbench",
                "fig5_mc_threshold", "fig6_flawed_process", "fig7_tolerance_vs_bon", "fig8_min_at_last_step",
                "fig9_scoring_strategies"}


def _importers(module: str) -> set[str]:
    """The rules whose function's closure holds the module (from codedeps, not from the .smk inputs)."""
    src = str(PKG / module)
    return {name for name, f in _run_all_funcs().items() if src in codedeps.rule_code_inputs(PKG, f)}


@functools.lru_cache(maxsize=1)
def _run_all_funcs() -> dict[str, str]:
    """Rule name -> params.func of `make run-all`'s rules (parsed once)."""
    return {r.name: f for r in load_rules(RUN_ALL) if (f := dict(r.params.items()).get("func"))}



def test_one_concept_one_rerun_unit():
    """The closures of the rules (`make run-all`'s config, codedeps) hold only what their jobs run: the search's
    candidate scorers are in the search's alone (a KV-cache scorer edit reruns the search only), no job that
    scores with a PRM or trains one holds the text generation (vLLM's CPU set-up is hardware's), and
    the rehearsal's head weights need no adapter."""
    rules = {r.name: f for r in load_rules(("config/config.yaml", "config/all.yaml"))
             if (f := dict(r.params.items()).get("func"))}
    closure = {name: codedeps.rule_modules(PKG, f) for name, f in rules.items()}
    assert {r for r, mods in closure.items() if "prm_lessons.evaluation.search_scorers" in mods} == {"search_greedy"}
    scorers = {r for r, mods in closure.items() if "prm_lessons.scoring.load" in mods}
    assert {"score_samples", "score_processbench", "score_prmbench", "search_greedy"} <= scorers, sorted(scorers)
    no_generation = (scorers - {"search_greedy"}) | {"train_prm", "step_features"}
    assert not {r for r in no_generation if "prm_lessons.generation.engine" in closure[r]}
    heads_only = codedeps.module_closure(PKG, {"prm_lessons.rehearsal.hub_cache"})
    assert "prm_lessons.scoring.heads" in heads_only and "prm_lessons.scoring.adapters" not in heads_only

# A package edit under each kind of module, run for real (two Snakemake dry runs each on a finished
# checkout): a DAG-time module, a one-rule module, the grading of samples, and the module every job imports.
# The other kinds are held by their closures alone (test_edit_closures_of_other_modules below): the wiring
# from a closure to the rerun is the same code path, so one real run per kind proves nothing more.
@pytest.mark.slow
@pytest.mark.parametrize("module, expected", [
    ("config/checks.py", set()),  # DAG time only: validation edits rerun nothing
    ("training/train.py", {"train_prm"}),  # the trainer: scoring and features use models/prm.py, not training/train.py
    ("tables.py", None),  # every job's I/O: its importers (computed), every GPU rule among them
    # grading of the policy's responses: regrades and recomputes metrics, re-samples and rescores nothing
    ("grading/samples.py", {"grade_samples"}),
])
def test_package_edit_reruns_exactly_the_rules_that_import_it(finished_checkout, module, expected):
    with _edited(finished_checkout, module):
        planned = _rerun_rules(_smk(finished_checkout, "-n", *ALL_TRIGGERS))
    # the jobs that rerun are exactly those forcing the importing rules would run: them and what depends on them
    importers = expected if expected is not None else _importers(module) & DAG_RULES[finished_checkout]
    forced = _rerun_rules(_smk(finished_checkout, "-n", "-R", *sorted(importers))) if importers else {}
    assert set(planned) == set(forced), sorted(set(planned) ^ set(forced))
    if expected is None:  # the importers in the embedded DAG (-R would add any rule without wildcards to it)
        expected = importers
        assert {"sample", "audit_labels", "train_prm", "score_samples"} <= expected, sorted(expected)
    # and among them, the edited module's fingerprint is an input of exactly the importing rules
    importing = {r for r, block in planned.items() if f"prm_lessons/{module}.fingerprint" in block}
    assert importing == expected, sorted(importing ^ expected)



@pytest.mark.parametrize("module, expected", [
    ("plan/policies.py", set()),  # DAG time only
    ("artifacts/plots.py", FIGURE_RULES),  # a plotting edit redraws figures, rebuilds no table
    ("evaluation/search_scorers.py", {"search_greedy"}),  # a KV-cache scorer edit reruns the search only
    # search_greedy scores candidates with the whole PRM (scoring imports prm)
    # and the tokenize rule (full/LoRA trainings: its tokenizer gets the PRM's step token there)
    ("models/prm.py", {"train_prm", "step_features", "score_samples", "score_processbench", "score_prmbench",
                       "search_greedy", "tokenize_trainset"}),
])
def test_edit_closures_of_other_modules(module, expected):
    """The rules whose code closure holds the module (`make run-all`'s rules): exactly those rerun on an
    edit, as test_package_edit_reruns_exactly_the_rules_that_import_it shows for one module of each kind."""
    assert _importers(module) == expected, sorted(_importers(module) ^ expected)

@pytest.mark.slow
@pytest.mark.parametrize("module", ["tables.py", "models/prm.py"])
def test_a_docstring_or_comment_edit_reruns_nothing(finished_checkout, module):
    """A module every job imports (tables) and one every GPU scoring job imports (prm): editing their
    docstrings and comments keeps their fingerprint files, so no job reruns, under every trigger."""
    fingerprint = finished_checkout / codedeps.STORE / "prm_lessons" / f"{module}.fingerprint"
    before = fingerprint.read_text(), fingerprint.stat().st_mtime_ns
    with _edited(finished_checkout, module, code=False):
        out = _smk(finished_checkout, "-n", *ALL_TRIGGERS)
        assert (fingerprint.read_text(), fingerprint.stat().st_mtime_ns) == before
    assert not _rerun_rules(out), sorted(_rerun_rules(out))


@pytest.mark.slow
def test_human_labels_reruns_when_grading_changes(finished_checkout):
    """The hand-written lists missed this one: human labels by construction grade final answers."""
    with _edited(finished_checkout, "grading/extract.py"):
        planned = _rerun_rules(_smk(finished_checkout, "-n"))
    assert "human_labels" in planned and "prm_lessons/grading/extract.py" in planned["human_labels"]


# -- a moved checkout reruns nothing -------------------------------------------------------------------

@pytest.mark.slow
def test_a_moved_checkout_reruns_nothing(tmp_path):
    """Run real jobs (the problems tables), then move the checkout, results and Snakemake's records alike,
    as a cluster with another mount path would see it: with every rerun trigger on (input set, params,
    code, mtime) nothing is planned. Package sources declared by absolute path reran every job."""
    (tmp_path / "first").mkdir()
    first = _copy_checkout(tmp_path / "first")
    targets = ["results/problems/train.parquet", "results/problems/arith.parquet"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def smk(cwd, *args):
        proc = subprocess.run([*SNAKEMAKE, "--cores", "1", *args, *targets], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    smk(first)
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    shutil.move(first, moved)  # a rename keeps every mtime
    out = smk(moved, "-n")
    assert "Nothing to be done" in out, out[-3000:]


@pytest.mark.slow
def test_a_reclone_with_the_outputs_copied_in_reruns_nothing(finished_checkout, tmp_path):
    """A user re-clones the checkout (every tracked file gets a new mtime) and copies a finished run's outputs
    and .snakemake in with their times (`cp -a`): the dry run with the workflow's own rerun triggers
    (profiles/default: Snakemake's default less `code`) has nothing to do. With Snakemake's `code` trigger,
    which compares the one `script:`'s mtime with the outputs', every job would rerun: that is asserted
    too, so the test shows the trigger it guards against."""
    (tmp_path / "clone").mkdir()
    clone = _copy_checkout(tmp_path / "clone", copy=shutil.copy)
    time.sleep(0.01)
    os.utime(clone / "workflow/scripts/run.py")  # newer than every output, as after `git clone`
    for entry in finished_checkout.iterdir():
        if entry.name not in CHECKOUT_PARTS:
            (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, clone / entry.name, symlinks=True)
    shutil.copytree(finished_checkout / "paper", clone / "paper", dirs_exist_ok=True)  # outputs, with times
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [*SNAKEMAKE, "-n", "--cores", "1", "--configfile", *RUN_ALL]
    proc = subprocess.run(cmd, cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reasons = sorted({ln.strip() for ln in proc.stdout.splitlines() if ln.strip().startswith("reason:")})
    assert "Nothing to be done" in proc.stdout + proc.stderr, "\n".join(reasons)
    with_code = subprocess.run([*cmd, *ALL_TRIGGERS], cwd=clone, env=env, capture_output=True, text=True,
                               timeout=600)
    assert "Code has changed since last execution" in with_code.stdout + with_code.stderr
