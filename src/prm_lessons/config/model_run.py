"""Sections of the run, the hardware and the data: run, cluster, hub, roles, data_policies, sampling, \
processbench, prmbench, grading, training."""
from __future__ import annotations

import importlib.util
import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..data.processbench import PROCESSBENCH_SUBSETS
from .base import MISSING, HubId, Name, Number, Section, Text, fail, then, unique, url_problem, when
from .model_common import Dataset


class Run(Section):
    name: Name = Field(
        default='embedded',
        description=(
            'Short run name (provenance records; an ablation overlay writes its files under '
            'runs/<name>/).'))
    label: Text = Field(
        default='',
        description=(
            'Plain-language statement of what produced the numbers, printed on every table and '
            'figure.'))
    seed: int | None = Field(
        default=None,
        description=(
            'A seed replica of the run: this value replaces sampling.seed, mc.seed, judge.seed and '
            'training.seed, so the policy samples, the MC and judge labels and the trained PRMs are '
            'drawn again (the problems, the released data and the released models are not). Used as '
            'an ablation overlay (config/seeds/seed<value>.yaml) named seed<value> (run.name must be '
            "that), whose Best-of-N table the base run's Table 6 reads for its seed spread "
            '(analysis.seeds); a replica reports no spread itself (its analysis.seeds is emptied). '
            'null: not a replica.'))
    ablation: bool = Field(
        default=False,
        description=(
            'This file is an ablation overlay (config/ablations/*.yaml): its run sits beside the '
            'base run (the --configfile files before it) in the same working directory. Its files go '
            "to runs/<run.name>/; the base run's upstream results are read where the config that "
            'made them is the same.'))
    compare: list[Name] = Field(
        default_factory=list,
        description=(
            "Run names (the base run's and ablations' run.name, run here before) compared side by "
            'side by rule compare_runs: Best-of-N accuracy and ProcessBench F1, a column per run, in '
            'runs/comparison.csv and .md. Empty: no comparison.'))


class Cluster(Section):
    max_runtime: Annotated[int, Field(ge=10)] = Field(
        default=1440,
        description=(
            "Minutes no job may ask for (the partition's time limit). Every GPU rule's runtime is "
            'its base minutes × the attempt, capped here, so a retry never asks for more than sbatch '
            'accepts; jobs whose work could exceed it are sharded by problems.'))


class HubUpload(Section):
    model_config = when(enabled={True: ["repo_prefix"]})
    enabled: bool = Field(default=False, description='Upload the trained PRMs (rule upload_prm).')
    repo_prefix: Annotated[
        str, Field(pattern='^[A-Za-z0-9][A-Za-z0-9_.-]*/([A-Za-z0-9][A-Za-z0-9_.-]*)?$')
    ] | None = Field(
        default=None,
        description=(
            '`org/` or `org/prefix-`: the PRM of variant <variant> goes to `<repo_prefix><variant>` '
            '(required when enabled).'))
    private: bool = Field(
        default=True,
        description='Create the repositories private (an existing repository keeps its visibility).')
    variants: Annotated[Annotated[list[Name], unique], Field(min_length=1)] | None = Field(
        default=None,
        description='Training-set variants to upload; null = every trained variant.')


    @model_validator(mode="after")
    def _repo_prefix(self):
        if self.enabled is True:
            then(self, "enabled: True", required=["repo_prefix"], strings=["repo_prefix"])
        if isinstance(self.repo_prefix, str) and re.search(r"\.\.|--", self.repo_prefix):
            raise fail("repo_prefix", f"{self.repo_prefix!r} contains '..' or '--' (not in a Hub repository id)")
        return self



class Hub(Section):
    cache_dir: str | None = Field(
        default=None,
        description=(
            "Hugging Face cache the snapshots go to; null = huggingface_hub's default (HF_HUB_CACHE, "
            'else $HF_HOME/hub).'))
    models_dir: Annotated[str, Field(min_length=1)] = Field(
        default='resources/hub',
        description=(
            'Directory of the per-model link folders (models_dir/<name>/) that jobs load: an output '
            'of rule download_model, so a dedicated sub-folder of resources/ (a relative path of '
            'names; not resources/data, resources/models or resources/templates); the large files '
            'stay in cache_dir.'))
    upload: HubUpload = Field(
        default_factory=HubUpload,
        description=(
            'Optional upload of the trained PRMs to the Hub (rule upload_prm, a local rule: the '
            'submit host needs the network and a write token, HF_TOKEN or `hf auth login`): each '
            "results/prms/<variant>/ with its model card, which then reports the PRM's ProcessBench "
            'and Best-of-N metrics, to the repository `<repo_prefix><variant>`. Off by default; the '
            'tests never run it.'))


