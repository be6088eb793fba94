"""Collective bytes per optimizer step of the paper's 7B full fine-tune, measured without a GPU: config/paper.yaml's
training block as the plan resolves it (plan.training.training_settings: config/deepspeed/zero2.json,
gradient accumulation 1) through the project's training path (training.train.train_prm, as each torchrun rank
of launch.main runs it) on a tiny random-weight Qwen2 PRM, in two gloo ranks on DeepSpeed's CPU accelerator,
with DeepSpeed's comms logger switched on (the config's `comms_logger` block: deepspeed.comm's timed_op records
every collective DeepSpeed issues, by op and message size). A callback reads the logger at every optimizer
step's end; the bytes between two step ends must stay within 3x the model's bytes (its parameters x bytes per
parameter in the training dtype). ZeRO-2 moves ~2x: the gradients reduced once (an all-reduce of
reduce_bucket_size buckets: DeepSpeed's default use_multi_rank_bucket_allreduce) and the updated weights
all-gathered once.

What a byte is: each collective's full buffer, nccl-tests' `size` (an all-reduce's, reduce's or broadcast's
tensor, an all-gather's output, a reduce-scatter's input), whatever the world size: DeepSpeed logs an
all-gather's input shard, so it counts world x that. The ring traffic per GPU is (n-1)/n (gathers,
reduce-scatters) or 2(n-1)/n (all-reduce) of it.

Dtype: the CPU run trains in fp32 (prm.use_bf16: bf16 on a GPU only), so its weights and its collectives are
4 bytes per parameter; on the GPU both are bf16 (DeepSpeedEngine.communication_data_type: the training dtype
unless the config sets communication_data_type, which zero2.json does not). The ratio is the same.

Not counted: collectives outside deepspeed.comm (accelerate's gather of the loss at logging steps, none in
these steps: logging_steps is past the run; the end-of-run token count and weight gather, after the last mark).

Measured (DeepSpeed 0.19.8, torch 2.13, a 29,698-parameter PRM): 2.0x per optimizer step, the all-reduce and
the all-gather 1.0x each. It fails where the geometry would blow it, and the bytes follow the micro-steps: with
gradient accumulation 4 under ZeRO-2 the gradients are reduced at every micro-step (5.0x: 4 + 1), and ZeRO-3 with
accumulation 8 (the configuration issue 40 found) gathers the weights and reduce-scatters the gradients at every
micro-step (15.9x: 7.9 + 8.0; the tiny model stays gathered from forward to backward, inside the config's
stage3_max_live_parameters, where a 7B base is gathered again for the backward pass, ~3x per micro-step). The
slow tier runs both and checks that they fail the bound. Cost of the fast-tier guard: one two-rank run,
~16 s on an idle 2-core machine (docs/testing.md)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from specs import paper_config

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("deepspeed")

from _prm_tiny import signal_rows, tiny_base, write_trainset  # noqa: E402
from prm_lessons.plan.training import training_settings  # noqa: E402
from prm_lessons.training.launch import free_port, launcher_env  # noqa: E402

BOUND = 3.0  # issue 40: collective bytes per optimizer step <= 3x the model's bytes
STEPS = 4  # optimizer steps; the bytes between consecutive step ends are measured (3 windows)

# One torchrun rank: launch.main's train_prm with a callback that snapshots DeepSpeed's comms logger at every
# optimizer step's end (the logger's dict: {op: {message bytes: [count, latencies, algbw, busbw]}}).
CHILD = r"""
import json, os, sys
from pathlib import Path

from deepspeed.comm import comm as ds_comm
from transformers import TrainerCallback

from prm_lessons.training.launch import close_process_group
from prm_lessons.training.train import train_prm

spec = json.loads(Path(sys.argv[1]).read_text())


