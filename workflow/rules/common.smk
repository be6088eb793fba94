# Shared workflow state: the config validated before any job, then every name the stage files share,
# computed once from prm_lessons.plan (config → DAG). Stage files read only what this file defines.
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))  # works from a checkout without install
from prm_lessons import plan  # noqa: E402
from prm_lessons.plan import codedeps, where  # noqa: E402
from prm_lessons.config import (
    NAME_WILDCARD,
    check_config_files,
    check_local_files,
    validate_config,
    model_entry,
    hub_models_dir,
    model_path,
)  # noqa: E402
from prm_lessons.artifacts.registry import ARTIFACTS, artifact_paths  # noqa: E402

check_config_files(workflow.configfiles)  # repeated keys, YTE, alias bombs: errors naming the file
# the models in src/prm_lessons/config/ are the schema; an error names the file that set its key
config = validate_config(config, files=workflow.configfiles)
check_local_files(config)  # an air-gapped site's own copies exist (here, not in every place a config is read)
# Runs side by side (prm_lessons.plan.runs): an ablation overlay (run.ablation: true, its own run.name)
# writes under runs/<name>/ only, and reads the base run's (the --configfile files before the overlay)
# upstream results where the config that made them is the same. run_out: every output and log path;
# run_in: every input (a path, list, dict or input function). Identity for the base run.
RUNS = plan.RunPaths(config, plan.base_config(workflow.configfiles, config))
if RUNS.base_unfinished():
    print(f"prm-lessons: {RUNS.base_unfinished()}", file=sys.stderr)
if workflow.is_main_process and plan.overlay_warning(workflow.configfiles, config):  # once, not in every job
    print(plan.overlay_warning(workflow.configfiles, config), file=sys.stderr)
run_out = RUNS.out
run_in = RUNS.inp
# the run's identity as jobs record it (run.ablation / run.compare change no job's output)
RUN_ID = {k: config["run"][k] for k in ("name", "label")}

RUN = "../scripts/run.py"  # script: paths are relative to this .smk file
RUN_SCRIPT = "workflow/scripts/run.py"  # the same, relative to the checkout (its fingerprint: code())


def checkout_path(rel):
    """A file of the checkout, relative to the working directory: a moved or copied checkout (another
    mount path on a cluster) declares the same inputs, so Snakemake's input-set trigger reruns nothing."""
    return os.path.relpath(Path(workflow.basedir) / rel)


PKG = Path(checkout_path("src/prm_lessons"))
TARGETS = []  # each stage .smk extends this; rule all takes it

