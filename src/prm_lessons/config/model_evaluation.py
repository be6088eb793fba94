"""Sections of the evaluation: critics, bon, bon_judges, processbench_eval, search."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .base import MISSING, Name, Number, Section, Text, Threshold, fail, unique, url_problem


class CriticsJudgesEntry(Section):
    # a critic's own settings, without defaults: `critics.<key>` holds the defaults and
    # `critics.judges.<name>.<key>` the critic's own value (prm_lessons.plan.critic_specs merges them)
    model: str = Field(description='The model entry (under `models`) that critiques.')
    enabled: bool = Field(
        default=True,
        description=(
            'false drops the critic (no job, no Table 7 row) without deleting its entry, e.g. in an '
            'overlay: YAML files merge key by key, so an overlay cannot delete a key.'))
    n: Annotated[int, Field(ge=1)] | MISSING = Field(
        default=MISSING,
        description=(
            'Samples per case: 1 = greedy (temperature 0, top_p 1, no top_k); >1 = majority vote '
            "over n samples (ProcessBench's open-source critics: 8)."))
    temperature: Annotated[Number, Field(ge=0)] | MISSING = Field(
        default=MISSING,
        description=(
            'Sampling temperature when n > 1 (ProcessBench: 0.7 for the Qwen2.5-Math models, 1.0 for '
            'the others).'))
    top_p: Annotated[Number, Field(gt=0, le=1)] | MISSING = Field(
        default=MISSING,
        description='Nucleus top_p when n > 1 (ProcessBench: 0.8 for Qwen2.5-Math, 0.9 for the others).')
    top_k: Annotated[int, Field(ge=1)] | None | MISSING = Field(
        default=MISSING,
        description='Top-k cut when n > 1 (ProcessBench: 20 for Qwen2.5-Math); null = none.')
    max_tokens: Annotated[int, Field(ge=1)] | MISSING = Field(
        default=MISSING,
        description='Maximum critique tokens (ProcessBench: 8192; 32768 for QwQ).')
    seed: int | MISSING = Field(
        default=MISSING,
        description='Base seed (per-case, per-sample seeds are derived from it; ProcessBench: 42).')
    system_prompt: str | None | MISSING = Field(
        default=MISSING,
        description='System message of the critic chat (ProcessBench uses none).')
    template: Literal['project', 'official'] | MISSING = Field(
        default=MISSING,
        description=(
            "project: the project's ProcessBench-style text (or template_path); official: "
            "ProcessBench's critique_template.txt, fetched by rule critique_template "
            '(critics.official_template).'))
    template_path: Annotated[str, Field(min_length=1)] | None | MISSING = Field(
        default=MISSING,
        description=(
            'With template project: a file to use instead of the built-in text (placeholders '
            '{problem}, {tagged_response}).'))
    force_answer: bool | MISSING = Field(
        default=MISSING,
        description=(
            "Continue an answer-less critique with '\\boxed{' to read a verdict (decided by the "
            'lenient reader). Off in the official protocol: unparsable answers count as wrong '
            '(reported as n_unparsed).'))
    force_truncated: bool | MISSING = Field(
        default=MISSING,
        description=(
            'With force_answer, also force critiques cut off at max_tokens (off: they stay unparsed '
            'and are counted as n_truncated).'))
    parse: Literal['official', 'lenient'] | MISSING = Field(
        default=MISSING,
        description=(
            'official: ProcessBench run_eval.py exactly (last \\boxed{[^}]*} per sample, stripped; '
            "majority over the raw strings; int() of the winner, else wrong); lenient: the project's "
            "reader (nested braces, \\text{}, 'paragraph 2'; majority over the parsed integers)."))


class CriticsOfficialTemplate(Section):
    url: Annotated[str, Field(min_length=1)] = Field(
        default='https://raw.githubusercontent.com/QwenLM/ProcessBench/e8024636bcabdf8bd514440551b531d3f90dd18b/code/templates/critique_template.txt',
        description="The template's URL (QwenLM/ProcessBench at commit e8024636).")
    sha256: Annotated[str, Field(pattern='^[0-9a-fA-F]{64}$')] | None = Field(
        default='0e7dba24bfaa9dea379907e11b8dc701c6cd6e74453ab2ffc9b1d63237cc4434',
        description="sha256 of the file's bytes.")
    git_blob_sha1: Annotated[str, Field(pattern='^[0-9a-fA-F]{40}$')] | None = Field(
        default='6fef8988baf66e29e9a0393498b084ef8b6eddd8',
        description="The file's git blob id at the pinned commit (git ls-tree).")

    @model_validator(mode="after")
    def _url(self):
        if (problem := url_problem(self.url, bool(self.sha256 or self.git_blob_sha1))):
            raise fail("url", problem)
        return self


class Critics(Section):
    judges: dict[Name, CriticsJudgesEntry] = Field(
        default_factory=dict,
        description=(
            'Critics by name: {<name>: {model: <a `models` key>, and any key of this section but '
            '`judges` and `official_template`, overriding it}}. The name is the `judge` wildcard '
            '(results/critics/<name>/) and the ProcessBench row critic-<name>; two critics may share '
            'a model.'))
    shards: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Jobs per generating critic over ProcessBench case shards (prm_lessons.jobs.shards, as '
            'prms.shards: whole cases, round-robin in sorted id order): each job critiques one '
            'shard, a local merge per critic (rule merge_critic_processbench) joins them into the '
            'table one job would write and refuses a case in two shards, in none, or not in the '
            "cases; a killed job loses one shard. Each shard job asks for the critic's minutes "
            'divided by the shards (at least 60) × the attempt, within cluster.max_runtime. 1 = one '
            'job per critic writes the table.'))
    n: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Samples per case: 1 = greedy (temperature 0, top_p 1, no top_k); >1 = majority vote '
            "over n samples (ProcessBench's open-source critics: 8)."))
    temperature: Annotated[Number, Field(ge=0)] = Field(
        default=0.7,
        description=(
            'Sampling temperature when n > 1 (ProcessBench: 0.7 for the Qwen2.5-Math models, 1.0 for '
            'the others).'))
    top_p: Annotated[Number, Field(gt=0, le=1)] = Field(
        default=0.8,
        description='Nucleus top_p when n > 1 (ProcessBench: 0.8 for Qwen2.5-Math, 0.9 for the others).')
    top_k: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description='Top-k cut when n > 1 (ProcessBench: 20 for Qwen2.5-Math); null = none.')
    max_tokens: Annotated[int, Field(ge=1)] = Field(
        default=8192,
        description='Maximum critique tokens (ProcessBench: 8192; 32768 for QwQ).')
    seed: int = Field(
        default=42,
        description='Base seed (per-case, per-sample seeds are derived from it; ProcessBench: 42).')
    system_prompt: str | None = Field(
        default=None,
        description='System message of the critic chat (ProcessBench uses none).')
    template: Literal['project', 'official'] = Field(
        default='project',
        description=(
            "project: the project's ProcessBench-style text (or template_path); official: "
            "ProcessBench's critique_template.txt, fetched by rule critique_template "
            '(critics.official_template).'))
    template_path: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description=(
            'With template project: a file to use instead of the built-in text (placeholders '
            '{problem}, {tagged_response}).'))
    force_answer: bool = Field(
        default=False,
        description=(
            "Continue an answer-less critique with '\\boxed{' to read a verdict (decided by the "
            'lenient reader). Off in the official protocol: unparsable answers count as wrong '
            '(reported as n_unparsed).'))
    force_truncated: bool = Field(
        default=False,
        description=(
            'With force_answer, also force critiques cut off at max_tokens (off: they stay unparsed '
            'and are counted as n_truncated).'))
    parse: Literal['official', 'lenient'] = Field(
        default='lenient',
        description=(
            'official: ProcessBench run_eval.py exactly (last \\boxed{[^}]*} per sample, stripped; '
            "majority over the raw strings; int() of the winner, else wrong); lenient: the project's "
            "reader (nested braces, \\text{}, 'paragraph 2'; majority over the parsed integers)."))
    official_template: CriticsOfficialTemplate = Field(
        default_factory=CriticsOfficialTemplate,
        description=(
            "Where rule critique_template fetches ProcessBench's critique_template.txt (for critics "
            'with `template: official`) into resources/templates/: a URL at a pinned commit '
            'or a plain path (air-gapped sites, the rehearsal), and the checksums the copy must have '
            '(null: not checked).'))


class BonMoreNItem(Section):
    n: Annotated[int, Field(ge=1)] = Field(description="N; differs from bon.n and from every other entry's.")
    benchmarks: Annotated[Annotated[list[Name], unique], Field(min_length=1)] = Field(
        description='Benchmarks (names under `benchmarks`) evaluated at this N.')
    policies: Annotated[list[Name], unique] = Field(
        default_factory=list,
        description=(
            'Policies (names under bon.policies) evaluated at this N; [] = the primary policy only '
            "(the paper's Table 10 is the 7B policy's)."))


class BonPoliciesEntry(Section):
    model: Name | MISSING = Field(
        default=MISSING,
        description=(
            'Model entry (under `models`) that samples; required but for the primary, whose model is '
            'roles.policy (stated or not).'))
    label: Annotated[Text, Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description="Name shown in the tables (default: the policy's name).")
    temperature: Annotated[Number, Field(ge=0)] | MISSING = Field(
        default=MISSING,
        description='Overrides sampling.temperature for this policy (not the primary).')
    top_p: Annotated[Number, Field(gt=0, le=1)] | MISSING = Field(
        default=MISSING,
        description='Overrides sampling.top_p for this policy (not the primary).')
    max_tokens: Annotated[int, Field(ge=1)] | MISSING = Field(
        default=MISSING,
        description='Overrides sampling.max_tokens for this policy (not the primary).')
    system_prompt: str | MISSING = Field(
        default=MISSING,
        description='Overrides sampling.system_prompt for this policy (not the primary).')
    benchmarks: Annotated[list[Name], unique] = Field(
        default_factory=list,
        description='Benchmarks this policy samples (not the primary, which samples every one); [] = all.')
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description='Sample only the first `limit` problems of each benchmark (not the primary); null = all.')
    prms: Annotated[list[Name], unique] = Field(
        default_factory=list,
        description=(
            "PRMs that score this policy's samples (not the primary, which every PRM scores); [] = "
            'every PRM. Tables 9, 12, 14 and 16 then have rows for these PRMs only.'))


class BonBootstrap(Section):
    samples: Annotated[int, Field(ge=0, le=100000)] = Field(
        default=1000,
        description=(
            'Resamples (0 = no intervals; at most 100,000: each holds one mean per benchmark and PRM '
            'in memory).'))
    seed: int = Field(default=0, description='Resampling seed (fixed, so intervals are reproducible).')
    confidence: Annotated[Number, Field(gt=0, lt=1)] = Field(default=0.95, description='Interval coverage.')


class Bon(Section):
    n: Annotated[int, Field(ge=1)] = Field(
        default=8,
        description=(
            'N: responses sampled per benchmark problem; metrics use the first N by sample_idx '
            '(paper: 8; 64 in App. B.4).'))
    aggregations: Annotated[list[Literal['product', 'min', 'last', 'mean']], Field(min_length=1)] = Field(
        default_factory=lambda: ['product', 'min', 'last'],
        validate_default=True,
        description=(
            "Response score from step scores: product (the paper's default), min, last, mean; each "
            'gives prm_<aggregation>.'))
    more_n: list[BonMoreNItem] = Field(
        default_factory=list,
        description=(
            'Further N (paper: 64 in App. B.4, Table 10), each on its own benchmarks. A benchmark is '
            'sampled once, at the largest N that covers it (bon.n covers every benchmark); every N '
            'is evaluated on the first n samples (sample_idx < n) of each problem: prefixes of the '
            'same draws, never new ones. bon.csv and bon_baselines.csv get rows for every N.'))
    policies: dict[Name, BonPoliciesEntry] = Field(
        default_factory=dict,
        description=(
            'Policies whose samples every PRM scores (paper: Qwen2.5-Math-7B-Instruct, Tables '
            '6/13/15, and Qwen2.5-Math-72B-Instruct, Tables 9/12/14/16), by name (the `policy` '
            'column of bon.csv and bon_baselines.csv). The first is the primary policy: it is '
            "roles.policy's model with the `sampling` settings, and its files are results/samples/, "
            'results/scores/{prm}/, results/metrics/bon/ (what the labels, search, judges and '
            "figures read); another policy's files live under results/policies/{name}/. {} = one "
            'policy named after roles.policy.'))
    maj_grouping: Literal['harness', 'exact', 'normalized', 'math_verify'] = Field(
        default='harness',
        description=(
            "How maj@N groups answers: harness (the Qwen2.5-Math harness's strip_string form, applied "
            'twice as on the predictions it records, an empty answer votes, as rm_maj_eval.py), exact '
            '(string as is), normalized (whitespace, surrounding $ and trailing period removed, '
            "lower-cased), math_verify (math-verify equivalence to each group's first answer)."))
    bootstrap: BonBootstrap = Field(
        default_factory=BonBootstrap,
        description='Percentile bootstrap over problems (within each benchmark) for every BoN number.')


class BonJudgesJudgesEntry(Section):
    model: Name = Field(description='Model entry (under `models`) that judges.')
    enabled: bool = Field(
        default=True,
        description=(
            'false drops the judge (no job, no judge_bon.csv or Table 11/12 row) without deleting '
            'its entry, e.g. in an overlay: YAML files merge key by key, so an overlay cannot delete '
            'a key.'))
    temperature: Annotated[Number, Field(ge=0)] | MISSING = Field(
        default=MISSING,
        description='Overrides bon_judges.temperature for this judge.')
    top_p: Annotated[Number, Field(gt=0, le=1)] | MISSING = Field(
        default=MISSING,
        description='Overrides bon_judges.top_p for this judge.')
    max_tokens: Annotated[int, Field(ge=0)] | MISSING = Field(
        default=MISSING,
        description='Overrides bon_judges.max_tokens for this judge (QwQ needs long budgets).')
    system_prompt: str | None | MISSING = Field(
        default=MISSING,
        description='Overrides bon_judges.system_prompt for this judge.')


class BonJudges(Section):
    judges: dict[Name, BonJudgesJudgesEntry] = Field(
        default_factory=dict,
        description=(
            'Judges by name (the name is the row of judge_bon.csv and Table 11: <mode>-<name>); {} = '
            'none.'))
    shards: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Jobs per (policy, judge, mode) over problem shards (prm_lessons.jobs.shards, as prms.shards: '
            'whole problems of each benchmark, round-robin in sorted problem_id order, chosen after '
            '`limit`): each job judges one shard of every benchmark, a local merge (rule '
            'merge_bon_judge) joins them into the tables one job would write and refuses a problem '
            'in two shards, in none, or not judged; a killed job loses one shard. Each shard job '
            "asks for the judge's minutes divided by the shards (at least 60) × the attempt, within "
            'cluster.max_runtime. 1 = one job per (policy, judge, mode) writes the tables.'))
    modes: Annotated[Annotated[list[Literal['pointwise', 'pairwise']], unique], Field(min_length=1)] = Field(
        default_factory=lambda: ['pointwise', 'pairwise'],
        validate_default=True,
        description='Judging modes run for every judge.')
    benchmarks: Annotated[list[Name], unique] = Field(
        default_factory=list,
        description='Benchmarks (names under `benchmarks`) judged; [] = every Best-of-N benchmark.')
    policies: Annotated[list[Name], unique] = Field(
        default_factory=list,
        description=(
            'Best-of-N policies (names under bon.policies) whose samples are judged (Table 11: the '
            "primary's, Table 12: the second's); [] = every policy."))
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Judge only the first `limit` problems (by problem_id) of each benchmark; null = all. '
            'pass@N and maj@N of judge_bon.csv are on the same problems.'))
    temperature: Annotated[Number, Field(ge=0)] = Field(
        default=0.0,
        description='Sampling temperature of every judgement (0 = greedy; one sample per judgement).')
    top_p: Annotated[Number, Field(gt=0, le=1)] = Field(
        default=1.0,
        description='Nucleus top_p when temperature > 0.')
    max_tokens: Annotated[int, Field(ge=0)] = Field(
        default=4096,
        description=(
            'Maximum tokens of one judgement (pointwise: one response; pairwise: one comparison). 0: '
            'no free text, the verdict is forced straight away (needs force_answer; for a small '
            'judge whose own text carries no verdict).'))
    seed: int = Field(
        default=0,
        description=(
            "Base seed; every request's seed is derived from it, the mode, the problem id and the "
            'sample indices.'))
    system_prompt: str | None = Field(
        default=None,
        description="System message of the judge's chat (null: none; the chat template's default applies).")
    pointwise_template: str | None = Field(
        default=None,
        description=(
            'A file replacing the built-in pointwise prompt '
            '(src/prm_lessons/prompts/bon_judge_pointwise.txt); placeholders {problem}, '
            '{tagged_response}, {n_steps}; literal braces doubled.'))
    pairwise_template: str | None = Field(
        default=None,
        description=(
            'A file replacing the built-in pairwise prompt '
            '(src/prm_lessons/prompts/bon_judge_pairwise.txt); placeholders {problem}, {response_a}, '
            '{response_b}; literal braces doubled.'))
    force_answer: bool = Field(
        default=True,
        description=(
            'Continue a judgement the judge ended without a complete verdict with the verdict '
            "opening ('Verdicts:' / '\\boxed{'), regex-constrained on vLLM; counted as n_forced. Off: "
            'unread verdicts resolve by the documented rules (pointwise: an unread step counts '
            'incorrect; pairwise: Response A advances).'))
    force_truncated: bool = Field(
        default=False,
        description=(
            'With force_answer, also force judgements cut off at max_tokens (off: they stay unread, '
            'counted as n_truncated).'))
    guided: bool = Field(
        default=True,
        description=(
            'Regex-constrained forced verdicts where the engine is vLLM (structured outputs); off: '
            'plain greedy continuation.'))


class ProcessbenchEvalBootstrap(Section):
    samples: Annotated[int, Field(ge=0, le=100000)] = Field(
        default=1000,
        description=(
            'Resamples (0 = no intervals; at most 100,000: each holds one mean per benchmark and PRM '
            'in memory).'))
    seed: int = Field(default=0, description='Resampling seed.')
    confidence: Annotated[Number, Field(gt=0, lt=1)] = Field(default=0.95, description='Interval coverage.')


class ProcessbenchEval(Section):
    threshold: Threshold = Field(
        default=0.5,
        description=(
            "A step is erroneous when its score is below this; a number, or 'tune' = the threshold "
            'chosen by `tune_on`. Per-model override: prms.models.<name>.threshold.'))
    tune_on: Literal['auto', 'dev', 'crossfit', 'gsm8k'] = Field(
        default='auto',
        description=(
            "How `threshold: tune` picks the threshold (metrics `tuned_on`; Table 7's notes): dev = "
            'the best average F1 on the dev split (processbench.constructed.dev); crossfit = '
            'cross-fitted over two folds of the cases (each fold scored with the threshold tuned on '
            'the other: no case scored with a threshold tuned on itself; the honest option without a '
            "dev split); gsm8k = ProcessBench §4.1, the paper's: the best F1 on the evaluated GSM8K "
            'subset, in-sample, applied to every subset (needs a ProcessBench subset named gsm8k); '
            'auto = dev where the run has a dev split, else crossfit.'))
    bootstrap: ProcessbenchEvalBootstrap = Field(
        default_factory=ProcessbenchEvalBootstrap,
        description=(
            'Bootstrap over cases (error and correct cases resampled separately within each subset) '
            'for error_acc, correct_acc, F1 and the average F1.'))


class Search(Section):
    policy: Name | None = Field(
        default=None,
        description=(
            'Model (a name under `models`) that proposes the steps and samples the baselines; null = '
            'roles.policy. With roles.policy and n = bon.n the Best-of-N samples (results/samples) '
            'and scores are reused.'))
    prms: Annotated[list[Name], unique] = Field(
        default_factory=list,
        description=(
            'PRMs that guide the search, one search job each: trained variants (trainsets.variants) '
            'or prms.models names. Empty = no search (no rules, no Table 8).'))
    benchmarks: Annotated[list[Name], unique] = Field(
        default_factory=list,
        description='Benchmarks searched (names under `benchmarks`); empty = all Best-of-N benchmarks.')
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Problems per benchmark searched (the first ones); null = all. The baselines use the '
            'same problems.'))
    candidates: Annotated[int, Field(ge=1)] = Field(
        default=8,
        description='K: candidate next steps sampled per step (the paper: 8).')
    temperature: Annotated[Number, Field(ge=0)] = Field(
        default=1.0,
        description='Sampling temperature of the candidates (the paper: 1.0).')
    top_p: Annotated[Number, Field(gt=0, le=1)] = Field(
        default=1.0,
        description='Nucleus sampling of the candidates (the paper: 1.0).')
    max_step_tokens: Annotated[int, Field(ge=1)] = Field(
        default=512,
        description=(
            'Token budget of one candidate step (a candidate cut here is still a candidate; it does '
            'not end the response).'))
    max_steps: Annotated[int, Field(ge=1)] = Field(
        default=40,
        description=(
            'Steps kept at most; a problem that reaches it without an end has status max_steps '
            '(counted, graded as is).'))
    max_tokens: Annotated[int, Field(ge=1)] = Field(
        default=2048,
        description=(
            'Policy tokens of the kept path at most; reaching it without an end gives status '
            'max_tokens (counted, graded as is).'))
    seed: int = Field(
        default=0,
        description=(
            'Search seed: the candidates of a problem at a depth are sampled with derive_seed(seed, '
            'problem_id, depth).'))
    batch_size: Annotated[int, Field(ge=1)] = Field(
        default=64,
        description=(
            'Problems searched together: each depth is one engine call of batch_size x candidates '
            'prompts and one scoring pass; the PRM keeps a prefix KV cache per problem of the batch '
            '(memory).'))
    shards: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Jobs per guiding PRM over problem shards (whole problems, prm_lessons.jobs.shards.in_shard, '
            'after `limit`): each searches its shard of every benchmark, a local merge per PRM '
            'writes the tables one job would (same files, columns, row order) and refuses problems '
            'in two shards, in none or not searched. A killed job loses only its shard; each asks '
            "for the PRM's runtime divided over the shards (at least 2 h). 1 = one job per PRM."))
    gpu_memory_utilization: Annotated[Number, Field(gt=0, le=0.95)] | None = Field(
        default=0.4,
        description=(
            "vLLM's share of GPU memory in a search job, which holds the policy and the PRM together "
            "(the PRM takes the rest: device_map auto counts free memory); null = the policy entry's "
            'own.'))
    scoring: Literal['auto', 'incremental', 'full'] = Field(
        default='auto',
        description=(
            "How candidates are scored: auto (incremental on the prefix's KV cache where the PRM "
            'allows it: trained PRMs and qwen_prm heads built here; else full re-scoring), '
            'incremental (error where not possible), full (prefix + candidate re-scored, the naive '
            'way).'))
    n: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'N of the same-policy baselines (pass@N, maj@N, orm@N; pass@1 = the mean correctness of '
            'these N): responses sampled per searched problem with the `sampling` settings (paper: '
            '8); null = bon.n.'))
    orm: Name | None = Field(
        default=None,
        description=(
            'A PRM name (trained variant or prms.models entry; an outcome RM gives orm@N) that '
            'scores the N baseline samples; null = no orm@N row.'))
    pass1: Literal['mean', 'greedy'] = Field(
        default='mean',
        description=(
            "How Table 8's pass@1 is measured: `mean` = the mean correctness of the N baseline "
            'samples (the expected pass@1 at the sampling settings; no extra generation), `greedy` = '
            'one greedy response per problem (temperature 0; rule search_greedy_samples). The paper '
            'does not say; its published pass@1 cells all lie on the one-sample-per-problem grid, '
            'which favours greedy (INFERRED; config/paper.yaml).'))
