"""Reading config files strictly and merging them: Snakemake reads --configfile itself (JSON, else YAML
through YTE), and its YAML keeps the last of two equal keys silently. The workflow reads each file again
with this loader (common.smk, before validation), so a repeated key, a YTE template or an alias bomb is an
error naming the file and line."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

from .names import ConfigError, shown

# A config of the shipped kind has ~2,000 nodes; a YAML alias bomb (each level naming the one below
# many times) has billions once expanded, which a validator walking the tree would visit one by one.
MAX_CONFIG_NODES = 200_000
# The shipped configs nest 7 levels; PyYAML composes (and the validator walks) a tree recursively, so
# `[[[…]]]` a few hundred deep ends in a RecursionError that names no file. Counted on the parser's
# events, which are read without recursion.
MAX_CONFIG_DEPTH = 64

class _StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key repeated in one mapping (YAML's last-wins would hide a typo),
    whatever the layout: block or flow (`{a: 1, a: 2}` on one line, one-line JSON), nested, inside an
    anchored block. Keys are compared as constructed (`1` and `1.0`, `true` and `True` are one key). A merge
    key (`<<: *anchor`) is what overriding is for: the keys it brings may be given again."""

    def construct_object(self, node, deep=False):
        """A value the resolver typed but Python cannot build (`!!int "x"`, an integer of 5,000 digits, a
        13th month) is a YAML error at the value's line, not a ValueError naming no file."""
        try:
            return super().construct_object(node, deep)
        except ConfigError:
            raise
        except (ValueError, OverflowError, TypeError, AttributeError) as exc:  # PyYAML's own constructors
            tag = node.tag.split(":")[-1]
            why = (str(exc).split(";")[0] if isinstance(exc, (ValueError, OverflowError))
                   else f"{shown(getattr(node, 'value', ''))!r} is no {tag}")
            raise yaml.constructor.ConstructorError(None, None, f"cannot read the value {tag} ({why})",
                                                    node.start_mark) from None

    def construct_mapping(self, node, deep=False):
        checked = self.__dict__.setdefault("_checked", set())
        if id(node) not in checked:  # before flatten_mapping adds the merged keys; once per node
            checked.add(id(node))
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key (a list): the schema reports it
                    continue
                if first is not None:
                    where = f"line {line}" + (f", column {key_node.start_mark.column + 1}" if first == line else "")
                    raise ConfigError(f"{self.name}: {where}: key {shown(key)!r} appears twice in one mapping "
                                      f"(first at line {first}); YAML would silently keep the last")
                seen[key] = line
        return super().construct_mapping(node, deep)


def _decoded(path: str | Path) -> str:
    """The file's text; bytes that are not UTF-8 (a UTF-16 or Latin-1 file) are an error naming the line."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: line {line}: byte {raw[exc.start]:#04x} is not UTF-8 (a config file is UTF-8 "
                          "text)") from None


def _check_depth(text: str, path: str | Path) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_CONFIG_DEPTH:
                raise ConfigError(f"{path}: line {event.start_mark.line + 1}: nested more than {MAX_CONFIG_DEPTH} "
                                  "levels deep (the shipped configs nest 7)")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def read_config_file(path: str | Path) -> dict:
    """One config file, read strictly: UTF-8, no repeated key, no YTE template (`__use_yte__`), at most
    MAX_CONFIG_DEPTH levels deep and MAX_CONFIG_NODES values with aliases expanded; errors name the file
    (and line)."""
    text = _decoded(path)
    loader = None
    try:
        _check_depth(text, path)
        loader = _StrictLoader(text)  # its reader refuses a NUL or another non-printable character here
        loader.name = str(path)
        node = loader.get_single_node()
        if node is None:
            return {}
        deep = _expanded_depth(node)  # aliases nest blocks in blocks: `x2: &x2 [*x1]` 600 times is 600 deep
        if deep is None or deep > MAX_CONFIG_DEPTH:
            raise ConfigError(f"{path}: " + ("an alias (*name) inside the block its anchor (&name) names: a "
                                             "structure that contains itself" if deep is None else
                                             f"nests {deep} levels deep once its aliases (*name) are expanded "
                                             f"(at most {MAX_CONFIG_DEPTH})"))
        n = _expanded_nodes_yaml(node, {})
        if n > MAX_CONFIG_NODES:
            raise ConfigError(f"{path}: expands to {n:,} values (at most {MAX_CONFIG_NODES:,}): YAML aliases "
                              "(*name) repeat a large block many times")
        data = loader.construct_document(node)
    except yaml.reader.ReaderError as exc:  # no mark: its position is a character index
        line = text[:exc.position].count("\n") + 1
        raise ConfigError(f"{path}: line {line}: not valid YAML: character {exc.character:#06x} ({exc.reason})") \
            from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: {_yaml_problem(exc)}") from None
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file is a mapping of keys at the top level")
    if "__use_yte__" in data:
        # Snakemake has already run the template (and any Python in it) by now; this stops the run
        raise ConfigError(f"{path}: `__use_yte__` turns on YTE templating, which runs Python from the config "
                          "file; this workflow's configs are data only (write the values out)")
    return data


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error in one line with its place: the line and column, and for an alias that names no anchor
    of this file the reason (each config file is read on its own, so an overlay cannot use its base's
    anchors)."""
    mark = getattr(exc, "problem_mark", None)
    at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if "undefined alias" in str(what):
        what += (" (each config file is read on its own: an alias (*name) can only name an anchor (&name) of "
                 "the same file; repeat the values in the overlay)")
    return f"{at}not valid YAML: {what}"


