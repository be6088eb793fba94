"""Console script `prm-lessons` (also `python -m prm_lessons.cli`): `grade` (answer extraction and
grading of a JSONL file), `score` (step scores of a JSONL file from any PRM), `eval {processbench,bon}`
(the metrics on predictions or step scores) and `export-trl` (a training set in TRL's stepwise-supervision
format)."""
from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
import warnings
from pathlib import Path
from typing import Iterable
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from .config import SEED_RANGE
from .data.processbench import load_processbench_cases
from .errors import InputError, is_bool, json_type
from .grading.pool import GRADERS, MAX_WORKERS
from .grading.rows import grade_rows
from .labels.stepwise import to_stepwise, write_stepwise
from .metrics.bon import bon_metrics
from .metrics.processbench import (
    TUNE_PROTOCOLS,
    DegenerateTuningWarning,
    evaluate_processbench,
    first_error,
    mark_undefined_f1,
)
from .metrics.rows import (
    BON_COLUMNS,
    check_threshold,
    prediction_value,
    processbench_input_problems,
    score_list_problem,
    show_value,
)
from .metrics.select import AGGREGATIONS, MAJ_GROUPINGS
from .metrics.stats import MAX_BOOTSTRAP
from .tables import RowError, loads_strict, read_records, read_table, write_json, write_text_atomic

# -- argument types: bad values are argparse errors (usage + one line, exit status 2) ------------------

def _int_at_least(low: int, high: int | None = None):
    want = f"an integer ≥ {low}" if high is None else f"an integer in {low}..{high:_}".replace("_", ",")

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if v < low or (high is not None and v > high):
            raise argparse.ArgumentTypeError(f"expected {want}, got {v}")
        return v
    return parse


_positive_int = _int_at_least(1)
# resource arguments: the bounds the config's schema has for the same keys (config/README.md)
_bootstrap = _int_at_least(0, MAX_BOOTSTRAP)
_workers = _int_at_least(1, MAX_WORKERS)
_seed = _int_at_least(*SEED_RANGE)
_batch_rows = _int_at_least(1, 65_536)  # rows per forward pass: beyond any GPU's memory long before this
_batch_tokens = _int_at_least(1, 2**24)  # padded tokens per forward pass: 16M, ~1,000x the default


def _finite_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def _positive_float(text: str) -> float:
    v = _finite_float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return v


def _check_output(path: str) -> None:
    """--output must be a file path whose parent is (or can be made) a directory this user may write, checked
    before any work (a full disk shows only when writing: tables.atomic_path names the file then)."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"--output {path} is a directory; give a file path")
    parent = p.resolve().parent
    for up in [parent, *parent.parents]:
        if up.exists():
            if not up.is_dir():
                raise ValueError(f"--output {path}: {up} is not a directory")
            if not os.access(up, os.W_OK | os.X_OK) and not (p.exists() and os.access(p, os.W_OK)):
                raise ValueError(f"--output {path}: {up} is not writable")
            break


def _json_safe(value, counter: list) -> object:
    """value with every NaN/±inf float replaced by null (JSON has no NaN); counter[0] counts them."""
    if isinstance(value, float) and not math.isfinite(value):
        counter[0] += 1
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v, counter) for v in value]
    return value


# -- checks of the arguments as a whole, before any command runs (main) ----------------------------------

def _reads(action: argparse.Action) -> argparse.Action:
    """Mark an argument as naming a file or folder the command reads: an --output that is it is refused."""
    action.reads = True
    return action


# flags read only under another setting: (command, dest) -> (whether it is read, why it would not be).
# A value other than the flag's default is refused when not read: the user asked for something nothing does.
READ_ONLY_WHEN = {
    ("grade", "keep_units"): (lambda a: a.grader == "harness",
                              "is read only by --grader harness (the harness's units rule)"),
    ("score", "ref_model"): (lambda a: a.adapter == "eurus",
                             "is read only by --adapter eurus (the implicit PRM's reference model)"),
    ("score", "revision"): (lambda a: not Path(a.prm).exists(),
                            "picks a commit of a Hub id, and --prm is a local path"),
    ("eval processbench", "seed"): (lambda a: a.bootstrap > 0, "seeds the bootstrap, and --bootstrap is 0"),
    ("eval bon", "seed"): (lambda a: a.bootstrap > 0, "seeds the bootstrap, and --bootstrap is 0"),
    ("eval bon", "maj_timeout"): (lambda a: a.maj_grouping == "math_verify",
                                  "is read only by --maj-grouping math_verify (the others compare no answers)"),
    ("eval bon", "workers"): (lambda a: a.maj_grouping == "math_verify",
                              "is read only by --maj-grouping math_verify (the others start no workers)"),
}


def command_parser(parser: argparse.ArgumentParser, args) -> tuple[str, argparse.ArgumentParser]:
    """The command's name ("eval bon") and its own parser."""
    names, p = [], parser
    while sub := next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None):
        names.append(getattr(args, sub.dest))
        p = sub.choices[names[-1]]
    return " ".join(names), p


