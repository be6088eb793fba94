"""A Hugging Face cache of stand-in models for the rehearsal: every Hub model of the paper config, at
its pinned revision, as a tiny random-weight model of the same architecture and file layout.

`build_hub_cache` writes `<hf_home>/hub/models--{org}--{name}/` exactly as `huggingface_hub` lays out a
download (content-addressed `blobs/`, `snapshots/<commit>/<file>` symlinks into them, `refs/<branch>`,
and the tree listing under `trees/`), so with ``HF_HOME=<hf_home> HF_HUB_OFFLINE=1`` the workflow's own
`snapshot_download(repo_id, revision=...)` and `from_pretrained` calls run unchanged. Weights are random;
the architecture (`config.json` architectures/model_type, head module names, tied embeddings), the
vocabulary size, the weight format (`.bin` vs safetensors, sharded or not) and the tokenizer files
(real vocabularies, `prm_lessons.rehearsal.tokenizers`) are those of the Hub repo (see REPOS for the
source of each fact; `verified` lists the facts read from the Hub page, vLLM's or the vendor's code).

CLI: ``python -m prm_lessons.rehearsal.hub_cache --config config/paper.yaml --hf-home DIR
[--prm800k-dir DIR]`` (that one also writes a small PRM800K: prm_lessons.rehearsal.prm800k_file).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
import yaml
from huggingface_hub._tree_cache import TreeCacheEntry, write_tree_cache
from huggingface_hub.constants import REPO_ID_SEPARATOR
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, GenerationConfig

from ..data.sources import git_blob_sha1
from ..scoring.heads import HEAD_PREFIX, make_head
from ..tables import write_text_atomic
from .prm800k_file import write_prm800k
from .tokenizers import save_tokenizer

log = logging.getLogger(__name__)

HEX40 = re.compile(r"^[0-9a-f]{40}$")

# Tiny but vLLM-CPU compatible: its attention kernels need head_dim >= 32 (64 / 2 heads).
DEFAULT_SCALE = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                 "num_key_value_heads": 1, "intermediate_size": 128}

_QWEN_RM_AUTO_MAP = {"AutoConfig": "configuration_qwen2_rm.Qwen2RMConfig"}


@dataclass(frozen=True)
class RepoSpec:
    """What a stand-in must share with its Hub repo (sizes aside)."""
    architecture: str                 # config.json `architectures[0]`
    model_type: str                   # config.json `model_type` (picks the transformers class)
    vocab_size: int                   # config.json `vocab_size` (embedding rows; >= tokenizer length)
    tokenizer: str = "qwen2"          # prm_lessons.rehearsal.tokenizers family
    weights: str = "safetensors"      # "safetensors" | "bin"
    shards: int = 1                   # 1: model.safetensors / pytorch_model.bin; >1: sharded + index
    head: str | None = None           # None (causal LM) | "qwen_prm" | "qwen_orm" | "skywork"
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 4096
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    rope_theta: float = 10000.0
    generation_config: bool = True
    auto_map: dict | None = None      # copied into config.json; no Hub code is shipped (trust_remote_code off)
    verified: tuple[str, ...] = ()    # facts read from a public source, with the source
    unverified: tuple[str, ...] = ()  # facts assumed (say so in reports)
    extra: dict = field(default_factory=dict)


# Facts per Hub repo. Sources: the Hub pages (config.json / file tree) as served by huggingface.co and
# indexed by the docs search; vLLM 0.32 `model_executor/models/qwen2_rm.py` (head of the Qwen RM/PRM);
# SkyworkAI/skywork-o1-prm-inference `vllm_add_dummy_model/prm_model.py` (Skywork value head).
REPOS: dict[str, RepoSpec] = {
    "Qwen/Qwen2.5-Math-7B-Instruct": RepoSpec(
        "Qwen2ForCausalLM", "qwen2", 152064, shards=4, bos_token_id=151643, eos_token_id=151645,
        verified=("Qwen2ForCausalLM/qwen2, vocab 152064, max_position_embeddings 4096 (config.json of a "
                  "snapshot copy of Qwen/Qwen2.5-Math-7B-Instruct, and of Qwen/Qwen2.5-Math-7B)",),
        unverified=("4 safetensors shards",)),
    # the data policy of config/paper.yaml (`data_policies`: the paper's §3.1.2 responses)
    "Qwen/Qwen2-Math-7B-Instruct": RepoSpec(
        "Qwen2ForCausalLM", "qwen2", 152064, shards=4, bos_token_id=151643, eos_token_id=151645,
        unverified=("Qwen2ForCausalLM, vocab 152064, max_position_embeddings 4096 as Qwen2.5-Math-7B-Instruct "
                    "(this repo's config.json was not read)", "chat template: the qwen2 family's",
                    "shard count (stand-in: 4)")),
    "Qwen/Qwen2.5-72B-Instruct": RepoSpec(
        "Qwen2ForCausalLM", "qwen2", 152064, shards=4, max_position_embeddings=32768,
        bos_token_id=151643, eos_token_id=151645, rope_theta=1000000.0,
        unverified=("Qwen2ForCausalLM, vocab 152064, max_position_embeddings 32768 (Qwen2.5 family "
                    "configs; this repo's config.json was not read)", "shard count (stand-in: 4)")),
    # the greedy-search policy of Table 8 (config `search.policy`)
    "Qwen/Qwen2.5-7B-Instruct": RepoSpec(
        "Qwen2ForCausalLM", "qwen2", 152064, shards=4, max_position_embeddings=32768,
        bos_token_id=151643, eos_token_id=151645, rope_theta=1000000.0,
        unverified=("Qwen2ForCausalLM, vocab 152064, max_position_embeddings 32768 (Qwen2.5 family "
                    "configs; this repo's config.json was not read)", "shard count (stand-in: 4)")),
    # the ProcessBench critics of Table 7 (config `critics`)
    "meta-llama/Llama-3.3-70B-Instruct": RepoSpec(
        "LlamaForCausalLM", "llama", 128256, tokenizer="llama3", shards=4, bos_token_id=128000,
        eos_token_id=128009, max_position_embeddings=131072, rope_theta=500000.0,
        unverified=("LlamaForCausalLM, vocab 128256, 131072 positions, rope_theta 500000 (Llama 3.1/3.3 "
                    "family; this gated repo's config.json was not read)", "rope_scaling omitted",
                    "chat template: the llama3 family's (Llama 3.1's)", "shard count (stand-in: 4)")),
    "Qwen/Qwen2.5-Math-72B-Instruct": RepoSpec(
        "Qwen2ForCausalLM", "qwen2", 152064, shards=4, bos_token_id=151643, eos_token_id=151645,
        unverified=("Qwen2ForCausalLM, vocab 152064, max_position_embeddings 4096 as Qwen2.5-Math-7B-Instruct "
                    "(this repo's config.json was not read)", "chat template: the qwen2 family's",
                    "shard count (stand-in: 4)")),
    "Qwen/QwQ-32B-Preview": RepoSpec(
        "Qwen2ForCausalLM", "qwen2", 152064, shards=4, max_position_embeddings=32768,
        bos_token_id=151643, eos_token_id=151645, rope_theta=1000000.0,
        verified=("Qwen2ForCausalLM/qwen2, vocab 152064, max_position_embeddings 32768, rope_theta 1e6, untied "
                  "(config.json of the copy hf.co/unsloth/QwQ-32B-Preview@1397937, _name_or_path "
                  "Qwen/QwQ-32B-Preview)",),
        unverified=("chat template: the qwen2 family's (QwQ's default system prompt differs)",
                    "shard count (stand-in: 4)")),
    "Qwen/Qwen2.5-Math-PRM-7B": RepoSpec(
        "Qwen2ForProcessRewardModel", "qwen2", 152064, tokenizer="qwen2_prm", shards=4, head="qwen_prm",
        bos_token_id=151643, eos_token_id=151645,
        auto_map={**_QWEN_RM_AUTO_MAP, "AutoModel": "modeling_qwen2_rm.Qwen2ForProcessRewardModel"},
        verified=("config.json: Qwen2ForProcessRewardModel, model_type qwen2, vocab 152064, untied, auto_map "
                  "(hf.co/Qwen/Qwen2.5-Math-PRM-7B/blame/main/config.json)",
                  "files: model-0000{1..4}-of-00004.safetensors + index, generation_config.json (tree 98218b1)",
                  "head score = Linear(h,h)+bias, ReLU, Linear(h,2)+bias (vLLM qwen2_rm.py)")),
    "Qwen/Qwen2.5-Math-7B-PRM800K": RepoSpec(
        "Qwen2ForProcessRewardModel", "qwen2", 152064, tokenizer="qwen2_prm", shards=4, head="qwen_prm",
        bos_token_id=151643, eos_token_id=151645,
        auto_map={**_QWEN_RM_AUTO_MAP, "AutoModel": "modeling_qwen2_rm.Qwen2ForProcessRewardModel"},
        unverified=("config.json, head and files as Qwen2.5-Math-PRM-7B's (released beside it with the same "
                    "card code; this repo's config.json was not read)", "shard count (stand-in: 4)")),
    "Qwen/Qwen2.5-Math-PRM-72B": RepoSpec(
        "Qwen2ForProcessRewardModel", "qwen2", 152064, tokenizer="qwen2_prm", shards=4, head="qwen_prm",
        bos_token_id=151643, eos_token_id=151645,
        auto_map={**_QWEN_RM_AUTO_MAP, "AutoModel": "modeling_qwen2_rm.Qwen2ForProcessRewardModel"},
        verified=("head as PRM-7B (vLLM qwen2_rm.py registers one class for both)",),
        unverified=("config.json as PRM-7B's (not read for 72B)", "shard count (stand-in: 4)")),
    "Qwen/Qwen2.5-Math-RM-72B": RepoSpec(
        "Qwen2ForRewardModel", "qwen2", 152064, shards=4, head="qwen_orm",
        bos_token_id=151643, eos_token_id=151645,
        auto_map={**_QWEN_RM_AUTO_MAP, "AutoModel": "modeling_qwen2_rm.Qwen2ForRewardModel"},
        verified=("config.json: Qwen2ForRewardModel, model_type qwen2, vocab 152064, untied, auto_map "
                  "(hf.co/Qwen/Qwen2.5-Math-RM-72B/blob/7894deb.../config.json)",
                  "head score = Linear(h,h)+bias, ReLU, Linear(h,1)+bias (vLLM qwen2_rm.py, num_labels 1)"),
        unverified=("shard count (stand-in: 4)",)),
    "peiyi9979/math-shepherd-mistral-7b-prm": RepoSpec(
        "LlamaForCausalLM", "llama", 32000, tokenizer="mistral_v1", weights="bin", shards=2,
        bos_token_id=1, eos_token_id=2, max_position_embeddings=32768,
        verified=("model_type llama: the Hub page tags the repo 'llama' (main and refs/pr/5), i.e. its "
                  "config.json model_type; a Mistral-7B fine-tune saved as Llama",
                  "main holds only .bin weights + tokenizer.model, safetensors only in refs/pr/5 "
                  "(refs/pr/5's history: 'Adding safetensors variant')"),
        unverified=("architectures LlamaForCausalLM follows from model_type llama; config.json text not read",
                    "pytorch_model-0000{1,2}-of-00002.bin names as listed before, not re-read",
                    "vocab 32000 = Mistral v1 SentencePiece size")),
    "RLHFlow/Llama3.1-8B-PRM-Mistral-Data": RepoSpec(
        "LlamaForCausalLM", "llama", 128256, tokenizer="llama3", shards=4, bos_token_id=128000, eos_token_id=128009,
        max_position_embeddings=131072, rope_theta=500000.0,
        verified=("LlamaForCausalLM ('Upload LlamaForCausalLM' commits; same recipe as Deepseek-Data)",),
        unverified=("vocab 128256 (Llama 3.1), 4 shards as Deepseek-Data", "rope_scaling omitted")),
    "RLHFlow/Llama3.1-8B-PRM-Deepseek-Data": RepoSpec(
        "LlamaForCausalLM", "llama", 128256, tokenizer="llama3", shards=4, bos_token_id=128000, eos_token_id=128009,
        max_position_embeddings=131072, rope_theta=500000.0,
        verified=("files: model-0000{1..4}-of-00004.safetensors + index, generation_config.json, "
                  "tokenizer.json (tree f645c10, commit 'Upload LlamaForCausalLM')",),
        unverified=("vocab 128256 (Llama 3.1)", "rope_scaling omitted")),
    "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-1.5B": RepoSpec(
        "Qwen2ForPrmModel", "qwen2", 151936, weights="bin", head="skywork", tie_word_embeddings=True,
        bos_token_id=151643, eos_token_id=151645, generation_config=False,
        auto_map={**_QWEN_RM_AUTO_MAP, "AutoModel": "modeling_qwen2_rm.Qwen2ForRewardModel"},
        verified=("config.json: Qwen2ForPrmModel, model_type qwen2, vocab 151936, tied, auto_map "
                  "(hf.co/Skywork/Skywork-o1-Open-PRM-Qwen-2.5-1.5B/blob/ff174cb/config.json)",
                  "files: single pytorch_model.bin, no generation_config.json (tree 025915e)",
                  "head v_head.summary = Linear(h,1)+bias over model.* (Skywork's vLLM plugin prm_model.py)")),
    "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-7B": RepoSpec(
        "Qwen2ForPrmModel", "qwen2", 152064, weights="bin", head="skywork",
        bos_token_id=151643, eos_token_id=151645, generation_config=False,
        auto_map={**_QWEN_RM_AUTO_MAP, "AutoModel": "modeling_qwen2_rm.Qwen2ForRewardModel"},
        verified=("files: single pytorch_model.bin (15.2 GB bf16), tokenizer.json, no generation_config.json "
                  "(trees fee24b6, d28ac22)", "head as 1.5B (same modeling_qwen2_rm.py size)"),
        unverified=("config.json not read: architecture as 1.5B; vocab 152064 and untied as its "
                    "Qwen2.5-Math-7B base",)),
    "PRIME-RL/EurusPRM-Stage1": RepoSpec(
        "Qwen2ForCausalLM", "qwen2", 152064, shards=4, bos_token_id=151643, eos_token_id=151645,
        verified=("model_type qwen2, vocab 152064, hidden 3584, untied (config.json before the 'Update "
                  "model' commit)", "files: model-0000{1..4}-of-00004.safetensors + index, "
                  "generation_config.json (tree c28d10d)"),
        unverified=("architectures: the early config said Qwen2Model; the current one (after 'Update model') "
                    "was not read. Stand-in: Qwen2ForCausalLM with lm_head, as the implicit PRM needs log-probs",)),
    "PRIME-RL/EurusPRM-Stage2": RepoSpec(
        "Qwen2ForCausalLM", "qwen2", 152064, shards=4, bos_token_id=151643, eos_token_id=151645,
        verified=("model_type qwen2, vocab 152064 (config.json rev 6d9a234)",
                  "files at main: model-0000{1..4}-of-00004.safetensors + index, generation_config.json, "
                  "tokenizer.json"),
        unverified=("architectures as Stage1",)),
}


# ---------------------------------------------------------------------------------------------------
# revisions
# ---------------------------------------------------------------------------------------------------

def standin_commit(repo_id: str, ref: str) -> str:
    """40-hex commit id the stand-in uses for a branch/tag revision (e.g. `main`): deterministic, and
    recognisably not a Hub commit of that repo (it hashes a rehearsal label)."""
    return hashlib.sha1(f"prm-lessons rehearsal stand-in {repo_id}@{ref}".encode()).hexdigest()


def resolve_revision(name: str, entry: dict) -> tuple[str, str | None]:
    """(commit, ref): a 40-hex revision is the commit; a branch/tag (e.g. `main`, not yet pinned) gets
    a stand-in commit plus `refs/<ref>` pointing at it, as the Hub cache records a branch download."""
    rev = entry.get("revision")
    if rev is None or str(rev).strip() == "":
        raise ValueError(
            f"models.{name} ({entry.get('id')}): no `revision`. The rehearsal builds the Hub cache at each "
            f"model's pinned revision; add `revision: <40-hex commit>` to this entry of the config.")
    rev = str(rev).strip()
    if HEX40.match(rev):
        return rev, None
    if not re.match(r"^[A-Za-z0-9._/-]+$", rev) or ".." in rev:
        raise ValueError(f"models.{name}: revision {rev!r} is neither a 40-hex commit nor a branch/tag name")
    return standin_commit(entry["id"], rev), rev


# ---------------------------------------------------------------------------------------------------
# cache layout (as huggingface_hub writes it)
# ---------------------------------------------------------------------------------------------------

def repo_folder(hf_home: Path, repo_id: str) -> Path:
    return Path(hf_home) / "hub" / REPO_ID_SEPARATOR.join(["models", *repo_id.split("/")])


# written into every folder these tools create; a folder they would wipe or overwrite must hold it (or be
# empty or new), so `--out .` or `--hf-home ~/.cache/huggingface` stops instead of deleting the user's files
OWN_MARK = ".prm-lessons-rehearsal"


def claim_dir(path: Path, flag: str, made_by_us: tuple[str, ...] = ()) -> Path:
    """`path` as a folder of these tools: new or empty (then marked), marked by an earlier run, or one an
    earlier version made (holding every entry of `made_by_us`); anything else is a ValueError naming
    `flag` (nothing is written or removed)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {path}: not a directory")
    ours = (path / OWN_MARK).exists() or (made_by_us and all((path / m).exists() for m in made_by_us))
    if path.is_dir() and not ours and any(path.iterdir()):
        raise ValueError(f"{flag} {path}: a folder these tools did not make (no {OWN_MARK}) and not empty; "
                         "its files would be replaced or removed: give a new or empty folder")
    path.mkdir(parents=True, exist_ok=True)
    (path / OWN_MARK).touch()
    return path