def _children(node) -> list:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _expanded_depth(root) -> int | None:
    """The nesting of the composed node graph with aliases expanded (an alias is the node it names), found
    without recursion; None for a graph with a cycle (`&a [*a]`)."""
    depth: dict[int, int] = {}
    open_: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            collection = isinstance(node, (yaml.MappingNode, yaml.SequenceNode))  # as _check_depth counts
            depth[key] = collection + max((depth[id(k)] for k in _children(node)), default=0)
            continue
        if key in depth:
            continue
        if key in open_:
            return None
        open_.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_:
                return None
            if id(child) not in depth:
                stack.append((child, False))
    return depth[id(root)]


def _expanded_nodes_yaml(node, memo: dict) -> int:
    """_expanded_nodes on a composed YAML node graph (an alias is the same node object)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1
    if isinstance(node, yaml.MappingNode):
        n = 1 + sum(_expanded_nodes_yaml(k, memo) + _expanded_nodes_yaml(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        n = 1 + sum(_expanded_nodes_yaml(v, memo) for v in node.value)
    else:
        n = 1
    memo[key] = n
    return n


def check_config_files(paths) -> None:
    """Read every config file Snakemake was given strictly (read_config_file); raises ConfigError."""
    for p in paths:
        read_config_file(p)


def deep_update(base: dict, new: dict) -> dict:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_update(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base




DEFAULT_CONFIG = "config/config.yaml"  # the Snakefile's `configfile:` when no --configfile is given


def configfiles_in_args(args) -> list[str]:
    """The files a Snakemake command line gives with --configfile / --configfiles (as Snakemake's parser
    reads them: every following argument up to the next option, or `--configfile=FILE`), in order."""
    files: list[str] = []
    taking = False
    for a in args:
        if a in ("--configfile", "--configfiles"):
            taking = True
        elif a.startswith(("--configfile=", "--configfiles=")):
            files.append(a.split("=", 1)[1])
            taking = False
        elif a.startswith("-"):
            taking = False
        elif taking:
            files.append(a)
    return files


def main(argv=None) -> int:
    """`python -m prm_lessons.config [snakemake arguments]`: read the config files that command line
    gives (else the embedded default) with the strict reader, before Snakemake parses them: Snakemake's
    own loader keeps the last of two equal keys, runs YTE templates and reports a broken file without
    its name. Exit 2 with one line naming the file on the first problem."""
    args = sys.argv[1:] if argv is None else argv
    files = configfiles_in_args(args) or [DEFAULT_CONFIG]
    try:
        check_config_files(files)
    except (ConfigError, OSError) as exc:
        print(f"prm-lessons: {exc}", file=sys.stderr)
        return 2
    return 0
