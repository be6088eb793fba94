"""The config: one model per section, each key with its type, default and description (the only place \
they are written; workflow/schemas/config.schema.json and docs/config-reference.md are generated from it)."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from .base import Name, Number, Section, Text, unique
from .checks import check_config
from .model_common import Dataset, ModelEntry
from .model_evaluation import Bon, BonJudges, Critics, ProcessbenchEval, Search
from .model_labels import Audit, Consensus, Human, Judge, MathShepherd, Mc, ProcessCheck, Trainsets
from .model_run import Cluster, DataPoliciesEntry, Grading, Hub, Prmbench, Processbench, Roles, Run, Sampling, Training
from .model_scoring import Prms


class AnalysisFig6Annotation(Section):
    per_benchmark: Annotated[int, Field(ge=0)] = Field(
        default=0,
        description='Responses per dataset on the sheet; 0 = no sheet (and `labels` must be null).')
    seed: int = Field(
        default=0,
        description='Seed of the random choice (a SHA-256 order of (seed, dataset, problem, sample)).')
    labels: Annotated[Text, Field(min_length=1)] | None = Field(
        default=None,
        description=(
            'The filled-in sheet (CSV with at least id and process_flawed: yes / no / blank = '
            'unlabelled; first_error_step: blank or 1..n_steps on a flawed row). null: Figure 6 from '
            "the judge's proxy."))


class AnalysisTable10(Section):
    n: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Its N: bon.n or an N of bon.more_n; null = the largest N of bon.more_n (none: Table 10 '
            'is not planned).'))
    benchmarks: list[str] = Field(
        default_factory=list,
        description=(
            'Its columns (benchmarks evaluated at that N); empty = the benchmarks of that bon.more_n '
            'entry (every benchmark for bon.n).'))


class AnalysisNotComparedItem(Section):
    rows: list[str] = Field(default_factory=list, description='Workflow row names or paper keys; empty = every row.')
    aggregations: list[Literal['product', 'min', 'last', 'mean']] = Field(
        default_factory=list,
        description='Aggregations; empty = every one.')
    columns: list[str] = Field(default_factory=list, description='Paper columns; empty = every column.')
    why: Annotated[Text, Field(min_length=1)] = Field(
        description="Why these cells are not the paper's quantity (printed under the table).")


class AnalysisFigure(Section):
    width_in: Annotated[Number, Field(gt=0)] = Field(
        default=3.3,
        description='Figure width in inches (one paper column).')
    dpi: Annotated[int, Field(ge=50)] = Field(default=300, description='PNG resolution.')
    font_size: Annotated[Number, Field(ge=4)] = Field(default=7, description='Base font size in points.')
    palette: str = Field(default='colorblind', description='seaborn palette (colour-blind safe by default).')


class Analysis(Section):
    benchmarks: list[str] = Field(
        default_factory=list,
        description=(
            'Best-of-N benchmarks shown in the tables and figures (names under `benchmarks`); empty '
            '= all. Averages are over these.'))
    aggregation: Literal['product', 'min', 'last', 'mean'] = Field(
        default='product',
        description=(
            'Step-score aggregation of the main tables and figures and of the Best-of-N selection in '
            'Figure 8 (the paper: product).'))
    aggregations: Annotated[list[Literal['product', 'min', 'last', 'mean']], Field(min_length=1)] = Field(
        default_factory=lambda: ['last', 'product', 'min'],
        validate_default=True,
        description='Aggregations shown in Table 13 (Figure 9 always shows min, product, last).')
    n: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description=(
            'Best-of-N N of the main tables; null = bon.n (filled in at validation, so the tables '
            "never pick a bon.more_n N). Null or bon.n (checked at validation): bon.csv's other N "
            "are bon.more_n's, on their own benchmarks."))
    seeds: Annotated[list[int], unique] = Field(
        default_factory=list,
        description=(
            "Seeds the run is repeated over for Table 6's seed spread: every value other than this "
            "run's sampling.seed names a seed replica run seed<value> (run.seed, "
            'config/seeds/seed<value>.yaml), made before in this working directory '
            '(runs/seed<value>/results/tables/bon.csv and bon_baselines.csv); Table 6 then gives '
            "each cell's sample standard deviation over this run and the replicas (a `seed s.d.` "
            'line under each row, `seed_sd` / `n_seeds` in its CSV beside the problem-resampling '
            "interval ci_low / ci_high). The base run's only: a named run (run.ablation) gets no "
            'seed spread. Empty: no seed spread (the intervals resample problems only).'))
    mc_experiment: Literal['860k', '3M'] = Field(
        default='860k',
        description=(
            "Which of the paper's MC-labelled data sets this run's MC labels reproduce: 860k (§3.1, "
            "Qwen2-Math-Instruct responses; Tables 3/4, Figures 2, 7, 9's 860k row) or 3M (§2.1 "
            "preliminary set; Tables 1/2, Figures 3-5, Figure 9's 3M rows). Published cells of the "
            'other set are shown but not compared (src/prm_lessons/published.yaml mc_experiments); '
            "those of this set only where the data policy (data_policies) is the set's source and "
            'the training set has its size (published.yaml data_sources, data_sizes).'))
    policy_flaw_datasets: list[str] = Field(
        default_factory=list,
        description=(
            'Sampled datasets (problem sets or benchmarks) whose judge verdicts measure the '
            'flawed-process rate among correct answers (Figure 6); empty = the Best-of-N benchmarks '
            '(analysis.benchmarks, else every benchmark: the paper\'s population, and lesson 4\'s). '
            'With flaw_judge the judge labels their samples.'))
    flaw_judge: bool = Field(
        default=True,
        description=(
            "Whether the judge (roles.judge) labels Figure 6's datasets (policy_flaw_datasets), giving its "
            "policy bars a judge row beside the arithmetic checker's (process_check) and the human "
            'annotation\'s. false: no judge job for Figure 6 (the embedded default: a 135M judge does not '
            'beat the structure-only baseline, so its verdicts measure no flaws).'))
    fig6_annotation: AnalysisFig6Annotation = Field(
        default_factory=AnalysisFig6Annotation,
        description=(
            "Figure 6's human path (the paper annotated random correct-answer responses by hand): "
            'rule fig6_annotation_sheet writes results/annotation/fig6_sheet.csv, per Figure 6 '
            'dataset (policy_flaw_datasets) `per_benchmark` seeded random correct-answer responses '
            'among the first analysis.n samples (id, benchmark, problem, numbered steps, empty label '
            'columns process_flawed / first_error_step / notes); `labels` names its filled-in copy, '
            "read back by the Figure 6 rule (every row checked, errors name the row's id) to give "
            "the human rate, compared with the paper's; without it Figure 6's policy bars are the "
            "judge's proxy, not compared."))
    paper_rows: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "This run's PRM / critic / variant name -> the paper row it reproduces (keys of "
            'src/prm_lessons/published.yaml, e.g. mc_hard, judge, human, consensus_hard, '
            'qwen25_math_prm_7b). A name not listed maps to itself.'))
    paper_columns: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "This run's benchmark / ProcessBench subset name -> the paper's column (gsm8k, math, "
            'minerva_math, gaokao2023en, olympiadbench, college_math, mmlu_stem, omnimath). A name '
            'not listed maps to itself; only mapped columns get a published number.'))
    policy: Name | None = Field(
        default=None,
        description=(
            'The Best-of-N policy (a key of bon.policies) of Tables 1, 3, 6, 10, 11, 13, 15 and '
            'Figures 1-5, 7, 9; null = the primary policy (the first entry of bon.policies).'))
    second_policy: Name | None = Field(
        default=None,
        description=(
            'The policy (a key of bon.policies) of Tables 9, 12, 14 and 16 (the paper: '
            'Qwen2.5-Math-72B-Instruct); null = the first entry of bon.policies other than '
            'analysis.policy. With no such entry those tables are not planned.'))
    table10: AnalysisTable10 = Field(
        default_factory=AnalysisTable10,
        description=(
            'Table 10 (the paper: Best-of-64 on MATH500, AIME24, AMC23, Minerva Math, GaoKao 2023 '
            'En, OlympiadBench).'))
    not_compared: list[AnalysisNotComparedItem] = Field(
        default_factory=list,
        description=(
            "Published cells this run's settings make a different quantity "
            "(prm_lessons.artifacts.comparability): shown beside the run's, never compared (no Δ); "
            '`why` becomes a note under each table it applies to. An entry matches a cell when every '
            'field it gives matches: `rows` (workflow row names or paper keys), `aggregations` '
            '(Best-of-N scoring; a table without its own takes analysis.aggregation), `columns` '
            "(paper columns; the row's average then loses its Δ too). Applies to the Best-of-N "
            'tables (6, 9, 10, 13-16) and Figure 1.'))
    chinese_benchmarks: list[str] = Field(
        default_factory=list,
        description=(
            'Columns of Tables 15 and 16 (the paper: CMATH, CN Middle School 24, GaoKao; names under '
            '`benchmarks`); empty = those tables are not planned.'))
    figure: AnalysisFigure = Field(default_factory=AnalysisFigure, description='Figure style (seaborn).')


class Paper(Section):
    pdf: Literal['auto', True, False] = Field(
        default='auto',
        description=(
            'Build paper/main.pdf: auto = when latexmk is on PATH, true = always (fails without '
            'LaTeX), false = never.'))
    latexmk_timeout_s: Annotated[int, Field(ge=10)] = Field(
        default=600,
        description='Time limit for one latexmk run.')


class Config(Section):
    run: Run = Field(default_factory=Run, description='Run identity, recorded in every table and figure.')
    cluster: Cluster = Field(
        default_factory=Cluster,
        description='Limits of the cluster the GPU jobs run on (SLURM).')
    models: Annotated[dict[Name, ModelEntry], Field(min_length=1)] = Field(
        description='Model entries by name; roles refer to them.')
    hub: Hub = Field(
        default_factory=Hub,
        description=(
            'Where Hub models are fetched to. Rule download_model (a local rule: the submit host '
            'needs the network, compute nodes do not) snapshots each `source: hub` model at its '
            'revision into cache_dir and links the files it needs into models_dir/<name>/, which GPU '
            'jobs load with HF_HUB_OFFLINE=1. Both must be on a file system the compute nodes see.'))
    roles: Roles = Field(description='Which model plays which part.')
    data_policies: dict[Name, DataPoliciesEntry] = Field(
        default_factory=dict,
        description=(
            'Data policies: the models whose responses to the training problems (`problems`) are '
            'labelled, each with its own sampling and the model completing its MC rollouts (paper '
            '§3.1.2: Qwen2-Math-7B-Instruct responses completed by Qwen2.5-Math-7B-Instruct). The '
            'data policies sample every training set into results/samples/{dataset} in place of the '
            'primary Best-of-N policy, whose benchmarks stay its own. Several entries are a mix (the '
            "paper's §2.1 3M set: Qwen2-Math- and Qwen2.5-Math-Instruct at 7B and 72B, each "
            'completed by the Qwen2.5-Math-Instruct of its size; config/paper_3m.yaml): each samples '
            'into results/data_policies/<name>/, their responses are joined (sample_idx offset by '
            'the responses per problem of the entries before it, a data_policy column), and each '
            "one's MC rollouts are completed by its own completer; names must differ from "
            "bon.policies'. {} = the primary Best-of-N policy samples the training problems and "
            'roles.completer completes them.'))
    problems: Annotated[dict[Name, Dataset], Field(min_length=1)] = Field(
        description=(
            'Problem sets whose sampled responses are labelled and used for PRM training, by name '
            '(names shared with `benchmarks`: no name in both).'))
    benchmarks: Annotated[dict[Name, Dataset], Field(min_length=1)] = Field(
        description='Best-of-N evaluation problem sets, by name (the paper: seven math benchmarks).')
    sampling: Sampling = Field(
        default_factory=Sampling,
        description='Policy sampling (vLLM). Defaults follow the Qwen2.5-Math README for maj@8/RM@8.')
    processbench: Processbench = Field(
        default_factory=Processbench,
        description=(
            'The ProcessBench cases (step-level benchmark): the official set from the Hub or local '
            'files, or a set built by construction on held-out problems (embedded default).'))
    prmbench: Prmbench = Field(
        default_factory=Prmbench,
        description=(
            'PRMBench (Song et al. 2025), the step-level benchmark PRM papers report beside '
            'ProcessBench: every PRM of the run scored on it (off in the embedded default).'))
    grading: Grading = Field(
        default_factory=Grading,
        description=(
            "Answer extraction (the Qwen2.5-Math harness's rules) and grading: math-verify or the "
            "harness's own math_equal."))
    training: Training = Field(
        default_factory=Training,
        description=(
            'PRM training (base LM + 2-class step head, transformers Trainer): one model per '
            'training-set variant under results/prms/{variant}/. Defaults are paper-style full '
            'fine-tuning; the embedded default trains the head only on CPU.'))
    mc: Mc = Field(
        default_factory=Mc,
        description=(
            'Monte Carlo estimation of step labels: K completions from every step prefix by the '
            'completer (roles.completer); mc_value = share reaching the gold answer.'))
    judge: Judge = Field(
        default_factory=Judge,
        description='LLM-as-a-judge step labels (roles.judge): first erroneous step per response.')
    human: Human = Field(
        default_factory=Human,
        description='Human step labels: PRM800K (paper scale) or labels by construction (embedded default).')
    math_shepherd: MathShepherd = Field(
        default_factory=MathShepherd,
        description=(
            "Math-Shepherd's released step labels (peiyi9979/Math-Shepherd: `input` with a `ки` tag "
            'after every step, `label` with + / - in its place, `task`), the data of trainsets '
            'variants with source math_shepherd; read by rule math_shepherd_labels, decontaminated '
            'like PRM800K.'))
    process_check: ProcessCheck = Field(
        default_factory=ProcessCheck,
        description=(
            'The arithmetic process checker (no model): exact step verdicts from every `<expression> '
            "= <number>` a step writes, on the primary policy's samples (results/labels/checker/), "
            'validated on a constructed ProcessBench set (results/tables/process_check.csv) and used '
            'for Best-of-N (results/tables/process_check_bon.csv: pass@N ceiling, checker-selected, '
            "flawed-process rate) and Figure 6's checker rows. Only for arithmetic data."))
    consensus: Consensus = Field(
        default_factory=Consensus,
        description=(
            'Consensus filtering: keep a response only where MC and the judge agree on the first '
            "erroneous step (both 'none' agrees)."))
    audit: Audit = Field(
        default_factory=Audit,
        description=(
            'The label audit (rules audit_slice, audit_labels, label_audit → '
            'results/tables/label_audit.csv): MC with every completion kept (naive protocol, the '
            '`mc` sampling settings), the judge (the `judge` settings) and their consensus '
            '(consensus.threshold) on constructed solutions with exact step truth, per generator × '
            '{gold, answer-changing error, answer-keeping error}; every MC threshold 0, 1/K, …, '
            "(K-1)/K and K' = 1, 2, 4, … K read from the same completions. Off by default."))
    trainsets: Trainsets = Field(
        default_factory=Trainsets,
        description=(
            'Training sets, one per variant (results/trainsets/{variant}.parquet); names must match '
            '[A-Za-z0-9_-]+ and are PRM names too (no clash with prms.models, no critic- or '
            'baseline_ prefix, no sweep variant name mc_hard_t<p>of<q> with another definition).'))
    prms: Prms = Field(
        default_factory=Prms,
        description=(
            'Step-scoring PRMs evaluated on Best-of-N and ProcessBench (evaluation stage): one '
            'trained PRM per training-set variant plus released models.'))
    critics: Critics = Field(
        default_factory=Critics,
        description=(
            'LLM critics on ProcessBench (Table 7): each entry of `judges` is one critic with its '
            'own model and settings; the keys beside `judges` are the defaults every critic takes '
            'unless its entry sets them. Prompt and verdict reading are shared with the labels judge '
            '(ProcessBench style).'))
    bon: Bon = Field(
        default_factory=Bon,
        description=(
            'Best-of-N evaluation: N samples per benchmark problem (drawn by the sample rule), '
            'response aggregations, majority grouping, bootstrap.'))
    bon_judges: BonJudges = Field(
        default_factory=BonJudges,
        description=(
            'LLMs as Best-of-N verifiers (paper App. B.5, Tables 11-12; prm_lessons.evaluation.verifiers): a '
            "prompted judge picks one of each problem's first bon.n responses, pointwise (every step "
            'labelled correct/incorrect; the highest fraction of correct steps wins, ties to the '
            'lowest sample_idx) or pairwise (a single-elimination tournament, N-1 comparisons, byes '
            'to the lowest sample indices, the lower index shown as Response A). One job per '
            '(policy, judge, mode) over every benchmark it judges (per problem shard: `shards`). The '
            "prompts are the project's (the paper does not print them)."))
    processbench_eval: ProcessbenchEval = Field(
        default_factory=ProcessbenchEval,
        description=(
            'ProcessBench metric settings (official definition: per-subset error/correct accuracy, '
            'F1 = harmonic mean, average = mean of subset F1s).'))
    search: Search = Field(
        default_factory=Search,
        description=(
            'PRM-guided greedy step search (paper App. A, Table 8; prm_lessons.evaluation.search): the policy '
            'proposes `candidates` next steps (sampling stops at sampling.step_separator), the PRM '
            'scores prefix + each, the best is kept (ties: lowest index), until a kept candidate '
            'ends the response or a limit. Beside it pass@1, pass@N, maj@N and orm@N of the same '
            'policy from `n` sampled responses. Empty `prms` = no search.'))
    analysis: Analysis = Field(
        default_factory=Analysis,
        description=(
            "The paper's tables and figures and the Best-of-N bias analyses (prm_lessons.evaluation.bias_analysis / "
            "figures); how this run's rows and columns map to the paper's."))
    paper: Paper = Field(default_factory=Paper, description='paper/: report.md (always), main.pdf via latexmk.')

    @model_validator(mode="after")
    def _cross_checks(self):
        check_config(self)
        return self
