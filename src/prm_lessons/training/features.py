"""Frozen-base step features: the hidden states of a head-only PRM's base at its step tokens, computed
once per text table and shared by every head-only PRM scored on it, or trained on it.

With `training.mode: head` every trained PRM is the same frozen base plus its own 2-class head, so the
base's forward pass, nearly all of a scoring job's compute, is identical for every variant. Rule
`step_features` runs it (`prm.frozen_base`) once per table (a benchmark's samples, the ProcessBench
cases); the scoring rules then apply each PRM's head to the stored features (`score_with_features`):
per (PRM, benchmark) jobs stay, but they no longer repeat the base. A PRM trained with resample heads
(training.resamples) gets their scores from the same features (`scores_and_resamples`).

Hidden states at a step token depend only on the tokens before it (causal attention), and
`steps.build_prm_input` tokenises step by step, so the features are exactly those the full PRM reads.
A PRM is scored from features only when the base fingerprint recorded in its prm.json at training
time equals the one of the features (same base weights, dtype and step-token embedding), and the step
format and max_length agree; anything else is an error naming both, never a silent mix.

Training reads them the same way (`training_features`): every head-only variant labelled on the sampled
training responses (MC, judge, consensus, checker) trains from one pass over those responses instead of
its own. A training instance is a response or a prefix of one (trainsets are cut after the first negative
step); its tokens must be a prefix of the stored row's tokens (checked), so by causal attention its step
features are the stored row's first ones.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import torch
from safetensors.torch import save_file

from ..models import prm
from ..steps import StepFormat, build_prm_input
from ..tables import open_safetensors, read_json
from .resamples import load_resample_heads

FEATURES_VERSION = 2  # 2: the token ids of every row (training checks its instances against them)


def compute_features(backbone, tokenizer, fmt, questions: Sequence[str], steps_list: Sequence[Sequence[str]],
                     max_length: int | None, batch_size: int = 8, device=None) -> dict:
    """Step features of every response: {"features": [sum of kept steps, hidden] float32,
    "n_steps": steps given per response, "n_kept": steps within max_length (whole steps),
    "input_ids": the token ids of every response (concatenated), "n_tokens": their count per response}."""
    device = device or torch.device("cpu")
    encs = [build_prm_input(tokenizer, str(q), list(s), fmt, max_length) for q, s in zip(questions, steps_list)]
    kept = [i for i, e in enumerate(encs) if e.n_steps_kept > 0]
    instances = [{"input_ids": encs[i].input_ids, "step_pos": encs[i].step_positions[:encs[i].n_steps_kept],
                  "step_targets": [0.0] * encs[i].n_steps_kept} for i in kept]
    hidden = int(backbone.config.hidden_size)
    feats = prm.step_features(backbone, instances, prm.pad_id(tokenizer), batch_size, device) if instances else []
    parts = [f["step_features"] for f in feats]  # row order: `kept` is ascending
    return {"features": torch.cat(parts) if parts else torch.zeros((0, hidden), dtype=torch.float32),
            "n_steps": torch.tensor([e.n_steps for e in encs], dtype=torch.int64),
            "n_kept": torch.tensor([e.n_steps_kept for e in encs], dtype=torch.int64),
            "input_ids": torch.tensor([t for e in encs for t in e.input_ids], dtype=torch.int64),
            "n_tokens": torch.tensor([len(e.input_ids) for e in encs], dtype=torch.int64),
            "tokens": sum(len(it["input_ids"]) for it in instances)}


def save_features(path: str | Path, feats: dict, meta: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: feats[k].contiguous() for k in ("features", "n_steps", "n_kept", "input_ids", "n_tokens")}
    save_file(tensors, str(path), metadata={"meta": json.dumps({"version": FEATURES_VERSION, **meta})})


def load_features(path: str | Path) -> tuple[dict, dict]:
    with open_safetensors(path) as f:  # a damaged file is named
        raw = (f.metadata() or {}).get("meta")
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    try:
        meta = json.loads(raw) if raw is not None else None
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: no step-features metadata (not written by rule step_features); rerun it")
    if meta.get("version") != FEATURES_VERSION:
        raise ValueError(f"{path}: features version {meta.get('version')} (this code reads {FEATURES_VERSION}); "
                         "rerun rule step_features")
    return tensors, meta


def check_base(where: str, meta: dict, fingerprint: str | None, fmt: dict, max_length: int | None) -> None:
    """A PRM (its base fingerprint, step format, max_length) may read these features; else a ValueError
    naming both sides."""
    if fingerprint != meta["base_fingerprint"]:
        raise ValueError(f"{where}: the PRM's base (fingerprint {fingerprint}) is not the base "
                         f"the features were computed with ({meta['base_fingerprint']}); rerun rule step_features")
    if StepFormat.from_dict(fmt) != StepFormat.from_dict(meta["format"]):
        raise ValueError(f"{where}: step format {fmt} != features' {meta['format']}")
    if max_length != meta["max_length"]:
        raise ValueError(f"{where}: max_length {max_length} != features' {meta['max_length']}")


def row_ids(df) -> list[str]:
    """Identity of the rows a features file was computed for (samples or ProcessBench cases)."""
    if "id" in df.columns:
        return df["id"].astype(str).tolist()
    return [f"{p}#{int(s)}" for p, s in zip(df["problem_id"], df["sample_idx"])]


def texts(df) -> tuple[list[str], list[list[str]]]:
    """(questions, steps per row) of a samples or ProcessBench table."""
    qcol = "problem" if "problem" in df.columns and "question" not in df.columns else "question"
    return df[qcol].astype(str).tolist(), [list(s) if s is not None else [] for s in df["steps"]]


def score_with_features(prm_dir: str | Path, features_path: str | Path, row_ids: Sequence[str],
                        max_length: int | None = None) -> tuple[list[list[float]], int]:
    """P(good step) of every step from stored base features and the PRM's head; steps beyond max_length
    get NaN (as in full scoring). Returns (scores per row, number of truncated rows)."""
    scores, truncated, _ = scores_and_resamples(prm_dir, features_path, row_ids, max_length, resamples=False)
    return scores, truncated


def scores_and_resamples(prm_dir: str | Path, features_path: str | Path, row_ids: Sequence[str],
                         max_length: int | None = None, resamples: bool = True):
    """score_with_features plus, for a PRM trained with resample heads (training.resamples,
    prm_lessons.training.resamples), each row's scores under every resample head: per row a list of R
    per-step lists (NaN beyond max_length), from the same stored features; None when the PRM has none
    (or `resamples` is off). Returns (scores, truncated rows, resample scores or None)."""
    prm_dir = Path(prm_dir)
    info = read_json(prm_dir / prm.FORMAT_FILE)
    feats, meta = load_features(features_path)
    where = f"PRM {prm_dir} with features {features_path}"
    if info.get("mode") != "head":
        raise ValueError(f"{where}: only head-only PRMs (training.mode: head) can be scored from base "
                         f"features; this one was trained with mode {info.get('mode')!r}")
    want = max_length if max_length is not None else info.get("max_length")
    check_base(where, meta, info.get("base_fingerprint"), info["format"], want)
    if list(row_ids) != list(meta["rows"]):
        raise ValueError(f"{where}: the features were computed for other rows ({len(meta['rows'])} rows from "
                         f"{meta['source']}); rerun rule step_features")
    heads = [prm.load_head(prm_dir, info)] + (load_resample_heads(prm_dir) if resamples else [])
    per_head = [_rows(_probs(h, feats["features"]), feats) for h in heads]
    per_row = [list(rs) for rs in zip(*per_head[1:])] if len(heads) > 1 else None
    return per_head[0], int((feats["n_kept"] < feats["n_steps"]).sum()), per_row


def _probs(head, features: torch.Tensor) -> list[float]:
    with torch.no_grad():
        return torch.softmax(head.eval()(features).float(), dim=-1)[:, 1].tolist()


def _rows(probs: list[float], feats: dict) -> list[list[float]]:
    """Flat per-step probabilities → one list per row, NaN for its steps beyond max_length."""
    scores, offset = [], 0
    for n, k in zip(feats["n_steps"].tolist(), feats["n_kept"].tolist()):
        scores.append(probs[offset:offset + k] + [math.nan] * (n - k))
        offset += k
    return scores


def training_features(paths: Sequence[str | Path], instances: Sequence[dict], fingerprint: str, fmt: StepFormat,
                      max_length: int | None) -> list[dict]:
    """Head-only training from stored features: for each training instance (`train_data.prepare_instances`:
    instance_id, input_ids, step_pos, step_targets) the dataset item the frozen base's own pass would give
    (`prm.step_features`), read from the features of the responses it was cut from. The instance's row is
    found by its id (`problem_id#sample_idx`); its token ids must be a prefix of that row's and its steps
    within the row's kept steps, else a ValueError naming the instance (never a silent mix)."""
    index: dict[str, tuple] = {}
    for path in paths:
        feats, meta = load_features(path)
        check_base(f"training features {path}", meta, fingerprint, fmt.to_dict(), max_length)
        tok_end = feats["n_tokens"].cumsum(0).tolist()
        feat_end = feats["n_kept"].cumsum(0).tolist()
        for i, rid in enumerate(meta["rows"]):
            if str(rid) in index:  # two responses under one id: which one an instance was cut from is unknown
                raise ValueError(f"features {path}: row id {rid!r} occurs twice in {list(map(str, paths))}")
            k = int(feats["n_kept"][i])
            index[str(rid)] = (path, feats, tok_end[i] - int(feats["n_tokens"][i]), tok_end[i], feat_end[i] - k, k)
    out = []
    for it in instances:
        iid = str(it["instance_id"])
        if iid not in index:
            raise ValueError(f"training instance {iid!r} is in none of the features files {list(map(str, paths))}; "
                             "rerun rule step_features")
        path, feats, t0, t1, f0, kept = index[iid]
        ids, n = list(it["input_ids"]), len(it["step_pos"])
        if len(ids) > t1 - t0 or feats["input_ids"][t0:t0 + len(ids)].tolist() != ids or n > kept:
            raise ValueError(f"training instance {iid!r}: its tokens are not a prefix of the response the features "
                             f"in {path} were computed for (other text or tokenizer); rerun rule step_features")
        out.append({"step_features": feats["features"][f0:f0 + n].clone(), "step_targets": it["step_targets"],
                    "n_tokens": len(ids), "input_ids": ids})
    return out