class Roles(Section):
    policy: str = Field(description='Model that samples the solutions (Qwen2.5-Math-7B-Instruct in the paper).')
    completer: str | MISSING = Field(
        default=MISSING,
        description=(
            'Model that completes step prefixes for Monte Carlo estimation (the policy by default); '
            "a data policy's `completer` (data_policies) replaces it."))
    judge: str | MISSING = Field(
        default=MISSING,
        description='LLM-as-a-judge model for step labels and critics (Qwen2.5-72B-Instruct in the paper).')


class DataPoliciesEntry(Section):
    model: Name = Field(description='Model entry (under `models`) that samples the training problems.')
    completer: Name = Field(
        description=(
            'Model entry (under `models`) that completes the MC rollouts of its responses (replaces '
            'roles.completer).'))
    label: Annotated[Text, Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description="Name shown in the data-source tables' provenance note (default: the entry's name).")
    n: Annotated[int, Field(ge=1)] | MISSING = Field(
        default=MISSING,
        description=(
            "Responses per training problem from this data policy (default sampling.n); a mix's "
            "entries add up (the paper's 3M set: 6-8 per query over the mix)."))
    temperature: Annotated[Number, Field(ge=0)] | MISSING = Field(
        default=MISSING,
        description='Overrides sampling.temperature for this data policy.')
    top_p: Annotated[Number, Field(gt=0, le=1)] | MISSING = Field(
        default=MISSING,
        description='Overrides sampling.top_p for this data policy.')
    max_tokens: Annotated[int, Field(ge=1)] | MISSING = Field(
        default=MISSING,
        description='Overrides sampling.max_tokens for this data policy.')
    system_prompt: str | MISSING = Field(
        default=MISSING,
        description='Overrides sampling.system_prompt for this data policy (its MC completions use it too).')
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description='Sample only the first `limit` problems of each training set; null = all.')


class Sampling(Section):
    n: Annotated[int, Field(ge=1)] = Field(default=8, description='Responses per training problem.')
    temperature: Annotated[Number, Field(ge=0)] = Field(default=0.7, description='Sampling temperature.')
    top_p: Annotated[Number, Field(gt=0, le=1)] = Field(default=0.8, description='Nucleus sampling top_p.')
    max_tokens: Annotated[int, Field(ge=1)] = Field(
        default=2048,
        description='Maximum generated tokens per response.')
    seed: int = Field(
        default=0,
        description=(
            'Base seed; each (problem, sample) gets a derived per-request seed, so a shard rerun '
            'reproduces its samples.'))
    seed_mode: Literal['per_request', 'per_batch'] = Field(
        default='per_request',
        description=(
            'How the policy sampling and the MC completions are seeded. per_request: every request '
            'has its own seed, so a completion depends only on its seed, not on what shares its engine '
            'call (MC protocols and mc.lanes give identical labels; a shard rerun reproduces its samples); '
            "vLLM then samples each seeded request on its own generator (its per-request path). per_batch: "
            'one seed per engine call (requests unseeded, the engine reseeded once per call: vLLM\'s batched '
            'sampler); reproducible only for the same batch, so MC labels then depend on the protocol '
            'and lanes. Measured cost of each: docs/measurements.md (bench/mc_overlap.py).'))
    shards: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Jobs per problem set (the most, with problems_per_shard); a killed job loses only its '
            'shard.'))
    problems_per_shard: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Problems per sampling job: a set gets ceil(problems / problems_per_shard) jobs, at '
            'least 1 and at most `shards`, its size read from the config at DAG time (a generated '
            "set's size, else rows, subsample.n, limit, and the policy's limit); a set of unknown "
            'size gets `shards`. null = every set gets `shards` jobs.'))
    step_separator: Annotated[str, Field(min_length=1)] = Field(
        default='\n\n',
        description='Text that separates steps in a response.')
    system_prompt: str = Field(
        default='Please reason step by step, and put your final answer within \\boxed{}.',
        description='System prompt (the Qwen2.5-Math chain-of-thought prompt).')
    batch_size: Annotated[int, Field(ge=1)] = Field(
        default=256,
        description='Prompts handed to the engine per call (progress is logged per batch).')
    long_questions: Literal['error', 'skip'] = Field(
        default='error',
        description=(
            "A problem whose chat prompt plus max_tokens exceeds the policy's max_model_len "
            '(measured with its tokenizer before any generation): error stops the sampling job '
            'naming each such problem, its prompt tokens and the limit; skip samples the rest and '
            "records the skipped problems and their count in the samples table's metadata "
            '(long_questions) and the job log.'))


