"""Rows of a JSONL file for the `grade` CLI: gold answers checked (InputError naming every bad row),
then graded (grade_rows).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import InputError, json_type
from ..fields import FieldError, read_choice_gold, read_gold
from .extract import CHOICE_LETTERS
from .golds import gold_answer_text
from .pool import check_grader, check_timeout, grade_many, summarize

# --------------------------------------------------------------------------------------------------
# rows of a JSONL file (the `grade` CLI)
# --------------------------------------------------------------------------------------------------

def gold_problem(gold, what: str = "gold answer", answer_format: str = "plain") -> str | None:
    """Why a gold answer cannot be graded (None when it can), as the checked gold reader says it
    (prm_lessons.fields.read_gold; a list is a multi-part answer, as OlympiadBench's, so lists are taken):
    null, NaN or infinite, blank, "None"/"nan" text, a boolean, an object, or a list that is empty or holds
    such a value; and a text that is only "$" signs. Grading null against a response saying "None" would
    count it right. With answer_format choice, the gold is one of the letters the harness's choice
    extraction yields (A-E, any case) or its 0-based index (fields.read_choice_gold, as the problems loader
    reads a choice set): "Z", 7 or "(A)" could never be graded right, and the text "2" is not the index 2."""
    try:
        if answer_format == "choice":
            read_choice_gold(gold, list(CHOICE_LETTERS), "", what)
            return None
        read_gold(gold, "", what, list_ok=True)
    except FieldError as exc:
        return str(exc)
    if isinstance(gold, str) and not gold_answer_text(gold):
        return f"{what} is empty"
    return None


def _row_name(n: int, row) -> str:
    ident = row.get("id", row.get("idx")) if isinstance(row, dict) else None
    return f"row {n + 1}" + (f" (id {ident})" if ident is not None and not isinstance(ident, (dict, list)) else "")


def check_grade_rows(rows: Sequence, response_field: str = "response", answer_field: str = "answer",
                     answer_format: str = "plain") -> None:
    """Every row an object with the response and gold-answer fields and a gradable gold answer
    (:func:`gold_problem`); raises InputError with one line per problem, naming the row (1-based) and
    its id. A response that is not text (null, a number) is no error: it has no answer (no_answer)."""
    problems = []
    for n, row in enumerate(rows):
        if not isinstance(row, dict):
            problems.append(f"row {n + 1}: a JSON {json_type(row)}, not an object")
            continue
        name = _row_name(n, row)
        if response_field not in row:
            problems.append(f"{name}: no field '{response_field}' (use --response-field)")
        if answer_field not in row:
            problems.append(f"{name}: no field '{answer_field}' (use --answer-field)")
            continue
        why = gold_problem(row[answer_field], f"gold answer (field '{answer_field}')", answer_format)
        if why:
            problems.append(f"{name}: {why}; a row without a gold answer cannot be graded")
    if problems:
        raise InputError(problems)


def grade_rows(rows: list[dict], response_field: str = "response", answer_field: str = "answer",
               timeout_s: float = 5.0, workers: int = 2, answer_format: str = "plain",
               grader: str = "math_verify", keep_units: bool = False) -> tuple[list[dict], dict]:
    """Add ``pred``/``correct``/``grade_status`` to each row (lists of responses give lists).
    ``answer_format``: the dataset's (``choice`` for MMLU STEM; see :func:`extract_final`); ``grader``,
    ``keep_units``: as grading.pool.grade_many.
    The rows are checked first (:func:`check_grade_rows`: InputError naming every bad row, nothing
    graded); a response that is not text, or a list element that is not, has no answer."""
    check_timeout(timeout_s)
    check_grader(grader)
    check_grade_rows(rows, response_field, answer_field, answer_format)
    flat_texts, flat_golds, where = [], [], []
    for n, row in enumerate(rows):
        resp = row[response_field]
        items = resp if isinstance(resp, list) else [resp]
        # a choice gold graded as the reader read it (its letter: "b", " B ", 1 and 1.0 are all B)
        gold = (read_choice_gold(row[answer_field], list(CHOICE_LETTERS), "") if answer_format == "choice"
                else row[answer_field])
        for k, text in enumerate(items):
            flat_texts.append(text if isinstance(text, str) else None)
            flat_golds.append(gold)
            where.append((n, k, isinstance(resp, list)))
    results = grade_many(flat_texts, flat_golds, timeout_s=timeout_s, workers=workers, answer_format=answer_format,
                         grader=grader, keep_units=keep_units)
    out = [dict(r) for r in rows]
    for (n, k, is_list), res in zip(where, results):
        if is_list:
            for key, val in (("pred", res.pred), ("correct", res.correct), ("grade_status", res.status)):
                if k == 0:
                    out[n][key] = []
                out[n][key].append(val)
        else:
            out[n].update(pred=res.pred, correct=res.correct, grade_status=res.status)
    for n, row in enumerate(rows):  # empty response lists
        if isinstance(row[response_field], list) and not row[response_field]:
            out[n].update(pred=[], correct=[], grade_status=[])
    return out, summarize(results)
