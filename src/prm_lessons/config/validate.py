"""validate_config: a config dict checked against the models (types, bounds, unknown keys, defaults
filled), then against itself (checks), then its derived values set (derive). Errors name the key path
(e.g. ``sampling.n_samplez``) so a typo in a sweep file is caught at DAG-construction time, not hours
later on a GPU node."""
from __future__ import annotations

import copy
import math
import re
from pathlib import Path

from pydantic import ValidationError

from .derive import derive
from .load import MAX_CONFIG_NODES, deep_update, read_config_file
from .model import Config
from .model_scoring import ADAPTERS
from .names import ConfigError, config_error, shown
from .order import ordered

# numpy.random.seed (transformers.set_seed, hence training) takes 0 ≤ seed < 2**32; every seed key is
# held to that, so a seed fails here, not in a job
SEED_RANGE = (0, 2**32 - 1)
INT64_MAX = 2**63 - 1  # pyarrow, numpy and torch hold integers in 64 bits


def validate_config(config: dict, schema_path: str | Path | None = None, files=()) -> dict:
    """Validate (and fill defaults in) a config dict; raise ConfigError naming the first bad key path.
    `schema_path` is accepted for old callers and ignored: the models are the schema. `files`: the config
    files merged into `config`, left to right; each error line then names the file that set its key."""
    try:
        _check_size(config)
        _check_finite(config)
        _check_integers(config)
        raw = copy.deepcopy(dict(config))
        return derive(ordered(typed_config(raw).model_dump(), raw, Config))
    except ConfigError as err:
        if not files:
            raise
        raise ConfigError(name_files(str(err), files)) from None


def load_config(*paths: str | Path, overrides: dict | None = None) -> dict:
    """Merge YAML files left to right (later wins, nested dicts merged) and validate."""
    merged: dict = {}
    for p in paths:
        deep_update(merged, read_config_file(p))
    if overrides:
        deep_update(merged, overrides)
    return validate_config(merged, files=paths)


_AT = re.compile(r"^config error at `([^`]*)`", re.M)


def name_files(message: str, files) -> str:
    """`message` with `<file>: ` before each `config error at `<path>`` line whose key (or, for a missing
    key, its deepest given parent) a file sets: the last such file, as the merge keeps the last (the
    loader's own errors start with the file too)."""
    def where(match: re.Match) -> str:
        found = key_file(match.group(1), files)
        return (f"{found}: " if found else "") + match.group(0)
    return _AT.sub(where, message)


def key_file(path: str, files) -> str | None:
    """The last of `files` that sets the deepest prefix of key path `path` (a.b.0.c), or None."""
    parts = path.split(".")
    best, depth = None, 0
    for f in files:
        try:
            node = read_config_file(f)
        except (ConfigError, OSError):
            continue
        d = 0
        for part in parts:
            if isinstance(node, dict):
                keys = [k for k in node if str(k) == part]
                if not keys:
                    break
                node = node[keys[0]]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                break
            d += 1
        if d and d >= depth:
            best, depth = str(f), d
    return best


def typed_config(config: dict) -> Config:
    """The config as the models read it (defaults filled, nothing derived); ConfigError naming the key
    paths of at most 10 problems."""
    try:
        return Config.model_validate(config)
    except ValidationError as exc:
        lines = list(dict.fromkeys(f"config error at `{path}`: {msg}" for path, msg in _problems(exc, config)))
        raise ConfigError("\n".join(lines[:10])) from None


# -- pydantic's errors, in the config's words ------------------------------------------------------------

_TYPES = {"int": "integer", "float": "number", "str": "string", "bool": "boolean", "list": "array",
          "dict": "object", "model": "object", "none": "null", "string": "string", "bytes": "string"}


def _printable(part) -> str:
    # a key with a line break or a control character is shown escaped, so the message stays one line
    text = shown(part)  # a 100,000-character key is shown by its start and length
    return text if text.isprintable() else repr(text)


def _is_tag(part) -> bool:
    """A part of pydantic's error location that names a union member or validator, not a key."""
    return isinstance(part, str) and (
        "[" in part or part in ("int", "float", "str", "bool", "none", "constrained-str")
        or part[:1].isupper())  # a model's name: a union member's tag (the prms.models entries: their class)


_NO_KEY = object()


def _key(node, part):
    """The key of mapping `node` that pydantic's location part names (it writes a YAML key true, 1.5 or
    null as 1, '1.5' or 'None'), or _NO_KEY."""
    if not isinstance(node, dict):
        return _NO_KEY
    for key in node:
        if key == part and type(key) is type(part):
            return key
    for key in node:
        if not isinstance(key, str) and str(part) in (str(key), str(int(key)) if isinstance(key, bool) else str(key)):
            return key
    return _NO_KEY


def _path(config, loc, err_type: str) -> list:
    parts, node = [], config
    for part in loc:
        key = _key(node, part)
        if key is not _NO_KEY:
            parts.append(key)
            node = node[key]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            parts.append(part)
            node = node[part]
        elif part == "[key]" or _is_tag(part):
            continue
        else:  # a key absent from the config (a default the models filled, or the missing key itself)
            parts.append(part)
            node = None
    return parts


