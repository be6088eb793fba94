"""Synthetic upstream outputs with the documented columns (docs/architecture.md), for the analysis tests.

Values are random but consistent where the analysis relies on it (a BoN `average` row is the mean of
the benchmark rows; ProcessBench `average` F1 is the mean of the subset F1s).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

PRMS = ["mc_hard", "mc_soft", "judge", "human", "consensus_hard", "consensus_soft", "mc_hard_t1of2"]
SWEEP = [(0.0, "mc_hard"), (0.5, "mc_hard_t1of2")]
# the paper's BoN set
BON7 = ["gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem"]


def bon_frame(prms=PRMS, benches=("arith", "chain_sum"), n=4, seed=0) -> pd.DataFrame:
    """results/tables/bon.csv: prm, benchmark, metric, n, accuracy, ci_low, ci_high (fractions)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in prms:
        for m in ["pass", "maj", "prm_product", "prm_min", "prm_last"]:
            accs = []
            for b in benches:
                a = float(rng.uniform(0.1, 0.6))
                accs.append(a)
                rows.append(dict(prm=p, benchmark=b, metric=m, n=n, accuracy=a, ci_low=a - 0.05, ci_high=a + 0.05))
            a = float(np.mean(accs))
            rows.append(dict(prm=p, benchmark="average", metric=m, n=n, accuracy=a, ci_low=a - 0.03, ci_high=a + 0.03))
    return pd.DataFrame(rows)


