"""Pinned source files: downloaded once (rules benchmark_file / processbench_file) and checksummed
(sha256, git blob sha1).
"""
from __future__ import annotations

import hashlib
import shutil
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from ..tables import atomic_path

DOWNLOAD_DIR = "resources/data"


def url_suffix(url: str) -> str:
    name = Path(urlparse(str(url)).path).name
    for suffix in (".jsonl.gz", ".jsonl", ".json", ".parquet"):
        if name.endswith(suffix):
            return suffix
    raise ValueError(f"{url}: cannot tell the file type from its name (.jsonl, .jsonl.gz, .json or .parquet)")


def downloaded_path(name: str, spec: dict) -> str:
    """Where rule `benchmark_file` keeps the copy of a `source: url` dataset entry."""
    if not spec.get("url"):
        raise ValueError(f"dataset '{name}': source url needs `url`")
    return f"{DOWNLOAD_DIR}/benchmarks/{name}{url_suffix(spec['url'])}"




def file_digests(path: str | Path) -> dict[str, str]:
    """sha256 of the file's bytes and its git blob id (sha1 of ``blob <size>\\0`` + bytes)."""
    data = Path(path).read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "git_blob_sha1": git_blob_sha1(data)}


def git_blob_sha1(data: bytes) -> str:
    """git's object id of these bytes as a blob (what `git ls-tree` lists for a file)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def verify_checksums(path: str | Path, expected: dict, what: str) -> None:
    """Raise ValueError naming ``what`` when the file's sha256 / git blob id differs from ``expected``
    (keys ``sha256`` and ``git_blob_sha1``; absent or null keys are not checked)."""
    wanted = {k: str(expected[k]).lower() for k in ("sha256", "git_blob_sha1") if expected.get(k)}
    if not wanted:
        return
    got = file_digests(path)
    for key, value in wanted.items():
        if got[key] != value:
            raise ValueError(f"{what}: {key} of {path} is {got[key]}, expected {value} "
                             "(a different file than the pinned one; fix the `url` or the checksum)")


def is_plain_path(url: str) -> bool:
    """Whether a source `url` is a plain path (no scheme; C:/ on Windows too): what fetch_file copies from
    the file system."""
    scheme = urlparse(str(url)).scheme
    return not scheme or (len(scheme) == 1 and str(url)[1:3] in (":\\", ":/"))


def fetch_file(url: str, dest: str | Path, checksums: dict, what: str) -> None:
    """Copy ``url`` (http(s):// or a plain path, so an air-gapped site can point at its own copy) to
    ``dest``, verify its checksums, then move it into place (tables.atomic_path: a temporary file of its
    own, so two fetches of one file never mix): a failed or wrong download never leaves a file that a
    later run would trust. Any other scheme is a ValueError (the config refuses it: config.base.url_problem)."""
    scheme = urlparse(str(url)).scheme.lower()
    if not (is_plain_path(url) or scheme in ("http", "https")):
        raise ValueError(f"{what}: url {url!r}: only https://, http:// or a plain path is read")
    with atomic_path(dest) as tmp:
        if scheme in ("http", "https"):
            with urllib.request.urlopen(url, timeout=120) as resp, open(tmp, "wb") as fh:
                shutil.copyfileobj(resp, fh)
        else:
            if not Path(url).is_file():
                raise FileNotFoundError(f"{what}: {url} not found or not a file")
            shutil.copyfile(url, tmp)
        verify_checksums(tmp, checksums, what)
