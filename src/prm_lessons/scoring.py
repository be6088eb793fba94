"""Step scoring: every step of a response scored in ONE forward pass, batched and length-sorted.

An adapter turns (question, steps) into token ids plus the positions whose outputs carry each step's
score, and reads the score there. Adapters (the `adapter` key of a `prms.models` entry):

| adapter        | models                               | step format / readout |
|----------------|--------------------------------------|-----------------------|
| `trained`      | the PRMs this workflow trains        | `steps.build_prm_input` with the PRM's own StepFormat (saved with it); P(class 1) of its 2-class head |
| `qwen_prm`     | Qwen2.5-Math-PRM-7B / -72B           | `build_prm_input`: system + user, `<extra_0>` after each step in the assistant turn; softmax over the 2 head logits, index 1 |
| `math_shepherd`| peiyi9979/math-shepherd-mistral-7b-prm | `"{question} Step 1: s1 ки\\nStep 2: s2 ки"`; softmax over the card's `encode("+ -")[1:]` logits at each `ки` (`encode("ки")[-1]`), P(+) |
| `rlhflow`      | RLHFlow/Llama3.1-8B-PRM-*            | chat: user = question + "\\n\\n" + step 1, then one user turn per step, assistant "+" after each; one pass over the whole conversation, P(+) of (`encode('+')[-1]`, `encode('-')[-1]`) at the token before each assistant "+" |
| `skywork`      | Skywork-o1-Open-PRM-Qwen-2.5-*       | `bos + question + "\\n"`, then each step's ids + the "\\n" token id; sigmoid of the value head at those tokens |
| `eurus`        | PRIME-RL/EurusPRM-Stage1/2           | chat (user, assistant = steps joined by "\\n\\n"); implicit PRM: β·(log π − log π_ref) per token, cumulated and gathered at the card's `step_last_tokens` (raw values, as the card prints; `sigmoid` optional) or per step |
| `qwen_orm`     | Qwen2.5-Math-RM-72B (outcome RM)     | chat (system, user, assistant = steps joined by "\\n\\n"); score head at the last token: ONE score per response; on ProcessBench one instance per prefix |

Released checkpoints whose class lives in Hub code (Qwen PRM/ORM, Skywork) are loaded WITHOUT running
that code unless the model entry sets `trust_remote_code: true`: the transformer body loads through
transformers' own class for its `model_type`, the head (`score.*`, `v_head.summary.*`) is built here
and its weights read from the checkpoint (vLLM does the same for Qwen2ForProcessRewardModel), from
safetensors or, where a repo ships only those (Math-Shepherd, Skywork), pytorch_model*.bin. Each adapter
exposes the token ids its readout uses (`step_tag_id`, `label_token_ids`; `token_info()`), written into
the score tables' metadata.
Outputs: tables `step_scores` / `pb_scores` (docs/architecture.md). A response longer than
`max_length` keeps its whole leading steps only; `n_steps_scored` < number of steps says so.

Backends (`backend` of a spec): `transformers` (this module: length-sorted batches, one forward each;
every adapter) or `vllm` (prm_lessons.pooling: vLLM's pooling runner with tensor parallelism, for the
architectures vLLM implements: qwen_prm, qwen_orm, and trained PRMs saved in the released layout). The
adapter, its encoding and readout are the same; only `score_encoded` hands the batch to vLLM.

"""
from __future__ import annotations

import abc
import bisect
import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import torch
from safetensors import safe_open
from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer, DynamicCache
from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

from . import hub, pooling
from .prm import FORMAT_FILE, load_prm, torch_dtype
from .steps import COT_SYSTEM_PROMPT, StepFormat, build_prm_input

log = logging.getLogger(__name__)

ADAPTERS = ("trained", "qwen_prm", "math_shepherd", "rlhflow", "skywork", "eurus", "qwen_orm")


@dataclass
class Encoded:
    input_ids: list[int]
    positions: list[int]  # token index whose output carries step k's score (kept steps only)
    n_steps: int
    extra: dict = field(default_factory=dict)

    @property
    def n_kept(self) -> int:
        return len(self.positions)


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

