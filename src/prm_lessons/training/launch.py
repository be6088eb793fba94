"""Launching a PRM training (`run_training`, the rule's entry): in this process, or through `torchrun` on
one node, on a free rendezvous port: with `gpus > 1` one process per GPU, on CPU with `processes > 1`
gloo ranks (and DeepSpeed on CPU, `training.deepspeed_on_cpu`, always through torchrun). Each rank runs
`main` of this module on the spec file run_training writes; DeepSpeed ZeRO-3 (config/deepspeed/zero3.json)
is switched on by `training.deepspeed`. The launcher outlives SLURM's SIGTERM while the ranks write their
JIT checkpoint."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from .. import checkout_env
from ..jobs.hardware import require_gpus
from ..tables import read_json, write_json
from .settings import settings_from
from .train import METRICS_FILE, train_prm
from .trainer import deepspeed_config

log = logging.getLogger(__name__)


def free_port(host: str = "") -> int:
    """A TCP port free for the rendezvous of one job: two trainings on one node must not share 29500.
    Under SLURM a port derived from the job id is tried first (distinct jobs rarely race for it), else
    the OS picks one."""
    job = os.environ.get("SLURM_JOB_ID", "")
    candidates = [20000 + int(job) % 20000] if job.isdigit() else []
    for port in candidates + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return int(s.getsockname()[1])
    raise OSError("no free port")  # pragma: no cover - port 0 always binds


# torchrun SIGKILLs its workers 30 s after its own SIGTERM by default; a ZeRO-3 JIT checkpoint of a 7B
# model takes minutes (sbatch --signal=TERM@<grace>, plan.training_slurm_extra), so torchrun must wait
SHUTDOWN_TIMEOUT_S = 3600


def distributed_command(spec_path: str | Path, n_procs: int, port: int) -> list[str]:
    """`torchrun` of this module with `n_procs` processes on this node, one per GPU or (CPU) gloo ranks:
    the same launcher either way; the Trainer picks the backend (nccl on GPU, gloo on CPU). Its shutdown
    timeout is set by launcher_env, not by `--shutdown-timeout`: torchrun before torch 2.13 refuses that
    flag (the job stopped at launch on a torch 2.11 GPU image)."""
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(n_procs),
            "--master_addr", "127.0.0.1", "--master_port", str(port),
            "-m", "prm_lessons.training.launch", "--spec", str(spec_path)]


def run_launcher(cmd: list[str], env: dict) -> None:
    """Run torchrun and outlive a SIGTERM: SLURM's --signal=TERM@<grace> reaches every process of the job
    step; the ranks write their JIT checkpoint and exit, torchrun waits for them (SHUTDOWN_TIMEOUT_S), and
    this process must wait for torchrun instead of dying first (its exit would end the step and the save)."""
    proc = subprocess.Popen(cmd, env=env)

    def _wait_for_ranks(signum, frame):
        log.warning("SIGTERM: waiting for the training processes to write their checkpoint and exit")

    previous = signal.signal(signal.SIGTERM, _wait_for_ranks) if threading_main() else None
    try:
        rc = proc.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if rc != 0:
        raise subprocess.CalledProcessError(rc, cmd)


def threading_main() -> bool:
    """signal.signal works only in the main thread (a launcher called from a worker thread keeps the default)."""
    return threading.current_thread() is threading.main_thread()


def launcher_env(cpu: bool, base: dict | None = None) -> dict:
    """Environment of the launched processes: they import this checkout's package (inside conda envs it
    is not installed and Snakemake does not pass PYTHONPATH); CPU runs hide any GPU."""
    env = checkout_env(base)
    env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"] = str(SHUTDOWN_TIMEOUT_S)  # torchrun's wait for the ranks (above)
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def _spec(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir, threads, features=None,
          tokens=None) -> dict:
    return {"trainset": str(trainset), "base_dir": str(base_dir), "out_dir": str(out_dir), "settings": settings,
            "label_type": label_type, "checkpoint_dir": str(checkpoint_dir) if checkpoint_dir else None,
            "threads": threads, "features": [str(f) for f in features] if features else None,
            "tokens": str(tokens) if tokens else None}


def run_training(trainset, base_dir, out_dir, settings, label_type="hard", checkpoint_dir=None, threads=None,
                 features=None, tokens=None) -> dict:
    """Train in this process, or in `gpus` (GPU) / `processes` (CPU) processes launched by `torchrun`.
    `features`: shared frozen-base features (head mode); `tokens`: the trainset's tokens file (rule
    tokenize_trainset), which every rank reads instead of tokenising (training.train_prm).

    A job that asks for GPUs and finds fewer stops (hardware.require_gpus): no CPU fallback."""
    settings = settings_from(settings)
    want = int(settings["gpus"])
    if "LOCAL_RANK" in os.environ:  # already a launched process
        return train_prm(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir, threads,
                         features=features, tokens=tokens)
    require_gpus("train_prm", want, ["training.gpus"])
    cpu = want == 0
    n = int(settings["processes"]) if cpu else want
    # DeepSpeed on CPU needs the torchrun environment (rank, rendezvous) even for one process
    if n <= 1 and not (cpu and deepspeed_config(settings, on_gpu=False)):
        return train_prm(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir, threads,
                         features=features, tokens=tokens)
    ckpt = Path(checkpoint_dir) if checkpoint_dir else Path(out_dir).parent / f".{Path(out_dir).name}.checkpoints"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    spec_path = ckpt.parent / f"{ckpt.name}.spec.json"
    per_proc = max(1, int(threads) // n) if threads else threads  # the ranks share the job's cores
    write_json(_spec(trainset, base_dir, out_dir, settings, label_type, checkpoint_dir, per_proc, features, tokens),
               spec_path, indent=None, default=None)
    cmd = distributed_command(spec_path, n, free_port())
    log.info("launching %d %s processes: %s", n, "CPU" if cpu else "GPU", " ".join(cmd))
    (Path(out_dir) / METRICS_FILE).unlink(missing_ok=True)
    env = launcher_env(cpu)
    if cpu and deepspeed_config(settings, on_gpu=False):
        env.setdefault("DS_ACCELERATOR", "cpu")
    run_launcher(cmd, env)
    spec_path.unlink(missing_ok=True)
    return read_json(Path(out_dir) / METRICS_FILE)


def main(argv: list[str] | None = None) -> int:
    """Entry for `torchrun -m prm_lessons.training.launch --spec spec.json` (one process per rank)."""
    parser = argparse.ArgumentParser(prog="python -m prm_lessons.training.launch")
    parser.add_argument("--spec", required=True, help="JSON written by run_training")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spec = read_json(args.spec)
    train_prm(**spec)
    close_process_group()
    return 0


def close_process_group() -> None:
    """Wait for every rank, then destroy the process group before the interpreter exits: left to exit-time
    destructors, a gloo rank can abort ("terminate called without an active exception", SIGABRT) after
    the model is saved, and torchrun then fails the whole job."""
    import torch.distributed as dist  # lazy: torch only in the ranks, never in the launching job

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
