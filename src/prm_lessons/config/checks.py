"""Cross-checks of the config: what one key says about another (a role names a defined model, a list names
known benchmarks, a budget fits the model's context). They read the typed models (Config's after-validator
runs them, in this order) and change nothing; each error names the key path."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..models.embedded import EMBEDDED_PACKAGES  # stdlib-only module: cheap at DAG time
from ..scoring.options import check_declared_params, check_token_classification_params  # torch-free
from ..scoring.pooling import ARCHITECTURES as VLLM_ARCHITECTURES  # torch-free at import: cheap at DAG time
from ..templates import OFFICIAL_CRITIC_TEMPLATE, template_problem  # stdlib only
from .base import MISSING, fail
from .checks_names import check_inputs, check_namespaces, enabled_benchmarks, opt, run_prms

_UNDEFINED = "is not defined under `models`"


def check_config(c) -> None:
    """Every cross-check, in order (the first failing one raises)."""
    check_inputs(c)
    _check_references(c)
    _check_bon(c)
    _check_analysis_n(c)
    _check_hub_revisions(c)
    _check_local_models(c)
    _check_search(c)
    _check_token_room(c)
    _check_threshold_tuning(c)
    _check_shard_prms(c)
    _check_analysis(c)
    _check_scoring_backends(c)
    _check_adapter_params(c)
    _check_templates(c)
    for name in c.analysis.benchmarks:
        if name not in enabled_benchmarks(c):
            raise fail("analysis.benchmarks", f"unknown benchmark '{name}'")
    check_namespaces(c)


def policy_names(c) -> list[str]:
    """The Best-of-N policies: the keys of bon.policies, or the one policy named after roles.policy."""
    return list(c.bon.policies) or [c.roles.policy]


def resolve_role(c, name: str) -> str:
    """The model a role names (`policy`, `completer`, `judge`), or `name` itself when it is no given role."""
    role = getattr(c.roles, name) if name in type(c.roles).model_fields else MISSING
    return name if role is MISSING else role


def bon_n(c) -> int:
    """The N of the main tables: bon.n (sampling.n when 0)."""
    return c.bon.n or c.sampling.n


def used_models(c) -> set[str]:
    """Model entries some rule loads (access.used_models, on the models)."""
    names = {v for _, v in c.roles if isinstance(v, str)}
    if c.training.base:
        names.add(resolve_role(c, c.training.base))
    for e in c.prms.models.values():
        names.update(n for n in (e.model, e.ref_model) if n)
    names.update(e.model for e in c.critics.judges.values() if e.enabled is not False)
    names.update(j.model for j in c.bon_judges.judges.values() if j.enabled is not False)
    names.update(opt(p.model) for p in c.bon.policies.values())
    names.update(n for d in c.data_policies.values() for n in (d.model, d.completer))
    if c.search.prms and c.search.policy:
        names.add(c.search.policy)
    return {n for n in names if n in c.models}


def _check_references(c) -> None:
    models = c.models
    for role, name in c.roles:
        if opt(name) is not None and name not in models:
            raise fail(f"roles.{role}", f"model '{name}' {_UNDEFINED}")
    for name, entry in models.items():
        if entry.source == "embedded" and entry.id not in EMBEDDED_PACKAGES:
            raise fail(f"models.{name}.id", f"unknown embedded model package {entry.id!r} "
                                            f"(known: {', '.join(sorted(EMBEDDED_PACKAGES))})")
    for name, d in c.data_policies.items():
        for key in ("model", "completer"):
            if getattr(d, key) not in models:
                raise fail(f"data_policies.{name}.{key}", f"model '{getattr(d, key)}' {_UNDEFINED}")
        # a mix's policies sample into results/data_policies/<name>/, told apart from the Best-of-N
        # policies' results/policies/<name>/ by the `policy_dir` wildcard only through distinct names
        if len(c.data_policies) > 1 and name in c.bon.policies:
            raise fail(f"data_policies.{name}", "a data policy of a mix needs a name no Best-of-N policy "
                                                "(bon.policies) has")
    base = c.training.base
    if base and resolve_role(c, base) not in models:
        raise fail("training.base", f"{base!r} is neither a role under `roles` nor a model under `models`")
    for name, e in c.prms.models.items():
        for key in ("model", "ref_model"):
            if getattr(e, key) and getattr(e, key) not in models:
                raise fail(f"prms.models.{name}.{key}", f"model '{getattr(e, key)}' {_UNDEFINED}")
    critics = c.critics
    for name, entry in critics.judges.items():
        if entry.model not in models:
            raise fail(f"critics.judges.{name}.model", f"model '{entry.model}' {_UNDEFINED}")
        # the official template replaces the project's text; a template_path beside it would be ignored
        if opt(entry.template, critics.template) == "official" and opt(entry.template_path, critics.template_path):
            key = f"critics.judges.{name}.template_path" if opt(entry.template_path) else "critics.template_path"
            raise fail(key, f"critic '{name}' has template: official; template_path replaces only the project "
                            "template (set template: project, or remove template_path)")
    _check_judge_template(c)
    benchmarks = enabled_benchmarks(c)
    _check_bon_judges(c, benchmarks)
    for name, spec in c.trainsets.variants.items():
        unknown = [d for d in spec.datasets or [] if d not in c.problems]
        if unknown:
            raise fail(f"trainsets.variants.{name}.datasets", f"unknown problem set(s) {unknown} (names under "
                                                             "`problems`)")
    _check_pool(c)
    ann = c.analysis.fig6_annotation
    if ann.labels and not ann.per_benchmark:
        raise fail("analysis.fig6_annotation.labels", "labels of an annotation sheet, but per_benchmark is 0 (no "
                                                      "sheet): set per_benchmark to the sheet's size per dataset")
    for i, d in enumerate(c.analysis.policy_flaw_datasets):
        if d not in c.problems and d not in benchmarks:
            raise fail(f"analysis.policy_flaw_datasets.{i}", f"'{d}' is not under `problems` or `benchmarks`")


def _check_pool(c) -> None:
    """trainsets.responses constructed: the audit's solutions are the pool (audit.problems needed);
    `exact` labels exist only there, the checker reads sampled responses only, and judge/consensus
    variants need the audit's judge."""
    constructed = c.trainsets.responses == "constructed"
    if constructed and not c.audit.problems:
        raise fail("audit.problems", "trainsets.responses is constructed: the pool is built from these problem "
                                     "sets, and there are none")
    for name, spec in c.trainsets.variants.items():
        if spec.enabled is False:
            continue
        key = f"trainsets.variants.{name}.source"
        if spec.source == "exact" and not constructed:
            raise fail(key, "'exact' labels are the constructed pool's step truth: set trainsets.responses: "
                            "constructed")
        if constructed and spec.source == "checker":
            raise fail(key, "'checker' labels the sampled responses; with trainsets.responses: constructed the "
                            "pool's exact labels are source 'exact'")
        if constructed and spec.source in ("judge", "consensus") and not c.audit.judge:
            raise fail(key, f"'{spec.source}' labels of the pool need the judge on it: set audit.judge: true")
        if constructed and spec.datasets:
            raise fail(f"trainsets.variants.{name}.datasets", "with trainsets.responses: constructed every "
                                                              "variant labels the one pool (no problem sets)")


