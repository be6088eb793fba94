"""ZeRO-3 with bf16 (the GPU runs' setting): the step head is built as the base is, partitioned in bf16.
A float32 head beside a bf16 base stops DeepSpeed's stage-3 optimizer (seen only on a GPU, where the CPU
rehearsal's float32 hides it), so this checks, on DeepSpeed's CPU accelerator, what the head is made of."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("deepspeed")

CHILD = r"""
import torch
from transformers.integrations import HfDeepSpeedConfig
from prm_lessons.models.prm import StepHead
from prm_lessons.training.trainer import zero3_init

plain = StepHead(16)   # no DeepSpeed config: an ordinary float32 module
assert all(not hasattr(p, "ds_id") and p.dtype == torch.float32 for p in plain.parameters())
keep = HfDeepSpeedConfig({"zero_optimization": {"stage": 3}, "bf16": {"enabled": True},
                          "train_micro_batch_size_per_gpu": 1})
with zero3_init():
    head = StepHead(16)
params = list(head.parameters())
assert params and all(hasattr(p, "ds_id") for p in params), "not partitioned"
assert {p.dtype for p in params} == {torch.bfloat16}, {p.dtype for p in params}
print("OK")
"""


def test_head_is_partitioned_in_bf16_under_zero3(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CUDA_VISIBLE_DEVICES": "", "DS_ACCELERATOR": "cpu",
           "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "0"}
    from prm_lessons.training.launch import free_port

    env["MASTER_PORT"] = str(free_port("127.0.0.1"))
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0 and "OK" in out.stdout, out.stderr[-3000:]
