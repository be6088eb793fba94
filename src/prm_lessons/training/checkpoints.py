"""Checkpoints of a PRM run: they go to a separate directory (Snakemake deletes a job's outputs before it
runs, so checkpoints inside the output directory would not survive a requeue), stamped with a fingerprint
of the settings and trainset. A rerun with the same fingerprint resumes from the last complete checkpoint
there (SLURM requeue after preemption); different settings start over."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from ..tables import read_json, write_json

FINGERPRINT_FILE = "fingerprint.json"


def run_fingerprint(settings: dict, label_type: str, base_dir: str, trainset: str) -> str:
    h = hashlib.sha256()
    keep = {k: v for k, v in settings.items() if k not in ("mem_mb", "runtime", "threads", "keep_checkpoints",
                                                            "gpus", "processes", "gpus_scoring", "jit_checkpoint",
                                                            "save_steps", "save_total_limit", "logging_steps",
                                                            "base_params_b", "checkpoint_write_gbps",
                                                            "resamples", "report_to")}
    h.update(json.dumps({"settings": keep, "label_type": label_type, "base": str(base_dir)},
                        sort_keys=True, default=str).encode())
    with open(trainset, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


JIT_SENTINEL = "checkpoint-is-incomplete.txt"  # written by transformers' JIT checkpoint while it saves


def _complete(ckpt: Path) -> bool:
    """A checkpoint whose save finished: the Trainer writes trainer_state.json after weights and optimizer;
    a job killed mid-save (SIGKILL after SLURM's KillWait) leaves it out or leaves the JIT sentinel."""
    return (ckpt / "trainer_state.json").exists() and not (ckpt / JIT_SENTINEL).exists()


def _checkpoints(ckpt_dir: Path) -> list[Path]:
    """checkpoint-N subdirectories, by step."""
    found = [p for p in ckpt_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def _same_fingerprint(ckpt_dir: Path, fingerprint: str) -> bool:
    fp_file = ckpt_dir / FINGERPRINT_FILE
    return fp_file.exists() and read_json(fp_file).get("fingerprint") == fingerprint


def find_checkpoint(ckpt_dir: Path, fingerprint: str) -> str | None:
    """Read only: the last complete checkpoint made with these settings and data, else None."""
    if not ckpt_dir.exists() or not _same_fingerprint(ckpt_dir, fingerprint):
        return None
    done = [p for p in _checkpoints(ckpt_dir) if _complete(p)]
    return str(done[-1]) if done else None


def prepare_checkpoint_dir(ckpt_dir: Path, fingerprint: str) -> str | None:
    """Return the last complete checkpoint to resume from when `ckpt_dir` holds one made with the same
    settings and data (incomplete ones are removed: a resumed run rewrites them); otherwise empty the
    directory (a stale checkpoint from other settings must never be resumed). Rank 0 only."""
    if ckpt_dir.exists():
        last = find_checkpoint(ckpt_dir, fingerprint)
        if last:
            for p in _checkpoints(ckpt_dir):
                if not _complete(p):
                    shutil.rmtree(p)
            return last
        shutil.rmtree(ckpt_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    write_json({"fingerprint": fingerprint}, ckpt_dir / FINGERPRINT_FILE)
    return None


def resume_checkpoint(args, ckpt: Path, fingerprint: str) -> str | None:
    """The checkpoint this run resumes from (None: from the start). Only rank 0 checks and clears the
    checkpoint dir; the others wait for it, then only read (no concurrent rmtree on a shared filesystem)
    and find the same last checkpoint."""
    with args.main_process_first(local=False, desc="checkpoint directory"):
        if args.process_index == 0:
            return prepare_checkpoint_dir(ckpt, fingerprint)
        return find_checkpoint(ckpt, fingerprint)

