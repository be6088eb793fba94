"""Plan stage: data policies, the models whose responses to the training problems are labelled
(`data_policies`), and the models completing their MC rollouts.

None configured: one data policy named after the Best-of-N primary, with its model, its sampling and
`roles.completer` (the paper's Best-of-N policy labelling its own responses). One configured samples the
training problem sets (`problems:`) into the same results/samples/{dataset} files in place of the primary,
so every label rule reads what it read before; the Best-of-N benchmarks stay the primary's. Several (a mix,
the paper's §2.1 3M set): each samples the training sets into results/data_policies/{name}/responses/,
rule mix_responses joins them into results/responses/{dataset} (sample_idx offset per policy, a
`data_policy` column), and the MC shards are numbered over the policies in order, each policy's shards
completed by its own completer (mc_shard).
"""
from __future__ import annotations

from .base import wildcard_alternatives
from .policies import POLICY_SAMPLING_KEYS, bon_policies, policy_dir, policy_dir_regex, primary_policy

MIX_DIR = "data_policies"


def data_policies(config: dict) -> dict[str, dict]:
    """`data_policies` in order: name → {model, completer, label, sampling (the `sampling` section with the
    entry's overrides), n (responses per training problem: the entry's `n`, else sampling.n), limit,
    configured}; none configured: the primary Best-of-N policy's model, sampling and limit with
    `roles.completer` (else the policy), configured False."""
    entries = config.get("data_policies", {})
    n = int(config["sampling"]["n"])
    if not entries:
        name = primary_policy(config)
        p = bon_policies(config)[name]
        roles = config["roles"]
        return {name: {"model": p["model"], "completer": roles.get("completer") or roles["policy"],
                       "label": p["label"], "sampling": p["sampling"], "n": n, "limit": p["limit"],
                       "configured": False}}
    out = {}
    for name, e in entries.items():
        sampling = {**config["sampling"], **{k: e[k] for k in POLICY_SAMPLING_KEYS if e.get(k) is not None}}
        out[name] = {"model": e["model"], "completer": e["completer"], "label": e.get("label") or name,
                     "sampling": sampling, "n": int(e.get("n") or n), "limit": e.get("limit"), "configured": True}
    return out


def data_policy(config: dict) -> dict:
    """The first data policy, with its `name` (the only one unless a mix is configured)."""
    name, spec = next(iter(data_policies(config).items()))
    return {**spec, "name": name}


def mixed_policies(config: dict) -> list[str]:
    """The data policies of a mix (several configured: each samples into its own directory), else []."""
    entries = config.get("data_policies", {})
    return list(entries) if len(entries) > 1 else []


def sampling_dir(config: dict, owner: str | None = None) -> str:
    """The part of a sampling job's paths after `results/`: 'data_policies/{name}/' for a policy of a mix,
    else the Best-of-N policy's (policy_dir: '' for the primary)."""
    return f"{MIX_DIR}/{owner}/" if owner in mixed_policies(config) else policy_dir(config, owner)


def sampling_dir_regex(config: dict) -> str:
    """The `policy_dir` wildcard: a Best-of-N policy's directory (policy_dir_regex) or a mixed data policy's."""
    mix = mixed_policies(config)
    if not mix:
        return policy_dir_regex(config)
    return f"(?:{policy_dir_regex(config)}|{MIX_DIR}/(?:{wildcard_alternatives(mix)})/)"


def mixed_responses(config: dict, dataset: str) -> list[str]:
    """The responses a mix joins for one training set (rule mix_responses), one table per data policy."""
    return [f"results/{MIX_DIR}/{p}/responses/{dataset}.parquet" for p in mixed_policies(config)]


def mix_parts(config: dict) -> list[dict]:
    """Rule mix_responses' params: each mixed data policy's name, model, completer and the offset added to
    its sample_idx (the responses per problem of the policies before it), so (problem_id, sample_idx) stays
    a key of the joined table."""
    pols, out, offset = data_policies(config), [], 0
    for name in mixed_policies(config):
        p = pols[name]
        out.append({"name": name, "model": p["model"], "completer": p["completer"], "n": p["n"], "offset": offset})
        offset += p["n"]
    return out


def mc_completer(config: dict) -> str:
    """The model entry completing the label audit's MC rollouts (rule audit_labels): the first data policy's
    completer (rule mc takes each shard's own: mc_shard)."""
    return data_policy(config)["completer"]


def mc_shard(config: dict, shard: int, nshards: int) -> dict:
    """What MC shard `shard` of `nshards` labels: {data_policy (None unless a mix), completer, system_prompt
    (the prompt the responses were sampled with), shard, nshards (of that policy's responses)}. A mix numbers
    the shards over its policies in order, nshards / policies each (plan.label_shard_paths)."""
    mix = mixed_policies(config)
    if not mix:
        d = data_policy(config)
        return {"data_policy": None, "completer": d["completer"], "system_prompt": d["sampling"]["system_prompt"],
                "shard": shard, "nshards": nshards}
    per = nshards // len(mix)
    name = mix[shard // per]
    d = data_policies(config)[name]
    return {"data_policy": name, "completer": d["completer"], "system_prompt": d["sampling"]["system_prompt"],
            "shard": shard % per, "nshards": per}


def mc_completers(config: dict) -> list[str]:
    """Every model entry that completes MC rollouts (the data policies' completers, each once)."""
    return list(dict.fromkeys(d["completer"] for d in data_policies(config).values()))


def sampler(config: dict, dataset: str, policy: str | None = None) -> dict:
    """{model, sampling, n, limit} of the job sampling `dataset` for a sampling directory's owner (None: the
    primary's, results/samples/): a mixed data policy's own; the (first) data policy for a training problem
    set of the primary's directory; else the Best-of-N policy (n: None, the benchmark's N decides)."""
    primary = primary_policy(config)
    if policy in mixed_policies(config):
        d = data_policies(config)[policy]
    elif (policy in (None, primary)) and dataset in config.get("problems", {}):
        d = data_policy(config)
    else:
        d = {**bon_policies(config)[policy or primary], "n": None}
    return {k: d[k] for k in ("model", "sampling", "n", "limit")}


def data_setting(config: dict) -> dict:
    """What the labelled training data is, for the artifacts' provenance note and the rule that compares a
    cell with the paper only where its data source matches (artifacts.cells.data_comparability): the first
    data policy's name, label, model and completer (entry names and their Hub ids, None for a non-Hub
    model), whether it was configured, and `policies`: every data policy so (several: a mix)."""
    models = config.get("models", {})

    def hub(name: str) -> str | None:
        m = models.get(name, {})
        return m.get("id") if m.get("source") == "hub" else None

    pols = [{"name": name, "label": d["label"], "model": d["model"], "completer": d["completer"],
             "model_id": hub(d["model"]), "completer_id": hub(d["completer"]), "n": d["n"]}
            for name, d in data_policies(config).items()]
    return {**pols[0], "configured": data_policy(config)["configured"], "policies": pols}
