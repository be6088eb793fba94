"""Config → DAG: every name and path the workflow derives from the (validated) config, in one place.

Runs only while Snakemake builds the DAG (workflow/rules/common.smk computes the shared names from it
once; the stage files read only those), so editing it reruns no job: jobs get config values through
their params. Every `results/...` path outside the .smk files is written here. One module per stage
(lower stages first: base, models, policies, data_policies, sampling, processbench, trainsets, training, evaluation,
critics, search, judges, analysis, runs; a module imports only from those before it); this package
re-exports every public name, which no job's code can see (plan is never in a job's closure).
"""
from __future__ import annotations

from .analysis import FIG6_SHEET, analysis_settings, analysis_skipped
from .base import (
    BENCHMARKS,
    benchmark_path,
    shard_files,
    shard_log,
    shard_minutes,
    shard_outputs,
    wildcard_alternatives,
)
from .critics import (
    CRITIC_SETTINGS,
    JUDGE_PAPER_TEMPLATE,
    JUDGE_TEMPLATES,
    OFFICIAL_CRITIC_TEMPLATE,
    critic_generation_sources,
    critic_minutes,
    critic_setting,
    critic_shards,
    critic_specs,
    critic_template_input,
    judge_template_input,
    judge_template_name,
)
from .data_policies import data_policies, data_policy, data_setting, mc_completer, sampler
from .evaluation import (
    SAMPLED_SOURCES,
    TRAINING_FEATURES_SOURCE,
    features_input,
    features_max_length,
    features_texts,
    prm_gpus,
    resolve_prm_specs,
    score_log,
    score_outputs,
    score_shard_paths,
    score_shards,
    scoring_gpus,
    scoring_runtime,
    shared_features,
    spec_inputs,
    trained_variants,
    training_feature_datasets,
    training_feature_sources,
    training_features_input,
)
from .judges import (
    BON_JUDGE_MODES,
    BON_JUDGE_SETTING_KEYS,
    bon_judge_benchmarks,
    bon_judge_minutes,
    bon_judge_model,
    bon_judge_names,
    bon_judge_policies,
    bon_judge_runs,
    bon_judge_settings,
    bon_judge_shards,
    bon_judge_template,
)
from .models import engine_threads, gpus, mem_mb_for, model_input, runtime
from .policies import (
    POLICY_SAMPLING_KEYS,
    bon_evaluations,
    bon_n,
    bon_ns,
    bon_policies,
    judge_sample_cap,
    policy_dir,
    policy_dir_regex,
    policy_of_dir,
    policy_path,
    primary_policy,
    sample_n,
)
from .processbench import (
    JUDGE_PB_SETTINGS,
    PROCESSBENCH_BASELINES,
    PROCESSBENCH_DEV,
    judge_processbench_cases,
    judge_processbench_settings,
    processbench_dev,
)
from .publish import upload_evaluation, upload_repos
from .runs import RunPaths, base_config
from .sampling import (
    dataset_problems,
    dataset_spec,
    fewshot_inputs,
    fewshot_spec,
    local_source_inputs,
    pinned_file_spec,
    sample_shard_count,
    sample_shards,
    samples_per_problem,
    sized_shard_count,
)
from .search import (
    SEARCH_FLOOR,
    SEARCH_MINUTES,
    SEARCH_MULTI_GPU,
    greedy_sampling,
    search_benchmarks,
    search_gpus,
    search_greedy_path,
    search_log,
    search_minutes,
    search_n,
    search_orm_path,
    search_outputs,
    search_policy,
    search_policy_entry,
    search_prms,
    search_reuses_samples,
    search_samples_path,
    search_shard_paths,
    search_shards,
)
from .training import (
    CHECKPOINT_BYTES_PER_PARAM,
    JIT_KILL_WAIT_S,
    STEP_TFLOPS_PER_GPU,
    TRAINING_RESOURCE_KEYS,
    checkpoint_gb,
    jit_grace_seconds,
    training_base_model,
    training_params,
    training_settings,
    training_slurm_extra,
)
from .trainsets import (
    TRAINSET_SOURCES,
    eval_set_paths,
    label_needs,
    label_shard_paths,
    process_check_enabled,
    role_model,
    threshold_sweep_variants,
    trainset_inputs,
    trl_exports,
    trl_labels_path,
    trl_local_files,
    trl_variants,
    uses,
    variant_datasets,
    variants,
)

