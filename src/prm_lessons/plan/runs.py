"""Plan stage: runs side by side (ablations) in one working directory.

An ablation overlay (a --configfile that sets `run.ablation: true` and its own `run.name`) layers on the
base run, the config of the files before it. Every file a job of the ablation writes is under
`runs/<name>/` (the base run's layout below it: results/, figures/, paper/, logs/), so none of its jobs
can write a file of the base run. What it reads of the expensive upstream results (problems, samples,
labels, training sets, PRMs, features, scores, critiques, judgements, searches) is the base run's file
when the config that produced that file is the same in both runs (a fingerprint of the config values its
job reads, broad, and of its inputs' fingerprints), else its own under runs/<name>/. Metrics, tables,
figures and the report are always its own. Model directories and pinned data files (resources/) are
shared: an ablation that changes what they are is refused (it needs its own --directory).
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import yaml

from ..config import deep_update, model_entry, validate_config
from .critics import critic_specs
from .evaluation import TRAINING_FEATURES_SOURCE, features_texts, resolve_prm_specs
from .policies import bon_n, bon_policies, judge_sample_cap, policy_of_dir
from .sampling import dataset_spec, samples_per_problem
from .search import search_benchmarks, search_n, search_policy_entry, search_prms
from .training import TOKEN_KEYS
from .trainsets import eval_set_paths, label_needs, role_model, trainset_inputs, trl_variants, variants

RUNS_DIR = "runs"
# a named run's own files always (cheap, and what the run is for): metrics, tables, figures, the report
PER_RUN = re.compile(r"^(results/(policies/[A-Za-z0-9_\-]+/)?(tables|metrics|checkpoints)/"
                     r"|results/(annotation|uploads)/|figures/|paper/|logs/|benchmarks/)")
SHARED = re.compile(r"^(resources/|\.snakemake/)")  # models, pinned data files, code fingerprints

_D = r"[A-Za-z0-9_\-]+"
_PD = r"(?P<pd>(?:(?:policies|data_policies)/[A-Za-z0-9_\-]+/)?)"
_SHARD = r"(?:/shard\d+of\d+)?"
# every upstream result path → its family (the fingerprint functions below, by group name)
FAMILIES = [
    ("problems", re.compile(rf"^results/problems/(?P<d>{_D})\.parquet$")),
    ("processbench", re.compile(r"^results/processbench/(cases|dev)\.parquet$")),
    ("prmbench", re.compile(r"^results/prmbench/cases\.parquet$")),
    ("samples", re.compile(rf"^results/{_PD}(?:responses|samples)/(?P<d>{_D}){_SHARD}\.parquet$")),
    ("labels", re.compile(rf"^results/labels/(?P<kind>mc|judge|consensus|checker)/(?P<d>{_D}){_SHARD}\.parquet$")),
    ("source", re.compile(r"^results/labels/(?P<kind>human|math_shepherd)\.parquet$")),
    ("trl", re.compile(rf"^results/labels/trl/(?P<v>{_D})\.parquet$")),
    ("audit", re.compile(r"^results/labels/audit/.+\.parquet$")),
    ("judge_pb", re.compile(rf"^results/labels/judge_processbench/{_D}\.parquet$")),
    ("trainset", re.compile(rf"^results/trainsets/(?:trl/)?(?P<v>{_D})\.(?:parquet|json|jsonl)$")),
    ("tokens", re.compile(rf"^results/trainsets/tokens/(?P<v>{_D})\.parquet$")),
    ("prm", re.compile(rf"^results/prms/(?P<v>{_D})(?:/.*)?$")),
    ("features", re.compile(r"^results/features/(?P<src>.+)\.safetensors$")),
    ("scores", re.compile(rf"^results/{_PD}scores/(?P<prm>{_D})/(?P<t>{_D}){_SHARD}\.parquet$")),
    ("critic", re.compile(rf"^results/critics/(?P<j>{_D})/processbench{_SHARD}\.parquet$")),
    ("bon_judge", re.compile(rf"^results/{_PD}bon_judges/(?P<j>{_D})/{_D}/(?P<b>{_D}){_SHARD}\.parquet$")),
    ("search", re.compile(r"^results/search/.+\.parquet$")),
]


def base_config(configfiles: list, config: dict, schema_path: str | Path | None = None) -> dict:
    """The base run of an invocation: the config files before the first ablation overlay (a file that
    sets `run.ablation: true`); the run itself when there is none."""
    merged: dict = {}
    read = []
    for p in configfiles:
        layer = _read_yaml(p)
        if (layer.get("run") or {}).get("ablation"):
            break
        deep_update(merged, layer)
        read.append(p)
    else:
        return config
    if not merged:
        raise ValueError(f"{p}: an ablation overlay (run.ablation: true) is layered on a base profile: "
                         "--configfile config/config.yaml <ablation> (or config/paper.yaml)")
    base = validate_config(merged, schema_path, files=read)
    if base["run"]["name"] == config["run"]["name"]:
        raise ValueError(f"{p}: an ablation overlay sets its own `run.name` (it is the base run's, "
                         f"'{base['run']['name']}'): its files go to runs/<run.name>/")
    return base


def overlay_warning(configfiles: list, config: dict) -> str | None:
    """One line when an overlay layered on a base file keeps the base's run.name: this run then writes its
    tables, figures and report over the base run's (a PRM added by docs/evaluate-your-prm.md does so on
    purpose, a sweep usually not); None otherwise."""
    if len(configfiles) < 2:
        return None
    base = configfiles[0]
    name = ((_read_yaml(base).get("run") or {}).get("name"))
    if config["run"]["name"] != name:
        return None
    overlays = ", ".join(map(str, configfiles[1:]))
    return (f"prm-lessons: warning: {overlays} keep{'s' if len(configfiles) == 2 else ''} the run.name of {base} "
            f"('{name}'): this run rewrites that run's tables, figures and paper/report.md; to keep them apart, "
            "give the overlay `run: {name: <its own>, ablation: true}` (its files go to runs/<name>/)")


def _read_yaml(path) -> dict:
    with open(path) as fh:
        return yaml.safe_load(fh) or {}


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


class _Fingerprints:
    """Fingerprint of an upstream result path under one config (memoised): the config values its job
    reads, broad where a rule reads part of a section (a spare rerun is cheaper than a stale reuse), and
    the fingerprints of what it reads."""

    def __init__(self, config: dict):
        self.c = config
        self.memo: dict[str, str | None] = {}

    def of(self, path: str) -> str | None:
        if path not in self.memo:
            self.memo[path] = self._compute(path)
        return self.memo[path]

    def _model(self, name):
        try:
            return model_entry(self.c, name)
        except Exception:  # noqa: BLE001 - an unknown name: the rule's own check reports it
            return name

    def _compute(self, path: str):
        c = self.c
        for fam, rx in FAMILIES:
            m = rx.match(path)
            if m:
                return _hash([fam, getattr(self, f"_{fam}")(m, path)])
        raise ValueError(f"run '{c['run']['name']}': no fingerprint for the result path {path!r} (a new kind of "
                         "result needs its family in prm_lessons.plan.runs.FAMILIES)")

    def _eval_sets(self):
        return [self.of(p) for p in eval_set_paths(self.c)]

    def _problems(self, m, path):
        return dataset_spec(self.c, m["d"])

    def _processbench(self, m, path):
        return [self.c.get("processbench"), self.c.get("problems")]

    def _prmbench(self, m, path):
        # the stand-in draws from the constructed ProcessBench's pool, held out from the training problems
        return [self.c.get("prmbench"), self.c.get("processbench"), self.c.get("problems")]

    def _samples(self, m, path):
        c, d = self.c, m["d"]
        pol = policy_of_dir(c, m["pd"])
        spec = bon_policies(c).get(pol)
        try:
            n = samples_per_problem(c, d, pol)
        except (ValueError, KeyError):  # a benchmark the policy does not sample (its score tables are empty),
            n = None                     # or a data policy of a mix the other run has not
        return [spec, spec and self._model(spec["model"]), n, c["sampling"], c["grading"], self._data_policies(),
                self.of(f"results/problems/{d}.parquet")]

    def _data_policies(self):
        """Who samples the training sets and completes their MC rollouts (data_policies), with the models."""
        pols = self.c.get("data_policies", {})
        return [pols, [(self._model(p.get("model")), self._model(p.get("completer"))) for p in pols.values()]]

    def _labels(self, m, path):
        c, d, kind = self.c, m["d"], m["kind"]
        samples = self.of(f"results/samples/{d}.parquet")
        if kind == "mc":
            return [c["mc"], label_needs(c), c["sampling"], c["grading"], self._model(role_model(c, "completer")),
                    self._data_policies(), samples]
        if kind == "judge":
            return [c["judge"], judge_sample_cap(c, d), self._model(role_model(c, "judge")), samples,
                    self.of(f"results/problems/{d}.parquet")]
        if kind == "consensus":
            return [c["consensus"], c["mc"]["completions"], self.of(f"results/labels/mc/{d}.parquet"),
                    self.of(f"results/labels/judge/{d}.parquet")]
        return [c.get("process_check"), samples]  # checker

    def _source(self, m, path):
        return [self.c.get(m["kind"]), self.c.get("problems"), self._eval_sets()]

    def _trl(self, m, path):
        return [trl_variants(self.c).get(m["v"]), self._eval_sets()]

    def _audit(self, m, path):
        c = self.c
        judge = c["judge"] if c["audit"].get("judge", True) else None  # audit.judge off: no judge call on it
        return [c["audit"], c["mc"], judge, c["consensus"], c["sampling"], c["grading"],
                self._model(role_model(c, "completer")), self._data_policies(), self._eval_sets()]

    def _judge_pb(self, m, path):
        c = self.c
        return [c["judge"], self._model(role_model(c, "judge")), self.of("results/processbench/cases.parquet")]

    def _trainset(self, m, path):
        c, v = self.c, m["v"]
        spec = variants(c).get(v)
        ins = trainset_inputs(c, v) if spec else {}
        export = c.get("trainsets", {}).get("export_trl") if "/trl/" in path else None
        return [spec, c["mc"]["completions"], export,
                sorted((k, [self.of(p) for p in _flat(ps)]) for k, ps in ins.items())]

    def _tokens(self, m, path):
        # what rule tokenize_trainset reads: the token settings (not all of `training`: an ablation of the
        # learning rate reads the base run's tokens), the base's tokenizer, the label type, the trainset
        c, v = self.c, m["v"]
        train = c["training"]
        spec = variants(c).get(v)
        return [{k: train[k] for k in TOKEN_KEYS}, self._model(train.get("base", "policy")),
                spec and spec["label_type"], self.of(f"results/trainsets/{v}.parquet")]

    def _prm(self, m, path):
        c, v = self.c, m["v"]
        train = c["training"]
        spec = variants(c).get(v)
        return [train, self._model(train.get("base", "policy")), spec and spec["label_type"],
                self.of(f"results/trainsets/{v}.parquet")]

    def _features(self, m, path):
        c = self.c
        if m["src"] == TRAINING_FEATURES_SOURCE:  # the shared pass over the training responses: every
            # training set's sampled ones and, with trainsets.responses constructed, the pool's solutions
            data = [self.of(f) for f in features_texts(c, TRAINING_FEATURES_SOURCE)]
        else:
            data = self.of(f"results/{m['src']}.parquet")
        return [c["training"], self._model(c["training"].get("base", "policy")), c["prms"], data]

    def _prm_spec(self, prm):
        c = self.c
        spec = resolve_prm_specs(c).get(prm)
        if spec is None:
            return None
        extra = ([self.of(spec["path"]), c["training"]] if spec["trained"]
                 else [self._model(spec["model"]), spec.get("ref_model") and self._model(spec["ref_model"])])
        return [spec, c["prms"], extra]

    def _scores(self, m, path):
        t, pd = m["t"], m["pd"]
        if t in ("processbench", "processbench_dev"):
            data = [self.of("results/processbench/cases.parquet"), self.of("results/processbench/dev.parquet")]
        elif t == "prmbench":
            data = [self.of("results/prmbench/cases.parquet")]
        else:
            data = [self.of(f"results/{pd}responses/{t}.parquet")]
        return [self._prm_spec(m["prm"]), data]

    def _critic(self, m, path):
        c = self.c
        spec = critic_specs(c).get(m["j"])
        return [spec, c["critics"], spec and self._model(spec["model"]), self.of("results/processbench/cases.parquet")]

    def _bon_judge(self, m, path):
        c = self.c
        return [c["bon_judges"], bon_n(c), c["models"], self.of(f"results/{m['pd']}samples/{m['b']}.parquet")]

    def _search(self, m, path):
        c = self.c
        s = c["search"]
        prms = [*search_prms(c, resolve_prm_specs(c)), *([s["orm"]] if s.get("orm") else [])]
        return [s, c["sampling"], c["grading"], search_n(c), search_policy_entry(c), c["bon"].get("maj_grouping"),
                [self._prm_spec(p) for p in prms],
                [self.of(f"results/problems/{b}.parquet") for b in search_benchmarks(c)],
                [self.of(f"results/samples/{b}.parquet") for b in search_benchmarks(c)]]


def _flat(x):
    return [x] if isinstance(x, str) else [p for y in x for p in _flat(y)]


def _shared_specs(config: dict) -> dict:
    """What the shared files under resources/ are (model directories, pinned data files)."""
    keys = ("source", "id", "revision", "trust_remote_code", "dtype")
    return {"models": {n: {k: e.get(k) for k in keys} for n, e in config["models"].items()},
            "hub": config.get("hub"),
            "official_template": config.get("critics", {}).get("official_template"),
            "data": {s: {n: {k: v for k, v in (e or {}).items() if k in ("url", "sha256", "git_blob_sha1", "prompt")}
                         for n, e in config.get(s, {}).items()} for s in ("problems", "benchmarks")},
            "processbench": {k: v for k, v in config.get("processbench", {}).items()
                             if k in ("url", "sha256", "git_blob_sha1", "subsets")}}


class RunPaths:
    """Where a run's files are: `out(path)` for what its jobs write (runs/<name>/... for a named run),
    `inp(x)` for what they read (a path, a list, a dict, or an input function returning them)."""

    def __init__(self, config: dict, base: dict):
        self.name = config["run"]["name"]
        self.base_name = base["run"]["name"]
        self.named = self.name != self.base_name
        self.prefix = f"{RUNS_DIR}/{self.name}/" if self.named else ""
        if self.named:
            a, b = _shared_specs(config), _shared_specs(base)
            # a model only the named run has is a directory of its own (config/paper_3m.yaml's 72B policy)
            a["models"] = {n: e for n, e in a["models"].items() if n in b["models"]}
            b["models"] = {n: e for n, e in b["models"].items() if n in a["models"]}
            diff = sorted(k for k in a if a[k] != b[k])
            if diff:
                raise ValueError(f"run '{self.name}' changes shared files of the base run '{self.base_name}' "
                                 f"(models / hub / pinned data: {', '.join(diff)}): run it in its own working "
                                 "directory (--directory)")
        self._run, self._base = _Fingerprints(config), _Fingerprints(base)

    def base_unfinished(self, root: str | Path = ".") -> str | None:
        """A named run started before its base run finished here (no base paper/report.md): the reason
        Snakemake will name base files as missing input, with what to run first; None otherwise."""
        if not self.named or (Path(root) / "paper" / "report.md").exists():
            return None
        return (f"run '{self.name}' reads the upstream results of the base run '{self.base_name}' (samples, labels, "
                f"PRMs, scores), which has not finished in this directory (no paper/report.md): run the base "
                f"first (make run, or the same command without the ablation file); missing files are named below")

    def out(self, x):
        """What a job writes (a path, a list or dict of them; a directory() or report() flag kept)."""
        if isinstance(x, dict):
            return {k: self.out(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [self.out(v) for v in x]
        if not self.prefix or not str(x).startswith(("results/", "figures/", "paper/", "logs/", "benchmarks/")):
            return x  # shared (resources/: models, pinned data) or outside the working directory
        if type(x) is not str and hasattr(x, "flags"):  # snakemake's flagged path (directory, report)
            new = type(x)(self.prefix + str(x))
            new.flags = x.flags
            return new
        return self.prefix + x

    def of_run(self, name: str, path: str) -> str:
        """Where run `name` (this one, its base, or another ablation run here before) has `path`."""
        if name == self.name:
            return self.inp(path)
        return path if name == self.base_name else f"{RUNS_DIR}/{name}/{path}"

    def own(self, path: str) -> bool:
        """Whether a named run reads its own copy of `path` (True: under runs/<name>/)."""
        if not self.named or SHARED.match(path) or not path.startswith(("results/", "figures/", "paper/", "logs/")):
            return False
        if PER_RUN.match(path):
            return True
        return self._run.of(path) != self._base.of(path)

    def inp(self, x):
        if not self.named:
            return x
        if callable(x):  # an input function (of the wildcards, as every one in workflow/rules)
            return lambda wc: self.inp(x(wc))
        if _has_pattern(x):  # wildcards in it: resolved per job
            return lambda wc: self.inp(_fill(x, dict(wc.items())))
        if isinstance(x, str):
            return self.prefix + x if self.own(x) else x
        if isinstance(x, dict):
            return {k: self.inp(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [self.inp(v) for v in x]
        return x


def _has_pattern(x) -> bool:
    if isinstance(x, str):
        return "{" in x
    if isinstance(x, (list, tuple)):
        return any(callable(v) or _has_pattern(v) for v in x)
    return False


def _fill(x, wc: dict):
    if isinstance(x, str):
        return x.format(**wc)
    return _flat([v(wc) if callable(v) else _fill(v, wc) for v in x])
