"""GPU device check: the project's own training, save, load and scoring code on one CUDA GPU, in one run.

What it runs (each part in its own subprocess, so that DeepSpeed's process-wide state, a CUDA context
or a crash stays inside the part; every part writes a JSON the parent collects):

  env          before the device: gpu_env's stack lines; hardware.cuda_device_count counts the GPU without
               initialising CUDA; require_gpus passes for 1 and stops for one more than there are;
               gpu_job_env picks spawn, and a spawned child uses CUDA after its parent initialised it
               (a forked one cannot: INFO); the torchrun command and environment of train_launch
  build        stand-ins, random weights, real tokenizers (rehearsal.tokenizers): a Qwen2ForCausalLM of
               Qwen2.5-Math-7B-Instruct's vocabulary (152064, untied) at Qwen2.5-0.5B's shape, and a
               Qwen2ForProcessRewardModel (the released Qwen2.5-Math-PRM layout, head built by
               scoring.heads); a hard-label trainset (tables.write_table, kind trainset)
  train_zero3  full fine-tuning through torchrun (train_launch.distributed_command, 1 process, nccl),
               DeepSpeed ZeRO-3 (config/deepspeed/zero3.json, "auto" filled by the Trainer), bf16; the PRM
               saved in the released layout
  train_zero3_inprocess   (GPU only, run last) the same through train_launch.run_training with gpus: 1,
               which trains a 1-GPU job in its own process, no torchrun: the workflow's own 1-GPU path
  train_plain  the same without DeepSpeed at max_length 2048: steady tokens/s after 2 warm-up steps, MFU and
               HFU (prm_lessons.training.flops: matmul weights without the embedding, causal attention,
               the step head; HFU adds gradient checkpointing's recomputed forward) against the card's
               dense bf16 peak
  train_slice  the shape that matters: a Qwen2.5-Math-7B-Instruct slice (its hidden 3584, intermediate
               18944, 28 heads / 4 kv heads, full vocabulary 152064, untied; 4 of its 28 layers; random
               weights) trained through train_prm (the Trainer path of every real training) with
               config/paper.yaml's precision, gradient checkpointing, micro-batch and max_length;
               torch.profiler over 2 steady steps: the top CUDA kernels by self time go to the report,
               the attention kernel named; tokens/s, MFU and HFU from the formula
  bench_train_throughput  bench/train_throughput.py beside it: the bare bf16 loop (no Trainer) on the
               same shape, gradient checkpointing on (docs/preflight.md's MFU goal is stated for it)
  score_*      the saved PRM with adapter `trained`, and the qwen_prm stand-in with adapter `qwen_prm`
               (transformers backend): on the GPU (bf16; qwen_prm also float32) against float32 on the CPU
               (CUDA hidden), same inputs; scoring tokens/s on the GPU

`--cpu-smoke`: tiny sizes, no GPU needed (gloo; DeepSpeed through its CPU accelerator, as
training.deepspeed_on_cpu): proves everything up to the device. Prints one PASS/FAIL/INFO line per check
and `GPU_CHECK: PASS` or `GPU_CHECK: FAIL (...)`; writes the numbers to <out>/gpu_check.json
(--out, default $OUT or the work directory). Exit status 1 on any FAIL.

Usage: python bench/gpu_check.py [--cpu-smoke] [--work DIR] [--out DIR]   (bench/gpu_check.sh on the device)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PEAK_BF16 = 989e12  # H100 SXM / H200 dense bf16 FLOP/s (no sparsity): the fallback for an unknown card
ZERO3 = ROOT / "config" / "deepspeed" / "zero3.json"
PAPER = ROOT / "config" / "paper.yaml"

# Qwen2.5-Math-7B-Instruct's vocabulary and layout (as rehearsal.hub_cache.REPOS, which is not imported:
# it needs huggingface_hub 2, the device has 1.33) at Qwen2.5-0.5B's shape (~0.63B with the untied head)
BASE_CFG = dict(vocab_size=152064, tie_word_embeddings=False, max_position_embeddings=4096,
                bos_token_id=151643, eos_token_id=151645, use_sliding_window=False)
SHAPE = {"gpu": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                     num_key_value_heads=2),
         "cpu": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=1)}
# Qwen2.5-Math-7B-Instruct's layer (config.json on the Hub: hidden 3584, intermediate 18944, 28 heads, 4 kv
# heads, head_dim 128), 4 of its 28 layers: the per-layer GEMMs, attention and the full-vocabulary embedding
# of the paper's training base at a size one GPU trains in a minute
SLICE = {"gpu": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=4, num_attention_heads=28,
                     num_key_value_heads=4),
         "cpu": dict(hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2)}
SLICE_STEPS = {"gpu": dict(steps=12, warm=3, profiled=2), "cpu": dict(steps=4, warm=1, profiled=1)}
TOP_KERNELS = 15
# kernel names of attention (FlashAttention 2/3, PyTorch's flash / memory-efficient / cuDNN SDPA backends)
ATTENTION_KERNEL = re.compile(r"flash|fmha|attention|sdpa|cudnn.*(mha|attn)|softmax", re.I)
# per size: trainset rows, steps per row, words per step, training max_length / batch / optimizer steps
SIZE = {"gpu": dict(rows=160, steps=(8, 14), words=(40, 80), max_length=2048, batch=8, zero3_steps=4,
                    plain_steps=20, score_rows=256, cmp_rows=4),
        "cpu": dict(rows=12, steps=(2, 4), words=(5, 12), max_length=256, batch=2, zero3_steps=2,
                    plain_steps=4, score_rows=8, cmp_rows=4)}
TOL = {"fp32": 2e-3, "bf16": 5e-2}  # max |P(good) GPU - P(good) CPU fp32| per step
# seconds per phase: a hung phase must leave the rest of a 10-minute device call; the in-process ZeRO-3
# run goes last (DeepSpeed may look for MPI there: no torchrun environment)
PHASE_TIMEOUT_S = {"train_zero3_inprocess": 150, "bench_train_throughput": 150, "train_slice": 300}
DEFAULT_TIMEOUT_S = 240


def log(msg: str) -> None:
    print(f"[gpu_check {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------------------------------------ data

WORDS = ("we", "compute", "the", "sum", "of", "then", "so", "therefore", "since", "each", "term", "gives",
         "multiply", "both", "sides", "by", "divide", "value", "equals", "hence", "total", "number", "is")


def rows(n: int, steps: tuple[int, int], words: tuple[int, int], seed: int = 0) -> list[dict]:
    """Math-like (question, steps, hard labels) rows: numbers and words, labels 1 up to a first error."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        a, b = rnd.randint(10, 999), rnd.randint(10, 999)
        k = rnd.randint(*steps)
        first_bad = rnd.randint(1, k) if rnd.random() < 0.5 else k + 1
        st, lab = [], []
        for j in range(1, k + 1):
            text = " ".join(rnd.choice(WORDS) if rnd.random() < 0.7 else str(rnd.randint(1, 9999))
                            for _ in range(rnd.randint(*words)))
            st.append(f"Step {j}: {text}, so ${a} + {b * j} = {a + b * j + (j >= first_bad)}$.")
            lab.append(0.0 if j >= first_bad else 1.0)
        out.append({"instance_id": f"gc-{i:04d}", "question": f"Compute {a} + {b} times each step number.",
                    "steps": st, "labels": lab})
    return out


