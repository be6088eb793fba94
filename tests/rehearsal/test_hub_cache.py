"""The rehearsal's stand-in Hub cache (prm_lessons.rehearsal.hub_cache) and its small PRM800K."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, shared_data_dir
from prm_lessons.rehearsal import hub_cache, prm800k_file

PIN = "0123456789abcdef0123456789abcdef01234567"  # a test pin, not a Hub commit
CONFIG = {"models": {
    "policy": {"source": "hub", "id": "Qwen/Qwen2.5-Math-7B-Instruct", "revision": PIN},
    "completer": {"source": "hub", "id": "Qwen/Qwen2.5-Math-7B-Instruct", "revision": PIN},
    "prm": {"source": "hub", "id": "Qwen/Qwen2.5-Math-PRM-7B", "revision": PIN},
    "orm": {"source": "hub", "id": "Qwen/Qwen2.5-Math-RM-72B", "revision": PIN},
    "shepherd": {"source": "hub", "id": "peiyi9979/math-shepherd-mistral-7b-prm", "revision": PIN},
    "rlhflow": {"source": "hub", "id": "RLHFlow/Llama3.1-8B-PRM-Mistral-Data", "revision": "main"},
    "skywork": {"source": "hub", "id": "Skywork/Skywork-o1-Open-PRM-Qwen-2.5-1.5B", "revision": PIN},
    "local_one": {"source": "local", "path": "/nowhere"},
}}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    hf_home = tmp_path_factory.mktemp("hf")
    report = hub_cache.build_hub_cache(CONFIG, hf_home, tokenizer_cache=tmp_path_factory.mktemp("tok"))
    return hf_home, report


def _offline(hf_home: Path, code: str) -> str:
    """Run `code` with HF_HOME/HF_HUB_OFFLINE set before huggingface_hub is imported (it reads them then)."""
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_missing_revision_fails_before_writing(tmp_path):
    cfg = {"models": {"policy": {"source": "hub", "id": "Qwen/Qwen2.5-Math-7B-Instruct"},
                      "prm": {"source": "hub", "id": "Qwen/Qwen2.5-Math-PRM-7B", "revision": PIN}}}
    with pytest.raises(ValueError, match=r"models\.policy .*no `revision`"):
        hub_cache.build_hub_cache(cfg, tmp_path)
    assert not (tmp_path / "hub").exists()


def test_unknown_repo_fails_with_its_name(tmp_path):
    cfg = {"models": {"x": {"source": "hub", "id": "someone/some-model", "revision": PIN}}}
    with pytest.raises(ValueError, match="someone/some-model"):
        hub_cache.build_hub_cache(cfg, tmp_path)


def test_every_hub_model_of_the_paper_config_has_a_spec():
    import yaml

    cfg = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    ids = {e["id"] for e in hub_cache.hub_models(cfg).values()}
    assert ids and ids <= set(hub_cache.REPOS)


def test_offline_snapshot_download_resolves_each_model(built):
    hf_home, report = built
    assert set(report) == {n for n, e in CONFIG["models"].items() if e["source"] == "hub"}
    wanted = {n: [e["id"], e["revision"]] for n, e in CONFIG["models"].items() if e["source"] == "hub"}
    out = _offline(hf_home, (
        "import json, sys\nfrom huggingface_hub import snapshot_download\n"
        f"wanted = {json.dumps(wanted)}\n"
        "got = {n: [snapshot_download(r, revision=v), snapshot_download(r, allow_patterns=['*.json', '*.bin'])]"
        " for n, (r, v) in wanted.items()}\nprint(json.dumps(got))"))
    got = json.loads(out.strip().splitlines()[-1])
    for name, (by_rev, by_main) in got.items():
        assert by_rev == by_main == report[name]["snapshot"], name
    # the `main` (unpinned) entry gets a stand-in commit that refs/main names
    rl = report["rlhflow"]
    assert rl["ref"] == "main" and hub_cache.HEX40.match(rl["revision"])
    assert rl["revision"] == hub_cache.standin_commit("RLHFlow/Llama3.1-8B-PRM-Mistral-Data", "main")


def test_cache_layout_is_huggingface_hubs(built):
    hf_home, report = built
    snap = Path(report["prm"]["snapshot"])
    storage = snap.parents[1]
    assert storage.name == "models--Qwen--Qwen2.5-Math-PRM-7B" and snap.name == PIN
    assert (storage / "refs" / "main").read_text() == PIN
    for f in snap.iterdir():
        assert f.is_symlink() and not os.path.isabs(os.readlink(f))
        blob = f.resolve()
        assert blob.parent == (storage / "blobs").resolve()
        if f.suffix == ".safetensors":  # LFS files are stored under their sha256, as the Hub's etag
            import hashlib
            assert blob.name == hashlib.sha256(blob.read_bytes()).hexdigest()
    # one snapshot shared by the two entries of one repo
    assert report["policy"]["snapshot"] == report["completer"]["snapshot"]


def _cfg(report, name):
    return json.loads((Path(report[name]["snapshot"]) / "config.json").read_text())


@pytest.mark.parametrize("name, arch, model_type, vocab", [
    ("policy", "Qwen2ForCausalLM", "qwen2", 152064),
    ("prm", "Qwen2ForProcessRewardModel", "qwen2", 152064),
    ("orm", "Qwen2ForRewardModel", "qwen2", 152064),
    ("shepherd", "LlamaForCausalLM", "llama", 32000),
    ("rlhflow", "LlamaForCausalLM", "llama", 128256),
    ("skywork", "Qwen2ForPrmModel", "qwen2", 151936),
])
def test_config_matches_the_hub_repo(built, name, arch, model_type, vocab):
    _, report = built
    cfg = _cfg(report, name)
    assert cfg["architectures"] == [arch] and cfg["model_type"] == model_type
    assert cfg["vocab_size"] == vocab
    assert cfg["hidden_size"] == hub_cache.DEFAULT_SCALE["hidden_size"]
    assert cfg["dtype"] == "bfloat16"


def test_weight_files_and_heads_as_on_the_hub(built):
    import torch
    from safetensors import safe_open

    _, report = built
    h = hub_cache.DEFAULT_SCALE["hidden_size"]
    files = {n: set(report[n]["files"]) for n in report}
    # .bin where the Hub has only .bin; Math-Shepherd sharded, Skywork single file
    assert {"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin",
            "pytorch_model.bin.index.json", "tokenizer.model"} <= files["shepherd"]
    assert "tokenizer.json" not in files["shepherd"] and not any(f.endswith(".safetensors") for f in files["shepherd"])
    assert "pytorch_model.bin" in files["skywork"] and "generation_config.json" not in files["skywork"]
    assert {"model-00001-of-00004.safetensors", "model.safetensors.index.json",
            "generation_config.json"} <= files["prm"]

    def tensors(name):
        snap = Path(report[name]["snapshot"])
        out = {}
        for f in sorted(snap.iterdir()):
            if f.suffix == ".safetensors":
                with safe_open(str(f), framework="pt") as fh:
                    out.update({k: fh.get_tensor(k) for k in fh.keys()})
            elif f.suffix == ".bin":
                out.update(torch.load(f, map_location="cpu", weights_only=True))
        return out

    prm, orm, sky, pol = tensors("prm"), tensors("orm"), tensors("skywork"), tensors("policy")
    assert prm["score.0.weight"].shape == (h, h) and prm["score.2.weight"].shape == (2, h)
    assert {"score.0.bias", "score.2.bias"} <= set(prm) and "lm_head.weight" not in prm
    assert orm["score.2.weight"].shape == (1, h)
    assert sky["v_head.summary.weight"].shape == (1, h) and "v_head.summary.bias" in sky
    assert pol["lm_head.weight"].shape == (152064, h) and pol["model.embed_tokens.weight"].dtype == torch.bfloat16
    index = json.loads((Path(report["shepherd"]["snapshot"]) / "pytorch_model.bin.index.json").read_text())
    assert set(index["weight_map"].values()) == {"pytorch_model-00001-of-00002.bin",
                                                   "pytorch_model-00002-of-00002.bin"}


def test_standins_load_with_transformers_and_real_tokenizers(built):
    import torch
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    _, report = built
    for name in report:
        snap = report[name]["snapshot"]
        causal = report[name]["architecture"].endswith("ForCausalLM")
        model = (AutoModelForCausalLM if causal else AutoModel).from_pretrained(snap)
        tok = AutoTokenizer.from_pretrained(snap)
        assert len(tok) <= model.config.vocab_size, name
        ids = tok("What is 1+1?", return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out = model(input_ids=ids)
        assert torch.isfinite((out.logits if causal else out.last_hidden_state).float()).all(), name
    tok = AutoTokenizer.from_pretrained(report["rlhflow"]["snapshot"])  # Llama 3, not Mistral's vocabulary
    assert len(tok) == 128256 and tok.encode("-", add_special_tokens=False)[-1] == 12
    tok = AutoTokenizer.from_pretrained(report["shepherd"]["snapshot"])
    assert tok.encode("+ -")[1:] == [648, 387] and tok.encode("ки")[-1] == 12902  # the card's ids
    tok = AutoTokenizer.from_pretrained(report["prm"]["snapshot"])
    assert tok.convert_tokens_to_ids("<extra_0>") == 151651


def test_the_project_loader_reads_the_qwen_prm_head(built):
    from prm_lessons.scoring.heads import load_head_model

    _, report = built
    m = load_head_model(report["prm"]["snapshot"], "qwen_prm", dtype="float32")
    import torch
    out = m(torch.tensor([[1, 2, 3]]))
    assert out.shape == (1, 3, 2) and torch.isfinite(out).all()


@pytest.mark.rehearsal_dup  # the rehearsal samples with vLLM on this stand-in
@pytest.mark.slow
def test_vllm_generates_from_the_qwen2_standin(built):
    hf_home, report = built
    out = _offline(hf_home, (
        "import os\nos.environ.update(VLLM_CPU_KVCACHE_SPACE='1', VLLM_ENABLE_V1_MULTIPROCESSING='0')\n"
        "from huggingface_hub import snapshot_download\nfrom vllm import LLM, SamplingParams\n"
        f"p = snapshot_download('Qwen/Qwen2.5-Math-7B-Instruct', revision='{PIN}')\n"
        "llm = LLM(model=p, enforce_eager=True, max_model_len=512, gpu_memory_utilization=0.5, seed=0)\n"
        "o = llm.generate(['1+1='], SamplingParams(max_tokens=4, temperature=0.7, seed=1))[0].outputs[0]\n"
        "print('TOKENS', len(o.token_ids))"))
    assert "TOKENS 4" in out


# -- PRM800K -----------------------------------------------------------------------------------------

def test_prm800k_file_in_official_format_converts(tmp_path):
    from prm_lessons.labels.human import convert_prm800k, prm800k_files
    from prm_lessons.tables import iter_records

    src = shared_data_dir("bon", "math_cot_100_samples.jsonl")
    counts = prm800k_file.write_prm800k(tmp_path, src)
    assert counts["phase1_train.jsonl"] > 0 and counts["phase2_train.jsonl"] > 0
    cfg = {"prm800k": {"source": "local", "path": str(tmp_path), "phases": [1, 2], "split": "train",
                       "file_pattern": "phase{phase}_{split}.jsonl"}}
    files = prm800k_files(cfg)
    assert [Path(p).name for _, p in files] == ["phase1_train.jsonl", "phase2_train.jsonl"]
    recs = [r for _, p in files for r in iter_records(p)]
    keys = {"labeler", "timestamp", "generation", "is_quality_control_question", "is_initial_screening_question",
            "question", "label"}
    assert all(keys <= set(r) and {"steps", "total_time", "finish_reason"} <= set(r["label"]) for r in recs)
    insts, dropped = convert_prm800k(recs)
    assert dropped["quality_control"] == 1 and dropped["finish_reason"] == 1 and dropped["no_steps"] == 0
    assert len(insts) == len(recs) - 2
    # a found_error trajectory ends on its negative step; a human-written step is positive
    assert any(i["labels"][-1] == 0.0 for i in insts) and any(all(x == 1.0 for x in i["labels"]) for i in insts)
    # problems come from the tail of the file: a rehearsal evaluating MATH on its first 60 keeps them all
    head = [json.loads(line)["question"] for line in src.read_text().splitlines()[:60]]
    assert not {i["question"] for i in insts} & set(head)
