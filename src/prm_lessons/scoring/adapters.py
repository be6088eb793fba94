"""The scoring adapters, one per family of PRMs (package docstring's table): encode (question, steps) and
read the per-step scores from one forward pass.
"""
from __future__ import annotations

import abc
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable

import torch

from ..steps import COT_SYSTEM_PROMPT, StepFormat, build_prm_input
from .encode import Encoded, chat_text, encode_marked, math_shepherd_tokens, rlhflow_tokens, truncate
from .options import check_declared_params, check_token_classification_params

log = logging.getLogger(__name__)

ADAPTERS = ("trained", "qwen_prm", "math_shepherd", "rlhflow", "skywork", "eurus", "qwen_orm", "token_classification",
            "declared")


class Adapter(abc.ABC):
    """Encodes (question, steps) and reads per-step scores from one forward pass of a batch."""

    kind = "base"
    outcome = False  # True: one score per response (an ORM)

    def __init__(self, model, tokenizer, max_length: int | None = None, **params):
        self.model, self.tokenizer, self.max_length, self.params = model, tokenizer, max_length, params

    @abc.abstractmethod
    def encode(self, question: str, steps: list[str]) -> Encoded:
        """Token ids plus the positions whose values carry the step scores."""

    @abc.abstractmethod
    def forward(self, input_ids, attention_mask):
        """Per-token values [B, T] (or [B, T, k] the readout understands)."""

    def readout(self, values, enc: Encoded) -> list[float]:
        return [float(values[p]) for p in enc.positions]

    # token ids the readout depends on (None: not used by this adapter); reports print them
    step_tag_id: int | None = None
    label_token_ids: tuple[int, int] | None = None

    def token_info(self) -> dict:
        """The adapter's step-tag / label token ids, with the tokens they decode to."""
        t = self.tokenizer
        info = {"adapter": self.kind}
        if self.step_tag_id is not None:
            info["step_tag_id"] = int(self.step_tag_id)
            info["step_tag"] = t.convert_ids_to_tokens(int(self.step_tag_id))
        if self.label_token_ids is not None:
            info["label_token_ids"] = [int(i) for i in self.label_token_ids]
            info["label_tokens"] = t.convert_ids_to_tokens([int(i) for i in self.label_token_ids])
        return info

    # -- shared
    @property
    def device(self):
        return next(self.model.parameters()).device

    def pad_id(self) -> int:
        t = self.tokenizer
        return t.pad_token_id if t.pad_token_id is not None else (t.eos_token_id or 0)


# Not a preset of DeclaredAdapter: this class IS the step-format contract's adapter, shared with the trained
# PRMs (whose plain, non-chat form the declared `plain` prompt does not reproduce), the vLLM pooling path and
# the incremental search scorer (search_scorers: isinstance). Declared `process_reward` + `prompt: chat` reads
# the same contract and gives its scores (tests/scoring/test_adapters_declared.py).
class StepHeadAdapter(Adapter):
    """PRMs with a 2-class head at step-token positions, input from THE step-format contract."""

    kind = "qwen_prm"

    def __init__(self, model, tokenizer, max_length=None, step_format=None, **params):
        super().__init__(model, tokenizer, max_length, **params)
        if isinstance(step_format, dict):
            step_format = StepFormat.from_dict(step_format)
        self.fmt = step_format or StepFormat("<extra_0>", COT_SYSTEM_PROMPT, True)
        # the card: step_sep_id = tokenizer.encode("<extra_0>")[0] (151651 in the Qwen2.5-Math-PRM repos)
        sid = tokenizer.convert_tokens_to_ids(self.fmt.step_token)
        self.step_tag_id = sid if sid is not None and sid != tokenizer.unk_token_id else None

    def encode(self, question, steps):
        p = build_prm_input(self.tokenizer, question, steps, self.fmt, self.max_length)
        return Encoded(p.input_ids, p.step_positions, p.n_steps)

    def forward(self, input_ids, attention_mask):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        logits = out if torch.is_tensor(out) else (out.logits if hasattr(out, "logits") else out[0])
        logits = logits.float()
        if logits.shape[-1] == 1:  # a 1-logit (regression / BCE) head
            return torch.sigmoid(logits[..., 0])
        return torch.softmax(logits, dim=-1)[..., 1]