def _encode_marked(tokenizer, text: str, marks: Sequence[int],
                   add_special_tokens: bool = False) -> tuple[list[int], list[int]]:
    """Tokenise `text` once and map each character offset in `marks` to the token covering it
    (chat-rendered text: add_special_tokens False, the template already holds them)."""
    enc = tokenizer(text, add_special_tokens=add_special_tokens, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    starts = [s for s, _ in offsets]
    positions = []
    for m in marks:
        k = bisect.bisect_right(starts, m) - 1
        while k >= 0 and not (offsets[k][0] <= m < max(offsets[k][1], offsets[k][0] + 1)):
            k -= 1
        if k < 0:
            raise ValueError(f"no token covers character {m} of the scoring input")
        positions.append(k)
    return ids, positions


def _truncate(enc: Encoded, max_length: int | None) -> Encoded:
    """Keep whole leading steps: causal attention makes the cut exact for the kept positions."""
    if max_length is None or len(enc.input_ids) <= max_length:
        return enc
    keep = [p for p in enc.positions if p < max_length]
    cut = (keep[-1] + 1) if keep else min(max_length, len(enc.input_ids))
    return Encoded(enc.input_ids[:cut], keep, enc.n_steps, dict(enc.extra))


def _chat(tokenizer, messages, add_generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)


def _drop_bos(tokenizer, ids: list[int]) -> list[int]:
    """`ids[1:]` of the model cards, which assume the tokenizer prepends BOS (a tokenizer without one
    keeps its first id)."""
    bos = tokenizer.bos_token_id
    return ids[1:] if ids and bos is not None and ids[0] == bos else ids


def math_shepherd_tokens(tokenizer, good: str = "+", bad: str = "-", step_tag: str = "ки"):
    """As the Math-Shepherd card: candidate_tokens = encode(f"{good} {bad}")[1:] ([648, 387] with the
    Mistral v1 tokenizer: "▁+" and "▁-"), step_tag_id = encode(step_tag)[-1] (12902, "▁ки")."""
    pair = _drop_bos(tokenizer, tokenizer.encode(f"{good} {bad}"))
    if len(pair) != 2:
        raise ValueError(f"'{good} {bad}' is not two tokens of this tokenizer ({pair}): not a Math-Shepherd tokenizer")
    return (pair[0], pair[1]), tokenizer.encode(step_tag)[-1]


def rlhflow_tokens(tokenizer, good: str = "+", bad: str = "-") -> tuple[int, int]:
    """As RLHFlow's inference code (RLHF-Reward-Modeling math-rm/prm_evaluate.py): encode('+')[-1],
    encode('-')[-1]: the bare tokens the assistant turn holds (Llama 3: 10 and 12, not " -" = 482)."""
    return tokenizer.encode(good)[-1], tokenizer.encode(bad)[-1]


# ----------------------------------------------------------------------------------------------
# models with a head built here (no Hub code)
# ----------------------------------------------------------------------------------------------

def make_head(kind: str, hidden: int):
    """Heads of the released checkpoints: qwen_prm → score = Linear(h,h)·ReLU·Linear(h,2);
    qwen_orm → score = Linear(h,h)·ReLU·Linear(h,1); skywork → v_head.summary = Linear(h,1)."""
    nn = torch.nn
    if kind in ("qwen_prm", "qwen_orm"):
        return nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2 if kind == "qwen_prm" else 1))
    if kind == "skywork":
        m = nn.Module()
        m.summary = nn.Linear(hidden, 1)
        return m
    raise ValueError(f"no head for adapter '{kind}'")


HEAD_PREFIX = {"qwen_prm": "score", "qwen_orm": "score", "skywork": "v_head"}


def _head_model_class():

    class _HeadModel(torch.nn.Module):
        """base transformer (last hidden state) → head; forward returns head outputs [B, T, k]."""

        def __init__(self, base, head, kind):
            super().__init__()
            self.model, self.kind = base, kind
            setattr(self, HEAD_PREFIX[kind], head)

        def forward(self, input_ids, attention_mask=None):
            h = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            head = getattr(self, HEAD_PREFIX[self.kind])
            out = head.summary(h) if self.kind == "skywork" else head(h)
            return out.float()

    return _HeadModel


def build_head_model(base, kind: str):
    """Wrap a base transformer with a freshly initialised head (tests build tiny released-style PRMs)."""
    hidden = base.config.hidden_size
    head = make_head(kind, hidden).to(dtype=next(base.parameters()).dtype)
    return _head_model_class()(base, head, kind)


