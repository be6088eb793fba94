"""Plan stage: LLM-as-a-judge Best-of-N (verifiers.smk)."""
from __future__ import annotations

from pathlib import Path

from .policies import bon_policies

BON_JUDGE_MODES = ("pointwise", "pairwise")
# what a judge job's results depend on (bon_judges.* with the judge's own overrides)
BON_JUDGE_SETTING_KEYS = ("temperature", "top_p", "max_tokens", "seed", "system_prompt", "force_answer",
                          "force_truncated", "guided")


def bon_judge_benchmarks(config: dict) -> list[str]:
    """The benchmarks the judges choose on: bon_judges.benchmarks, else every Best-of-N benchmark."""
    return list(config.get("bon_judges", {}).get("benchmarks", [])) or list(config.get("benchmarks", {}))


def bon_judge_policies(config: dict) -> list[str]:
    """The policies whose samples the LLM judges choose among: bon_judges.policies, else every policy;
    only those that sample a judged benchmark."""
    pols = bon_policies(config)
    judged = set(bon_judge_benchmarks(config))
    names = list(config.get("bon_judges", {}).get("policies", [])) or list(pols)
    return [p for p in names if judged & set(pols[p]["benchmarks"])]


def bon_judge_model(config: dict, judge: str) -> str:
    """The model entry a judge runs (bon_judges.judges.<judge>.model)."""
    return config["bon_judges"]["judges"][judge]["model"]


def bon_judge_settings(config: dict, judge: str) -> dict:
    """A judge's settings: the bon_judges.* values with the judge's overrides."""
    bj = config["bon_judges"]
    own = bj["judges"][judge]
    return {k: own.get(k, bj.get(k)) for k in BON_JUDGE_SETTING_KEYS}


def bon_judge_template(config: dict, mode: str, package_dir: str | Path) -> str:
    """The prompt file a judge job reads: bon_judges.<mode>_template, else the package's built-in one."""
    return config.get("bon_judges", {}).get(f"{mode}_template") or str(
        Path(package_dir) / "prompts" / f"bon_judge_{mode}.txt")


def bon_judge_names(config: dict) -> list[str]:
    """The enabled judges (bon_judges.judges.<name>.enabled, default true), in config order."""
    judges = config.get("bon_judges", {}).get("judges", {})
    return [j for j, e in judges.items() if (e or {}).get("enabled") is not False]


def bon_judge_runs(config: dict) -> list[tuple[str, str]]:
    """(judge, mode) of every judge job (enabled judges only)."""
    bj = config.get("bon_judges", {})
    return [(j, m) for j in bon_judge_names(config) for m in bj.get("modes") or BON_JUDGE_MODES]


def bon_judge_shards(config: dict) -> int:
    """Jobs per (policy, judge, mode) over problem shards (bon_judges.shards); 1 = one job writes the tables."""
    return int(config.get("bon_judges", {}).get("shards", 1))


def bon_judge_minutes(config: dict, judge: str) -> int:
    """Minutes of one (policy, judge, mode)'s whole judging (before sharding): ~13.5k problems x 8
    responses at paper scale, 500-800 tokens a judgement for a 72B on TP-4 (up to ~10 h); a reasoning judge
    allowed more than 8,192 tokens (QwQ: 16,384; 1.5-4k written at 3-6k tokens/s) up to ~40 h."""
    return 720 * (4 if int(bon_judge_settings(config, judge)["max_tokens"]) > 8192 else 1)