def cli_errors(prog: str, run) -> int:
    """run() as a command: a ValueError or OSError (a folder refused, a disk full) is one line on stderr and
    exit status 2, not a traceback."""
    try:
        return run()
    except ValueError as exc:
        line = (str(exc).splitlines() or [type(exc).__name__])[0]
    except OSError as exc:
        line = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
    print(f"{prog}: error: {line}", file=sys.stderr)
    return 2


def _is_lfs(name: str, size: int) -> bool:
    # The Hub stores weights, SentencePiece models and large files in LFS; their etag is the sha256.
    return name.endswith((".safetensors", ".bin", ".model")) or size > 10 * 1024 * 1024


def write_snapshot(hf_home: Path, repo_id: str, commit: str, files: dict[str, Path],
                   ref: str | None = None) -> Path:
    """Place `files` ({repo path: local file}) in the cache as a download of `repo_id`@`commit` leaves
    them, with `refs/main` (and `refs/<ref>`) naming `commit`. Returns the snapshot directory."""
    storage = repo_folder(hf_home, repo_id)
    blobs, snap = storage / "blobs", storage / "snapshots" / commit
    blobs.mkdir(parents=True, exist_ok=True)
    if snap.exists():
        shutil.rmtree(snap)
    snap.mkdir(parents=True)
    tree = {}
    for rel, src in sorted(files.items()):
        data = Path(src).read_bytes()
        git_sha = git_blob_sha1(data)
        lfs = _is_lfs(rel, len(data))
        sha256 = hashlib.sha256(data).hexdigest() if lfs else None
        etag = sha256 if lfs else git_sha
        blob = blobs / etag
        if not blob.exists():
            tmp = blob.with_suffix(".incomplete")
            tmp.write_bytes(data)
            os.replace(tmp, blob)
        link = snap / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
        tree[rel] = (len(data), git_sha, sha256)
    # refs/main -> commit: the stand-in's only revision is its main, so callers that pass no revision
    # (snapshot_download(repo_id)) resolve offline too; a branch pin (e.g. `main`) gets its ref as well
    for r in {"main", ref or "main"}:
        path = storage / "refs" / r
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, commit)  # no newline, as huggingface_hub writes it
    _write_tree_cache(storage, commit, tree)
    return snap