class ProcessbenchConstructedDev(Section):
    n_per_subset: Annotated[int, Field(ge=1)] = Field(default=100, description='Dev cases per subset.')
    subsets: Annotated[dict[Name, Dataset], Field(min_length=1)] = Field(
        description='Subset name -> dataset entry, the same names as `subsets` (own seeds).')


class ProcessbenchConstructed(Section):
    subsets: dict[Name, Dataset] = Field(
        default_factory=dict,
        description=(
            'Subset name -> dataset entry (problems with gold steps, e.g. reasoning_gym '
            'basic_arithmetic / chain_sum / gsm_symbolic).'))
    n_per_subset: Annotated[int, Field(ge=1)] = Field(
        default=12,
        description='Cases per subset (the first N problems of each subset with gold steps).')
    error_fraction: Annotated[Number, Field(ge=0, le=1)] = Field(
        default=0.5,
        description=(
            'Share of cases that get one injected error at a known step; the rest are untouched gold '
            'solutions (label -1).'))
    keep_answer_fraction: Annotated[Number, Field(ge=0, le=1)] = Field(
        default=0.3,
        description=(
            'Share of the erroneous cases whose error leaves the final answer correct (correct '
            'answer, flawed process).'))
    seed: int = Field(default=0, description='Seed for choosing and placing the errors.')
    dev: ProcessbenchConstructedDev | MISSING = Field(
        default=MISSING,
        description=(
            'The dev split (results/processbench/dev.parquet), built the same way from its own '
            'problems (questions disjoint from the evaluation cases and the training problems): '
            "every tuned choice (threshold 'tune', the structure baseline) is fitted on it, never on "
            'the cases being scored. Absent: tuned thresholds are cross-fitted over two folds of the '
            'evaluation cases (processbench_eval.tune_on auto).'))


SUBSET_PATTERN = r"\{subset\}"


class Processbench(Section):
    model_config = when(source={"url": ["url"], "local": ["path"]})
    source: Literal['constructed', 'hub', 'local', 'url'] = Field(
        default='constructed',
        description=(
            'constructed (gold solutions with injected errors), hub (Qwen/ProcessBench), local (a '
            'directory of the official {subset}.json files) or url (pinned files, fetched once by '
            'rule processbench_file into resources/data/processbench/).'))
    id: HubId = Field(default='Qwen/ProcessBench', description='Hub dataset id (source hub); one split per subset.')
    revision: Annotated[str, Field(pattern='^[^\\s\\x00-\\x1f\\x7f]+$')] | None = Field(
        default=None,
        description=(
            'Hub dataset revision (source hub); null = the default branch (whose math.json changed '
            'after the paper).'))
    url: str | None = Field(
        default=None,
        description=(
            "Source url: https:// URL (http:// with every subset's checksum) or "
            "plain path of one subset's file, with {subset} where the subset name goes."))
    sha256: dict[str, Annotated[str, Field(pattern='^[0-9a-fA-F]{64}$')]] = Field(
        default_factory=dict,
        description=(
            'Subset -> expected sha256 of its file (source url or local); a mismatch stops naming '
            'the subset.'))
    git_blob_sha1: dict[str, Annotated[str, Field(pattern='^[0-9a-fA-F]{40}$')]] = Field(
        default_factory=dict,
        description='Subset -> expected git blob id of its file (source url or local).')
    rows: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict,
        description=(
            'Subset -> expected number of cases (any source but constructed), checked before '
            '`limit`; a mismatch stops naming the subset.'))
    path: str | None = Field(
        default=None,
        description='Directory holding {subset}.json (or .jsonl/.parquet) files (source local).')
    subsets: list[Name] | None = Field(
        default=None,
        description='Subsets to load (hub/local): gsm8k, math, olympiadbench, omnimath; null = all four.')
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description='Keep the first N cases per subset (hub/local); null keeps all.')
    constructed: ProcessbenchConstructed = Field(
        default_factory=ProcessbenchConstructed,
        description=(
            'The constructed set (source constructed): one subset per entry, each a dataset entry '
            'like those under benchmarks (use seeds disjoint from the training problems).'))


    @model_validator(mode="after")
    def _source_keys(self):
        if self.source == "url":
            then(self, "source: url", required=["url"], strings=["url"])
            if "{subset}" not in self.url:
                raise fail("url", f"{self.url!r} does not match {SUBSET_PATTERN!r} (with `source: url`)")
            # every subset fetched has its checksum (null subsets: all four, as data.processbench reads)
            subsets = self.subsets or PROCESSBENCH_SUBSETS
            pinned = all(s in self.sha256 or s in self.git_blob_sha1 for s in subsets)
            if (problem := url_problem(self.url, pinned)):
                raise fail("url", problem + " (for every subset fetched)" if not pinned and "http://" in
                           self.url.lower() else problem)
        elif self.source == "local":
            then(self, "source: local", required=["path"], strings=["path"], nonempty=["path"])
        elif self.source == "constructed" and "constructed" in self.model_fields_set:
            # constructed is the default source, so this applies when `source` is absent too
            if "subsets" not in self.constructed.model_fields_set:
                raise fail("constructed.subsets", "missing required value (with `source: constructed`)")
            if not self.constructed.subsets:
                raise fail("constructed.subsets", "must not be empty (with `source: constructed`)")
        return self