def _check_analysis_n(c) -> None:
    n, main_n = c.analysis.n, bon_n(c)
    if n is not None and main_n is not None and n != main_n:
        # the main tables are at bon.n; bon.more_n's N are evaluated on their own benchmarks only
        raise fail("analysis.n", f"{n} differs from bon.n = {main_n}, the N of the main tables "
                                 "(leave analysis.n null to use it)")


def _check_hub_revisions(c) -> None:
    for name in sorted(used_models(c)):
        entry = c.models[name]
        if entry.source == "hub" and not entry.revision:
            # an unpinned Hub model would be whatever `main` is on the day each job starts
            raise fail(f"models.{name}.revision", f"Hub model '{entry.id}' is used but names no revision (a 40-hex "
                                                  "commit; `main` is resolved once by rule download_model)")


def _check_local_models(c) -> None:
    """A used `source: local` model is a directory now: a typo would pass the dry run and stop its job in
    transformers with a message about Hub repo ids."""
    for name in sorted(used_models(c)):
        entry = c.models[name]
        if entry.source != "local" or Path(entry.id).is_dir():
            continue
        what = "is not a directory" if Path(entry.id).exists() else "does not exist"
        hint = (" (a Hub id? set `source: hub` and a `revision`)"
                if entry.id.count("/") == 1 and not entry.id.startswith((".", "/", "~")) else "")
        raise fail(f"models.{name}.id", f"local model directory {entry.id!r} {what} (relative to the working "
                                        f"directory {os.getcwd()}){hint}")