def _write_tree_cache(storage: Path, commit: str, tree: dict) -> None:
    """The tree listing a real download caches (huggingface_hub >= 1.x): offline `snapshot_download`
    then checks the snapshot is complete, as it would on a cluster."""
    entries = {rel: TreeCacheEntry(size=size, blob_id=git_sha, lfs_sha256=sha256,
                                   lfs_size=size if sha256 else None)
               for rel, (size, git_sha, sha256) in tree.items()}
    write_tree_cache(str(storage), commit, entries)


# ---------------------------------------------------------------------------------------------------
# stand-in models
# ---------------------------------------------------------------------------------------------------

def _model_config(spec: RepoSpec, scale: dict):
    kw = dict(scale)
    kw.update(vocab_size=spec.vocab_size, tie_word_embeddings=spec.tie_word_embeddings,
              max_position_embeddings=spec.max_position_embeddings, rope_theta=spec.rope_theta,
              bos_token_id=spec.bos_token_id, eos_token_id=spec.eos_token_id)
    if spec.model_type == "qwen2":
        kw.update(use_sliding_window=False, sliding_window=None, max_window_layers=kw["num_hidden_layers"])
    cfg = AutoConfig.for_model(spec.model_type, **kw)
    cfg.architectures = [spec.architecture]
    cfg.dtype = "bfloat16"
    return cfg


