"""Hub models fetched once by rule download_model (prm_lessons.models.hub): a local Hugging Face cache in the
hub layout is resolved offline, the right files are linked, the linked directory loads; hub models
without a revision are config errors; every job but the download/data rules runs with HF_HUB_OFFLINE=1."""
from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import pytest
import yaml

from conftest import run_rule_script
from prm_lessons.config import ConfigError, load_config, model_path, used_models, validate_config
from prm_lessons.models import hub
from prm_lessons.rules import models as rules_models

ROOT = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"


def put_in_cache(cache: Path, repo_id: str, commit: str, files: dict[str, Path | bytes]) -> Path:
    """Write files into the huggingface_hub cache layout: blobs/<hash>, snapshots/<commit>/<name> -> blob,
    refs/main -> commit (as snapshot_download leaves them)."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / commit
    for name, content in files.items():
        data = content.read_bytes() if isinstance(content, Path) else content
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snap / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snap


def tiny_model_files(tmp: Path, safe: bool) -> dict[str, Path]:
    """A random-weight Llama (hidden 32) + tokenizer, as .safetensors or as .bin."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _prm_tiny import tiny_base

    d = tiny_base(tmp / ("st" if safe else "bin"))
    if not safe:  # re-save the weights as two pickled .bin shards + index, Math-Shepherd's repo layout
        import json

        import torch
        from safetensors.torch import load_file

        sd = {}
        for f in d.glob("*.safetensors"):
            sd.update(load_file(f))
            f.unlink()
        names = sorted(sd)
        shards = {"pytorch_model-00001-of-00002.bin": names[::2], "pytorch_model-00002-of-00002.bin": names[1::2]}
        for shard, keys in shards.items():
            torch.save({k: sd[k] for k in keys}, d / shard)
        index = {"metadata": {}, "weight_map": {k: shard for shard, keys in shards.items() for k in keys}}
        (d / "pytorch_model.bin.index.json").write_text(json.dumps(index))
    return {p.name: p for p in d.iterdir() if p.is_file()}


@pytest.fixture
def offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def test_select_files_prefers_safetensors_and_keeps_code_out():
    files = ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
             "model.safetensors.index.json", "pytorch_model.bin", "tokenizer.json", "merges.txt", "vocab.json",
             "README.md", ".gitattributes", "modeling_x.py", "original/consolidated.00.pth",
             "original/tokenizer.model", "qwen.tiktoken", "chat_template.jinja"]
    got = hub.select_files(files)
    assert "pytorch_model.bin" not in got and "modeling_x.py" not in got
    assert {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "config.json",
            "tokenizer.json", "merges.txt", "vocab.json", "qwen.tiktoken", "chat_template.jinja"} <= set(got)
    assert not [f for f in got if "/" in f or f in ("README.md", ".gitattributes")]
    assert "modeling_x.py" in hub.select_files(files, trust_remote_code=True)


def test_select_files_takes_bin_when_the_repo_has_no_safetensors():
    # the file list of peiyi9979/math-shepherd-mistral-7b-prm (main), plus trainer state some repos ship
    files = [".gitattributes", "README.md", "config.json", "pytorch_model-00001-of-000002.bin",
             "pytorch_model-00002-of-000002.bin", "pytorch_model.bin.index.json", "special_tokens_map.json",
             "tokenizer.model", "tokenizer_config.json", "training_args.bin"]
    assert hub.select_files(files) == sorted(["config.json", "pytorch_model-00001-of-000002.bin",
                                              "pytorch_model-00002-of-000002.bin", "pytorch_model.bin.index.json",
                                              "special_tokens_map.json", "tokenizer.model", "tokenizer_config.json"])
    with pytest.raises(FileNotFoundError, match="no \\*.safetensors or \\*.bin"):
        hub.select_files(["config.json", "README.md"])


def test_download_resolves_a_local_cache_offline_and_the_directory_loads(tmp_path, offline):
    import transformers

    cache = tmp_path / "hub"
    files = tiny_model_files(tmp_path, safe=True)
    put_in_cache(cache, "org/tiny-st", SHA, {**files, "README.md": b"card", "modeling_tiny.py": b"raise SystemExit"})
    out = tmp_path / "resources/hub/tiny"
    done = hub.download_model("org/tiny-st", SHA, out, cache_dir=str(cache))
    assert done["commit"] == SHA and (out / ".revision").read_text().strip() == SHA
    linked = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert linked == sorted(files) and all((out / f).is_symlink() for f in linked)
    assert "README.md" not in linked and "modeling_tiny.py" not in linked
    model = transformers.AutoModelForCausalLM.from_pretrained(out)
    tok = transformers.AutoTokenizer.from_pretrained(out)
    assert model.config.hidden_size == 32 and len(tok) > 0


