"""A training set tokenised ahead of training (rule tokenize_trainset, full and LoRA modes): the instances
of `data.training_instances` (token ids, step positions, aligned targets) in a Parquet file, so the GPU
job reads them instead of tokenising on every rank (single-threaded, while the GPUs wait).

The file records what its token ids depend on (the tokenizer's fingerprint after the step token is added,
the step format, max_length, label_type) and the data stats of `data.prepare_instances`; `read_tokens`
refuses a file made for anything else, naming the key, so a stale file is never trained on."""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from ..models.prm import ensure_step_token, step_format
from ..steps import StepFormat
from ..tables import read_table, table_meta, write_table
from .data import training_instances
from .settings import TrainingError, settings_from

log = logging.getLogger(__name__)

COLUMNS = ["instance_id", "input_ids", "step_pos", "step_targets"]
# bumped when the file's layout or meaning changes: an older file is refused, not misread
TOKENS_VERSION = 1


def tokenizer_fingerprint(tokenizer) -> str:
    """Identity of a tokenizer as far as token ids go: its class, vocabulary (with any added step token),
    special tokens and chat template."""
    h = hashlib.sha256()
    h.update(json.dumps([type(tokenizer).__name__, sorted(tokenizer.get_vocab().items()),
                         sorted(tokenizer.special_tokens_map.items(), key=str),
                         getattr(tokenizer, "chat_template", None)], default=str).encode())
    return h.hexdigest()[:16]


def token_key(tokenizer, fmt: StepFormat, max_length: int | None, label_type: str) -> dict:
    """What the token ids and targets of a tokens file depend on (recorded in it, checked on read)."""
    return {"version": TOKENS_VERSION, "tokenizer": tokenizer_fingerprint(tokenizer),
            "step_token_id": int(tokenizer.convert_tokens_to_ids(fmt.step_token)), "format": fmt.to_dict(),
            "max_length": max_length, "label_type": label_type}


def load_tokenizer(base_dir: str, step_token: str, trust_remote_code: bool = False):
    """The training base's tokenizer as train_prm has it (`prm.load_base` + `prm.ensure_step_token`),
    without the model's weights: the added step token gets the same id (the next free one).
    `trust_remote_code`: the base's model entry key, as prm.load_base takes it (never None: transformers
    would ask on stdin)."""
    from transformers import AutoTokenizer  # lazy: ~2 s of import, as prm.load_base

    tokenizer = AutoTokenizer.from_pretrained(base_dir, trust_remote_code=bool(trust_remote_code))
    ensure_step_token(tokenizer, None, step_token)
    return tokenizer


def write_tokens(instances: list[dict], stats: dict, key: dict, path: str | Path, trainset: str = "") -> None:
    """The instances as Parquet (ids and positions int32, targets float64 as trained on), with the key and
    the data stats in the file's metadata (tables.table_meta)."""
    df = pd.DataFrame({
        "instance_id": [it["instance_id"] for it in instances],
        "input_ids": [np.asarray(it["input_ids"], dtype=np.int32) for it in instances],
        "step_pos": [np.asarray(it["step_pos"], dtype=np.int32) for it in instances],
        "step_targets": [np.asarray(it["step_targets"], dtype=np.float64) for it in instances],
    }, columns=COLUMNS)
    write_table(df, path, None, meta={"tokens": key, "data": stats, "trainset": str(trainset)})


def tokenize_trainset(trainset: str, base_dir: str, settings: dict, label_type: str, out: str | Path) -> dict:
    """Rule tokenize_trainset: a trainset table -> its tokens file; returns the data stats. A bad row is a
    TrainingError naming its id, as in training (data.prepare_instances)."""
    settings = settings_from(settings)
    fmt = step_format(settings)
    tokenizer = load_tokenizer(base_dir, fmt.step_token, settings.get("trust_remote_code", False))
    instances, stats = training_instances(trainset, tokenizer, fmt, settings, label_type)
    write_tokens(instances, stats, token_key(tokenizer, fmt, settings["max_length"], label_type), out, trainset)
    return stats


def read_tokens(path: str | Path, tokenizer, fmt: StepFormat, max_length: int | None,
                label_type: str) -> tuple[list[dict], dict]:
    """(instances, data stats) of a tokens file, as data.training_instances gives them; TrainingError when
    the file was made for another tokenizer, step format, max_length or label_type."""
    meta = table_meta(path)
    want, got = token_key(tokenizer, fmt, max_length, label_type), meta.get("tokens") or {}
    diff = [k for k in want if got.get(k) != want[k]]
    if diff:
        raise TrainingError(f"{path}: tokens made with {', '.join(f'{k}={got.get(k)!r}' for k in diff)}; this "
                            f"training has {', '.join(f'{k}={want[k]!r}' for k in diff)} (rerun tokenize_trainset)")
    df = read_table(path, None, columns=COLUMNS)
    instances = [{"instance_id": str(r.instance_id), "input_ids": list(r.input_ids), "step_pos": list(r.step_pos),
                  "step_targets": [float(x) for x in r.step_targets]} for r in df.itertuples(index=False)]
    if not instances:
        raise TrainingError(f"{path}: no trainable instance")
    log.info("tokens %s: %d instances, %s", path, len(instances), meta.get("data"))
    return instances, meta.get("data") or {}