def _state_dict(spec: RepoSpec, cfg, seed: int) -> dict:
    """bf16 random weights named as in the Hub checkpoint: `model.*` (+ `lm_head.weight` for causal LMs,
    + `score.0/2.*` or `v_head.summary.*` for the reward heads)."""

    torch.manual_seed(seed)
    if spec.head is None:
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        sd = model.state_dict()
        if spec.tie_word_embeddings:
            sd.pop("lm_head.weight", None)
        return {k: v.detach().clone().contiguous() for k, v in sd.items()}

    base = AutoModel.from_config(cfg, dtype=torch.bfloat16)
    sd = {f"model.{k}": v.detach().clone().contiguous() for k, v in base.state_dict().items()}
    head = make_head(spec.head, cfg.hidden_size).to(torch.bfloat16)
    sd.update({f"{HEAD_PREFIX[spec.head]}.{k}": v.detach().clone().contiguous()
               for k, v in head.state_dict().items()})
    return sd


def _split(sd: dict, n: int) -> list[dict]:
    """n contiguous shards in key order (transformers shards in order of the state dict)."""
    keys = list(sd)
    per = -(-len(keys) // n)
    return [{k: sd[k] for k in keys[i * per:(i + 1) * per]} for i in range(n)]


def _write_weights(spec: RepoSpec, sd: dict, out: Path) -> list[str]:
    st = spec.weights == "safetensors"
    ext = "safetensors" if st else "bin"
    prefix = "model" if st else "pytorch_model"
    save = ((lambda part, path: save_file(part, str(path), metadata={"format": "pt"})) if st
            else (lambda part, path: torch.save(part, path)))
    if spec.shards <= 1:
        name = f"{prefix}.{ext}"
        save(sd, out / name)
        return [name]
    names, weight_map = [], {}
    for i, part in enumerate(_split(sd, spec.shards), 1):
        name = f"{prefix}-{i:05d}-of-{spec.shards:05d}.{ext}"
        save(part, out / name)
        names.append(name)
        weight_map.update({k: name for k in part})
    total = sum(v.numel() * v.element_size() for v in sd.values())
    index = f"{prefix}.{ext}.index.json"
    write_text_atomic(out / index, json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map},
                                              indent=2) + "\n")
    return names + [index]


