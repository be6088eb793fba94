"""The process reward model this workflow trains: a base LM + 2-class step head, and its directory format.

Model (as the released Qwen2.5-Math-PRM): the base model's last hidden state at the step token placed
after every step (`prm_lessons.steps.build_prm_input`, the one step-format contract) goes through
`Linear(h,h) -> ReLU -> Linear(h,2)`; P(good step) = softmax(logits)[1].

Directory (written by `save_prm` at the end of training, read by `load_prm`; a Hugging Face directory),
in one of two layouts (prm.json `layout`):
  `project` (head-only and LoRA PRMs, and full fine-tuning of a base that is not Qwen2):
    config.json + model.safetensors  the base model (AutoModel, i.e. without the LM head), LoRA merged
    tokenizer files                  incl. the step token (added as a special token when the base lacks it)
    prm_head.safetensors             the step head
    prm.json                         step format, max_length, label type, loss, mode, base, head shape
  `released` (full fine-tuning of a Qwen2 base): as Qwen/Qwen2.5-Math-PRM-7B is published, so vLLM's
  Qwen2ForProcessRewardModel (prm_lessons.scoring.pooling) serves it like the released PRMs:
    config.json                      `architectures: ["Qwen2ForProcessRewardModel"]`, model_type qwen2, 2 labels
    model*.safetensors (+ index)     `model.*` (the Qwen2 body) and `score.0.*`, `score.2.*` (the head:
                                     Linear(h,h) -> ReLU -> Linear(h,2), the released checkpoint's names)
    tokenizer files, prm.json        as above (`step_token_id`: <extra_0>'s id in THIS tokenizer; the
                                     released PRMs hold it at 151651, a base that lacks it gets a new id)
  The released repos' `auto_map` and remote-code files (modeling_qwen2_rm.py) are not written: neither
  vLLM nor this loader runs them; transformers users load the body with AutoModel and the head by name.

Training (`prm_lessons.training.train`), the frozen-base step features (`prm_lessons.training.features`) and scoring
(`prm_lessons.scoring`) all build the model from here.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch import nn

from ..jobs import budget
from ..jobs.hardware import resolve_dtype
from ..jobs.progress import Progress
from ..steps import StepFormat
from ..tables import check_safetensors_dir, read_json, read_safetensors, write_json

log = logging.getLogger(__name__)

HEAD_FILE = "prm_head.safetensors"
FORMAT_FILE = "prm.json"
# the released layout: Qwen2.5-Math-PRM's architecture and parameter names (vLLM model_executor/models/qwen2_rm.py)
RELEASED_ARCHITECTURE = "Qwen2ForProcessRewardModel"
RELEASED_BODY, RELEASED_HEAD = "model", "score"
RELEASED_HEAD_NAMES = {"net.0.weight": "score.0.weight", "net.0.bias": "score.0.bias",
                       "net.2.weight": "score.2.weight", "net.2.bias": "score.2.bias"}

DTYPES = ("bfloat16", "float16", "float32")


def torch_dtype(name: str | None):
    """A config dtype name (`models.*.dtype`: bfloat16, float16, float32, auto) as a torch dtype;
    None for `auto` or no name (the caller's default: the checkpoint's dtype, or load_prm's choice)."""
    if name in (None, "", "auto"):
        return None
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(DTYPES)}, auto)")
    return getattr(torch, name)


# ----------------------------------------------------------------------------------------------- model


def step_loss(logits, targets, label_type: str, soft_loss: str = "bce"):
    """Loss over the selected step positions. logits (n, 2); targets (n,) in [0, 1]."""
    logits = logits.float()
    targets = targets.float()
    if label_type == "hard":
        return F.cross_entropy(logits, targets.long())
    if soft_loss == "mse":
        return F.mse_loss(torch.softmax(logits, dim=-1)[:, 1], targets)
    # P(good) = softmax(l)[1] = sigmoid(l1 - l0): BCE on it, computed stably from the logit difference
    return F.binary_cross_entropy_with_logits(logits[:, 1] - logits[:, 0], targets)


