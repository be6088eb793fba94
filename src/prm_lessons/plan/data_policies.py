"""Plan stage: data policies, the models whose responses to the training problems are labelled
(`data_policies`), and the model completing their MC rollouts.

None configured: one data policy named after the Best-of-N primary, with its model, its sampling and
`roles.completer` (the paper's Best-of-N policy labelling its own responses). A configured one samples the
training problem sets (`problems:`) into the same results/samples/{dataset} files in place of the primary,
so every label rule reads what it read before; the Best-of-N benchmarks stay the primary's.
"""
from __future__ import annotations

from .policies import POLICY_SAMPLING_KEYS, bon_policies, primary_policy


def data_policies(config: dict) -> dict[str, dict]:
    """`data_policies` in order: name → {model, completer, label, sampling (the `sampling` section with the
    entry's overrides), limit, configured}; none configured: the primary Best-of-N policy's model, sampling
    and limit with `roles.completer` (else the policy), configured False."""
    entries = config.get("data_policies") or {}
    if not entries:
        name = primary_policy(config)
        p = bon_policies(config)[name]
        roles = config["roles"]
        return {name: {"model": p["model"], "completer": roles.get("completer") or roles["policy"],
                       "label": p["label"], "sampling": p["sampling"], "limit": p["limit"], "configured": False}}
    out = {}
    for name, e in entries.items():
        sampling = {**config["sampling"], **{k: e[k] for k in POLICY_SAMPLING_KEYS if e.get(k) is not None}}
        out[name] = {"model": e["model"], "completer": e["completer"], "label": e.get("label") or name,
                     "sampling": sampling, "limit": e.get("limit"), "configured": True}
    return out


def data_policy(config: dict) -> dict:
    """The data policy that samples the training problems (one is supported: config.validate_config refuses
    more), with its `name`."""
    name, spec = next(iter(data_policies(config).items()))
    return {**spec, "name": name}


def mc_completer(config: dict) -> str:
    """The model entry completing the MC rollouts (rules mc, audit_labels): the data policy's completer."""
    return data_policy(config)["completer"]


def sampler(config: dict, dataset: str, policy: str | None = None) -> dict:
    """{model, sampling, limit} of the job sampling `dataset` for a Best-of-N policy's directory (None: the
    primary's, results/samples/): the data policy for a training problem set there, else the Best-of-N policy."""
    primary = primary_policy(config)
    if (policy in (None, primary)) and dataset in (config.get("problems") or {}):
        d = data_policy(config)
    else:
        d = bon_policies(config)[policy or primary]
    return {k: d[k] for k in ("model", "sampling", "limit")}


def data_setting(config: dict) -> dict:
    """What the labelled training data is, for the artifacts' provenance note and the rule that compares a
    cell with the paper only where its data source matches (artifacts.cells.data_comparability): the data
    policy's name, label, model and completer (entry names and their Hub ids, None for a non-Hub model) and
    whether it was configured."""
    d = data_policy(config)
    models = config.get("models") or {}

    def hub(name: str) -> str | None:
        m = models.get(name) or {}
        return m.get("id") if m.get("source") == "hub" else None

    return {"name": d["name"], "label": d["label"], "model": d["model"], "completer": d["completer"],
            "model_id": hub(d["model"]), "completer_id": hub(d["completer"]), "configured": d["configured"]}