def _last_device(base):
    devs = list(getattr(base, "hf_device_map", {}).values())
    d = devs[-1] if devs else 0
    return f"cuda:{d}" if isinstance(d, int) else d


def _weight_files(path: str) -> list[Path]:
    """A checkpoint dir's weight files: safetensors when it has any, else pytorch_model*.bin (the
    Math-Shepherd and Skywork PRM repos ship only .bin). With an index, only the shards it names."""
    d = Path(path)
    for ext, index in (("safetensors", "model.safetensors.index.json"), ("bin", "pytorch_model.bin.index.json")):
        if (d / index).exists():
            shards = sorted(set(json.loads((d / index).read_text())["weight_map"].values()))
            return [d / s for s in shards]
        files = sorted(f for f in d.glob(f"*.{ext}") if f.name not in hub.NOT_WEIGHTS)
        if files:
            return files
    return []


def _bin_state(f: Path) -> dict:
    try:  # mmap: a 7B shard is not read whole to pick a head out of it
        return torch.load(str(f), map_location="cpu", weights_only=True, mmap=True)
    except RuntimeError:  # legacy (non-zip) pickles cannot be mmapped
        return torch.load(str(f), map_location="cpu", weights_only=True)


def _checkpoint_tensors(path: str, prefix: str) -> dict:
    """Tensors whose name starts with `prefix.` from a checkpoint dir's weights: safetensors or
    pytorch_model*.bin (torch.load with weights_only), sharded (per its index) or single."""
    files = _weight_files(path)
    if not files:
        raise FileNotFoundError(f"{path}: no *.safetensors or pytorch_model*.bin files (needed for the {prefix} head)")
    out = {}
    for f in files:
        if f.suffix == ".safetensors":
            with safe_open(str(f), framework="pt") as fh:
                for k in fh.keys():
                    if k.startswith(prefix + "."):
                        out[k[len(prefix) + 1:]] = fh.get_tensor(k)
        else:
            state = _bin_state(f)
            out.update({k[len(prefix) + 1:]: v.clone() for k, v in state.items() if k.startswith(prefix + ".")})
            del state
    if not out:
        raise ValueError(f"{path}: checkpoint has no '{prefix}.*' weights for this adapter")
    return out


def _resolve_dir(path_or_id: str, trust_remote_code: bool = False, revision: str | None = None) -> str:
    """A local directory as is; a Hub id snapshotted with the files a job needs (hub.select_files:
    safetensors, else *.bin; *.py only when remote code is allowed). The workflow hands jobs local
    directories (rule download_model); a Hub id here is for interactive use."""
    if Path(path_or_id).exists():
        return str(path_or_id)
    return str(hub.snapshot(path_or_id, revision or "main", trust_remote_code=trust_remote_code)[0])


def _dtype(name: str | None):
    """from_pretrained's dtype for a config dtype name: "auto" (the checkpoint's) when none is set."""
    dtype = torch_dtype(name)
    return "auto" if dtype is None else dtype


def load_head_model(path: str, kind: str, dtype=None, trust_remote_code: bool = False):
    """Released PRM/ORM with a head: remote class when allowed, else base + head built here."""
    path = _resolve_dir(path, trust_remote_code)
    if trust_remote_code:
        model = AutoModel.from_pretrained(path, dtype=_dtype(dtype), trust_remote_code=trust_remote_code, **_placement())
        return _RemoteOutputs(model)
    base = AutoModel.from_pretrained(path, dtype=_dtype(dtype), **_placement())
    m = build_head_model(base, kind)
    if _on_gpu():  # the head sits with the last layer's output
        m.to(next(base.parameters()).device) if not hasattr(base, "hf_device_map") else \
            getattr(m, HEAD_PREFIX[kind]).to(_last_device(base))
    head = getattr(m, HEAD_PREFIX[kind])
    missing, unexpected = head.load_state_dict(_checkpoint_tensors(path, HEAD_PREFIX[kind]), strict=False)
    if missing or unexpected:
        raise ValueError(f"{path}: head weights do not match adapter '{kind}' "
                         f"(missing {missing}, unexpected {unexpected})")
    return m


class _RemoteOutputs:
    """Hub-code PRM/ORM (trust_remote_code): its first output is the head output."""

    def __init__(self, model):
        self.model = model

    def __call__(self, input_ids, attention_mask=None):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        t = out[0] if isinstance(out, (tuple, list)) else getattr(out, "logits", out[0])
        return t.float()

    def eval(self):
        self.model.eval()
        return self

    def parameters(self):
        return self.model.parameters()


