"""Hub models fetched once, outside GPU jobs: rule `download_model` snapshots each `source: hub` model at
its pinned `revision` into the Hugging Face cache (`hub.cache_dir`, else HF_HUB_CACHE / HF_HOME) and
materialises `{hub.models_dir}/{name}/` with links to the snapshot files. GPU jobs load that local
directory with HF_HUB_OFFLINE=1, exactly as they load the converted embedded model.

Online, the repo's file list comes from the Hub; with HF_HUB_OFFLINE=1 it comes from the cache (the tree
listing huggingface_hub stores, else the snapshot folder), so a site that fills the cache elsewhere (or
the CPU rehearsal's stand-in cache) goes through the same code.
"""
from __future__ import annotations

import fnmatch
import logging
import os
import re
from pathlib import Path

log = logging.getLogger(__name__)

COMMIT_RE = re.compile(r"[0-9a-f]{40}")
# config, tokenizer and generation files (tokenizer.model: SentencePiece; *.tiktoken: tiktoken ranks)
SIDE_PATTERNS = ("*.json", "*.model", "*.txt", "*.jinja", "*.tiktoken")
# pickled trainer state some repos ship beside their weights: never weights, never loaded
NOT_WEIGHTS = {"training_args.bin"}
# rules that may reach the network (downloads on the submit host; upload_prm: the optional Hub upload);
# every other job runs offline
ONLINE_RULES = frozenset({"download_model", "upload_prm", "problems", "processbench", "human_labels",
                          "math_shepherd_labels", "trl_labels", "benchmark_file",
                          "processbench_file"})


class HubOfflineError(RuntimeError):
    """A Hub model is not in the cache and HF_HUB_OFFLINE=1 forbids fetching it; the message is one line
    saying what to set."""


def offline_message(repo_id: str, revision: str, key: str | None = None, cache_dir: str | None = None) -> str:
    """What to do when `repo_id`@`revision` is missing from the cache of an offline run."""
    entry = f"`{key}`" if key else "the model entry"
    cache = f" --cache-dir {cache_dir}" if cache_dir else ""
    return (f"{key + ': ' if key else ''}{repo_id}@{revision} is not in the Hugging Face cache and HF_HUB_OFFLINE=1 "
            f"forbids downloading it (make run sets it): run with HF_HUB_OFFLINE=0 (make run HF_HUB_OFFLINE=0 ...), "
            f"or fetch it first with `hf download {repo_id} --revision {revision}{cache}`, or point {entry} at a "
            f"folder holding the model (`source: local`, `id: <folder>`)")


def _offline_miss(exc: BaseException) -> bool:
    """Whether `exc` is huggingface_hub refusing the network: the file is not cached and offline mode is on."""
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled  # lazy: as in _offline

    return isinstance(exc, (LocalEntryNotFoundError, OfflineModeIsEnabled))


def job_offline(rule: str) -> bool:
    """Set HF_HUB_OFFLINE=1 for every job but the download/data rules (call before importing
    huggingface_hub: it reads the variable at import). Returns whether the job is offline."""
    if rule in ONLINE_RULES:
        return False
    os.environ["HF_HUB_OFFLINE"] = "1"
    return True


def select_files(repo_files: list[str], trust_remote_code: bool = False) -> list[str]:
    """The files a model directory needs, from a repo's file list: the safetensors weights when the repo
    has any, else its `*.bin` weights (Math-Shepherd and the Skywork PRMs ship only .bin), the config and
    tokenizer files, and `*.py` only when the entry allows remote code. Top-level files only: subfolders
    hold other formats (`original/`) or documents, never what transformers/vLLM load."""
    top = [f for f in repo_files if "/" not in f]
    safetensors = [f for f in top if f.endswith(".safetensors")]
    weights = safetensors or [f for f in top if f.endswith(".bin") and f not in NOT_WEIGHTS]
    if not weights:
        raise FileNotFoundError(f"no *.safetensors or *.bin weights among the repo files {sorted(top)}")
    patterns = SIDE_PATTERNS + (("*.py",) if trust_remote_code else ())
    side = [f for f in top if any(fnmatch.fnmatch(f, p) for p in patterns)]
    return sorted(set(weights) | set(side))


