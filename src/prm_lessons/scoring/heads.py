"""Released PRM/ORM checkpoints whose head is built here (no Hub code, package docstring): the heads and
their weights (safetensors or pytorch_model*.bin), and what every model of a scoring job is loaded with
(a local directory for a Hub id, the dtype, the placement over the visible GPUs).
"""
from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModel

from ..models import hub
from ..models.prm import torch_dtype
from ..tables import check_safetensors_dir, read_json, read_safetensors


def on_gpu() -> bool:
    return torch.cuda.is_available()


def placement() -> dict:
    """On GPU nodes weights are spread over the visible GPUs (device_map auto: 72B models)."""
    return {"device_map": "auto"} if on_gpu() else {}


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
            shards = sorted(set(read_json(d / index)["weight_map"].values()))
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
            tensors = read_safetensors(f, keep=lambda k: k.startswith(prefix + "."))  # errors name the file
            out.update({k[len(prefix) + 1:]: v for k, v in tensors.items()})
        else:
            state = _bin_state(f)
            out.update({k[len(prefix) + 1:]: v.clone() for k, v in state.items() if k.startswith(prefix + ".")})
            del state
    if not out:
        raise ValueError(f"{path}: checkpoint has no '{prefix}.*' weights for this adapter")
    return out


def resolve_dir(path_or_id: str, trust_remote_code: bool = False, revision: str | None = None) -> str:
    """A local directory as is; a Hub id snapshotted with the files a job needs (hub.select_files:
    safetensors, else *.bin; *.py only when remote code is allowed). The workflow hands jobs local
    directories (rule download_model); a Hub id here is for interactive use."""
    local = (str(path_or_id) if Path(path_or_id).exists() else
             str(hub.snapshot(path_or_id, revision or "main", trust_remote_code=trust_remote_code)[0]))
    check_safetensors_dir(local)  # a damaged weights file is named before transformers reads it
    return local


def pretrained_dtype(name: str | None):
    """from_pretrained's dtype for a config dtype name: "auto" (the checkpoint's) when none is set."""
    dtype = torch_dtype(name)
    return "auto" if dtype is None else dtype


def load_head_model(path: str, kind: str, dtype=None, trust_remote_code: bool = False):
    """Released PRM/ORM with a head: remote class when allowed, else base + head built here."""
    path = resolve_dir(path, trust_remote_code)
    if trust_remote_code:
        model = AutoModel.from_pretrained(path, dtype=pretrained_dtype(dtype), trust_remote_code=trust_remote_code,
                                          **placement())
        return RemoteOutputs(model)
    # explicit False: the base and the head built here, never the checkpoint's auto_map code (nor a prompt)
    base = AutoModel.from_pretrained(path, dtype=pretrained_dtype(dtype), trust_remote_code=False, **placement())
    m = build_head_model(base, kind)
    if on_gpu():  # the head sits with the last layer's output
        m.to(next(base.parameters()).device) if not hasattr(base, "hf_device_map") else \
            getattr(m, HEAD_PREFIX[kind]).to(_last_device(base))
    head = getattr(m, HEAD_PREFIX[kind])
    missing, unexpected = head.load_state_dict(_checkpoint_tensors(path, HEAD_PREFIX[kind]), strict=False)
    if missing or unexpected:
        raise ValueError(f"{path}: head weights do not match adapter '{kind}' "
                         f"(missing {missing}, unexpected {unexpected})")
    return m


class RemoteOutputs:
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