# Not declared: the step format and the head travel with the checkpoint (prm.json, prm.load_prm).
class TrainedAdapter(StepHeadAdapter):
    kind = "trained"


class DeclaredAdapter(Adapter):
    """A PRM described by its parameters alone (`params` of a prms.models entry, scoring.options
    check_declared_params): the model class, the text around each step and the step tag appended after
    it, how that text is tokenised, and how the step score is read.

    - `model_class`: causal_lm (AutoModelForCausalLM: softmax over the logits of two label tokens,
      `readout.label_ids` [good, bad], P(good)); token_classification (AutoModelForTokenClassification);
      process_reward (a Qwen2ForProcessRewardModel-style body + `score` head, built here unless the model
      entry allows its remote code); the two classification heads read `readout.class_index` through
      softmax over the labels or sigmoid of that logit (`readout.activation`).
    - `prompt: plain`: question_template, then per step step_template + step_tag, step_join between;
      `tokenize: alone` tokenises each piece on its own (TRL's PRMTrainer.tokenize_row; BOS first if `bos`
      and the tokenizer has one), `in_context` the whole text once (Math-Shepherd's card).
      `prompt: chat`: THE step-format contract (steps.build_prm_input): system + user turns through the
      chat template, then each step followed by step_tag, a single vocabulary token (Qwen PRMs).
      `prompt: chat_turns`: one user turn per step (the first: question_template + the step), each answered
      by an assistant turn holding step_tag, rendered and tokenised once (RLHFlow).
    - `readout.position`: tag_last (the tag's last token) or before_tag (the token before the tag: a causal
      LM's logits there predict it, RLHFlow's assistant "+").

    Adapters math_shepherd, rlhflow and token_classification are named parameter sets of it (`PRESETS`,
    `from_preset`).
    """

    kind = "declared"
    preset: Preset | None = None  # the named parameter set this adapter was built from (from_preset)

    def __init__(self, model, tokenizer, max_length=None, **params):
        super().__init__(model, tokenizer, max_length, **params)
        self.declare(params)

    @classmethod
    def from_preset(cls, name: str, model, tokenizer, max_length=None, **options) -> DeclaredAdapter:
        """Adapter `name` of PRESETS: its fixed parameters with those its `options` (a prms.models entry's
        params, over the preset's defaults) and this tokenizer resolve to; `kind` is `name`."""
        preset = PRESETS[name]
        own, attrs = preset.resolve(tokenizer, model, {**preset.options, **options})
        readout = {**preset.params.get("readout", {}), **own.get("readout", {})}
        a = cls(model, tokenizer, max_length, **{**preset.params, **own, "readout": readout})
        a.kind, a.preset = name, preset
        for key, value in attrs.items():
            setattr(a, key, value)
        return a

    def declare(self, params: dict) -> None:
        """Check and resolve the parameters against this model and tokenizer; set the token ids read."""
        tok, mc = self.tokenizer, params.get("model_class")
        p = self.declared = check_declared_params(params, _head_labels(self.model, mc), _vocab_size(self.model, mc))
        r = p["readout"]
        if p["prompt"] == "chat":
            self.fmt = StepFormat(p["step_tag"], p["system_prompt"], True)
            sid = tok.convert_tokens_to_ids(p["step_tag"])
            if sid is None or sid == tok.unk_token_id:
                raise ValueError(f"params.step_tag: {p['step_tag']!r} is not one token of this tokenizer's "
                                 "vocabulary (prompt chat reads a single step token)")
            self.tag_ids = [sid]
        else:
            self.tag_ids = list(tok.encode(p["step_tag"], add_special_tokens=False))
            if not self.tag_ids:
                raise ValueError(f"params.step_tag {p['step_tag']!r} encodes to no token with this tokenizer")
        self.step_tag_id = self.tag_ids[-1] if r["position"] == "tag_last" else None
        if p["model_class"] == "causal_lm":
            self.label_token_ids = tuple(_token_id(tok, x) for x in r["label_ids"])
            self.good, self.bad = self.label_token_ids

    def encode(self, question, steps):
        p, tok = self.declared, self.tokenizer
        before = p["readout"]["position"] == "before_tag"
        if p["prompt"] == "chat":
            x = build_prm_input(tok, question, steps, self.fmt, self.max_length)
            return Encoded(x.input_ids, [i - 1 for i in x.step_positions] if before else x.step_positions, x.n_steps)
        q = p["question_template"].format(question=question)
        texts = [p["step_template"].format(step=s, k=k + 1) for k, s in enumerate(steps)]
        if p["prompt"] == "chat_turns":
            ids, pos = self._chat_turns(q, texts, before)
        elif p["tokenize"] == "alone":
            ids = ([tok.bos_token_id] if p["bos"] and tok.bos_token_id is not None else []) + _ids(tok, q)
            join, pos = _ids(tok, p["step_join"]) if p["step_join"] else [], []
            for k, s in enumerate(texts):
                ids += (join if k else []) + _ids(tok, s)
                pos.append(len(ids) - 1 if before else len(ids) + len(self.tag_ids) - 1)
                ids += self.tag_ids
        else:
            text, marks, tag = q, [], p["step_tag"]
            for k, s in enumerate(texts):
                text += (p["step_join"] if k else "") + s
                marks.append(len(text) if before else len(text) + len(tag) - 1)
                text += tag
            ids, pos = encode_marked(tok, text, marks, add_special_tokens=p["bos"])
            pos = [i - 1 for i in pos] if before else pos
            if not before and any(ids[i] != self.step_tag_id for i in pos):
                # the model cards read where input_ids == the tag's id: a tag that did not become that
                # token in context would be skipped there
                log.warning("%s: a step tag %r did not tokenise to id %d in context", self.kind, tag, self.step_tag_id)
        return truncate(Encoded(ids, pos, len(steps)), self.max_length)

    def _chat_turns(self, q: str, texts: list[str], before: bool):
        p, tok, tag = self.declared, self.tokenizer, self.declared["step_tag"]
        msgs = [{"role": "system", "content": p["system_prompt"]}] if p["system_prompt"] is not None else []
        marks = []
        for k, s in enumerate(texts):
            msgs.append({"role": "user", "content": (q + s) if k == 0 else s})
            marks.append(len(chat_text(tok, msgs, True)))
            msgs.append({"role": "assistant", "content": tag})
        text = chat_text(tok, msgs, False)
        for m in marks:
            if not text[m:].startswith(tag):
                raise ValueError("the chat template does not render conversation prefixes as prefixes; "
                                 "cannot locate the assistant turns in one pass")
        ids, pos = encode_marked(tok, text, marks if before else [m + len(tag) - 1 for m in marks])
        return ids, [i - 1 for i in pos] if before else pos

    def forward(self, input_ids, attention_mask):
        if self.declared["model_class"] == "causal_lm":
            return _pair_probability(self.model, input_ids, attention_mask, self.good, self.bad)
        r = self.declared["readout"]
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        logits = (out if torch.is_tensor(out) else (out.logits if hasattr(out, "logits") else out[0])).float()
        if r["activation"] == "sigmoid":
            return torch.sigmoid(logits[..., r["class_index"]])
        return torch.softmax(logits, dim=-1)[..., r["class_index"]]

    def token_info(self):
        info = super().token_info()
        if self.preset is not None and self.preset.info is not None:  # a preset reports its own options
            info.update(self.preset.info(self))
        elif self.declared["model_class"] != "causal_lm":
            info.update(class_index=self.declared["readout"]["class_index"],
                        activation=self.declared["readout"]["activation"])
        return info


