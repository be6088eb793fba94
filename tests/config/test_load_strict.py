"""Config files read strictly whatever their layout: a key repeated in one mapping is refused
in every YAML layout (block, flow on one line, one-line JSON, nested, in a list, in an anchored block), an
overlay that uses its base's anchor names the overlay, long keys are cut in messages, every `url` key refuses
what fetch_file would misread or not read (http:// without a checksum, file://, other schemes), and the make
targets read the files before Snakemake does."""
from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from prm_lessons.config import ConfigError, read_config_file, validate_config
from prm_lessons.config.load import MAX_CONFIG_DEPTH, configfiles_in_args, main
from specs import set_key

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
KEYS = st.sampled_from(["seed", "n", "a b", "1", "x-y", "true"])


def _layouts(key: str) -> dict[str, str]:
    """The same mapping `{key: 1, other: 2, key: 3}` written in every layout YAML (and JSON) allows."""
    k = json.dumps(key)
    return {
        "block": f"{key}: 1\nother: 2\n{key}: 3\n",
        "flow one line": f"top: {{{key}: 1, other: 2, {key}: 3}}\n",
        "flow over lines": f"top: {{\n  {key}: 1,\n  other: 2, {key}: 3\n}}\n",
        "json one line": f'{{"top": {{{k}: 1, "other": 2, {k}: 3}}}}',
        "nested flow in block": f"a:\n  b: {{{key}: 1, other: 2, {key}: 3}}\n",
        "in a list": f"a:\n  - {{{key}: 1, other: 2, {key}: 3}}\n",
        "in a block list": f"a:\n  - {key}: 1\n    other: 2\n    {key}: 3\n",
        "in an anchored block": f"a: &x {{{key}: 1, other: 2, {key}: 3}}\nb: *x\n",
        "beside a merge key": f"a: &x {{p: 1}}\nb: {{<<: *x, {key}: 1, {key}: 3}}\n",
    }


LAYOUTS = list(_layouts("k"))


@given(key=KEYS, layout=st.sampled_from(LAYOUTS))
def test_a_repeated_key_is_refused_in_every_layout(tmp_path_factory, key, layout):
    f = tmp_path_factory.mktemp("dup") / "c.yaml"
    f.write_text(_layouts(key)[layout])
    assert yaml.safe_load(f.read_text()) is not None  # YAML itself reads it, keeping the last
    with pytest.raises(ConfigError, match=r"c\.yaml: line \d+.*appears twice in one mapping"):
        read_config_file(f)


@pytest.mark.parametrize("text", ["a: {1: x, 1.0: y}\n", "a: {true: x, True: y}\n", "a: {'k': x, k: y}\n",
                                  'a: {"k": x, k: y}\n', "a: {null: x, ~: y}\n"])
def test_keys_equal_once_read_are_one_key(tmp_path, text):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match="appears twice"):
        read_config_file(f)


@pytest.mark.parametrize("text, expected", [
    ("a: &x {p: 1, q: 2}\nb:\n  <<: *x\n  q: 3\n", {"a": {"p": 1, "q": 2}, "b": {"p": 1, "q": 3}}),
    ("a: &x {p: 1, q: 2}\nb: {<<: *x, q: 3}\n", {"a": {"p": 1, "q": 2}, "b": {"p": 1, "q": 3}}),
    ("a: &x {p: 1}\nb: *x\nc: *x\n", {"a": {"p": 1}, "b": {"p": 1}, "c": {"p": 1}}),
    ("a: {k: 1}\nb: {k: 1}\n", {"a": {"k": 1}, "b": {"k": 1}}),  # one key in two mappings
])
def test_merges_aliases_and_one_key_in_two_mappings_stay_allowed(tmp_path, text, expected):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    assert read_config_file(f) == expected


def test_an_overlay_using_its_base_anchor_names_the_overlay(tmp_path):
    (tmp_path / "base.yaml").write_text("sampling: &s {n: 2}\n")
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("run: {name: x}\nother: *s\n")
    with pytest.raises(ConfigError, match=r"overlay\.yaml: line 2, column \d+: not valid YAML: found undefined "
                                          r"alias.*anchor \(&name\) of the same file"):
        read_config_file(overlay)


