"""Rule glue of workflow/rules/training.smk: one PRM trained per training-set variant."""
from __future__ import annotations

import shutil
from pathlib import Path

from .. import as_paths, train_launch, training


def train_prm(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `train_prm`: results/trainsets/{variant}.parquet -> results/prms/{variant}/."""
    out_dir = outputs["model"]
    metrics = train_launch.run_training(inputs["trainset"], params["base_dir"], out_dir, params["training"],
                                        label_type=params.get("label_type") or "hard",
                                        checkpoint_dir=params.get("checkpoint_dir"), threads=threads,
                                        features=as_paths(inputs.get("features")) or None)
    if Path(out_dir, training.METRICS_FILE) != Path(outputs["metrics"]):  # pragma: no cover - layout guard
        shutil.copy(Path(out_dir, training.METRICS_FILE), outputs["metrics"])
    hist = metrics["loss_history"]
    print(f"trained {wildcards.get('variant', '')}: mode={metrics['mode']} label_type={metrics['label_type']} "
          f"steps={metrics['global_steps']} loss {hist[0] if hist else float('nan'):.4f} -> "
          f"{hist[-1] if hist else float('nan'):.4f}; {metrics['train_tokens']} tokens in "
          f"{metrics['wall_seconds']:.1f}s; dropped steps (truncation): {metrics['data']['steps_dropped']}")