class StepHead(nn.Module):
    """Linear(h,h) -> ReLU -> Linear(h,2), the value head of the released Qwen2.5-Math-PRM.

    `standardize=True` (head-only mode, `training.standardize_features`) puts a fixed per-feature
    standardisation in front: (h - mean) / std with the mean and std of the training set's step
    features (buffers `feature_mean`, `feature_std`, saved with the head). A frozen base's raw hidden
    states have a few dimensions of very large magnitude; on them the head stays at the majority
    class (measured: embedded-signal review), while a fine-tuned base adapts its own scale, so full
    and LoRA fine-tuning keep the paper's head unchanged."""

    def __init__(self, hidden_size: int, standardize: bool = False):
        super().__init__()
        self.hidden_size = hidden_size
        self.standardize = standardize
        if standardize:
            self.register_buffer("feature_mean", torch.zeros(hidden_size))
            self.register_buffer("feature_std", torch.ones(hidden_size))
        self.net = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, 2))

    @torch.no_grad()
    def fit_standardization(self, features: torch.Tensor, min_std: float = 1e-4) -> None:
        """Set the standardisation from the training set's step features [n, h] (float)."""
        if not self.standardize:
            raise ValueError("fit_standardization on a head built without standardize=True")
        x = features.float()
        self.feature_mean.copy_(x.mean(dim=0))
        self.feature_std.copy_(x.std(dim=0, unbiased=False).clamp_min(min_std))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        w = self.net[0].weight  # a base spread over GPUs hands over its last layer's device
        if self.standardize:
            h = (h.to(device=w.device, dtype=torch.float32) - self.feature_mean) / self.feature_std
        return self.net(h.to(device=w.device, dtype=w.dtype))


def head_type(head_state: dict) -> str:
    return "standardize-linear-relu-linear" if "feature_mean" in head_state else "linear-relu-linear"


def load_head(prm_dir: str | Path, meta: dict) -> StepHead:
    """The step head of a PRM directory (its prm.json read as `meta`), with its standardisation if any."""
    state = read_safetensors(Path(prm_dir) / HEAD_FILE)
    head = StepHead(int(meta["head"]["hidden_size"]), standardize="feature_mean" in state)
    head.load_state_dict(state)
    return head


class ProcessRewardModel(nn.Module):
    """Base model (AutoModel, no LM head) + StepHead read at the step-token positions."""

    def __init__(self, backbone: nn.Module, head: StepHead, label_type: str = "hard", soft_loss: str = "bce"):
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.label_type = label_type
        self.soft_loss = soft_loss

    @property
    def config(self):
        """The base's config (the same object). The Trainer reads the model's `config`: DeepSpeed's "auto"
        bucket sizes come from its hidden_size (transformers' trainer_config_finalize), and it sets
        `use_cache` from TrainingArguments (False: no KV cache in training). Everything else in
        transformers that treats a model as a PreTrainedModel checks isinstance, which this is not."""
        return self.backbone.config

    def step_logits(self, input_ids, attention_mask, step_batch, step_pos, position_ids=None) -> torch.Tensor:
        """Step logits (n, 2). `position_ids` without `attention_mask`: a packed batch (StepCollator packing)."""
        packed = {}
        if position_ids is not None:
            check_packed_attention(self.backbone.config)
            # no KV cache: transformers looks for packed sequences only without one, and a config's
            # use_cache (Qwen2: true) would make one in a forward outside training or without checkpointing
            packed = {"position_ids": position_ids, "use_cache": False}
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask, **packed).last_hidden_state
        return self.head(hidden[step_batch, step_pos])

    def forward(self, input_ids, attention_mask=None, step_batch=None, step_pos=None, step_targets=None,
                n_tokens=None, position_ids=None):
        if step_batch is None:  # per-token logits [B, T, 2]: what scoring adapters read at step positions
            hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return self.head(hidden).float()
        logits = self.step_logits(input_ids, attention_mask, step_batch, step_pos, position_ids)
        out = {"logits": logits}
        if step_targets is not None:
            out["loss"] = step_loss(logits, step_targets, self.label_type, self.soft_loss)
        return out


class HeadOnlyModel(nn.Module):
    """`head` mode: the frozen base's step features are precomputed; only the head is trained."""

    def __init__(self, head: StepHead, label_type: str = "hard", soft_loss: str = "bce"):
        super().__init__()
        self.head = head
        self.label_type = label_type
        self.soft_loss = soft_loss

    def forward(self, step_features, step_targets=None, n_tokens=None):
        logits = self.head(step_features)
        out = {"logits": logits}
        if step_targets is not None:
            out["loss"] = step_loss(logits, step_targets, self.label_type, self.soft_loss)
        return out


