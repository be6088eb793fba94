"""The scorers of search candidates (PRM-guided greedy search, prm_lessons.evaluation.search): full re-scoring of
prefix + candidate, or incremental scoring on the KV cache of the shared prefix.

A request is (key, question, prefix steps, candidate steps); the answer is one score per candidate: the
PRM's score of the candidate as the step after the prefix (NaN when it does not fit max_length).
Imports torch: rule glue builds the scorer and hands it to the search (whose module imports no torch).
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from ..scoring.adapters import Adapter, SkyworkAdapter, StepHeadAdapter
from ..scoring.batch import ScoreStats, score_encoded
from ..scoring.heads import HEAD_PREFIX
from ..steps import build_prm_input

log = logging.getLogger(__name__)


class FullRescoringScorer:
    """Every candidate scored as a whole response (prefix + candidate), batched by score_encoded. Works for
    every adapter (an ORM reads its one score): the fallback where incremental scoring is not possible."""

    incremental = False

    def __init__(self, adapter: Adapter, batch_tokens: int = 16384, batch_size: int = 64):
        self.adapter, self.batch_tokens, self.batch_size = adapter, batch_tokens, batch_size
        self.stats = ScoreStats()
        self.tokens_by_key: dict = {}

    @property
    def tokens_scored(self) -> int:
        return self.stats.tokens

    def score(self, requests) -> list[list[float]]:
        encs, owner = [], []
        for r, (_, question, prefix, cands) in enumerate(requests):
            for c in cands:
                encs.append(self.adapter.encode(question, list(prefix) + [c]))
                owner.append(r)
        keep = [i for i, e in enumerate(encs) if e.input_ids]
        scored = score_encoded(self.adapter, [encs[i] for i in keep], self.batch_tokens, self.batch_size, self.stats)
        flat = [math.nan] * len(encs)
        for i, s in zip(keep, scored):
            # a step that fell outside max_length has no score (never a neighbour's)
            if s and (self.adapter.outcome or encs[i].n_kept == encs[i].n_steps):
                flat[i] = float(s[-1])
        out: list[list[float]] = [[] for _ in requests]
        for r, v, e in zip(owner, flat, encs):
            out[r].append(v)
            self.tokens_by_key[requests[r][0]] = self.tokens_by_key.get(requests[r][0], 0) + len(e.input_ids)
        return out

    def release(self, key) -> None:
        """Nothing is kept between calls."""


@dataclass
class _Parts:
    base: object  # the causal transformer (takes past_key_values)
    prob: object  # hidden states -> the step score
    prefix_ids: object  # (question, steps) -> ids of the input up to and including the last step's tag
    piece_ids: object  # step -> its ids + the step tag (what follows a prefix)


def _incremental_parts(adapter: Adapter) -> _Parts | None:
    """How to score a step on the cached prefix, for PRMs whose input is tokenised piecewise (prompt, then
    each step's ids + a step tag) and whose score at the tag is a head on a causal base: the trained PRMs
    and the Qwen PRM heads (steps.build_prm_input) and Skywork (its adapter's bos + question + "\n", each
    step + the "\n" id), as loaded here. None otherwise: Hub code run through trust_remote_code (its forward
    is not known to take past_key_values), and the adapters whose input is not a prefix plus appended
    steps (RLHFlow's chat turns, Math-Shepherd's "Step k:" text tokenised as a whole, Eurus' cumulative
    log-ratio against a reference model, an ORM's one score at the end of a closed chat)."""
    m = adapter.model
    tok = adapter.tokenizer

    def head_prob(head):
        def prob(h):
            logits = head(h).float()
            return torch.sigmoid(logits[..., 0]) if logits.shape[-1] == 1 else torch.softmax(logits, dim=-1)[..., 1]
        return prob

    if isinstance(adapter, StepHeadAdapter) and adapter.step_tag_id is not None:
        if hasattr(m, "backbone") and hasattr(m, "head"):  # prm.ProcessRewardModel (trained PRMs)
            base, head = m.backbone, m.head
        elif getattr(m, "kind", None) == "qwen_prm" and hasattr(m, "model"):  # _HeadModel built here
            base, head = m.model, getattr(m, HEAD_PREFIX["qwen_prm"])
        else:
            return None
        sid = adapter.step_tag_id
        return _Parts(base, head_prob(head),
                      lambda q, steps: build_prm_input(tok, q, list(steps), adapter.fmt).input_ids,
                      lambda s: list(tok(s, add_special_tokens=False, split_special_tokens=True)["input_ids"]) + [sid])
    if isinstance(adapter, SkyworkAdapter) and getattr(m, "kind", None) == "skywork" and hasattr(m, "model"):
        summary, nl = m.v_head.summary, adapter.step_token_id

        def piece(s):
            return list(tok.encode(s, add_special_tokens=False)) + [nl]

        def prefix(q, steps):  # SkyworkAdapter.encode without its max_length cut
            return list(tok.encode((tok.bos_token or "") + q + "\n", add_special_tokens=False)) + [
                t for s in steps for t in piece(s)]

        return _Parts(m.model, lambda h: torch.sigmoid(summary(h).float()[..., 0]), prefix, piece)
    return None


class IncrementalScorer:
    """Candidates scored on the KV cache of their shared prefix. Per key (a problem) the cache of
    prompt + chosen steps is kept: the first request runs the base over the prompt once, and each candidate
    costs only its own tokens + the step token. When the next request's prefix is the previous one plus one
    of the previous candidates (the step search kept), that candidate's cache rows are appended: the chosen
    step is never run again. Candidates of all requests go through the base together (left-padded prefix
    caches, explicit positions), at most `batch_tokens` cached + new tokens per pass.

    Exact: `steps.build_prm_input` tokenises the prompt, each step and the step token piecewise, so the
    concatenated ids equal the full input's, and causal attention makes the hidden state at a step token
    a function of the tokens before it."""

    incremental = True

    def __init__(self, adapter: Adapter, batch_tokens: int = 16384, batch_size: int = 64):
        parts = _incremental_parts(adapter)
        if parts is None:
            raise ValueError(f"adapter {adapter.kind}: no incremental scoring (use FullRescoringScorer)")
        self.adapter, self.parts = adapter, parts
        self.base, self.prob = parts.base, parts.prob
        self.batch_tokens, self.batch_size = batch_tokens, batch_size
        self.stats = ScoreStats()
        self.tokens_by_key: dict = {}
        self._cache: dict = {}  # key -> {"steps": [...], "kv": [(k, v)] per layer [1, H, L, D], "pending": {...}}

    @property
    def tokens_scored(self) -> int:
        return self.stats.tokens

    def release(self, key) -> None:
        self._cache.pop(key, None)

    def _forward(self, keys: list, kvs: list, lengths: list[int], new_ids: list[list[int]]):
        """One pass: row r continues cache kvs[r] (length lengths[r], or None: empty) with new_ids[r].
        Returns (hidden [R, T, h], new kv per layer [R, H, Lmax + T, D], Lmax)."""
        dev = self.adapter.device
        R, T = len(new_ids), max(len(x) for x in new_ids)
        Lmax = max(lengths) if lengths else 0
        pad = self.adapter.pad_id()
        ids = torch.full((R, T), pad, dtype=torch.long)
        mask = torch.zeros((R, Lmax + T), dtype=torch.long)
        pos = torch.zeros((R, T), dtype=torch.long)
        for r, x in enumerate(new_ids):
            ids[r, :len(x)] = torch.tensor(x, dtype=torch.long)
            mask[r, Lmax - lengths[r]:Lmax + len(x)] = 1  # prefix left-padded, new tokens right-padded
            pos[r] = lengths[r] + torch.arange(T)
        cache = None
        if Lmax:
            layers = []
            for li in range(len(kvs[0])):
                ks, vs = [], []
                for r in range(R):
                    k, v = kvs[r][li]
                    padw = Lmax - k.shape[2]
                    if padw:
                        k = torch.nn.functional.pad(k, (0, 0, padw, 0))
                        v = torch.nn.functional.pad(v, (0, 0, padw, 0))
                    ks.append(k)
                    vs.append(v)
                layers.append((torch.cat(ks), torch.cat(vs)))
            cache = DynamicCache(ddp_cache_data=layers, config=self.base.config)
        out = self.base(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev),
                        past_key_values=cache if cache is not None else DynamicCache(config=self.base.config),
                        use_cache=True)
        pkv = out.past_key_values
        new_kv = [(layer.keys, layer.values) for layer in pkv.layers]
        self.stats.forward_passes += 1
        self.stats.tokens += sum(len(x) for x in new_ids)
        for key, x in zip(keys, new_ids):
            self.tokens_by_key[key] = self.tokens_by_key.get(key, 0) + len(x)
        return out.last_hidden_state, new_kv, Lmax

    def _prefix(self, key, question: str, prefix: list[str]):
        """The cache of question + prefix steps for `key`, from what is kept where possible."""
        ent = self._cache.get(key)
        if ent is not None and ent["question"] == question and prefix[:len(ent["steps"])] == ent["steps"]:
            new = prefix[len(ent["steps"]):]
            if len(new) >= 1 and new[0] in ent["pending"]:  # the step the search kept: its rows are cached
                extra = ent["pending"][new[0]]
                ent["kv"] = [(torch.cat([k, ek], dim=2), torch.cat([v, ev], dim=2))
                             for (k, v), (ek, ev) in zip(ent["kv"], extra)]
                ent["steps"] = ent["steps"] + [new[0]]
                new = new[1:]
            ent["pending"] = {}
            if new:  # steps never seen as candidates: run them once
                ids = [t for s in new for t in self.parts.piece_ids(s)]
                _, kv, _ = self._forward([key], [ent["kv"]], [ent["kv"][0][0].shape[2]], [ids])
                ent["kv"], ent["steps"] = [(k, v) for k, v in kv], list(prefix)
            return ent
        ids = self.parts.prefix_ids(question, list(prefix))
        _, kv, _ = self._forward([key], [[]], [0], [ids])
        ent = {"question": question, "steps": list(prefix), "kv": kv, "pending": {}}
        self._cache[key] = ent
        return ent

    def score(self, requests) -> list[list[float]]:
        t0 = time.perf_counter()
        max_len = self.adapter.max_length
        out: list[list[float]] = [[math.nan] * len(r[3]) for r in requests]
        rows = []  # (request index, candidate index, ids)
        with torch.inference_mode():
            ents = [self._prefix(key, q, list(prefix)) for key, q, prefix, _ in requests]
            for i, (_, _, _, cands) in enumerate(requests):
                L = ents[i]["kv"][0][0].shape[2]
                for j, c in enumerate(cands):
                    ids = self.parts.piece_ids(c)
                    if max_len is None or L + len(ids) <= max_len:  # beyond max_length: no score (NaN)
                        rows.append((i, j, ids))
            # longest first, at most batch_tokens cached + new tokens and batch_size rows per pass
            rows.sort(key=lambda x: -(ents[x[0]]["kv"][0][0].shape[2] + len(x[2])))
            k = 0
            while k < len(rows):
                width = ents[rows[k][0]]["kv"][0][0].shape[2] + len(rows[k][2])
                n = max(1, min(self.batch_size, self.batch_tokens // max(width, 1)))
                chunk, k = rows[k:k + n], k + n
                kvs = [ents[i]["kv"] for i, _, _ in chunk]
                lens = [kv[0][0].shape[2] for kv in kvs]
                hidden, new_kv, Lmax = self._forward([requests[i][0] for i, _, _ in chunk], kvs, lens,
                                                     [ids for _, _, ids in chunk])
                last = torch.tensor([len(ids) - 1 for _, _, ids in chunk], device=hidden.device)
                probs = self.prob(hidden[torch.arange(len(chunk), device=hidden.device), last]).float().cpu()
                for r, (i, j, ids) in enumerate(chunk):
                    out[i][j] = float(probs[r])
                    # the candidate's own cache rows, kept until the next request of this key
                    ents[i]["pending"].setdefault(requests[i][3][j], [
                        (kk[r:r + 1, :, Lmax:Lmax + len(ids)].clone(), vv[r:r + 1, :, Lmax:Lmax + len(ids)].clone())
                        for kk, vv in new_kv])
        self.stats.responses += sum(len(r[3]) for r in requests)
        self.stats.seconds += time.perf_counter() - t0
        return out


def candidate_scorer(adapter: Adapter, mode: str = "auto", batch_tokens: int = 16384, batch_size: int = 64):
    """The scorer of search candidates: `incremental` (KV-cached prefix; PRMs with a step head on a causal
    base), `full` (re-score prefix + candidate), or `auto` (incremental where the model allows it)."""
    if mode not in ("auto", "incremental", "full"):
        raise ValueError(f"scoring mode must be auto, incremental or full, not {mode!r}")
    if mode == "full" or (mode == "auto" and _incremental_parts(adapter) is None):
        if mode == "auto":
            log.info("adapter %s: candidates are re-scored with their whole prefix (no incremental scoring: "
                     "not a step head on a causal base with a KV cache)", adapter.kind)
        return FullRescoringScorer(adapter, batch_tokens, batch_size)
    return IncrementalScorer(adapter, batch_tokens, batch_size)
