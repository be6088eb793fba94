"""Rule glue of workflow/rules/data.smk: pinned source files, problem tables, ProcessBench cases."""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from .. import as_paths
from ..data.prmbench import constructed_prmbench, is_standin, load_prmbench
from ..data.problems import load_problems
from ..data.processbench import constructed_processbench, load_processbench, processbench_paths
from ..data.sources import fetch_file, file_digests
from ..generation.fewshot import prompt_column
from ..labels.paper_prompt import paper_template
from ..tables import write_table, write_text_atomic

log = logging.getLogger(__name__)


def benchmark_file(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `benchmark_file`: a `source: url` dataset entry → its verified local copy."""
    spec = params["spec"]
    fetch_file(spec["url"], outputs["file"], spec, f"dataset '{wildcards['name']}'")
    log.info("dataset %s: %s -> %s (%s)", wildcards["name"], spec["url"], outputs["file"],
             file_digests(outputs["file"])["sha256"])


def fewshot_file(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `fewshot_file`: a dataset's `prompt.fewshot` file (the harness's examples.py) → its verified copy."""
    spec = params["spec"]
    fetch_file(spec["url"], outputs["file"], spec, f"dataset '{wildcards['name']}' prompt.fewshot")
    log.info("dataset %s: few-shot file %s -> %s (%s)", wildcards["name"], spec["url"], outputs["file"],
             file_digests(outputs["file"])["sha256"])


def processbench_file(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench_file`: one ProcessBench subset (processbench source url) → its verified copy."""
    subset, spec = wildcards["subset"], params["spec"]
    checks = {k: spec[k].get(subset) for k in ("sha256", "git_blob_sha1")}
    fetch_file(spec["url"].format(subset=subset), outputs["file"], checks, f"ProcessBench subset '{subset}'")


def critique_template(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `critique_template`: ProcessBench's critique_template.txt (critics.official_template) → its
    verified copy under resources/templates/."""
    spec = params["spec"]
    fetch_file(spec["url"], outputs["file"], spec, "ProcessBench critique template (critics.official_template)")
    log.info("critique template: %s -> %s (%s)", spec["url"], outputs["file"],
             file_digests(outputs["file"])["sha256"])


def fetch_paper_source(spec: dict, dest: Path) -> tuple[str, dict]:
    """The paper's source named by judge.paper_template → `dest`: its url with its own checks, else (the url
    could not be fetched: no route to arXiv, an outage) each pinned fallback in turn, read at its commit and
    checked against its sha256. A source that is fetched but fails its checks raises: never replaced by a
    fallback. (the url the source came from, the checks it passed.)"""
    checks = {k: spec.get(k) for k in ("sha256", "git_blob_sha1")}
    try:
        fetch_file(spec["url"], dest, checks, "the paper's source (judge.paper_template)")
        return spec["url"], checks
    except OSError as err:  # urllib's URLError and a missing file are OSErrors; a checksum mismatch is not
        fallbacks = spec.get("fallbacks") or []
        if not fallbacks:
            raise
        log.warning("judge.paper_template.url %s could not be fetched (%s): trying its %d pinned fallback(s)",
                    spec["url"], err, len(fallbacks))
        last = err
    for i, fb in enumerate(fallbacks):
        if fb["commit"].lower() not in fb["url"].lower():
            raise ValueError(f"judge.paper_template.fallbacks.{i}.url {fb['url']} does not name its commit "
                             f"{fb['commit']}")
        try:
            fetch_file(fb["url"], dest, {"sha256": fb["sha256"]},
                       f"the paper's source (judge.paper_template.fallbacks.{i}, commit {fb['commit']})")
        except OSError as err:
            log.warning("judge.paper_template.fallbacks.%d %s could not be fetched (%s)", i, fb["url"], err)
            last = err
            continue
        log.warning("the paper's source read from fallback %d: %s at commit %s (sha256 checked)", i, fb["url"],
                    fb["commit"])
        return fb["url"], {"sha256": fb["sha256"]}
    raise OSError(f"judge.paper_template: neither {spec['url']} nor any of its {len(fallbacks)} fallbacks could "
                  f"be fetched (last: {last})")


def judge_template(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `judge_template`: the paper's App. C judge prompt → resources/templates/ as a template with the
    judge's placeholders, read from the source judge.paper_template names (fetched and checksummed, or, when
    it cannot be fetched, a pinned fallback copy; the source itself is not kept)."""
    spec = params["spec"]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "source"
        url, checked = fetch_paper_source(spec, src)
        digests = file_digests(src)
        for key in ("sha256", "git_blob_sha1"):
            if not checked.get(key) and url == spec["url"]:  # not pinned yet: the value to pin
                log.warning("judge.paper_template.%s is null: the source was not checked; its %s is %s "
                            "(pin it in the config)", key, key, digests[key])
        template, words = paper_template(src, spec.get("text_sha256"))
    if not spec.get("text_sha256"):
        log.warning("judge.paper_template.text_sha256 is null: the prompt's words were not checked; they "
                    "digest to %s", words)
    write_text_atomic(outputs["file"], template)  # read as is by labels.judge.load_template
    log.info("App. C prompt: %s (sha256 %s) -> %s, %d characters, words digest %s\n%s", url,
             digests["sha256"], outputs["file"], len(template), words, template)


def problems(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `problems`: results/problems/{dataset}.parquet from the dataset's config entry."""
    name = wildcards["dataset"]
    spec = params["spec"]
    path = None
    if spec.get("source") == "url":  # the copy rule benchmark_file made
        path = (as_paths(inputs.get("source")) or [None])[0]
    df = load_problems(name, spec, path=path)
    if spec.get("prompt"):  # the policy's user turn (harness few-shot demos), beside the bare question
        demos = (as_paths(inputs.get("fewshot")) or [None])[0]
        df["prompt"] = prompt_column(df, spec["prompt"], demos)
        log.info("dataset %s: %d of %d prompts carry few-shot demonstrations", name,
                 int((df["prompt"] != df["question"].str.strip()).sum()), len(df))
    n_steps = df["gold_steps"].map(lambda s: len(s) if s is not None else 0)
    log.info("dataset %s: %d problems, %d with gold steps (mean %.1f steps)", name, len(df),
             int((n_steps > 0).sum()), float(n_steps[n_steps > 0].mean()) if (n_steps > 0).any() else 0.0)
    # repeated problems are kept as the source has them; the count and pairs travel with the table
    repeated = df.attrs["repeated"]  # load_problems always sets it
    write_table(df, outputs["problems"], "problems",
                meta={"dataset": name, "spec": params["spec"], "rows_loaded": df.attrs.get("rows_loaded"),
                      "n_repeated": len(repeated), "repeated": repeated})


def processbench(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench`: results/processbench/cases.parquet from the config's `processbench:` section."""
    spec = dict(params["spec"])
    source = spec.get("source", "constructed")
    if source == "constructed":
        # held out: no problem whose question is among the training problems (params.exclude)
        cases = constructed_processbench(spec["constructed"], params.get("exclude"))
    else:
        files = None
        if source == "url":  # the copies rule processbench_file made, in processbench_paths order
            got = as_paths(inputs.get("source"))
            files = dict(zip(processbench_paths(spec), got)) if got else None
        cases = load_processbench(spec, files=files)
    err = cases["label"] != -1
    log.info("processbench (%s): %d cases; per subset: %s; erroneous %d, correct %d, "
             "correct answer with erroneous step %d", source, len(cases),
             cases["subset"].value_counts().sort_index().to_dict(), int(err.sum()), int((~err).sum()),
             int((err & cases["final_answer_correct"]).sum()))
    write_table(cases, outputs["cases"], "processbench", meta={"spec": spec})


def processbench_dev(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench_dev`: results/processbench/dev.parquet, the dev split of a constructed
    ProcessBench (`processbench.constructed.dev`; questions disjoint from the evaluation cases and the
    training problems)."""
    spec = dict(params["spec"])
    cases = constructed_processbench(spec["constructed"], params.get("exclude"), split="dev")
    log.info("processbench dev split: %d cases; per subset: %s", len(cases),
             cases["subset"].value_counts().sort_index().to_dict())
    write_table(cases, outputs["cases"], "processbench", meta={"spec": spec, "split": "dev"})


STANDIN_NOTE = "stand-in (constructed; not PRMBench's data, never compared)"


def prmbench_file(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `prmbench_file`: prmbench.url (a pinned revision of prmbench_preview.jsonl) → its verified copy
    under resources/data/prmbench/; without a pinned checksum its digests are logged to pin."""
    spec = params["spec"]
    checks = {k: spec.get(k) for k in ("sha256", "git_blob_sha1")}
    fetch_file(spec["url"], outputs["file"], checks, "PRMBench file (prmbench.url)")
    digests = file_digests(outputs["file"])
    for key in ("sha256", "git_blob_sha1"):
        if not checks.get(key):
            log.warning("prmbench.%s is null: the file was not checked; its %s is %s (pin it in the config)",
                        key, key, digests[key])
    log.info("PRMBench: %s -> %s (sha256 %s)", spec["url"], outputs["file"], digests["sha256"])


def prmbench(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `prmbench`: results/prmbench/cases.parquet from prmbench.source: the pinned file's copy, a
    local copy, or the constructed stand-in (held out from the training problems)."""
    spec = params["spec"]
    if spec.get("source") == "constructed":
        cases = constructed_prmbench(spec, params.get("pool") or {}, params.get("exclude") or {})
        data = STANDIN_NOTE
    else:
        cases = load_prmbench(spec, file=(as_paths(inputs.get("source")) or [None])[0])
        data = spec.get("url") or spec.get("path")
        if spec.get("limit"):
            data = f"{data} (first {spec['limit']} records per classification)"
    write_table(cases, outputs["cases"], "prmbench", meta={"data": data, "standin": is_standin(cases)})
    counts = cases["classification"].value_counts().sort_index()
    log.info("PRMBench: %d cases (%s) from %s", len(cases), ", ".join(f"{k} {v}" for k, v in counts.items()), data)
