"""Sections of the training labels and sets: mc, judge, human, math_shepherd, process_check, consensus, audit, \
trainsets."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .base import MISSING, HubId, Name, Number, Section, fail, then, url_problem, when
from .model_common import Dataset


class Mc(Section):
    completions: Annotated[int, Field(ge=1)] = Field(default=8, description='K, completions per step (the paper: 8).')
    temperature: Annotated[Number, Field(ge=0)] = Field(default=0.7, description='Completer sampling temperature.')
    top_p: Annotated[Number, Field(gt=0, le=1)] = Field(default=0.8, description='Completer nucleus sampling top_p.')
    max_tokens: Annotated[int, Field(ge=1)] = Field(
        default=2048,
        description=(
            'Maximum tokens per completion; a completion that hits it is graded as it stands '
            '(usually no answer → failure) and counted.'))
    seed: int = Field(
        default=0,
        description=(
            'Base seed; completion j of step i of a response has its own seed derived from (seed, '
            'problem_id, sample_idx, i, j), so every protocol draws identical completions.'))
    protocol: Literal['early', 'naive', 'binary'] = Field(
        default='early',
        description=(
            'early: generate for a step only while the configured labels can still change (hard t=0: '
            'stop at the first success; soft: all K) and never past the first negative step; naive: '
            'K completions for every step (the cost baseline); binary: OmegaPRM-style bisection for '
            'the first negative step, ASSUMING MONOTONE LABELS (skipped earlier steps are inferred '
            'positive), hard labels at one threshold only.'))
    round_size: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Completions per active step per round; each round is one batched engine call over all '
            'active responses. 1 = fewest tokens, larger = fewer rounds.'))
    lanes: Annotated[int, Field(ge=1, le=16)] = Field(
        default=1,
        description=(
            "Grading overlapped with generation: each response's next round depends on its grades, so "
            'with 2 or more the responses are pipelined in about `lanes` engine calls, each graded (CPU, '
            'grading.workers) in a background thread while the engine generates the next; the engine '
            "waits only when no response's grades are in. 1 = sequential rounds (one engine call per "
            'round, graded before the next): the embedded default, where grading is ~2 % of the MC '
            'wall and halving the engine calls costs more than it hides (docs/measurements.md); '
            'config/paper.yaml: 2. The labels are the same for every value (per-completion seeds; '
            'sampling.seed_mode per_request). The job records generate, grade and wait seconds and the '
            "engine's idle share in the mc table's summary and its tokens sidecar."))
    last_step: Literal['rollout', 'answer'] = Field(
        default='answer',
        description=(
            "answer: the step that states the final answer is labelled by the response's own grade "
            '(positive iff the final answer is correct; no completions): a step stating a wrong final '
            'answer is wrong. rollout: the last step is completed like any other, which only measures '
            'whether the completer overwrites a stated answer (a wrong final answer is labelled positive '
            'when one completion rewrites it; INFERRED: the paper says only "8 independent completions '
            'starting from this step"). A response without a grade (the label audit\'s slice) is rolled '
            'out either way.'))
    shards: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Jobs per problem set (whole problems per shard; the most, with problems_per_shard); a '
            'killed job loses only its shard.'))
    problems_per_shard: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Problems per MC job, as sampling.problems_per_shard: a set gets ceil(problems / '
            'problems_per_shard) jobs, at least 1 and at most `shards`; null = every set gets '
            '`shards` jobs.'))


class JudgePaperTemplateFallback(Section):
    url: Annotated[str, Field(min_length=1)] = Field(
        description=(
            "A public copy of the paper's source (or of the prompt as plain text) at a fixed commit, e.g. a raw "
            "GitHub file; tried when the primary url cannot be fetched."))
    commit: Annotated[str, Field(pattern='^[0-9a-fA-F]{40}$')] = Field(
        description="The commit the url reads the copy at (its 40 hex digits appear in the url).")
    sha256: Annotated[str, Field(pattern='^[0-9a-fA-F]{64}$')] = Field(
        description="sha256 of the copy's bytes (always checked: a fallback is never used unpinned).")

    @model_validator(mode="after")
    def _url(self):
        if (problem := url_problem(self.url, True)):
            raise fail("url", problem)
        return self


class JudgePaperTemplate(Section):
    url: Annotated[str, Field(min_length=1)] = Field(
        default='https://arxiv.org/e-print/2501.07301v2',
        description="The paper's LaTeX source (arXiv e-print of version 2, a tar.gz).")
    sha256: Annotated[str, Field(pattern='^[0-9a-fA-F]{64}$')] | None = Field(
        default=None,
        description="sha256 of the source's bytes; null: not checked (the log prints it, to pin here).")
    git_blob_sha1: Annotated[str, Field(pattern='^[0-9a-fA-F]{40}$')] | None = Field(
        default=None,
        description="The source's git blob id, for a copy kept in a git repository; null: not checked.")
    text_sha256: Annotated[str, Field(pattern='^[0-9a-fA-F]{64}$')] | None = Field(
        default='43c2d464e9ab03d11b4183835070e0715f22932f4ed47cd3120e7ea54d3c9df5',
        description=(
            "sha256 of the extracted prompt's words (every whitespace run as one space; "
            'prm_lessons.labels.paper_prompt.words_sha256): the words App. C prints (taken from the '
            "text of the v2 PDF, pp. 16-18), whatever the source's line layout. null: not checked."))
    fallbacks: list[JudgePaperTemplateFallback] = Field(
        default_factory=list,
        description=(
            "Pinned public copies tried in order when the url cannot be fetched (no network to arXiv, an "
            "outage): each read at a commit and checked against its sha256; the prompt's words are checked "
            "against text_sha256 as from the url. A url that is fetched but fails its checks is not replaced."))

    @model_validator(mode="after")
    def _url(self):
        if (problem := url_problem(self.url, bool(self.sha256 or self.git_blob_sha1 or self.text_sha256))):
            raise fail("url", problem)
        return self


class Judge(Section):
    style: Literal['paper', 'processbench'] = Field(
        default='paper',
        description=(
            "The verdict format. paper: the paper's judge format (1-indexed <paragraph_i> tags, an "
            '<analysis_i> per paragraph up to the first error, '
            '<conclusion>Correct/Incorrect</conclusion>; Incorrect → the last analysed paragraph); '
            'processbench: the ProcessBench critic format (0-indexed paragraphs, earliest error '
            'index in \\boxed{}, -1 for none). The prompt text is `template`.'))
    template: Literal['project_paraphrase', 'paper_app_c'] = Field(
        default='project_paraphrase',
        description=(
            "The prompt text. project_paraphrase: the project's own text for the style "
            "(prm_lessons.labels.judge; written for this project, not the paper's words), or "
            'template_path; paper_app_c: the prompt the paper prints in App. C, read by rule '
            'judge_template from the source judge.paper_template names (never shipped; needs style '
            'paper).'))
    template_path: str | None = Field(
        default=None,
        description=(
            'With template project_paraphrase: a file with another prompt text using the same '
            'placeholders ({tagged_problem}/{problem}, {tagged_response}), e.g. the official '
            'ProcessBench critique_template.txt.'))
    paper_template: JudgePaperTemplate = Field(
        default_factory=JudgePaperTemplate,
        description=(
            "Where rule judge_template gets the paper's App. C prompt (judge.template paper_app_c): "
            "the paper's source at a pinned version, or a site's own copy (a plain path: a "
            '.tex, a tar.gz of LaTeX, or the prompt as plain text), and what the copy must match '
            "(null: not checked; the rule's log gives the value to pin). With template paper_app_c "
            'at least one of the three checks must be set.'))
    system_prompt: str | None = Field(
        default=None,
        description="System message for the judge chat; null uses the chat template's default.")
    n: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Verdict samples per response; >1 takes the majority of the parsed verdicts '
            '(ProcessBench: 8).'))
    temperature: Annotated[Number, Field(ge=0)] = Field(
        default=0.0,
        description='0 = greedy (use with n = 1); voting needs > 0.')
    top_p: Annotated[Number, Field(gt=0, le=1)] = Field(default=1.0, description='Nucleus sampling top_p for voting.')
    max_tokens: Annotated[int, Field(ge=1)] = Field(default=4096, description='Maximum tokens per verdict.')
    seed: int = Field(
        default=0,
        description=(
            'Base seed; verdict sample j of a response has a seed derived from (seed, response id, '
            'j).'))
    force_answer: bool = Field(
        default=True,
        description=(
            "When a verdict has no readable answer, continue the judge's own text with the answer "
            'opening (\\boxed{ / <conclusion>) for a few tokens and parse again.'))
    force_truncated: bool = Field(
        default=False,
        description=(
            'Also force a verdict from a sample cut off at max_tokens. Off: such a sample stopped '
            'mid-analysis, so it stays unparsed (status truncated, counted as n_truncated) instead '
            'of getting an invented first-error location.'))
    guided: bool = Field(
        default=True,
        description=(
            'Constrain that forced continuation with a regex where the engine is vLLM (structured '
            'outputs); other engines parse it as free text.'))
    shards: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Jobs per problem set (the most, with problems_per_shard); a killed job loses only its '
            'shard.'))
    problems_per_shard: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Problems per judge job, as sampling.problems_per_shard: a set gets ceil(problems / '
            'problems_per_shard) jobs, at least 1 and at most `shards`; null = every set gets '
            '`shards` jobs.'))
    reference: bool = Field(
        default=False,
        description=(
            'Reference-guided judge: the prompt also shows a correct solution of the problem after '
            'it (its gold steps, else its gold answer; prm_lessons.labels.judge.reference_text), '
            'marked as a comparison and not the text to check. Rule judge then reads '
            'results/problems/{dataset}.parquet and stops with an error naming any response whose '
            "problem has neither. Off (the paper's judge is reference-free): the prompt is the "
            'reference-free one, byte for byte.'))
    processbench_cases: Annotated[int, Field(ge=0)] = Field(
        default=0,
        description=(
            'Rule judge_processbench: this judge (every key of this section, its own prompt '
            'included) scored as a ProcessBench critic on this many ProcessBench cases (a slice '
            'stratified by subset and erroneous/correct, by a hash of the id; 3400 or more = every '
            'case of the official set), with the paired F1 difference to the structure baseline → '
            'results/tables/judge_processbench.csv and the lesson-2 verdict in '
            'results/metrics/judge_processbench.json. A constructed set gets two jobs, '
            'reference-free and reference-guided (its problems hold the gold solutions); a fetched '
            'one (processbench.source url/hub) only the reference-free one, the judge as it labels. '
            'Cost: at most (jobs) x cases x n x (max_tokens + 8) generated tokens. 0 = off.'))


class HumanPrm800k(Section):
    model_config = when(source={"local": ["path"]})
    source: Literal['hub', 'local'] = Field(
        default='hub',
        description='hub: download from a Hugging Face dataset repository; local: a directory.')
    id: HubId = Field(
        default='tasksource/PRM800K',
        description=(
            'Hub dataset holding the official files (a mirror of github.com/openai/prm800k '
            'prm800k/data).'))
    revision: Annotated[str, Field(pattern='^[^\\s\\x00-\\x1f\\x7f]+$')] | None = Field(
        default='547b19506677a59037ee888838834b65e9b1ddd4',
        description='Hub revision (pinned for reproducibility).')
    path: str = Field(default='', description='Directory with the files (source local).')
    phases: list[Literal[1, 2]] = Field(
        default_factory=lambda: [1, 2],
        validate_default=True,
        description='PRM800K phases to convert.')
    split: Literal['train', 'test'] = Field(default='train', description='PRM800K split.')
    file_pattern: str = Field(default='phase{phase}_{split}.jsonl', description='File name for a phase and split.')
    expand: Literal['chosen', 'alternatives'] = Field(
        default='chosen',
        description=(
            "chosen: one instance per solution, the labeller's trajectory (~98k from phase 2). "
            'alternatives: also one instance per other rated completion at each step the trajectory '
            'reaches (the chosen steps before it + that completion, ending at it), identical '
            "(question, steps) removed; the paper's ~264k is INFERRED to come from such an expansion."))


    @model_validator(mode="after")
    def _local_path(self):
        if self.source == "local":
            then(self, "source: local", required=["path"], nonempty=["path"])
        return self



class HumanConstruction(Section):
    corrupted_per_problem: Annotated[int, Field(ge=0)] = Field(
        default=1,
        description='Solutions with one injected error per problem.')
    include_gold: bool = Field(default=True, description='Also use the untouched gold solution (all steps positive).')
    keep_final_answer: bool = Field(
        default=False,
        description=(
            'Errors that leave the final answer unchanged (false: the error propagates to the '
            'answer). Ignored when keep_answer_fraction is set.'))
    keep_answer_fraction: Annotated[Number, Field(ge=0, le=1)] | None = Field(
        default=None,
        description=(
            'Errors spread evenly over every step position of each solution, this share of them '
            'keeping the final answer (correct answer, flawed process); null = errors only in '
            'equation steps, keep_final_answer for all.'))
    seed: int = Field(default=0, description='Seed for placing the errors.')
    problems: dict[Name, Dataset] = Field(
        default_factory=dict,
        description=(
            'Problem sets whose gold solutions are labelled (name -> dataset entry, loaded by rule '
            'human_labels itself, never sampled); empty = the `problems` sets. Labels by '
            'construction cost no model calls, so this set can be large (the embedded default: '
            '~1,000 instances from both generators).'))


class Human(Section):
    source: Literal['construction', 'prm800k'] = Field(
        default='construction',
        description=(
            'construction: gold solutions of the training problems with one injected error (its step '
            'known exactly) plus the untouched gold solutions, all positive; prm800k: the PRM800K '
            'human ratings.'))
    neutral: Literal['positive', 'negative'] = Field(
        default='positive',
        description='PRM800K rating 0: positive (Qwen2.5-Math-7B-PRM800K baseline) or negative.')
    keep_finish_reasons: list[str] = Field(
        default_factory=lambda: ['solution', 'found_error'],
        validate_default=True,
        description=(
            'PRM800K solutions kept by label.finish_reason (bad_problem / give_up dropped); empty '
            'keeps all.'))
    skip_quality_control: bool = Field(
        default=True,
        description='Drop PRM800K quality-control and initial-screening copies.')
    prm800k: HumanPrm800k = Field(
        default_factory=HumanPrm800k,
        description='Where the official PRM800K jsonl files are.')
    construction: HumanConstruction = Field(
        default_factory=HumanConstruction,
        description='Labels by construction (source construction).')


class MathShepherd(Section):
    model_config = when(source={"local": ["path"]})
    source: Literal['hub', 'local'] = Field(
        default='hub',
        description=(
            'hub: download `file` from the Hugging Face dataset repository `id` at `revision`; '
            'local: the file at `path`.'))
    id: HubId = Field(default='peiyi9979/Math-Shepherd', description='Hub dataset repository.')
    revision: Annotated[str, Field(pattern='^[^\\s\\x00-\\x1f\\x7f]+$')] | None = Field(
        default='ae6b0c54fca9fa26096f7de175c747e4b262e01a',
        description=(
            "Hub revision (pinned: the repository's latest commit as of 2026-11, whose tree holds "
            'math-shepherd.jsonl).'))
    file: Annotated[str, Field(min_length=1)] = Field(
        default='math-shepherd.jsonl',
        description='File in the repository (.jsonl, .jsonl.gz or .parquet).')
    path: str = Field(
        default='',
        description='Local file (source local): .jsonl, .jsonl.gz or .parquet in the same format.')
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description='Read only the first rows of the file (null: all, ~445k).')
    strip_step_prefix: bool = Field(
        default=True,
        description=(
            'Remove the `Step k:` that starts each step (INFERRED: the policy responses the PRMs '
            'score have no such prefix; the paper does not say).'))


    @model_validator(mode="after")
    def _local_path(self):
        if self.source == "local":
            then(self, "source: local", required=["path"], nonempty=["path"])
        return self



class ProcessCheck(Section):
    enabled: bool = Field(
        default=False,
        description=(
            "Run the checker's rules (the embedded config: true; the paper config: false, its data "
            'is not arithmetic expressions). A `checker` training-set variant needs it.'))


class Consensus(Section):
    threshold: Annotated[Number, Field(ge=0, le=1)] = Field(
        default=0.0,
        description="MC hard-label threshold that locates MC's first error (the paper: 0).")


class Audit(Section):
    enabled: bool = Field(
        default=False,
        description=(
            'Make results/tables/label_audit.csv a target of `all` (on whenever trainsets.responses is '
            'constructed: the audit\'s solutions are then the training pool).'))
    per_cell: Annotated[int, Field(ge=1)] = Field(
        default=6,
        description=(
            'Solutions per generator and kind (gold / error / keep), each from a problem of its own; '
            'the model cost grows with it (MC: per_cell × 3 kinds × generators × steps × '
            'completions). With trainsets.responses constructed this sizes the training pool.'))
    judge: bool = Field(
        default=True,
        description=(
            'Run the LLM judge on the solutions too (its labels: the audit\'s judge rows and, with '
            'trainsets.responses constructed, the judge and consensus variants); false: MC only.'))
    completions: Annotated[int, Field(ge=1)] = Field(
        default=8,
        description=(
            "MC completions K per step, all K kept for every step up to the first step with no "
            "success (mc.protocol early with soft labels; later steps are negative whatever the "
            "threshold), so the sweep's thresholds j/K and the K' subsets (the powers of two below K, "
            'and K) are all read from the same completions.'))
    seed: int = Field(
        default=0,
        description=(
            "Seed for choosing the slice's problems and placing its errors (the completions use "
            'mc.seed, the judge judge.seed).'))
    shards: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            "Jobs the audit's labelling (MC + judge, one engine each) is split into, by problem; a "
            'killed job loses only its shard.'))
    problems: dict[Name, Dataset] = Field(
        default_factory=dict,
        description=(
            'Problem sets the slice is built from (name → dataset entry with gold step-by-step '
            'solutions, loaded by rule audit_slice, never sampled); one generator each. Own seeds; '
            'questions equal to an evaluation question are skipped as well.'))


class TrainsetsVariantsEntryTrl(Section):
    model_config = when(source={"local": ["path"], "hub": ["id", "revision"]})
    source: Literal['hub', 'local'] = Field(
        description=(
            'hub: the dataset `id` at `revision` (datasets.load_dataset, split `split`); local: the '
            'file at `path`.'))
    id: HubId | MISSING = Field(
        default=MISSING,
        description='Hub dataset repository (source hub), e.g. trl-lib/prm800k.')
    revision: Annotated[str, Field(pattern='^[0-9a-f]{40}$')] | MISSING = Field(
        default=MISSING,
        description='The Hub commit (40 hex digits; a branch name is not pinned).')
    config: str | None = Field(
        default=None,
        description='Dataset configuration (subset) name; null: the default one.')
    split: Annotated[str, Field(min_length=1)] = Field(default='train', description='Dataset split (source hub).')
    path: str = Field(
        default='',
        description='Local file (source local): .jsonl, .jsonl.gz or .parquet with the same columns.')
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description='Read only the first rows (null: all).')
    malformed: Literal['error', 'skip'] = Field(
        default='error',
        description=(
            'A row not in the format (a field missing, a label that is not a boolean, len(labels) != '
            'len(completions), an empty step): error stops the job naming the row; skip counts it by '
            "reason and names its id in the log and the table's metadata."))
    deduplicate: bool = Field(
        default=False,
        description=(
            "Keep only the first of identical (prompt, steps) after the cut (TRL's PRM800K "
            "conversion repeats a solution's prefix for every rated alternative)."))


    @model_validator(mode="after")
    def _source_keys(self):
        if self.source == "local":
            then(self, "source: local", required=["path"], nonempty=["path"])
        elif self.source == "hub":
            then(self, "source: hub", required=["id", "revision"])
        return self



class TrainsetsVariantsEntry(Section):
    model_config = when(source={"trl": ["trl"]})
    source: Literal['mc', 'judge', 'human', 'consensus', 'math_shepherd', 'checker', 'trl', 'exact'] = Field(
        description=(
            'Label source (exact: the exact step truth of the constructed pool, needs '
            'trainsets.responses constructed; math_shepherd: the released Math-Shepherd labels of the `math_shepherd` '
            "section; checker: the arithmetic process checker's exact step labels on the same "
            'sampled responses MC and the judge label, needs process_check.enabled; trl: a dataset '
            "in TRL's stepwise-supervision format {prompt, completions, labels}, named by the "
            "variant's `trl` key)."))
    label_type: Literal['hard', 'soft'] = Field(
        default='hard',
        description='mc/consensus: hard (mc_value > threshold) or soft (mc_value); judge/human are hard.')
    threshold: Annotated[Number, Field(ge=0, le=1)] = Field(
        default=0.0,
        description='mc hard labels: positive iff mc_value > threshold (consensus uses consensus.threshold).')
    datasets: Annotated[list[str], Field(min_length=1)] | None = Field(
        default=None,
        description='Problem sets (names under problems:) to draw responses from; null = all.')
    enabled: bool = Field(
        default=True,
        description=(
            'false drops the variant (no training set, PRM or rows) without deleting its entry, e.g. '
            'in an overlay: YAML files merge key by key, so an overlay cannot delete a key.'))
    trl: TrainsetsVariantsEntryTrl | MISSING = Field(
        default=MISSING,
        description=(
            'source trl: where the TRL stepwise-supervision data is (rows {prompt: str, completions: '
            '[str], labels: [bool]}, one label per step); read by rule trl_labels, checked row by '
            'row, cut after the first false step and decontaminated like PRM800K → '
            'results/labels/trl/{variant}.parquet.'))


    @model_validator(mode="after")
    def _trl(self):
        if self.source == "trl":
            then(self, "source: trl", required=["trl"])
        return self



class TrainsetsExportTrl(Section):
    enabled: bool = Field(default=False, description='Make the exports targets of `all`.')
    soft_threshold: Annotated[Number, Field(ge=0, le=1)] | None = Field(
        default=None,
        description=(
            'Soft-label variants: a step is positive iff its label > this; null: soft variants are '
            "not exported (TRL's labels are booleans)."))


class Trainsets(Section):
    responses: Literal['sampled', 'constructed'] = Field(
        default='sampled',
        description=(
            "What the mc, judge, consensus and exact variants label: sampled = the policy's responses "
            'to the `problems` sets (the paper); constructed = the label audit\'s constructed solutions '
            '(`audit`: gold, answer-changing and answer-keeping errors, exact truth for every step), one '
            'pool on which every label source trains on the same instances.'))
    variants: dict[Name, TrainsetsVariantsEntry] = Field(
        default_factory=lambda: {
            'mc_hard': {'source': 'mc', 'label_type': 'hard', 'threshold': 0.0},
            'mc_soft': {'source': 'mc', 'label_type': 'soft'},
            'judge': {'source': 'judge'},
            'human': {'source': 'human'},
            'consensus_hard': {'source': 'consensus', 'label_type': 'hard'},
            'consensus_soft': {'source': 'consensus', 'label_type': 'soft'}},
        validate_default=True,
        description='Variant name → definition.')
    export_trl: TrainsetsExportTrl = Field(
        default_factory=TrainsetsExportTrl,
        description=(
            "Every training set also written in TRL's stepwise-supervision format (rule export_trl → "
            'results/trainsets/trl/{variant}.jsonl: {prompt, completions, labels} with one boolean '
            'per step), as `prm-lessons export-trl` writes it.'))
    mc_threshold_sweep: list[Annotated[Number, Field(ge=0, le=1)]] = Field(
        default_factory=lambda: [0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875],
        validate_default=True,
        description=(
            'MC hard-label thresholds, one variant each (mc_hard_t{p}of{q}; a threshold equal to a '
            "declared variant reuses it). The paper's Figure 5: 0, 1/8, ..., 7/8."))