def test_bin_only_repo_gets_its_bin_shards(tmp_path, offline):
    import torch
    import transformers

    cache = tmp_path / "hub"
    files = tiny_model_files(tmp_path, safe=False)
    assert any(f.endswith(".bin") for f in files) and not any(f.endswith(".safetensors") for f in files)
    put_in_cache(cache, "org/tiny-bin", SHA, {**files, "training_args.bin": b"not weights"})
    out = tmp_path / "m"
    hub.download_model("org/tiny-bin", SHA, out, cache_dir=str(cache))
    bins = sorted(p.name for p in out.glob("*.bin"))
    assert bins == sorted(f for f in files if f.endswith(".bin")) and "training_args.bin" not in bins
    assert (out / "pytorch_model.bin.index.json").exists()
    model = transformers.AutoModelForCausalLM.from_pretrained(out)
    ref = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "bin")
    assert torch.equal(model.lm_head.weight, ref.lm_head.weight)


def test_a_branch_revision_resolves_to_the_cached_commit(tmp_path, offline):
    cache = tmp_path / "hub"
    put_in_cache(cache, "org/tiny", SHA, {"config.json": b"{}", "model.safetensors": b"x"})
    done = hub.download_model("org/tiny", "main", tmp_path / "m", cache_dir=str(cache))
    assert done["commit"] == SHA and (tmp_path / "m/.revision").read_text().strip() == SHA


def test_offline_without_the_snapshot_is_a_clear_error(tmp_path, offline):
    """`make run` sets HF_HUB_OFFLINE=1: a Hub model not yet cached is one line saying what to set."""
    with pytest.raises(hub.HubOfflineError) as e:
        hub.download_model("org/absent", SHA, tmp_path / "m", cache_dir=str(tmp_path / "hub"), key="models.my_prm")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"models.my_prm: org/absent@{SHA} is not in the Hugging Face cache")
    assert "HF_HUB_OFFLINE=0" in msg
    assert f"`hf download org/absent --revision {SHA} --cache-dir {tmp_path / 'hub'}`" in msg
    assert "point `models.my_prm` at a folder holding the model (`source: local`" in msg
    assert e.value.__cause__ is None and e.value.__suppress_context__  # no huggingface_hub traceback under it
    with pytest.raises(ValueError, match="no revision"):
        hub.download_model("org/absent", None, tmp_path / "m", cache_dir=str(tmp_path / "hub"))


def test_online_fetches_only_the_selected_files(tmp_path, monkeypatch):
    """Online: the file list comes from the Hub and snapshot_download is asked for the selected files
    only (not e.g. the .bin copy beside the safetensors). The network calls are replaced here."""
    import huggingface_hub
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    remote = ["config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json", "README.md"]
    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", lambda self, repo_id, revision=None: remote)
    asked = {}

    def fake_snapshot(repo_id, revision=None, cache_dir=None, allow_patterns=None, local_files_only=False):
        asked.update(revision=revision, allow_patterns=allow_patterns, local_files_only=local_files_only)
        snap = put_in_cache(Path(cache_dir), repo_id, SHA, {f: b"x" for f in allow_patterns})
        return str(snap)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    hub.download_model("org/m", SHA, tmp_path / "m", cache_dir=str(tmp_path / "hub"))
    assert asked == {"revision": SHA, "allow_patterns": ["config.json", "model.safetensors", "tokenizer.json"],
                     "local_files_only": False}


# ---- config: revisions, model paths ------------------------------------------------------------

def paper():
    return yaml.safe_load((ROOT / "config/paper.yaml").read_text())


def test_hub_models_load_from_the_models_dir():
    cfg = validate_config(paper())
    assert model_path(cfg, "policy") == "resources/hub/qwen25_math_7b_instruct"
    assert model_path(cfg, "judge") == "resources/hub/qwen25_72b_instruct"
    cfg["hub"]["models_dir"] = "resources/hub_links/"
    assert model_path(cfg, "policy") == "resources/hub_links/qwen25_math_7b_instruct"
    emb = load_config(ROOT / "config/config.yaml")
    assert model_path(emb, "policy") == "resources/models/smollm2"


def test_every_used_paper_model_names_a_revision():
    cfg = validate_config(paper())
    used = used_models(cfg)
    assert {"qwen25_math_7b_instruct", "qwen25_72b_instruct", "math_shepherd_mistral_7b"} <= used
    assert all(cfg["models"][m].get("revision") for m in used if cfg["models"][m]["source"] == "hub")


# Hub entries of config/paper.yaml still read at a branch: no full commit of theirs is on public record
# (review reviews-2026-11b/paper-path-2.md, "Pins found"). Adding one here is a decision to run unfrozen;
# docs/paper-scale.md counts them. Pin an entry (and drop it here) once its commit is known.
UNPINNED = {
    "models.qwq_32b_preview": "one public record only (an HF cache path, 91906fe4…), nothing independent",
    "models.rlhflow_8b_mistral_data": "huggingface.co shows short ids only (head 0a4c93a)",
    "models.qwen25_math_7b_prm800k": "Qwen/Qwen2.5-Math-7B-PRM800K: no commit on record in the project",
    "models.qwen2_math_7b_instruct":
        "the data policy: no commit of Qwen/Qwen2-Math-7B-Instruct found on public record here",
    "problems.train": "MATH-lighteval dataset: no commit verified; the rule records the one it resolved",
}
HEX40 = re.compile(r"[0-9a-f]{40}")


