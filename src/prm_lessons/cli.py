"""Console script `prm-lessons` (also `python -m prm_lessons.cli`): `grade` (answer extraction and
grading of a JSONL file) and `eval {processbench,bon}` (the metrics on predictions or step scores)."""
from __future__ import annotations

import argparse
import json
import os
import sys

import pandas as pd

from .data import load_processbench_cases
from .grading import grade_rows
from .metrics import (
    AGGREGATIONS,
    BON_COLUMNS,
    MAJ_GROUPINGS,
    bon_metrics,
    evaluate_processbench,
    predictions_from_rows,
)
from .tables import read_records, write_json

# -- grade ---------------------------------------------------------------------------------------------

def _cmd_grade(args) -> int:
    rows = read_records(args.input)
    out, summary = grade_rows(rows, args.response_field, args.answer_field, args.timeout, args.workers,
                              answer_format=args.answer_format)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as fh:
        for row in out:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    n = summary["n"]
    print(f"graded {n} responses in {len(rows)} rows: {summary['correct']} correct "
          f"({100.0 * summary['correct'] / max(n, 1):.1f}%), {summary['no_answer']} without an answer, "
          f"{summary['timeout']} timed out (counted incorrect), {summary['error']} grading errors "
          f"(counted incorrect) -> {args.output}")
    return 0


def _add_grade(subparsers) -> None:
    p = subparsers.add_parser(
        "grade", help="extract final answers and grade them against gold answers (math-verify)",
        description="Writes every input row plus `pred` (extracted answer or null), `correct` (bool) and "
                    "`grade_status` (ok/no_answer/timeout/error). A response field holding a list of "
                    "responses (e.g. the harness's `code`) gives lists of the same length.")
    p.add_argument("--input", required=True, help="JSONL file, one row per problem or response")
    p.add_argument("--output", required=True, help="JSONL file to write")
    p.add_argument("--response-field", default="response", help="field with the response text (or a list of them)")
    p.add_argument("--answer-field", default="answer", help="field with the gold answer")
    p.add_argument("--answer-format", default="plain", choices=["plain", "gsm8k", "boxed", "choice"],
                   help="the dataset's answer_format (as in the config): choice = multiple choice as the "
                        "Qwen2.5-Math harness grades MMLU STEM (choice letter extracted; an option index as gold "
                        "is read as a letter). Any row whose gold is a letter A-E is graded as a choice.")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds per response before it counts as incorrect")
    p.add_argument("--workers", type=int, default=2, help="grading processes")
    p.set_defaults(func=_cmd_grade)


# -- eval ----------------------------------------------------------------------------------------------

def _cli_processbench(args) -> int:
    cases = load_processbench_cases(args.data)
    thr: float | str = "tune" if args.tune_threshold else args.threshold
    preds, scores = predictions_from_rows(read_records(args.predictions), args.threshold)
    dev_cases = dev_scores = None
    if bool(args.dev_data) != bool(args.dev_predictions):
        raise ValueError("--dev-data and --dev-predictions go together")
    if args.dev_data:
        dev_cases = load_processbench_cases(args.dev_data)
        _, dev_scores = predictions_from_rows(read_records(args.dev_predictions), args.threshold)
    m, _ = evaluate_processbench(cases, preds, scores, thr, dev_cases=dev_cases, dev_scores=dev_scores,
                                 bootstrap=args.bootstrap, seed=args.seed)
    write_json(m, args.output)
    for name, s in m["subsets"].items():
        print(f"{name:>14}: n={s['n']:5d} error_acc={100 * s['error_acc']:5.1f} "
              f"correct_acc={100 * s['correct_acc']:5.1f} f1={100 * s['f1']:5.1f}")
    print(f"{'average F1':>14}: {100 * m['average_f1']:.1f}"
          + (f"  (unparsable predictions: {m['n_unparsed']})" if m["n_unparsed"] else ""))
    if m["tuned_on"]:
        print(f"{'threshold':>14}: {m['threshold']} ({m['threshold_policy']})")
    return 0