@pytest.mark.parametrize("length", [81, 1_000, 100_000])
def test_a_long_key_is_cut_in_messages(tmp_path, length):
    key = "k" * length
    cfg = copy.deepcopy(BASE)
    cfg["sampling"][key] = 1
    with pytest.raises(ConfigError) as exc:
        validate_config(cfg)
    assert f"({length:,} characters)" in str(exc.value) and len(str(exc.value)) < 2_000
    f = tmp_path / "c.yaml"
    f.write_text(f"? {key}\n: 1\n? {key}\n: 2\n")  # explicit keys: YAML's plain keys stop at 1,024
    with pytest.raises(ConfigError) as exc:
        read_config_file(f)
    assert f"({length:,} characters)" in str(exc.value) and len(str(exc.value)) < 500


def test_a_short_key_is_shown_whole():
    cfg = copy.deepcopy(BASE)
    cfg["sampling"]["temperatur"] = 1
    with pytest.raises(ConfigError, match=r"sampling\.temperatur`.*did you mean `temperature`"):
        validate_config(cfg)


# -- url keys --------------------------------------------------------------------------------------------

SHA = "0" * 64
URL_KEYS = {  # key path -> (the entry holding the url, with its checksums off; the checksum keys)
    "benchmarks.b": ({"source": "url", "url": "U", "sha256": None, "git_blob_sha1": None}, {"sha256": SHA}),
    "problems.p": ({"source": "url", "url": "U", "sha256": None, "git_blob_sha1": None}, {"sha256": SHA}),
    "benchmarks.b.prompt.fewshot": ({"url": "U.py", "sha256": None, "git_blob_sha1": None}, {"sha256": SHA}),
    "processbench": ({"source": "url", "url": "U/{subset}.json", "sha256": {}, "git_blob_sha1": {},
                      "subsets": ["gsm8k"]}, {"sha256": {"gsm8k": SHA}}),
    "critics.official_template": ({"url": "U", "sha256": None, "git_blob_sha1": None}, {"sha256": SHA}),
    "judge.paper_template": ({"url": "U", "sha256": None, "git_blob_sha1": None, "text_sha256": None},
                             {"sha256": SHA}),
}
URLS = {  # url -> refused without a checksum, refused with one
    "https://example.org/d/f": (False, False),
    "http://example.org/d/f": (True, False),
    "HTTP://example.org/d/f": (True, False),
    "file:///abs/d/f": (True, True),  # one spelling of a local copy: its plain path
    "file://localhost/abs/d/f": (True, True),
    "file://data/f": (True, True),
    "file:data/f": (True, True),
    "ftp://example.org/d/f": (True, True),
    "s3://bucket/d/f": (True, True),
    "javascript:alert(1)//f": (True, True),
    "https:///d/f": (True, True),  # no host
    "https:d/f": (True, True),
    "https://exa mple.org/d/f": (True, True),
    "https://example.org/d f": (True, True),
    "https://example.org/d/f\t": (True, True),
    "https://user:secret@example.org/d/f": (True, True),
    "http://user@example.org/d/f": (True, True),
    "resources/d\nf": (True, True),
    "resources/my copies/d/f": (False, False),  # a folder name with a space is a path
    "resources/d/f": (False, False),
    "/abs/d/f": (False, False),
}


def _with_url(key: str, url: str, pinned: bool) -> dict:
    entry, checks = URL_KEYS[key]
    entry = copy.deepcopy(entry)
    entry["url"] = entry["url"].replace("U", url.rstrip("/"), 1)
    if pinned:
        entry.update(checks)
    cfg = copy.deepcopy(BASE)
    if key.startswith(("benchmarks.", "problems.")):
        name = key.split(".")[1]
        ds = {"source": "url", "url": "https://example.org/x.jsonl", "sha256": SHA}
        if key.endswith("fewshot"):
            cfg[key.split(".")[0]][name] = {**ds, "prompt": {"fewshot": entry}}
        else:
            cfg[key.split(".")[0]][name] = {**entry, "url": entry["url"] + ".jsonl"}
        return cfg
    return set_key(cfg, key, entry)