__all__ = [
    "upload_repos", "upload_evaluation",
    "process_check_enabled", "trl_exports", "trl_labels_path", "trl_local_files", "trl_variants",
    "wildcard_alternatives", "model_input", "gpus", "mem_mb_for", "runtime", "engine_threads", "bon_n",
    "data_policies", "data_policy", "data_setting", "mc_completer", "sampler",
    "POLICY_SAMPLING_KEYS", "bon_policies", "primary_policy", "policy_dir", "policy_of_dir", "policy_dir_regex",
    "bon_ns", "sample_n", "judge_sample_cap", "bon_evaluations", "policy_path", "dataset_spec", "local_source_inputs",
    "fewshot_inputs", "fewshot_spec", "pinned_file_spec", "samples_per_problem", "dataset_problems",
    "sized_shard_count", "sample_shard_count", "sample_shards", "PROCESSBENCH_DEV", "PROCESSBENCH_BASELINES",
    "processbench_dev", "JUDGE_PB_SETTINGS", "judge_processbench_cases", "judge_processbench_settings", "TRAINSET_SOURCES", "variants",
    "threshold_sweep_variants", "label_needs", "uses",
    "variant_datasets", "role_model", "label_shard_paths", "eval_set_paths", "trainset_inputs",
    "TRAINING_RESOURCE_KEYS", "training_settings", "training_params", "training_base_model", "CHECKPOINT_BYTES_PER_PARAM",
    "STEP_TFLOPS_PER_GPU", "JIT_KILL_WAIT_S", "checkpoint_gb", "jit_grace_seconds", "training_slurm_extra",
    "trained_variants", "resolve_prm_specs", "spec_inputs", "shared_features", "features_input", "scoring_gpus",
    "SAMPLED_SOURCES", "TRAINING_FEATURES_SOURCE", "training_features_input", "training_feature_datasets",
    "training_feature_sources", "features_texts", "features_max_length",
    "prm_gpus", "score_shards", "score_outputs", "score_log", "score_shard_paths", "scoring_runtime",
    "CRITIC_SETTINGS", "OFFICIAL_CRITIC_TEMPLATE", "JUDGE_PAPER_TEMPLATE", "JUDGE_TEMPLATES",
    "judge_template_input", "judge_template_name", "critic_specs", "critic_generation_sources", "critic_shards",
    "critic_minutes", "critic_template_input", "critic_setting", "search_prms", "search_policy",
    "search_policy_entry", "search_benchmarks", "search_n", "search_reuses_samples", "search_samples_path",
    "search_orm_path", "search_greedy_path", "greedy_sampling", "search_shards", "search_outputs", "search_log",
    "search_shard_paths", "SEARCH_MINUTES",
    "SEARCH_MULTI_GPU", "SEARCH_FLOOR", "search_minutes", "search_gpus", "BON_JUDGE_MODES", "BON_JUDGE_SETTING_KEYS",
    "bon_judge_benchmarks", "bon_judge_policies", "bon_judge_model", "bon_judge_settings", "bon_judge_template",
    "bon_judge_names", "bon_judge_runs", "bon_judge_shards", "bon_judge_minutes", "shard_outputs", "shard_files",
    "BENCHMARKS", "benchmark_path", "shard_log", "shard_minutes", "FIG6_SHEET", "analysis_settings", "analysis_skipped",
    "RunPaths", "base_config",
]