# ------------------------------------------------------------------------------------------------ phases

def phase_env(a) -> dict:
    """Checks the CPU rehearsal cannot make: run before anything here touches CUDA."""
    import multiprocessing as mp

    import torch

    from prm_lessons.jobs.hardware import MP_METHOD_ENV, GPUNotFoundError, cuda_device_count, gpu_job_env, require_gpus
    from prm_lessons.preflight import gpu_env
    from prm_lessons.training.launch import distributed_command, free_port, launcher_env

    res: dict = {"checks": []}

    def check(name, ok, detail, info=False):
        res["checks"].append({"name": name, "status": "INFO" if info else ("PASS" if ok else "FAIL"),
                              "detail": str(detail)})

    gpu = not a.cpu_smoke
    n = cuda_device_count()
    check("hardware.cuda_device_count", (n >= 1) == gpu, f"{n} device(s)")
    check("cuda_device_count leaves CUDA uninitialised", not torch.cuda.is_initialized(),
          f"torch.cuda.is_initialized()={torch.cuda.is_initialized()} after counting (NVML)")
    # gpu_env: the stack lines; vLLM is not carried to the device (INFO there); a CPU host fails or skips
    # the driver, torch-CUDA and NCCL lines by design (INFO)
    for c in gpu_env.run_checks(require_driver=gpu):
        expected_off = c.name == "vllm" or (not gpu and c.name in ("driver", "torch", "nccl"))
        check(f"gpu_env.{c.name}", c.status in ("PASS", "SKIP"), f"{c.status}: {c.detail}",
              info=expected_off and c.status != "PASS")
    try:
        require_gpus("gpu_check", n)
        check("require_gpus(found)", True, f"asked {n}: passes")
    except GPUNotFoundError as e:
        check("require_gpus(found)", False, e)
    try:
        require_gpus("gpu_check", n + 1)
        check("require_gpus(found + 1) stops", False, "did not raise")
    except GPUNotFoundError as e:
        check("require_gpus(found + 1) stops", True, str(e)[:160])
    os.environ.pop(MP_METHOD_ENV, None)
    gpu_job_env(1 if gpu else 0)
    method = os.environ.get(MP_METHOD_ENV)
    check("gpu_job_env start method", method == ("spawn" if gpu else None), f"{MP_METHOD_ENV}={method}")
    if gpu:
        torch.zeros(1, device="cuda")  # CUDA initialised in the parent, as a scoring job's is
    ctx = mp.get_context(method or "spawn")
    with ctx.Pool(1) as pool:
        try:
            child = pool.apply_async(_child_cuda, ()).get(timeout=120)
            check("spawned child uses CUDA after parent init", (child.get("name") is not None) == gpu, child)
        except Exception as e:  # noqa: BLE001 - the point is to see it
            check("spawned child uses CUDA after parent init", False, repr(e))
    if gpu:
        with mp.get_context("fork").Pool(1) as pool:
            try:
                check("forked child after CUDA init (why spawn)", True,
                      pool.apply_async(_child_cuda, ()).get(timeout=60), info=True)
            except Exception as e:  # noqa: BLE001
                check("forked child after CUDA init (why spawn)", True, f"fails as expected: {e!r}"[:200], info=True)
    cmd = distributed_command("/tmp/spec.json", 1, free_port())
    check("train_launch.distributed_command", cmd[1:3] == ["-m", "torch.distributed.run"]
          and cmd[cmd.index("--nproc_per_node") + 1] == "1", " ".join(cmd[1:]))
    env_gpu, env_cpu = launcher_env(False), launcher_env(True)
    check("launcher_env keeps the GPU visible",
          env_gpu.get("CUDA_VISIBLE_DEVICES") == os.environ.get("CUDA_VISIBLE_DEVICES")
          and str(ROOT / "src") in env_gpu["PYTHONPATH"].split(os.pathsep),
          f"CUDA_VISIBLE_DEVICES={env_gpu.get('CUDA_VISIBLE_DEVICES')!r}, PYTHONPATH={env_gpu['PYTHONPATH']}")
    check("launcher_env(cpu) hides GPUs", env_cpu["CUDA_VISIBLE_DEVICES"] == "", "CUDA_VISIBLE_DEVICES=''")
    try:
        import deepspeed
        from deepspeed.accelerator import get_accelerator

        check("deepspeed imports", True, f"{deepspeed.__version__}, accelerator {get_accelerator()._name}")
    except Exception as e:  # noqa: BLE001
        check("deepspeed imports", False, repr(e))
    res["device"] = torch.cuda.get_device_name(0) if gpu else "cpu"
    res["versions"] = {m: _version(m) for m in ("torch", "transformers", "tokenizers", "huggingface_hub",
                                                "accelerate", "deepspeed", "safetensors", "pydantic")}
    return res