# ------------------------------------------------------------------------------------ tokens and batches


def ensure_step_token(tokenizer, backbone, step_token: str) -> bool:
    """Add `step_token` as a special token (and resize the embeddings) when the tokenizer lacks it.
    Returns True when it was added. Qwen tokenizers already have <extra_0>; SmolLM2's does not."""
    vocab = tokenizer.get_vocab()
    if step_token in vocab:
        return False
    tokenizer.add_tokens([step_token], special_tokens=True)
    # real checkpoints often have spare embedding rows (Qwen: 152064 rows, 151665 tokens): resize only if needed
    if backbone is not None and len(tokenizer) > backbone.get_input_embeddings().num_embeddings:
        old = backbone.get_input_embeddings().num_embeddings
        # the new row is the mean of the old ones, not transformers' random draw: every job that adds the
        # token gets the same base (head-only PRMs share precomputed base features, prm_lessons.training.features)
        backbone.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        with torch.no_grad():
            emb = backbone.get_input_embeddings().weight
            emb[old:] = emb[:old].float().mean(dim=0).to(emb.dtype)
    return True


def pad_id(tokenizer) -> int:
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


# Attention implementations that keep the instances of a packed row apart, read in transformers 5.19's
# source: eager, sdpa and flex_attention get a block-diagonal causal mask built from position_ids that
# restart at 0 when no attention mask is given (masking_utils._preprocess_mask_arguments ->
# find_packed_sequence_indices); flash_attention_2/3/4 run their varlen kernel with cu_seqlens taken from
# the same position_ids (modeling_flash_attention_utils._is_packed_sequence: one row, as packing makes).
# Any other (a custom or Hub kernel outside masking_utils' mapping) gets no mask and would attend across.
PACKED_ATTENTION = ("sdpa", "eager", "flex_attention", "flash_attention_2", "flash_attention_3",
                    "flash_attention_4")


def check_packed_attention(config) -> None:
    """Raise ValueError unless the base's attention implementation keeps packed instances apart."""
    impl = getattr(config, "_attn_implementation", None)
    if impl not in PACKED_ATTENTION:
        raise ValueError(f"training.packing: attention implementation {impl!r} would attend across the "
                         f"instances of a packed row (exact: {', '.join(PACKED_ATTENTION)}); set "
                         f"training.packing: false")


@dataclass
class StepCollator:
    """Right-pads token ids; flattens step positions to (batch index, token index) pairs + targets.

    `packing`: the micro-batch's instances concatenated into one row instead (no padding, no attention
    mask), with `position_ids` restarting at 0 per instance (transformers' DataCollatorWithFlattening);
    the step positions are offset into the row (all step_batch 0), the targets concatenated in order."""

    pad_token_id: int
    packing: bool = False

    def __call__(self, items: list[dict]) -> dict:
        if "step_features" in items[0]:  # head mode
            return {"step_features": torch.cat([it["step_features"] for it in items]),
                    "step_targets": torch.tensor([t for it in items for t in it["step_targets"]], dtype=torch.float32),
                    "n_tokens": torch.tensor(sum(it["n_tokens"] for it in items))}
        if self.packing:
            return _packed(items)
        width = max(len(it["input_ids"]) for it in items)
        ids = torch.full((len(items), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(items), width), dtype=torch.long)
        sb, sp, st = [], [], []
        for b, it in enumerate(items):
            n = len(it["input_ids"])
            ids[b, :n] = torch.tensor(it["input_ids"], dtype=torch.long)
            mask[b, :n] = 1
            sb += [b] * len(it["step_pos"])
            sp += list(it["step_pos"])
            st += list(it["step_targets"])
        return {"input_ids": ids, "attention_mask": mask, "step_batch": torch.tensor(sb, dtype=torch.long),
                "step_pos": torch.tensor(sp, dtype=torch.long),
                "step_targets": torch.tensor(st, dtype=torch.float32), "n_tokens": mask.sum()}


