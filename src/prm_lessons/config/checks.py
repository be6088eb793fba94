"""Cross-checks of a validated config: what one key says about another (a role names a defined model, a
list names known benchmarks, a budget fits the model's context, names do not clash). They read the config
and change nothing; each error names the key path."""
from __future__ import annotations

import json
from pathlib import Path

from ..embedded_model import EMBEDDED_PACKAGES  # stdlib-only module: cheap at DAG time
from ..pooling import ARCHITECTURES as VLLM_ARCHITECTURES  # torch-free at import: cheap at DAG time
from ..scoring.options import check_declared_params, check_token_classification_params  # torch-free
from ..templates import OFFICIAL_CRITIC_TEMPLATE, template_problem  # stdlib only
from .access import used_models
from .names import (
    OUTPUT_PATH_KEYS,
    TEXT_KEYS,
    ConfigError,
    _fraction,
    output_dir_problem,
    sweep_variant_name,
    text_problem,
)
from .names import config_error as _err


def check_config(cfg: dict) -> None:
    """Every cross-check, in order (the first failing one raises)."""
    _check_texts(cfg)
    _check_output_paths(cfg)
    _check_cross_references(cfg)
    _check_namespaces(cfg)


def _check_texts(cfg: dict) -> None:
    for keys in TEXT_KEYS:
        node = cfg
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        problem = text_problem(node)
        if problem:
            raise _err(".".join(keys), problem)


def _check_output_paths(cfg: dict) -> None:
    for keys in OUTPUT_PATH_KEYS:
        value = cfg
        for k in keys:
            value = (value or {}).get(k)
        if value is None:
            continue
        problem = output_dir_problem(value)
        if problem:
            raise _err(".".join(keys), problem)


def _check_cross_references(cfg: dict) -> None:
    models = cfg.get("models", {})
    for role, name in cfg.get("roles", {}).items():
        if name not in models:
            raise ConfigError(f"config error at `roles.{role}`: model '{name}' is not defined under `models`")
    for name, entry in models.items():
        if entry.get("source") == "embedded" and entry.get("id") not in EMBEDDED_PACKAGES:
            raise _err(f"models.{name}.id", f"unknown embedded model package {entry.get('id')!r} "
                                            f"(known: {', '.join(sorted(EMBEDDED_PACKAGES))})")
    dpols = cfg.get("data_policies") or {}
    for name, d in dpols.items():
        for key in ("model", "completer"):
            if d.get(key) not in models:
                raise _err(f"data_policies.{name}.{key}", f"model '{d.get(key)}' is not defined under `models`")
        # a mix's policies sample into results/data_policies/<name>/, told apart from the Best-of-N
        # policies' results/policies/<name>/ by the `policy_dir` wildcard only through distinct names
        if len(dpols) > 1 and name in ((cfg.get("bon") or {}).get("policies") or {}):
            raise _err(f"data_policies.{name}", "a data policy of a mix needs a name no Best-of-N policy "
                                                "(bon.policies) has")
    base = (cfg.get("training") or {}).get("base")
    if base and cfg.get("roles", {}).get(base, base) not in models:
        raise _err("training.base", f"{base!r} is neither a role under `roles` nor a model under `models`")
    for name, e in ((cfg.get("prms") or {}).get("models") or {}).items():
        for key in ("model", "ref_model"):
            if e.get(key) and e[key] not in models:
                raise _err(f"prms.models.{name}.{key}", f"model '{e[key]}' is not defined under `models`")
    critics = cfg.get("critics") or {}
    for name, entry in (critics.get("judges") or {}).items():
        if entry["model"] not in models:
            raise _err(f"critics.judges.{name}.model", f"model '{entry['model']}' is not defined under `models`")
        # the official template replaces the project's text; a template_path beside it would be ignored
        template = entry.get("template", critics.get("template"))
        if template == "official" and entry.get("template_path", critics.get("template_path")):
            key = (f"critics.judges.{name}.template_path" if entry.get("template_path") else "critics.template_path")
            raise _err(key, f"critic '{name}' has template: official; template_path replaces only the project "
                            "template (set template: project, or remove template_path)")
    _check_judge_template(cfg.get("judge") or {})
    problems, benchmarks = cfg.get("problems") or {}, cfg.get("benchmarks") or {}
    _check_bon_judges(cfg.get("bon_judges") or {}, models, benchmarks)
    for name, spec in ((cfg.get("trainsets") or {}).get("variants") or {}).items():
        unknown = [d for d in spec.get("datasets") or [] if d not in problems]
        if unknown:
            raise _err(f"trainsets.variants.{name}.datasets", f"unknown problem set(s) {unknown} "
                                                            "(names under `problems`)")
    ann = (cfg.get("analysis") or {}).get("fig6_annotation") or {}
    if ann.get("labels") and not ann.get("per_benchmark"):
        raise _err("analysis.fig6_annotation.labels", "labels of an annotation sheet, but per_benchmark is 0 (no "
                                                      "sheet): set per_benchmark to the sheet's size per dataset")
    for i, d in enumerate((cfg.get("analysis") or {}).get("policy_flaw_datasets") or []):
        if d not in problems and d not in benchmarks:
            raise _err(f"analysis.policy_flaw_datasets.{i}", f"'{d}' is not under `problems` or `benchmarks`")
    _check_bon(cfg)
    n = (cfg.get("analysis") or {}).get("n")
    bon_n = (cfg.get("bon") or {}).get("n") or (cfg.get("sampling") or {}).get("n")
    if n is not None and bon_n is not None and n != bon_n:
        # the main tables are at bon.n; bon.more_n's N are evaluated on their own benchmarks only
        raise _err("analysis.n", f"{n} differs from bon.n = {bon_n}, the N of the main tables "
                                 "(leave analysis.n null to use it)")
    # (analysis.n null is set to bon.n by derive.derived_config)
    for name in sorted(used_models(cfg)):
        entry = models[name]
        if entry.get("source") == "hub" and not entry.get("revision"):
            # an unpinned Hub model would be whatever `main` is on the day each job starts
            raise ConfigError(f"config error at `models.{name}.revision`: Hub model '{entry.get('id')}' is used "
                              "but names no revision (a 40-hex commit; `main` is resolved once by rule "
                              "download_model)")
    _check_search(cfg)
    _check_token_room(cfg)
    _check_threshold_tuning(cfg)
    _check_shard_prms(cfg)
    _check_analysis(cfg)
    _check_scoring_backends(cfg)
    _check_adapter_params(cfg)
    _check_templates(cfg)
    for key in ("benchmarks",):
        for name in cfg.get("analysis", {}).get(key, []) or []:
            if name not in cfg.get("benchmarks", {}):
                raise ConfigError(f"config error at `analysis.{key}`: unknown benchmark '{name}'")