def _child_cuda() -> dict:
    import torch

    if not torch.cuda.is_available():
        return {"name": None, "cuda": False}
    x = torch.ones(4, device="cuda").sum().item()
    return {"name": torch.cuda.get_device_name(0), "sum": x}


def _version(m: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(m)
    except metadata.PackageNotFoundError:
        return None


def phase_build(a) -> dict:
    import pandas as pd
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModel, AutoModelForCausalLM, Qwen2Config

    from prm_lessons.rehearsal.tokenizers import save_tokenizer
    from prm_lessons.scoring.heads import build_head_model
    from prm_lessons.tables import write_table

    size = "cpu" if a.cpu_smoke else "gpu"
    work = Path(a.work)
    dev = "cpu" if a.cpu_smoke else "cuda"
    shape = SHAPE[size]
    cfg = Qwen2Config(**BASE_CFG, **shape, max_window_layers=shape["num_hidden_layers"])
    cfg.architectures = ["Qwen2ForCausalLM"]
    torch.manual_seed(0)
    with torch.device(dev):
        lm = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    base = work / "base"
    lm.save_pretrained(base)
    save_tokenizer("qwen2", base)
    n_base = sum(p.numel() for p in lm.parameters())
    del lm
    # the released Qwen2.5-Math-PRM layout: model.* + score.{0,2}.* (scoring.heads builds the head)
    pcfg = Qwen2Config(**BASE_CFG, **shape, max_window_layers=shape["num_hidden_layers"])
    pcfg.architectures = ["Qwen2ForProcessRewardModel"]
    torch.manual_seed(1)
    with torch.device(dev):
        prm = build_head_model(AutoModel.from_config(pcfg, dtype=torch.bfloat16), "qwen_prm")
    qdir = work / "qwen_prm"
    qdir.mkdir(parents=True, exist_ok=True)
    sd = {k: v.detach().to("cpu").contiguous() for k, v in prm.state_dict().items()}
    save_file(sd, str(qdir / "model.safetensors"), metadata={"format": "pt"})
    pdict = pcfg.to_dict()
    pdict["dtype"] = "bfloat16"
    (qdir / "config.json").write_text(json.dumps(pdict, indent=2))
    save_tokenizer("qwen2_prm", qdir)
    s = SIZE[size]
    write_table(pd.DataFrame(rows(s["rows"], s["steps"], s["words"])), work / "trainset.parquet", "trainset")
    json.dump(rows(max(s["score_rows"], s["cmp_rows"]), s["steps"], s["words"], seed=7),
              open(work / "score_rows.json", "w"))
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base, trust_remote_code=False)
    lens = [len(tok(" ".join(r["steps"]))["input_ids"]) for r in rows(20, s["steps"], s["words"])]
    return {"base_params": n_base, "prm_keys": sorted({k.split(".")[0] for k in sd}), "vocab": len(tok),
            "trainset_rows": s["rows"], "mean_response_tokens": sum(lens) / len(lens),
            "checks": [{"name": "stand-ins built", "status": "PASS",
                        "detail": f"base {n_base / 1e6:.0f}M params at {base}; qwen_prm at {qdir}"}]}


