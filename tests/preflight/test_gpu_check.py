"""bench/gpu_check.py's 7B-slice phase up to the device (it runs only on a GPU): the slice's config and
parameter count, its training settings (config/paper.yaml's), the phase's launch command, the profiler's
kernel table and the MFU / HFU it reports. No model is trained here."""
import argparse
import enum
import importlib.util
from pathlib import Path

import pytest
import yaml

from prm_lessons.training import flops

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gc():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "bench/gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_slice_is_qwen25_math_7b_shape_with_4_layers(gc):
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM

    cfg = gc.slice_config("gpu")
    assert (cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers, cfg.num_attention_heads,
            cfg.num_key_value_heads, cfg.vocab_size, cfg.tie_word_embeddings) == (3584, 18944, 4, 28, 4, 152064, False)
    assert cfg.architectures == ["Qwen2ForCausalLM"]
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    total = sum(p.numel() for p in model.parameters())
    # 4 of Qwen2.5-Math-7B's 233,046,016-weight layers + embedding and untied LM head (152064 x 3584 each)
    # + q/k/v biases (3584 + 2 x 512 per layer) + norms (2 x 3584 per layer + the final one)
    assert total == 4 * 233_046_016 + 2 * 152064 * 3584 + 4 * (3584 + 1024) + 4 * 2 * 3584 + 3584
    s = flops.shape_of(cfg)  # what the phase's MFU counts: the PRM, no LM head, no embedding
    assert flops.matmul_weights(s) == 4 * 233_046_016 + 3584 * 3584 + 2 * 3584


def test_slice_trains_with_paper_settings(gc):
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())["training"]
    st = gc.slice_settings(argparse.Namespace(cpu_smoke=False))
    assert (st["precision"], st["gradient_checkpointing"], st["batch_size"], st["max_length"]) == \
        (paper["precision"], paper["gradient_checkpointing"], paper["batch_size"], paper["max_length"]) == \
        ("bf16", True, 2, 4096)
    assert st["deepspeed"] is None and st["gpus"] == 1 and st["mode"] == "full" and st["save_steps"] == 0
    assert st["max_steps"] == gc.SLICE_STEPS["gpu"]["steps"] > gc.SLICE_STEPS["gpu"]["warm"] + 2
    smoke = gc.slice_settings(argparse.Namespace(cpu_smoke=True))
    assert smoke["gpus"] == 0 and smoke["precision"] == "auto" and smoke["gradient_checkpointing"] is True


def test_phase_is_launched_in_order_with_its_own_timeout(gc, tmp_path):
    assert gc.FIRST_PHASES.index("build") < gc.FIRST_PHASES.index("train_slice")
    assert gc.PHASES["train_slice"] is gc.phase_train_slice and gc.PHASE_TIMEOUT_S["train_slice"] >= 240
    a = argparse.Namespace(cpu_smoke=False, work=str(tmp_path))
    cmd = gc.phase_command(a, "train_slice", tmp_path / "r.json")
    assert cmd[1] == str(ROOT / "bench/gpu_check.py") and cmd[2:] == [
        "--phase", "train_slice", "--work", str(tmp_path), "--result", str(tmp_path / "r.json")]
    assert "--cpu-smoke" in gc.phase_command(argparse.Namespace(cpu_smoke=True, work="w"), "train_slice", Path("r"))


class DT(enum.Enum):
    CPU = 0
    CUDA = 1


class Avg:
    """A FunctionEventAvg's fields the report reads (key, count, self_device_time_total in us, device_type)."""

    def __init__(self, key, us, count=1, device=DT.CUDA):
        self.key, self.self_device_time_total, self.count, self.device_type = key, us, count, device


# kernel names in the form torch's profiler prints them for bf16 training on sm90 (cuBLAS GEMMs, PyTorch's
# flash-attention kernels, elementwise); written for this test, not copied from a run of this project
SAMPLE = [
    Avg("aten::mm", 900_000, 400, DT.CPU),
    Avg("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
        "kernel__5x_cublas", 420_000, 96),
    Avg("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, "
        "8, 2, 4, 2, false, false, cutlass::bfloat16_t>>(...)", 80_000, 8),
    Avg("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
        "cutlass::bfloat16_t>>(...)", 45_000, 16),
    Avg("void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel(...)>", 30_000, 64),
    Avg("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 2),
]


def test_top_kernels_name_the_attention_kernel(gc):
    rows = gc.top_kernels(SAMPLE, k=3)
    assert [r["kernel"][:20] for r in rows] == ["sm90_xmma_gemm_bf16b", "void pytorch_flash::", "void pytorch_flash::"]
    assert [r["attention"] for r in rows] == [False, True, True]
    assert rows[0]["self_ms"] == 420.0 and rows[0]["calls"] == 96
    assert rows[0]["share"] == pytest.approx(420 / 575)  # of all kernel time, the CPU op and idle kernels left out
    assert gc.attention_kernels(rows)[0].startswith("void pytorch_flash::flash_bwd")
    assert gc.attention_kernels(gc.top_kernels(SAMPLE[:2])) == []


def test_mfu_and_hfu_from_the_formula(gc):
    u = gc.utilisation(gc.SLICE["gpu"], 20_000.0, 1000.0, "NVIDIA H100 80GB HBM3", True)
    s = flops.shape_of({**gc.BASE_CFG, **gc.SLICE["gpu"]})
    assert u["mfu"] == pytest.approx(20_000 * flops.train_flops(s, 1000.0) / 989e12)
    assert u["hfu"] == pytest.approx(20_000 * flops.train_flops(s, 1000.0, recompute=True) / 989e12)
    assert gc.utilisation(gc.SLICE["gpu"], None, 1000.0, "cpu", True)["mfu"] is None