def _tokenizer_files(family: str, cache: Path) -> dict[str, Path]:
    """The family's tokenizer files, built once per cache directory (building a BPE takes seconds)."""
    d = cache / family
    done = d / ".complete"
    if not done.exists():
        tmp = Path(tempfile.mkdtemp(prefix=f".{family}-", dir=cache))
        save_tokenizer(family, tmp)
        if d.exists():
            shutil.rmtree(d)
        os.replace(tmp, d)
        write_text_atomic(done, "")
    return {p.name: p for p in sorted(d.iterdir()) if p.is_file() and p.name != ".complete"}


def build_standin(repo_id: str, spec: RepoSpec, out: Path, scale: dict, tokenizer_cache: Path,
                  seed: int = 0) -> list[str]:
    """Write one stand-in repo's files into `out`; return their names."""
    out.mkdir(parents=True, exist_ok=True)
    cfg = _model_config(spec, scale)
    cfg_dict = cfg.to_dict()
    if spec.auto_map:
        cfg_dict["auto_map"] = dict(spec.auto_map)
    names = _write_weights(spec, _state_dict(spec, cfg, seed), out)
    write_text_atomic(out / "config.json", json.dumps(cfg_dict, indent=2, sort_keys=True) + "\n")
    names.append("config.json")
    if spec.generation_config:
        GenerationConfig.from_model_config(cfg).save_pretrained(out)
        names.append("generation_config.json")
    for name, path in _tokenizer_files(spec.tokenizer, tokenizer_cache).items():
        shutil.copyfile(path, out / name)
        names.append(name)
    return sorted(names)


