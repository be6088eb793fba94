"""The files generated from the config models: workflow/schemas/config.schema.json (JSON Schema, for
editors and readers) and docs/config-reference.md (one row per key: type, default, description).
tools/docs.py writes them (`make docs-check` fails on a stale one)."""
from __future__ import annotations

import json
import types
import typing
from pathlib import Path

import annotated_types
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from .base import MISSING, HubId, Name, Number, Threshold
from .model import Config

ROOT = Path(__file__).resolve().parents[3]
SCHEMA_JSON = "workflow/schemas/config.schema.json"
REFERENCE_MD = "docs/config-reference.md"


def _plain(value):
    """A default as the config dumps it (a model: its keys with defaults; absent keys left out)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return to_jsonable_python(value)


def json_schema() -> dict:
    """Config's JSON Schema with the default of every key (sections' defaults included)."""
    schema = Config.model_json_schema()
    defs = schema.get("$defs", {})
    for model in _models(Config):
        props = (schema if model is Config else defs.get(model.__name__, {})).get("properties", {})
        for name, field in model.model_fields.items():
            if field.default_factory is not None and name in props:
                props[name]["default"] = _plain(field.get_default(call_default_factory=True, validated_data={}))
    schema["title"] = "prm-lessons workflow configuration"
    schema["description"] = ("Generated from prm_lessons.config (`python tools/docs.py write`); edit the models, "
                             "not this file. Unknown keys are errors.")
    return schema


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=1, ensure_ascii=False) + "\n"


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """Every model class reachable from `root`'s fields."""
    seen: list[type[BaseModel]] = []

    def visit(tp):
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp in seen:
                return
            seen.append(tp)
            for f in tp.model_fields.values():
                visit(f.annotation)
            return
        for arg in typing.get_args(tp):
            visit(arg)

    visit(root)
    return seen


# -- docs/config-reference.md ---------------------------------------------------------------------------

_NAMED = {id(Number): "number", id(Name): "name", id(HubId): "Hub id", id(Threshold): "number or `tune`"}
_BOUNDS = {annotated_types.Ge: "≥", annotated_types.Gt: ">", annotated_types.Le: "≤", annotated_types.Lt: "<"}


def _constraints(metadata) -> str:
    out = []
    for m in metadata:
        for cls, sign in _BOUNDS.items():
            if isinstance(m, cls):
                out.append(f"{sign} {next(iter(vars(m).values()))}")
        if isinstance(m, annotated_types.MinLen) and m.min_length:
            out.append(f"at least {m.min_length}")
        if isinstance(m, annotated_types.MaxLen):
            out.append(f"at most {m.max_length}")
        pattern = getattr(m, "pattern", None)
        if isinstance(pattern, str):
            out.append(f"matching `{pattern}`")
    return ", ".join(out)


def _type(tp) -> str:
    """A field's type in words (`integer ≥ 1`, `list of name`, `map name → section`)."""
    if id(tp) in _NAMED:
        return _NAMED[id(tp)]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        base = _type(args[0])
        extra = _constraints(args[1:])
        return f"{base} {extra}" if extra else base
    if origin in (typing.Union, types.UnionType):
        parts = [_type(a) for a in args if a is not MISSING]
        return " or ".join(dict.fromkeys(parts))
    if origin is typing.Literal:
        return " \\| ".join(f"`{json.dumps(a)}`" for a in args)
    if origin is list:
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return f"map {_type(args[0])} → {_type(args[1])}"
    if tp is type(None):
        return "null"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "section"
    return {int: "integer", float: "number", str: "string", bool: "boolean"}.get(tp, "any")


