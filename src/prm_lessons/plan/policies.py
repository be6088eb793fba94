"""Plan stage: Best-of-N policies and N (bon.policies, bon.more_n)."""
from __future__ import annotations

from .base import wildcard_alternatives


def bon_n(config: dict) -> int:
    """N of Best-of-N: bon.n, else sampling.n."""
    return int(config.get("bon", {}).get("n", config["sampling"]["n"]))


# what a policy may set for itself; the rest of its sampling is the `sampling` section
POLICY_SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "system_prompt")


def bon_policies(config: dict) -> dict[str, dict]:
    """bon.policies in order, the primary first: name → {model, label, sampling (the `sampling` section
    with the policy's overrides), benchmarks (its subset, else every benchmark), limit, primary}. None
    configured: one policy named after roles.policy. The primary's files are results/samples/,
    results/scores/, results/metrics/bon/ (what labels, search, judges and the figures read); any other
    policy's live under results/policies/{name}/."""
    entries = config.get("bon", {}).get("policies") or {config["roles"]["policy"]: {}}
    every = list(config.get("benchmarks", {}))
    out = {}
    for i, (name, e) in enumerate(entries.items()):
        sampling = {**config["sampling"], **{k: e[k] for k in POLICY_SAMPLING_KEYS if e.get(k) is not None}}
        out[name] = {"model": e.get("model") or config["roles"]["policy"], "label": e.get("label") or name,
                     "sampling": sampling, "benchmarks": list(e.get("benchmarks") or []) or every,
                     "limit": e.get("limit"), "primary": i == 0}
    return out


def policy_prms(config: dict, policy: str, specs) -> list[str]:
    """The PRMs (of `specs`, in its order) that score a policy's samples: bon.policies.<policy>.prms, else
    every one. The primary's samples are scored by every PRM (labels, search and figures read them)."""
    pols = config.get("bon", {}).get("policies", {})
    names = list(pols.get(policy, {}).get("prms") or [])
    if not names:
        return list(specs)
    if policy == primary_policy(config):
        raise ValueError(f"config error at `bon.policies.{policy}.prms`: the primary policy's samples are scored "
                         "by every PRM (labels, search and the figures read them); set it on another policy")
    for i, n in enumerate(names):
        if n not in specs:
            raise ValueError(f"config error at `bon.policies.{policy}.prms.{i}`: '{n}' is not a PRM of this run "
                             f"({', '.join(specs)})")
    return [n for n in specs if n in names]


def primary_policy(config: dict) -> str:
    """The first policy of bon.policies (roles.policy's name when none is configured)."""
    return next(iter(bon_policies(config)))


def policy_dir(config: dict, policy: str | None = None) -> str:
    """The part of a policy's paths after `results/`: '' for the primary, else 'policies/{name}/'."""
    return "" if policy is None or policy == primary_policy(config) else f"policies/{policy}/"


def policy_of_dir(config: dict, pdir: str) -> str:
    """The policy a `policy_dir` wildcard value names ('' → the primary)."""
    return pdir.split("/")[1] if pdir else primary_policy(config)


def policy_dir_regex(config: dict, policies: list[str] | None = None) -> str:
    """The `policy_dir` wildcard: policies/{name}/ of a secondary policy (of `policies`, default all), or
    empty for the primary (when it is one of `policies`)."""
    names = list(bon_policies(config)) if policies is None else list(policies)
    primary = primary_policy(config)
    alts = f"policies/(?:{wildcard_alternatives([p for p in names if p != primary])})/"
    return f"(?:{alts})?" if primary in names else alts


def bon_ns(config: dict, benchmark: str, policy: str | None = None) -> list[int]:
    """Every N a policy's benchmark is evaluated at, ascending: bon.n and each bon.more_n entry naming the
    benchmark and the policy (an entry without `policies`: the primary only); [] when the policy does
    not sample the benchmark."""
    pols = bon_policies(config)
    policy = policy or next(iter(pols))
    if benchmark not in pols[policy]["benchmarks"]:
        return []
    ns = {bon_n(config)}
    for e in config.get("bon", {}).get("more_n", []):
        if benchmark in e["benchmarks"] and policy in (e.get("policies") or [next(iter(pols))]):
            ns.add(int(e["n"]))
    return sorted(ns)


def sample_n(config: dict, benchmark: str, policy: str | None = None) -> int:
    """Responses sampled per problem of a benchmark: the largest N evaluated on it (every smaller N is
    evaluated on the first n samples of the same draws)."""
    ns = bon_ns(config, benchmark, policy)
    if not ns:
        raise ValueError(f"policy '{policy}' does not sample benchmark '{benchmark}' "
                         f"(bon.policies.{policy}.benchmarks)")
    return ns[-1]


def judge_sample_cap(config: dict, dataset: str) -> int | None:
    """How many samples per problem rule `judge` labels: a benchmark's first bon.n (Figure 6 judges the
    main Best-of-N samples; Table 10's larger N for the same benchmark is not judged), all of a problem set."""
    return bon_n(config) if dataset in config.get("benchmarks", {}) else None


def bon_evaluations(config: dict) -> list[tuple[str, str, list[int]]]:
    """(policy, benchmark, Ns) of every sampled benchmark of every policy, the primary's first."""
    return [(p, b, bon_ns(config, b, p)) for p, spec in bon_policies(config).items() for b in spec["benchmarks"]]


def policy_path(config: dict, policy: str | None, rel: str) -> str:
    """results/{rel} of the primary policy, results/policies/{policy}/{rel} of another."""
    return f"results/{policy_dir(config, policy)}{rel}"