def hub_models(paper_config: dict) -> dict[str, dict]:
    """Model entries the workflow fetches from the Hub (`source: hub`)."""
    return {name: e for name, e in (paper_config.get("models") or {}).items()
            if isinstance(e, dict) and e.get("source", "hub") == "hub"}


def build_hub_cache(paper_config: dict, hf_home: Path, scale: dict | None = None,
                    tokenizer_cache: Path | None = None) -> dict:
    """Stand-ins for every `source: hub` model of `paper_config` under `hf_home/hub`.

    Returns {model name: {repo_id, revision, ref, snapshot, architecture, files}}. Fails (before writing)
    when a model has no `revision` or no stand-in spec in REPOS."""
    scale = {**DEFAULT_SCALE, **(scale or {})}
    hf_home = Path(hf_home)
    models = hub_models(paper_config)
    plan = []
    for name, entry in models.items():  # validate everything first: no half-built cache on a bad config
        repo_id = entry.get("id")
        if repo_id not in REPOS:
            raise ValueError(f"models.{name}: no stand-in spec for Hub repo {repo_id!r}; add it to "
                             f"prm_lessons.rehearsal.hub_cache.REPOS (architecture, vocab, weight layout)")
        plan.append((name, repo_id, *resolve_revision(name, entry)))
    tokenizer_cache = Path(tokenizer_cache or hf_home / "rehearsal-tokenizers")
    tokenizer_cache.mkdir(parents=True, exist_ok=True)
    report, built = {}, {}
    for name, repo_id, commit, ref in plan:
        if (repo_id, commit) not in built:  # two entries may share a repo (e.g. policy and completer)
            with tempfile.TemporaryDirectory(prefix="standin-") as tmp:
                spec = REPOS[repo_id]
                seed = int(hashlib.sha1(repo_id.encode()).hexdigest()[:8], 16)
                names = build_standin(repo_id, spec, Path(tmp), scale, tokenizer_cache, seed=seed)
                snap = write_snapshot(hf_home, repo_id, commit, {n: Path(tmp) / n for n in names}, ref=ref)
            built[(repo_id, commit)] = (str(snap), names)
            log.info("stand-in %s@%s: %s", repo_id, commit[:8], ", ".join(names))
        snap, names = built[(repo_id, commit)]
        report[name] = {"repo_id": repo_id, "revision": commit, "ref": ref, "snapshot": snap,
                        "architecture": REPOS[repo_id].architecture, "files": names}
    return report


