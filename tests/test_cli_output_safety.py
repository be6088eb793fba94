"""CLIs that would destroy or ignore what they are given (hostile input, round 3, item 4), every case
generated from the argparse parser itself: each argument marked as read (`cli._reads`) against an
--output that reaches it (the same path, a link, a hard link, a detour through `..`, a file inside it when
it is a folder); each flag of READ_ONLY_WHEN with generated values and generated settings of the
command's other flags; each text flag given an empty value. A refused flag is also shown to be inert:
the command's output with the check switched off is byte for byte the output without the flag."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cli_run import run_cli as _run
from prm_lessons import cli
from prm_lessons.cli import READ_ONLY_WHEN, build_parser, check_args

PARSER = build_parser()


def _commands(parser: argparse.ArgumentParser, names=()) -> list[tuple[str, argparse.ArgumentParser]]:
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None:
        return [(" ".join(names), parser)]
    return [c for name, p in sub.choices.items() for c in _commands(p, (*names, name))]


COMMANDS = dict(_commands(PARSER))
READS = [(c, a) for c, p in COMMANDS.items() for a in p._actions if getattr(a, "reads", False)]


def _flag(a) -> str:
    return max(a.option_strings, key=len)


def _required_argv(command: str, root: Path, skip: str = "") -> list[str]:
    """The command with a fresh file for each required argument it reads, and a fresh --output."""
    argv = command.split()
    for a in COMMANDS[command]._actions:
        if a.required and getattr(a, "reads", False) and a.dest != skip:
            f = root / f"in-{a.dest}.jsonl"
            f.write_text('{"x": 1}\n')
            argv += [_flag(a), str(f)]
    return argv


def _case_insensitive(root: Path) -> bool:
    probe = root / "CaseProbe"
    probe.write_text("")
    return (root / "caseprobe").exists()


# how an --output reaches an input: (name, make(input path, root) -> output path)
def _through_dotdot(src: Path, root: Path) -> Path:
    (src.parent / "sub").mkdir(exist_ok=True)
    return src.parent / "sub" / ".." / src.name


def _symlink(src: Path, root: Path) -> Path:
    link = root / "link-out"
    link.symlink_to(src)
    return link


def _hardlink(src: Path, root: Path) -> Path:
    link = root / "hard-out"
    os.link(src, link)
    return link


REACHES = [("same path", lambda src, root: src), ("through ..", _through_dotdot), ("symlink", _symlink),
           ("hard link", _hardlink), ("other case", lambda src, root: src.with_name(src.name.swapcase()))]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(READS), reach=st.sampled_from(REACHES), as_folder=st.booleans())
def test_an_output_that_reaches_an_input_is_refused(tmp_path_factory, case, reach, as_folder):
    command, action = case
    root = tmp_path_factory.mktemp("same")
    name, make = reach
    if name == "other case":
        assume(_case_insensitive(root))
    if as_folder:
        assume(name in ("same path", "symlink"))
    src = root / "the-input"
    if as_folder:
        src.mkdir()
        (src / "data.json").write_text("[]")
    else:
        src.write_text('{"keep": true}\n')
    required = _required_argv(command, root, skip=action.dest)
    target = make(src / "data.json" if as_folder and name == "same path" else src, root)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    argv = [*required, _flag(action), str(src), "--output", str(target)]
    code, out, err = _run(argv)
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and not out, (argv, err)
    assert f"--output {target}" in lines[0] and f"{_flag(action)} {src}" in lines[0], lines[0]
    assert "destroy the input" in lines[0]
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(READS), name=st.text(alphabet="abcXYZ_-.", min_size=1, max_size=12),
       depth=st.integers(min_value=0, max_value=2), via_link=st.booleans())
def test_a_new_output_inside_an_input_folder_is_refused(tmp_path_factory, case, name, depth, via_link):
    """A file that is not there yet, in a folder the command reads (or a subfolder of it): the folder's next
    read would take it for input."""
    command, action = case
    assume(name not in (".", ".."))
    root = tmp_path_factory.mktemp("inside")
    src = root / "the-input"
    src.mkdir()
    (src / "data.json").write_text("[]")
    folder = root / "link-in" if via_link else src
    if via_link:
        folder.symlink_to(src, target_is_directory=True)
    target = folder.joinpath(*["sub"] * depth, name)
    argv = [*_required_argv(command, root, skip=action.dest), _flag(action), str(src), "--output", str(target)]
    with pytest.raises(ValueError, match=r"^--output .* would be a new file in the folder .*mix an output"):
        check_args(PARSER, PARSER.parse_args(argv))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(READS), name=st.text(alphabet="abcXYZ_-.", min_size=1, max_size=12))
def test_an_output_beside_the_inputs_passes_the_check(tmp_path_factory, case, name):
    command, action = case
    assume(name not in (".", ".."))
    root = tmp_path_factory.mktemp("beside")
    src = root / "in" / "the-input"
    src.parent.mkdir()
    src.write_text("{}\n")
    argv = [*_required_argv(command, root, skip=action.dest), _flag(action), str(src),
            "--output", str(root / "out" / name)]
    try:
        check_args(PARSER, PARSER.parse_args(argv))
    except ValueError as exc:  # another rule (--ref-model without eurus), never the output's
        assert not str(exc).startswith("--output"), exc


# -------------------------------------------------------------------------------- flags that do nothing

def _parses(action, text: str) -> bool:
    try:
        value = action.type(text) if action.type else text
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return False
    return action.choices is None or value in action.choices


CANDIDATES = ["0", "1", "2", "3", "7", "0.5", "12.5", "main", "v1.0", "some/where"]


def _value(action) -> st.SearchStrategy[list[str]]:
    """argv for `action` with a generated value it accepts (a switch: the flag alone)."""
    if action.nargs == 0:
        return st.just([_flag(action)])
    pool = list(action.choices) if action.choices else [c for c in CANDIDATES if _parses(action, c)]
    return st.sampled_from(pool).map(lambda v: [_flag(action), str(v)])


def _settings(command: str) -> st.SearchStrategy[list[str]]:
    """Generated values for any of the command's optional flags that read no file."""
    opts = [a for a in COMMANDS[command]._actions
            if a.option_strings and not a.required and not getattr(a, "reads", False)
            and a.dest not in ("help", "output")]
    return st.lists(st.sampled_from(opts), unique=True, max_size=len(opts)).flatmap(
        lambda chosen: st.tuples(*[_value(a) for a in chosen]).map(lambda parts: [x for p in parts for x in p]))


