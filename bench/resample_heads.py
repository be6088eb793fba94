"""Resample heads (training.resamples, head mode): R heads trained through a transformers Trainer each (the
former path) and by the plain torch loop of prm_lessons.training.head_loop (the path train_prm takes in one
process), side by side in one run on the same draws and seeds; prints seconds per head of each, the ratio,
the largest weight difference between the two (they train the same head) and the host's CPU flags.

Data: synthetic step features shaped like the embedded default's (SmolLM2-135M: hidden 576; `--instances`
instances of 1-8 steps), labels hard or soft; the training settings are config/config.yaml's `training`
block (epochs, batch size, learning rate, schedule, threads) unless overridden. The two ways alternate in
order per resample, so a drift of the host's speed during the run hits both.

Usage: python bench/resample_heads.py [--resamples 10] [--instances 66] [--hidden 576] [--label-type hard]
                                      [--threads N] [--json out.json]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def synthetic(n: int, hidden: int, label_type: str, seed: int = 0) -> list[dict]:
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        k = int(torch.randint(1, 9, (1,), generator=g))
        t = torch.rand(k, generator=g)
        targets = (t >= 0.3).float() if label_type == "hard" else t
        out.append({"instance_id": f"i{i:04d}", "step_features": torch.randn(k, hidden, generator=g),
                    "step_targets": targets.tolist(), "n_tokens": 60 * k})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=None, help="heads per way (default: config's training.resamples)")
    ap.add_argument("--instances", type=int, default=66)
    ap.add_argument("--hidden", type=int, default=576)
    ap.add_argument("--label-type", choices=("hard", "soft"), default="hard")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: config's training.threads)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()

    import tempfile

    import torch
    import yaml
    from transformers import set_seed
    from transformers.utils import logging as hf_logging

    from prm_lessons.jobs.hardware import ONEDNN_ISA_ENV, cpu_flags, host_summary
    from prm_lessons.models.prm import StepCollator
    from prm_lessons.training import head_loop as H
    from prm_lessons.training import train as T
    from prm_lessons.training.resamples import resample_draws, resample_seed
    from prm_lessons.training.settings import settings_from
    from prm_lessons.training.trainer import training_arguments

    hf_logging.set_verbosity_error()
    training = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["training"]
    settings = settings_from({k: v for k, v in training.items() if k not in ("gpus", "mem_mb", "runtime")})
    R = int(a.resamples if a.resamples is not None else settings["resamples"])
    threads = int(a.threads or settings.get("threads") or 1)
    torch.set_num_threads(threads)
    data = synthetic(a.instances, a.hidden, a.label_type)
    draws = resample_draws([d["instance_id"] for d in data], int(settings["seed"]), R)
    tok = SimpleNamespace(pad_token_id=0, eos_token_id=0)
    host = host_summary()
    flags = sorted(cpu_flags())
    print(f"host {host['host']}: {host['cpu']}, {host['cpus']} CPUs, torch threads {threads}, "
          f"{ONEDNN_ISA_ENV}={os.environ.get(ONEDNN_ISA_ENV, '(unset)')}")
    print(f"speed flags: {' '.join(host['cpu_flags']) or '(none)'}")
    print(f"CPU flags (/proc/cpuinfo): {' '.join(f for f in flags if f.startswith(('avx', 'amx', 'fma', 'sse4')))}")
    print(f"{R} heads per way, {a.instances} instances ({sum(len(d['step_targets']) for d in data)} steps), hidden "
          f"{a.hidden}, {a.label_type} labels; training: epochs {settings['epochs']}, batch {settings['batch_size']}, "
          f"lr {settings['learning_rate']}, {settings['lr_scheduler']}, weight decay {settings['weight_decay']}, "
          f"warm-up {settings['warmup_ratio']}, clip {settings['max_grad_norm']}")

    seconds = {"trainer": [], "plain": []}
    max_diff = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for r, draw in enumerate(draws):
            seed = resample_seed(int(settings["seed"]), r)
            s = {**settings, "seed": seed, "save_steps": 0}
            heads = {}
            for way in (("trainer", "plain") if r % 2 == 0 else ("plain", "trainer")):
                t = time.perf_counter()
                set_seed(seed)
                sub = T.head_trainee([data[i] for i in draw], a.hidden, s, a.label_type)
                args = training_arguments(s, Path(tmp) / f"resample-{r}", False, False)
                if way == "trainer":
                    with contextlib.redirect_stdout(io.StringIO()):  # its loss lines (disable_tqdm: printed)
                        T.run_trainer(sub, args, tok, None, Path(tmp))
                else:
                    H.train_head(sub.model, sub.dataset, args, StepCollator(0))
                seconds[way].append(time.perf_counter() - t)
                heads[way] = sub.head.state_dict()
            max_diff = max(max_diff, max(float((heads["trainer"][k] - heads["plain"][k]).abs().max())
                                         for k in heads["plain"]))
            print(f"resample {r}: Trainer {seconds['trainer'][-1]:.2f} s, plain loop {seconds['plain'][-1]:.2f} s")
    tot = {k: sum(v) for k, v in seconds.items()}
    ratio = tot["trainer"] / tot["plain"] if tot["plain"] > 0 else float("nan")
    print(f"total: Trainer {tot['trainer']:.2f} s ({tot['trainer'] / R:.2f} s/head), plain loop {tot['plain']:.2f} s "
          f"({tot['plain'] / R:.2f} s/head); Trainer / plain = {ratio:.1f}x; "
          f"saved {tot['trainer'] - tot['plain']:.1f} s per PRM job; largest weight difference {max_diff:.2e}")
    if a.json:
        Path(a.json).write_text(json.dumps({"host": host, "cpu_flags": flags, "threads": threads, "resamples": R,
                                            "instances": a.instances, "hidden": a.hidden, "label_type": a.label_type,
                                            "seconds": seconds, "ratio": ratio, "max_weight_diff": max_diff},
                                           indent=1))


if __name__ == "__main__":
    main()