def _flag(action: argparse.Action) -> str:
    return max(action.option_strings, key=len)


def _same_file(output: str, given: str) -> str | None:
    """How `output` would overwrite or join the input `given` (the same file, a file already in that input
    folder, or a new file in it: a folder's next read would take it for input, e.g. a `gsm8k.json` in a
    ProcessBench --data folder), or None. samefile sees through links, hard links and letter case on a
    case-insensitive file system."""
    src = Path(given)
    if not src.exists():
        return None  # a Hub id, or a missing file the command reports itself
    out = Path(os.path.realpath(output))  # `a/../b`: the folders it really lies in
    for up in [out, *out.parents]:
        try:
            if up.exists() and os.path.samefile(up, src):
                if up == out:
                    return "is the same folder as" if src.is_dir() else "is the same file as"
                return "is a file in the folder" if out.exists() else "would be a new file in the folder"
        except OSError:
            continue
    if os.path.normcase(str(out)) == os.path.normcase(os.path.realpath(src)):
        return "is the same file as"
    return None


def check_args(parser: argparse.ArgumentParser, args) -> None:
    """Arguments that would destroy an input or do nothing, refused before any work (ValueError naming the
    flag): an empty value; an --output that is (or lies in) a file or folder the command reads; a flag
    given where nothing reads it (READ_ONLY_WHEN)."""
    command, p = command_parser(parser, args)
    for a in p._actions:
        value = getattr(args, a.dest, None)
        if a.option_strings and isinstance(value, str) and not value.strip():
            raise ValueError(f"{_flag(a)}: an empty value")
    output = getattr(args, "output", None)
    for a in p._actions:
        value = getattr(args, a.dest, None)
        if output and getattr(a, "reads", False) and isinstance(value, str):
            how = _same_file(output, value)
            if how:
                harm = ("mix an output into the input folder" if how.startswith("would") else
                        "destroy the input")
                raise ValueError(f"--output {output} {how} {_flag(a)} {value}: writing it would {harm}; give "
                                 "another output path")
    inert = []
    for a in p._actions:
        rule = READ_ONLY_WHEN.get((command, a.dest))
        value = getattr(args, a.dest, None)
        if rule and value != a.default and not rule[0](args):
            shown = "" if isinstance(value, bool) else f" {value}"
            inert.append(f"{_flag(a)}{shown} {rule[1]}: it would do nothing here")
    if inert:  # every one at once: a fix for each in one go
        raise ValueError("\n".join(inert))


# -- grade ---------------------------------------------------------------------------------------------

def _cmd_grade(args) -> int:
    _check_output(args.output)
    rows = read_records(args.input)
    try:
        out, summary = grade_rows(rows, args.response_field, args.answer_field, args.timeout, args.workers,
                                  answer_format=args.answer_format, grader=args.grader, keep_units=args.keep_units)
    except InputError as exc:
        raise exc.within(args.input) from None
    nonfinite = [0]
    lines = [json.dumps(_json_safe(row, nonfinite), ensure_ascii=False, allow_nan=False) + "\n" for row in out]
    write_text_atomic(args.output, "".join(lines))
    n = summary["n"]
    print(f"graded {n} responses in {len(rows)} rows: {summary['correct']} correct "
          f"({100.0 * summary['correct'] / max(n, 1):.1f}%), {summary['no_answer']} without an answer, "
          f"{summary['timeout']} timed out (counted incorrect), {summary['error']} grading errors "
          f"(counted incorrect) -> {args.output}"
          + (f"; {nonfinite[0]} NaN/infinite value(s) of other fields written as null" if nonfinite[0] else ""))
    return 0