def test_every_rule_names_a_flag_of_its_command():
    for command, dest in READ_ONLY_WHEN:
        assert any(a.dest == dest for a in COMMANDS[command]._actions), (command, dest)


@st.composite
def _inert_case(draw):
    command, dest = draw(st.sampled_from(sorted(READ_ONLY_WHEN)))
    action = next(a for a in COMMANDS[command]._actions if a.dest == dest)
    return command, action, draw(_settings(command)), draw(_value(action))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_inert_case())
def test_a_flag_is_refused_exactly_where_nothing_reads_it(tmp_path_factory, case):
    command, action, others, flag = case
    root = tmp_path_factory.mktemp("inert")
    argv = [*_required_argv(command, root), *others, *flag, "--output", str(root / "out.json")]
    try:
        args = PARSER.parse_args(argv)
    except SystemExit:  # two generated values of one flag, or a flag of `others` repeated: argparse's own
        assume(False)
    read, why = READ_ONLY_WHEN[(command, action.dest)]
    given_ = getattr(args, action.dest) != action.default
    refused = None
    try:
        check_args(PARSER, args)
    except ValueError as exc:
        refused = str(exc)
    mine = [line for line in (refused or "").splitlines() if line.split(" ")[0] == _flag(action)]
    if given_ and not read(args):
        assert len(mine) == 1 and why in mine[0], (argv, refused)
    else:  # refused for another flag, if at all
        assert not mine, (argv, refused)


def _bon_input(root: Path) -> Path:
    rows = [{"benchmark": "b", "problem_id": str(p), "sample_idx": i, "pred": ["4", "5 cm", "4"][i],
             "correct": i != 1, "step_scores": [0.9 - 0.1 * i, 0.5]} for p in range(3) for i in range(3)]
    path = root / "bon.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _grade_input(root: Path) -> Path:
    path = root / "grade.jsonl"
    path.write_text(json.dumps({"response": "so \\boxed{5 m}", "answer": "5"}) + "\n")
    return path