# -- names shared across stages ------------------------------------------------------------------------
TRAINSET_VARIANTS = plan.variants(config)  # name -> spec (source, label_type, threshold, datasets)
TRL_VARIANTS = plan.trl_variants(config)  # name -> where its TRL stepwise data is (rule trl_labels)
TRL_EXPORTS = plan.trl_exports(config)  # variant -> soft-label threshold (None: hard) of rule export_trl
THRESHOLD_SWEEP = plan.threshold_sweep_variants(config)  # [(threshold, variant)] for Figure 5
# the data policy (data_policies; none configured: the primary Best-of-N policy) samples the training
# problems; its completer completes the MC rollouts. A mix (several): each samples into
# results/data_policies/{name}/, rule mix_responses joins them, each MC shard has its policy's completer.
DATA_POLICY = plan.data_policy(config)
DATA_MIX = plan.mixed_policies(config)
COMPLETER = plan.mc_completer(config)  # the label audit's (the first data policy's)
JUDGE = plan.role_model(config, "judge")
TRAIN = plan.training_settings(config, checkout_path("."))
TRAIN_PARAMS = plan.training_params(TRAIN)  # what a trained PRM depends on
# name -> spec: trained variants + released models (prms.models); a trained PRM's directory as this run reads it
PRM_SPECS = {
    n: {**s, "path": run_in(s["path"])} if s["trained"] else s for n, s in plan.resolve_prm_specs(config).items()
}
PRM_RE = plan.wildcard_alternatives(PRM_SPECS)
BON_BENCHMARKS = list(config["benchmarks"])
# Best-of-N policies (bon.policies, the primary first): the primary's files are results/samples/,
# results/scores/, results/metrics/bon/; another's results/policies/{name}/... (the `policy_dir` wildcard)
POLICIES = plan.bon_policies(config)
POLICY_DIRS = {p: plan.policy_dir(config, p) for p in POLICIES}
POLICY_PRMS = {p: plan.policy_prms(config, p, PRM_SPECS) for p in POLICIES}  # the PRMs scoring each one's samples
BON_EVALUATIONS = plan.bon_evaluations(config)  # (policy, benchmark, every N evaluated on it)
CRITIC_SPECS = plan.critic_specs(config)  # name -> model + settings (section defaults, own overrides)
CRITICS = list(CRITIC_SPECS)  # names of the enabled critics (the `judge` wildcard)
CRITIC_SOURCE = plan.critic_generation_sources(CRITIC_SPECS)  # name -> the critic whose critiques it reads
CRITIC_NAMES = [f"critic-{j}" for j in CRITICS]
SHARED_FEATURES = plan.shared_features(config)
# the sampled training responses whose step features head-only training shares (rule step_features)
TRAIN_FEATURE_SOURCES = plan.training_feature_sources(config)
PB_DEV = plan.processbench_dev(config)  # a ProcessBench dev split exists (results/processbench/dev.parquet)
PB_BASELINES = [f"baseline_{k}" for k in plan.PROCESSBENCH_BASELINES]
SCORING_CFG = {k: config["prms"][k] for k in ("batch_tokens", "batch_size")}  # scoring jobs and the search's
SEARCH_PRMS = plan.search_prms(config, PRM_SPECS)  # the PRMs guiding greedy search (search.smk; Table 8's input)
# the paper's artifacts (analysis.smk makes them, paper.smk assembles them): analysis.* with the defaults
# resolved (n = bon.n, the policies, Table 10's N and benchmarks); the artifacts whose data this config
# cannot have (no second policy, no larger N, no Chinese benchmarks) → why: no rule is generated for them,
# paper/report.md and main.pdf print the reason in their place
ANALYSIS = plan.analysis_settings(config)
ANALYSIS_SKIPPED = plan.analysis_skipped(config)
ANALYSIS_ARTIFACTS = [a for a in ARTIFACTS if a not in ANALYSIS_SKIPPED]


# Names from the config are identifiers (the schema's $defs/name, checked before the DAG): a wildcard
# never matches a slash or a dot, so no config name or request can reach outside its folder.
wildcard_constraints:
    dataset=NAME_WILDCARD,
    shard=r"\d+",
    nshards=r"\d+",
    variant=NAME_WILDCARD,
    prm=NAME_WILDCARD,
    model=NAME_WILDCARD,
    judge=NAME_WILDCARD,
    policy_dir=plan.sampling_dir_regex(config),


def checkout_data(rel):
    """A data file of the checkout that a job reads (published.yaml, a built-in prompt, paper/main.tex), for
    its input: the file with its mtime ignored (`ancient`: a clone or copy gives it a new one) and its
    fingerprint file, which changes only with its text (prm_lessons.plan.codedeps), so an edit reruns the job
    and a re-clone does not. A list: the file first; named inputs take [0] and list [1] unnamed."""
    return [
        ancient(checkout_path(rel)),
        codedeps.data_fingerprint(checkout_path("."), rel, codedeps.STORE),
    ]


def bon_judge_template(wc):
    """[the prompt file, its fingerprint]: a built-in prompt is checkout data (checkout_data), a config's
    template file is the user's (its mtime counts)."""
    path = plan.bon_judge_template(config, wc.mode, "src/prm_lessons")
    return checkout_data(path) if path.startswith("src/prm_lessons/prompts/") else [path]


def code(func):
    """Fingerprint files of the package modules the job of `func` ("<stage>:<name>") runs, found from its
    imports and rewritten here only when a module's code changes (prm_lessons.plan.codedeps); declared as
    input, so a code change reruns exactly the jobs it affects and a docstring or comment edit none.
    Files, not a params value: every rerun trigger (mtime included) sees them, the dry run's reason names
    the changed module, and finished jobs keep their recorded params (docs/code-changes.md). The rules'
    one `script:` (run.py) is fingerprinted the same way, in place of Snakemake's mtime-based `code` trigger
    (left out in profiles/default), so a clone or copy of the checkout reruns nothing."""
    return [
        *codedeps.rule_code_fingerprints(PKG, func, codedeps.STORE),
        codedeps.script_fingerprint(checkout_path("."), RUN_SCRIPT, codedeps.STORE),
    ]