def _add_grade(subparsers) -> None:
    p = subparsers.add_parser(
        "grade", help="extract final answers and grade them against gold answers "
                      "(math-verify or the harness's math_equal)",
        description="Writes every input row plus `pred` (extracted answer or null), `correct` (bool) and "
                    "`grade_status` (ok/no_answer/timeout/error). A response field holding a list of "
                    "responses (e.g. the harness's `code`) gives lists of the same length; a response that "
                    "is not text (null, a number) has no answer. Every row is checked first: a line that "
                    "is not a JSON object, a missing field, or a gold answer that is null, NaN, empty, a "
                    "boolean or an object is an error naming the row (exit status 2, nothing graded or "
                    "written). NaN/infinite values of other fields are written as null (JSON has no NaN).")
    _reads(p.add_argument("--input", required=True, help="JSONL file, one row per problem or response"))
    p.add_argument("--output", required=True, help="JSONL file to write")
    p.add_argument("--response-field", default="response", help="field with the response text (or a list of them)")
    p.add_argument("--answer-field", default="answer", help="field with the gold answer")
    p.add_argument("--answer-format", default="plain", choices=["plain", "gsm8k", "boxed", "choice"],
                   help="the dataset's answer_format (as in the config): choice = multiple choice as the "
                        "Qwen2.5-Math harness grades MMLU STEM (choice letter extracted; an option index as gold "
                        "is read as a letter). Any row whose gold is a letter A-E is graded as a choice. With "
                        "--grader harness it also sets the gold's normalisation passes as the harness's: one for "
                        "boxed (a gold read from a solution), two otherwise.")
    p.add_argument("--timeout", type=_positive_float, default=5.0,
                   help="seconds per response before it counts as incorrect (> 0)")
    p.add_argument("--workers", type=_workers, default=2, help=f"grading processes (1..{MAX_WORKERS})")
    p.add_argument("--grader", default="math_verify", choices=list(GRADERS),
                   help="the comparison (config grading.grader): math-verify, or the Qwen2.5-Math harness's "
                        "math_equal on its normalised answers")
    p.add_argument("--keep-units", action="store_true",
                   help="with --grader harness: normalise as the harness does for Minerva Math (units kept)")
    p.set_defaults(func=_cmd_grade)


# -- score ---------------------------------------------------------------------------------------------

def _cmd_score(args) -> int:
    # lazy: torch and transformers (~several seconds to import) only for the one command that runs a model
    from .scoring import score_file as SF

    _check_output(args.output)
    try:  # the rows' strict reader: a repeated key, deep nesting or undecodable bytes are errors here too
        params = loads_strict(args.params) if args.params else {}
    except json.JSONDecodeError as exc:
        shown = args.params if len(args.params) <= 80 else f"{args.params[:60]}…({len(args.params):,} characters)"
        raise ValueError(f"--params: not JSON ({exc.msg}): {shown!r}") from None
    except RowError as exc:
        raise ValueError(f"--params: {exc}") from None
    if not isinstance(params, dict):
        raise ValueError(f"--params: expected a JSON object, got {args.params!r}")
    rows = read_records(args.input)
    try:
        SF.parse_rows(rows)  # every row checked before anything is downloaded or loaded
    except InputError as exc:
        raise exc.within(args.input) from None
    for flag, ref in (("--prm", args.prm), ("--ref-model", args.ref_model)):
        if ref and not Path(ref).exists() and SF.HUB_ID_RE.match(ref) and not _offline():
            why = _hub_unreachable()
            if why:
                raise ValueError(f"{flag} {ref}: the Hugging Face Hub cannot be reached ({why}); give a local "
                                 "directory, or set HF_HUB_OFFLINE=1 to use a copy in the Hugging Face cache")

    def progress(done: int, total: int, seconds: float) -> None:
        print(f"scored {done}/{total} rows ({done / max(seconds, 1e-9):.1f} rows/s)", file=sys.stderr, flush=True)

    s = SF.score_file(rows, args.prm, args.output, adapter=args.adapter, params=params, revision=args.revision,
                      dtype=args.dtype, max_length=args.max_length, trust_remote_code=args.trust_remote_code,
                      ref_model=args.ref_model, batch_tokens=args.batch_tokens, batch_size=args.batch_size,
                      progress=progress)
    what = ("one outcome score per row" if s["outcome"] else
            f"{s['steps_scored']} of {s['steps']} steps" + (f" ({s['rows_truncated']} row(s) cut at max_length "
                                                             f"{s['max_length']}: their last steps are null)"
                                                             if s["rows_truncated"] else ""))
    print(f"scored {s['rows']} rows with adapter {s['adapter']} ({s['prm_dir']}): {what}; "
          f"{s['forward_passes']} forward passes, {s['seconds']:.1f} s -> {args.output}"
          + (f"; {s['nonfinite']} non-finite score(s) written as null" if s["nonfinite"] else ""))
    return 0