# ----------------------------------------------------------------------------------------------
# adapters
# ----------------------------------------------------------------------------------------------

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
        ids, pos = _encode_marked(self.tokenizer, text, marks, add_special_tokens=True)
        if any(ids[p] != self.step_tag_id for p in pos):
            # the card reads where input_ids == step_tag_id: a step tag that did not become that token
            # would be skipped there
            log.warning("math_shepherd: a step tag %r did not tokenise to id %d", self.step_tag, self.step_tag_id)
        return _truncate(Encoded(ids, pos, len(steps)), self.max_length)

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
            prompt = _chat(self.tokenizer, msgs, True)
            marks.append(len(prompt))
            msgs.append({"role": "assistant", "content": self.good_text})
        text = _chat(self.tokenizer, msgs, False)
        for m in marks:
            if not text[m:].startswith(self.good_text):
                raise ValueError("the chat template does not render conversation prefixes as prefixes; "
                                 "cannot locate the assistant turns in one pass")
        ids, pos = _encode_marked(self.tokenizer, text, marks)
        pos = [p - 1 for p in pos]  # the logits that predict the assistant's "+"
        return _truncate(Encoded(ids, pos, len(steps)), self.max_length)

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
        return _truncate(Encoded(ids, pos, len(steps)), self.max_length)

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
        ids = self.tokenizer(_chat(self.tokenizer, msgs, False), add_special_tokens=False)["input_ids"]
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
            text = _chat(tok, msgs, False).strip()
            if 0 < k < len(steps):
                text += self.separator
            out.append(len(tok.encode(text, add_special_tokens=False)) - 2)
        return out

    def encode(self, question, steps):
        msgs = [{"role": "user", "content": question},
                {"role": "assistant", "content": self.separator.join(steps)}]
        ids = list(self.tokenizer(_chat(self.tokenizer, msgs, False), add_special_tokens=False)["input_ids"])
        idx = self.card_indices(question, steps)
        # the card gathers cumsum[i_k] of rewards shifted by one: the last token summed is i_k + 1
        pos = [min(i + 1, len(ids) - 1) for i in idx[1:]]
        enc = Encoded(ids, pos, len(steps), {"response_start": idx[0]})
        return _truncate(enc, self.max_length)

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


ADAPTER_CLASSES = {"trained": TrainedAdapter, "qwen_prm": StepHeadAdapter, "math_shepherd": MathShepherdAdapter,
                   "rlhflow": RLHFlowAdapter, "skywork": SkyworkAdapter, "eurus": EurusAdapter,
                   "qwen_orm": QwenORMAdapter}


# ----------------------------------------------------------------------------------------------
# batched scoring
# ----------------------------------------------------------------------------------------------

@dataclass
class ScoreStats:
    responses: int = 0
    forward_passes: int = 0
    tokens: int = 0
    truncated: int = 0
    seconds: float = 0.0


def score_encoded(adapter: Adapter, encs: list[Encoded], batch_tokens: int = 16384, batch_size: int = 64,
                  stats: ScoreStats | None = None) -> list[list[float]]:
    """One forward pass per batch; batches of length-sorted inputs (longest first), padded to the
    batch's longest, at most batch_tokens padded tokens and batch_size rows."""
    stats = stats if stats is not None else ScoreStats()
    if isinstance(adapter.model, pooling.PoolingModel):  # backend vllm: vLLM batches and schedules
        return pooling.score_encoded(adapter, encs, stats)
    t0 = time.perf_counter()
    order = sorted(range(len(encs)), key=lambda i: -len(encs[i].input_ids))
    results: list[list[float] | None] = [None] * len(encs)
    dev, pad = adapter.device, adapter.pad_id()
    k = 0
    with torch.inference_mode():
        while k < len(order):
            longest = max(1, len(encs[order[k]].input_ids))
            rows = max(1, min(batch_size, batch_tokens // longest))
            batch = order[k:k + rows]
            k += rows
            T = max(len(encs[i].input_ids) for i in batch)
            ids = torch.full((len(batch), T), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), T), dtype=torch.long)
            for r, i in enumerate(batch):  # right padding: positions of real tokens are unchanged
                L = len(encs[i].input_ids)
                ids[r, :L] = torch.tensor(encs[i].input_ids, dtype=torch.long)
                mask[r, :L] = 1
            values = adapter.forward(ids.to(dev), mask.to(dev)).float().cpu()
            stats.forward_passes += 1
            stats.tokens += int(mask.sum())
            for r, i in enumerate(batch):
                results[i] = adapter.readout(values[r], encs[i]) if encs[i].positions else []
    stats.responses += len(encs)
    stats.truncated += sum(1 for e in encs if e.n_kept < e.n_steps and not adapter.outcome)
    stats.seconds += time.perf_counter() - t0
    return results  # type: ignore[return-value]