# ---------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, type=Path, help="the paper config (config/paper.yaml)")
    ap.add_argument("--hf-home", required=True, type=Path, help="HF_HOME to build (its hub/ is written)")
    ap.add_argument("--tokenizer-cache", type=Path, default=None,
                    help="where built tokenizers are kept between runs (default: HF_HOME/rehearsal-tokenizers)")
    ap.add_argument("--prm800k-dir", type=Path, default=None,
                    help="also write a small PRM800K (phase1/2_train.jsonl) here")
    ap.add_argument("--prm800k-source", type=Path, default=None,
                    help="math_cot_100_samples.jsonl (default: ../shared/data/bon/ next to the checkout)")
    ap.add_argument("--report", type=Path, default=None, help="write the build report (JSON) here")
    args = ap.parse_args(argv)
    return cli_errors("hub_cache", lambda: _main(args))


def _main(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    claim_dir(args.hf_home, "--hf-home", made_by_us=("rehearsal-tokenizers",))
    cfg = yaml.safe_load(args.config.read_text())
    report = {"models": build_hub_cache(cfg, args.hf_home, tokenizer_cache=args.tokenizer_cache)}
    if args.prm800k_dir:
        src = args.prm800k_source or (Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "bon"
                                      / "math_cot_100_samples.jsonl")
        report["prm800k"] = {"path": str(args.prm800k_dir), "files": write_prm800k(args.prm800k_dir, src)}
    text = json.dumps(report, indent=2)
    if args.report:
        write_text_atomic(args.report, text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
