"""Config loading and validation: every key checked against the JSON schema before any job runs.

Errors name the offending key path (e.g. ``sampling.n_samplez``) so a typo in a sweep file is caught
at DAG-construction time, not hours later on a GPU node.
"""
from __future__ import annotations

import copy
import functools
import json
import math
import re
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import yaml

from .models.embedded import EMBEDDED_PACKAGES  # stdlib-only module: cheap at DAG time
from .scoring.options import check_declared_params, check_token_classification_params  # torch-free
from .scoring.pooling import ARCHITECTURES as VLLM_ARCHITECTURES  # torch-free at import: cheap at DAG time
from .templates import OFFICIAL_CRITIC_TEMPLATE, template_problem  # stdlib only

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A config value the schema rejects; the message starts with the key path."""


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


# -- free text that reaches a renderer (run.label, run.name) -----------------------------------------------
# They are printed in the HTML report's captions (reStructuredText), paper/report.md (Markdown) and the
# LaTeX tables and main.tex; each renderer escapes them, and here they are held to one line of characters
# pdflatex (utf8 inputenc, T1 fonts: paper/main.tex) can set: printable ASCII, Latin-1, Latin Extended-A
# and the dashes, quotes, bullet and ellipsis of General Punctuation.
TEXT_KEYS = (("run", "label"), ("run", "name"))
TEXT_MAX = 300
_TEXT_CHAR_RE = re.compile("[\x20-\x7e\u00a0-\u017f\u2010-\u2027]")


def text_problem(text) -> str | None:
    """Why `text` cannot be user text that renderers print (the rule above), or None."""
    if not isinstance(text, str):
        return None  # the schema reports the type
    if len(text) > TEXT_MAX:
        return f"{len(text)} characters (at most {TEXT_MAX}: it is printed on every table and figure)"
    for ch in text:
        if not _TEXT_CHAR_RE.fullmatch(ch) or not ch.isprintable():  # no-break space, soft hyphen: not shown
            what = "a line break or control character" if ch.isspace() or not ch.isprintable() else "a character"
            return (f"{what} {ch!r} (U+{ord(ch):04X}) that the paper's LaTeX cannot set: one line of "
                    "Latin-script text, dashes and quotes")
    return None


def _check_texts(cfg: dict) -> None:
    for keys in TEXT_KEYS:
        node = cfg
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        problem = text_problem(node)
        if problem:
            raise _err(".".join(keys), problem)


def check_name(name, key: str) -> str:
    """`name` when it is an allowed name, else a ConfigError naming `key`."""
    problem = name_problem(name)
    if problem:
        raise _err(key, problem)
    return name


def _printable(part) -> str:
    # a key with a line break or a control character is shown escaped, so the message stays one line
    text = str(part)
    return text if text.isprintable() else repr(text)


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [_printable(p) for p in error.absolute_path]
    if "propertyNames" in error.schema_path:
        # jsonschema reports the map; the offending key is the instance
        parts.append(_printable(error.instance))
    elif error.validator == "additionalProperties":
        # jsonschema reports the parent; name the unknown key itself
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        parts += extra[:1]
    elif error.validator == "required":
        # from the message: the defaulting validator may have filled the key since (a `then` runs
        # before the `properties` that hold its default)
        parts.append(error.message.split("'")[1] if error.message.startswith("'") else
                     next((k for k in error.validator_value if k not in error.instance), ""))
    return ".".join(parts) or "<root>"


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


def _pattern(validator, patrn, instance, schema):
    if validator.is_type(instance, "string") and not ecma_pattern(patrn).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")


def _name_keyword(validator, value, instance, schema):
    """`x-name: true` ($defs/name): the one name rule, name_problem."""
    problem = value and name_problem(instance)
    if problem:
        yield jsonschema.ValidationError(problem)


def _defaulting_validator(schema: dict):
    """A Draft 2020-12 validator that also fills `default:` values (as snakemake.utils.validate does),
    matches `pattern` with ECMA semantics (ecma_pattern) and applies the name rule (`x-name`)."""
    base = jsonschema.Draft202012Validator

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from base.VALIDATORS["properties"](validator, properties, instance, schema)

    cls = jsonschema.validators.extend(base, {"properties": set_defaults, "pattern": _pattern,
                                              "x-name": _name_keyword})
    return cls(schema)


def load_schema(path: str | Path | None = None) -> dict:
    with open(path or SCHEMA_PATH) as fh:
        return yaml.safe_load(fh)


def _condition(schema: dict, schema_path) -> str:
    """The `if` a `then` error came from, as `key: value` (e.g. `source: local`), or ''."""
    node, cond = schema, ""
    for part in schema_path:
        # jsonschema leaves `$ref` out of schema_path: follow a (local, "#/$defs/<name>") reference
        # when the next part is not in the referring schema itself
        while isinstance(node, dict) and part not in node and "$ref" in node:
            ref, node = node["$ref"], schema
            for seg in ref.split("/")[1:]:
                node = node[seg]
        if isinstance(node, dict) and part == "then" and "if" in node:
            props = node["if"].get("properties", {})
            cond = ", ".join(f"{k}: {v['const']}" for k, v in props.items() if "const" in v)
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    return cond


def _describe(alternative: dict) -> str:
    if "const" in alternative:
        return repr(alternative["const"])
    return {"number": "a number", "integer": "an integer", "string": "a string", "null": "null"}.get(
        alternative.get("type"), str(alternative))


def _message(err: jsonschema.ValidationError, schema: dict) -> str:
    defs = schema.get("$defs", {})
    if err.validator == "additionalProperties":
        msg = f"unknown key (allowed: {', '.join(sorted(err.schema.get('properties', {})))})"
    elif err.validator == "required":
        msg = "missing required value"
    elif err.schema == defs.get("name"):
        # every check of the name def gives the one rule's message (deduplicated per key)
        msg = name_problem(err.instance) or err.message
    elif err.schema == defs.get("hub_id"):
        msg = (f"{err.instance!r} is not a Hugging Face repository id (`name` or `org/name`: letters, "
               "digits, '_', '-', '.'; no '..' or '--')")
    elif err.validator == "minProperties" and not err.instance:
        msg = "must not be empty"
    elif err.validator == "anyOf":
        msg = f"{err.instance!r} is not {' or '.join(map(_describe, err.validator_value))}"
    else:
        msg = err.message
    cond = _condition(schema, err.schema_path) if "then" in err.schema_path else ""
    return f"{msg} (with `{cond}`)" if cond else msg


# A config of the shipped kind has ~2,000 nodes; a YAML alias bomb (each level naming the one below
# many times) has billions once expanded, which a validator walking the tree would visit one by one.
MAX_CONFIG_NODES = 200_000
# numpy.random.seed (transformers.set_seed, hence training) takes 0 ≤ seed < 2**32; every seed key is
# held to that, so a seed fails here, not in a job
SEED_RANGE = (0, 2**32 - 1)
INT64_MAX = 2**63 - 1  # pyarrow, numpy and torch hold integers in 64 bits


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
        raise _err("<root>", f"the config expands to {n:,} values (at most {MAX_CONFIG_NODES:,}): YAML aliases "
                             "(*name) repeat a large block many times")


def _check_integers(value, path: str = "") -> None:
    """Every seed within what numpy accepts (SEED_RANGE); every other integer within 64 bits."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_integers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_integers(v, f"{path}.{i}")
    elif isinstance(value, int) and not isinstance(value, bool):
        low, high = SEED_RANGE if path.rsplit(".", 1)[-1] == "seed" else (-INT64_MAX - 1, INT64_MAX)
        if not low <= value <= high:
            raise _err(path, f"{value} is outside {low}..{high}" + (" (the seeds numpy accepts)" if high == SEED_RANGE[1]
                                                                    else " (a 64-bit integer)"))