def _default(field) -> str:
    if field.default is MISSING:
        return "*(absent)*"
    if field.is_required():
        return "*(required)*"
    value = field.get_default(call_default_factory=True, validated_data={})
    if isinstance(value, BaseModel):
        return "*(section)*"
    text = json.dumps(_plain(value), ensure_ascii=False)
    return f"`{text}`" if len(text) <= 60 else "*(see the models)*"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _nested(tp) -> list[tuple[str, type[BaseModel]]]:
    """The models a field holds, with the path suffix they sit at (`` for a section, `.<name>` for the
    values of a map, `[]` for the items of a list)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [("", tp)]
    if origin is typing.Annotated:
        return _nested(args[0])
    if origin in (typing.Union, types.UnionType):
        return [n for a in args for n in _nested(a)]
    if origin is dict:
        return [(f".<{'name' if args[0] is Name else 'key'}>{s}", m) for s, m in _nested(args[1])]
    if origin is list:
        return [(f"[]{s}", m) for s, m in _nested(args[0])]
    return []


def _sections(model: type[BaseModel], path: str, out: list[tuple[str, type[BaseModel]]]) -> None:
    """(path, model) of every section; a model met again (a dataset entry under `benchmarks` after
    `problems`) is listed at its new path but not walked again (its keys are documented at the first)."""
    first = any(m is model for _, m in out)
    out.append((path, model))
    if first:
        return
    for name, field in model.model_fields.items():
        for suffix, sub in _nested(field.annotation):
            sub_path = f"{path}.{name}{suffix}" if path else f"{name}{suffix}"
            if sub_path.count(".parts.") == 0:
                _sections(sub, sub_path, out)


def _anchor(path: str) -> str:
    return "#" + "".join(ch for ch in path.lower() if ch.isalnum() or ch in "_- ").replace(" ", "-")


def _variant(model: type[BaseModel]) -> str:
    """` (adapter qwen_prm, ...)` for a member of a union told apart by a Literal key, else ''."""
    field = model.model_fields.get("adapter")
    ann = field and typing.get_origin(field.annotation) is typing.Literal and typing.get_args(field.annotation)
    return f" (adapter {', '.join(ann)})" if ann else ""


def model_keys() -> list[str]:
    """Every key path of the reference (`section.key`, `models.<name>.dtype`, `bon.more_n[].n`)."""
    sections: list[tuple[str, type[BaseModel]]] = []
    _sections(Config, "", sections)
    return [f"{path}.{name}" if path else name for path, model in sections for name in model.model_fields]


def reference_markdown() -> str:
    """docs/config-reference.md: one table per section (nested sections under their own heading)."""
    sections: list[tuple[str, type[BaseModel]]] = []
    _sections(Config, "", sections)
    lines = ["# Config reference", "",
             "Generated from the models in `src/prm_lessons/config/` "
             "(`prm_lessons.config.docs.reference_markdown`);",
             "edit the models, not this file. How the config is validated: "
             "[config-validation.md](config-validation.md);",
             "how to write overlays, ablations and seed replicas: [config/README.md](../config/README.md).", "",
             "*(absent)*: the key has no default and stays absent unless given (adding it later changes no job's",
             "params); *(section)*: a nested section, documented under its own heading.", ""]
    documented: dict[type, str] = {}
    variant = ("", "")  # (path, note) of the union member being documented: its nested sections say so too
    for path, model in sections:
        if not path:
            continue
        note = _variant(model)
        if note:
            variant = (path, note)
        elif path.startswith(variant[0] + ".") and variant[0]:
            note = variant[1]
        lines += [f"{'#' * min(2 + path.count('.'), 4)} `{path}`{note}", ""]
        if model in documented:
            lines += [f"The same keys as [`{documented[model]}`]({_anchor(documented[model])}).", ""]
            continue
        documented[model] = path
        if vars(model).get("__doc__"):
            lines += [_cell(model.__doc__), ""]
        if not model.model_fields:
            lines += ["No keys.", ""]
            continue
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():
            lines.append(f"| `{name}` | {_cell(_type(field.annotation))} | {_cell(_default(field))} | "
                         f"{_cell(field.description or '')} |")
        lines.append("")
    top = ["## Sections", "", "| key | description |", "|---|---|"] + [
        f"| [`{name}`](#{name}) | {_cell(field.description or '')} |" for name, field in Config.model_fields.items()]
    return "\n".join(lines[:9] + top + [""] + lines[9:]).rstrip() + "\n"


GENERATED = {SCHEMA_JSON: json_schema_text, REFERENCE_MD: reference_markdown}


def key_exists(path: str) -> bool:
    """Whether a dotted key path (`sampling.n`, `models.smollm2.dtype`, `bon.more_n.0.n`,
    `prms.models.<name>.params.step_tag`, `analysis.*`) names a key of the models: any segment stands for a
    map's key or a list's index, `*` for any key."""
    return _walk([Config], path.split("."))


def _walk(candidates: list, parts: list[str]) -> bool:
    if not parts:
        return True
    return any(_walk([sub], parts[1:]) for tp in candidates for sub in _step(tp, parts[0]))


def _step(tp, part: str) -> list:
    """The types `part` can lead to from type `tp` (none: no such key)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _step(args[0], part)
    if origin in (typing.Union, types.UnionType):
        return [s for a in args for s in _step(a, part)]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if part == "*":
            return [f.annotation for f in tp.model_fields.values()]
        field = tp.model_fields.get(part)
        return [field.annotation] if field else []
    if origin in (dict, list):
        return [args[-1] if args else typing.Any]
    if tp in (dict, list, typing.Any):
        return [typing.Any]
    return []