def score_responses(adapter: Adapter, questions: Sequence[str], steps_list: Sequence[list[str]],
                    batch_tokens: int = 16384, batch_size: int = 64,
                    stats: ScoreStats | None = None) -> list[list[float]]:
    """Step scores of each response (an ORM: [one score]). A response without steps gets []."""
    encs = [adapter.encode(q, list(s)) if len(s) else Encoded([], [], 0) for q, s in zip(questions, steps_list)]
    keep = [i for i, e in enumerate(encs) if e.input_ids]
    scored = score_encoded(adapter, [encs[i] for i in keep], batch_tokens, batch_size, stats)
    out: list[list[float]] = [[] for _ in encs]
    for i, s in zip(keep, scored):
        out[i] = s
    return out


def score_prefixes(adapter: Adapter, questions: Sequence[str], steps_list: Sequence[list[str]],
                   batch_tokens: int = 16384, batch_size: int = 64,
                   stats: ScoreStats | None = None) -> list[list[float]]:
    """Outcome RMs on ProcessBench: each prefix steps[:k+1] is its own instance; returns per case the
    list of prefix scores (one per step)."""
    flat_q, flat_s, owner = [], [], []
    for c, (q, steps) in enumerate(zip(questions, steps_list)):
        for k in range(len(steps)):
            flat_q.append(q)
            flat_s.append(list(steps[:k + 1]))
            owner.append(c)
    scored = score_responses(adapter, flat_q, flat_s, batch_tokens, batch_size, stats)
    out: list[list[float]] = [[] for _ in steps_list]
    for c, s in zip(owner, scored):
        out[c].extend(s)
    return out


def score_naive_per_prefix(adapter: Adapter, question: str, steps: list[str]) -> list[float]:
    """The quadratic baseline (one forward per step prefix, reading the prefix's last step). Kept for
    the speed benchmark and as a test oracle that one-pass scoring equals it."""
    out = []
    for k in range(len(steps)):
        enc = adapter.encode(question, steps[:k + 1])
        out.append(score_encoded(adapter, [enc], batch_size=1)[0][-1])
    return out


# ----------------------------------------------------------------------------------------------
# building adapters from config
# ----------------------------------------------------------------------------------------------

def _device():
    return "cuda" if _on_gpu() else "cpu"


def _on_gpu() -> bool:
    return torch.cuda.is_available()


def _placement() -> dict:
    """On GPU nodes weights are spread over the visible GPUs (device_map auto: 72B models)."""
    return {"device_map": "auto"} if _on_gpu() else {}


def _hub_tokenizer_class(model_dir: str):
    """The transformers class the repo's tokenizer_config.json names (None: none named, unknown, or Hub
    code). transformers 5's AutoTokenizer maps model_type mistral to MistralCommonBackend and, for a repo
    without Mistral's own tokenizer files, falls back to a generic converter that ignores the repo's
    LlamaTokenizer: for Math-Shepherd "+ -" then encodes to [28806, 387], not the card's [648, 387]."""
    cfg_file = Path(model_dir) / "tokenizer_config.json"
    if not cfg_file.exists():
        return None
    cfg = json.loads(cfg_file.read_text())
    name = cfg.get("tokenizer_class")
    if not name or cfg.get("auto_map"):
        return None
    return tokenizer_class_from_name(name) or (None if name.endswith("Fast") else tokenizer_class_from_name(name + "Fast"))


def _tokenizer(path: str, trust_remote_code: bool = False):
    d = _resolve_dir(path, trust_remote_code)
    cls = _hub_tokenizer_class(d)
    if cls is not None:
        return cls.from_pretrained(d)
    return AutoTokenizer.from_pretrained(d, trust_remote_code=trust_remote_code)