def _packed(items: list[dict]) -> dict:
    """StepCollator with packing: one row [1, sum of lengths] and its restarting position_ids."""
    from transformers import DataCollatorWithFlattening  # lazy: as load_base

    flat = DataCollatorWithFlattening(return_tensors="pt")([{"input_ids": list(it["input_ids"])} for it in items])
    sp, st, offset = [], [], 0
    for it in items:
        sp += [offset + int(p) for p in it["step_pos"]]
        st += list(it["step_targets"])
        offset += len(it["input_ids"])
    return {"input_ids": flat["input_ids"], "position_ids": flat["position_ids"],
            "step_batch": torch.zeros(len(sp), dtype=torch.long), "step_pos": torch.tensor(sp, dtype=torch.long),
            "step_targets": torch.tensor(st, dtype=torch.float32), "n_tokens": torch.tensor(offset)}


def step_features(backbone, instances: list[dict], pad_token_id: int, batch_size: int, device) -> list[dict]:
    """`head` mode: one forward of the frozen base per instance; keep the hidden states at the step tokens."""
    backbone.eval()
    collate = StepCollator(pad_token_id)
    order = sorted(range(len(instances)), key=lambda i: len(instances[i]["input_ids"]))  # little padding
    feats: list[dict | None] = [None] * len(instances)
    t0 = time.perf_counter()
    progress = Progress(log, "frozen-base features", len(instances), "inputs")  # a line a minute
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            batch = collate([instances[i] for i in idx])
            hidden = backbone(input_ids=batch["input_ids"].to(device),
                              attention_mask=batch["attention_mask"].to(device)).last_hidden_state
            sel = hidden[batch["step_batch"].to(device), batch["step_pos"].to(device)].float().cpu()
            offset = 0
            for i in idx:
                k = len(instances[i]["step_pos"])
                feats[i] = {"step_features": sel[offset:offset + k], "step_targets": instances[i]["step_targets"],
                            "n_tokens": len(instances[i]["input_ids"]), "input_ids": instances[i]["input_ids"]}
                offset += k
            progress.advance(len(idx))
    progress.close()
    dtype = str(next(backbone.parameters()).dtype).replace("torch.", "")
    budget.add_forward("frozen base", dtype, len(instances), sum(len(it["input_ids"]) for it in instances),
                       time.perf_counter() - t0)
    return feats  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------------ base


def step_format(settings: dict) -> StepFormat:
    """The PRM's step format from (resolved) training settings."""
    return StepFormat(step_token=settings["step_token"], system_prompt=settings["system_prompt"],
                      use_chat_template=bool(settings["use_chat_template"]))


def use_bf16(settings: dict) -> bool:
    """bf16 autocast for training (settings `precision`): on a bf16-capable GPU only."""
    p = settings["precision"]
    if p == "fp32":
        return False

    on_gpu = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if p == "bf16":
        if not on_gpu:
            log.warning("training.precision=bf16 asked for but no bf16-capable GPU: training in fp32")
        return on_gpu
    return on_gpu  # auto: bf16 autocast on GPU, fp32 on CPU (CPU bf16 backward is slower than fp32 here)


def head_base_dtype(settings: dict):
    """dtype of the frozen base in head mode (training and `frozen_base` agree on it). Frozen or
    adapter-wrapped bases can be held in bf16 on GPU (full fine-tuning keeps fp32 master weights under
    bf16 autocast); on CPU the frozen base runs in bf16 where the CPU has native bf16 (forward only: ~3x
    fp32 there), else in float32 (emulated bf16 is slower: hardware.resolve_dtype)."""
    if torch.cuda.is_available():
        return torch.bfloat16 if use_bf16(settings) else torch.float32
    return getattr(torch, resolve_dtype("auto", on_gpu=False)[0])


def load_base(base_dir: str, dtype, trust_remote_code: bool = False):
    """The base model (AutoModel, no LM head) and its tokenizer. `trust_remote_code`: the base's model entry
    key (training settings carry it, plan.training_settings); passed explicitly, as transformers asks on stdin
    when it is None and a checkpoint names its own code."""
    # the head-only scoring jobs (features.score_with_features) never load a base, so they skip transformers:
    # lazy: transformers costs ~2 s of import
    from transformers import AutoModel, AutoTokenizer

    trust = bool(trust_remote_code)
    check_safetensors_dir(base_dir)  # a damaged weights file is named (transformers' error names none)
    tokenizer = AutoTokenizer.from_pretrained(base_dir, trust_remote_code=trust)
    backbone = AutoModel.from_pretrained(base_dir, dtype=dtype, trust_remote_code=trust)
    return backbone, tokenizer


