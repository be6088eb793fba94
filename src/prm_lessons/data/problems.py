"""Problems: the answer formats, reasoning-gym generators, Hub datasets and local files behind one loader,
:func:`load_problems`, which returns the ``problems`` table (``problem_id``, ``dataset``, ``question``,
``answer``, ``gold_steps``); records are mapped and validated (errors name the row).
"""
from __future__ import annotations

import logging
import math
import random
import re
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import InputError
from ..fields import read_choice_gold, read_gold, read_id, read_options, read_question, read_steps
from ..grading.golds import gold_answer_text, last_boxed_content
from ..labels.arith import eval_arith, fmt_number, to_fraction
from ..labels.construction import arithmetic_gold_steps
from ..tables import read_records
from .sources import downloaded_path, verify_checksums

log = logging.getLogger(__name__)

PROBLEM_COLUMNS = ["problem_id", "dataset", "question", "answer", "gold_steps"]


# problem loaders
# --------------------------------------------------------------------------------------------------

ANSWER_FORMATS = ("plain", "gsm8k", "boxed", "choice")
_CALC_RE = re.compile(r"<<[^<>]*>>")  # GSM8K calculator annotations "<<16-3-4=9>>"


def gsm8k_answer(text: str) -> str:
    """Final answer of a GSM8K solution: the text after the last '####' (thousands commas dropped)."""
    if "####" not in str(text):
        raise ValueError("no '####' in the answer text")
    return str(text).rsplit("####", 1)[1].strip().replace(",", "")


def gsm8k_steps(text: str) -> list[str]:
    """A GSM8K worked solution as steps: one per line, calculator annotations removed, final boxed step."""
    body, final = str(text).rsplit("####", 1)
    steps = [_CALC_RE.sub("", line).strip() for line in body.splitlines()]
    steps = [s for s in steps if s]
    steps.append(f"The final answer is $\\boxed{{{final.strip().replace(',', '')}}}$.")
    return steps


def boxed_answer(solution: str) -> str:
    """Final answer of a MATH-style solution: the content of its last \\boxed{...}."""
    ans = last_boxed_content(str(solution))
    if ans is None or not ans.strip():
        raise ValueError("no \\boxed{...} answer in the solution")
    return ans.strip()


def split_solution(text: str) -> list[str]:
    """A worked solution split into steps on blank lines (the paper's step separator)."""
    return [p.strip() for p in re.split(r"\n\s*\n", str(text)) if p.strip()]


CHOICES_STYLES = ("answer_choices", "options_zh")
YES_NO_HINTS = {"true": " (True or False)", "false": " (True or False)", "yes": " (Yes or No)", "no": " (Yes or No)"}


def _choice_question(question: str, choices, style: str = "answer_choices") -> str:
    """The question with its options appended, as the Qwen2.5-Math harness's parse_question writes them:
    answer_choices (MMLU STEM: "\nAnswer Choices: (A) …") or options_zh (gaokao_math_qa: "\n选项: (A) …").
    Options are a list (lettered A, B, …) or a mapping letter -> text (in its order)."""
    pairs = list(choices.items()) if isinstance(choices, dict) else \
        [("ABCDEFGHIJ"[i], c) for i, c in enumerate(choices)]
    opts = " ".join(f"({k}) {str(c).strip() if style == 'answer_choices' else c}" for k, c in pairs)
    if style == "options_zh":
        return f"{question.strip()}\n选项: {opts}"
    if style != "answer_choices":
        raise ValueError(f"choices_style {style!r}: one of {', '.join(CHOICES_STYLES)}")
    return f"{question.strip()}\nAnswer Choices: {opts}"


def _answer_field(rec: dict, af) -> str:
    """The answer field of a record: fields.answer, or the first of a list of fields whose value is not
    empty (cn_middle_school: `choice_answer`, else `answer`, as the harness reads it); the last one when
    all are empty, so the missing-answer error names it."""
    if isinstance(af, str):
        return af
    for f in af:
        v = rec.get(f)
        if f in rec and not (blank_or_missing(v) if not isinstance(v, (list, tuple)) else not v):
            return f
    return af[-1]


TRIVIAL_RESERVE = 4  # exclude_trivial: a set may draw generator indices [seed, seed + TRIVIAL_RESERVE * size)


