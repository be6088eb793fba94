"""The one rule for names (config names, wildcard values, CLI names), the rule for free text that reaches
a renderer (prm_lessons.text_rule's), the rule for configurable output folders, and ConfigError: what the
config package refuses with, its message starting with the key path."""
from __future__ import annotations

import functools
import re
from fractions import Fraction
from pathlib import PurePosixPath

from prm_lessons import text_rule


class ConfigError(ValueError):
    """A config value the schema rejects; the message starts with the key path."""


def config_error(path: str, msg: str) -> ConfigError:
    return ConfigError(f"config error at `{'.'.join(shown(p) for p in str(path).split('.'))}`: {msg}")


KEY_SHOWN = 80  # characters of a key a message shows; a longer one (a pasted block, a hostile file) is cut


def shown(key) -> str:
    """A key as a message shows it: whole up to KEY_SHOWN characters, else its start and its length."""
    text = str(key)
    return text if len(text) <= KEY_SHOWN else f"{text[:KEY_SHOWN - 20]}…({len(text):,} characters)"

# -- names ----------------------------------------------------------------------------------------------
# Every user-chosen name becomes a wildcard value and a file or directory name, often with a prefix or
# suffix (critic-<judge>, <name>_predictions.parquet.corrupt, a temporary .<name>.…, two names joined):
# 64 ASCII characters keep every such file name far below the 255-byte limit of common file systems.
NAME_CHARS = "A-Za-z0-9_-"
NAME_MAX = 64
NAME_RE = re.compile(f"[{NAME_CHARS}]{{1,{NAME_MAX}}}")
# the wildcard constraint of the name wildcards (workflow/rules/common.smk): the same characters; no
# length bound there, since `prm` also takes the critic-<judge> rows the workflow names itself
NAME_WILDCARD = f"[{NAME_CHARS}]+"
# rows the tables add beside the user's: benchmark / subset `average`; `_baselines` / `_policy` rows;
# the ProcessBench rows of critics (critic-<judge>) and model-free baselines (baseline_<kind>), which
# share the `prm` wildcard with the PRMs. Compared case-insensitively.
RESERVED_NAMES = ("average",)
RESERVED_PREFIXES = ("_", "critic-", "baseline_")


def name_problem(name) -> str | None:
    """Why `name` cannot be a user-chosen name (the one rule for config names, wildcard values and CLI
    names), or None when it can."""
    if not isinstance(name, str):
        return (f"{name!r} is a YAML {type(name).__name__}, not a string: a name is text (quote it; YAML "
                "reads unquoted 1, true, null or 1.5 as other types)")
    if re.fullmatch(NAME_WILDCARD, name) and len(name) > NAME_MAX:
        return f"name {name[:20]!r}… is {len(name)} characters long (at most {NAME_MAX}: it becomes file names)"
    if not NAME_RE.fullmatch(name):
        return (f"name {name!r} is not allowed: a name becomes a wildcard value and a file name, so it may hold "
                f"only letters, digits, '_' and '-' (no '/', '.', spaces or line breaks), at most {NAME_MAX}")
    low = name.lower()
    if low in RESERVED_NAMES or low.startswith(RESERVED_PREFIXES):
        return (f"name {name!r} is reserved: the tables add rows named {', '.join(RESERVED_NAMES)} and "
                f"names starting with {', '.join(map(repr, RESERVED_PREFIXES))} (any letter case)")
    return None


# -- free text that reaches a renderer: the rule lives with the renderers (prm_lessons.text_rule) -----------
TEXT_MAX = text_rule.TEXT_MAX
text_problem = text_rule.text_problem


def check_name(name, key: str) -> str:
    """`name` when it is an allowed name, else a ConfigError naming `key`."""
    problem = name_problem(name)
    if problem:
        raise config_error(key, problem)
    return name