def base_fingerprint(backbone, tokenizer, step_token: str) -> str:
    """Identity of a frozen PRM base: architecture sizes, dtype and the step token's embedding row
    (for an added token, the mean of every embedding row, so it hashes the whole embedding matrix)."""
    step_id = tokenizer.convert_tokens_to_ids(step_token)
    emb = backbone.get_input_embeddings().weight
    row = emb[step_id].detach().to(torch.float32).cpu().contiguous()
    cfg = backbone.config
    h = hashlib.sha256()
    h.update(json.dumps([str(emb.dtype), int(emb.shape[0]), int(emb.shape[1]), int(cfg.num_hidden_layers),
                         step_token, int(step_id)]).encode())
    h.update(row.numpy().tobytes())
    return h.hexdigest()[:16]


def frozen_base(base_dir: str, settings: dict):
    """The frozen base of head-mode training: (backbone in eval mode, tokenizer with the step token,
    StepFormat, fingerprint). `settings`: resolved training settings (`train_settings.settings_from`)."""
    backbone, tokenizer = load_base(base_dir, head_base_dtype(settings), settings.get("trust_remote_code", False))
    ensure_step_token(tokenizer, backbone, settings["step_token"])
    for p in backbone.parameters():
        p.requires_grad_(False)
    backbone.eval()
    fmt = step_format(settings)
    return backbone, tokenizer, fmt, base_fingerprint(backbone, tokenizer, fmt.step_token)


# ------------------------------------------------------------------------------------ save and load


def released_layout_possible(backbone, head_state: dict) -> bool:
    """The released layout needs a Qwen2 body (vLLM's Qwen2ForProcessRewardModel) and the paper's head
    without a feature standardisation (head-only PRMs have one)."""
    return getattr(backbone.config, "model_type", None) == "qwen2" and set(head_state) == set(RELEASED_HEAD_NAMES)


def save_prm(out: str | Path, backbone, tokenizer, head_state: dict, fmt: StepFormat, meta: dict,
             state_dict: dict | None = None, dtype=None, layout: str = "project") -> None:
    """Write a PRM directory: base model (safetensors, `dtype`, default bfloat16), tokenizer, head, prm.json;
    `layout` project or released (module docstring)."""
    dtype = torch.bfloat16 if dtype is None else dtype
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if layout == "released":
        _save_released(out, backbone, tokenizer, head_state, fmt, meta, state_dict, dtype)
        return
    if layout != "project":
        raise ValueError(f"unknown PRM layout {layout!r} (project or released)")
    if state_dict is not None:
        state_dict = {k: v.to(dtype, copy=True) if v.is_floating_point() else v for k, v in state_dict.items()}
        backbone.save_pretrained(out, state_dict=state_dict)
    else:
        backbone.to(dtype).save_pretrained(out)
    tokenizer.save_pretrained(out)
    save_file(head_state, str(out / HEAD_FILE))
    _write_format(out, tokenizer, head_state, fmt, meta, "project")


def _write_format(out: Path, tokenizer, head_state: dict, fmt: StepFormat, meta: dict, layout: str) -> None:
    hidden = int(head_state["net.0.weight"].shape[1])
    write_json({
        "format": fmt.to_dict(), **meta, "layout": layout,
        "head": {"type": head_type(head_state), "hidden_size": hidden, "num_labels": 2, "positive_index": 1},
        "step_token_id": tokenizer.convert_tokens_to_ids(fmt.step_token),
    }, out / FORMAT_FILE, default=None)