def reasoning_gym_index_range(spec: dict) -> range:
    """The generator indices a reasoning_gym set may draw (reasoning-gym builds item i from
    ``Random(seed + i)``): ``[seed, seed + size)``, or ``[seed, seed + TRIVIAL_RESERVE * size)`` with
    ``exclude_trivial``. Two sets of a run whose ranges overlap share random streams."""
    seed = int(spec.get("seed", 0))
    return range(seed, seed + int(spec["size"]) * (TRIVIAL_RESERVE if spec.get("exclude_trivial") else 1))


_TOKEN_RE = re.compile(r"\s*(\d+(?:\.\d+)?|[-+*/()])")


def _tokens(expression: str) -> list[str]:
    """Numbers (a unary minus joined to its number) and the operators + - * / ( ) of an expression."""
    text, pos, raw = str(expression), 0, []
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            if text[pos:].strip():
                raise ValueError(f"cannot read the arithmetic expression {expression!r}")
            break
        raw.append(m.group(1))
        pos = m.end()
    out: list[str] = []
    for t in raw:
        if out and out[-1] == "-" and (len(out) == 1 or out[-2] in "+-*/(") and t[0].isdigit():
            out[-1] = "-" + t  # a unary minus: part of the number
        else:
            out.append(t)
    return out


def identity_trivial(expression: str) -> bool:
    """Whether an arithmetic expression's value is readable without computing it (`7 * 1`, `2 + 9 - 9`,
    `3 + 7 * 0`): a problem a policy can answer right over a wrong or absent process. True when any of:

    1. an operand 1 is a factor of a ``*`` (either side) or the divisor of a ``/`` (``a * 1``, ``1 * a``,
       ``a / 1``; ``1 / a`` is not trivial);
    2. an operand is 0, wherever it stands (an identity of ``+`` and ``-``, absorbing in ``*``, ``0 / a``);
    3. in an expression without parentheses, two additive terms (the operands of the top-level ``+`` and
       ``-``, a product counting as one term; the first term has sign ``+``) are written the same and
       have opposite signs, so that they cancel (``+ a ... - a`` or ``- a ... + a``; ``2 * 3 - 2 * 3``).

    Operands are compared as written numbers (``1.0`` is 1); a negated operand (``-1``) is not 1.
    Raises ValueError on text that is not numbers and ``+ - * / ( )``.
    """
    toks = _tokens(expression)

    def number(t: str):
        return float(t) if t[0].isdigit() or (t[0] == "-" and len(t) > 1) else None

    for i, t in enumerate(toks):
        v = number(t)
        if v is None:
            continue
        before = toks[i - 1] if i > 0 else None
        after = toks[i + 1] if i + 1 < len(toks) else None
        if v == 0:
            return True
        if v == 1 and (before in ("*", "/") or after == "*"):
            return True
    if "(" in toks or ")" in toks:
        return False
    terms: list[tuple[int, str]] = []

    def add(sign: int, cur: list[str]) -> None:
        if cur[0].startswith("-"):  # a negated first operand: the term's sign flips (`3 + -3` cancels)
            sign, cur = -sign, [cur[0][1:], *cur[1:]]
        terms.append((sign, " ".join(cur)))

    sign, cur = 1, []
    for t in toks:
        if t in ("+", "-") and cur:
            add(sign, cur)
            sign, cur = (1 if t == "+" else -1), []
        else:
            cur.append(t)
    if cur:
        add(sign, cur)
    return any((1, text) in terms and (-1, text) in terms for _, text in terms)


