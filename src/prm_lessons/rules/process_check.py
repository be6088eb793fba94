"""Rule glue of workflow/rules/process_check.smk: the arithmetic process checker (no model, seconds) on
the primary policy's samples, its validation on the constructed ProcessBench cases and Best-of-N with it.
Logic: prm_lessons.labels.process_check (the checker), prm_lessons.metrics.checker (the tables)."""
from __future__ import annotations

import pandas as pd

from .. import as_paths
from ..metrics.checker import BON_COLUMNS, bon, check_samples, validation
from ..tables import read_table, write_csv, write_table


def process_check_labels(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `process_check_labels`: the checker's step verdicts on one problem set's samples →
    results/labels/checker/{dataset}.parquet."""
    samples = read_table(inputs["samples"], "samples")
    df = check_samples(samples)
    n_steps, n_checkable = int(df["n_steps"].sum()), int(df["n_checkable"].sum())
    summary = {"responses": len(df), "flagged": int((df["first_error"] != -1).sum()), "steps": n_steps,
               "steps_checkable": n_checkable}
    print(f"process check ({wildcards.get('dataset', '')}): {summary}", flush=True)
    write_table(df, outputs["table"], "checker", meta={"summary": summary})


def process_check_validation(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `process_check_validation`: the checker against the constructed ProcessBench cases' exact labels
    → results/tables/process_check.csv."""
    cases = read_table(inputs["cases"], "processbench")
    df = validation(cases)
    df["run"] = params.get("run_label", "")
    write_csv(df, outputs["csv"], "process_check_csv")
    print(df[df["subset"] == "all"].drop(columns=["run"]).to_string(index=False), flush=True)


def process_check_bon(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `process_check_bon`: pass@N (perfect verifier), checker-selected Best-of-N and the checker's
    flawed-process rate per benchmark → results/tables/process_check_bon.csv."""
    samples, checks = as_paths(inputs["samples"]), as_paths(inputs["checks"])
    benches = list(params["benchmarks"])
    if not (len(samples) == len(checks) == len(benches)):
        raise ValueError(f"process_check_bon: {len(benches)} benchmarks, {len(samples)} samples tables, "
                         f"{len(checks)} checker tables")
    n = params.get("n")
    parts = [bon(read_table(s, "samples"), read_table(c, "checker"), b, None if n is None else int(n))
             for b, s, c in zip(benches, samples, checks)]
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=BON_COLUMNS)
    df["run"] = params.get("run_label", "")
    write_csv(df, outputs["csv"], "process_check_bon_csv")
    print(df.drop(columns=["run"]).to_string(index=False), flush=True)