def _save_released(out: Path, backbone, tokenizer, head_state: dict, fmt: StepFormat, meta: dict,
                   state_dict: dict | None, dtype) -> None:
    """The released layout: one state dict of `model.*` + `score.*` (sharded at 5 GB with an index, as
    save_pretrained does) and a Qwen2ForProcessRewardModel config."""
    from huggingface_hub import save_torch_state_dict  # lazy: only full fine-tuning of a Qwen2 base saves this

    if not released_layout_possible(backbone, head_state):
        raise ValueError("the released layout needs a Qwen2 base and the paper's head (no standardisation)")
    body = state_dict if state_dict is not None else backbone.state_dict()
    # copies: DeepSpeed's gathered ZeRO-3 weights are views of a larger buffer when already on the CPU,
    # which safetensors refuses to write (from a GPU, .to("cpu") copies anyway)
    sd = {f"{RELEASED_BODY}.{k}": v.detach().to("cpu", dtype if v.is_floating_point() else v.dtype,
                                                copy=True).contiguous()
          for k, v in body.items()}
    # the head stays float32, as in the project layout (vLLM casts it to its head dtype on load)
    sd.update({RELEASED_HEAD_NAMES[k]: v.detach().to("cpu", torch.float32, copy=True).contiguous()
               for k, v in head_state.items()})
    save_torch_state_dict(sd, out, max_shard_size="5GB")
    cfg = backbone.config.to_dict()
    cfg.update(architectures=[RELEASED_ARCHITECTURE], num_labels=2, dtype=str(dtype).replace("torch.", ""),
               id2label={"0": "LABEL_0", "1": "LABEL_1"}, label2id={"LABEL_0": 0, "LABEL_1": 1})
    cfg.pop("auto_map", None)  # no remote code is shipped (module docstring)
    write_json(cfg, out / "config.json", sort_keys=True, default=None)
    tokenizer.save_pretrained(out)
    _write_format(out, tokenizer, head_state, fmt, meta, "released")


def _released_head(path: Path, meta: dict) -> StepHead:
    """The step head of a released-layout directory: `score.*` from its safetensors (index-aware)."""
    index = path / "model.safetensors.index.json"
    files = (sorted({path / f for f in read_json(index)["weight_map"].values()}) if index.exists()
             else sorted(path.glob("*.safetensors")))
    names = {v: k for k, v in RELEASED_HEAD_NAMES.items()}
    state = {}
    for f in files:
        state.update({names[k]: v for k, v in read_safetensors(f, keep=names.__contains__).items()})
    head = StepHead(int(meta["head"]["hidden_size"]))
    head.load_state_dict(state)  # strict: a missing score.* tensor is an error
    return head.float()


def load_prm(path: str | Path, device=None, dtype=None, trust_remote_code: bool = False):
    """Load a PRM directory written by `save_prm` -> (ProcessRewardModel in eval mode, tokenizer, StepFormat).

    Without `device`, a base is spread over all visible GPUs when there is more than one (device_map auto,
    so a large PRM gets the GPUs its size needs), else put on the one GPU or the CPU. The model carries
    `max_length` (from prm.json): the scoring length when the caller gives none. `dtype`: a torch dtype
    or a config dtype name; None (or auto): bfloat16 on GPU, float32 on CPU but for head-only PRMs, whose
    frozen base runs as in training and `frozen_base` (head_base_dtype: bf16 where the CPU has it natively).
    `trust_remote_code`: that of the base's model entry (the saved base keeps its auto_map and code files)."""
    path = Path(path)
    if not (path / FORMAT_FILE).exists():
        raise FileNotFoundError(f"{path}: not a PRM directory (no {FORMAT_FILE})")
    meta = read_json(path / FORMAT_FILE)
    fmt = StepFormat.from_dict(meta["format"])
    spread = device is None and torch.cuda.is_available() and torch.cuda.device_count() > 1
    device = torch.device(device) if device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(dtype, str):
        dtype = torch_dtype(dtype)
    if dtype is None:
        dtype = (torch.bfloat16 if device.type == "cuda" else
                 getattr(torch, resolve_dtype("auto", on_gpu=False)[0]) if meta.get("mode") == "head"
                 else torch.float32)
    from transformers import AutoModel, AutoTokenizer  # lazy: as in load_base

    trust = bool(trust_remote_code)
    check_safetensors_dir(path)  # as load_base
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust)
    backbone = AutoModel.from_pretrained(path, dtype=dtype, trust_remote_code=trust,
                                         **({"device_map": "auto"} if spread else {}))
    head = _released_head(path, meta) if meta.get("layout") == "released" else load_head(path, meta)
    model = ProcessRewardModel(backbone, head, meta.get("label_type", "hard"), meta.get("soft_loss", "bce"))
    model.max_length = meta.get("max_length")
    if spread:  # inputs go to the first parameter's device (the embeddings); the head follows the output
        head.to(next(backbone.parameters()).device)
    else:
        model.to(device)
    model.eval()
    return model, tokenizer, fmt