def _ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _token_id(tokenizer, x) -> int:
    """A label token given as an id, or as text: its last token tokenised alone (RLHFlow's encode(t)[-1])."""
    if isinstance(x, int):
        return x
    ids = tokenizer.encode(x, add_special_tokens=False)
    if not ids:
        raise ValueError(f"params.readout.label_ids: {x!r} encodes to no token with this tokenizer")
    if len(ids) > 1:
        log.warning("label token %r is %d tokens with this tokenizer; its last one is read", x, len(ids))
    return ids[-1]


def _head_labels(model, model_class) -> int | None:
    """Labels of a classification head, where the loaded model says (None: unknown, e.g. the vLLM path)."""
    if model is None or model_class == "causal_lm":
        return None
    if model_class == "process_reward":
        head = getattr(model, "score", None)  # heads.build_head_model's Linear·ReLU·Linear
        return getattr(head[-1], "out_features", None) if isinstance(head, torch.nn.Sequential) else None
    return _num_labels(model)


def _vocab_size(model, model_class) -> int | None:
    if model is None or model_class != "causal_lm" or not hasattr(model, "get_output_embeddings"):
        return None
    head = model.get_output_embeddings()
    return int(head.weight.shape[0]) if head is not None else None


def _pair_probability(model, input_ids, attention_mask, good: int, bad: int):
    """softmax over the (good, bad) token logits at every position → P(good) [B, T]. Only the two
    rows of the LM head are applied (no [B, T, vocab] tensor)."""
    h = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    head = model.get_output_embeddings()
    w = head.weight[[good, bad]]
    logits = h @ w.T
    if getattr(head, "bias", None) is not None:
        logits = logits + head.bias[[good, bad]]
    return torch.softmax(logits.float(), dim=-1)[..., 0]


