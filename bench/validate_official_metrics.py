"""Validate the metric implementations against the official definitions on the real data in ../shared.

ProcessBench (3,400 cases): gold labels as predictions → every subset 1.0; all −1 → error_acc 0,
correct_acc 1, F1 0; a random prediction set scored by an independent re-implementation of the
official run_eval.py arithmetic (numpy means, harmonic mean, mean of subset F1s) equals ours.
Best-of-N (math_cot_100_samples.jsonl, 100 MATH problems × 8 responses from the Qwen2.5-Math harness):
maj@8, rm@8 (its `pred_score`, an ORM) and pass@8 recomputed the harness's way (rm_maj_eval.py:
Counter.most_common on the exact `pred` strings, index of the first max score) equal ours through the
`prm-lessons eval bon` code path with maj_grouping=exact.

Usage: python bench/validate_official_metrics.py [--shared ../shared]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from prm_lessons import metrics as M  # noqa: E402
from prm_lessons.data import load_processbench_cases  # noqa: E402


def _official_pb(cases: pd.DataFrame, preds: dict) -> dict:
    """The official run_eval.py arithmetic, written out independently (percentages → fractions)."""
    out = {}
    for subset, g in cases.groupby("subset"):
        data = [{"match": preds[i] == l, "label": l} for i, l in zip(g["id"], g["label"])]
        d1 = [e for e in data if e["label"] != -1]
        d2 = [e for e in data if e["label"] == -1]
        a1 = np.mean([e["match"] for e in d1]) * 100
        a2 = np.mean([e["match"] for e in d2]) * 100
        f1 = 2 * a1 * a2 / (a1 + a2) if a1 + a2 else 0.0
        out[subset] = (a1 / 100, a2 / 100, f1 / 100)
    return {"subsets": out, "average_f1": float(np.mean([v[2] for v in out.values()]))}


def check_processbench(pb_dir: Path) -> dict:
    cases = load_processbench_cases(str(pb_dir))
    gold = dict(zip(cases["id"], cases["label"].astype(int)))
    res = {"n_cases": len(cases)}
    m = M.processbench_metrics(cases, gold)
    res["gold"] = {k: (s["error_acc"], s["correct_acc"], s["f1"]) for k, s in m["subsets"].items()}
    m = M.processbench_metrics(cases, {i: -1 for i in gold})
    res["all_correct"] = {k: (s["error_acc"], s["correct_acc"], s["f1"]) for k, s in m["subsets"].items()}
    rnd = random.Random(0)
    steps = dict(zip(cases["id"], cases["steps"]))
    preds = {i: rnd.choice([-1, -1, l if l >= 0 else 0, rnd.randrange(len(steps[i]))]) for i, l in gold.items()}
    ours = M.processbench_metrics(cases, preds)
    ref = _official_pb(cases, preds)
    res["random_ours"] = {k: (s["error_acc"], s["correct_acc"], s["f1"]) for k, s in ours["subsets"].items()}
    res["random_official"] = ref["subsets"]
    res["random_avg"] = (ours["average_f1"], ref["average_f1"])
    res["ok"] = (all(v == (1.0, 1.0, 1.0) for v in res["gold"].values())
                 and all(v == (0.0, 1.0, 0.0) for v in res["all_correct"].values())
                 and all(np.allclose(res["random_ours"][k], ref["subsets"][k], atol=1e-12) for k in ref["subsets"])
                 and abs(ours["average_f1"] - ref["average_f1"]) < 1e-12 and len(cases) == 3400)
    return res


def check_bon(path: Path, k: int = 8) -> dict:
    rows = [json.loads(line) for line in open(path)]
    maj = rm = pas = 0
    for r in rows:  # rm_maj_eval.py, verbatim in logic
        preds, score = r["pred"][:k], r["score"][:k]
        majority = Counter(preds).most_common(1)[0][0]
        maj += score[preds.index(majority)]
        rs = [s for sc in r["pred_score"][:k] for s in sc]
        rm += score[rs.index(max(rs))]
        pas += any(score)
    harness = {"maj": maj / len(rows), "orm": rm / len(rows), "pass": pas / len(rows)}
    flat = [{"benchmark": "math", "problem_id": str(r["idx"]), "sample_idx": j, "pred": r["pred"][j],
             "correct": bool(r["score"][j]), "step_scores": None, "orm_score": r["pred_score"][j][0]}
            for r in rows for j in range(len(r["pred"]))]
    m = M.bon_metrics(pd.DataFrame(flat), [], n=k, maj_grouping="exact", orm_column="orm_score", bootstrap=1000)
    b = m["benchmarks"]["math"]
    return {"harness": harness, "ours": {"maj": b["maj"], "orm": b["orm"], "pass": b["pass"]},
            "ci": b["ci"], "n_problems": b["n_problems"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.environ.get("PRM_LESSONS_SHARED",
                                                       str(Path(__file__).resolve().parents[1] / ".." / "shared")))
    args = ap.parse_args()
    data = Path(args.shared) / "data"
    if not data.exists():
        print(f"{data}: not found (the reference data lives beside the repository)")
        return 1
    pb = check_processbench(data / "processbench")
    print(f"ProcessBench: {pb['n_cases']} cases")
    print(f"  gold labels as predictions (error_acc, correct_acc, F1): {pb['gold']}")
    print(f"  all -1 (error_acc, correct_acc, F1):                     {pb['all_correct']}")
    print(f"  random predictions, average F1 ours vs official arithmetic: {pb['random_avg'][0]:.6f} vs {pb['random_avg'][1]:.6f}")
    print(f"  -> {'OK' if pb['ok'] else 'MISMATCH'}")
    bon = check_bon(data / "bon" / "math_cot_100_samples.jsonl")
    print(f"Best-of-8 on {bon['n_problems']} MATH problems (harness rm_maj_eval.py vs ours):")
    for key in ("maj", "orm", "pass"):
        print(f"  {key}@8: harness {100 * bon['harness'][key]:.1f}  ours {100 * bon['ours'][key]:.1f}  "
              f"95% CI [{100 * bon['ci'][key][0]:.1f}, {100 * bon['ci'][key][1]:.1f}]")
    ok_bon = bon["harness"] == bon["ours"]
    print(f"  -> {'OK' if ok_bon else 'MISMATCH'}")
    return 0 if pb["ok"] and ok_bon else 1


if __name__ == "__main__":
    sys.exit(main())