def _causal_lm(path: str, dtype, trust_remote_code: bool = False):
    return AutoModelForCausalLM.from_pretrained(_resolve_dir(path, trust_remote_code), dtype=_dtype(dtype),
                                                trust_remote_code=trust_remote_code, **_placement())


def load_adapter(spec: dict, backend: str | None = None) -> Adapter:
    """Build an adapter from a resolved spec (`plan.resolve_prm_specs`): adapter, path, dtype,
    trust_remote_code, max_length, params (+ ref_path/ref_dtype for eurus), and `backend` (absent:
    transformers; vllm: `_vllm_adapter`). `backend` here overrides the spec's."""
    kind = spec["adapter"]
    if kind not in ADAPTER_CLASSES:
        raise ValueError(f"unknown scoring adapter '{kind}' (allowed: {', '.join(ADAPTERS)})")
    backend = backend or spec.get("backend", "transformers")
    if backend == "vllm":
        return _vllm_adapter(spec)
    if backend != "transformers":
        raise ValueError(f"unknown scoring backend {backend!r} (allowed: {', '.join(pooling.BACKENDS)})")
    path, dtype, trc = spec["path"], spec.get("dtype"), bool(spec.get("trust_remote_code", False))
    params = dict(spec.get("params") or {})
    dev = _device()
    if kind == "trained":
        model, tok, fmt = load_prm(path)  # on its device
        max_length = spec.get("max_length") or getattr(model, "max_length", None)
        return TrainedAdapter(model.eval(), tok, max_length, step_format=fmt, **params)
    tok = _tokenizer(path, trc)
    if kind in ("qwen_prm", "qwen_orm", "skywork"):
        model = load_head_model(path, kind, dtype, trc)
    else:
        model = _causal_lm(path, dtype, trc)
    if not _on_gpu():
        model = model.to(dev) if hasattr(model, "to") else model
    model.eval()
    if kind == "eurus":
        ref = _causal_lm(spec["ref_path"], spec.get("ref_dtype", dtype), bool(spec.get("ref_trust_remote_code", False)))
        params["ref_model"] = (ref if _on_gpu() else ref.to(dev)).eval()
    adapter = ADAPTER_CLASSES[kind](model, tok, spec.get("max_length"), **params)
    log.info("adapter %s on %s: %s", kind, path, json.dumps(adapter.token_info(), ensure_ascii=False))
    return adapter


def _vllm_adapter(spec: dict) -> Adapter:
    """Backend vllm (prm_lessons.pooling): the adapter class, tokenizer, encoding and readout of the
    transformers backend, with vLLM's pooling runner in place of the transformers forward. `spec["vllm"]`
    (plan.resolve_prm_specs): tensor_parallel_size, gpu_memory_utilization."""
    kind, trc = spec["adapter"], bool(spec.get("trust_remote_code", False))
    path = _resolve_dir(spec["path"], trc)
    pooling.check_servable(kind, path)  # before the tokenizer: a wrong checkpoint fails first, and clearly
    params = dict(spec.get("params") or {})
    if kind == "trained":
        meta = json.loads((Path(path) / FORMAT_FILE).read_text())
        tok = AutoTokenizer.from_pretrained(path)
        adapter = TrainedAdapter(None, tok, spec.get("max_length") or meta.get("max_length"),
                                 step_format=meta["format"], **params)
    else:
        adapter = ADAPTER_CLASSES[kind](None, _tokenizer(path, trc), spec.get("max_length"), **params)
    v = spec.get("vllm") or {}
    adapter.model = pooling.PoolingModel(
        path, kind, step_tag_id=adapter.step_tag_id, dtype=spec.get("dtype"), max_model_len=adapter.max_length,
        tensor_parallel_size=int(v.get("tensor_parallel_size", 1)),
        gpu_memory_utilization=float(v.get("gpu_memory_utilization", 0.9)), trust_remote_code=trc)
    log.info("adapter %s (vLLM pooling) on %s: %s", kind, path, json.dumps(adapter.token_info(), ensure_ascii=False))
    return adapter


# ----------------------------------------------------------------------------------------------
# candidate next steps (PRM-guided search, prm_lessons.search)
# ----------------------------------------------------------------------------------------------
# A request is (key, question, prefix steps, candidate steps); the answer is one score per candidate:
# the PRM's score of the candidate as the step after the prefix (NaN when it does not fit max_length).


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