class CommMarks(TrainerCallback):
    def __init__(self):
        self.marks, self.model = [], None

    def on_step_end(self, args, state, control, model=None, **kwargs):
        logger = ds_comm.comms_logger
        self.marks.append({"step": state.global_step, "enabled": bool(logger.enabled),
                           "ops": {op: {str(size): rec[0] for size, rec in sizes.items()}
                                   for op, sizes in logger.comms_dict.items()}})
        if self.model is None:  # the module the engine trains (ZeRO-3: ds_numel, the whole parameter's size)
            ps = list(model.parameters())
            self.model = {"params": sum(getattr(p, "ds_numel", p.numel()) for p in ps),
                          "bytes": sum(getattr(p, "ds_numel", p.numel()) * p.element_size() for p in ps),
                          "dtypes": sorted({str(p.dtype) for p in ps})}


marks = CommMarks()
m = train_prm(spec["trainset"], spec["base_dir"], spec["out_dir"], spec["settings"], "hard",
              spec["checkpoint_dir"], threads=1, callbacks=[marks])
rank = int(os.environ["RANK"])
Path(spec["out_dir"], f"comm-rank{rank}.json").write_text(json.dumps(
    {"rank": rank, "world": int(os.environ["WORLD_SIZE"]), "model": marks.model, "marks": marks.marks,
     "global_steps": m["global_steps"], "deepspeed": m["deepspeed"], "batches": m["batches"]}))
close_process_group()
"""


def buffer_bytes(op: str, message_bytes: int, world: int) -> int:
    """The full buffer of one logged collective (module docstring): DeepSpeed's comms logger records an
    all-gather's input shard (get_msg_size_from_args reads its `tensor` argument), every other op's whole
    tensor (reduce-scatter: its input; all_gather_object: 0, no tensor)."""
    return message_bytes * world if op.startswith("all_gather") and op != "all_gather_object" else message_bytes


def step_bytes(marks: list[dict], world: int) -> list[dict[str, int]]:
    """Bytes per op between consecutive optimizer step ends (the logger's cumulative counts differenced)."""
    def total(ops):
        return {op: sum(buffer_bytes(op, int(size), world) * n for size, n in sizes.items())
                for op, sizes in ops.items()}

    cum = [total(m["ops"]) for m in marks]
    return [{op: b.get(op, 0) - a.get(op, 0) for op in b if b.get(op, 0) - a.get(op, 0)} for a, b in zip(cum, cum[1:])]


def reduced(ops: dict[str, int]) -> int:
    """Bytes of the gradient reductions among one step's ops (all-reduce, reduce, reduce-scatter)."""
    return sum(b for op, b in ops.items() if op.startswith(("all_reduce", "reduce")))


def gathered(ops: dict[str, int]) -> int:
    """Bytes of the weight gathers among one step's ops."""
    return sum(b for op, b in ops.items() if op.startswith("all_gather"))


def test_buffer_bytes_counts_an_all_gathers_output():
    marks = [{"ops": {"all_reduce": {"400": 1}, "all_gather_into_tensor": {"200": 1}}},
             {"ops": {"all_reduce": {"400": 3, "4": 1}, "all_gather_into_tensor": {"200": 2}, "barrier": {"0": 1}}}]
    assert step_bytes(marks, world=2) == [{"all_reduce": 804, "all_gather_into_tensor": 400}]
    assert buffer_bytes("reduce_scatter_tensor", 400, 8) == 400 and buffer_bytes("all_gather", 50, 8) == 400
    assert buffer_bytes("all_gather_object", 0, 8) == 0
    ops = step_bytes(marks, world=2)[0]
    assert reduced(ops) == 804 and gathered(ops) == 400


def deepspeed_file(path: str, out: Path) -> str:
    """The project's DeepSpeed config with DeepSpeed's comms logger switched on (all ops, no per-op log lines)."""
    cfg = json.loads(Path(path).read_text())
    cfg["comms_logger"] = {"enabled": True, "prof_all": True, "verbose": False, "debug": False}
    out.write_text(json.dumps(cfg))
    return str(out)


def paper_training(tmp_path: Path, **over) -> dict:
    """config/paper.yaml's training block as the plan hands it to the training rule, on two gloo ranks of the
    CPU (DeepSpeed's CPU accelerator, fp32), a few steps of small token batches (the bytes of a step do not
    depend on its tokens) and no checkpoints; `over`: what a case changes."""
    train = training_settings(paper_config(), ROOT)
    ds = over.pop("deepspeed", train["deepspeed"])
    return {**train, "deepspeed": deepspeed_file(ds, tmp_path / "ds_config.json"), "deepspeed_on_cpu": True,
            "gpus": 0, "processes": 2, "precision": "fp32", "max_steps": STEPS, "max_length": 256,
            "batch_tokens": 400, "save_steps": 0, **over}


@pytest.fixture(scope="module")
def base_and_rows(tmp_path_factory):
    d = tmp_path_factory.mktemp("comm")
    base = tiny_base(d / "base", with_step_token=True, arch="qwen2")
    return base, write_trainset(d / "hard.parquet", signal_rows(200))


def measure(tmp_path: Path, base: Path, trainset: Path, settings: dict) -> dict:
    """Train in two torchrun ranks (CHILD); (model bytes, per-step bytes of each rank, rank 0's report)."""
    spec = tmp_path / "spec.json"
    out = tmp_path / "prm"
    spec.write_text(json.dumps({"trainset": str(trainset), "base_dir": str(base), "out_dir": str(out),
                                "settings": settings, "checkpoint_dir": str(tmp_path / "ck")}))
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    env = launcher_env(cpu=True)
    env["DS_ACCELERATOR"] = "cpu"
    env["OMP_NUM_THREADS"] = "1"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
           "--master_addr", "127.0.0.1", "--master_port", str(free_port("127.0.0.1")), str(child), str(spec)]
    run = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stderr[-4000:]
    reports = [json.loads((out / f"comm-rank{r}.json").read_text()) for r in range(2)]
    for rep in reports:
        assert rep["deepspeed"] and rep["global_steps"] == STEPS and len(rep["marks"]) == STEPS
        assert all(m["enabled"] for m in rep["marks"])  # the config's comms_logger block reached the engine
    return {"model": reports[0]["model"], "steps": [step_bytes(r["marks"], r["world"]) for r in reports],
            "report": reports[0]}


