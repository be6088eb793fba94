"""Upload of a trained PRM directory to the Hugging Face Hub (rule `upload_prm`, off unless
`hub.upload.enabled`): every file of the directory and its model card, in one commit, through
huggingface_hub. The token is huggingface_hub's own (HF_TOKEN, or `hf auth login` on the host that runs
the rule); nothing here reads or stores it."""
from __future__ import annotations

from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi

from .model_card import CARD_FILE


def upload_prm(prm_dir: str | Path, repo_id: str, card: str, *, private: bool = True, api=None,
               commit_message: str | None = None) -> dict:
    """Create `repo_id` (a model repository; `private` when new, an existing one is kept as it is) and
    commit the directory's files with `card` as README.md. Returns what was uploaded (a receipt)."""
    prm_dir = Path(prm_dir)
    files = sorted(p for p in prm_dir.rglob("*") if p.is_file() and p.relative_to(prm_dir).as_posix() != CARD_FILE)
    if not files:
        raise FileNotFoundError(f"{prm_dir}: no files to upload")
    ops = [CommitOperationAdd(path_in_repo=p.relative_to(prm_dir).as_posix(), path_or_fileobj=str(p)) for p in files]
    ops.append(CommitOperationAdd(path_in_repo=CARD_FILE, path_or_fileobj=card.encode("utf-8")))
    api = api or HfApi()
    url = api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
    commit = api.create_commit(repo_id, operations=ops, repo_type="model",
                               commit_message=commit_message or f"Upload the PRM {prm_dir.name} (prm-lessons)")
    return {"repo_id": repo_id, "url": str(url), "commit": getattr(commit, "oid", None),
            "commit_url": getattr(commit, "commit_url", None), "private": private,
            "files": [op.path_in_repo for op in ops]}