def _message(err: dict) -> tuple[list, str]:
    """(extra key path below the location, message) of one pydantic error."""
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx", {})
    if kind == "config":  # a key path "a.b", or one key YAML read as another type (1, true, null, a date)
        key = ctx["key"]
        return ([k for k in key.split(".") if k] if isinstance(key, str) else [key]), ctx["msg"]
    if kind == "missing":
        return [], "missing required value"
    if kind == "extra_forbidden":
        return [], "unknown key"
    if kind == "adapter":
        adapter = value.get("adapter") if isinstance(value, dict) else None
        if adapter is None and not (isinstance(value, dict) and "adapter" in value):
            return (["adapter"], "missing required value") if isinstance(value, dict) else \
                ([], f"{value!r} is not of type 'object'")
        return ["adapter"], f"{adapter!r} is not one of {list(ADAPTERS)!r}"
    if kind == "literal_error":
        return [], f"{value!r} is not one of [{ctx['expected'].replace(' or ', ', ')}]"
    if kind.endswith("_type") or kind == "model_attributes_type":
        return [], f"{value!r} is not of type '{_TYPES.get(kind.split('_')[0], kind.split('_')[0])}'"
    if kind == "greater_than_equal":
        return [], f"{value} is less than the minimum of {ctx['ge']}"
    if kind == "greater_than":
        return [], f"{value} is less than or equal to the minimum of {ctx['gt']}"
    if kind == "less_than_equal":
        return [], f"{value} is greater than the maximum of {ctx['le']}"
    if kind == "less_than":
        return [], f"{value} is greater than or equal to the maximum of {ctx['lt']}"
    if kind == "string_pattern_mismatch":
        return [], f"{value!r} does not match {ctx['pattern']!r}"
    if kind in ("string_too_short", "too_short"):
        if isinstance(value, dict) and not value:
            return [], "must not be empty"
        return [], f"{value!r} should be non-empty" if ctx.get("min_length") == 1 else f"{value!r} is too short"
    if kind in ("string_too_long", "too_long"):
        return [], f"{value!r} is too long"
    return [], err["msg"]


def _problems(exc: ValidationError, config: dict) -> list[tuple[str, str]]:
    """(key path, message) of each error, sorted by path; the branches of a union that all refused a value
    (`int | float`, `str | list`) are one problem, naming the types it is not."""
    by_path: dict[tuple, list[str]] = {}
    types: dict[tuple, list[str]] = {}
    for err in exc.errors(include_url=False):
        extra, msg = _message(err)
        path = tuple(_printable(p) for p in _path(config, err["loc"], err["type"]) + extra)
        if err["type"].endswith("_type") and err["type"] != "model_type":
            types.setdefault(path, []).append(msg.rsplit(" ", 1)[-1])
        by_path.setdefault(path, []).append(msg)
    out = []
    for path in sorted(by_path, key=lambda p: list(map(str, p))):
        msgs = by_path[path]
        if len(msgs) > 1:  # the null branch of an optional value is not worth a line of its own
            msgs = [m for m in msgs if not m.endswith("is not of type 'null'")] or msgs
        if len(types.get(path, [])) > 1 and len(msgs) == len(types[path]):
            value = msgs[0].split(" is not of type ")[0]
            msgs = [f"{value} is not of type {', '.join(dict.fromkeys(types[path]))}"]
        out += [(".".join(path) or "<root>", m) for m in msgs]
    return out


# -- hostile input ---------------------------------------------------------------------------------------

def _expanded_nodes(value, memo: dict) -> int:
    """Nodes of the tree as a validator walks it: a mapping or list named n times (a YAML alias) counts
    n times; memoised by identity, so this costs the distinct nodes only."""
    key = id(value)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a cycle (not produced by YAML's safe loader) counts once
    if isinstance(value, dict):
        n = 1 + sum(_expanded_nodes(v, memo) for v in value.values()) + len(value)
    elif isinstance(value, list):
        n = 1 + sum(_expanded_nodes(v, memo) for v in value)
    else:
        n = 1
    memo[key] = n
    return n


def _check_size(cfg) -> None:
    n = _expanded_nodes(cfg, {})
    if n > MAX_CONFIG_NODES:
        raise config_error("<root>", f"the config expands to {n:,} values (at most {MAX_CONFIG_NODES:,}): YAML "
                                     "aliases (*name) repeat a large block many times")


def _leaves(value, path: str = ""):
    """(key path, value) of every scalar of a config tree."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}.{i}")
    else:
        yield path, value


def _check_finite(cfg) -> None:
    """YAML's .nan / .inf are numbers that pass every bound check's spirit but not its letter (comparisons
    with NaN are false); no key has a use for them."""
    for path, value in _leaves(cfg):
        if isinstance(value, float) and not math.isfinite(value):
            raise config_error(path, f"{value} is not a finite number")


def _check_integers(cfg) -> None:
    """Every seed within what numpy accepts (SEED_RANGE); every other integer within 64 bits."""
    for path, value in _leaves(cfg):
        if isinstance(value, int) and not isinstance(value, bool):
            low, high = SEED_RANGE if path.rsplit(".", 1)[-1] == "seed" else (-INT64_MAX - 1, INT64_MAX)
            if not low <= value <= high:
                raise config_error(path, f"{value} is outside {low}..{high}" + (
                    " (the seeds numpy accepts)" if high == SEED_RANGE[1] else " (a 64-bit integer)"))
