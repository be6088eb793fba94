"""The building blocks of the config models: the section base class (unknown keys are errors), numbers,
names, Hugging Face ids, and the error a cross-check raises (its key path relative to the model)."""
from __future__ import annotations

import difflib
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit

from pydantic import (
    MISSING,
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..data.sources import is_plain_path
from .names import KEY_SHOWN, NAME_MAX, hub_id_problem, name_problem, text_problem

__all__ = ["MISSING", "did_you_mean", "url_problem", "Section", "OpenSection", "Number", "Name",
           "HubId", "Text", "unique", "fail", "given", "then"]


def fail(key: str, msg: str) -> PydanticCustomError:
    """A check's error: `key` is the path below the model that raises it ('' = the model itself)."""
    return PydanticCustomError("config", "{msg}", {"key": key, "msg": msg})


def url_problem(url: str, checksummed: bool) -> str | None:
    """Why a source `url` cannot be fetched as the config means it (prm_lessons.data.sources.fetch_file), or
    None: https://; http:// only with a checksum (nothing protects it in transit, and nothing would
    check what arrived); a plain path (an air-gapped site's own copy; that it exists is checked when the
    workflow is planned, config.local_files). Not file://: a plain path says the same without the URL
    rules (`file://data/x.jsonl` names the host `data` and the file /x.jsonl), so one spelling is read.
    No other scheme (it would be read as a path and fail in the job)."""
    parts = urlsplit(str(url))
    scheme = parts.scheme.lower()
    if not str(url).isprintable():  # a tab, a line break, a NUL: no file or URL is named so on purpose
        return "a control character (a tab, a line break) in the URL or path"
    if is_plain_path(url):
        return None
    if any(c.isspace() for c in str(url)):
        return "white space in a URL (percent-encode it: %20)"
    if scheme in ("http", "https") and (not parts.hostname or "@" in parts.netloc):
        return (f"an {scheme}:// URL names its host after //: {scheme}://host/path" if not parts.hostname else
                "a URL with a user name or password (the config and the logs would hold them; a private "
                "mirror reads its credentials from the environment, e.g. ~/.netrc)")
    if scheme == "https":
        return None
    if scheme == "http":
        return None if checksummed else (
            "an http:// URL without a checksum (sha256 or git_blob_sha1): the download is not protected in "
            "transit and nothing would check it; use https:// or pin the file's checksum")
    if scheme == "file":
        path = unquote(parts.path) if parts.netloc in ("", "localhost") and parts.path.startswith("/") else None
        return ("a file:// URL is not read here: give the file's plain path" +
                (f" ({path})" if path else " (absolute, or relative to the working directory)"))
    return (f"URL scheme {scheme!r} is not read here (https://, http:// with a checksum, or a plain path)")


def did_you_mean(key, allowed) -> str:
    """'; did you mean `<nearest allowed key>`?' for a mistyped key, '' when none is close."""
    close = difflib.get_close_matches(str(key), [str(k) for k in allowed], n=1)
    return f"; did you mean `{close[0]}`?" if close else ""


def given(value) -> bool:
    """Whether an optional key without a default was given (MISSING: absent from the config)."""
    return value is not MISSING


class Section(BaseModel):
    """A config section: known keys only (a typo in a sweep is an error naming the key), strict types (no
    "1" for 1, no true for 1), and no default filled for a key that has none (MISSING: it stays absent, so
    adding such a key later changes no job's params)."""
    model_config = ConfigDict(extra="forbid", strict=True, protected_namespaces=(), validate_default=False,
                              use_attribute_docstrings=False)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted((k for k in data if k not in cls.model_fields), key=str)
            if unknown and cls.model_config.get("extra") == "forbid":
                allowed = ", ".join(sorted(cls.model_fields)) or "none"
                hint = did_you_mean(unknown[0], cls.model_fields) if len(str(unknown[0])) <= KEY_SHOWN else ""
                raise PydanticCustomError("config", "{msg}", {
                    "key": unknown[0], "msg": f"unknown key{hint} (allowed: {allowed})"})
        return data


class OpenSection(Section):
    """A section that passes unknown keys through (none of the shipped schema's objects but `critic`'s
    shared settings, which only the sections that reference it close)."""
    model_config = ConfigDict(extra="allow")


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PydanticCustomError("config", "{msg}", {"key": "", "msg": f"{value!r} is not of type 'number'"})
    return value


# a JSON Schema number: an int stays an int (a default of 1 is dumped as 1, not 1.0), a bool is no number
Number = Annotated[int | float, BeforeValidator(_number), WithJsonSchema({"type": "number"})]


def _name(value):
    problem = name_problem(value)
    if problem:
        raise PydanticCustomError("config", "{msg}", {"key": "", "msg": problem})
    return value


Name = Annotated[str, BeforeValidator(_name), WithJsonSchema({
    "type": "string", "pattern": "^[A-Za-z0-9_-]+$", "maxLength": NAME_MAX,
    "description": "A name (model, PRM, critic judge, problem set, benchmark, trainset variant, ProcessBench "
                   "subset): letters, digits, '_' and '-' only, at most 64; not `average` and not starting with "
                   "`_`, `critic-` or `baseline_` (rows the tables add)."})]


def _text(value):
    problem = text_problem(value)
    if problem:
        raise PydanticCustomError("config", "{msg}", {"key": "", "msg": problem})
    return value


# free text that a renderer prints (a label, a reason under a table, a file name in a caption): the one
# text rule (prm_lessons.text_rule); tests/config/test_base_text_keys.py finds every such key of the models
Text = Annotated[str, AfterValidator(_text)]


def _hub_id(value):
    if not isinstance(value, str):
        raise PydanticCustomError("config", "{msg}", {"key": "", "msg": f"{value!r} is not of type 'string'"})
    problem = hub_id_problem(value)
    if problem:
        raise PydanticCustomError("config", "{msg}", {"key": "", "msg": problem})
    return value


HubId = Annotated[str, BeforeValidator(_hub_id), WithJsonSchema({
    "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$", "maxLength": 96,
    "description": "A Hugging Face repository id: `name` or `org/name`."})]


def _unique(items: list) -> list:
    seen = []
    for i, x in enumerate(items):
        if x in seen:
            raise PydanticCustomError("config", "{msg}", {"key": "", "msg": f"{items!r} has non-unique elements"})
        seen.append(x)
    return items


unique = AfterValidator(_unique)


def then(model: BaseModel, cond: str, required=(), strings=(), nonempty=()) -> None:
    """The `then` of a condition (`cond`, e.g. "source: local", named in the message): keys that must be
    given, values that must be strings, strings that must not be empty."""
    for key in required:
        if key not in model.model_fields_set:
            raise fail(key, f"missing required value (with `{cond}`)")
    for key in strings:
        value = getattr(model, key)
        if not isinstance(value, str):
            raise fail(key, f"{value!r} is not of type 'string' (with `{cond}`)")
    for key in nonempty:
        if getattr(model, key) == "":
            raise fail(key, f"'' should be non-empty (with `{cond}`)")


def _threshold(value):
    if value == "tune" or value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    raise PydanticCustomError("config", "{msg}", {"key": "", "msg": f"{value!r} is not a number or 'tune'"})


# a ProcessBench threshold: a number, or 'tune' (chosen by processbench_eval.tune_on)
Threshold = Annotated[int | float | str, BeforeValidator(_threshold), WithJsonSchema(
    {"anyOf": [{"type": "number"}, {"const": "tune"}]})]


def when(**rules: dict) -> ConfigDict:
    """The JSON Schema `if`/`then` of a model's conditional keys, for editors (the model's validator is what
    checks them): when("source", local=["path"]) → if source is local, path is required."""
    (key, branches), = rules.items()
    return ConfigDict(json_schema_extra={"allOf": [
        {"if": {"properties": {key: {"const": value}}, "required": [key]}, "then": {"required": required}}
        for value, required in branches.items()]})
