"""The local files a config reads: every plain-path `url` (an air-gapped site's own copy, fetched by a rule)
and every `path` of a `source: local` entry, found by walking the validated config, so a new section with
a local source is covered without being listed here.

They are checked when the workflow is planned (rules/common.smk, before any job) rather than by the config
models: a config is also validated where its files are not (a laptop checking a cluster config, the
rehearsal's config before its working folder is prepared). A missing file is an error naming its key, not a
job that fails minutes later in a download rule.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..data.processbench import PROCESSBENCH_SUBSETS
from ..data.sources import is_plain_path
from .names import config_error


def local_files(node, key: str = "") -> Iterator[tuple[str, str]]:
    """(key path, file path) of each local file the config reads; a `{subset}` url once per subset. An
    entry switched off (`enabled: false`) reads nothing; a url with `fallbacks` may be missing (the
    fallbacks are tried)."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from local_files(item, f"{key}.{i}" if key else str(i))
        return
    if not isinstance(node, dict) or node.get("enabled") is False:
        return
    url = node.get("url")
    if isinstance(url, str) and url and is_plain_path(url) and not node.get("fallbacks"):
        if "{subset}" in url:
            for subset in node.get("subsets") or PROCESSBENCH_SUBSETS:  # null: all four, as the loader reads
                yield f"{key}.url", url.replace("{subset}", str(subset))
        else:
            yield f"{key}.url", url
    if node.get("source") == "local" and isinstance(node.get("path"), str) and node["path"]:
        yield f"{key}.path", node["path"]
    for k, v in node.items():
        if isinstance(v, (dict, list)):
            yield from local_files(v, f"{key}.{k}" if key else str(k))


def check_local_files(config: dict, cwd: str | Path = ".") -> None:
    """A ConfigError naming the first key whose local file (relative to `cwd`, the working directory) does
    not exist."""
    for key, path in local_files(config):
        if not (Path(cwd) / path).exists():
            raise config_error(key, f"no such file or folder {path!r} (relative to the working directory "
                                    f"{Path(cwd).resolve()})")