class PrmbenchConstructed(Section):
    n_cases: Annotated[int, Field(ge=1)] = Field(
        default=24,
        description=(
            'Pairs of the stand-in: each a gold solution (class correct) and the same solution with one '
            'injected error at a known step.'))
    keep_answer_fraction: Annotated[Number, Field(ge=0, le=1)] = Field(
        default=0.5,
        description=(
            'Share of the injected errors that keep the final answer (class constructed_keep_answer); '
            'the rest change it (constructed_error).'))
    seed: int = Field(default=0, description='Seed for choosing and placing the errors.')


class Prmbench(Section):
    model_config = when(source={"url": ["url"], "local": ["path"]})
    enabled: bool = Field(
        default=False,
        description=(
            'Score every PRM of the run on PRMBench (Song et al. 2025, arXiv 2501.03124): rules '
            'prmbench, score_prmbench, prmbench_metrics (results/metrics/prmbench/<prm>.json) and '
            'prmbench_table (results/tables/prmbench.csv, beside the published PRMScores where the data '
            'is the real benchmark).'))
    source: Literal['constructed', 'url', 'local'] = Field(
        default='constructed',
        description=(
            'url: the published file at a pinned revision (fetched once by rule prmbench_file into '
            'resources/data/prmbench/, checksummed); local: a copy on disk; constructed: a STAND-IN in '
            "PRMBench's format built from processbench.constructed.subsets (gold solutions with one "
            'injected error), for offline runs: its numbers are never compared with the published ones.'))
    url: str | None = Field(
        default=None,
        description=(
            'Source url: https:// URL or plain path of prmbench_preview.jsonl (pin the Hub '
            'revision in the URL: .../resolve/<commit>/prmbench_preview.jsonl).'))
    path: str | None = Field(default=None, description='Source local: the prmbench_preview.jsonl file.')
    sha256: Annotated[str, Field(pattern='^[0-9a-fA-F]{64}$')] | None = Field(
        default=None,
        description=(
            "Expected sha256 of the file (url/local); null: not checked (rule prmbench_file logs the "
            'digest to pin).'))
    git_blob_sha1: Annotated[str, Field(pattern='^[0-9a-fA-F]{40}$')] | None = Field(
        default=None, description='Expected git blob id of the file (url/local); null: not checked.')
    rows: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description='Expected number of records in the file (url/local), checked before `limit`.')
    limit: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Keep the first N records of each classification (url/local); null keeps all. A limited '
            'set is still shown beside the published numbers, marked as a subset.'))
    constructed: PrmbenchConstructed = Field(
        default_factory=PrmbenchConstructed,
        description='The stand-in (source constructed).')

    @model_validator(mode="after")
    def _source_keys(self):
        if self.source == "url":
            then(self, "source: url", required=["url"], strings=["url"])
        elif self.source == "local":
            then(self, "source: local", required=["path"], strings=["path"], nonempty=["path"])
        return self


