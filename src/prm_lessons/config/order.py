"""Key order of the validated config, as the JSON Schema validator gave it: in every mapping the keys the
user wrote come first, in the order written (YAML files merged left to right), then the keys the defaults
filled, in the order the models declare them. Snakemake compares a job's params by their repr, so a dict
from the config with its keys in another order would rerun the job."""
from __future__ import annotations

import types
import typing

from pydantic import BaseModel


def _raw_default(field):
    """The default as the schema wrote it: {} for a section, the literal for a dict or list default."""
    if field is None or field.default_factory is None:
        return None if field is None else field.default
    value = field.default_factory()
    return {} if isinstance(value, BaseModel) else value


def _member(tp, value: dict):
    """The model of a union that a dumped mapping came from (by its keys and its Literal fields)."""
    for arg in typing.get_args(tp):
        arg = _unwrap(arg)
        if not (isinstance(arg, type) and issubclass(arg, BaseModel)) or not set(value) <= set(arg.model_fields):
            continue
        literal_ok = True
        for k, f in arg.model_fields.items():
            ann = _unwrap(f.annotation)
            if typing.get_origin(ann) is typing.Literal and k in value and value[k] not in typing.get_args(ann):
                literal_ok = False
        if literal_ok:
            return arg
    return None


def _unwrap(tp):
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def ordered(value, raw, tp):
    """`value` (a dumped model) with the keys of each mapping in the order described above; `raw` is what
    the user wrote at this place (or the schema's default there), `tp` the type of the place."""
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType) and isinstance(value, dict):
        tp = _member(tp, value) or next((a for a in map(_unwrap, typing.get_args(tp))
                                         if typing.get_origin(a) is dict or a is dict), None)
        return value if tp is None else ordered(value, raw, tp)
    raw_map = raw if isinstance(raw, dict) else {}
    if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(value, dict):
        keys = [k for k in raw_map if k in value] + [k for k in value if k not in raw_map]
        out = {}
        for k in keys:
            field = tp.model_fields.get(k)
            child = raw_map[k] if k in raw_map else _raw_default(field)
            out[k] = ordered(value[k], child, field.annotation) if field is not None else value[k]
        return out
    if origin is dict and isinstance(value, dict):
        sub = typing.get_args(tp)[1]
        keys = [k for k in raw_map if k in value] + [k for k in value if k not in raw_map]
        return {k: ordered(value[k], raw_map.get(k), sub) for k in keys}
    if origin is list and isinstance(value, list):
        sub = typing.get_args(tp)[0]
        items = raw if isinstance(raw, list) else []
        return [ordered(v, items[i] if i < len(items) else None, sub) for i, v in enumerate(value)]
    return value