def hub_entries(node, path=""):
    """(dotted path, entry) of every `source: hub` mapping anywhere in a config."""
    if isinstance(node, dict):
        if node.get("source") == "hub":
            yield path, node
        for k, v in node.items():
            yield from hub_entries(v, f"{path}.{k}" if path else str(k))


def test_paper_hub_revisions_are_commits_or_known_unpinned():
    entries = dict(hub_entries(paper()))
    assert len([p for p in entries if p.startswith("models.")]) >= 16  # the walk finds the models
    unpinned = {p for p, e in entries.items() if not HEX40.fullmatch(str(e.get("revision")))}
    assert unpinned <= set(UNPINNED), (f"Hub entries of config/paper.yaml without a 40-hex commit: "
                                       f"{sorted(unpinned - set(UNPINNED))}; pin them, or add them to UNPINNED")
    # a pinned entry leaves the list, so the list (and the docs' count) stays true
    assert set(UNPINNED) <= unpinned, f"pinned now, drop from UNPINNED: {sorted(set(UNPINNED) - unpinned)}"


def test_paper_scale_doc_counts_the_unpinned_models():
    """docs/paper-scale.md, the one place that counts them, says how many of how many."""
    n = sum(p.startswith("models.") for p in UNPINNED)
    total = sum(p.startswith("models.") for p in dict(hub_entries(paper())))
    doc = " ".join((ROOT / "docs/paper-scale.md").read_text().replace("*", "").split())
    assert f"{n} of {total} Hub models are still read at `main`" in doc, (n, total)


@pytest.mark.parametrize("name", ["qwen25_72b_instruct", "skywork_prm_7b", "qwen25_math_7b_instruct"])
def test_a_used_hub_model_without_revision_is_a_config_error(name):
    cfg = paper()
    del cfg["models"][name]["revision"]
    with pytest.raises(ConfigError, match=rf"`models\.{name}\.revision`"):
        validate_config(cfg)


def test_an_unused_hub_model_needs_no_revision():
    cfg = paper()
    cfg["models"]["spare"] = {"source": "hub", "id": "org/spare"}
    assert "spare" in validate_config(cfg)["models"]


# ---- jobs run offline ------------------------------------------------------------------------

def test_job_offline_only_spares_the_download_and_data_rules(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert hub.job_offline("download_model") is False and "HF_HUB_OFFLINE" not in os.environ
    assert hub.job_offline("problems") is False and "HF_HUB_OFFLINE" not in os.environ
    # the released and TRL-format step labels download their Hub data in the job itself
    for rule in ("math_shepherd_labels", "trl_labels"):
        assert hub.job_offline(rule) is False and "HF_HUB_OFFLINE" not in os.environ
    for rule in ("sample", "train_prm", "score_samples", "trainset", "export_trl"):
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        assert hub.job_offline(rule) is True and os.environ["HF_HUB_OFFLINE"] == "1"


def test_run_py_sets_offline_before_the_rule_function(tmp_path, monkeypatch):
    """workflow/scripts/run.py, as Snakemake runs it, hands the rule function HF_HUB_OFFLINE=1."""
    seen = {}
    monkeypatch.setattr(rules_models, "_probe", lambda **kw: seen.update(env=os.environ.get("HF_HUB_OFFLINE")),
                        raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    run_rule_script(tmp_path / "job.log", "models:_probe", "merge_samples")
    assert seen == {"env": "1"}


@pytest.mark.slow
@pytest.mark.rehearsal_dup  # the rehearsal runs every download_model job offline
def test_download_rule_runs_offline_from_a_filled_cache(tmp_path):
    """Rule download_model through Snakemake, as a site without network on the submit host runs it."""
    import subprocess

    entry = paper()["models"]["skywork_prm_1_5b"]
    rev = entry["revision"] if hub.COMMIT_RE.fullmatch(entry["revision"]) else SHA
    put_in_cache(tmp_path / "cache", entry["id"], rev,
                 {"config.json": b"{}", "pytorch_model.bin": b"w", "tokenizer.json": b"{}",
                  "modeling_qwen2_rm.py": b"#", "misc/licence.pdf": b"%"})
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path),
         "--configfile", str(ROOT / "config/paper.yaml"), "--config", f'hub={{"cache_dir": "{tmp_path / "cache"}"}}',
         "--", "resources/hub/skywork_prm_1_5b"],
        env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = tmp_path / "resources/hub/skywork_prm_1_5b"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == \
        ["config.json", "pytorch_model.bin", "tokenizer.json"]  # .bin-only repo; no code, no misc/
    assert (out / ".revision").read_text().strip() == rev


def test_rule_download_model_names_the_model_key(tmp_path, offline):
    from prm_lessons.rules import models as rules

    with pytest.raises(hub.HubOfflineError, match=r"^models\.my_prm: org/absent@"):
        rules.download_model(inputs={}, outputs={"model_dir": str(tmp_path / "m")},
                             params={"entry": {"id": "org/absent", "revision": SHA},
                                     "cache_dir": str(tmp_path / "hub")},
                             wildcards={"model": "my_prm"}, threads=1)
