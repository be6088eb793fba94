"""The training launcher outlives SLURM's SIGTERM: torchrun waits for the ranks' JIT checkpoint, and so
does the process that started torchrun (its death would end the job step before the save)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml

from conftest import ROOT
from prm_lessons import plan
from prm_lessons.training.launch import SHUTDOWN_TIMEOUT_S, distributed_command, launcher_env, run_launcher


def test_torchrun_waits_longer_than_the_paper_jobs_grace(monkeypatch):
    cmd = distributed_command("spec.json", 8, 29500)
    # by the environment, not the flag: torchrun before torch 2.13 refuses --shutdown-timeout
    assert not any(a.startswith("--shutdown") for a in cmd)
    env = launcher_env(cpu=False, base={})
    assert env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"] == str(SHUTDOWN_TIMEOUT_S)
    # the installed torchrun reads it: its launch config of exactly this command
    from torch.distributed.run import config_from_args, parse_args

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    config, _, _ = config_from_args(parse_args(cmd[3:]))
    assert config.shutdown_timeout == SHUTDOWN_TIMEOUT_S
    train = yaml.safe_load((ROOT / "config/paper.yaml").read_text())["training"]
    train.setdefault("gpus", 8)
    assert SHUTDOWN_TIMEOUT_S > plan.jit_grace_seconds({**train, "max_length": train.get("max_length", 4096)})


def test_launcher_waits_for_its_child_through_sigterm(tmp_path):
    done = tmp_path / "saved"
    ready = tmp_path / "ready"
    child = (f"import signal, sys, time, pathlib\n"
             f"def save(*_):\n"
             f"    time.sleep(0.5); pathlib.Path({str(done)!r}).write_text('ok'); sys.exit(3)\n"
             f"signal.signal(signal.SIGTERM, save)\n"
             f"pathlib.Path({str(ready)!r}).write_text('1')\n"
             f"time.sleep(60)\n")
    procs = []
    real_popen = subprocess.Popen

    def popen(*a, **kw):
        procs.append(real_popen(*a, **kw))
        return procs[-1]

    def slurm_signal():  # SLURM signals every process of the step: the launcher and its child
        while not ready.exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)
        procs[0].send_signal(signal.SIGTERM)

    subprocess.Popen = popen
    try:
        threading.Thread(target=slurm_signal, daemon=True).start()
        with pytest.raises(subprocess.CalledProcessError) as err:
            run_launcher([sys.executable, "-c", child], dict(os.environ))
    finally:
        subprocess.Popen = real_popen
    assert err.value.returncode == 3
    assert done.read_text() == "ok"  # the child finished its save; this process was not killed
    assert signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, signal.default_int_handler, None) or callable(
        signal.getsignal(signal.SIGTERM))


def test_a_rank_destroys_its_process_group_after_training(tmp_path, monkeypatch):
    """A rank that leaves the gloo group to exit-time destructors can abort after saving (SIGABRT fails
    the torchrun job): main() waits for every rank and destroys the group once train_prm returns."""
    import torch.distributed as dist

    from prm_lessons.training import launch as train_launch

    calls = []
    monkeypatch.setattr(train_launch, "train_prm", lambda **kw: calls.append(("train", kw)))
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "barrier", lambda: calls.append("barrier"))
    monkeypatch.setattr(dist, "destroy_process_group", lambda: calls.append("destroy"))
    spec = tmp_path / "spec.json"
    spec.write_text('{"a": 1}')
    assert train_launch.main(["--spec", str(spec)]) == 0
    assert calls == [("train", {"a": 1}), "barrier", "destroy"]
    monkeypatch.setattr(dist, "is_initialized", lambda: False)   # a single process: nothing to close
    calls.clear()
    train_launch.main(["--spec", str(spec)])
    assert calls == [("train", {"a": 1})]