# Not declared: its value head (v_head.summary, one logit) is no transformers class, and its prompt puts the
# BOS in as text before tokenising the question with "\n" in context.
class SkyworkAdapter(Adapter):
    kind = "skywork"

    def __init__(self, model, tokenizer, max_length=None, step_token="\n", **params):
        super().__init__(model, tokenizer, max_length, **params)
        # prepare_input of SkyworkAI/skywork-o1-prm-inference: the "\n" id after each step
        self.step_token_id = self.step_tag_id = tokenizer.encode(step_token, add_special_tokens=False)[-1]

    def encode(self, question, steps):
        tok = self.tokenizer
        ids = list(tok.encode((tok.bos_token or "") + question + "\n", add_special_tokens=False))
        pos = []
        for s in steps:
            ids.extend(tok.encode(s, add_special_tokens=False))
            pos.append(len(ids))
            ids.append(self.step_token_id)
        return truncate(Encoded(ids, pos, len(steps)), self.max_length)

    def forward(self, input_ids, attention_mask):
        return torch.sigmoid(self.model(input_ids=input_ids, attention_mask=attention_mask)[..., 0])


# Not declared: an outcome RM, one score per response from the last token of a closed chat; no step tag.
class QwenORMAdapter(Adapter):
    """Outcome RM: one score (the head at the last token) per response."""

    kind = "qwen_orm"
    outcome = True

    def __init__(self, model, tokenizer, max_length=None, system_prompt=COT_SYSTEM_PROMPT, separator="\n\n", **params):
        super().__init__(model, tokenizer, max_length, **params)
        self.system_prompt, self.separator = system_prompt, separator

    def encode(self, question, steps):
        msgs = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []) + [
            {"role": "user", "content": question}, {"role": "assistant", "content": self.separator.join(steps)}]
        ids = self.tokenizer(chat_text(self.tokenizer, msgs, False), add_special_tokens=False)["input_ids"]
        if self.max_length is not None and len(ids) > self.max_length:
            # an ORM reads the end of the response: keep its tail (never silently: reported as 0 kept)
            return Encoded(list(ids[-self.max_length:]), [self.max_length - 1], len(steps), {"truncated": True})
        return Encoded(list(ids), [len(ids) - 1], len(steps))

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)[..., 0]

    def readout(self, values, enc):
        v = float(values[enc.positions[0]])
        return [1 / (1 + math.exp(-v)) if self.params.get("sigmoid", False) else v]


