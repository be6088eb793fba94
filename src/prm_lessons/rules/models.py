"""Rule glue of workflow/rules/models.smk: models as local directories (the embedded model converted,
Hub models snapshotted)."""
from __future__ import annotations

import json
import logging
import os

from ..models import hub
from ..models.embedded import convert_gguf, embedded_gguf

log = logging.getLogger(__name__)


def embedded_model(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `embedded_model`: the embedded package's GGUF → resources/models/<name>/."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    convert_gguf(embedded_gguf(params["package"]), outputs["model_dir"], dtype=params.get("dtype", "bfloat16"))


def download_model(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `download_model` (a local rule on the submit host): one Hub model -> {hub.models_dir}/<name>/."""
    entry = params["entry"]
    done = hub.download_model(entry["id"], entry.get("revision"), outputs["model_dir"],
                              cache_dir=params.get("cache_dir"),
                              trust_remote_code=bool(entry.get("trust_remote_code")),
                              key=f"models.{wildcards['model']}" if wildcards.get("model") else None)
    log.info("download_model %s: %s", wildcards.get("model"), json.dumps({k: done[k] for k in ("repo_id", "commit")}))