RUNNABLE = {  # commands that run in a moment on a small input: (argv, fixed settings)
    "eval bon": lambda root: ["eval", "bon", "--samples", str(_bon_input(root))],
    "grade": lambda root: ["grade", "--input", str(_grade_input(root)), "--workers", "1"],
}
OUTPUT_FLAGS = {"eval bon": ["--bootstrap", "--maj-grouping", "--aggregations"], "grade": ["--grader"]}


@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_refused_flag_changes_nothing_when_let_through(tmp_path_factory, monkeypatch_module, data):
    """The rules are true: with the check off, a refused flag's output equals the output without it."""
    rules = sorted(k for k in READ_ONLY_WHEN if k[0] in RUNNABLE)
    command, dest = data.draw(st.sampled_from(rules))
    action = next(a for a in COMMANDS[command]._actions if a.dest == dest)
    setting = [a for a in COMMANDS[command]._actions if _flag(a) in OUTPUT_FLAGS[command] if a.option_strings]
    others = [x for a in setting if data.draw(st.booleans()) for x in data.draw(_value(a))]
    if command == "eval bon" and "--bootstrap" in others:
        i = others.index("--bootstrap")
        others[i + 1] = data.draw(st.sampled_from(["0", "3"]))
    if "--aggregations" in others:
        others[others.index("--aggregations") + 1] = "product,min"
    if "--maj-grouping" in others and others[others.index("--maj-grouping") + 1] == "math_verify":
        others[others.index("--maj-grouping") + 1] = "harness"  # worker processes: too slow here
    flag = data.draw(_value(action))
    root = tmp_path_factory.mktemp("let")
    base = RUNNABLE[command](root)
    args = PARSER.parse_args([*base, *others, *flag, "--output", "x"])
    read, _ = READ_ONLY_WHEN[(command, dest)]
    assume(getattr(args, dest) != action.default and not read(args))
    with_flag, without = root / "with.json", root / "without.json"
    assert _run([*base, *others, *flag, "--output", str(with_flag)])[0] == 2  # refused
    monkeypatch_module.setattr(cli, "READ_ONLY_WHEN", {})
    try:
        assert _run([*base, *others, *flag, "--output", str(with_flag)])[0] == 0
    finally:
        monkeypatch_module.undo()
    assert _run([*base, *others, "--output", str(without)])[0] == 0
    if command != "eval bon":
        assert with_flag.read_bytes() == without.read_bytes()
        return
    a, b = json.loads(with_flag.read_text()), json.loads(without.read_text())
    a["settings"].pop(dest, None), b["settings"].pop(dest, None)  # the settings record echoes the flag
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # NaN intervals compare as text


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


# -------------------------------------------------------------------------------- empty values

TEXT_FLAGS = [(c, a) for c, p in COMMANDS.items() for a in p._actions
              if a.option_strings and a.nargs is None and a.type is None and a.choices is None
              and a.dest != "help" and not isinstance(a, argparse._StoreConstAction)]


@given(case=st.sampled_from(TEXT_FLAGS), blank=st.text(alphabet=" \t", max_size=3))
def test_an_empty_value_is_refused_naming_the_flag(tmp_path_factory, case, blank):
    command, action = case
    root = tmp_path_factory.mktemp("empty")
    argv = [*_required_argv(command, root, skip=action.dest), "--output", str(root / "o.json"),
            _flag(action), blank]
    code, out, err = _run(argv)
    assert code == 2 and not out and err.splitlines() == [f"prm-lessons: error: {_flag(action)}: an empty value"]
    assert sorted(p.name for p in root.iterdir()) == sorted(p.name for p in root.iterdir() if p.name != "o.json")
    assert not (root / "o.json").exists()


@given(st.lists(st.sampled_from(["product", "min", "last", "mean", "", " ", "nope"]), min_size=1, max_size=5))
def test_aggregations_that_select_nothing_or_twice_are_refused(tmp_path_factory, names):
    root = tmp_path_factory.mktemp("agg")
    text = ",".join(names)
    code, _, err = _run(["eval", "bon", "--samples", str(_bon_input(root)), "--bootstrap", "0",
                         "--aggregations", text, "--output", str(root / "m.json")])
    clean = [n.strip() for n in names]
    ok = all(n in ("product", "min", "last", "mean") for n in clean) and len(set(clean)) == len(clean)
    if not text.strip():
        assert code == 2 and "--aggregations: an empty value" in err
    elif ok:
        assert code == 0, err
    else:
        assert code == 2 and f"--aggregations {text!r}" in err, err
