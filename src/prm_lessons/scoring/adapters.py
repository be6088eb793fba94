"""The scoring adapters, one per family of PRMs (package docstring's table): encode (question, steps) and
read the per-step scores from one forward pass.
"""
from __future__ import annotations

import abc
import logging
import math

import torch

from ..steps import COT_SYSTEM_PROMPT, StepFormat, build_prm_input
from .encode import Encoded, chat_text, encode_marked, math_shepherd_tokens, rlhflow_tokens, truncate
from .options import check_token_classification_params

log = logging.getLogger(__name__)

ADAPTERS = ("trained", "qwen_prm", "math_shepherd", "rlhflow", "skywork", "eurus", "qwen_orm", "token_classification")


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


class TrainedAdapter(StepHeadAdapter):
    kind = "trained"


class MathShepherdAdapter(Adapter):
    kind = "math_shepherd"

    def __init__(self, model, tokenizer, max_length=None, step_tag="ки", good_token="+", bad_token="-", **params):
        super().__init__(model, tokenizer, max_length, **params)
        self.step_tag = step_tag
        self.label_token_ids, self.step_tag_id = math_shepherd_tokens(tokenizer, good_token, bad_token, step_tag)
        self.good, self.bad = self.label_token_ids

    def encode(self, question, steps):
        text, marks = f"{question} ", []
        for i, s in enumerate(steps):
            text += f"Step {i + 1}: {s} "
            marks.append(len(text))
            text += self.step_tag + ("\n" if i < len(steps) - 1 else "")
        # the card tokenises with tokenizer.encode(text): the tokenizer's own special tokens (BOS)
        ids, pos = encode_marked(self.tokenizer, text, marks, add_special_tokens=True)
        if any(ids[p] != self.step_tag_id for p in pos):
            # the card reads where input_ids == step_tag_id: a step tag that did not become that token
            # would be skipped there
            log.warning("math_shepherd: a step tag %r did not tokenise to id %d", self.step_tag, self.step_tag_id)
        return truncate(Encoded(ids, pos, len(steps)), self.max_length)

    def forward(self, input_ids, attention_mask):
        return _pair_probability(self.model, input_ids, attention_mask, self.good, self.bad)


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


class RLHFlowAdapter(Adapter):
    """One pass over the full multi-turn conversation; P(+) at the token before each assistant "+"."""

    kind = "rlhflow"

    def __init__(self, model, tokenizer, max_length=None, good_token="+", bad_token="-", **params):
        super().__init__(model, tokenizer, max_length, **params)
        self.good_text = good_token
        self.label_token_ids = rlhflow_tokens(tokenizer, good_token, bad_token)
        self.good, self.bad = self.label_token_ids

    def encode(self, question, steps):
        msgs, marks = [], []
        for i, s in enumerate(steps):
            msgs.append({"role": "user", "content": (question + "\n\n" + s) if i == 0 else s})
            prompt = chat_text(self.tokenizer, msgs, True)
            marks.append(len(prompt))
            msgs.append({"role": "assistant", "content": self.good_text})
        text = chat_text(self.tokenizer, msgs, False)
        for m in marks:
            if not text[m:].startswith(self.good_text):
                raise ValueError("the chat template does not render conversation prefixes as prefixes; "
                                 "cannot locate the assistant turns in one pass")
        ids, pos = encode_marked(self.tokenizer, text, marks)
        pos = [p - 1 for p in pos]  # the logits that predict the assistant's "+"
        return truncate(Encoded(ids, pos, len(steps)), self.max_length)

    def forward(self, input_ids, attention_mask):
        return _pair_probability(self.model, input_ids, attention_mask, self.good, self.bad)


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
        self.ref_model, self.beta, self.reward, self.sigmoid, self.separator = ref_model, beta, reward, sigmoid, separator

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


class TokenClassificationAdapter(Adapter):
    """TRL / axolotl token-classification PRMs (`AutoModelForTokenClassification`, any architecture
    transformers has a token-classification class for). The input is built as TRL's PRMTrainer.tokenize_row
    builds its training rows (huggingface/trl, trl/trainer/prm_trainer.py, now trl/experimental/prm/
    prm_trainer.py; axolotl's prompt_strategies/stepwise_supervised.py does the same): the tokenizer's BOS
    id when it has one, the question's ids, then for each step its own ids followed by the ids of
    `step_separator` (each piece tokenised alone, no special tokens: not the joined text), the label of
    a step sitting on the LAST token of its separator. Step score there: softmax over the labels at
    index `positive_label`, or sigmoid of that one logit (`score: sigmoid`, e.g. a 1-label head with
    positive_label 0). Options (`params`): scoring.options. Truncation keeps whole leading
    steps (as every adapter): exact for causal bodies; a bidirectional encoder sees the cut input."""

    kind = "token_classification"

    def __init__(self, model, tokenizer, max_length=None, step_separator="\n", positive_label=1, score="softmax",
                 **params):
        super().__init__(model, tokenizer, max_length, **params)
        check_token_classification_params({"step_separator": step_separator, "positive_label": positive_label,
                                           "score": score}, _num_labels(model))
        self.step_separator, self.positive_label, self.score = step_separator, int(positive_label), score
        self.separator_ids = list(tokenizer.encode(step_separator, add_special_tokens=False))
        if not self.separator_ids:
            raise ValueError(f"params.step_separator {step_separator!r} encodes to no token with this tokenizer")
        self.step_tag_id = self.separator_ids[-1]  # the token whose label is the step's

    def encode(self, question, steps):
        tok = self.tokenizer
        ids = ([tok.bos_token_id] if tok.bos_token_id is not None else []) + list(
            tok(question, add_special_tokens=False)["input_ids"])
        pos = []
        for s in steps:
            ids += list(tok(s, add_special_tokens=False)["input_ids"]) + self.separator_ids
            pos.append(len(ids) - 1)
        return truncate(Encoded(ids, pos, len(steps)), self.max_length)

    def forward(self, input_ids, attention_mask):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        logits = (out.logits if hasattr(out, "logits") else out[0]).float()
        if self.score == "sigmoid":
            return torch.sigmoid(logits[..., self.positive_label])
        return torch.softmax(logits, dim=-1)[..., self.positive_label]

    def token_info(self):
        info = super().token_info()
        info.update(separator_ids=[int(i) for i in self.separator_ids], positive_label=self.positive_label,
                    score=self.score)
        return info


def _num_labels(model) -> int | None:
    cfg = getattr(model, "config", None)
    return getattr(cfg, "num_labels", None) if cfg is not None else None


ADAPTER_CLASSES = {"trained": TrainedAdapter, "qwen_prm": StepHeadAdapter, "math_shepherd": MathShepherdAdapter,
                   "rlhflow": RLHFlowAdapter, "skywork": SkyworkAdapter, "eurus": EurusAdapter,
                   "qwen_orm": QwenORMAdapter, "token_classification": TokenClassificationAdapter}
