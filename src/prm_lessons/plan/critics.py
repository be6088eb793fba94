"""Plan stage: ProcessBench critics (critics.judges)."""
from __future__ import annotations

from ..templates import OFFICIAL_CRITIC_TEMPLATE  # noqa: F401  (plan's name for it; the file of rule critique_template)

# every setting a critic takes from the `critics` section unless its own entry overrides it
CRITIC_SETTINGS = ("n", "temperature", "top_p", "top_k", "max_tokens", "seed", "system_prompt", "template",
                   "template_path", "force_answer", "force_truncated", "parse")
# the labelling judge's prompt as the paper prints it (App. C), read from judge.paper_template by rule judge_template
JUDGE_PAPER_TEMPLATE = "resources/templates/judge_paper_app_c.txt"
JUDGE_TEMPLATES = ("project_paraphrase", "paper_app_c")


def critic_specs(config: dict) -> dict[str, dict]:
    """critic name → {model, every CRITIC_SETTINGS value} of every enabled critic: the section's values with
    the critic's own overrides. n = 1 is greedy: temperature 0, top_p 1, no top_k (what the engine is given)."""
    sec = config.get("critics", {})
    out = {}
    for name, entry in sec.get("judges", {}).items():
        if entry.get("enabled") is False:  # switched off (overlays merge key by key and cannot delete one)
            continue
        spec = {"model": entry["model"], **{k: entry.get(k, sec.get(k)) for k in CRITIC_SETTINGS}}
        if int(spec["n"]) == 1:
            spec.update(temperature=0.0, top_p=1.0, top_k=None)
        out[name] = spec
    return out


def critic_generation_sources(specs: dict[str, dict]) -> dict[str, str]:
    """critic → the critic whose critiques it reads: the first generating critic (in config order) with
    the same model and sampling, template and prompt settings that either forces answers exactly as it
    does or, when it forces none, forces any (the forced continuations are cut off again); itself when
    there is none. So critics that differ only in `parse` or in not forcing share one generation job."""
    force = ("force_answer", "force_truncated")
    out: dict[str, str] = {}
    for name, spec in specs.items():
        key = [repr(spec[k]) for k in ("model", *CRITIC_SETTINGS) if k != "parse" and k not in force]
        out[name] = next((g for g in out if out[g] == g and key == [
            repr(specs[g][k]) for k in ("model", *CRITIC_SETTINGS) if k != "parse" and k not in force]
            and (not spec["force_answer"] or all(spec[f] == specs[g][f] for f in force))), name)
    return out


def critic_shards(config: dict) -> int:
    """Jobs per generating critic over ProcessBench case shards (critics.shards); 1 = one job writes the table."""
    return int(config.get("critics", {}).get("shards", 1))


def critic_minutes(spec: dict) -> int:
    """Minutes of a critic's whole generation (before sharding): 3,400 cases x 8 critiques at paper scale,
    ~1k tokens each (~3 h for a 72B on TP-4); critiques longer than ProcessBench's 8,192 tokens (QwQ:
    32,768 allowed, 4-8k written) up to ~20 h."""
    return 480 * (3 if int(spec["max_tokens"]) > 8192 else 1)


def critic_template_input(spec: dict) -> list[str]:
    """The template file a critic job reads: the fetched official text, a template_path, or none."""
    if spec["template"] == "official":
        return [OFFICIAL_CRITIC_TEMPLATE]
    return [spec["template_path"]] if spec.get("template_path") else []


def judge_template_input(judge: dict) -> list[str]:
    """The prompt file the labelling judge reads (rules judge, judge_processbench, audit_labels):
    judge.template paper_app_c → the text rule judge_template extracts from the paper's source; the project's
    paraphrase → judge.template_path when set, else none (the built-in text)."""
    if judge.get("template", "project_paraphrase") == "paper_app_c":
        return [JUDGE_PAPER_TEMPLATE]
    return [judge["template_path"]] if judge.get("template_path") else []


def judge_template_name(judge: dict) -> str:
    """What the judge's prompt is, in words (table settings, logs)."""
    if judge.get("template", "project_paraphrase") == "paper_app_c":
        return "the paper's App. C prompt (judge.paper_template)"
    return f"the project's paraphrase{' ' + str(judge['template_path']) if judge.get('template_path') else ''}"


def critic_setting(spec: dict) -> str:
    """One line naming what a critic row ran with (the table notes)."""
    if int(spec["n"]) == 1:
        sampling = "greedy"
    else:
        sampling = f"majority of {spec['n']} samples, T {spec['temperature']:g}, top_p {spec['top_p']:g}" + (
            f", top_k {spec['top_k']}" if spec.get("top_k") else "")
    template = ("official critique_template.txt" if spec["template"] == "official" else
                f"project template{' ' + str(spec['template_path']) if spec.get('template_path') else ''}")
    forced = ", unparsable answers forced" + (" (cut-off ones too)" if spec["force_truncated"] else "") \
        if spec["force_answer"] else ""
    return (f"{spec['model']}: {template}, {spec['parse']} parse, {sampling}, max {spec['max_tokens']} tokens, "
            f"seed {spec['seed']}{forced}")
