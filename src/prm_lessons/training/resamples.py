"""Training resamples of a head-only PRM (`training.resamples`): the bootstrap draws and the heads' file.

R extra step heads, each trained on a bootstrap resample of the training instances, so that a
ProcessBench interval can include training variance (`prm_lessons.metrics.resampled`) and two PRMs can
be compared on the same draws.

Draw r picks n instances with replacement out of the n instances sorted by instance_id, from a numpy
Generator seeded by (training seed, r): it depends on the instance ids only, never on labels or row
order, so variants holding the same instances with other labels (exact, mc_hard, mc_soft, ...) are
trained on the same draws, and resample r of one PRM pairs with resample r of another.

File (in the PRM directory, beside the main head, which stays what every other rule uses):
  resample_heads.safetensors   every tensor of the step head stacked over the R heads ([R, ...]),
                               incl. each head's own standardisation; metadata {"resamples", "draw"}
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from safetensors.torch import save_file

from ..models.prm import StepHead
from ..tables import read_safetensors

RESAMPLE_FILE = "resample_heads.safetensors"
DRAW_RULE = ("instances sorted by instance_id; draw r = numpy.random.default_rng([seed mod 2**64, r])"
             ".integers(0, n, n) (n instances, with replacement)")


def _entropy(seed: int, r: int) -> list[int]:
    return [int(seed) % 2**64, int(r)]  # SeedSequence takes non-negative integers only


def resample_draws(instance_ids: Sequence, seed: int, resamples: int) -> list[np.ndarray]:
    """Per resample r, the positions (into `instance_ids`, as given) of its n draws (DRAW_RULE)."""
    ids = [str(i) for i in instance_ids]
    order = np.array(sorted(range(len(ids)), key=lambda i: ids[i]), dtype=np.int64)
    return [order[np.random.default_rng(_entropy(seed, r)).integers(0, len(ids), len(ids))]
            for r in range(int(resamples))]


def resample_seed(seed: int, r: int) -> int:
    """Seed of resample r's head init and data order (a different head per r, the same across variants)."""
    return int(np.random.SeedSequence([*_entropy(seed, r), 1]).generate_state(1)[0])


def save_resample_heads(path: str | Path, heads: Sequence[dict], meta: dict) -> None:
    """R head state dicts (same keys and shapes) → one file of stacked float32 tensors."""
    keys = sorted(heads[0])
    stacked = {k: torch.stack([h[k].detach().to("cpu", torch.float32) for h in heads]).contiguous() for k in keys}
    save_file(stacked, str(path), metadata={"meta": json.dumps({"resamples": len(heads), **meta})})


def load_resample_heads(prm_dir: str | Path) -> list[StepHead]:
    """The resample heads of a PRM directory, [] when it has none."""
    path = Path(prm_dir) / RESAMPLE_FILE
    if not path.exists():
        return []
    stacked = read_safetensors(path)  # a damaged file is named
    heads = []
    for r in range(int(stacked["net.0.weight"].shape[0])):
        head = StepHead(int(stacked["net.0.weight"].shape[2]), standardize="feature_mean" in stacked)
        head.load_state_dict({k: v[r] for k, v in stacked.items()})
        heads.append(head.eval())
    return heads