def ratios(measured: dict) -> list[float]:
    """Collective bytes / model bytes of every measured step, the larger rank's."""
    return [max(sum(rank[i].values()) for rank in measured["steps"]) / measured["model"]["bytes"]
            for i in range(STEPS - 1)]


def test_paper_training_moves_at_most_three_model_sizes_per_optimizer_step(tmp_path, base_and_rows):
    base, trainset = base_and_rows
    settings = paper_training(tmp_path)
    assert settings["deepspeed"] and settings["gradient_accumulation_steps"] == 1  # paper.yaml's geometry
    measured = measure(tmp_path, base, trainset, settings)
    assert measured["model"]["dtypes"] == ["torch.float32"]
    r = ratios(measured)
    detail = (r, measured["steps"][0], measured["model"])
    assert max(r) <= BOUND, detail
    # the logger saw ZeRO-2's own traffic, not only scalars: every step the gradients reduced once (all-reduce
    # or reduce / reduce-scatter: DeepSpeed's choice) and the updated weights all-gathered once
    for ops in measured["steps"][0]:
        assert min(reduced(ops), gathered(ops)) >= measured["model"]["bytes"], detail


@pytest.mark.slow
@pytest.mark.parametrize("case", ["zero2-accumulation-4", "zero3-accumulation-8"])
def test_more_micro_steps_per_optimizer_step_blow_the_bound(tmp_path, base_and_rows, case):
    """The guard can fail: the paper's former geometry (ZeRO-3, accumulation 8) and accumulation under ZeRO-2
    multiply the bytes of an optimizer step by its micro-steps."""
    base, trainset = base_and_rows
    over = ({"gradient_accumulation_steps": 4} if case.startswith("zero2") else
            {"gradient_accumulation_steps": 8, "deepspeed": str(ROOT / "config" / "deepspeed" / "zero3.json")})
    measured = measure(tmp_path, base, trainset, paper_training(tmp_path, **over))
    r = ratios(measured)
    detail = (r, measured["steps"][0], measured["model"])
    assert min(r) > BOUND, detail
    # the cause: the gradients are reduced (all-reduce, reduce-scatter) once per micro-step, not per optimizer step
    for ops in measured["steps"][0]:
        assert reduced(ops) >= over["gradient_accumulation_steps"] * measured["model"]["bytes"], detail
