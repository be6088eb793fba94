"""Plan stage: the optional upload of trained PRMs to the Hugging Face Hub (`hub.upload`, off by default)."""
from __future__ import annotations

import re

from .evaluation import trained_variants
from .trainsets import variants

# huggingface_hub's repo id rule (validate_repo_id), as prm_lessons.config.names.hub_id_problem
REPO_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
REPO_ID_MAX = 96


def upload_repos(config: dict) -> dict[str, str]:
    """Training-set variant -> the Hub repository its PRM is uploaded to (`<repo_prefix><variant>`); {} when
    hub.upload is off. A variant that is not trained, or a repo id the Hub would refuse, is a config error."""
    up = config.get("hub", {}).get("upload", {})
    if not up.get("enabled"):
        return {}
    known = variants(config)
    chosen = up.get("variants") or list(known)
    unknown = [v for v in chosen if v not in known]
    if unknown:
        raise ValueError(f"config error at `hub.upload.variants`: {unknown[0]!r} is not a training-set variant "
                         f"(known: {', '.join(known) or 'none'})")
    out = {v: f"{up['repo_prefix']}{v}" for v in chosen}
    for rid in out.values():
        if not REPO_ID_RE.match(rid) or "--" in rid or ".." in rid or len(rid) > REPO_ID_MAX:
            raise ValueError(f"config error at `hub.upload.repo_prefix`: {rid!r} is not a Hugging Face repository "
                             f"id (org/name, at most {REPO_ID_MAX} characters, no '--' or '..')")
    return out


def upload_evaluation(config: dict, variant: str) -> dict[str, str]:
    """The evaluation a PRM's uploaded card reports (ProcessBench and the primary policy's Best-of-N
    metrics): {} when the trained PRMs are not evaluated (`prms.include_trained: false`)."""
    if variant not in trained_variants(config):
        return {}
    return {"processbench": f"results/metrics/processbench/{variant}.json",
            "bon": f"results/metrics/bon/{variant}.json"}
