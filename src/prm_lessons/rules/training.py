"""Rule glue of workflow/rules/training.smk: one PRM trained per training-set variant."""
from __future__ import annotations

import shutil
from pathlib import Path

from .. import as_paths
from ..tables import read_json, table_meta, write_json
from ..training import launch as train_launch
from ..training import model_card, publish
from ..training import tokens as train_tokens
from ..training import train as training


def tokenize_trainset(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `tokenize_trainset`: results/trainsets/{variant}.parquet -> results/trainsets/tokens/{variant}.parquet
    (full / LoRA modes: train_prm reads it instead of tokenising on its GPUs)."""
    stats = train_tokens.tokenize_trainset(inputs["trainset"], params["base_dir"], params["tokens"],
                                           params.get("label_type") or "hard", outputs["tokens"])
    print(f"tokenized {wildcards.get('variant', '')}: {stats['instances_used']} of {stats['instances']} instances, "
          f"{stats['steps_used']} steps; dropped steps (truncation): {stats['steps_dropped']}")


def train_prm(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `train_prm`: results/trainsets/{variant}.parquet (or its tokens file) -> results/prms/{variant}/."""
    out_dir = outputs["model"]
    tokens = as_paths(inputs.get("tokens"))
    metrics = train_launch.run_training(inputs["trainset"], params["base_dir"], out_dir, params["training"],
                                        label_type=params.get("label_type") or "hard",
                                        checkpoint_dir=params.get("checkpoint_dir"), threads=threads,
                                        features=as_paths(inputs.get("features")) or None,
                                        tokens=tokens[0] if tokens else None)
    if Path(out_dir, training.METRICS_FILE) != Path(outputs["metrics"]):  # pragma: no cover - layout guard
        shutil.copy(Path(out_dir, training.METRICS_FILE), outputs["metrics"])
    model_card.write_card(out_dir, metrics, name=wildcards.get("variant") or Path(out_dir).name,
                          base=params.get("base_model"), trainset=table_meta(inputs["trainset"]))
    hist = metrics["loss_history"]
    print(f"trained {wildcards.get('variant', '')}: mode={metrics['mode']} label_type={metrics['label_type']} "
          f"steps={metrics['global_steps']} loss {hist[0] if hist else float('nan'):.4f} -> "
          f"{hist[-1] if hist else float('nan'):.4f}; {metrics['train_tokens']} tokens in "
          f"{metrics['wall_seconds']:.1f}s; dropped steps (truncation): {metrics['data']['steps_dropped']}")


def upload_prm(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `upload_prm` (hub.upload): results/prms/{variant}/ -> the Hub repository params.repo_id, its card
    rewritten with the evaluation the workflow has by then; the receipt -> results/uploads/{variant}.json."""
    prm_dir = inputs["model"]
    metrics = read_json(Path(prm_dir, training.METRICS_FILE))
    evaluation = {k: read_json(inputs[k]) for k in ("processbench", "bon") if inputs.get(k)}
    card = model_card.render_card(prm_dir, metrics, name=params["repo_id"], base=params.get("base_model"),
                                  trainset=table_meta(inputs["trainset"]), evaluation=evaluation)
    receipt = publish.upload_prm(prm_dir, params["repo_id"], card, private=bool(params.get("private", True)))
    write_json(receipt, outputs["receipt"], indent=1)
    print(f"uploaded {prm_dir} -> {receipt['url']} ({len(receipt['files'])} files, commit {receipt['commit']})")