class Grading(Section):
    grader: Literal['math_verify', 'harness'] = Field(
        default='math_verify',
        description=(
            "How an extracted answer is compared with the gold. math_verify: math-verify's "
            'equivalence after a light normalisation (the embedded default: faster). harness: the '
            "Qwen2.5-Math evaluation harness's math_equal (evaluation/grader.py at a45202b, "
            're-implemented in prm_lessons.grading.harness) on its strip_string-normalised answers, '
            "which the paper's Best-of-N numbers use. A change regrades (rule grade_samples) and "
            'reruns the metrics; it re-samples nothing. Search jobs grade in-job, so they rerun too.'))
    timeout_s: Annotated[Number, Field(gt=0)] = Field(
        default=5.0,
        description=(
            'Per-response grading time limit; a response that exceeds it counts as incorrect (status '
            "timeout) and is reported. The harness's own limit is 3 s per comparison (evaluate.py:37), "
            'which config/paper.yaml uses with grader: harness.'))
    workers: Annotated[int, Field(ge=1, le=64)] = Field(
        default=2,
        description=(
            'Grading worker processes (at most 64, grading.pool.MAX_WORKERS: each is a Python '
            'process with math-verify loaded).'))


class TrainingLora(Section):
    r: Annotated[int, Field(ge=1)] = Field(default=16, description='Adapter rank.')
    alpha: Annotated[int, Field(ge=1)] = Field(default=32, description='LoRA alpha (scaling = alpha / r).')
    dropout: Annotated[Number, Field(ge=0, le=1)] = Field(default=0.05, description='Dropout on the adapter input.')
    target_modules: str | list[str] = Field(
        default='all-linear',
        description=(
            'Modules that get adapters (peft target_modules; all-linear = every linear layer of the '
            'base).'))


# transformers' report_to integrations (integrations.INTEGRATION_TO_CALLBACK) and the packages each needs (any
# one of them; "a+b": both), as transformers' is_*_available checks them; kubeflow is left out: it reports to
# a Kubeflow Trainer status server, not through a package a config could check
REPORTER_PACKAGES: dict[str, tuple[str, ...]] = {
    "tensorboard": ("tensorboard", "tensorboardX"), "wandb": ("wandb",), "mlflow": ("mlflow",),
    "comet_ml": ("comet_ml",), "neptune": ("neptune",), "trackio": ("trackio",), "codecarbon": ("codecarbon",),
    "clearml": ("clearml",), "dagshub": ("dagshub+mlflow",), "dvclive": ("dvclive",), "swanlab": ("swanlab",),
    "azure_ml": ("azureml",), "flyte": ("flytekit",)}
Reporter = Literal["none", "tensorboard", "wandb", "mlflow", "comet_ml", "neptune", "trackio", "codecarbon",
                   "clearml", "dagshub", "dvclive", "swanlab", "azure_ml", "flyte"]


def reporter_missing(name: str) -> str | None:
    """The package `name` (a report_to value) needs when none of its packages is importable, else None."""
    pkgs = REPORTER_PACKAGES.get(name, ())
    if not pkgs or any(all(importlib.util.find_spec(m) is not None for m in p.split("+")) for p in pkgs):
        return None
    return " or ".join(pkgs)