def train_settings(a, deepspeed: bool, steps: int) -> dict:
    s = SIZE["cpu" if a.cpu_smoke else "gpu"]
    settings = {"mode": "full", "step_token": "<extra_0>", "max_length": s["max_length"], "batch_size": s["batch"],
                "gradient_accumulation_steps": 1, "max_steps": steps, "learning_rate": 1e-5, "warmup_ratio": 0.0,
                "precision": "auto" if a.cpu_smoke else "bf16", "gradient_checkpointing": True,
                "logging_steps": 1, "save_steps": 0, "jit_checkpoint": False, "keep_checkpoints": False,
                "gpus": 0 if a.cpu_smoke else 1, "processes": 1, "threads": None, "deepspeed": None}
    if deepspeed:
        settings["deepspeed"] = str(ZERO3)
        settings["deepspeed_on_cpu"] = bool(a.cpu_smoke)
    return settings


def _train_result(out: Path, metrics: dict, zero3: bool) -> dict:
    from prm_lessons.models.prm import FORMAT_FILE

    meta = json.loads((out / FORMAT_FILE).read_text()) if (out / FORMAT_FILE).exists() else {}
    losses = metrics.get("loss_history") or []
    ok = (metrics.get("layout") == "released" and meta.get("layout") == "released" and losses
          and all(math.isfinite(x) for x in losses) and bool(metrics.get("deepspeed")) == zero3)
    keys = ("layout", "global_steps", "world_size", "deepspeed", "precision", "train_tokens", "train_seconds",
            "tokens_per_second", "final_train_loss", "loss_history", "hardware")
    return {"metrics": {k: metrics.get(k) for k in keys}, "ok": bool(ok),
            "files": sorted(p.name for p in out.iterdir())}


def phase_train_zero3(a) -> dict:
    """torchrun, 1 process, as run_training launches ranks (spec file, free port, launcher env)."""
    from prm_lessons.training.launch import distributed_command, free_port, launcher_env, run_launcher
    from prm_lessons.training.train import METRICS_FILE

    work = Path(a.work)
    out, ckpt = work / "prm_zero3", work / ".prm_zero3.checkpoints"
    settings = train_settings(a, True, SIZE["cpu" if a.cpu_smoke else "gpu"]["zero3_steps"])
    spec = work / "zero3.spec.json"
    # the keys of train_prm, as run_training's spec file
    spec.write_text(json.dumps({"trainset": str(work / "trainset.parquet"), "base_dir": str(work / "base"),
                                "out_dir": str(out), "settings": settings, "label_type": "hard",
                                "checkpoint_dir": str(ckpt), "threads": None, "features": None}))
    cmd = distributed_command(spec, 1, free_port())
    env = launcher_env(cpu=bool(a.cpu_smoke))
    if a.cpu_smoke:
        env.setdefault("DS_ACCELERATOR", "cpu")  # as run_training does for training.deepspeed_on_cpu
    log("launch: " + " ".join(cmd))
    t0 = time.time()
    run_launcher(cmd, env)
    res = _train_result(out, json.loads((out / METRICS_FILE).read_text()), zero3=True)
    res["wall_seconds"] = time.time() - t0
    res["checks"] = [{"name": "train ZeRO-3 via torchrun (1 proc) + released save",
                      "status": "PASS" if res["ok"] else "FAIL",
                      "detail": {k: res["metrics"][k] for k in ("layout", "global_steps", "deepspeed", "precision",
                                                                "final_train_loss")}}]
    return res


def phase_train_zero3_inprocess(a) -> dict:
    """train_launch.run_training as a 1-GPU rule calls it: gpus 1 trains in this process (no torchrun)."""
    from prm_lessons.training.launch import run_training

    work = Path(a.work)
    out = work / "prm_zero3_inproc"
    t0 = time.time()
    metrics = run_training(str(work / "trainset.parquet"), str(work / "base"), str(out),
                           train_settings(a, True, 2), "hard", str(work / ".prm_zero3_inproc.checkpoints"))
    res = _train_result(out, metrics, zero3=True)
    res["wall_seconds"] = time.time() - t0
    res["checks"] = [{"name": "run_training gpus=1 + ZeRO-3 (in-process, the workflow's 1-GPU path)",
                      "status": "PASS" if res["ok"] else "FAIL", "detail": res["metrics"]["deepspeed"]}]
    return res