def validate_config(config: dict, schema_path: str | Path | None = None) -> dict:
    """Validate (and fill defaults in) a config dict; raise ConfigError naming the first bad key path."""
    _check_size(config)
    schema = load_schema(schema_path)
    cfg = copy.deepcopy(dict(config))
    validator = _defaulting_validator(schema)
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        # dict.fromkeys: one line per message (a hub id can break both its pattern and its `not`)
        lines = list(dict.fromkeys(f"config error at `{_key_path(err)}`: {_message(err, schema)}"
                                   for err in errors))[:10]
        raise ConfigError("\n".join(lines))
    _check_finite(cfg)
    _check_integers(cfg)
    if ((cfg.get("training") or {}).get("max_steps")) == 0:
        raise _err("training.max_steps", "0 optimizer steps: give a number ≥ 1, or -1 to train for `epochs`")
    _check_texts(cfg)
    _drop_disabled_benchmarks(cfg)
    _apply_seed_replica(cfg)
    _check_output_paths(cfg)
    _check_cross_references(cfg)
    _check_namespaces(cfg)
    return cfg


def _drop_disabled_benchmarks(cfg: dict) -> None:
    """benchmarks.<name>.enabled: false removes the entry before anything reads the config (an overlay
    cannot delete a key); `enabled` is removed from the others, so it changes no job's params."""
    cons = (cfg.get("processbench") or {}).get("constructed") or {}
    for where, entries in (("problems", cfg.get("problems")), ("processbench.constructed.subsets", cons.get("subsets")),
                           ("processbench.constructed.dev.subsets", (cons.get("dev") or {}).get("subsets"))):
        for name, spec in (entries or {}).items():
            if "enabled" in spec:
                raise _err(f"{where}.{name}.enabled", "only benchmarks can be switched off")
    benchmarks = cfg.get("benchmarks") or {}
    for name in list(benchmarks):
        if benchmarks[name].pop("enabled", True) is False:
            del benchmarks[name]
    if "benchmarks" in cfg and not benchmarks:
        raise _err("benchmarks", "every benchmark has enabled: false; at least one must stay")


# the seeds a seed replica (run.seed) draws again: sampling, MC and judge labels, training
SEEDED_SECTIONS = ("sampling", "mc", "judge", "training")


def _apply_seed_replica(cfg: dict) -> None:
    """run.seed: the run is a seed replica named seed<value> (Table 6's seed spread finds it by that name)
    with that seed in every SEEDED_SECTIONS section; it reports no spread of its own (analysis.seeds)."""
    seed = (cfg.get("run") or {}).get("seed")
    if seed is None:
        return
    if cfg["run"].get("name") != f"seed{seed}":
        raise _err("run.name", f"a seed replica (run.seed: {seed}) is named seed{seed}, not "
                               f"{cfg['run'].get('name')!r} (the base run's Table 6 reads runs/seed{seed}/)")
    for section in SEEDED_SECTIONS:
        if section in cfg:
            cfg[section]["seed"] = int(seed)
    if cfg.get("analysis"):
        cfg["analysis"]["seeds"] = []


def _err(path: str, msg: str) -> ConfigError:
    return ConfigError(f"config error at `{path}`: {msg}")