def _cli_bon(args) -> int:
    rows = read_records(args.samples)
    for k, r in enumerate(rows):
        miss = [c for c in BON_COLUMNS if c not in r]
        if miss:
            raise ValueError(f"{args.samples}: row {k + 1} "
                             f"(problem_id={r.get('problem_id')!r}) lacks field(s) {miss}")
    df = pd.DataFrame(rows)
    aggs = [a.strip() for a in args.aggregations.split(",") if a.strip()]
    orm = "orm_score" if "orm_score" in df.columns else None
    m = bon_metrics(df, aggs, n=args.n, maj_grouping=args.maj_grouping, orm_column=orm,
                    bootstrap=args.bootstrap, seed=args.seed)
    write_json(m, args.output)
    for name, e in list(m["benchmarks"].items()) + [("average", m["average"])]:
        vals = " ".join(f"{k}={100 * v:.1f}" for k, v in e.items() if k not in ("n_problems", "n", "n_benchmarks", "ci"))
        print(f"{name:>14}: {vals}")
    return 0


def _add_eval(subparsers) -> None:
    ev = subparsers.add_parser("eval", help="evaluate predictions / step scores (ProcessBench, Best-of-N)")
    sub = ev.add_subparsers(dest="eval_command", required=True)

    pb = sub.add_parser("processbench", help="official ProcessBench metric (error/correct accuracy, F1)")
    pb.add_argument("--data", required=True, help="directory of {subset}.json files, a cases.parquet, or a Hub id")
    pb.add_argument("--predictions", required=True,
                    help='JSONL rows {"id", "prediction"} (int, -1 = no error) or {"id", "step_scores"}')
    pb.add_argument("--threshold", type=float, default=0.5,
                    help="a step is erroneous when its score is below this (default 0.5)")
    pb.add_argument("--tune-threshold", action="store_true",
                    help="use the threshold maximising the average F1 on the dev split (--dev-data and "
                         "--dev-predictions) instead; without one, cross-fit it over 2 folds of the cases "
                         "(each case is scored with the threshold tuned on the other fold); needs step_scores")
    pb.add_argument("--dev-data", default=None,
                    help="the dev split's cases (as --data; no id shared with --data) for --tune-threshold")
    pb.add_argument("--dev-predictions", default=None,
                    help='JSONL rows {"id", "step_scores"} of the dev split for --tune-threshold')
    pb.add_argument("--bootstrap", type=int, default=0, help="bootstrap resamples for CIs (0 = none)")
    pb.add_argument("--seed", type=int, default=0)
    pb.add_argument("--output", required=True, help="metrics JSON")
    pb.set_defaults(func=_cli_processbench)

    bon = sub.add_parser("bon", help="Best-of-N: prm@N per aggregation, maj@N, pass@N (+ orm@N)")
    bon.add_argument("--samples", required=True,
                     help='JSONL rows {"benchmark", "problem_id", "sample_idx", "pred", "correct", '
                          '"step_scores"} (optional "orm_score" → orm@N)')
    bon.add_argument("--aggregations", default="product,min,last",
                     help=f"comma list from {', '.join(AGGREGATIONS)}")
    bon.add_argument("--n", type=int, default=None, help="use the first N samples per problem (default: all)")
    bon.add_argument("--maj-grouping", default="normalized", choices=MAJ_GROUPINGS)
    bon.add_argument("--bootstrap", type=int, default=1000)
    bon.add_argument("--seed", type=int, default=0)
    bon.add_argument("--output", required=True, help="metrics JSON")
    bon.set_defaults(func=_cli_bon)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prm-lessons", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_grade(sub)  # order = help order
    _add_eval(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as exc:  # user errors: one clear line, no traceback
        print(f"prm-lessons: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
