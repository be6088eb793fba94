"""Agreement of `prm_lessons.grading` with the Qwen2.5-Math evaluation harness on real responses.

Reads ../shared/data/bon/math_cot_100_samples.jsonl (100 MATH problems x 8 policy responses in
`code`, the harness's verdicts in `score`, gold in `answer`), grades every response with each grader
(`grading.grader`: math_verify, the harness's math_equal as re-implemented in prm_lessons.grading.harness)
and prints, side by side, each one's agreement with the harness, its disagreements and its grading time
(responses/s with N workers, the graders measured one after the other in this run).

Multiple choice: no harness verdicts on real MMLU STEM responses are at hand, so ``--mmlu`` grades
crafted responses on every row of ../shared/data/bon/mmlu_stem.jsonl (the answer phrased as the
harness's `choice_answer_clean` rules read it: after a trigger, last letter, repeated trigger, the
article "a", no letter) and prints the agreement with the verdicts those rules give.

    python bench/grading_agreement.py [--data PATH] [--workers 2] [--timeout 5] [--grader G ...] [--mmlu]
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

from prm_lessons.grading.pool import GRADERS, grade_many, summarize  # noqa: E402

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


def agreement(path: Path = DEFAULT, workers: int = 2, timeout_s: float = 5.0, verbose: bool = True,
              grader: str = "math_verify"):
    texts, golds, verdicts, harness_preds, ids = load(path)
    t0 = time.perf_counter()
    results = grade_many(texts, golds, timeout_s=timeout_s, workers=workers, grader=grader)
    elapsed = time.perf_counter() - t0
    disagree = [(i, r) for i, r in enumerate(results) if r.correct != verdicts[i]]
    rate = 1 - len(disagree) / len(results)
    if verbose:
        print(f"[grader {grader}] responses: {len(results)}  harness correct: {sum(verdicts)}  ours correct: "
              f"{sum(r.correct for r in results)}  status counts: {summarize(results)}")
        print(f"[grader {grader}] agreement with the harness: {100 * rate:.2f}% "
              f"({len(results) - len(disagree)}/{len(results)})")
        for i, r in disagree:
            print(f"  {ids[i]}: gold={golds[i]!r} harness_pred={harness_preds[i]!r} harness={verdicts[i]} "
                  f"| ours pred={r.pred!r} correct={r.correct} status={r.status}")
        print(f"[grader {grader}] grading time: {elapsed:.1f}s with {workers} workers "
              f"({len(results) / elapsed:.0f} responses/s)")
    return rate, results, disagree, elapsed


MMLU = SHARED / "data" / "bon" / "mmlu_stem.jsonl"


def choice_cases(g: str, w: str) -> list[tuple[str, str, bool]]:
    """(response, harness pred, harness verdict) for gold letter g, wrong letter w (answer_format choice)."""
    return [(f"Let me think.\n\nThe answer is ({g}).", g, True),
            (f"So we get \\boxed{{{g}}}", g, True),
            (f"The answer is ({w}).", w, False),
            (f"I think (A) and (B) are out. The answer is {g}, not {w}.", g, True),
            (f"Options {w} and {g} remain; \\boxed{{{g}}}", g, True),
            ("The answer is 12.", "12", False),
            (f"The answer is {g}.\n\nQuestion: next one. The answer is {w}.", g, True),
            (f"the answer is ({g.lower()})", g, True),
            ("This is a hard one; \\boxed{12}", "A", g == "A"),
            (f"Eliminating \\boxed{{{w}}} first. The answer is {g}.", g, True)]


def mmlu_agreement(path: Path = MMLU, verbose: bool = True, grader: str = "math_verify"):
    rows = [json.loads(line) for line in open(path)]
    texts, golds, expected = [], [], []
    for k, row in enumerate(rows):
        g, w = "ABCD"[row["answer"]], "ABCD"[(row["answer"] + 1 + k % 3) % 4]
        for text, pred, ok in choice_cases(g, w):
            texts.append(text)
            golds.append(row["answer"])
            expected.append((pred, ok))
    t0 = time.perf_counter()
    results = grade_many(texts, golds, answer_format="choice", grader=grader)
    elapsed = time.perf_counter() - t0
    agree = sum((r.pred, r.correct) == e for r, e in zip(results, expected))
    if verbose:
        print(f"[grader {grader}] MMLU STEM ({len(rows)} rows x {len(choice_cases('A', 'B'))} crafted responses): "
              f"agreement with the harness rules {100 * agree / len(results):.2f}% ({agree}/{len(results)}), "
              f"{elapsed:.1f}s")
    return agree / len(results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--grader", choices=GRADERS, nargs="+", default=list(GRADERS),
                    help="graders to measure, side by side (default: all)")
    ap.add_argument("--mmlu", action="store_true", help="also the multiple-choice check on MMLU STEM")
    args = ap.parse_args()
    if args.mmlu and MMLU.exists() and any(mmlu_agreement(grader=g) < 1.0 for g in args.grader):
        return 1
    if not args.data.exists():
        print(f"skipped: {args.data} not found (set PRM_LESSONS_SHARED)")
        return 0
    rows = []
    for grader in args.grader:
        rate, results, disagree, elapsed = agreement(args.data, args.workers, args.timeout, grader=grader)
        rows.append((grader, len(results) - len(disagree), len(results), elapsed))
    print("\n| grader | agrees with the harness | grading time | responses/s |\n|---|---|---|---|")
    for grader, agree, n, elapsed in rows:
        print(f"| {grader} | {agree}/{n} ({100 * agree / n:.2f}%) | {elapsed:.1f} s | {n / elapsed:.0f} |")
    return 0 if all(agree / n >= 0.98 for _, agree, n, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