def _check_scoring_backends(cfg: dict) -> None:
    """Scoring backend vllm (prm_lessons.pooling) only where vLLM implements the PRM's architecture: the
    adapters qwen_prm / qwen_orm / trained, and trained PRMs only when they are saved in the released
    Qwen2ForProcessRewardModel layout (full fine-tuning; the embedded base is a Llama model)."""
    prms = cfg.get("prms") or {}
    served = ", ".join(f"{a} ({arch})" for a, arch in VLLM_ARCHITECTURES.items())
    for name, e in (prms.get("models") or {}).items():
        if e.get("backend") == "vllm" and e.get("adapter") not in VLLM_ARCHITECTURES:
            raise _err(f"prms.models.{name}.backend", f"vllm implements no architecture for adapter "
                                                      f"{e.get('adapter')!r} (it serves {served}); use transformers")
    if prms.get("trained_backend") == "vllm" and prms.get("include_trained", True):
        training = cfg.get("training") or {}
        if training.get("mode", "full") != "full":
            raise _err("prms.trained_backend", f"vllm serves trained PRMs saved as Qwen2ForProcessRewardModel, "
                                               f"i.e. training.mode full; training.mode is {training.get('mode')!r} "
                                               "(its PRMs keep the project layout): use transformers")
        base = (cfg.get("models") or {}).get((cfg.get("roles") or {}).get(training.get("base"), training.get("base")))
        if base and base.get("source") == "embedded":
            raise _err("prms.trained_backend", "the embedded base is a Llama model: its PRMs keep the project "
                                               "layout, which vLLM does not serve; use transformers")