def _check_scoring_backends(c) -> None:
    """Scoring backend vllm (prm_lessons.scoring.pooling) only where vLLM implements the PRM's architecture: the
    adapters qwen_prm / qwen_orm / trained, and trained PRMs only when they are saved in the released
    Qwen2ForProcessRewardModel layout (full fine-tuning; the embedded base is a Llama model)."""
    served = ", ".join(f"{a} ({arch})" for a, arch in VLLM_ARCHITECTURES.items())
    for name, e in c.prms.models.items():
        if e.backend == "vllm" and e.adapter not in VLLM_ARCHITECTURES:
            raise fail(f"prms.models.{name}.backend", f"vllm implements no architecture for adapter {e.adapter!r} "
                                                      f"(it serves {served}); use transformers")
    if c.prms.trained_backend == "vllm" and c.prms.include_trained:
        training = c.training
        if training.mode != "full":
            raise fail("prms.trained_backend", f"vllm serves trained PRMs saved as Qwen2ForProcessRewardModel, i.e. "
                                               f"training.mode full; training.mode is {training.mode!r} (its PRMs "
                                               "keep the project layout): use transformers")
        base = c.models.get(resolve_role(c, training.base))
        if base and base.source == "embedded":
            raise fail("prms.trained_backend", "the embedded base is a Llama model: its PRMs keep the project "
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


def _declared_bounds(params: dict, m) -> tuple[int | None, int | None]:
    """(num_labels, vocab_size) adapter declared's readout can be checked against before any job runs: the
    Qwen-style process_reward head built here has 2 labels; a local checkpoint's config.json says the rest."""
    local = m is not None and m.source == "local"
    mc = params.get("model_class")
    if mc == "process_reward":
        return (None if m is not None and m.trust_remote_code else 2), None
    if mc == "token_classification":
        return (_checkpoint_num_labels(m.id) if local else None), None
    return None, (_checkpoint_vocab_size(m.id) if local else None)


def _check_adapter_params(c) -> None:
    """What the params models cannot see alone (scoring.options): the combinations of adapter declared, and
    for a local model the label index (or label token id) against the checkpoint now rather than in the
    scoring job (a Hub model: checked when loaded)."""
    for name, e in c.prms.models.items():
        if e.adapter not in ("token_classification", "declared"):
            continue
        m = c.models.get(e.model)
        params = e.params.model_dump()
        local = m is not None and m.source == "local"
        try:
            if e.adapter == "declared":
                n, vocab = _declared_bounds(params, m)
                check_declared_params(params, n, vocab)
            else:
                n = _checkpoint_num_labels(m.id) if local else None
                check_token_classification_params(params, n)
        except ValueError as err:
            key, _, msg = str(err).partition(": ")
            # the checkpoint's own count said so: name the file it was read from
            read = local and ((e.adapter == "token_classification" and n is not None) or (
                params.get("model_class") != "process_reward" and ("num_labels" in msg or "vocab_size" in msg)))
            raise fail(f"prms.models.{name}.{key}", msg + (f" ({m.id}/config.json)" if read else "")) from None


def _check_analysis(c) -> None:
    """analysis.policy / second_policy name policies (bon.policies; none configured: the one policy named
    after roles.policy); table10's N is an N that Best-of-N evaluates and its benchmarks are evaluated at
    that N; chinese_benchmarks are benchmarks."""
    a, policies, benchmarks = c.analysis, policy_names(c), enabled_benchmarks(c)
    for key in ("policy", "second_policy"):
        if getattr(a, key) is not None and getattr(a, key) not in policies:
            raise fail(f"analysis.{key}", f"'{getattr(a, key)}' is not a Best-of-N policy (keys of bon.policies: "
                                          f"{', '.join(map(str, policies))})")
    if a.second_policy is not None and a.second_policy == (a.policy or policies[0]):
        raise fail("analysis.second_policy", f"'{a.second_policy}' is also analysis.policy (the policy of Tables "
                                             "3-8, 11, 13, 15); name another policy, or null")
    main_n = bon_n(c)
    covers = {int(e.n): list(e.benchmarks) for e in c.bon.more_n}
    t10 = a.table10
    n10 = t10.n or (max(covers) if covers else None)
    if t10.n is not None and t10.n != main_n and t10.n not in covers:
        raise fail("analysis.table10.n", f"{t10.n} is not an N that Best-of-N evaluates (bon.n = {main_n}, "
                                         f"bon.more_n: {sorted(covers) or 'none'})")
    for i, b in enumerate(t10.benchmarks):
        if n10 is None:
            raise fail("analysis.table10.benchmarks", "set, but no N to evaluate them at (bon.more_n is empty and "
                                                      "analysis.table10.n is null)")
        if b not in benchmarks:
            raise fail(f"analysis.table10.benchmarks.{i}", f"unknown benchmark '{b}' (names under `benchmarks`)")
        if n10 != main_n and b not in covers.get(n10, []):
            raise fail(f"analysis.table10.benchmarks.{i}", f"'{b}' is not evaluated at N = {n10} (add it to that "
                                                           "bon.more_n entry's benchmarks)")
    for i, b in enumerate(a.chinese_benchmarks):
        if b not in benchmarks:
            raise fail(f"analysis.chinese_benchmarks.{i}", f"unknown benchmark '{b}' (names under `benchmarks`)")


def _check_threshold_tuning(c) -> None:
    """processbench_eval.tune_on must be applicable to the run's ProcessBench cases: `dev` needs the
    constructed set's dev split, `gsm8k` a subset named gsm8k (hub/local/url: `subsets` null = all four)."""
    tune_on, pb = c.processbench_eval.tune_on, c.processbench
    constructed = pb.source == "constructed"
    if tune_on == "dev" and not (constructed and opt(pb.constructed.dev)):
        raise fail("processbench_eval.tune_on", "'dev' needs a dev split (processbench.constructed.dev); use "
                                                "crossfit, gsm8k or auto")
    if tune_on == "gsm8k":
        subsets = list(pb.constructed.subsets) if constructed else pb.subsets
        if subsets is not None and "gsm8k" not in subsets:
            where = "processbench.constructed.subsets" if constructed else "processbench.subsets"
            raise fail("processbench_eval.tune_on", f"'gsm8k' tunes on the GSM8K subset, which {where} lacks "
                                                    f"({', '.join(map(str, subsets)) or 'none'}); use dev, crossfit "
                                                    "or auto")


def _check_shard_prms(c) -> None:
    """prms.shard_prms names PRMs of this run (a typo would silently leave every PRM unsplit)."""
    known = run_prms(c)
    for i, name in enumerate(c.prms.shard_prms or []):
        if name not in known:
            raise fail(f"prms.shard_prms.{i}", f"'{name}' is not a PRM of this run: a trained variant "
                                               "(trainsets.variants, with prms.include_trained) or a prms.models entry")


def _check_search(c) -> None:
    """search.*: the policy is a model, the PRMs (and the ORM) are PRMs the workflow scores, the
    benchmarks are Best-of-N benchmarks."""
    search = c.search
    if search.policy is not None and search.policy not in c.models:
        raise fail("search.policy", f"model '{search.policy}' {_UNDEFINED}")
    known = run_prms(c)
    where = "a trained variant (trainsets.variants, with prms.include_trained) or a prms.models entry"
    for i, name in enumerate(search.prms):
        if name not in known:
            raise fail(f"search.prms.{i}", f"'{name}' is not a PRM of this run: {where}")
    if search.orm is not None and search.orm not in known:
        raise fail("search.orm", f"'{search.orm}' is not a PRM of this run: {where}")
    for i, name in enumerate(search.benchmarks):
        if name not in enabled_benchmarks(c):
            raise fail(f"search.benchmarks.{i}", f"unknown benchmark '{name}' (names under `benchmarks`)")


def _check_token_room(c) -> None:
    """A generation budget that leaves no token of the model's max_model_len for a prompt: the sampling
    jobs (every Best-of-N and data policy: prompt + max_tokens must fit, sampling.long_questions) and the
    search (prompt + path + max_step_tokens) would refuse or skip every problem, hours in. MC, the judge,
    the critics and the Best-of-N judges are not held to it: the engine stops their generations at
    max_model_len (vLLM, as ProcessBench's own script runs its critics: 8,192 tokens on 4,096-token models)."""
    budgets = []  # (key path of the budget, tokens, model name)
    policies = c.bon.policies
    for name, p in (policies.items() if policies else [(c.roles.policy, None)]):
        tokens = opt(p.max_tokens) if p is not None else None
        key = f"bon.policies.{name}.max_tokens" if tokens is not None else "sampling.max_tokens"
        model = (opt(p.model) if p is not None else None) or c.roles.policy
        budgets.append((key, tokens or c.sampling.max_tokens, model))
    for name, d in c.data_policies.items():
        tokens = opt(d.max_tokens)
        key = f"data_policies.{name}.max_tokens" if tokens is not None else "sampling.max_tokens"
        budgets.append((key, tokens or c.sampling.max_tokens, d.model))
    if c.search.prms:
        budgets.append(("search.max_step_tokens", c.search.max_step_tokens, c.search.policy or c.roles.policy))
    for key, tokens, model in budgets:
        entry = c.models.get(model)
        limit = entry.max_model_len if entry is not None else None
        if isinstance(tokens, int) and isinstance(limit, int) and tokens >= limit:
            raise fail(key, f"{tokens} tokens leave no room for a prompt in models.{model}.max_model_len {limit} "
                            "(prompt + generated tokens must fit in it): lower it, or raise max_model_len to at most "
                            "the model's own context length")


# what the primary policy takes from `sampling` and `benchmarks` (its samples are the labels', search's
# and the judges' too), so it may not set them itself
PRIMARY_POLICY_FIXED = ("temperature", "top_p", "max_tokens", "system_prompt", "benchmarks", "limit")


def _check_bon(c) -> None:
    """bon.policies: models under `models`, the first (primary) one roles.policy's with no overrides, known
    benchmarks; bon.more_n: N other than bon.n and each other, known benchmarks sampled by its policies."""
    bon, benchmarks = c.bon, enabled_benchmarks(c)
    for i, (name, p) in enumerate(bon.policies.items()):
        model = opt(p.model)
        if i > 0 and model is None:
            raise fail(f"bon.policies.{name}.model", "missing required value (only the primary policy, the first, "
                                                     "takes roles.policy)")
        if model is not None and model not in c.models:
            raise fail(f"bon.policies.{name}.model", f"model '{model}' {_UNDEFINED}")
        if i == 0 and model not in (None, c.roles.policy):
            raise fail(f"bon.policies.{name}.model", f"the first (primary) policy samples results/samples/, which "
                                                     f"the labels read too: it must be roles.policy "
                                                     f"('{c.roles.policy}')")
        for key in PRIMARY_POLICY_FIXED if i == 0 else ():
            if opt(getattr(p, key)) not in (None, []):
                raise fail(f"bon.policies.{name}.{key}", "the first (primary) policy takes its sampling from "
                                                         "`sampling` and samples every benchmark (its samples are "
                                                         "shared with the labels, search and judges): set it there, "
                                                         "or list another policy first")
        for j, b in enumerate(opt(p.benchmarks) or []):
            if b not in benchmarks:
                raise fail(f"bon.policies.{name}.benchmarks.{j}", f"unknown benchmark '{b}' (names under "
                                                                  "`benchmarks`)")
    names = policy_names(c)
    for i, p in enumerate(c.bon_judges.policies):
        if p not in names:
            raise fail(f"bon_judges.policies.{i}", f"'{p}' is not a policy (bon.policies: {', '.join(names)})")
    seen = {bon.n: "bon.n"}
    for i, e in enumerate(bon.more_n):
        if e.n in seen:
            raise fail(f"bon.more_n.{i}.n", f"N={e.n} is already evaluated ({seen[e.n]}): list each N once, with "
                                            "all its benchmarks")
        seen[e.n] = f"bon.more_n.{i}.n"
        for j, p in enumerate(opt(e.policies) or []):
            if p not in names:
                raise fail(f"bon.more_n.{i}.policies.{j}", f"'{p}' is not a policy (bon.policies: {', '.join(names)})")
        for j, b in enumerate(e.benchmarks):
            if b not in benchmarks:
                raise fail(f"bon.more_n.{i}.benchmarks.{j}", f"unknown benchmark '{b}' (names under `benchmarks`)")
            for p in opt(e.policies) or names[:1]:
                own = opt(bon.policies[p].benchmarks) if p in bon.policies else None
                if own and b not in own:
                    raise fail(f"bon.more_n.{i}.benchmarks.{j}", f"policy '{p}' does not sample '{b}' "
                                                                 f"(bon.policies.{p}.benchmarks)")


def _check_judge_template(c) -> None:
    """judge.template paper_app_c: the paper's prompt is in the paper's format (style paper), replaces the
    project's text (no template_path beside it) and is checked against at least one pinned value. A fallback copy
    of the source names, in its url, the commit it is pinned at."""
    judge = c.judge
    for i, fb in enumerate(judge.paper_template.fallbacks):
        if fb.commit.lower() not in fb.url.lower():
            raise fail(f"judge.paper_template.fallbacks.{i}.url", f"does not read the copy at its commit {fb.commit} "
                                                                 "(a branch's copy can change under the pin)")
    if judge.template != "paper_app_c":
        return
    if judge.style != "paper":
        raise fail("judge.template", "paper_app_c is the paper's prompt, written for its verdict format: set "
                                     "judge.style: paper (or template: project_paraphrase)")
    if judge.template_path:
        raise fail("judge.template_path", "judge.template is paper_app_c; template_path replaces only the "
                                          "project's paraphrase (set template: project_paraphrase, or remove it)")
    spec = judge.paper_template
    if not any(getattr(spec, k) for k in ("sha256", "git_blob_sha1", "text_sha256")):
        raise fail("judge.paper_template", "judge.template is paper_app_c but none of sha256, git_blob_sha1, "
                                           "text_sha256 is set: the prompt would be used unchecked")


def _check_bon_judges(c, benchmarks: dict) -> None:
    """bon_judges: judge models under `models`, benchmarks under `benchmarks` (its templates:
    _check_templates)."""
    bj = c.bon_judges
    for name, j in bj.judges.items():
        if j.model not in c.models:
            raise fail(f"bon_judges.judges.{name}.model", f"model '{j.model}' {_UNDEFINED}")
    for name, j in bj.judges.items():
        if opt(j.max_tokens, bj.max_tokens) == 0 and not bj.force_answer:
            key = f"bon_judges.judges.{name}.max_tokens" if opt(j.max_tokens) is not None else "bon_judges.max_tokens"
            raise fail(key, "0 (no free text) needs bon_judges.force_answer: every verdict would be unread")
    for i, b in enumerate(bj.benchmarks):
        if b not in benchmarks:
            raise fail(f"bon_judges.benchmarks.{i}", f"'{b}' is not a benchmark (names under `benchmarks`)")


def _check_template_file(path, kind: str, key: str) -> None:
    """A template the config names: the file exists (relative to the working directory; the official
    critique template is fetched by a rule and checked when read) and fills `kind`'s placeholders."""
    if not Path(path).is_file():
        if Path(path) == Path(OFFICIAL_CRITIC_TEMPLATE):
            return
        raise fail(key, f"no such file {path!r} (relative to the working directory)")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(key, f"{path}: cannot be read as UTF-8 text ({exc})") from None
    problem = template_problem(text, kind)
    if problem:
        raise fail(key, f"{path}: {problem}")


def _check_templates(c) -> None:
    """Every template the config can replace, checked before any job (so before any model loads)."""
    if c.judge.template_path:
        _check_template_file(c.judge.template_path, "judge", "judge.template_path")
    critics = c.critics
    if critics.template_path and critics.template == "project":
        _check_template_file(critics.template_path, "judge", "critics.template_path")
    for name, entry in critics.judges.items():
        if opt(entry.template_path) and opt(entry.template, critics.template) == "project":
            _check_template_file(entry.template_path, "judge", f"critics.judges.{name}.template_path")
    for key, kind in (("pointwise_template", "pointwise"), ("pairwise_template", "pairwise")):
        if getattr(c.bon_judges, key):
            _check_template_file(getattr(c.bon_judges, key), kind, f"bon_judges.{key}")