def bench(rule, log):
    """A job's cost record, Snakemake's `benchmark:` TSV (wall seconds, max RSS, CPU time), under
    benchmarks/ in a folder per rule, named as the job's log from its first wildcard
    (plan.benchmark_path); a named run's under runs/<name>/ (run_out). bench/rule_times.py sums them per rule."""
    return run_out(plan.benchmark_path(rule, log))


def model_dir(role_or_name):
    """Directory a rule loads a model from (built by rule embedded_model or download_model)."""
    return model_path(config, role_or_name)


def model_dir_param(role_or_name, key="model"):
    """A params value: the directory the job loads the model from, read from the rule's `key` input when
    it has one (snakemake --lint: a path param derived from the input also holds under a storage
    provider), else model_dir (a `source: local` model is no input). `role_or_name` may be a function
    of the wildcards."""
    name = role_or_name if callable(role_or_name) else (lambda wc: role_or_name)
    return lambda wc, input: str(input[key][0]) if len(input[key]) else model_dir(name(wc))


def model_input(role_or_name):
    """Input for rules that need a model (plan.model_input)."""
    return plan.model_input(config, role_or_name)


def policy_of(wc):
    """The Best-of-N policy (or a mix's data policy) of a job's `policy_dir` wildcard."""
    return plan.policy_of_dir(config, wc.policy_dir)


def mc_shard(wc):
    """What an MC job labels: its data policy, completer, prompt and shard of that policy (plan.mc_shard)."""
    return plan.mc_shard(config, int(wc.shard), int(wc.nshards))


def mc_completer(wc):
    """The model entry completing an MC job's rollouts."""
    return mc_shard(wc)["completer"]


# the params of a mix's MC jobs (each shard's data policy and its shard of that policy's responses)
MC_PART = {"part": lambda wc: {k: mc_shard(wc)[k] for k in ("data_policy", "shard", "nshards")}} if DATA_MIX else {}


def sampler(wc):
    """{model, sampling, limit} of a sampling job: its policy's, or the data policy's for a training problem set
    of the primary's directory (plan.sampler)."""
    return plan.sampler(config, wc.dataset, policy_of(wc))


def policy_model(wc):
    """The model entry name that samples for a sampling job (sampler)."""
    return sampler(wc)["model"]


def policy_benchmarks(wc):
    """The benchmarks a job's policy samples."""
    return POLICIES[policy_of(wc)]["benchmarks"]


def policy_samples(policy):
    """The samples tables (graded) of a policy's benchmarks."""
    return [plan.policy_path(config, policy, f"samples/{b}.parquet") for b in POLICIES[policy]["benchmarks"]]


def policy_responses(policy):
    """The responses tables (ungraded: what scoring reads) of a policy's benchmarks."""
    return [plan.policy_path(config, policy, f"responses/{b}.parquet") for b in POLICIES[policy]["benchmarks"]]


def judged_samples(wc, table="samples"):
    """The samples the LLM-judge jobs (verifiers.smk) of one policy read, i.e. the judged benchmarks it samples;
    table="responses": the ungraded ones (the judge jobs, so a grading fix judges nothing again)."""
    own = policy_benchmarks(wc)
    return [
        plan.policy_path(config, policy_of(wc), f"{table}/{b}.parquet")
        for b in plan.bon_judge_benchmarks(config)
        if b in own
    ]


def sample_shards(wc):
    """The shard files of one problem set of one policy (sampling.shards jobs)."""
    return plan.sample_shards(config, wc.dataset, policy_of(wc))


def gpus(role_or_name):
    return plan.gpus(config, role_or_name)


mem_mb_for = plan.mem_mb_for


def gpu_mem_mb(role_or_name):
    """Host memory of a model's jobs (mem_mb_for its GPUs)."""
    return plan.mem_mb_for(gpus(role_or_name))


def engine_threads(role_or_name, pool=0):
    return plan.engine_threads(config, role_or_name, pool)


def features_input(prm, source):
    return plan.features_input(config, PRM_SPECS, prm, source)


def scoring_gpus(prm):
    return plan.scoring_gpus(config, PRM_SPECS, prm)


def prm_model_input(prm):
    return plan.spec_inputs(config, PRM_SPECS[prm])


# the arithmetic process checker (process_check.smk; its labels also feed the `checker` training sets)
PROCESS_CHECK = plan.process_check_enabled(config)