class Training(Section):
    base: str = Field(
        default='policy',
        description=(
            'Base model: a role (policy, completer, judge) or a name under `models` (the paper: '
            'Qwen2.5-Math-7B-Instruct, i.e. the policy).'))
    mode: Literal['full', 'lora', 'head'] = Field(
        default='full',
        description=(
            'full: fine-tune base + head (paper); lora: peft adapters on the base (merged at save) + '
            'head; head: frozen base, only the head trains (its step features are computed once; the '
            'embedded CPU default).'))
    soft_loss: Literal['bce', 'mse'] = Field(
        default='bce',
        description=(
            'Loss for soft-label variants (labels in [0,1]): binary cross-entropy on P(good step), '
            "or MSE on it (the paper's preliminary MC-soft runs). Hard 0/1 labels always use "
            'cross-entropy.'))
    step_token: Annotated[str, Field(min_length=1)] = Field(
        default='<extra_0>',
        description=(
            'Token placed after every step; the head reads the hidden state there. Added as a '
            'special token (embeddings resized) when the base tokenizer lacks it (SmolLM2); Qwen '
            'tokenizers have <extra_0>.'))
    system_prompt: str | None = Field(
        default='Please reason step by step, and put your final answer within \\boxed{}.',
        description=(
            'System message of the PRM input (the released Qwen2.5-Math-PRM uses this CoT prompt); '
            "null: the template's default."))
    use_chat_template: bool = Field(
        default=True,
        description=(
            "Render question + steps with the base tokenizer's chat template (as the released PRM); "
            'false: plain question + blank line + steps.'))
    max_length: Annotated[int, Field(ge=16)] = Field(
        default=2048,
        description=(
            'Token limit per instance. Whole steps beyond it are dropped and counted in '
            'train_metrics.json (data.steps_dropped); never silently.'))
    epochs: Annotated[Number, Field(gt=0)] = Field(
        default=1.0,
        description='Passes over the training set (ignored when max_steps > 0).')
    max_steps: Annotated[int, Field(ge=-1)] = Field(
        default=-1,
        description=(
            'Optimizer steps to train; -1 = use epochs (0 is refused: transformers would read it as '
            'epochs too).'))
    batch_size: Annotated[int, Field(ge=1)] = Field(
        default=8,
        description=(
            'Instances per device per micro-batch (head mode: also the batch of the feature pass); '
            'with batch_tokens only the nominal micro-batch DeepSpeed is told (its "auto" '
            'train_micro_batch_size_per_gpu).'))
    batch_tokens: Annotated[int, Field(ge=16)] | None = Field(
        default=None,
        description=(
            'Token budget of one micro-batch per GPU (full/lora): micro-batches are built by a '
            'length-grouped sampler (the instances shuffled with `seed`, cut into megabatches, each '
            'sorted by length, then filled while rows x longest row <= this; an instance longer than '
            'it goes alone), instead of `batch_size` sequences. The global batch is then kept in '
            'TOKENS (batch_tokens x GPUs x gradient_accumulation_steps padded tokens per optimizer '
            'step), not in sequences, and the learning-rate schedule (warm-up share, decay) counts '
            'the optimizer steps over these micro-batches. Every rank gets the same number of '
            'micro-batches (the count is padded to a multiple of the processes by repeating the '
            "epoch's first micro-batches). null: `batch_size` sequences per micro-batch."))
    gradient_accumulation_steps: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Micro-batches per optimizer step (global batch = batch_size x this x GPUs sequences; with '
            'batch_tokens, batch_tokens x this x GPUs padded tokens).'))
    learning_rate: Annotated[Number, Field(gt=0)] = Field(
        default=1e-05,
        description='Peak learning rate (AdamW). The paper does not publish its hyper-parameters.')
    weight_decay: Annotated[Number, Field(ge=0)] = Field(default=0.0, description='AdamW weight decay.')
    warmup_ratio: Annotated[Number, Field(ge=0, le=0.99)] = Field(
        default=0.0,
        description='Share of the steps with linear warm-up.')
    lr_scheduler: Literal['linear', 'cosine', 'constant', 'constant_with_warmup'] = Field(
        default='cosine',
        description='Learning-rate schedule (transformers lr_scheduler_type).')
    max_grad_norm: Annotated[Number, Field(ge=0)] = Field(
        default=1.0,
        description='Gradient clipping norm (0 = off).')
    seed: int = Field(
        default=0,
        description='Seed for head init, data order and dropout (transformers set_seed, data_seed).')
    precision: Literal['auto', 'bf16', 'fp32'] = Field(
        default='auto',
        description=(
            'auto: bf16 autocast on a bf16-capable GPU, fp32 on CPU (a frozen base runs in bf16 '
            'there); models are saved in bf16 unless fp32.'))
    standardize_features: bool = Field(
        default=True,
        description=(
            "Head mode only: standardise the frozen base's step features (mean and std of the "
            'training set, saved with the head) in front of the Linear-ReLU-Linear head; without it '
            'the head stays at the majority class on raw SmolLM2 features. Full and LoRA fine-tuning '
            "keep the paper's head unchanged."))
    resamples: Annotated[int, Field(ge=0)] = Field(
        default=0,
        description=(
            'Head mode only: besides the PRM on all instances, train this many extra heads in the same '
            'job, each on a bootstrap resample of the instances (draw r: a numpy Generator seeded by '
            '(seed, r) over the instances sorted by instance_id, so variants with the same instances get '
            'the same draws), saved in the PRM directory (resample_heads.safetensors). With '
            'prms.shared_base_features the ProcessBench scoring also writes their step scores, and '
            'results/tables/processbench_paired.csv gives intervals with training variance and paired '
            'PRM-vs-PRM differences. 0 = none.'))
    gradient_checkpointing: bool = Field(
        default=True,
        description='Recompute activations in the backward pass (full/lora); trades ~30% speed for memory.')
    group_by_length: bool = Field(
        default=True,
        description='Batch instances of similar length together (less padding).')
    packing: bool = Field(
        default=False,
        description=(
            "Full/LoRA only: concatenate a micro-batch's instances into one row without padding, "
            'position_ids restarting at 0 per instance and no attention mask; transformers then keeps '
            'the instances apart (eager/sdpa: a block-diagonal causal mask from the position_ids; '
            'flex_attention and flash_attention_2/3/4: the same by their source, not run here), and any '
            'other attention implementation is refused at training start. Same step logits and loss as '
            'the padded batch (CPU test, float32). With the pinned stack a GPU runs sdpa with that dense '
            'mask (no varlen kernel: flash-attn is not installed), which saves the padding tokens but '
            'still computes attention over the whole row; not verified on a GPU. No fused RMSNorm/RoPE/'
            'SwiGLU kernel is used either way (none is installed). Head mode refuses it (its features '
            'are precomputed per instance).'))
    logging_steps: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description='Record the training loss every N optimizer steps (train_metrics.json loss_history).')
    report_to: Reporter = Field(
        default='none',
        description=(
            "Where the Trainer also reports its logs (transformers' TrainingArguments report_to, one "
            "integration): none, or an integration whose package is installed (validation refuses "
            'one that is not, e.g. tensorboard without tensorboard or tensorboardX). Its local files '
            "land in the run: TensorBoard writes under the Trainer's output directory, the PRM's "
            'checkpoint directory (runs/), and the finished run copies runs/ into the PRM directory '
            '(kept when the checkpoints are deleted; uploaded with it). Not part of the resume '
            'fingerprint.'))
    save_steps: Annotated[Number, Field(ge=0)] = Field(
        default=200,
        description=(
            'Checkpoint every N optimizer steps; a fraction in (0, 1) = that share of all steps '
            "(transformers' ratio, e.g. 0.1 = every tenth of the run), at most ceil(1/fraction) "
            'checkpoints, the last one at the final step; 0 = no checkpoints. A rerun with the same '
            'settings and trainset resumes from the last complete one (SLURM requeue). Cost: count x '
            'size / checkpoint_write_gbps of the whole job, its GPUs idle while it writes; one '
            'checkpoint of a full fine-tune under ZeRO-3 is 16 bytes per base parameter '
            '(base_params_b; a 7.6B base: ~122 GB, ~2 min at 1 GB/s), so 0.1 costs ~20 min per '
            'training and 0.34 (the paper config, 3 checkpoints) ~6 min (plan.checkpoint_seconds).'))
    save_total_limit: Annotated[int, Field(ge=1)] = Field(default=2, description='Checkpoints kept while training.')
    keep_checkpoints: bool = Field(
        default=False,
        description='Keep results/checkpoints/prms/{variant}/ after a successful run (false frees the disk).')
    jit_checkpoint: bool = Field(
        default=True,
        description=(
            'Also write a checkpoint when the job receives SIGTERM (preemption), if save_steps > 0; '
            'the job then fails (nothing is saved as the PRM) and its rerun resumes there.'))
    base_params_b: Annotated[Number, Field(gt=0)] | None = Field(
        default=None,
        description=(
            'Parameters of the base model in billions (Qwen2.5-Math-7B-Instruct: 7.62). Sizes one '
            'checkpoint (16 bytes per parameter under ZeRO-3) for the SIGTERM grace of GPU training '
            '(sbatch --signal=TERM@<grace>, plan.jit_grace_seconds); required when gpus > 0 with '
            'jit_checkpoint and save_steps > 0. A resource: editing it retrains nothing.'))
    checkpoint_write_gbps: Annotated[Number, Field(gt=0)] = Field(
        default=1.0,
        description=(
            'ASSUMED write rate (GB/s) of one training job to the checkpoint file system; with '
            'base_params_b it gives the checkpoint save time in the SIGTERM grace (grace = 1.5 x '
            '(longest step + save)). Measure yours (e.g. dd or fio on the shared file system) and '
            'set it. A resource: editing it retrains nothing.'))
    lora: TrainingLora = Field(default_factory=TrainingLora, description='LoRA settings (mode lora).')
    deepspeed: str | None = Field(
        default=None,
        description=(
            'DeepSpeed config JSON (relative to the working directory, else to the workflow '
            'directory): config/deepspeed/zero2.json (ZeRO-2, the paper config: full fine-tuning of a 7B '
            'base on one node of 8x80 GB GPUs, bf16 weights replicated, gradients and optimizer state '
            'partitioned) or config/deepspeed/zero3.json (ZeRO-3: everything partitioned, for a base '
            'whose weights do not fit replicated beside the rest, e.g. a 7B base on 2 GPUs); a 72B base '
            'does not fit in one node and this launcher is single-node; used on GPU only (unless '
            'deepspeed_on_cpu); null = plain DDP.'))
    deepspeed_on_cpu: bool = Field(
        default=False,
        description=(
            "Use the `deepspeed` config on CPU too (gpus 0): DeepSpeed's CPU accelerator over gloo, "
            '`processes` ranks launched by torchrun (also for 1), so the DeepSpeed path of the GPU jobs '
            '(the config filled from the model, partitioned training, the save; under ZeRO-3 also '
            'zero.Init at load and the gathered save) runs on a CPU machine; a rehearsal of that path, '
            'not a fast way to train (full and LoRA modes; head mode refuses deepspeed).'))
    gpus: Annotated[int, Field(ge=0)] = Field(
        default=0,
        description=(
            "GPUs per training job: the rule's `gpu` resource (SLURM --gpus) and the number of "
            'processes torchrun launches on one node (>1: one per GPU). A job that finds fewer GPUs '
            '(or a CPU-only torch) stops; it never falls back to CPU.'))
    processes: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Processes per node when training on CPU (gpus 0): >1 launches that many gloo ranks '
            'through the same torchrun launcher as the GPU path (the CPU rehearsal uses 2). On GPU '
            'the process count is `gpus`.'))
    gpus_scoring: Annotated[int, Field(ge=0)] | None = Field(
        default=None,
        description=(
            'GPUs of the jobs that score with a trained PRM (not in head-only shared-feature mode); '
            "null = the base model's tensor_parallel_size. With more than one the PRM is spread over "
            'them (device_map auto).'))
    mem_mb: Annotated[int, Field(ge=100)] = Field(
        default=8000,
        description='Host memory per training job (rule resource mem_mb).')
    runtime: Annotated[int, Field(ge=1)] = Field(
        default=60,
        description='Wall-time limit per training job in minutes (rule resource runtime; SLURM -t).')
    threads: Annotated[int, Field(ge=1)] = Field(
        default=2,
        description='CPU threads per training job (torch threads on CPU; data work on GPU).')


    @model_validator(mode="after")
    def _steps(self):
        if self.max_steps == 0:
            raise fail("max_steps", "0 optimizer steps: give a number ≥ 1, or -1 to train for `epochs`")
        if self.packing and self.mode == "head":
            raise fail("packing", "head mode computes each instance's frozen-base features once, unpacked, and "
                                  "trains only the head on them; packing applies to mode full or lora")
        if self.batch_tokens is not None and self.mode == "head":
            raise fail("batch_tokens", f"{self.batch_tokens} tokens per micro-batch need mode full or lora: head "
                                       "mode trains on step features (batch_size sizes its batches); set null")
        if (missing := reporter_missing(self.report_to)):
            raise fail("report_to", f"{self.report_to!r} reports through the package {missing}, which is not "
                                    "installed in this environment; install it or set report_to: none")
        if self.resamples and self.mode != "head":
            raise fail("resamples", f"{self.resamples} resample heads need mode: head (mode {self.mode!r} "
                                    "trains the base: a resample would be a whole fine-tuning run); set 0")
        return self