def _add_score(subparsers) -> None:
    p = subparsers.add_parser(
        "score", help="score every step of a JSONL file with a PRM (trained here, or a released format)",
        description="Reads rows {id?, problem, steps: [...]} or TRL's {prompt, completions: [...]}, scores "
                    "every step with the PRM through the workflow's own scoring code, and writes each input "
                    "row plus `step_scores` (one per step; null for a step past --max-length) and "
                    "`n_steps_scored` (an outcome RM, adapter qwen_orm: `outcome_score`). Every row is "
                    "checked first: a line that is not an object, a missing or mixed form, a problem that is "
                    "not a string, steps that are not a list of strings, a blank problem or step, an id that "
                    "is not text or an integer, a duplicate id, TRL `labels` "
                    "that are not one boolean per completion (as rule trl_labels checks them) are errors naming "
                    "the row (exit status 2, nothing loaded or written). Rows with an `id` and the "
                    "ProcessBench steps feed `prm-lessons eval processbench --predictions` directly.")
    _reads(p.add_argument("--prm", required=True,
                   help="PRM directory (one trained by this workflow, results/prms/<variant>, or a released "
                        "checkpoint) or a Hub id org/name"))
    _reads(p.add_argument("--input", required=True, help="JSONL (or .json / .parquet) rows to score"))
    p.add_argument("--output", required=True, help="JSONL file to write")
    p.add_argument("--adapter", default=None,
                   help="the PRM's family, as prms.models.<name>.adapter (config/README.md): qwen_prm, "
                        "math_shepherd, rlhflow, skywork, eurus, qwen_orm, token_classification, declared "
                        "(any other PRM, "
                        "described by --params); leave it out for a "
                        "PRM trained by this workflow (its prm.json says so); required otherwise")
    p.add_argument("--params", default=None,
                   help='adapter options as a JSON object, e.g. \'{"step_separator": "\\n\\n"}\' for '
                        "token_classification (the `params` of a prms.models entry)")
    p.add_argument("--revision", default=None, help="with a Hub id: the commit or branch (default main)")
    _reads(p.add_argument("--ref-model", default=None, help="adapter eurus: the reference model (directory or Hub id)"))
    p.add_argument("--dtype", choices=["auto", "bfloat16", "float16", "float32"], default=None,
                   help="weights dtype of a released checkpoint (default: the checkpoint's)")
    p.add_argument("--max-length", type=_positive_int, default=None,
                   help="tokens per input; whole leading steps are kept (default: a trained PRM's training "
                        "max_length, else no limit)")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="run the checkpoint's own Hub code (off: the body loads through transformers' class, "
                        "the head is built here)")
    p.add_argument("--batch-tokens", type=_batch_tokens, default=16384,
                   help="padded tokens per forward pass (1..16,777,216)")
    p.add_argument("--batch-size", type=_batch_rows, default=64, help="rows per forward pass (1..65,536)")
    p.set_defaults(func=_cmd_score)


# -- eval ----------------------------------------------------------------------------------------------

def _hub_unreachable() -> str | None:
    """Why the Hugging Face Hub cannot be reached (None when a TCP connection opens within 5 s, or a
    proxy is configured, which only the download itself can test). Without this, `datasets` retries
    for about 25 s before its ConnectionError."""
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"
    return None