def _reasoning_gym_rows(spec: dict) -> list[dict]:
    """The rows of a reasoning_gym set: items ``0 .. size-1`` of the generator at ``seed``. With
    ``exclude_trivial`` (basic_arithmetic, chain_sum: items that carry ``metadata.expression``), items whose
    expression is :func:`identity_trivial` are skipped and the index stream continues (item ``size``,
    ``size + 1``, ...) until ``size`` are kept: deterministic, and at most ``TRIVIAL_RESERVE * size`` indices
    are drawn (:func:`reasoning_gym_index_range`; fewer kept problems than ``size`` by then is an error).
    A row's ``source_id`` is ``generator:seed:index`` with the generator index it was drawn at."""
    import reasoning_gym  # lazy: only reasoning-gym sets need it (slow import)

    generator = spec.get("generator")
    if not generator:
        raise ValueError("dataset spec with source reasoning_gym needs `generator`")
    if not spec.get("size"):
        raise ValueError(f"reasoning_gym dataset '{generator}' needs `size`")
    size, exclude = int(spec["size"]), bool(spec.get("exclude_trivial", False))
    indices = reasoning_gym_index_range(spec)
    # item i depends only on seed + i (basic_arithmetic, chain_sum): a longer set continues the same stream
    ds = reasoning_gym.create_dataset(generator, size=len(indices), seed=int(spec.get("seed", 0)),
                                      **(spec.get("params") or {}))
    rows, corrected, trivial = [], [], []
    for i in range(len(indices)):
        if len(rows) == size:
            break
        item = ds[i]
        meta = item.get("metadata") or {}
        if exclude:
            if meta.get("expression") is None:
                raise ValueError(f"reasoning_gym dataset '{generator}': exclude_trivial needs items with "
                                 "metadata.expression (basic_arithmetic, chain_sum)")
            if identity_trivial(meta["expression"]):
                trivial.append(str(meta["expression"]))
                continue
        answer = precedence_answer(generator, meta.get("expression"), item.get("answer"))
        if answer != item.get("answer"):
            corrected.append(f"{meta.get('expression')} = {answer}, not {item.get('answer')}")
            item = {**item, "answer": answer}
        rows.append({"source_id": f"{generator}:{spec.get('seed', 0)}:{i}", "question": item.get("question"),
                     "answer": item.get("answer"), "gold_steps": _reasoning_gym_steps(generator, item, meta)})
    if len(rows) < size:
        raise ValueError(f"reasoning_gym dataset '{generator}' (seed {spec.get('seed', 0)}): only {len(rows)} of "
                         f"{size} problems are not identity-trivial among the {len(indices)} generator indices "
                         f"exclude_trivial may draw ({TRIVIAL_RESERVE} x size); change the generator's params")
    if trivial:
        log.info("%s (seed %s): %d identity-trivial problems skipped (exclude_trivial), e.g. %s; %d indices drawn",
                 generator, spec.get("seed", 0), len(trivial), "; ".join(trivial[:3]), len(rows) + len(trivial))
    if corrected:
        log.warning("%s (seed %s): %d of %d answers corrected to the expression's value under the usual operator "
                    "precedence (reasoning-gym computes a parenthesis-free expression left to right), e.g. %s",
                    generator, spec.get("seed", 0), len(corrected), len(rows), "; ".join(corrected[:3]))
    return rows


def precedence_answer(generator: str, expression, answer):
    """The answer a basic_arithmetic question means. reasoning-gym (0.1.19, `_generate_simple_task`)
    renders "1 - 7 * 3" without parentheses but computes it left to right (-18): the value under the
    usual precedence (-20) is what the question asks and what a correct response answers. Expressions
    whose exact value is not an integer (an inexact division, floored by reasoning-gym) keep the source's
    answer; other generators and malformed expressions are returned unchanged."""
    if generator != "basic_arithmetic" or expression is None:
        return answer
    try:
        value = eval_arith(str(expression))
    except (ValueError, SyntaxError, ZeroDivisionError):
        return answer
    if value.denominator != 1:
        return answer
    try:
        if to_fraction(str(answer).strip()) == value:
            return answer
    except (ValueError, ZeroDivisionError):
        pass
    return fmt_number(value)


def _reasoning_gym_steps(generator: str, item: dict, meta: dict) -> list[str] | None:
    """Gold step-by-step solutions for reasoning-gym items.

    gsm_symbolic carries a worked solution (``metadata.answer_cot``, GSM8K style: one line per step,
    ``#### answer`` last). basic_arithmetic and chain_sum carry only the expression, so the solution is
    built from it: one step per operation in evaluation order, then a boxed final answer. Other
    generators: None (no gold steps).
    """
    if meta.get("answer_cot"):
        cot = str(meta["answer_cot"])
        if "####" not in cot:
            cot = f"{cot}\n#### {item.get('answer')}"
        return gsm8k_steps(cot)
    if meta.get("expression") is not None and generator in ("basic_arithmetic", "chain_sum"):
        try:
            return arithmetic_gold_steps(str(meta["expression"]), str(item.get("answer")))
        except ValueError as exc:
            # reasoning-gym floors inexact divisions, so a few gold answers are not the exact value
            # (precedence_answer keeps those); such a problem keeps its question and answer but gets no gold steps
            log.info("%s item %s: no gold steps (%s)", generator, meta.get("source_index"), exc)
    return None