# Not declared: an implicit PRM reads no tag: cumulative log-ratios against a reference model.
class EurusAdapter(Adapter):
    """Implicit PRM as the EurusPRM model card computes it: r_t = β·(log π(y_t|y<t) − log π_ref(y_t|y<t))
    (β = `beta`, the card's coef 0.001), cumulated over the response from the card's start index;
    step k's score is the cumulative sum gathered at the card's index for step k.

    The card's indices (`step_last_tokens`): for k = 0..n it renders the chat with the assistant
    holding steps[:k] joined by "\n\n", strips it, appends "\n\n" when 0 < k < n, and takes
    len(tokens) − 2. Its rewards are shifted by one token (logits[:-1] against labels[1:]), so with
    i_k those indices, step k's score = β Σ_{t = i_0}^{i_k + 1} (log π − log π_ref)(token t): for a
    step before the last that runs past the step's end to the first token of the next one, for the
    last step up to <|im_end|>. The card prints these raw values (no sigmoid: `sigmoid` false is the
    card; true maps them through σ, the ORM objective). `reward: step` gives per-step differences."""

    kind = "eurus"

    def __init__(self, model, tokenizer, max_length=None, ref_model=None, beta=0.001, reward="cumulative",
                 sigmoid=False, separator="\n\n", **params):
        super().__init__(model, tokenizer, max_length, **params)
        if ref_model is None:
            raise ValueError("adapter 'eurus' needs a reference model (prms entry key `ref_model`)")
        if reward not in ("cumulative", "step"):
            raise ValueError(f"eurus reward must be 'cumulative' or 'step', not {reward!r}")
        self.ref_model, self.beta, self.reward, self.sigmoid, self.separator = (
            ref_model, beta, reward, sigmoid, separator)

    def card_indices(self, question: str, steps: list[str]) -> list[int]:
        """The card's `step_last_tokens` (n + 1 indices: the response start, then one per step)."""
        tok, out = self.tokenizer, []
        for k in range(len(steps) + 1):
            msgs = [{"role": "user", "content": question},
                    {"role": "assistant", "content": self.separator.join(steps[:k])}]
            text = chat_text(tok, msgs, False).strip()
            if 0 < k < len(steps):
                text += self.separator
            out.append(len(tok.encode(text, add_special_tokens=False)) - 2)
        return out

    def encode(self, question, steps):
        msgs = [{"role": "user", "content": question},
                {"role": "assistant", "content": self.separator.join(steps)}]
        ids = list(self.tokenizer(chat_text(self.tokenizer, msgs, False), add_special_tokens=False)["input_ids"])
        idx = self.card_indices(question, steps)
        # the card gathers cumsum[i_k] of rewards shifted by one: the last token summed is i_k + 1
        pos = [min(i + 1, len(ids) - 1) for i in idx[1:]]
        enc = Encoded(ids, pos, len(steps), {"response_start": idx[0]})
        return truncate(enc, self.max_length)

    def _logps(self, model, input_ids, attention_mask):
        h = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        head = model.get_output_embeddings()
        out = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
        for b in range(input_ids.shape[0]):  # per row: never a [B, T, vocab] tensor
            lp = torch.log_softmax(head(h[b, :-1]).float(), dim=-1)
            out[b, 1:] = lp.gather(-1, input_ids[b, 1:, None])[:, 0]
        return out  # out[t] = log p(x_t | x_<t); out[0] = 0

    def forward(self, input_ids, attention_mask):
        return self.beta * (self._logps(self.model, input_ids, attention_mask)
                            - self._logps(self.ref_model, input_ids, attention_mask))

    def readout(self, values, enc):
        s0 = enc.extra["response_start"]
        q = values[s0:].cumsum(0)
        cum = [float(q[p - s0]) for p in enc.positions]
        vals = cum if self.reward == "cumulative" else [c - (cum[i - 1] if i else 0.0) for i, c in enumerate(cum)]
        return [1 / (1 + math.exp(-v)) for v in vals] if self.sigmoid else vals


def _num_labels(model) -> int | None:
    cfg = getattr(model, "config", None)
    return getattr(cfg, "num_labels", None) if cfg is not None else None


# -- the named parameter sets of DeclaredAdapter (adapters math_shepherd, rlhflow, token_classification)

@dataclass(frozen=True)
class Preset:
    """A family's declared parameters: `params` fixed; `options` the prms.models entry's params it reads,
    with their defaults (the config's schema and scoring.options list them); `resolve(tokenizer, model,
    options)` → the declared parameters the options give (step tag, readout; merged into `params`, readout
    key by key), checked as the family's reference code does, and attributes set once declared (ids the
    reference reads); `info(adapter)` → token_info's entries in place of the declared readout's."""

    params: dict
    options: dict
    resolve: Callable[..., tuple[dict, dict]]
    info: Callable[[DeclaredAdapter], dict] | None = None