def _offline() -> bool:
    return any(os.environ.get(k, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _load_cases(source: str, flag: str):
    """load_processbench_cases, with a Hub id that cannot be fetched reported in one line, fast."""
    hub = not Path(source).exists() and source.count("/") == 1
    if hub and not _offline():
        why = _hub_unreachable()
        if why:
            raise ValueError(f"{flag} {source}: the Hugging Face Hub cannot be reached ({why}); give a "
                             "directory of {subset}.json files or a cases.parquet, or set HF_HUB_OFFLINE=1 "
                             "to use a copy in the datasets cache")
    try:
        return load_processbench_cases(source)
    except (ConnectionError, TimeoutError) as exc:
        state = "offline (HF_HUB_OFFLINE=1) and not in the datasets cache" if _offline() else "download failed"
        raise ValueError(f"{flag} {source}: cannot load the Hub dataset: {state} ({exc}); give a directory "
                         "of {subset}.json files or a cases.parquet") from None


def predictions_from_rows(rows: Iterable[dict], threshold: float,
                          cases: pd.DataFrame | None = None) -> tuple[dict, dict]:
    """{"id", "prediction"} or {"id", "step_scores"} rows → (predictions by id, step_scores by id).
    Every row is checked and every problem listed (InputError, naming the row or the id): a row that is
    not an object or has no usable id, a duplicate id, both or neither of prediction / step_scores, a
    prediction that is not null or an integer ≥ −1 (booleans, strings, 1.9 are errors), step_scores that
    are not a non-empty list of finite numbers (null, NaN, ±inf, strings, booleans are errors). A
    `threshold` that is not a finite number is an error. With `cases`, the predictions and score lists
    are also checked against the cases' numbers of steps (check_processbench_inputs) and those problems
    are listed with the others (evaluate_processbench checks them anyway)."""
    threshold = check_threshold(threshold)
    preds, scores, seen, problems = {}, {}, {}, []
    for k, r in enumerate(rows):
        if not isinstance(r, dict):
            problems.append(f"row {k + 1}: a JSON {json_type(r)}, not an object")
            continue
        if "id" not in r:
            problems.append(f"row {k + 1}: no 'id'")
            continue
        raw = r["id"]
        if is_bool(raw) or not (isinstance(raw, str) and raw.strip() or isinstance(raw, (int, np.integer))):
            problems.append(f"row {k + 1}: id {show_value(raw)} is not a non-empty string or an integer")
            continue
        i = str(raw)
        if i in seen:
            problems.append(f"duplicate prediction for id '{i}' (rows {seen[i]} and {k + 1})")
            continue
        seen[i] = k + 1
        if "prediction" in r and "step_scores" in r:
            problems.append(f"id '{i}': the row has both 'prediction' and 'step_scores' (give one)")
        elif "prediction" in r:  # null = an unparsable critic answer: counted wrong, reported
            p, why = prediction_value(r["prediction"])
            if why:
                problems.append(f"id '{i}': {why}")
            else:
                preds[i] = p
        elif "step_scores" in r:
            why = score_list_problem(r["step_scores"], finite=True)
            if why:
                problems.append(f"id '{i}': {why}")
            else:
                s = [float(x) for x in r["step_scores"]]
                scores[i] = s
                preds[i] = first_error(s, threshold)
        else:
            problems.append(f"id '{i}': row needs 'prediction' or 'step_scores'")
    if cases is not None:
        problems += processbench_input_problems(cases, preds, scores)
    if problems:
        raise InputError(problems)
    return preds, scores


def _tuning_args(args) -> tuple[float | str, str]:
    """(threshold, tune_on) of `eval processbench`: an explicit --tune-on implies --tune-threshold; flags that
    would do nothing (--threshold with tuning, a dev split without tuning or with a protocol that does not
    read it) are errors naming them."""
    tune = args.tune_threshold or args.tune_on is not None
    tune_on = args.tune_on or "auto"
    if tune and args.threshold is not None:
        raise ValueError(f"--threshold {args.threshold:g} and "
                         + (f"--tune-on {args.tune_on}" if args.tune_on else "--tune-threshold")
                         + ": give a fixed threshold or tuning, not both")
    for flag, given in (("--dev-data", args.dev_data), ("--dev-predictions", args.dev_predictions)):
        if given and not tune:
            raise ValueError(f"{flag} is read only when tuning the threshold (--tune-threshold or --tune-on "
                             "dev/auto); without tuning it would be ignored")
        if given and tune_on in ("gsm8k", "crossfit"):
            raise ValueError(f"{flag}: --tune-on {tune_on} does not read a dev split (use --tune-on dev or auto)")
    if bool(args.dev_data) != bool(args.dev_predictions):
        raise ValueError("--dev-data and --dev-predictions go together")
    return ("tune" if tune else (0.5 if args.threshold is None else args.threshold)), tune_on


def _cli_processbench(args) -> int:
    thr, tune_on = _tuning_args(args)
    _check_output(args.output)
    cases = _load_cases(args.data, "--data")
    fixed = 0.5 if thr == "tune" else thr  # the predictions of step_scores rows before tuning replaces them
    try:
        preds, scores = predictions_from_rows(read_records(args.predictions), fixed, cases)
    except InputError as exc:
        raise exc.within(args.predictions) from None
    dev_cases = dev_scores = None
    if args.dev_data:
        dev_cases = _load_cases(args.dev_data, "--dev-data")
        try:
            _, dev_scores = predictions_from_rows(read_records(args.dev_predictions), fixed, dev_cases)
        except InputError as exc:
            raise exc.within(args.dev_predictions) from None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DegenerateTuningWarning)
        m, _ = evaluate_processbench(cases, preds, scores, thr, dev_cases=dev_cases, dev_scores=dev_scores,
                                     bootstrap=args.bootstrap, seed=args.seed, tune_on=tune_on)
    notes = [str(w.message) for w in caught if issubclass(w.category, DegenerateTuningWarning)]
    for w in caught:  # numpy's "All-NaN slice" is the interval of an undefined accuracy: said below instead
        if not issubclass(w.category, DegenerateTuningWarning) and "All-NaN slice" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    notes += mark_undefined_f1(m)
    write_json(m, args.output)
    for name, s in m["subsets"].items():
        f1 = (f"F1 undefined ({s['f1_undefined']})" if "f1_undefined" in s
              else f"f1={_pct(s['f1'])}{_ci_text(s.get('ci', {}).get('f1'))}")
        print(f"{name:>14}: n={s['n']:5d} error_acc={_pct(s['error_acc'])} correct_acc={_pct(s['correct_acc'])} {f1}")
    undefined = [f"{n}: {s['f1_undefined']}" for n, s in m["subsets"].items() if "f1_undefined" in s]
    avg = (f"undefined ({'; '.join(undefined)})" if undefined
           else f"{100 * m['average_f1']:.1f}{_ci_text(m.get('average_f1_ci'))}")
    print(f"{'average F1':>14}: {avg}" + (f"  (unparsable predictions: {m['n_unparsed']})" if m["n_unparsed"] else ""))
    if m["tuned_on"]:
        print(f"{'threshold':>14}: {m['threshold']} ({m['threshold_policy']})")
    if args.bootstrap:
        print(f"{'intervals':>14}: [low, high] = 95% bootstrap interval, {args.bootstrap:,} resamples "
              f"(seed {args.seed})")
    for line in notes:
        print(f"prm-lessons: warning: {line}", file=sys.stderr)
    return 0


def _pct(v) -> str:
    """A fraction as a percentage, 5 wide ('  n/a' when undefined)."""
    return "  n/a" if v is None or not math.isfinite(v) else f"{100 * v:5.1f}"


def _ci_text(ci) -> str:
    """' [low, high]' of an interval of fractions, in percent; '' without one (no bootstrap, or undefined)."""
    if not ci or any(v is None or not math.isfinite(v) for v in ci):
        return ""
    return f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _cli_bon(args) -> int:
    aggs = [a.strip() for a in args.aggregations.split(",")]
    why = ("an empty name in the list" if not all(aggs) else "an aggregation named twice"
           if len(set(aggs)) != len(aggs) else next((f"unknown aggregation {a!r}" for a in aggs
                                                     if a not in AGGREGATIONS), None))
    if why:  # an empty list would select nothing: no prm@N, silently
        raise ValueError(f"--aggregations {args.aggregations!r}: {why} (a comma list from {', '.join(AGGREGATIONS)})")
    _check_output(args.output)
    rows = read_records(args.samples)
    if not rows:
        raise InputError(["no rows"], args.samples)
    with_orm = any(isinstance(r, dict) and "orm_score" in r for r in rows)
    problems = []
    for k, r in enumerate(rows):
        if not isinstance(r, dict):
            problems.append(f"row {k + 1}: a JSON {json_type(r)}, not an object")
            continue
        miss = [c for c in BON_COLUMNS + (["orm_score"] if with_orm else []) if c not in r]
        if miss:
            problems.append(f"row {k + 1} (problem_id={r.get('problem_id')!r}) lacks field(s) {miss}"
                            + (" (orm_score: other rows have one)" if miss == ["orm_score"] else ""))
    if problems:
        raise InputError(problems, args.samples)
    df = pd.DataFrame(rows)
    try:
        m = bon_metrics(df, aggs, n=args.n, maj_grouping=args.maj_grouping,
                        orm_column="orm_score" if with_orm else None, bootstrap=args.bootstrap, seed=args.seed,
                        maj_timeout_s=args.maj_timeout, workers=args.workers)
    except InputError as exc:
        raise exc.within(args.samples) from None
    write_json(m, args.output)
    for name, e in list(m["benchmarks"].items()) + [("average", m["average"])]:
        vals = " ".join(f"{k}={100 * v:.1f}{_ci_text(e.get('ci', {}).get(k))}" for k, v in e.items()
                        if k not in ("n_problems", "n", "n_benchmarks", "ci"))
        print(f"{name:>14}: {vals}")
    if args.bootstrap:
        print(f"{'intervals':>14}: [low, high] = 95% bootstrap interval, {args.bootstrap:,} resamples "
              f"(seed {args.seed})")
    for col, count in m["n_unscored"].items():
        if count:
            ids = [f"{b}/{p}" for b, lists in m["unscored"].items() for p in lists.get(col, [])]
            print(f"{'note':>14}: {col}: {count} problem(s) without a finite score on any response, counted "
                  f"wrong: {', '.join(ids[:10])}" + (f" … and {len(ids) - 10} more" if len(ids) > 10 else ""))
    mc = m["maj_comparisons"]
    if mc.get("timeouts") or mc.get("errors"):
        print(f"{'note':>14}: maj ({args.maj_grouping}): {mc['timeouts']} of {mc['comparisons']} answer comparisons "
              f"timed out after {args.maj_timeout:g} s and {mc['errors']} failed (each counted as different answers)")
    return 0


def _add_eval(subparsers) -> None:
    ev = subparsers.add_parser("eval", help="evaluate predictions / step scores (ProcessBench, Best-of-N)")
    sub = ev.add_subparsers(dest="eval_command", required=True)

    pb = sub.add_parser(
        "processbench", help="official ProcessBench metric (error/correct accuracy, F1)",
        description="Every prediction row is checked against its case; each problem is an error line "
                    "naming the id (exit status 2, no metrics written): a row that is not a JSON object, "
                    "a prediction that is not null or an integer in [-1, n_steps - 1] (booleans, strings, "
                    "1.9 are errors; null = unparsable, counted wrong), step_scores that are not a list of "
                    "finite numbers with exactly one score per step (null, NaN, inf, strings, booleans are "
                    "errors), unknown, duplicate or missing ids.")
    _reads(pb.add_argument("--data", required=True,
                           help="directory of {subset}.json files, a cases.parquet, or a Hub id"))
    _reads(pb.add_argument("--predictions", required=True,
                    help='JSONL rows {"id", "prediction"} (int, -1 = no error) or {"id", "step_scores"}'))
    pb.add_argument("--threshold", type=_finite_float, default=None,
                    help="a step is erroneous when its score is below this (default 0.5; a finite number; "
                         "not with tuning)")
    pb.add_argument("--tune-threshold", action="store_true",
                    help="tune the threshold instead (--tune-on, default auto); needs step_scores")
    pb.add_argument("--tune-on", choices=TUNE_PROTOCOLS, default=None,
                    help="tune the threshold (implies --tune-threshold) by: dev = the best average F1 on the "
                         "dev split (--dev-data and --dev-predictions); crossfit = cross-fitted over 2 folds of "
                         "the cases (each case is scored with the threshold tuned on the other fold); gsm8k = "
                         "ProcessBench's rule, the best F1 on the gsm8k subset (in-sample) applied to all; "
                         "auto (the default with --tune-threshold) = dev with a dev split, else crossfit")
    _reads(pb.add_argument("--dev-data", default=None,
                    help="the dev split's cases (as --data; no id shared with --data) for tuning on the dev "
                         "split (an error without tuning, or with --tune-on gsm8k/crossfit)"))
    _reads(pb.add_argument("--dev-predictions", default=None,
                    help='JSONL rows {"id", "step_scores"} of the dev split, with --dev-data'))
    pb.add_argument("--bootstrap", type=_bootstrap, default=0,
                    help=f"bootstrap resamples for CIs (0 = none; at most {MAX_BOOTSTRAP:,})")
    pb.add_argument("--seed", type=_seed, default=0, help="resampling seed (0..2**32-1)")
    pb.add_argument("--output", required=True, help="metrics JSON")
    pb.set_defaults(func=_cli_processbench)

    bon = sub.add_parser(
        "bon", help="Best-of-N: prm@N per aggregation, maj@N, pass@N (+ orm@N)",
        description="Every row is checked first; each problem is an error line naming the row (exit status 2, "
                    "no metrics written): a line that is not a JSON object, a missing field, `correct` that "
                    "is not a JSON boolean or 0/1 (the string \"False\" is an error, as is null; 1.0 and 0.0 are "
                    "accepted), `pred` "
                    "that is not text or null, step_scores that are not null or a list of numbers, a "
                    "duplicate response, problems with unequal numbers of responses. A response whose "
                    "aggregated score is not finite (no step scores, an empty list, NaN or inf) is never "
                    "chosen; a problem where no response has a finite score counts as WRONG for that "
                    "selector and is reported (printed, and `unscored` / `n_unscored` in the metrics JSON).")
    _reads(bon.add_argument("--samples", required=True,
                     help='JSONL rows {"benchmark", "problem_id", "sample_idx", "pred", "correct", '
                          '"step_scores"} (optional "orm_score" → orm@N)'))
    bon.add_argument("--aggregations", default="product,min,last",
                     help=f"comma list from {', '.join(AGGREGATIONS)}")
    bon.add_argument("--n", type=_positive_int, default=None,
                     help="use the first N samples per problem (≥ 1; default: all)")
    bon.add_argument("--maj-grouping", default="harness", choices=MAJ_GROUPINGS)
    bon.add_argument("--maj-timeout", type=_positive_float, default=5.0,
                     help="--maj-grouping math_verify: seconds per answer comparison, run in a grading worker "
                          "that is killed after it (a timed-out comparison counts as different answers)")
    bon.add_argument("--workers", type=_workers, default=2,
                     help=f"grading processes for --maj-grouping math_verify (1..{MAX_WORKERS})")
    bon.add_argument("--bootstrap", type=_bootstrap, default=1000,
                     help=f"bootstrap resamples (0 = none; at most {MAX_BOOTSTRAP:,})")
    bon.add_argument("--seed", type=_seed, default=0, help="resampling seed (0..2**32-1)")
    bon.add_argument("--output", required=True, help="metrics JSON")
    bon.set_defaults(func=_cli_bon)


# -- export-trl ------------------------------------------------------------------------------------------

def _cmd_export_trl(args) -> int:
    _check_output(args.output)
    df = read_table(args.trainset, "trainset")
    rows = to_stepwise(df, args.soft_threshold, where=str(args.trainset))
    write_stepwise(rows, args.output)
    n_steps = sum(len(r["labels"]) for r in rows)
    n_pos = sum(sum(r["labels"]) for r in rows)
    print(f"exported {len(rows)} instances ({n_steps} steps, {n_pos} positive) from {args.trainset} "
          f"-> {args.output}")
    return 0


def _add_export_trl(subparsers) -> None:
    p = subparsers.add_parser(
        "export-trl", help="write a training set in TRL's stepwise-supervision format",
        description="Reads a training set the workflow built (results/trainsets/<variant>.parquet, or "
                    "results/labels/{human,math_shepherd}.parquet) and writes one row per instance: "
                    "{prompt, completions, labels} with one boolean per step, as TRL's PRMTrainer reads "
                    "(a .jsonl or .parquet file, by suffix). A `source: trl` variant reads the file back. "
                    "Soft labels (any label other than 0 or 1) are an error naming the instance unless "
                    "--soft-threshold is given.")
    _reads(p.add_argument("--trainset", required=True, help="a trainset table (.parquet)"))
    p.add_argument("--output", required=True, help="the file to write (.jsonl or .parquet)")
    p.add_argument("--soft-threshold", type=_finite_float, default=None,
                   help="soft labels: a step is positive iff its label > this (the MC hard-label rule)")
    p.set_defaults(func=_cmd_export_trl)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="prm-lessons", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_grade(sub)  # order = help order
    _add_score(sub)
    _add_eval(sub)
    _add_export_trl(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_args(parser, args)
        return int(args.func(args) or 0)
    except InputError as exc:  # bad input rows: one line per problem (the first 20, then a count)
        lines = exc.lines()
    except KeyError as exc:  # str(KeyError) would quote the message
        lines = [str(exc.args[0]) if exc.args else type(exc).__name__]
    except ValueError as exc:
        lines = str(exc).splitlines() or [type(exc).__name__]  # user errors: clear lines, no traceback
    except OSError as exc:  # a missing input, an unwritable output, a full disk: one line naming the file
        lines = [f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else
                 (str(exc).splitlines() or [type(exc).__name__])[0]]
    for line in lines:
        print(f"prm-lessons: error: {line}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