def _check_finite(value, path: str = "") -> None:
    """YAML's .nan / .inf pass the schema's `type: number` and every bound (comparisons with NaN are
    false); no key has a use for them."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, f"{path}.{i}")
    elif isinstance(value, float) and not math.isfinite(value):
        raise _err(path, f"{value} is not a finite number")


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
    for other in WORKFLOW_OUTPUT_DIRS:
        o = PurePosixPath(other)
        if p == o or o in p.parents or p in o.parents:
            return f"{text!r} overlaps {other}/, which other rules of the workflow write"
    return None


def _check_output_paths(cfg: dict) -> None:
    for keys in OUTPUT_PATH_KEYS:
        value = cfg
        for k in keys:
            value = (value or {}).get(k)
        if value is None:
            continue
        problem = output_dir_problem(value)
        if problem:
            raise _err(".".join(keys), problem)


def _check_cross_references(cfg: dict) -> None:
    models = cfg.get("models", {})
    for role, name in cfg.get("roles", {}).items():
        if name not in models:
            raise ConfigError(f"config error at `roles.{role}`: model '{name}' is not defined under `models`")
    for name, entry in models.items():
        if entry.get("source") == "embedded" and entry.get("id") not in EMBEDDED_PACKAGES:
            raise _err(f"models.{name}.id", f"unknown embedded model package {entry.get('id')!r} "
                                            f"(known: {', '.join(sorted(EMBEDDED_PACKAGES))})")
    dpols = cfg.get("data_policies") or {}
    for name, d in dpols.items():
        for key in ("model", "completer"):
            if d.get(key) not in models:
                raise _err(f"data_policies.{name}.{key}", f"model '{d.get(key)}' is not defined under `models`")
        # a mix's policies sample into results/data_policies/<name>/, told apart from the Best-of-N
        # policies' results/policies/<name>/ by the `policy_dir` wildcard only through distinct names
        if len(dpols) > 1 and name in ((cfg.get("bon") or {}).get("policies") or {}):
            raise _err(f"data_policies.{name}", "a data policy of a mix needs a name no Best-of-N policy "
                                                "(bon.policies) has")
    base = (cfg.get("training") or {}).get("base")
    if base and cfg.get("roles", {}).get(base, base) not in models:
        raise _err("training.base", f"{base!r} is neither a role under `roles` nor a model under `models`")
    for name, e in ((cfg.get("prms") or {}).get("models") or {}).items():
        for key in ("model", "ref_model"):
            if e.get(key) and e[key] not in models:
                raise _err(f"prms.models.{name}.{key}", f"model '{e[key]}' is not defined under `models`")
    critics = cfg.get("critics") or {}
    for name, entry in (critics.get("judges") or {}).items():
        if entry["model"] not in models:
            raise _err(f"critics.judges.{name}.model", f"model '{entry['model']}' is not defined under `models`")
        # the official template replaces the project's text; a template_path beside it would be ignored
        template = entry.get("template", critics.get("template"))
        if template == "official" and entry.get("template_path", critics.get("template_path")):
            key = (f"critics.judges.{name}.template_path" if entry.get("template_path") else "critics.template_path")
            raise _err(key, f"critic '{name}' has template: official; template_path replaces only the project "
                            "template (set template: project, or remove template_path)")
    _check_judge_template(cfg.get("judge") or {})
    problems, benchmarks = cfg.get("problems") or {}, cfg.get("benchmarks") or {}
    _check_bon_judges(cfg.get("bon_judges") or {}, models, benchmarks)
    for name, spec in ((cfg.get("trainsets") or {}).get("variants") or {}).items():
        unknown = [d for d in spec.get("datasets") or [] if d not in problems]
        if unknown:
            raise _err(f"trainsets.variants.{name}.datasets", f"unknown problem set(s) {unknown} "
                                                            "(names under `problems`)")
    ann = (cfg.get("analysis") or {}).get("fig6_annotation") or {}
    if ann.get("labels") and not ann.get("per_benchmark"):
        raise _err("analysis.fig6_annotation.labels", "labels of an annotation sheet, but per_benchmark is 0 (no "
                                                      "sheet): set per_benchmark to the sheet's size per dataset")
    for i, d in enumerate((cfg.get("analysis") or {}).get("policy_flaw_datasets") or []):
        if d not in problems and d not in benchmarks:
            raise _err(f"analysis.policy_flaw_datasets.{i}", f"'{d}' is not under `problems` or `benchmarks`")
    _check_bon(cfg)
    n = (cfg.get("analysis") or {}).get("n")
    bon_n = (cfg.get("bon") or {}).get("n") or (cfg.get("sampling") or {}).get("n")
    if n is not None and bon_n is not None and n != bon_n:
        # the main tables are at bon.n; bon.more_n's N are evaluated on their own benchmarks only
        raise _err("analysis.n", f"{n} differs from bon.n = {bon_n}, the N of the main tables "
                                 "(leave analysis.n null to use it)")
    if isinstance(cfg.get("analysis"), dict) and n is None and bon_n is not None:
        cfg["analysis"]["n"] = bon_n  # the tables read bon.csv at bon.n, never at a bon.more_n N
    for name in sorted(used_models(cfg)):
        entry = models[name]
        if entry.get("source") == "hub" and not entry.get("revision"):
            # an unpinned Hub model would be whatever `main` is on the day each job starts
            raise ConfigError(f"config error at `models.{name}.revision`: Hub model '{entry.get('id')}' is used "
                              "but names no revision (a 40-hex commit; `main` is resolved once by rule "
                              "download_model)")
    _check_search(cfg)
    _check_token_room(cfg)
    _check_threshold_tuning(cfg)
    _check_shard_prms(cfg)
    _check_analysis(cfg)
    _check_scoring_backends(cfg)
    _check_adapter_params(cfg)
    _check_templates(cfg)
    for key in ("benchmarks",):
        for name in cfg.get("analysis", {}).get(key, []) or []:
            if name not in cfg.get("benchmarks", {}):
                raise ConfigError(f"config error at `analysis.{key}`: unknown benchmark '{name}'")


def _check_scoring_backends(cfg: dict) -> None:
    """Scoring backend vllm (prm_lessons.scoring.pooling) only where vLLM implements the PRM's architecture: the
    adapters qwen_prm / qwen_orm / trained, and trained PRMs only when they are saved in the released
    Qwen2ForProcessRewardModel layout (full fine-tuning; the embedded base is a Llama model)."""
    prms = cfg.get("prms") or {}
    served = ", ".join(f"{a} ({arch})" for a, arch in VLLM_ARCHITECTURES.items())
    for name, e in (prms.get("models") or {}).items():
        if e.get("backend") == "vllm" and e.get("adapter") not in VLLM_ARCHITECTURES:
            raise _err(f"prms.models.{name}.backend", f"vllm implements no architecture for adapter "
                                                      f"{e.get('adapter')!r} (it serves {served}); use transformers")
    if prms.get("trained_backend") == "vllm" and prms.get("include_trained", True):
        training = cfg.get("training") or {}
        if training.get("mode", "full") != "full":
            raise _err("prms.trained_backend", f"vllm serves trained PRMs saved as Qwen2ForProcessRewardModel, "
                                               f"i.e. training.mode full; training.mode is {training.get('mode')!r} "
                                               "(its PRMs keep the project layout): use transformers")
        base = (cfg.get("models") or {}).get((cfg.get("roles") or {}).get(training.get("base"), training.get("base")))
        if base and base.get("source") == "embedded":
            raise _err("prms.trained_backend", "the embedded base is a Llama model: its PRMs keep the project "
                                               "layout, which vLLM does not serve; use transformers")


def _checkpoint_config(model_dir: str) -> dict | None:
    """A local checkpoint's transformers config.json (None: none, unreadable, or no model_type)."""
    try:
        c = json.loads((Path(model_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return c if isinstance(c, dict) and "model_type" in c else None


def _checkpoint_num_labels(model_dir: str) -> int | None:
    """Labels of a local checkpoint's head as transformers reads its config.json: id2label, else
    num_labels, else 2 (PretrainedConfig's default, which transformers 5 does not write); None when there
    is no transformers config (no model_type) to read."""
    c = _checkpoint_config(model_dir)
    if c is None:
        return None
    n = len(c["id2label"]) if isinstance(c.get("id2label"), dict) else c.get("num_labels", 2)
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _checkpoint_vocab_size(model_dir: str) -> int | None:
    c = _checkpoint_config(model_dir) or {}
    n = c.get("vocab_size", (c.get("text_config") or {}).get("vocab_size"))
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _declared_bounds(params: dict, m: dict) -> tuple[int | None, int | None]:
    """(num_labels, vocab_size) adapter declared's readout can be checked against before any job runs: the
    Qwen-style process_reward head built here has 2 labels; a local checkpoint's config.json says the rest."""
    local = m.get("source") == "local"
    mc = params.get("model_class")
    if mc == "process_reward":
        return (None if m.get("trust_remote_code") else 2), None
    if mc == "token_classification":
        return (_checkpoint_num_labels(m["id"]) if local else None), None
    return None, (_checkpoint_vocab_size(m["id"]) if local else None)


def _check_adapter_params(cfg: dict) -> None:
    """The params of adapters token_classification and declared (scoring.options), and for a local model
    the label index (or label token id) against the checkpoint now rather than in the scoring job (a Hub
    model: checked when loaded)."""
    models = cfg.get("models") or {}
    for name, e in ((cfg.get("prms") or {}).get("models") or {}).items():
        if e.get("adapter") not in ("token_classification", "declared"):
            continue
        m = models.get(e["model"]) or {}
        params = e.get("params") or {}
        try:
            if e["adapter"] == "declared":
                n, vocab = _declared_bounds(params, m)
                check_declared_params(params, n, vocab)
            else:
                n = _checkpoint_num_labels(m["id"]) if m.get("source") == "local" else None
                check_token_classification_params(params, n)
        except ValueError as err:
            key, _, msg = str(err).partition(": ")
            # the checkpoint's own count said so: name the file it was read from
            read = m.get("source") == "local" and (
                (e["adapter"] == "token_classification" and n is not None)
                or (params.get("model_class") != "process_reward" and ("num_labels" in msg or "vocab_size" in msg)))
            raise _err(f"prms.models.{name}.{key}", msg + (f" ({m['id']}/config.json)" if read else "")) from None


def _check_analysis(cfg: dict) -> None:
    """analysis.policy / second_policy name policies (bon.policies; none configured: the one policy named
    after roles.policy); table10's N is an N that Best-of-N evaluates and its benchmarks are evaluated at
    that N; chinese_benchmarks are benchmarks."""
    a = cfg.get("analysis") or {}
    bon = cfg.get("bon") or {}
    policies = list(bon.get("policies") or {}) or [(cfg.get("roles") or {}).get("policy")]
    for key in ("policy", "second_policy"):
        if a.get(key) is not None and a[key] not in policies:
            raise _err(f"analysis.{key}", f"'{a[key]}' is not a Best-of-N policy (keys of bon.policies: "
                                          f"{', '.join(map(str, policies))})")
    if a.get("second_policy") is not None and a["second_policy"] == (a.get("policy") or policies[0]):
        raise _err("analysis.second_policy", f"'{a['second_policy']}' is also analysis.policy (the policy of "
                                             "Tables 3-8, 11, 13, 15); name another policy, or null")
    benchmarks = cfg.get("benchmarks") or {}
    bon_n = bon.get("n") or (cfg.get("sampling") or {}).get("n")
    covers = {int(e["n"]): list(e.get("benchmarks") or []) for e in bon.get("more_n") or [] if "n" in e}
    t10 = a.get("table10") or {}
    n10 = t10.get("n") or (max(covers) if covers else None)
    if t10.get("n") is not None and t10["n"] != bon_n and t10["n"] not in covers:
        raise _err("analysis.table10.n", f"{t10['n']} is not an N that Best-of-N evaluates (bon.n = {bon_n}, "
                                         f"bon.more_n: {sorted(covers) or 'none'})")
    for i, b in enumerate(t10.get("benchmarks") or []):
        if n10 is None:
            raise _err("analysis.table10.benchmarks", "set, but no N to evaluate them at (bon.more_n is empty "
                                                      "and analysis.table10.n is null)")
        if b not in benchmarks:
            raise _err(f"analysis.table10.benchmarks.{i}", f"unknown benchmark '{b}' (names under `benchmarks`)")
        if n10 != bon_n and b not in covers.get(n10, []):
            raise _err(f"analysis.table10.benchmarks.{i}", f"'{b}' is not evaluated at N = {n10} (add it to "
                                                           f"that bon.more_n entry's benchmarks)")
    for i, b in enumerate(a.get("chinese_benchmarks") or []):
        if b not in benchmarks:
            raise _err(f"analysis.chinese_benchmarks.{i}", f"unknown benchmark '{b}' (names under `benchmarks`)")


def _check_threshold_tuning(cfg: dict) -> None:
    """processbench_eval.tune_on must be applicable to the run's ProcessBench cases: `dev` needs the
    constructed set's dev split, `gsm8k` a subset named gsm8k (hub/local/url: `subsets` null = all four)."""
    tune_on = (cfg.get("processbench_eval") or {}).get("tune_on", "auto")
    pb = cfg.get("processbench") or {}
    constructed = pb.get("source", "constructed") == "constructed"
    cons = pb.get("constructed") or {}
    if tune_on == "dev" and not (constructed and cons.get("dev")):
        raise _err("processbench_eval.tune_on", "'dev' needs a dev split (processbench.constructed.dev); "
                                                "use crossfit, gsm8k or auto")
    if tune_on == "gsm8k":
        subsets = list(cons.get("subsets") or {}) if constructed else pb.get("subsets")
        if subsets is not None and "gsm8k" not in subsets:
            where = "processbench.constructed.subsets" if constructed else "processbench.subsets"
            raise _err("processbench_eval.tune_on", f"'gsm8k' tunes on the GSM8K subset, which {where} lacks "
                                                    f"({', '.join(map(str, subsets)) or 'none'}); use dev, "
                                                    "crossfit or auto")


def _run_prms(cfg: dict) -> set[str]:
    """The names of the PRMs this run scores: prms.models, and the enabled trained variants and sweep
    variants unless prms.include_trained is false."""
    prms = cfg.get("prms") or {}
    known = set((prms.get("models") or {}))
    if prms.get("include_trained", True):
        tcfg = cfg.get("trainsets") or {}
        known |= {n for n, v in (tcfg.get("variants") or {}).items() if v.get("enabled") is not False}
        known |= {sweep_variant_name(t) for t in tcfg.get("mc_threshold_sweep") or []}
    return known


def _check_shard_prms(cfg: dict) -> None:
    """prms.shard_prms names PRMs of this run (a typo would silently leave every PRM unsplit)."""
    known = _run_prms(cfg)
    for i, name in enumerate((cfg.get("prms") or {}).get("shard_prms") or []):
        if name not in known:
            raise _err(f"prms.shard_prms.{i}", f"'{name}' is not a PRM of this run: a trained variant "
                       "(trainsets.variants, with prms.include_trained) or a prms.models entry")


def _check_search(cfg: dict) -> None:
    """search.*: the policy is a model, the PRMs (and the ORM) are PRMs the workflow scores, the
    benchmarks are Best-of-N benchmarks."""
    search = cfg.get("search") or {}
    if search.get("policy") is not None and search["policy"] not in cfg.get("models", {}):
        raise _err("search.policy", f"model '{search['policy']}' is not defined under `models`")
    known = _run_prms(cfg)
    where = "a trained variant (trainsets.variants, with prms.include_trained) or a prms.models entry"
    for i, name in enumerate(search.get("prms") or []):
        if name not in known:
            raise _err(f"search.prms.{i}", f"'{name}' is not a PRM of this run: {where}")
    if search.get("orm") is not None and search["orm"] not in known:
        raise _err("search.orm", f"'{search['orm']}' is not a PRM of this run: {where}")
    for i, name in enumerate(search.get("benchmarks") or []):
        if name not in (cfg.get("benchmarks") or {}):
            raise _err(f"search.benchmarks.{i}", f"unknown benchmark '{name}' (names under `benchmarks`)")


def _check_token_room(cfg: dict) -> None:
    """A generation budget that leaves no token of the model's max_model_len for a prompt: the sampling
    jobs (every Best-of-N and data policy: prompt + max_tokens must fit, sampling.long_questions) and the
    search (prompt + path + max_step_tokens) would refuse or skip every problem, hours in. MC, the judge,
    the critics and the Best-of-N judges are not held to it: the engine stops their generations at
    max_model_len (vLLM, as ProcessBench's own script runs its critics: 8,192 tokens on 4,096-token models)."""
    models, sampling = cfg.get("models") or {}, cfg.get("sampling") or {}
    roles = cfg.get("roles") or {}
    budgets = []  # (key path of the budget, tokens, model name)
    policies = (cfg.get("bon") or {}).get("policies") or {}
    for name, p in (policies.items() if policies else [(roles.get("policy"), {})]):
        key = f"bon.policies.{name}.max_tokens" if p.get("max_tokens") is not None else "sampling.max_tokens"
        budgets.append((key, p.get("max_tokens") or sampling.get("max_tokens"), p.get("model") or roles.get("policy")))
    for name, d in (cfg.get("data_policies") or {}).items():
        key = f"data_policies.{name}.max_tokens" if d.get("max_tokens") is not None else "sampling.max_tokens"
        budgets.append((key, d.get("max_tokens") or sampling.get("max_tokens"), d.get("model")))
    search = cfg.get("search") or {}
    if search.get("prms"):
        budgets.append(("search.max_step_tokens", search.get("max_step_tokens"), search.get("policy") or roles.get("policy")))
    for key, tokens, model in budgets:
        limit = (models.get(model) or {}).get("max_model_len")
        if isinstance(tokens, int) and isinstance(limit, int) and tokens >= limit:
            raise _err(key, f"{tokens} tokens leave no room for a prompt in models.{model}.max_model_len {limit} "
                            "(prompt + generated tokens must fit in it): lower it, or raise max_model_len to at "
                            "most the model's own context length")


# what the primary policy takes from `sampling` and `benchmarks` (its samples are the labels', search's
# and the judges' too), so it may not set them itself
PRIMARY_POLICY_FIXED = ("temperature", "top_p", "max_tokens", "system_prompt", "benchmarks", "limit")


def _check_bon(cfg: dict) -> None:
    """bon.policies: models under `models`, the first (primary) one roles.policy's with no overrides, known
    benchmarks; bon.more_n: N other than bon.n and each other, known benchmarks sampled by its policies."""
    bon, models, benchmarks = cfg.get("bon") or {}, cfg.get("models") or {}, cfg.get("benchmarks") or {}
    policies = bon.get("policies") or {}
    for i, (name, p) in enumerate(policies.items()):
        if i > 0 and p.get("model") is None:
            raise _err(f"bon.policies.{name}.model", "missing required value (only the primary policy, the first, "
                                                     "takes roles.policy)")
        if p.get("model") is not None and p["model"] not in models:
            raise _err(f"bon.policies.{name}.model", f"model '{p.get('model')}' is not defined under `models`")
        if i == 0 and p.get("model") not in (None, (cfg.get("roles") or {}).get("policy")):
            raise _err(f"bon.policies.{name}.model", f"the first (primary) policy samples results/samples/, which "
                                                     f"the labels read too: it must be roles.policy "
                                                     f"('{(cfg.get('roles') or {}).get('policy')}')")
        for key in PRIMARY_POLICY_FIXED if i == 0 else ():
            if p.get(key) not in (None, []):
                raise _err(f"bon.policies.{name}.{key}", "the first (primary) policy takes its sampling from "
                                                         "`sampling` and samples every benchmark (its samples are "
                                                         "shared with the labels, search and judges): set it there, "
                                                         "or list another policy first")
        for j, b in enumerate(p.get("benchmarks") or []):
            if b not in benchmarks:
                raise _err(f"bon.policies.{name}.benchmarks.{j}", f"unknown benchmark '{b}' (names under `benchmarks`)")
    names = list(policies) or [(cfg.get("roles") or {}).get("policy")]
    for i, p in enumerate((cfg.get("bon_judges") or {}).get("policies") or []):
        if p not in names:
            raise _err(f"bon_judges.policies.{i}", f"'{p}' is not a policy (bon.policies: {', '.join(names)})")
    seen = {bon.get("n"): "bon.n"}
    for i, e in enumerate(bon.get("more_n") or []):
        if e["n"] in seen:
            raise _err(f"bon.more_n.{i}.n", f"N={e['n']} is already evaluated ({seen[e['n']]}): list each N once, "
                                            "with all its benchmarks")
        seen[e["n"]] = f"bon.more_n.{i}.n"
        for j, p in enumerate(e.get("policies") or []):
            if p not in names:
                raise _err(f"bon.more_n.{i}.policies.{j}", f"'{p}' is not a policy (bon.policies: {', '.join(names)})")
        for j, b in enumerate(e["benchmarks"]):
            if b not in benchmarks:
                raise _err(f"bon.more_n.{i}.benchmarks.{j}", f"unknown benchmark '{b}' (names under `benchmarks`)")
            for p in e.get("policies") or names[:1]:
                own = (policies.get(p) or {}).get("benchmarks") or []
                if own and b not in own:
                    raise _err(f"bon.more_n.{i}.benchmarks.{j}", f"policy '{p}' does not sample '{b}' "
                                                                 f"(bon.policies.{p}.benchmarks)")


def _check_judge_template(judge: dict) -> None:
    """judge.template paper_app_c: the paper's prompt is in the paper's format (style paper), replaces the
    project's text (no template_path beside it) and is checked against at least one pinned value."""
    if judge.get("template") != "paper_app_c":
        return
    if judge.get("style", "paper") != "paper":
        raise _err("judge.template", "paper_app_c is the paper's prompt, written for its verdict format: set "
                                     "judge.style: paper (or template: project_paraphrase)")
    if judge.get("template_path"):
        raise _err("judge.template_path", "judge.template is paper_app_c; template_path replaces only the "
                                          "project's paraphrase (set template: project_paraphrase, or remove it)")
    spec = judge.get("paper_template") or {}
    if not any(spec.get(k) for k in ("sha256", "git_blob_sha1", "text_sha256")):
        raise _err("judge.paper_template", "judge.template is paper_app_c but none of sha256, git_blob_sha1, "
                                           "text_sha256 is set: the prompt would be used unchecked")


def _check_bon_judges(bj: dict, models: dict, benchmarks: dict) -> None:
    """bon_judges: judge models under `models`, benchmarks under `benchmarks` (its templates:
    _check_templates)."""
    for name, j in (bj.get("judges") or {}).items():
        if j.get("model") not in models:
            raise _err(f"bon_judges.judges.{name}.model", f"model '{j.get('model')}' is not defined under `models`")
    for name, j in (bj.get("judges") or {}).items():
        if j.get("max_tokens", bj.get("max_tokens")) == 0 and not bj.get("force_answer", True):
            key = f"bon_judges.judges.{name}.max_tokens" if "max_tokens" in j else "bon_judges.max_tokens"
            raise _err(key, "0 (no free text) needs bon_judges.force_answer: every verdict would be unread")
    for i, b in enumerate(bj.get("benchmarks") or []):
        if b not in benchmarks:
            raise _err(f"bon_judges.benchmarks.{i}", f"'{b}' is not a benchmark (names under `benchmarks`)")


def _check_template_file(path, kind: str, key: str) -> None:
    """A template the config names: the file exists (relative to the working directory; the official
    critique template is fetched by a rule and checked when read) and fills `kind`'s placeholders."""
    if not Path(path).is_file():
        if Path(path) == Path(OFFICIAL_CRITIC_TEMPLATE):
            return
        raise _err(key, f"no such file {path!r} (relative to the working directory)")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _err(key, f"{path}: cannot be read as UTF-8 text ({exc})") from None
    problem = template_problem(text, kind)
    if problem:
        raise _err(key, f"{path}: {problem}")


def _check_templates(cfg: dict) -> None:
    """Every template the config can replace, checked before any job (so before any model loads)."""
    judge = cfg.get("judge") or {}
    if judge.get("template_path"):
        _check_template_file(judge["template_path"], "judge", "judge.template_path")
    critics = cfg.get("critics") or {}
    if critics.get("template_path") and critics.get("template", "project") == "project":
        _check_template_file(critics["template_path"], "judge", "critics.template_path")
    for name, entry in (critics.get("judges") or {}).items():
        if entry.get("template_path") and entry.get("template", critics.get("template", "project")) == "project":
            _check_template_file(entry["template_path"], "judge", f"critics.judges.{name}.template_path")
    bj = cfg.get("bon_judges") or {}
    for key, kind in (("pointwise_template", "pointwise"), ("pairwise_template", "pairwise")):
        if bj.get(key):
            _check_template_file(bj[key], kind, f"bon_judges.{key}")


def _fraction(t) -> Fraction:
    # = prm_lessons.labels.mc.as_fraction, which this DAG-time module does not import (job code)
    return t if isinstance(t, Fraction) else Fraction(str(t)).limit_denominator(1000)


def sweep_variant_name(t) -> str:
    """The MC threshold sweep's variant for threshold t: `mc_hard_t{p}of{q}` (0.125 → mc_hard_t1of8)."""
    f = _fraction(t)
    return f"mc_hard_t{f.numerator}" + (f"of{f.denominator}" if f.denominator != 1 else "")


def _is_sweep_spec(spec: dict, t) -> bool:
    """Whether a declared variant is the sweep's hard MC variant at t (plan.variants then reuses it)."""
    return (spec.get("source") == "mc" and spec.get("label_type", "hard") == "hard" and not spec.get("datasets")
            and _fraction(spec.get("threshold", 0.0)) == _fraction(t))


# ProcessBench rows of critics (critic-<judge>) and model-free baselines (baseline_<kind>) share the
# `prm` wildcard with the PRMs
RESERVED_PRM_PREFIXES = ("critic-", "baseline_")


def _name_groups(cfg: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each namespace of names as (what, [(key path, name)]): the names of one group become files in
    the same folders, so two of them must differ in more than letter case."""
    def keys(where: str, mapping) -> list[tuple[str, str]]:
        return [(f"{where}.{n}", n) for n in (mapping or {})]

    def sub(*path):
        node = cfg
        for k in path:
            node = node.get(k) if isinstance(node, dict) else None
        return node

    cons = sub("processbench", "constructed") or {}
    return [
        ("models", keys("models", cfg.get("models"))),
        ("problem sets and benchmarks", keys("problems", cfg.get("problems")) + keys("benchmarks", cfg.get("benchmarks"))),
        ("PRMs", keys("trainsets.variants", sub("trainsets", "variants")) + keys("prms.models", sub("prms", "models"))),
        ("critics", keys("critics.judges", sub("critics", "judges"))),
        ("Best-of-N judges", keys("bon_judges.judges", sub("bon_judges", "judges"))),
        ("policies", keys("bon.policies", sub("bon", "policies"))),
        ("ProcessBench subsets", [(f"processbench.subsets.{i}", n) for i, n in enumerate(sub("processbench", "subsets") or [])]
         + keys("processbench.constructed.subsets", cons.get("subsets"))),
        ("ProcessBench dev subsets", keys("processbench.constructed.dev.subsets", (cons.get("dev") or {}).get("subsets"))),
        ("human construction problems", keys("human.construction.problems", sub("human", "construction", "problems"))),
    ]


def _check_case_clashes(cfg: dict) -> None:
    """Two names of one namespace that differ only in letter case name the same file on a
    case-insensitive file system (macOS, Windows, many shared mounts)."""
    for what, names in _name_groups(cfg):
        seen: dict[str, str] = {}
        for key, name in names:
            if not isinstance(name, str):
                continue
            other = seen.setdefault(name.casefold(), name)
            if other != name:
                raise _err(key, f"{name!r} and {other!r} ({what}) differ only in letter case: they name the same "
                                "file on a case-insensitive file system")


def _check_namespaces(cfg: dict) -> None:
    """Names that share a wildcard must not clash: problem sets and benchmarks (`dataset`:
    results/samples/<name>.parquet), and trained variants, released PRMs, critics and the ProcessBench
    baselines (`prm`: results/scores/<prm>/, results/metrics/*/<prm>.json); nor differ only in case."""
    _check_case_clashes(cfg)
    for name in cfg.get("benchmarks") or {}:
        if name in (cfg.get("problems") or {}):
            raise _err(f"benchmarks.{name}", "also defined under `problems`: problem sets and benchmarks "
                                             "share one namespace (results/samples/<name>.parquet)")
    tcfg = cfg.get("trainsets") or {}
    declared = {n: s for n, s in (tcfg.get("variants") or {}).items() if s.get("enabled") is not False}
    sweep = []
    for t in tcfg.get("mc_threshold_sweep") or []:
        if any(_is_sweep_spec(s, t) for s in declared.values()):
            continue
        name = sweep_variant_name(t)
        if name in declared:  # plan.variants would replace the declared variant with the sweep's
            raise _err(f"trainsets.variants.{name}", f"the name of the MC threshold sweep's variant for "
                                                     f"threshold {t}, with another definition")
        sweep.append(name)
    trained = [*declared, *sweep] if (cfg.get("prms") or {}).get("include_trained", True) else []
    released = list((cfg.get("prms") or {}).get("models") or {})
    for name in released:
        if name in trained:
            raise _err(f"prms.models.{name}", "name clashes with a trained PRM variant (trainsets.variants "
                                              "or the MC threshold sweep)")
    for name in trained + released:
        if name.startswith(RESERVED_PRM_PREFIXES):
            key = f"prms.models.{name}" if name in released else f"trainsets.variants.{name}"
            raise _err(key, f"names starting with {' or '.join(RESERVED_PRM_PREFIXES)} are reserved for the "
                            "ProcessBench rows of critics and baselines")


# -- reading config files ---------------------------------------------------------------------------------
# Snakemake reads --configfile itself (JSON, else YAML through YTE); its YAML keeps the last of two equal
# keys silently. The workflow reads each file again with this loader (common.smk, before validation), so
# a repeated key, a YTE template or an alias bomb is an error naming the file and line.

class _StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key repeated in one mapping (YAML's last-wins would hide a typo)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: merging is what it is for
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key (a list): the schema reports it
                continue
            if first != key_node.start_mark.line + 1:
                raise ConfigError(f"{self.name}: line {key_node.start_mark.line + 1}: key {key!r} appears twice in "
                                  f"one mapping (first at line {first}); YAML would silently keep the last")
        return super().construct_mapping(node, deep)


def read_config_file(path: str | Path) -> dict:
    """One config file, read strictly: no repeated key, no YTE template (`__use_yte__`), at most
    MAX_CONFIG_NODES values with aliases expanded; errors name the file (and line)."""
    text = Path(path).read_text(encoding="utf-8")
    loader = _StrictLoader(text)
    loader.name = str(path)
    try:
        node = loader.get_single_node()
        if node is None:
            return {}
        n = _expanded_nodes_yaml(node, {})
        if n > MAX_CONFIG_NODES:
            raise ConfigError(f"{path}: expands to {n:,} values (at most {MAX_CONFIG_NODES:,}): YAML aliases "
                              "(*name) repeat a large block many times")
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file is a mapping of keys at the top level")
    if "__use_yte__" in data:
        # Snakemake has already run the template (and any Python in it) by now; this stops the run
        raise ConfigError(f"{path}: `__use_yte__` turns on YTE templating, which runs Python from the config "
                          "file; this workflow's configs are data only (write the values out)")
    return data


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


def load_config(*paths: str | Path, overrides: dict | None = None) -> dict:
    """Merge YAML files left to right (later wins, nested dicts merged) and validate."""
    merged: dict[str, Any] = {}
    for p in paths:
        deep_update(merged, read_config_file(p))
    if overrides:
        deep_update(merged, overrides)
    return validate_config(merged)


def deep_update(base: dict, new: dict) -> dict:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_update(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def model_entry(config: dict, role_or_name: str) -> dict:
    """The model entry for a role (`policy`, `completer`, `judge`, …) or a model name."""
    name = config.get("roles", {}).get(role_or_name, role_or_name)
    try:
        entry = dict(config["models"][name])
    except KeyError:
        raise ConfigError(f"config error at `models.{name}`: model not defined") from None
    entry["name"] = name
    return entry


def used_models(cfg: dict) -> set[str]:
    """Model entries some rule loads: the roles, the training base, released PRMs (and their reference
    models), the enabled critics and Best-of-N judges."""
    models, roles = cfg.get("models", {}), cfg.get("roles", {}) or {}
    names = set(roles.values())
    base = (cfg.get("training") or {}).get("base")
    if base:
        names.add(roles.get(base, base))
    for e in ((cfg.get("prms") or {}).get("models") or {}).values():
        names.update(n for n in (e.get("model"), e.get("ref_model")) if n)
    # a switched-off critic or judge (enabled: false) loads nothing
    names.update(e["model"] for e in ((cfg.get("critics") or {}).get("judges") or {}).values()
                 if e.get("enabled") is not False)
    names.update(j.get("model") for j in ((cfg.get("bon_judges") or {}).get("judges") or {}).values()
                 if j.get("enabled") is not False)
    names.update(p.get("model") for p in ((cfg.get("bon") or {}).get("policies") or {}).values())
    names.update(d.get(k) for d in (cfg.get("data_policies") or {}).values() for k in ("model", "completer"))
    if (cfg.get("search") or {}).get("prms") and cfg["search"].get("policy"):
        names.add(cfg["search"]["policy"])
    return {n for n in names if n in models}


def config_strings(value) -> set[str]:
    """Every string value of a config: the files the user named (`path`, `template_path`, a local model's
    `id`, …) among them, which tables.quarantine never moves, wherever they lie."""
    if isinstance(value, dict):
        return set().union(*map(config_strings, value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*map(config_strings, value)) if value else set()
    return {value} if isinstance(value, str) and value else set()


def hub_models_dir(config: dict) -> str:
    """Directory holding one linked snapshot per Hub model (rule download_model)."""
    return str((config.get("hub") or {}).get("models_dir") or "resources/hub").rstrip("/")


def model_path(config: dict, role_or_name: str) -> str:
    """Where a job loads a model from: a local directory for every source. Embedded models are converted
    into resources/models/<name>, Hub models linked into {hub.models_dir}/<name> by rule download_model,
    local models are their own directory."""
    entry = model_entry(config, role_or_name)
    if entry["source"] == "embedded":
        return f"resources/models/{entry['name']}"
    if entry["source"] == "hub":
        return f"{hub_models_dir(config)}/{entry['name']}"
    return entry["id"]