def _checkpoint_config(model_dir: str) -> dict | None:
    """A local checkpoint's transformers config.json (None: none, unreadable, or no model_type)."""
    try:
        c = json.loads((Path(model_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return c if isinstance(c, dict) and "model_type" in c else None


def _checkpoint_num_labels(model_dir: str) -> int | None:
    """Labels of a local checkpoint's head as transformers reads its config.json: id2label, else
    num_labels, else 2 (PretrainedConfig's default, which transformers 5 does not write); None when there
    is no transformers config (no model_type) to read."""
    c = _checkpoint_config(model_dir)
    if c is None:
        return None
    n = len(c["id2label"]) if isinstance(c.get("id2label"), dict) else c.get("num_labels", 2)
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _checkpoint_vocab_size(model_dir: str) -> int | None:
    c = _checkpoint_config(model_dir) or {}
    n = c.get("vocab_size", (c.get("text_config") or {}).get("vocab_size"))
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _declared_bounds(params: dict, m: dict) -> tuple[int | None, int | None]:
    """(num_labels, vocab_size) adapter declared's readout can be checked against before any job runs: the
    Qwen-style process_reward head built here has 2 labels; a local checkpoint's config.json says the rest."""
    local = m.get("source") == "local"
    mc = params.get("model_class")
    if mc == "process_reward":
        return (None if m.get("trust_remote_code") else 2), None
    if mc == "token_classification":
        return (_checkpoint_num_labels(m["id"]) if local else None), None
    return None, (_checkpoint_vocab_size(m["id"]) if local else None)


def _check_adapter_params(cfg: dict) -> None:
    """The params of adapters token_classification and declared (scoring.options), and for a local model
    the label index (or label token id) against the checkpoint now rather than in the scoring job (a Hub
    model: checked when loaded)."""
    models = cfg.get("models") or {}
    for name, e in ((cfg.get("prms") or {}).get("models") or {}).items():
        if e.get("adapter") not in ("token_classification", "declared"):
            continue
        m = models.get(e["model"]) or {}
        params = e.get("params") or {}
        try:
            if e["adapter"] == "declared":
                n, vocab = _declared_bounds(params, m)
                check_declared_params(params, n, vocab)
            else:
                n = _checkpoint_num_labels(m["id"]) if m.get("source") == "local" else None
                check_token_classification_params(params, n)
        except ValueError as err:
            key, _, msg = str(err).partition(": ")
            # the checkpoint's own count said so: name the file it was read from
            read = m.get("source") == "local" and (
                (e["adapter"] == "token_classification" and n is not None)
                or (params.get("model_class") != "process_reward" and ("num_labels" in msg or "vocab_size" in msg)))
            raise _err(f"prms.models.{name}.{key}", msg + (f" ({m['id']}/config.json)" if read else "")) from None


def _check_analysis(cfg: dict) -> None:
    """analysis.policy / second_policy name policies (bon.policies; none configured: the one policy named
    after roles.policy); table10's N is an N that Best-of-N evaluates and its benchmarks are evaluated at
    that N; chinese_benchmarks are benchmarks."""
    a = cfg.get("analysis") or {}
    bon = cfg.get("bon") or {}
    policies = list(bon.get("policies") or {}) or [(cfg.get("roles") or {}).get("policy")]
    for key in ("policy", "second_policy"):
        if a.get(key) is not None and a[key] not in policies:
            raise _err(f"analysis.{key}", f"'{a[key]}' is not a Best-of-N policy (keys of bon.policies: "
                                          f"{', '.join(map(str, policies))})")
    if a.get("second_policy") is not None and a["second_policy"] == (a.get("policy") or policies[0]):
        raise _err("analysis.second_policy", f"'{a['second_policy']}' is also analysis.policy (the policy of "
                                             "Tables 3-8, 11, 13, 15); name another policy, or null")
    benchmarks = cfg.get("benchmarks") or {}
    bon_n = bon.get("n") or (cfg.get("sampling") or {}).get("n")
    covers = {int(e["n"]): list(e.get("benchmarks") or []) for e in bon.get("more_n") or [] if "n" in e}
    t10 = a.get("table10") or {}
    n10 = t10.get("n") or (max(covers) if covers else None)
    if t10.get("n") is not None and t10["n"] != bon_n and t10["n"] not in covers:
        raise _err("analysis.table10.n", f"{t10['n']} is not an N that Best-of-N evaluates (bon.n = {bon_n}, "
                                         f"bon.more_n: {sorted(covers) or 'none'})")
    for i, b in enumerate(t10.get("benchmarks") or []):
        if n10 is None:
            raise _err("analysis.table10.benchmarks", "set, but no N to evaluate them at (bon.more_n is empty "
                                                      "and analysis.table10.n is null)")
        if b not in benchmarks:
            raise _err(f"analysis.table10.benchmarks.{i}", f"unknown benchmark '{b}' (names under `benchmarks`)")
        if n10 != bon_n and b not in covers.get(n10, []):
            raise _err(f"analysis.table10.benchmarks.{i}", f"'{b}' is not evaluated at N = {n10} (add it to "
                                                           f"that bon.more_n entry's benchmarks)")
    for i, b in enumerate(a.get("chinese_benchmarks") or []):
        if b not in benchmarks:
            raise _err(f"analysis.chinese_benchmarks.{i}", f"unknown benchmark '{b}' (names under `benchmarks`)")


def _check_threshold_tuning(cfg: dict) -> None:
    """processbench_eval.tune_on must be applicable to the run's ProcessBench cases: `dev` needs the
    constructed set's dev split, `gsm8k` a subset named gsm8k (hub/local/url: `subsets` null = all four)."""
    tune_on = (cfg.get("processbench_eval") or {}).get("tune_on", "auto")
    pb = cfg.get("processbench") or {}
    constructed = pb.get("source", "constructed") == "constructed"
    cons = pb.get("constructed") or {}
    if tune_on == "dev" and not (constructed and cons.get("dev")):
        raise _err("processbench_eval.tune_on", "'dev' needs a dev split (processbench.constructed.dev); "
                                                "use crossfit, gsm8k or auto")
    if tune_on == "gsm8k":
        subsets = list(cons.get("subsets") or {}) if constructed else pb.get("subsets")
        if subsets is not None and "gsm8k" not in subsets:
            where = "processbench.constructed.subsets" if constructed else "processbench.subsets"
            raise _err("processbench_eval.tune_on", f"'gsm8k' tunes on the GSM8K subset, which {where} lacks "
                                                    f"({', '.join(map(str, subsets)) or 'none'}); use dev, "
                                                    "crossfit or auto")


def _run_prms(cfg: dict) -> set[str]:
    """The names of the PRMs this run scores: prms.models, and the enabled trained variants and sweep
    variants unless prms.include_trained is false."""
    prms = cfg.get("prms") or {}
    known = set((prms.get("models") or {}))
    if prms.get("include_trained", True):
        tcfg = cfg.get("trainsets") or {}
        known |= {n for n, v in (tcfg.get("variants") or {}).items() if v.get("enabled") is not False}
        known |= {sweep_variant_name(t) for t in tcfg.get("mc_threshold_sweep") or []}
    return known


def _check_shard_prms(cfg: dict) -> None:
    """prms.shard_prms names PRMs of this run (a typo would silently leave every PRM unsplit)."""
    known = _run_prms(cfg)
    for i, name in enumerate((cfg.get("prms") or {}).get("shard_prms") or []):
        if name not in known:
            raise _err(f"prms.shard_prms.{i}", f"'{name}' is not a PRM of this run: a trained variant "
                       "(trainsets.variants, with prms.include_trained) or a prms.models entry")


def _check_search(cfg: dict) -> None:
    """search.*: the policy is a model, the PRMs (and the ORM) are PRMs the workflow scores, the
    benchmarks are Best-of-N benchmarks."""
    search = cfg.get("search") or {}
    if search.get("policy") is not None and search["policy"] not in cfg.get("models", {}):
        raise _err("search.policy", f"model '{search['policy']}' is not defined under `models`")
    known = _run_prms(cfg)
    where = "a trained variant (trainsets.variants, with prms.include_trained) or a prms.models entry"
    for i, name in enumerate(search.get("prms") or []):
        if name not in known:
            raise _err(f"search.prms.{i}", f"'{name}' is not a PRM of this run: {where}")
    if search.get("orm") is not None and search["orm"] not in known:
        raise _err("search.orm", f"'{search['orm']}' is not a PRM of this run: {where}")
    for i, name in enumerate(search.get("benchmarks") or []):
        if name not in (cfg.get("benchmarks") or {}):
            raise _err(f"search.benchmarks.{i}", f"unknown benchmark '{name}' (names under `benchmarks`)")


def _check_token_room(cfg: dict) -> None:
    """A generation budget that leaves no token of the model's max_model_len for a prompt: the sampling
    jobs (every Best-of-N and data policy: prompt + max_tokens must fit, sampling.long_questions) and the
    search (prompt + path + max_step_tokens) would refuse or skip every problem, hours in. MC, the judge,
    the critics and the Best-of-N judges are not held to it: the engine stops their generations at
    max_model_len (vLLM, as ProcessBench's own script runs its critics: 8,192 tokens on 4,096-token models)."""
    models, sampling = cfg.get("models") or {}, cfg.get("sampling") or {}
    roles = cfg.get("roles") or {}
    budgets = []  # (key path of the budget, tokens, model name)
    policies = (cfg.get("bon") or {}).get("policies") or {}
    for name, p in (policies.items() if policies else [(roles.get("policy"), {})]):
        key = f"bon.policies.{name}.max_tokens" if p.get("max_tokens") is not None else "sampling.max_tokens"
        budgets.append((key, p.get("max_tokens") or sampling.get("max_tokens"), p.get("model") or roles.get("policy")))
    for name, d in (cfg.get("data_policies") or {}).items():
        key = f"data_policies.{name}.max_tokens" if d.get("max_tokens") is not None else "sampling.max_tokens"
        budgets.append((key, d.get("max_tokens") or sampling.get("max_tokens"), d.get("model")))
    search = cfg.get("search") or {}
    if search.get("prms"):
        budgets.append(("search.max_step_tokens", search.get("max_step_tokens"), search.get("policy") or roles.get("policy")))
    for key, tokens, model in budgets:
        limit = (models.get(model) or {}).get("max_model_len")
        if isinstance(tokens, int) and isinstance(limit, int) and tokens >= limit:
            raise _err(key, f"{tokens} tokens leave no room for a prompt in models.{model}.max_model_len {limit} "
                            "(prompt + generated tokens must fit in it): lower it, or raise max_model_len to at "
                            "most the model's own context length")


# what the primary policy takes from `sampling` and `benchmarks` (its samples are the labels', search's
# and the judges' too), so it may not set them itself
PRIMARY_POLICY_FIXED = ("temperature", "top_p", "max_tokens", "system_prompt", "benchmarks", "limit")


def _check_bon(cfg: dict) -> None:
    """bon.policies: models under `models`, the first (primary) one roles.policy's with no overrides, known
    benchmarks; bon.more_n: N other than bon.n and each other, known benchmarks sampled by its policies."""
    bon, models, benchmarks = cfg.get("bon") or {}, cfg.get("models") or {}, cfg.get("benchmarks") or {}
    policies = bon.get("policies") or {}
    for i, (name, p) in enumerate(policies.items()):
        if i > 0 and p.get("model") is None:
            raise _err(f"bon.policies.{name}.model", "missing required value (only the primary policy, the first, "
                                                     "takes roles.policy)")
        if p.get("model") is not None and p["model"] not in models:
            raise _err(f"bon.policies.{name}.model", f"model '{p.get('model')}' is not defined under `models`")
        if i == 0 and p.get("model") not in (None, (cfg.get("roles") or {}).get("policy")):
            raise _err(f"bon.policies.{name}.model", f"the first (primary) policy samples results/samples/, which "
                                                     f"the labels read too: it must be roles.policy "
                                                     f"('{(cfg.get('roles') or {}).get('policy')}')")
        for key in PRIMARY_POLICY_FIXED if i == 0 else ():
            if p.get(key) not in (None, []):
                raise _err(f"bon.policies.{name}.{key}", "the first (primary) policy takes its sampling from "
                                                         "`sampling` and samples every benchmark (its samples are "
                                                         "shared with the labels, search and judges): set it there, "
                                                         "or list another policy first")
        for j, b in enumerate(p.get("benchmarks") or []):
            if b not in benchmarks:
                raise _err(f"bon.policies.{name}.benchmarks.{j}", f"unknown benchmark '{b}' (names under `benchmarks`)")
    names = list(policies) or [(cfg.get("roles") or {}).get("policy")]
    for i, p in enumerate((cfg.get("bon_judges") or {}).get("policies") or []):
        if p not in names:
            raise _err(f"bon_judges.policies.{i}", f"'{p}' is not a policy (bon.policies: {', '.join(names)})")
    seen = {bon.get("n"): "bon.n"}
    for i, e in enumerate(bon.get("more_n") or []):
        if e["n"] in seen:
            raise _err(f"bon.more_n.{i}.n", f"N={e['n']} is already evaluated ({seen[e['n']]}): list each N once, "
                                            "with all its benchmarks")
        seen[e["n"]] = f"bon.more_n.{i}.n"
        for j, p in enumerate(e.get("policies") or []):
            if p not in names:
                raise _err(f"bon.more_n.{i}.policies.{j}", f"'{p}' is not a policy (bon.policies: {', '.join(names)})")
        for j, b in enumerate(e["benchmarks"]):
            if b not in benchmarks:
                raise _err(f"bon.more_n.{i}.benchmarks.{j}", f"unknown benchmark '{b}' (names under `benchmarks`)")
            for p in e.get("policies") or names[:1]:
                own = (policies.get(p) or {}).get("benchmarks") or []
                if own and b not in own:
                    raise _err(f"bon.more_n.{i}.benchmarks.{j}", f"policy '{p}' does not sample '{b}' "
                                                                 f"(bon.policies.{p}.benchmarks)")


def _check_judge_template(judge: dict) -> None:
    """judge.template paper_app_c: the paper's prompt is in the paper's format (style paper), replaces the
    project's text (no template_path beside it) and is checked against at least one pinned value."""
    if judge.get("template") != "paper_app_c":
        return
    if judge.get("style", "paper") != "paper":
        raise _err("judge.template", "paper_app_c is the paper's prompt, written for its verdict format: set "
                                     "judge.style: paper (or template: project_paraphrase)")
    if judge.get("template_path"):
        raise _err("judge.template_path", "judge.template is paper_app_c; template_path replaces only the "
                                          "project's paraphrase (set template: project_paraphrase, or remove it)")
    spec = judge.get("paper_template") or {}
    if not any(spec.get(k) for k in ("sha256", "git_blob_sha1", "text_sha256")):
        raise _err("judge.paper_template", "judge.template is paper_app_c but none of sha256, git_blob_sha1, "
                                           "text_sha256 is set: the prompt would be used unchecked")


def _check_bon_judges(bj: dict, models: dict, benchmarks: dict) -> None:
    """bon_judges: judge models under `models`, benchmarks under `benchmarks` (its templates:
    _check_templates)."""
    for name, j in (bj.get("judges") or {}).items():
        if j.get("model") not in models:
            raise _err(f"bon_judges.judges.{name}.model", f"model '{j.get('model')}' is not defined under `models`")
    for name, j in (bj.get("judges") or {}).items():
        if j.get("max_tokens", bj.get("max_tokens")) == 0 and not bj.get("force_answer", True):
            key = f"bon_judges.judges.{name}.max_tokens" if "max_tokens" in j else "bon_judges.max_tokens"
            raise _err(key, "0 (no free text) needs bon_judges.force_answer: every verdict would be unread")
    for i, b in enumerate(bj.get("benchmarks") or []):
        if b not in benchmarks:
            raise _err(f"bon_judges.benchmarks.{i}", f"'{b}' is not a benchmark (names under `benchmarks`)")


def _check_template_file(path, kind: str, key: str) -> None:
    """A template the config names: the file exists (relative to the working directory; the official
    critique template is fetched by a rule and checked when read) and fills `kind`'s placeholders."""
    if not Path(path).is_file():
        if Path(path) == Path(OFFICIAL_CRITIC_TEMPLATE):
            return
        raise _err(key, f"no such file {path!r} (relative to the working directory)")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _err(key, f"{path}: cannot be read as UTF-8 text ({exc})") from None
    problem = template_problem(text, kind)
    if problem:
        raise _err(key, f"{path}: {problem}")


def _check_templates(cfg: dict) -> None:
    """Every template the config can replace, checked before any job (so before any model loads)."""
    judge = cfg.get("judge") or {}
    if judge.get("template_path"):
        _check_template_file(judge["template_path"], "judge", "judge.template_path")
    critics = cfg.get("critics") or {}
    if critics.get("template_path") and critics.get("template", "project") == "project":
        _check_template_file(critics["template_path"], "judge", "critics.template_path")
    for name, entry in (critics.get("judges") or {}).items():
        if entry.get("template_path") and entry.get("template", critics.get("template", "project")) == "project":
            _check_template_file(entry["template_path"], "judge", f"critics.judges.{name}.template_path")
    bj = cfg.get("bon_judges") or {}
    for key, kind in (("pointwise_template", "pointwise"), ("pairwise_template", "pairwise")):
        if bj.get(key):
            _check_template_file(bj[key], kind, f"bon_judges.{key}")


def _is_sweep_spec(spec: dict, t) -> bool:
    """Whether a declared variant is the sweep's hard MC variant at t (plan.variants then reuses it)."""
    return (spec.get("source") == "mc" and spec.get("label_type", "hard") == "hard" and not spec.get("datasets")
            and _fraction(spec.get("threshold", 0.0)) == _fraction(t))


# ProcessBench rows of critics (critic-<judge>) and model-free baselines (baseline_<kind>) share the
# `prm` wildcard with the PRMs
RESERVED_PRM_PREFIXES = ("critic-", "baseline_")


def _name_groups(cfg: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each namespace of names as (what, [(key path, name)]): the names of one group become files in
    the same folders, so two of them must differ in more than letter case."""
    def keys(where: str, mapping) -> list[tuple[str, str]]:
        return [(f"{where}.{n}", n) for n in (mapping or {})]

    def sub(*path):
        node = cfg
        for k in path:
            node = node.get(k) if isinstance(node, dict) else None
        return node

    cons = sub("processbench", "constructed") or {}
    return [
        ("models", keys("models", cfg.get("models"))),
        ("problem sets and benchmarks", keys("problems", cfg.get("problems")) + keys("benchmarks", cfg.get("benchmarks"))),
        ("PRMs", keys("trainsets.variants", sub("trainsets", "variants")) + keys("prms.models", sub("prms", "models"))),
        ("critics", keys("critics.judges", sub("critics", "judges"))),
        ("Best-of-N judges", keys("bon_judges.judges", sub("bon_judges", "judges"))),
        ("policies", keys("bon.policies", sub("bon", "policies"))),
        ("ProcessBench subsets", [(f"processbench.subsets.{i}", n) for i, n in enumerate(sub("processbench", "subsets") or [])]
         + keys("processbench.constructed.subsets", cons.get("subsets"))),
        ("ProcessBench dev subsets", keys("processbench.constructed.dev.subsets", (cons.get("dev") or {}).get("subsets"))),
        ("human construction problems", keys("human.construction.problems", sub("human", "construction", "problems"))),
    ]


def _check_case_clashes(cfg: dict) -> None:
    """Two names of one namespace that differ only in letter case name the same file on a
    case-insensitive file system (macOS, Windows, many shared mounts)."""
    for what, names in _name_groups(cfg):
        seen: dict[str, str] = {}
        for key, name in names:
            if not isinstance(name, str):
                continue
            other = seen.setdefault(name.casefold(), name)
            if other != name:
                raise _err(key, f"{name!r} and {other!r} ({what}) differ only in letter case: they name the same "
                                "file on a case-insensitive file system")


def _check_namespaces(cfg: dict) -> None:
    """Names that share a wildcard must not clash: problem sets and benchmarks (`dataset`:
    results/samples/<name>.parquet), and trained variants, released PRMs, critics and the ProcessBench
    baselines (`prm`: results/scores/<prm>/, results/metrics/*/<prm>.json); nor differ only in case."""
    _check_case_clashes(cfg)
    for name in cfg.get("benchmarks") or {}:
        if name in (cfg.get("problems") or {}):
            raise _err(f"benchmarks.{name}", "also defined under `problems`: problem sets and benchmarks "
                                             "share one namespace (results/samples/<name>.parquet)")
    tcfg = cfg.get("trainsets") or {}
    declared = {n: s for n, s in (tcfg.get("variants") or {}).items() if s.get("enabled") is not False}
    sweep = []
    for t in tcfg.get("mc_threshold_sweep") or []:
        if any(_is_sweep_spec(s, t) for s in declared.values()):
            continue
        name = sweep_variant_name(t)
        if name in declared:  # plan.variants would replace the declared variant with the sweep's
            raise _err(f"trainsets.variants.{name}", f"the name of the MC threshold sweep's variant for "
                                                     f"threshold {t}, with another definition")
        sweep.append(name)
    trained = [*declared, *sweep] if (cfg.get("prms") or {}).get("include_trained", True) else []
    released = list((cfg.get("prms") or {}).get("models") or {})
    for name in released:
        if name in trained:
            raise _err(f"prms.models.{name}", "name clashes with a trained PRM variant (trainsets.variants "
                                              "or the MC threshold sweep)")
    for name in trained + released:
        if name.startswith(RESERVED_PRM_PREFIXES):
            key = f"prms.models.{name}" if name in released else f"trainsets.variants.{name}"
            raise _err(key, f"names starting with {' or '.join(RESERVED_PRM_PREFIXES)} are reserved for the "
                            "ProcessBench rows of critics and baselines")