def phase_train_plain(a) -> dict:
    """Plain Trainer (no DeepSpeed), as run_training trains a 1-GPU job; steady tokens/s and MFU."""
    import torch
    from transformers import TrainerCallback

    from prm_lessons.jobs.hardware import require_gpus
    from prm_lessons.training.train import train_prm

    work = Path(a.work)
    out = work / "prm_plain"
    steps = SIZE["cpu" if a.cpu_smoke else "gpu"]["plain_steps"]
    warm = 2
    settings = train_settings(a, False, steps)
    require_gpus("train_prm", int(settings["gpus"]))
    marks: dict[int, float] = {}

    class StepTimes(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            marks[state.global_step] = time.perf_counter()

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            marks["params"] = sum(p.numel() for p in model.parameters())
            marks["embed"] = model.backbone.get_input_embeddings().weight.numel()

    metrics = train_prm(str(work / "trainset.parquet"), str(work / "base"), str(out), settings, "hard",
                        str(work / ".prm_plain.checkpoints"), callbacks=[StepTimes()])
    res = _train_result(out, metrics, zero3=False)
    tokens_per_step = metrics["train_tokens"] / max(1, metrics["global_steps"])  # rows are alike in length
    steady = (tokens_per_step * (steps - warm) / (marks[steps] - marks[warm])) if steps > warm else None
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    res.update(tokens_per_step=tokens_per_step, steady_tokens_per_second=steady, params=int(marks["params"]),
               device=device,
               max_memory_gb=torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None)
    res.update(utilisation(SHAPE["cpu" if a.cpu_smoke else "gpu"], steady, tokens_per_step / settings["batch_size"],
                           device, settings["gradient_checkpointing"]))
    res["checks"] = [{"name": "train plain Trainer (no DeepSpeed) + released save",
                      "status": "PASS" if res["ok"] else "FAIL",
                      "detail": f"{steady or 0:.0f} tokens/s steady, {_util_text(res)} on {device}"}]
    return res


def utilisation(shape: dict, tokens_per_second: float | None, context: float, device: str, ckpt: bool) -> dict:
    """MFU and HFU (prm_lessons.training.flops) of a PRM of this shape (no LM head, the step head)."""
    from prm_lessons.training import flops

    s = flops.shape_of({**BASE_CFG, **shape})
    peak = flops.peak_bf16(device) or PEAK_BF16
    out = {"matmul_weights": flops.matmul_weights(s), "attention_context": context, "peak_bf16_flops": peak,
           "mfu": None, "hfu": None}
    if tokens_per_second:
        out.update(flops.training_utilisation(s, tokens_per_second, context, peak, ckpt))
    return out


def _util_text(res: dict) -> str:
    if res.get("mfu") is None:
        return "MFU n/a"
    return (f"MFU {100 * res['mfu']:.1f}% / HFU {100 * res['hfu']:.1f}% (N={res['matmul_weights'] / 1e6:.0f}M "
            f"matmul weights, no embedding; attention at T={res['attention_context']:.0f})")


def paper_training() -> dict:
    """config/paper.yaml's training settings that set the step's shape: precision, checkpointing, micro-batch,
    max_length."""
    import yaml

    t = yaml.safe_load(PAPER.read_text())["training"]
    return {k: t[k] for k in ("precision", "gradient_checkpointing", "batch_size", "max_length")}


def slice_config(size: str):
    """The Qwen2.5-Math-7B-Instruct slice as a Qwen2Config (Qwen2ForCausalLM, untied, full vocabulary)."""
    from transformers import Qwen2Config

    shape = SLICE[size]
    cfg = Qwen2Config(**BASE_CFG, **shape, max_window_layers=shape["num_hidden_layers"])
    cfg.architectures = ["Qwen2ForCausalLM"]
    return cfg


def slice_settings(a) -> dict:
    """train_prm settings of the slice: paper.yaml's precision, gradient checkpointing, micro-batch and
    max_length, one GPU, no DeepSpeed (one GPU partitions nothing), no checkpoint."""
    size = "cpu" if a.cpu_smoke else "gpu"
    paper = paper_training()
    settings = train_settings(a, False, SLICE_STEPS[size]["steps"])
    settings.update(gradient_checkpointing=bool(paper["gradient_checkpointing"]), batch_size=int(paper["batch_size"]),
                    max_length=int(paper["max_length"]) if not a.cpu_smoke else settings["max_length"],
                    precision=paper["precision"] if not a.cpu_smoke else "auto")
    return settings


def top_kernels(averages, k: int = TOP_KERNELS) -> list[dict]:
    """The k device kernels with the most self time, from torch.profiler's key_averages() (FunctionEventAvg:
    key, count, self_device_time_total in us, device_type), with their share of all kernel time."""
    kernels = [e for e in averages if str(getattr(e, "device_type", "")).rsplit(".", 1)[-1] in ("CUDA", "PrivateUse1")
               and getattr(e, "self_device_time_total", 0) > 0]
    total = sum(e.self_device_time_total for e in kernels) or 1
    kernels.sort(key=lambda e: e.self_device_time_total, reverse=True)
    return [{"kernel": e.key, "calls": int(e.count), "self_ms": e.self_device_time_total / 1e3,
             "share": e.self_device_time_total / total, "attention": bool(ATTENTION_KERNEL.search(e.key))}
            for e in kernels[:k]]


def attention_kernels(rows: list[dict]) -> list[str]:
    """The attention kernels among the top ones, most time first (the report names them)."""
    return [r["kernel"] for r in rows if r["attention"]]


def phase_train_slice(a) -> dict:
    """The 7B slice through train_prm: steady tokens/s, MFU / HFU, and the profiler's top kernels."""
    import torch
    from transformers import AutoModelForCausalLM, TrainerCallback

    from prm_lessons.rehearsal.tokenizers import save_tokenizer
    from prm_lessons.training.train import train_prm

    size = "cpu" if a.cpu_smoke else "gpu"
    work = Path(a.work)
    cuda = torch.cuda.is_available() and not a.cpu_smoke
    cfg = slice_config(size)
    torch.manual_seed(2)
    with torch.device("cuda" if cuda else "cpu"):
        lm = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    base = work / "slice_base"
    lm.save_pretrained(base)
    save_tokenizer("qwen2", base)
    del lm
    if cuda:
        torch.cuda.empty_cache()
    plan = SLICE_STEPS[size]
    settings = slice_settings(a)
    marks: dict = {}
    prof_state: dict = {}

    class StepTimes(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == plan["warm"] and "prof" not in prof_state:
                acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
                prof_state["prof"] = torch.profiler.profile(activities=acts)
                prof_state["prof"].__enter__()

        def on_step_end(self, args, state, control, **kwargs):
            if cuda:
                torch.cuda.synchronize()
            marks[state.global_step] = time.perf_counter()
            prof = prof_state.get("prof")
            if prof is not None and state.global_step == plan["warm"] + plan["profiled"] and "done" not in prof_state:
                prof.__exit__(None, None, None)
                prof_state["done"] = True

    out = work / "prm_slice"
    metrics = train_prm(str(work / "trainset.parquet"), str(base), str(out), settings, "hard",
                        str(work / ".prm_slice.checkpoints"), callbacks=[StepTimes()])
    steps, warm = plan["steps"], plan["warm"]
    tokens_per_step = metrics["train_tokens"] / max(1, metrics["global_steps"])
    # the profiled steps are slower: steady time from the steps after them
    after = warm + plan["profiled"]
    steady = tokens_per_step * (steps - after) / (marks[steps] - marks[after]) if steps > after else None
    device = torch.cuda.get_device_name(0) if cuda else "cpu"
    res = {"shape": {**SLICE[size], "vocab_size": BASE_CFG["vocab_size"]}, "settings": settings,
           "tokens_per_step": tokens_per_step, "steady_tokens_per_second": steady, "device": device,
           "global_steps": metrics.get("global_steps"), "final_train_loss": metrics.get("final_train_loss"),
           "max_memory_gb": torch.cuda.max_memory_allocated() / 2**30 if cuda else None}
    res.update(utilisation(SLICE[size], steady, tokens_per_step / settings["batch_size"], device,
                           settings["gradient_checkpointing"]))
    prof = prof_state.get("prof")
    rows = top_kernels(prof.key_averages()) if prof is not None and "done" in prof_state else []
    res["top_kernels"] = rows
    res["attention_kernels"] = attention_kernels(rows)
    if prof is not None and "done" in prof_state:
        sort = "self_device_time_total" if cuda else "self_cpu_time_total"
        try:  # the human-readable table beside the rows; its format is torch's, not needed for the check
            res["profile_table"] = prof.key_averages().table(sort_by=sort, row_limit=TOP_KERNELS)
        except Exception as e:  # noqa: BLE001
            res["profile_table"] = f"table not rendered: {e!r}"
    losses = metrics.get("loss_history") or []
    ok = bool(losses) and all(math.isfinite(x) for x in losses) and steady is not None and (rows or not cuda)
    attn = res["attention_kernels"][0] if res["attention_kernels"] else "none among the top kernels"
    res["checks"] = [{"name": "train 7B slice (Trainer, paper settings) + profile", "status": "PASS" if ok else "FAIL",
                      "detail": f"{steady or 0:.0f} tokens/s steady, {_util_text(res)} on {device}; "
                                f"attention kernel: {attn}"}]
    return res


def phase_score(a) -> dict:
    """One adapter on one device/dtype: scores of the comparison rows (+ tokens/s over score_rows)."""
    import torch

    from prm_lessons.scoring.batch import ScoreStats, score_responses
    from prm_lessons.scoring.load import load_adapter
    from prm_lessons.scoring.score_file import prm_spec

    s = SIZE["cpu" if a.cpu_smoke else "gpu"]
    data = json.load(open(Path(a.work) / "score_rows.json"))
    spec = prm_spec(a.prm, None if a.adapter == "trained" else a.adapter,
                    dtype=None if a.adapter == "trained" else a.dtype, max_length=s["max_length"])
    t0 = time.time()
    adapter = load_adapter(spec)
    load_s = time.time() - t0
    cmp_rows = data[:s["cmp_rows"]]
    scores = score_responses(adapter, [r["question"] for r in cmp_rows], [r["steps"] for r in cmp_rows])
    res = {"device": str(adapter.device), "dtype": str(next(adapter.model.parameters()).dtype),
           "scores": scores, "load_seconds": load_s, "token_info": adapter.token_info()}
    if a.throughput:
        score_responses(adapter, [r["question"] for r in data[:8]], [r["steps"] for r in data[:8]])  # warm-up
        stats = ScoreStats()
        score_responses(adapter, [r["question"] for r in data], [r["steps"] for r in data], stats=stats)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        res.update(throughput_tokens=stats.tokens, throughput_seconds=stats.seconds,
                   tokens_per_second=stats.tokens / stats.seconds if stats.seconds else None,
                   forward_passes=stats.forward_passes)
    return res


def bare_loop_throughput(a) -> dict:
    """bench/train_throughput.py beside the Trainer's number: its bare bf16 loop (torch AdamW, no Trainer,
    gradient checkpointing on, as the paper config trains) on the same ~0.5B shape; docs/preflight.md's
    MFU goal is stated for it."""
    work = Path(a.work)
    result = work / "train_throughput.json"
    result.unlink(missing_ok=True)
    cmd = [sys.executable, str(ROOT / "bench" / "train_throughput.py"), "--steps", "10", "--warmup", "2",
           "--batch", "8", "--seq", "1024", "--grad-ckpt", "--json", str(result), *(["--tiny"] if a.cpu_smoke else [])]
    log("phase bench_train_throughput: start")
    t0 = time.time()
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        rc = proc.wait(timeout=PHASE_TIMEOUT_S.get("bench_train_throughput", DEFAULT_TIMEOUT_S))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        rc = "timeout"
    log(f"phase bench_train_throughput: rc={rc} in {time.time() - t0:.0f} s")
    if rc != 0 or not result.exists():
        return {"checks": [{"name": "bench/train_throughput.py", "status": "FAIL", "detail": f"rc={rc}"}]}
    res = json.loads(result.read_text())
    gpu = res.get("gpu") or res  # the script's JSON nests the GPU numbers or holds them at the top
    mfu = gpu.get("mfu")
    res["checks"] = [{"name": "bench/train_throughput.py (bare bf16 loop, grad ckpt)", "status": "PASS",
                      "detail": f"{gpu.get('tokens_per_second') or 0:.0f} tokens/s, MFU "
                                + (f"{100 * mfu:.1f}%" if mfu is not None else "n/a")
                                + " (prm_lessons.training.flops)" + f" on {gpu.get('device')}"}]
    res["phase_wall_seconds"] = time.time() - t0
    return res


PHASES = {"env": phase_env, "build": phase_build, "train_zero3": phase_train_zero3,
          "train_zero3_inprocess": phase_train_zero3_inprocess, "train_plain": phase_train_plain,
          "train_slice": phase_train_slice, "score": phase_score}
# the training phases in order, each in its own process (run_phase); scoring and the in-process ZeRO-3 run follow
FIRST_PHASES = ("env", "build", "train_zero3", "train_plain", "train_slice")


# ------------------------------------------------------------------------------------------------ driver

def phase_command(a, name: str, result: Path, extra: list[str] | None = None) -> list[str]:
    """The command of one phase's process: this script with --phase, its work directory and result file."""
    return [sys.executable, str(Path(__file__).resolve()), "--phase", name, "--work", str(a.work),
            "--result", str(result), *(["--cpu-smoke"] if a.cpu_smoke else []), *(extra or [])]


def run_phase(a, name: str, extra: list[str] | None = None, tag: str | None = None, hide_gpu: bool = False) -> dict:
    tag = tag or name
    result = Path(a.work) / f"phase_{tag}.json"
    result.unlink(missing_ok=True)
    cmd = phase_command(a, name, result, extra)
    env = dict(os.environ)
    if hide_gpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    log(f"phase {tag}: start")
    t0 = time.time()
    # own process group: a timeout ends torchrun and its ranks too, not only the phase's process
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        rc = proc.wait(timeout=PHASE_TIMEOUT_S.get(tag, DEFAULT_TIMEOUT_S))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        rc = "timeout"
    wall = time.time() - t0
    log(f"phase {tag}: rc={rc} in {wall:.0f} s")
    if rc == 0 and result.exists():
        res = json.loads(result.read_text())
    else:
        res = {"checks": [{"name": f"phase {tag}", "status": "FAIL", "detail": f"rc={rc} (see its log above)"}]}
    res["phase_wall_seconds"] = wall
    return res


def compare(name: str, got: list[list[float]], ref: list[list[float]], tol: float) -> dict:
    flat = [(x, y) for g, r in zip(got, ref) for x, y in zip(g, r)]
    same_shape = len(got) == len(ref) and all(len(g) == len(r) for g, r in zip(got, ref))
    finite = all(math.isfinite(x) and math.isfinite(y) for x, y in flat)
    diff = max((abs(x - y) for x, y in flat), default=float("nan"))
    ok = bool(flat) and same_shape and finite and diff <= tol
    return {"name": name, "status": "PASS" if ok else "FAIL",
            "detail": f"{len(flat)} steps, max |diff| {diff:.2e} (tolerance {tol:g})"
                      + ("" if same_shape else ", step counts differ")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny sizes on CPU (no GPU needed)")
    ap.add_argument("--work", default=None, help="work directory (default: a new temporary one)")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="where gpu_check.json goes (default $OUT)")
    ap.add_argument("--skip", default="", help="comma-separated phases to leave out (e.g. train_zero3_inprocess)")
    ap.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--prm", help=argparse.SUPPRESS)
    ap.add_argument("--adapter", help=argparse.SUPPRESS)
    ap.add_argument("--dtype", help=argparse.SUPPRESS)
    ap.add_argument("--throughput", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.phase:  # a child: one phase, its result to --result
        import logging

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        res = PHASES[a.phase](a)
        Path(a.result).write_text(json.dumps(res, indent=2, default=str))
        return 0

    import torch  # the parent never initialises CUDA (is_available: NVML only until a context is made)

    if not a.cpu_smoke and not torch.cuda.is_available():
        print("FAIL cuda: no CUDA device visible; use --cpu-smoke on a machine without one", flush=True)
        return 1
    a.work = a.work or tempfile.mkdtemp(prefix="gpu_check-")
    Path(a.work).mkdir(parents=True, exist_ok=True)
    out = Path(a.out or a.work)
    out.mkdir(parents=True, exist_ok=True)
    skip = {x for x in a.skip.split(",") if x}
    t0 = time.time()
    report: dict = {"mode": "cpu-smoke" if a.cpu_smoke else "gpu", "work": str(a.work), "phases": {}}

    def dump() -> None:  # after each phase: a call killed at its time limit still brings numbers back
        (out / "gpu_check.json").write_text(json.dumps({**report, "verdict": "INCOMPLETE"}, indent=2, default=str))

    for name in FIRST_PHASES:
        if name in skip:
            continue
        report["phases"][name] = run_phase(a, name)
        dump()
        if name == "build" and report["phases"][name]["checks"][0]["status"] == "FAIL":
            break
    if "bench_train_throughput" not in skip:
        report["phases"]["bench_train_throughput"] = bare_loop_throughput(a)
        dump()
    # scoring: the GPU (or, in the smoke run, the same CPU) against float32 on the CPU with CUDA hidden
    checks_extra = []
    work = Path(a.work)
    targets = [("qwen_prm", work / "qwen_prm", ["float32", "bfloat16"])]
    trained = next((work / d for d in ("prm_zero3", "prm_plain") if (work / d / "prm.json").exists()), None)
    if trained is not None:
        targets.append(("trained", trained, [None]))
    if "score" not in skip and (work / "score_rows.json").exists():
        for adapter, path, dtypes in targets:
            ref = run_phase(a, "score", ["--prm", str(path), "--adapter", adapter, "--dtype", "float32"],
                            tag=f"score_{adapter}_cpu_fp32", hide_gpu=True)
            report["phases"][f"score_{adapter}_cpu_fp32"] = ref
            dump()
            for dt in dtypes:
                tag = f"score_{adapter}_dev_{dt or 'default'}"
                got = run_phase(a, "score", ["--prm", str(path), "--adapter", adapter,
                                             *(["--dtype", dt] if dt else []),
                                             *(["--throughput"] if dt != "float32" else [])], tag=tag)
                report["phases"][tag] = got
                dump()
                if "scores" in got and "scores" in ref:
                    prec = "fp32" if dt == "float32" else "bf16"
                    c = compare(f"scores {adapter} {got['device']} {got['dtype']} vs cpu float32",
                                got["scores"], ref["scores"], TOL[prec])
                    if got.get("tokens_per_second"):
                        c["detail"] += f"; {got['tokens_per_second']:.0f} scoring tokens/s"
                    checks_extra.append(c)
                    if not a.cpu_smoke and not got["device"].startswith("cuda"):
                        checks_extra.append({"name": f"{tag} on the GPU", "status": "FAIL",
                                             "detail": f"scored on {got['device']}"})
    # last: a hang here costs only its own timeout. On CPU a 1-process run_training with DeepSpeed goes
    # through torchrun, which train_zero3 already ran
    if not a.cpu_smoke and "train_zero3_inprocess" not in skip and (work / "trainset.parquet").exists():
        report["phases"]["train_zero3_inprocess"] = run_phase(a, "train_zero3_inprocess")
    report["comparisons"] = checks_extra
    report["wall_seconds"] = time.time() - t0
    lines = [c for p in report["phases"].values() for c in p.get("checks", [])] + checks_extra
    print("\n==================== gpu_check ====================", flush=True)
    env = report["phases"].get("env", {})
    print(f"device: {env.get('device')}; versions: {env.get('versions')}")
    for c in lines:
        print(f"{c['status']} {c['name']}: {c['detail']}", flush=True)
    plain = report["phases"].get("train_plain", {})
    report["summary"] = {
        "device": env.get("device"), "train_plain_tokens_per_second": plain.get("steady_tokens_per_second"),
        "train_plain_mfu": plain.get("mfu"), "train_plain_hfu": plain.get("hfu"),
        "slice_tokens_per_second": report["phases"].get("train_slice", {}).get("steady_tokens_per_second"),
        "slice_mfu": report["phases"].get("train_slice", {}).get("mfu"),
        "slice_hfu": report["phases"].get("train_slice", {}).get("hfu"),
        "slice_attention_kernels": report["phases"].get("train_slice", {}).get("attention_kernels"),
        "bare_loop_tokens_per_second": report["phases"].get("bench_train_throughput", {}).get("tokens_per_second"),
        "bare_loop_mfu": report["phases"].get("bench_train_throughput", {}).get("mfu"),
        "train_zero3_tokens_per_second":
            report["phases"].get("train_zero3", {}).get("metrics", {}).get("tokens_per_second"),
        "score_qwen_prm_bf16_tokens_per_second":
            report["phases"].get("score_qwen_prm_dev_bfloat16", {}).get("tokens_per_second"),
        "score_trained_tokens_per_second":
            report["phases"].get("score_trained_dev_default", {}).get("tokens_per_second")}
    failed = [c["name"] for c in lines if c["status"] == "FAIL"]
    report["verdict"] = "FAIL" if failed else "PASS"
    report["failed"] = failed
    (out / "gpu_check.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"summary: {json.dumps(report['summary'], default=str)}")
    print(f"wall: {report['wall_seconds']:.0f} s; json: {out / 'gpu_check.json'}")
    print(f"GPU_CHECK: {'FAIL (' + '; '.join(failed) + ')' if failed else 'PASS'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