@pytest.mark.parametrize("key", list(URL_KEYS))
@pytest.mark.parametrize("url", list(URLS))
@pytest.mark.parametrize("pinned", [False, True])
def test_every_url_key_refuses_what_cannot_be_fetched_as_meant(key, url, pinned):
    refused = URLS[url][1 if pinned else 0]
    cfg = _with_url(key, url, pinned)
    if not refused:
        validate_config(cfg)
        return
    with pytest.raises(ConfigError) as exc:
        validate_config(cfg)
    text = str(exc.value)
    assert f"{key}.url" in text.replace("`", ""), text
    assert any(w in text for w in ("checksum", "file://", "scheme", "host", "white space", "control", "password")), text


# -- the strict read before Snakemake ---------------------------------------------------------------------

@pytest.mark.parametrize("args, files", [
    (["--cores", "2"], []),
    (["--configfile", "a.yaml", "b.yaml", "-n"], ["a.yaml", "b.yaml"]),
    (["--configfiles", "a.yaml", "--cores", "1", "target"], ["a.yaml"]),
    (["--configfile=a.yaml", "t"], ["a.yaml"]),
    (["-n", "--configfile", "a.yaml", "--configfile", "b.yaml"], ["a.yaml", "b.yaml"]),
])
def test_the_config_files_of_a_snakemake_command_line(args, files):
    assert configfiles_in_args(args) == files


def test_the_precheck_stops_before_snakemake_naming_the_file(tmp_path, capsys):
    ok = tmp_path / "ok.yaml"
    ok.write_text("run: {name: x}\n")
    dup = tmp_path / "dup.yaml"
    dup.write_text('{"run": {"name": "x", "name": "y"}}\n')
    assert main(["--configfile", str(ok), "-n"]) == 0
    assert main(["--configfile", str(ok), str(dup), "-n"]) == 2
    assert f"{dup}: line 1, column" in capsys.readouterr().err


def test_the_make_targets_run_the_precheck_first():
    text = (ROOT / "Makefile").read_text()
    for target in ("run", "dryrun", "run-all", "dryrun-all", "report"):
        body = text.split(f"\n{target}: setup\n", 1)[1].split("\n\n", 1)[0]
        lines = [ln.strip() for ln in body.splitlines()]
        assert lines[0].startswith("$(CHECK_CONFIG)") and "snakemake" in lines[1], (target, lines)


def test_the_module_entry_point_is_the_precheck(tmp_path):
    dup = tmp_path / "dup.yaml"
    dup.write_text("run: {name: x, name: y}\n")
    proc = subprocess.run([sys.executable, "-m", "prm_lessons.config", "--configfile", str(dup), "-n"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and f"{dup}: line 1, column" in proc.stderr and "Warning" not in proc.stderr, \
        proc.stderr


# -- a file the strict reader cannot read is named, never a traceback ------------------------------------

def _nested(depth: int, style: str) -> str:
    """A document whose value under `a` nests `depth` levels (the top mapping is one more)."""
    if style == "flow list":
        return "a: " + "[" * depth + "1" + "]" * depth + "\n"
    if style == "flow map":
        return "a: " + "{k: " * depth + "1" + "}" * depth + "\n"
    if style == "json":
        return '{"a": ' + '{"k": ' * depth + "1" + "}" * depth + "}\n"
    lines = ["a:"]  # block mappings, then block lists
    for level in range(depth):
        lines.append("  " * (level + 1) + ("k:" if style == "block map" else "-"))
    return "\n".join(lines[:-1] + [lines[-1] + " 1"]) + "\n"


NEST_STYLES = ["flow list", "flow map", "json", "block map"]


@settings(max_examples=25)  # each example composes up to 3,000 levels: the fast tier's time
@given(extra=st.integers(min_value=1, max_value=3_000), style=st.sampled_from(NEST_STYLES))
def test_nesting_past_the_bound_names_the_file(tmp_path_factory, extra, style):
    """PyYAML composes recursively: a few hundred levels ended in a RecursionError naming no file."""
    f = tmp_path_factory.mktemp("deep") / "c.yaml"
    f.write_text(_nested(MAX_CONFIG_DEPTH + extra, style))
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(f))}: line \d+: nested more than {MAX_CONFIG_DEPTH}"):
        read_config_file(f)


@pytest.mark.parametrize("style", NEST_STYLES)
def test_nesting_up_to_the_bound_reads(tmp_path, style):
    f = tmp_path / "c.yaml"
    f.write_text(_nested(MAX_CONFIG_DEPTH - 1, style))  # the top mapping is the bound's last level
    node = read_config_file(f)["a"]
    for _ in range(MAX_CONFIG_DEPTH - 1):
        node = node[0] if isinstance(node, list) else node["k"]
    assert node == 1