def processbench_frame(prms=PRMS, subsets=("gsm8k", "math"), seed=0) -> pd.DataFrame:
    """results/tables/processbench.csv: prm, subset, n, error_acc, correct_acc, f1 (+ CI columns)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in prms:
        f1s = []
        for s in subsets:
            e, c = rng.uniform(0.05, 1, 2)
            f1 = 2 * e * c / (e + c)
            f1s.append(f1)
            rows.append(dict(prm=p, subset=s, n=20, error_acc=e, correct_acc=c, f1=f1, f1_ci_low=np.nan,
                             f1_ci_high=np.nan, n_unparsed=0, threshold=0.5))
        rows.append(dict(prm=p, subset="average", n=20 * len(subsets), error_acc=np.nan, correct_acc=np.nan,
                         f1=float(np.mean(f1s)), f1_ci_low=np.nan, f1_ci_high=np.nan, n_unparsed=0, threshold=0.5))
    return pd.DataFrame(rows)


def cases_frame(subsets=("gsm8k", "math"), per_subset=20, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for s in subsets:
        for i in range(per_subset):
            fac = i % 2 == 0
            label = -1 if (fac and i % 4 == 0) else int(rng.integers(0, 3))
            rows.append(dict(id=f"{s}-{i}", subset=s, generator="g", problem="q", steps=["a", "b", "c"],
                             final_answer_correct=fac, label=label))
    return pd.DataFrame(rows)


def write_upstream(root: str | Path, prms=PRMS, benches=("arith", "chain_sum"), subsets=("gsm8k", "math"),
                   flaw_datasets=("train",), n=4, n_problems=6, seed=0) -> Path:
    """Write every upstream file the analysis rules read, under root (a workflow working directory)."""
    rng = np.random.default_rng(seed)
    root = Path(root)
    (root / "results/tables").mkdir(parents=True, exist_ok=True)
    bon_frame(prms, benches, n, seed).to_csv(root / "results/tables/bon.csv", index=False)
    pd.DataFrame([dict(run="x", benchmark=b, n_problems=n_problems, n=n, **{"pass": 0.5, "maj": 0.3, "mean_acc": 0.2})
                  for b in list(benches) + ["average"]]).to_csv(root / "results/tables/bon_baselines.csv", index=False)
    processbench_frame(prms, subsets, seed).to_csv(root / "results/tables/processbench.csv", index=False)
    cases = cases_frame(subsets, seed=seed)
    (root / "results/processbench").mkdir(parents=True, exist_ok=True)
    cases.to_parquet(root / "results/processbench/cases.parquet")
    (root / "results/metrics/processbench").mkdir(parents=True, exist_ok=True)
    for p in prms:
        d = cases[["id", "subset", "label", "final_answer_correct"]].copy()
        d["prediction"] = pd.array(rng.integers(-1, 3, len(d)), dtype="Int64")
        d.to_parquet(root / f"results/metrics/processbench/{p}_predictions.parquet")
    for ds in list(flaw_datasets) + list(benches):
        smp = pd.DataFrame([dict(problem_id=f"{ds}-{i:05d}", sample_idx=k, dataset=ds, correct=bool(rng.random() < 0.5))
                            for i in range(n_problems) for k in range(n)])
        (root / "results/samples").mkdir(parents=True, exist_ok=True)
        smp.to_parquet(root / f"results/samples/{ds}.parquet")
        j = smp[["problem_id", "sample_idx"]].copy()
        j["first_error"] = pd.array(rng.integers(-1, 3, len(j)), dtype="Int64")
        j["verdicts"] = [["x"]] * len(j)
        j["parsed"] = True
        (root / "results/labels/judge").mkdir(parents=True, exist_ok=True)
        j.to_parquet(root / f"results/labels/judge/{ds}.parquet")
        if ds in benches:
            for p in prms:
                sc = smp.copy()
                sc["step_scores"] = [list(rng.uniform(0, 1, int(rng.integers(1, 5)))) for _ in range(len(sc))]
                (root / f"results/scores/{p}").mkdir(parents=True, exist_ok=True)
                sc.to_parquet(root / f"results/scores/{p}/{ds}.parquet")
    return root


def rule_inputs(prms=PRMS, benches=("arith", "chain_sum"), flaw_datasets=("train",)) -> dict:
    """Named inputs as workflow/rules/analysis.smk passes them (a superset; each rule reads its own)."""
    return {"bon": "results/tables/bon.csv", "baselines": "results/tables/bon_baselines.csv",
            "processbench": "results/tables/processbench.csv", "cases": "results/processbench/cases.parquet",
            "table5": "results/tables/table5_prm_tolerance.csv",
            **{f"predictions__{p}": f"results/metrics/processbench/{p}_predictions.parquet" for p in prms},
            **{f"scores__{p}__{b}": f"results/scores/{p}/{b}.parquet" for p in prms for b in benches},
            **{f"samples__{d}": f"results/samples/{d}.parquet" for d in flaw_datasets},
            **{f"judge__{d}": f"results/labels/judge/{d}.parquet" for d in flaw_datasets}}


def analysis_params(**over) -> dict:
    p = {"run": {"name": "synthetic", "label": "Synthetic test run (random numbers)"}, "aggregation": "product",
         "aggregations": ["last", "product", "min"], "n": None, "benchmarks": [], "paper_rows": {},
         "paper_columns": {}, "figure": {"width_in": 3.3, "dpi": 60, "font_size": 7, "palette": "colorblind"},
         "threshold_sweep": [list(x) for x in SWEEP], "policy": "smollm2", "second_policy": "smollm2_t1",
         "policy_labels": {"smollm2": "SmolLM2 (primary)", "smollm2_t1": "SmolLM2, T 1.0"},
         "table10": {"n": 2, "benchmarks": ["arith"]}, "chinese_benchmarks": [],
         "seed_runs": {"seed": 0, "replicas": []}}
    p.update(over)
    return p


def policy_bon_frame(prms=("human", "mc_hard", "mc_soft"), benches=("arith", "chain_sum"),
                     cells=(("smollm2", 4, 0.2), ("smollm2", 2, 0.5), ("smollm2_t1", 4, 0.8)),
                     policy_column: bool = True) -> pd.DataFrame:
    """bon.csv with a `policy` column and several N (the bon.policies / bon.more_n contract): every cell of
    (policy, N) has the one accuracy given, so a table that mixes in other rows shows it."""
    rows = []
    for policy, n, acc in cells:
        for p in prms:
            for m in ("pass", "maj", "prm_product", "prm_min", "prm_last"):
                for b in (*benches, "average"):
                    rows.append(dict(policy=policy, prm=p, benchmark=b, metric=m, n=n, accuracy=acc,
                                     ci_low=acc - 0.05, ci_high=acc + 0.05, run="x"))
    df = pd.DataFrame(rows)
    # a table without a policy column (written before bon.policies) holds the primary policy's rows only
    return df if policy_column else df[df["policy"] == cells[0][0]].drop(columns="policy")