@functools.lru_cache(maxsize=None)
def ecma_pattern(pattern: str) -> re.Pattern:
    """A JSON Schema `pattern` (an ECMA-262 regex) compiled for Python: ECMA's `$` (no multiline flag)
    matches only at the end of the string, Python's also before a final newline (jsonschema's own
    `pattern` check, re.search, lets "name\\n" through `^...$`); so each `$` outside a class becomes `\\Z`."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "$" and not in_class:
            c = r"\Z"
        out.append(c)
        i += 1
    return re.compile("".join(out))


HUB_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?")
HUB_ID_MAX = 96


def hub_id_problem(text: str) -> str | None:
    """Why `text` is not a Hugging Face repository id (huggingface_hub's validate_repo_id: [org/]name of word
    characters, '-' and '.', no '..' or '--'; the id also names the cache folder models--org--name), or None."""
    if HUB_ID_RE.fullmatch(text) and not re.search(r"\.\.|--|\.git\Z", text) and len(text) <= HUB_ID_MAX:
        return None
    return (f"{text!r} is not a Hugging Face repository id (`name` or `org/name`: letters, digits, '_', '-', '.'; "
            "no '..' or '--')")


# Config values that become Snakemake outputs: Snakemake empties an output directory before its job, so
# such a folder must be the workflow's own. The rule: a sub-folder of resources/ (OUTPUT_PARENT) given as
# a relative path of names (name rule characters: no '.', '..', '~', spaces or hidden folders), which is
# neither resources/ itself nor inside or around a folder other rules write (WORKFLOW_OUTPUT_DIRS). So it
# can never be the working directory, results/, config/, logs/, paper/, the checkout or a folder the user
# keeps. Input paths (data files, local models, hub.cache_dir, ../shared/...) may point anywhere.
OUTPUT_PATH_KEYS = (("hub", "models_dir"),)
OUTPUT_PARENT = "resources"
WORKFLOW_OUTPUT_DIRS = ("resources/data", "resources/models", "resources/templates")


def output_dir_problem(value) -> str | None:
    """Why `value` cannot be a configurable output folder (the rule above), or None."""
    text = str(value)
    p = PurePosixPath(text)
    if p.is_absolute() or text.startswith("~") or ".." in p.parts:
        return (f"{text!r} must be a relative path inside the working directory (no absolute path, no '~', "
                "no '..'): rule outputs are written and deleted there")
    bad = [part for part in p.parts if not NAME_RE.fullmatch(part)]
    if bad or not text.strip():
        return (f"{text!r}: each folder of the path is a name (letters, digits, '_', '-'; no '.', spaces or line "
                "breaks)")
    if len(p.parts) < 2 or p.parts[0] != OUTPUT_PARENT:
        return (f"{text!r} is not a dedicated folder: an output folder is a sub-folder of {OUTPUT_PARENT}/ (e.g. "
                f"{OUTPUT_PARENT}/hub), since Snakemake empties it, and so never the working directory, results/, "
                "config/, logs/ or a folder you keep")
    folded = PurePosixPath(text.casefold())  # a case-insensitive file system (macOS, Windows) holds one folder
    for other in WORKFLOW_OUTPUT_DIRS:
        o = PurePosixPath(other.casefold())
        if folded == o or o in folded.parents or folded in o.parents:
            case = "" if p == PurePosixPath(other) or PurePosixPath(other) in p.parents else \
                " (letter case aside: on a case-insensitive file system they are one folder)"
            return f"{text!r} overlaps {other}/, which other rules of the workflow write{case}"
    return None


def threshold_fraction(t) -> Fraction:
    # = prm_lessons.labels.mc.as_fraction, which this DAG-time module does not import (job code)
    return t if isinstance(t, Fraction) else Fraction(str(t)).limit_denominator(1000)


def sweep_variant_name(t) -> str:
    """The MC threshold sweep's variant for threshold t: `mc_hard_t{p}of{q}` (0.125 → mc_hard_t1of8)."""
    f = threshold_fraction(t)
    return f"mc_hard_t{f.numerator}" + (f"of{f.denominator}" if f.denominator != 1 else "")


