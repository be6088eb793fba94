"""Model tokens per job (prm_lessons.jobs.budget), the sidecar run.py writes, bench/token_budget.py's sums, and
`dtype: auto` (prm_lessons.jobs.hardware.resolve_dtype)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from prm_lessons.generation.engine import Completion, Engine
from prm_lessons.jobs import budget
from prm_lessons.jobs.hardware import cpu_flags, resolve_dtype

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean():
    budget.reset()
    yield
    budget.reset()


class CountingEngine(Engine):
    """A generation engine that reports prompt tokens as the real ones do (through Engine._account)."""

    backend = "test"
    dtype, dtype_reason = "float32", "auto on CPU: no native bf16"

    def generate(self, prompts, spec, seeds=None):
        outs = [[Completion("x " * 3, 3, "stop")] * spec.n for _ in prompts]
        self._account(outs, len(prompts), 0.0, prompt_tokens=sum(len(p.split()) for p in prompts))
        return outs


def test_job_record_sums_prefill_and_decode_of_engines_and_forwards(tmp_path):
    from prm_lessons.generation.engine import SamplingSpec

    assert budget.job_record() is None  # no model ran: no sidecar
    e = CountingEngine()
    budget.register_engine(e)
    e.generate(["a b c", "d e"], SamplingSpec(n=2))
    budget.add_forward("frozen base", "bfloat16", 4, 100, 1.5)
    rec = budget.job_record()
    assert (rec["prefill_tokens"], rec["decode_tokens"], rec["tokens"]) == (105, 12, 117)
    assert rec["dtypes"] == ["bfloat16", "float32"]
    gen = rec["parts"][0]
    assert gen["prompts"] == 2 and gen["dtype_reason"].startswith("auto on CPU")
    (tmp_path / "logs" / "mc").mkdir(parents=True)
    out = budget.write_sidecar(tmp_path / "logs" / "mc" / "train.log", "mc", {"dataset": "train"}, 9.0)
    assert out == tmp_path / "logs" / "mc" / "train.tokens.json"
    saved = json.loads(out.read_text())
    assert saved["rule"] == "mc" and saved["wildcards"] == {"dataset": "train"} and saved["tokens"] == 117
    assert "extra" not in saved["parts"][0]
    e.stats.extra["mc"] = {"engine_idle_share": 0.25}  # what rule mc records (grading overlap)
    assert budget.job_record()["parts"][0]["extra"] == {"mc": {"engine_idle_share": 0.25}}


CPUINFO = "processor\t: 0\nflags\t\t: fpu sse avx2 {extra}\nbogomips\t: 1\n"


@pytest.mark.parametrize("extra, want", [("", "float32"), ("avx512f avx512_bf16", "bfloat16"),
                                         ("amx_bf16 amx_tile", "bfloat16"), ("avx512f avx512bw", "float32")])
def test_auto_dtype_on_cpu_is_bf16_only_with_native_bf16(monkeypatch, extra, want):
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    flags = cpu_flags(CPUINFO.format(extra=extra))
    assert "avx2" in flags
    dtype, why = resolve_dtype("auto", on_gpu=False, flags=flags)
    assert dtype == want and why.startswith("auto on CPU")


@pytest.mark.parametrize("cap, want", [("AVX2", "float32"), ("avx512_core", "float32"),
                                       ("AVX512_CORE_BF16", "bfloat16"), ("", "bfloat16")])
def test_a_onednn_isa_cap_below_bf16_resolves_auto_to_float32(monkeypatch, cap, want):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
    dtype, why = resolve_dtype("auto", on_gpu=False, flags={"avx2", "avx512f", "avx512_bf16"})
    assert dtype == want and (cap.upper() in why if want == "float32" else "native bf16" in why)


def test_explicit_dtypes_are_kept_and_auto_on_gpu_is_the_checkpoints():
    assert resolve_dtype("bfloat16", on_gpu=False, flags=set()) == ("bfloat16", "config")
    assert resolve_dtype("float16", on_gpu=True) == ("float16", "config")
    assert resolve_dtype("auto", on_gpu=True)[0] == "auto"
    assert cpu_flags("no flags line\n") == set()


def test_embedded_config_asks_auto_and_the_paper_config_names_its_dtypes():
    from prm_lessons.config import load_config

    assert load_config(ROOT / "config/config.yaml")["models"]["smollm2"]["dtype"] == "auto"
    paper = load_config(ROOT / "config/paper.yaml")
    assert paper["models"] and all(m["dtype"] != "auto" for m in paper["models"].values())


def _bench():
    spec = importlib.util.spec_from_file_location("token_budget", ROOT / "bench/token_budget.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_sums_the_sidecars_per_rule(tmp_path, capsys):
    def rec(rule, pre, dec, prompts, dtype="float32"):
        return {"rule": rule, "wildcards": {}, "prefill_tokens": pre, "decode_tokens": dec, "tokens": pre + dec,
                "model_seconds": 2.0, "dtypes": [dtype],
                "parts": [{"kind": "generate", "prompts": prompts, "prefill_tokens": pre, "decode_tokens": dec,
                           "cached_prefill_tokens": pre // 2 if rule == "mc" else 0}]}
    for i, r in enumerate([rec("mc", 7000, 3000, 100), rec("mc", 3000, 1000, 50), rec("sample", 1000, 2500, 10)]):
        d = tmp_path / "logs" / r["rule"]
        d.mkdir(parents=True, exist_ok=True)
        (d / f"j{i}{budget.SUFFIX}").write_text(json.dumps(r))
    bench = _bench()
    rules = bench.per_rule(bench.read_sidecars(tmp_path / "logs"))
    assert rules["mc"]["jobs"] == 2 and rules["mc"]["tokens"] == 14000 and rules["mc"]["prompts"] == 150
    assert rules["mc"]["cached"] == 5000 and rules["sample"]["cached"] == 0  # prefix-cache hits, within prefill
    assert bench.main(["--logs", str(tmp_path / "logs"), "--rate", "350"]) == 0
    out = capsys.readouterr().out
    mc_line = next(line for line in out.splitlines() if line.startswith("mc "))
    assert "80.0%" in mc_line and "40s" in mc_line  # 14,000 of 17,500 tokens; 14,000 / 350
    # the slow-host estimate: uncached prefill at 350, decode at 150: 5,000 / 350 + 4,000 / 150
    assert mc_line.split()[-2] == "41s"
    total = out.splitlines()[-1].split()
    assert total[:5] == ["total", "3", "11,000", "6,500", "5,000"] and total[-2] == "50s"  # 17,500 / 350
    assert total[-1] == "60s"  # 6,000 / 350 + 6,500 / 150
    assert bench.main(["--logs", str(tmp_path / "none")]) == 1


@pytest.mark.parametrize("flags, want", [(set(), "float32"), ({"avx2", "amx_bf16"}, "bfloat16")])
def test_cpu_frozen_base_runs_in_bf16_only_with_native_bf16(monkeypatch, flags, want):
    import torch

    from prm_lessons.jobs import hardware
    from prm_lessons.models import prm

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(hardware, "cpu_flags", lambda cpuinfo=None: set(flags))
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert prm.head_base_dtype({}) == getattr(torch, want)


def test_regex_guided_verdicts_on_the_vllm_engine_are_counted():
    """labels.judge.guided_generate calls vLLM's LLM directly (structured outputs): its prefill and decode
    must reach the job's count too (the forced verdicts of judges, critics and Best-of-N judges)."""
    from types import SimpleNamespace

    pytest.importorskip("vllm")  # the structured-outputs parameters are vLLM's
    from prm_lessons.generation.engine import EngineStats, VLLMEngine
    from prm_lessons.labels.judge import guided_generate

    class LLM:
        def generate(self, prompts, params, **kw):
            return [SimpleNamespace(prompt_token_ids=[0] * len(p), num_cached_tokens=2,
                                    outputs=[SimpleNamespace(text="7}", token_ids=[1, 2])]) for p in prompts]

    engine = VLLMEngine.__new__(VLLMEngine)  # no model: the fake LLM above stands for vLLM's
    engine.stats, engine.llm = EngineStats(), LLM()
    assert guided_generate(engine, ["abcd", "ef"], 4, r"\d+\}") == ["7}", "7}"]
    s = engine.stats
    assert (s.prompts, s.prompt_tokens, s.cached_prompt_tokens, s.generated_tokens) == (2, 6, 4, 4)
