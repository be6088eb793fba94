"""Reading a validated config (a dict): model entries by role or name, where a job loads a model from,
the models some rule loads, and the strings a config names."""
from __future__ import annotations

from .names import ConfigError


def model_entry(config: dict, role_or_name: str) -> dict:
    """The model entry for a role (`policy`, `completer`, `judge`, …) or a model name."""
    name = config.get("roles", {}).get(role_or_name, role_or_name)
    try:
        entry = dict(config["models"][name])
    except KeyError:
        raise ConfigError(f"config error at `models.{name}`: model not defined") from None
    entry["name"] = name
    return entry


def used_models(cfg: dict) -> set[str]:
    """Model entries some rule loads: the roles, the training base, released PRMs (and their reference
    models), the enabled critics and Best-of-N judges."""
    models, roles = cfg.get("models", {}), cfg.get("roles", {})
    names = set(roles.values())
    base = cfg.get("training", {}).get("base")
    if base:
        names.add(roles.get(base, base))
    for e in cfg.get("prms", {}).get("models", {}).values():
        names.update(n for n in (e.get("model"), e.get("ref_model")) if n)
    # a switched-off critic or judge (enabled: false) loads nothing
    names.update(e["model"] for e in cfg.get("critics", {}).get("judges", {}).values()
                 if e.get("enabled") is not False)
    names.update(j.get("model") for j in cfg.get("bon_judges", {}).get("judges", {}).values()
                 if j.get("enabled") is not False)
    names.update(p.get("model") for p in cfg.get("bon", {}).get("policies", {}).values())
    names.update(d.get(k) for d in cfg.get("data_policies", {}).values() for k in ("model", "completer"))
    if cfg.get("search", {}).get("prms") and cfg["search"].get("policy"):
        names.add(cfg["search"]["policy"])
    return {n for n in names if n in models}


def config_strings(value) -> set[str]:
    """Every string value of a config: the files the user named (`path`, `template_path`, a local model's
    `id`, …) among them, which tables.quarantine never moves, wherever they lie."""
    if isinstance(value, dict):
        return set().union(*map(config_strings, value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*map(config_strings, value)) if value else set()
    return {value} if isinstance(value, str) and value else set()


def hub_models_dir(config: dict) -> str:
    """Directory holding one linked snapshot per Hub model (rule download_model)."""
    return str(config.get("hub", {}).get("models_dir") or "resources/hub").rstrip("/")


def model_path(config: dict, role_or_name: str) -> str:
    """Where a job loads a model from: a local directory for every source. Embedded models are converted
    into resources/models/<name>, Hub models linked into {hub.models_dir}/<name> by rule download_model,
    local models are their own directory."""
    entry = model_entry(config, role_or_name)
    if entry["source"] == "embedded":
        return f"resources/models/{entry['name']}"
    if entry["source"] == "hub":
        return f"{hub_models_dir(config)}/{entry['name']}"
    return entry["id"]