def _hub_records(spec: dict) -> list[dict]:
    import datasets  # lazy: heavy, and only Hub sources need it

    if not spec.get("id"):
        raise ValueError("dataset spec with source hub needs `id`")
    kwargs = {"revision": spec["revision"]} if spec.get("revision") else {}
    ds = datasets.load_dataset(spec["id"], spec.get("config"), split=spec.get("split", "test"), **kwargs)
    return [dict(r) for r in ds]




def check_rows(n: int, expected, what: str) -> None:
    if expected is not None and int(n) != int(expected):
        raise ValueError(f"{what}: {n} rows, expected {int(expected)} (`rows` in the config); "
                         "the file is not the pinned set")


def blank_or_missing(value) -> bool:
    """null, NaN, or a blank string (a record field with no value)."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _map_record(rec: dict, spec: dict, row_id: str) -> dict:
    """One source record → {question, answer, gold_steps, source_id}, per the spec's field mapping; every
    field read by its checked reader (prm_lessons.fields), which names the row and the field."""
    fields = {"question": "question", "answer": "answer", "gold_steps": None, "id": None, "choices": None,
              **(spec.get("fields") or {})}
    fmt = spec.get("answer_format", "plain")
    where = f"row {row_id}"
    qf, af = fields["question"], _answer_field(rec, fields["answer"])
    if qf not in rec:
        raise ValueError(f"{where}: no field '{qf}' (fields.question); fields present: {sorted(rec)}")
    question = read_question(rec[qf], where, f"question (field '{qf}')")
    source_id = _source_id(rec, fields.get("id"), where)
    if af not in rec or blank_or_missing(rec[af]) if not isinstance(rec.get(af), (list, tuple)) else not rec[af]:
        if af in rec and spec.get("missing_answer") == "keep":
            # kept with an empty gold (never graded correct), as the harness keeps such rows in its denominator
            return {"question": question, "answer": "", "gold_steps": None, "source_id": source_id}
        raise ValueError(f"{where}: missing answer (field '{af}')")
    what = f"gold answer (field '{af}')"
    if fmt == "choice":
        options = _options(rec, fields["choices"], where)
        question = _choice_question(question, options, spec.get("choices_style", "answer_choices"))
        answer = read_choice_gold(rec[af], options, where, what)
    else:
        raw_answer = read_gold(rec[af], where, what, list_ok=bool(fields.get("answer_list")) and fmt == "plain")
        try:
            if fmt == "gsm8k":
                answer = gsm8k_answer(raw_answer)
            elif fmt == "boxed":
                answer = boxed_answer(raw_answer)
            else:
                answer = gold_answer_text(raw_answer)  # lists (OlympiadBench) → first; "$…$" unwrapped
        except ValueError as exc:
            raise ValueError(f"{where}: bad answer in field '{af}': {exc}") from None
        if fmt == "plain" and fields["choices"]:  # options shown, gold read as is (gaokao_math_qa: `label`)
            question = _choice_question(question, _options(rec, fields["choices"], where),
                                        spec.get("choices_style", "answer_choices"))
    if blank_or_missing(answer):
        raise ValueError(f"{where}: missing answer (field '{af}')")
    if spec.get("yes_no_hint"):  # the harness's parse_question marks a yes/no or true/false item
        hint = YES_NO_HINTS.get(str(answer).strip().lower())
        question = question + hint if hint else question
    gold_steps = None
    if fields.get("gold_steps"):
        gf = fields["gold_steps"]
        if gf not in rec:
            raise ValueError(f"{where}: no field '{gf}' (fields.gold_steps)")
        raw = rec[gf]
        if isinstance(raw, str):  # a worked solution as text; never decoded, "[…]" is text
            if raw.strip():
                gold_steps = gsm8k_steps(raw) if fmt == "gsm8k" and "####" in raw else split_solution(raw)
        elif not blank_or_missing(raw):
            gold_steps = [s.strip() for s in read_steps(raw, where, f"gold steps (field '{gf}')", blank="drop")]
        if gold_steps is not None and not gold_steps:
            raise ValueError(f"{where}: empty gold steps (field '{gf}')")
    elif fmt == "gsm8k":
        gold_steps = gsm8k_steps(raw_answer)
    return {"question": question, "answer": str(answer).strip(), "gold_steps": gold_steps, "source_id": source_id}


def _options(rec: dict, field: str, where: str):
    if field not in rec:
        raise ValueError(f"{where}: no field '{field}' (fields.choices)")
    return read_options(rec[field], where, f"options (field '{field}')")


def _source_id(rec: dict, id_field: str | None, where: str) -> str | None:
    """The source's own id (fields.id, read as an id: null or blank is an error), else the source row
    number of a subsample, else None."""
    if id_field:
        return read_id(rec.get(id_field), where, f"id (field '{id_field}')")
    return None if rec.get("_source_row") is None else str(rec["_source_row"])


def _duplicate_id_problems(source_ids: Sequence, row_ids: Sequence[str], id_field: str) -> list[str]:
    """One line per source id that more than one row carries (ids compared as text)."""
    rows: dict[str, list[str]] = {}
    for sid, rid in zip(source_ids, row_ids):
        if sid is not None:
            rows.setdefault(str(sid), []).append(rid)
    return [f"id {sid!r} (fields.id '{id_field}') repeats in rows {', '.join(r)}; source ids must be unique"
            for sid, r in rows.items() if len(r) > 1]


def _repeated_problems(df: pd.DataFrame) -> dict[str, str]:
    """problem_id -> the earlier problem_id with the same question and answer.

    Kept, not dropped or refused: the pinned harness files repeat problems (mmlu_stem has 12 rows that
    are exact copies, counted in the harness's 3,018) and small reasoning-gym families draw the same
    problem again (one-digit arithmetic: ~20 of 100); the loader keeps the set as its source defines it,
    logs the repeats and the problems rule records them in the table's metadata (`repeated`)."""
    first: dict[tuple, str] = {}
    out = {}
    for pid, q, a in zip(df["problem_id"], df["question"], df["answer"]):
        if (q, a) in first:
            out[pid] = first[(q, a)]
        else:
            first[(q, a)] = pid
    return out


def subsample_records(records: list[dict], sub: dict, what: str) -> list[dict]:
    """A seeded random subset of ``sub["n"]`` records, kept in source order (``subsample``: a set too
    large to sample whole, e.g. Omni-MATH for Figure 6); each record keeps its source row number as
    ``_source_row`` (the problem's source_id when the set has no id field)."""
    n, seed = int(sub["n"]), int(sub.get("seed", 0))
    if n > len(records):
        raise ValueError(f"{what}: subsample.n {n} > the set's {len(records)} rows")
    keep = sorted(random.Random(seed).sample(range(len(records)), n))
    return [{**records[i], "_source_row": i} for i in keep]


def load_problems(name: str, spec: dict, path: str | Path | None = None) -> pd.DataFrame:
    """The problems table for one dataset entry of the config (``problems:`` or ``benchmarks:``).

    Columns: ``problem_id`` (``{name}-{i:05d}``, stable for a given spec), ``dataset`` (= name),
    ``question``, ``answer`` (str), ``gold_steps`` (list of str, or None), and ``source_id`` (the
    source's own id where known). Bad rows (missing answer, empty question, a question that is not a
    string, a source id (``fields.id``) that repeats) raise InputError with one line per problem, each
    naming its row; the file reader names the file and line of a row that is not an object or not
    UTF-8. A problem that repeats an earlier one (same question and answer) is kept and counted
    (:func:`_repeated_problems`; ``df.attrs["repeated"]``). ``source: url`` reads the copy made by rule
    `benchmark_file` (``path``, default :func:`downloaded_path`). Checksums (``sha256``/``git_blob_sha1``,
    url and local) and ``rows`` (any source, counted before ``limit``) stop the load with a message
    naming the set.
    """
    source = spec.get("source")
    if source == "mix":
        return _mixed_problems(name, spec)
    fmt = spec.get("answer_format", "plain")
    if fmt not in ANSWER_FORMATS:
        raise ValueError(f"dataset '{name}': unknown answer_format '{fmt}' (one of {', '.join(ANSWER_FORMATS)})")
    if fmt == "choice" and not (spec.get("fields") or {}).get("choices"):
        raise ValueError(f"dataset '{name}': answer_format choice needs fields.choices naming the options field")
    n_source = None  # rows of the whole set, before `limit` (recorded in the table's metadata)
    problems: list[str] = []  # every bad row, one line each
    mapped = []
    where = f"dataset '{name}'"
    if source == "reasoning_gym":
        records = _reasoning_gym_rows(spec)
        n_source = len(records)
        for i, rec in enumerate(records):
            row_id = f"{name}-{i:05d} ({rec['source_id']})"
            try:
                question = read_question(rec["question"], f"row {row_id}")
                answer = read_gold(rec["answer"], f"row {row_id}")
            except ValueError as exc:
                problems.append(str(exc))
                continue
            mapped.append({**rec, "question": question, "answer": str(answer).strip()})
    elif source in ("hub", "local", "url"):
        if source == "hub":
            records = _hub_records(spec)
        else:
            if source == "local" and not spec.get("path"):
                raise ValueError("dataset spec with source local needs `path`")
            file = spec["path"] if source == "local" else (path or downloaded_path(name, spec))
            where = f"dataset '{name}' ({file})"
            verify_checksums(file, spec, f"dataset '{name}'")
            records = read_records(file)  # names the file and line of a non-object or non-UTF-8 row
        check_rows(len(records), spec.get("rows"), f"dataset '{name}'")
        n_source = len(records)
        if spec.get("subsample"):
            records = subsample_records(records, spec["subsample"], f"dataset '{name}'")
        if spec.get("limit"):
            records = records[: int(spec["limit"])]
        id_field = (spec.get("fields") or {}).get("id")
        for i, rec in enumerate(records):
            try:
                mapped.append(_map_record(rec, spec, f"{name}-{i:05d}"
                                          + (f" (id {rec.get(id_field)})" if id_field else "")))
            except ValueError as exc:
                problems.append(str(exc))
        if id_field:
            problems += _duplicate_id_problems([rec.get(id_field) for rec in records],
                                               [f"{name}-{i:05d}" for i in range(len(records))], id_field)
    else:
        raise ValueError(f"dataset '{name}': unknown source {source!r} (reasoning_gym, hub, local or url)")
    if problems:
        raise InputError(problems, where)
    if not mapped:
        raise ValueError(f"dataset '{name}': no problems")
    df = pd.DataFrame(mapped)
    df.insert(0, "problem_id", [f"{name}-{i:05d}" for i in range(len(df))])
    df.insert(1, "dataset", name)
    return _with_repeats(df[PROBLEM_COLUMNS + ["source_id"]], n_source, where)


def _mixed_problems(name: str, spec: dict) -> pd.DataFrame:
    """Source mix: each part's problems (a dataset entry of its own), in the parts' order, as one set
    named `name` (problem ids renumbered; source ids stay the parts' own)."""
    parts = spec.get("parts") or {}
    if not parts:
        raise ValueError(f"dataset '{name}': source mix needs `parts` (name -> dataset entry)")
    frames = []
    for part, pspec in parts.items():
        if (pspec or {}).get("source") not in ("reasoning_gym", "hub", "local"):
            raise ValueError(f"dataset '{name}': part '{part}' has source {(pspec or {}).get('source')!r}; a mix "
                             "takes reasoning_gym, hub or local parts")
        try:
            frames.append(load_problems(f"{name}.{part}", pspec))
        except InputError:  # names its rows and `dataset '{name}.{part}'` already
            raise
        except ValueError as exc:
            raise ValueError(f"dataset '{name}', part '{part}': {exc}") from exc
    df = pd.concat(frames, ignore_index=True)
    df["problem_id"] = [f"{name}-{i:05d}" for i in range(len(df))]
    df["dataset"] = name
    loaded = [f.attrs.get("rows_loaded") for f in frames]
    return _with_repeats(df, None if None in loaded else sum(loaded), f"dataset '{name}'")


def _with_repeats(df: pd.DataFrame, n_source: int | None, where: str) -> pd.DataFrame:
    """The table with its load counts: rows_loaded (before `limit`) and the repeated problems."""
    df.attrs["rows_loaded"] = n_source
    repeated = _repeated_problems(df)
    if repeated:
        log.warning("%s: %d of %d problems repeat an earlier one (same question and answer), kept as the "
                    "source has them: %s", where, len(repeated), len(df),
                    ", ".join(f"{p} = {q}" for p, q in list(repeated.items())[:10])
                    + (" …" if len(repeated) > 10 else ""))
    df.attrs["repeated"] = repeated
    return df
