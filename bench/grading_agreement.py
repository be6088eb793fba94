"""Agreement of `prm_lessons.grading` with the Qwen2.5-Math evaluation harness on real responses.

Reads ../shared/data/bon/math_cot_100_samples.jsonl (100 MATH problems x 8 policy responses in
`code`, the harness's verdicts in `score`, gold in `answer`), grades every response and prints the
agreement and each disagreement. Also prints grading throughput (responses/s) for 1 and N workers,
measured side by side in this run.

    python bench/grading_agreement.py [--data PATH] [--workers 2] [--timeout 5]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from prm_lessons.grading import grade_many, summarize  # noqa: E402

SHARED = Path(os.environ.get("PRM_LESSONS_SHARED", ROOT / ".." / "shared"))
DEFAULT = SHARED / "data" / "bon" / "math_cot_100_samples.jsonl"


def load(path: Path):
    texts, golds, verdicts, harness_preds, ids = [], [], [], [], []
    with open(path) as fh:
        for line in fh:
            row = json.loads(line)
            for k, (text, score) in enumerate(zip(row["code"], row["score"])):
                texts.append(text)
                golds.append(row["answer"])
                verdicts.append(bool(score))
                harness_preds.append(row["pred"][k])
                ids.append(f"{row['idx']}/{k}")
    return texts, golds, verdicts, harness_preds, ids


def agreement(path: Path = DEFAULT, workers: int = 2, timeout_s: float = 5.0, verbose: bool = True):
    texts, golds, verdicts, harness_preds, ids = load(path)
    t0 = time.perf_counter()
    results = grade_many(texts, golds, timeout_s=timeout_s, workers=workers)
    elapsed = time.perf_counter() - t0
    disagree = [(i, r) for i, r in enumerate(results) if r.correct != verdicts[i]]
    rate = 1 - len(disagree) / len(results)
    if verbose:
        print(f"responses: {len(results)}  harness correct: {sum(verdicts)}  ours correct: "
              f"{sum(r.correct for r in results)}  status counts: {summarize(results)}")
        print(f"agreement with the harness: {100 * rate:.2f}% ({len(results) - len(disagree)}/{len(results)})")
        for i, r in disagree:
            print(f"  {ids[i]}: gold={golds[i]!r} harness_pred={harness_preds[i]!r} harness={verdicts[i]} "
                  f"| ours pred={r.pred!r} correct={r.correct} status={r.status}")
        print(f"grading time: {elapsed:.1f}s with {workers} workers ({len(results) / elapsed:.0f} responses/s)")
    return rate, results, disagree


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0)
    args = ap.parse_args()
    if not args.data.exists():
        print(f"skipped: {args.data} not found (set PRM_LESSONS_SHARED)")
        return 0
    rate, _, _ = agreement(args.data, args.workers, args.timeout)
    return 0 if rate >= 0.98 else 1


if __name__ == "__main__":
    sys.exit(main())