def _offline() -> bool:
    from huggingface_hub import constants  # lazy: HF_HUB_OFFLINE must be set first (job_offline)

    return bool(constants.HF_HUB_OFFLINE)


def _cached_files(repo_id: str, revision: str, cache_dir: str | None) -> list[str]:
    """The repo's file list from the cache: the tree listing snapshot_download records, else the files
    present in the snapshot folder of that revision."""
    from huggingface_hub import get_cached_repo_tree  # lazy: as in _offline
    from huggingface_hub.errors import CachedRepoTreeNotFoundError  # lazy: as in _offline

    try:
        return [f.path for f in get_cached_repo_tree(repo_id, revision=revision, cache_dir=cache_dir)]
    except CachedRepoTreeNotFoundError:
        pass
    folder = Path(_snapshot(repo_id, revision, cache_dir, allow_patterns=None))
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _snapshot(repo_id, revision, cache_dir, allow_patterns) -> str:
    from huggingface_hub import snapshot_download  # lazy: as in _offline

    return snapshot_download(repo_id, revision=revision, cache_dir=cache_dir, allow_patterns=allow_patterns,
                             local_files_only=_offline())


def repo_files(repo_id: str, revision: str, cache_dir: str | None = None) -> list[str]:
    """All files of the repo at `revision`: from the Hub online, from the cache with HF_HUB_OFFLINE=1."""
    if _offline():
        return _cached_files(repo_id, revision, cache_dir)
    from huggingface_hub import HfApi  # lazy: as in _offline

    return HfApi().list_repo_files(repo_id, revision=revision)


def snapshot(repo_id: str, revision: str, cache_dir: str | None = None,
             trust_remote_code: bool = False) -> tuple[Path, list[str]]:
    """The repo at `revision` in the HF cache, with only the files a job loads (`select_files`):
    (snapshot directory, those files). Offline it resolves the cached snapshot."""
    files = select_files(repo_files(repo_id, revision, cache_dir), trust_remote_code)
    return Path(_snapshot(repo_id, revision, cache_dir, allow_patterns=files)), files


def download_model(repo_id: str, revision: str, out_dir: str | Path, *, cache_dir: str | None = None,
                   trust_remote_code: bool = False, key: str | None = None) -> dict:
    """Snapshot `repo_id` at `revision` into the HF cache and fill `out_dir` with links to the selected
    files. Writes `out_dir/.revision` (the commit it got). Returns what was done. Offline and not cached:
    HubOfflineError naming `key` (the config's `models.<name>`)."""
    if not revision:
        raise ValueError(f"{repo_id}: no revision given (pin a commit under models.<name>.revision)")
    try:
        snap, files = snapshot(repo_id, revision, cache_dir, trust_remote_code)
    except Exception as exc:
        if not _offline_miss(exc):
            raise
        raise HubOfflineError(offline_message(repo_id, revision, key, cache_dir)) from None
    missing = [f for f in files if not (snap / f).exists()]
    if missing:
        raise FileNotFoundError(f"{repo_id}@{revision}: snapshot {snap} lacks {missing[:5]}")
    commit = snap.name  # huggingface_hub names snapshot folders by commit
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in files:
        link = out_dir / f
        if link.is_symlink() or link.exists():
            link.unlink()
        # absolute link to the snapshot entry (itself a link into blobs/): the cache must be visible from
        # the compute nodes, i.e. on the shared file system
        link.symlink_to(os.path.abspath(snap / f))
    (out_dir / ".revision").write_text(commit + "\n")
    if not COMMIT_RE.fullmatch(revision):
        log.warning("%s: revision %r is not a commit; it resolved to %s: pin that under models.<name>.revision",
                    repo_id, revision, commit)
    weights = [f for f in files if f.endswith((".safetensors", ".bin"))]
    log.info("%s@%s -> %s: %d files (%d weight files) linked from %s", repo_id, commit, out_dir, len(files),
             len(weights), snap)
    return {"repo_id": repo_id, "revision": revision, "commit": commit, "files": files, "snapshot": str(snap)}