def _math_shepherd(tokenizer, model, o: dict) -> tuple[dict, dict]:
    label_ids, step_tag_id = math_shepherd_tokens(tokenizer, o["good_token"], o["bad_token"], o["step_tag"])
    # step_tag_id: the card's id, encode(step_tag)[-1]
    return ({"step_tag": o["step_tag"], "readout": {"label_ids": [int(i) for i in label_ids]}},
            {"step_tag_id": step_tag_id})


def _rlhflow(tokenizer, model, o: dict) -> tuple[dict, dict]:
    label_ids = rlhflow_tokens(tokenizer, o["good_token"], o["bad_token"])
    return {"step_tag": o["good_token"], "readout": {"label_ids": [int(i) for i in label_ids]}}, {}


def _token_classification(tokenizer, model, o: dict) -> tuple[dict, dict]:
    sep, label, score = o["step_separator"], o["positive_label"], o["score"]
    check_token_classification_params({"step_separator": sep, "positive_label": label, "score": score},
                                      _num_labels(model))
    if not tokenizer.encode(sep, add_special_tokens=False):
        raise ValueError(f"params.step_separator {sep!r} encodes to no token with this tokenizer")
    return {"step_tag": sep, "readout": {"class_index": int(label), "activation": score}}, {}


PRESETS = {
    # Math-Shepherd's card (peiyi9979/math-shepherd-mistral-7b-prm): "{question} Step 1: s1 ки\nStep 2: s2 ки"
    # tokenised once with the tokenizer's special tokens; P(+) of softmax over the card's encode("+ -")[1:]
    # at each ки (scoring.encode.math_shepherd_tokens).
    "math_shepherd": Preset(
        {"model_class": "causal_lm", "prompt": "plain", "tokenize": "in_context", "bos": True,
         "question_template": "{question} ", "step_template": "Step {k}: {step} ", "step_join": "\n"},
        {"step_tag": "ки", "good_token": "+", "bad_token": "-"}, _math_shepherd),
    # RLHFlow's PRMs (RLHF-Reward-Modeling math-rm/prm_evaluate.py): one pass over the full multi-turn
    # conversation (user = question + "\n\n" + step 1, then one user turn per step, each answered "+"); P(+)
    # of (encode('+')[-1], encode('-')[-1]) at the token before each assistant "+" (scoring.encode.rlhflow_tokens).
    "rlhflow": Preset(
        {"model_class": "causal_lm", "prompt": "chat_turns", "question_template": "{question}\n\n",
         "readout": {"position": "before_tag"}},
        {"good_token": "+", "bad_token": "-"}, _rlhflow),
    # TRL / axolotl token-classification PRMs (AutoModelForTokenClassification, any architecture transformers
    # has a token-classification class for). The input is built as TRL's PRMTrainer.tokenize_row builds its
    # training rows (huggingface/trl, trl/trainer/prm_trainer.py, now trl/experimental/prm/prm_trainer.py;
    # axolotl's prompt_strategies/stepwise_supervised.py does the same): the tokenizer's BOS id when it has
    # one, the question's ids, then for each step its own ids followed by the ids of `step_separator` (each
    # piece tokenised alone, no special tokens: not the joined text), the label of a step sitting on the LAST
    # token of its separator. Step score there: softmax over the labels at index `positive_label`, or sigmoid
    # of that one logit (`score: sigmoid`, e.g. a 1-label head with positive_label 0). Options:
    # scoring.options. Truncation keeps whole leading steps (as every adapter): exact for causal bodies; a
    # bidirectional encoder sees the cut input.
    "token_classification": Preset(
        {"model_class": "token_classification", "prompt": "plain", "tokenize": "alone", "bos": True},
        {"step_separator": "\n", "positive_label": 1, "score": "softmax"}, _token_classification,
        lambda a: {"separator_ids": [int(i) for i in a.tag_ids], "positive_label": a.declared["readout"]["class_index"],
                   "score": a.declared["readout"]["activation"]}),
}


# name → the adapter's class, or for a preset of DeclaredAdapter its builder (the same arguments)
ADAPTER_CLASSES = {"trained": TrainedAdapter, "qwen_prm": StepHeadAdapter, "skywork": SkyworkAdapter,
                   "eurus": EurusAdapter, "qwen_orm": QwenORMAdapter, "declared": DeclaredAdapter,
                   **{name: functools.partial(DeclaredAdapter.from_preset, name) for name in PRESETS}}