# every character PyYAML's reader refuses (its own table), but the surrogates no UTF-8 file can hold
REFUSED = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF
           and yaml.reader.Reader.NON_PRINTABLE.match(chr(c))]
WHERE_IN_A_LINE = {"value": "run:\n  label: a{c}b\n", "quoted value": 'run:\n  label: "a{c}b"\n',
                   "key": "run:\n  na{c}me: x\n", "comment": "run:\n  name: x  # a{c}\n"}


@given(ch=st.sampled_from(REFUSED), where=st.sampled_from(sorted(WHERE_IN_A_LINE)))
def test_a_character_yaml_refuses_names_the_file_and_line(tmp_path_factory, ch, where):
    f = tmp_path_factory.mktemp("ch") / "c.yaml"
    f.write_text(WHERE_IN_A_LINE[where].format(c=ch), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(f))}: line 2: not valid YAML"):
        read_config_file(f)


@given(head=st.text(alphabet="abc: \n", max_size=30),
       bad=st.binary(min_size=1, max_size=8).filter(lambda b: not _decodes(b)))
def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path_factory, head, bad):
    """A UTF-16 or Latin-1 file: the line of its first bad byte, not a UnicodeDecodeError."""
    f = tmp_path_factory.mktemp("enc") / "c.yaml"
    f.write_bytes(head.encode() + bad)
    line = head.count("\n") + 1 + bad[:_first_bad(bad)].count(b"\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(f))}: line {line}: byte 0x[0-9a-f]+ is not UTF-8"):
        read_config_file(f)
    assert main(["--configfile", str(f)]) == 2


def _decodes(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _first_bad(b: bytes) -> int:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return len(b)


@given(tag=st.sampled_from(["int", "float", "timestamp"]), text=st.text(alphabet="xyz#%", min_size=1, max_size=6),
       line=st.integers(min_value=1, max_value=4))
def test_a_value_its_tag_cannot_build_names_the_file_and_line(tmp_path_factory, tag, text, line):
    """`!!int "x"`, `!!timestamp "2024-13-45"`: Python's int(), float() or date() raised a ValueError
    naming no file."""
    f = tmp_path_factory.mktemp("tag") / "c.yaml"
    f.write_text("run:\n" + "  # pad\n" * (line - 1) + f'  label: !!{tag} "{text}"\n')
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(f))}: line {line + 1}, column \d+: not valid YAML: "
                                          rf"cannot read the value {tag}"):
        read_config_file(f)


@given(extra=st.integers(min_value=1, max_value=3_000), json_form=st.booleans())
def test_an_integer_past_pythons_digit_limit_names_the_file(tmp_path_factory, extra, json_form):
    digits = "7" * (sys.get_int_max_str_digits() + extra)
    f = tmp_path_factory.mktemp("big") / ("c.json" if json_form else "c.yaml")
    f.write_text(f'{{"a": {digits}}}\n' if json_form else f"a: {digits}\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(f))}: line 1, column \d+: .*digits"):
        read_config_file(f)


@settings(max_examples=25)
@given(n=st.integers(min_value=MAX_CONFIG_DEPTH, max_value=600), backwards=st.booleans())
def test_aliases_that_nest_past_the_bound_name_the_file(tmp_path_factory, n, backwards):
    """`x2: &x2 [*x1]` repeated: two levels as written, n once expanded, where the validator walks it
    (a RecursionError without the file before)."""
    lines = ["x0: &x0 [1]"] + [f"x{i}: &x{i} [*x{i - 1}]" for i in range(1, n)]
    f = tmp_path_factory.mktemp("alias") / "c.yaml"
    f.write_text("\n".join(lines) + (f"\nz: *x{n - 1}\n" if backwards else "\n"))
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(f))}: nests \d+ levels deep once its aliases"):
        read_config_file(f)


@pytest.mark.parametrize("text", ["a: &a [1, *a]\n", "a: &a {k: *a}\n", "a: &a {k: [x, {j: *a}]}\n",
                                  "a: &a [[[*a]]]\nb: 1\n"])
def test_an_alias_inside_its_own_anchor_names_the_file(tmp_path, text):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match="contains itself"):
        read_config_file(f)
