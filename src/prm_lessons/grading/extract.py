"""Answer extraction as the Qwen2.5-Math harness does it, multiple choice included (no grading:
nothing here imports math-verify).
"""
from __future__ import annotations

import re

from .golds import gold_answer_text, last_boxed_content

# --------------------------------------------------------------------------------------------------
# extraction
# --------------------------------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"-?\d*\.?\d+")


def extract_answer(text: str | None) -> str | None:
    """The final answer of a response, by the Qwen2.5-Math harness rules; None when there is none."""
    if not text:
        return None
    text = text.replace("\u043a\u0438", "")  # the harness drops this token (Math-Shepherd step tag)
    if "final answer is $" in text and "$. I hope" in text:  # Minerva format
        pred = text.split("final answer is $", 1)[1].split("$. I hope", 1)[0].strip()
    elif "\\boxed" in text or "\\fbox" in text:
        pred = last_boxed_content(text) or ""
    elif "he answer is" in text:
        pred = text.split("he answer is")[-1].strip()
    elif "final answer is" in text:
        pred = text.split("final answer is")[-1].strip()
    elif "答案是" in text:  # the harness's Chinese few-shot answers ("答案是 C"): after the FIRST one, to a blank line
        pred = text.split("答案是")[1].strip().split("\n\n")[0].strip()
    else:  # the last number
        numbers = _NUMBER_RE.findall(text.replace(",", ""))
        pred = numbers[-1] if numbers else ""
    pred = re.sub(r"\n\s*", "", pred)
    if pred.startswith(":"):
        pred = pred[1:]
    pred = pred.rstrip(".").rstrip("/").strip()
    return pred or None


# Multiple choice, as the harness grades it (evaluation/parser.py `choice_answer_clean`; math_eval.py's
# post-processing of letter golds; grader.py `math_equal`).
CHOICE_LETTERS = ("A", "B", "C", "D", "E")
_CHOICE_TRIGGERS = ("choice is", "answer is")
_CHOICE_TRIGGER_RE = re.compile("|".join(_CHOICE_TRIGGERS))
_CHOICE_LETTER_RE = re.compile(r"\b(A|B|C|D|E)\b")


def choice_answer_clean(text: str) -> str:
    """The choice letter of a response, by the harness's rule: after the last "answer is" / "choice is"
    the first standalone A–E (case-insensitive, so an article "a" counts, as there), without a trigger
    the last one in the text. A response repeating a trigger (few-shot echo) is cut at its first blank
    line first. No letter: the cleaned text itself (so the caller sees it is not a letter)."""
    pred = text.strip("\n")
    if any(pred.count(t) > 1 for t in _CHOICE_TRIGGERS):
        pred = pred.split("\n\n")[0]
    parts = _CHOICE_TRIGGER_RE.split(pred)
    after_trigger = len(parts) > 1
    if after_trigger:
        pred = parts[-1]
    pred = pred.strip("\n").rstrip(".").rstrip("/").strip(" ").lstrip(":")
    letters = _CHOICE_LETTER_RE.findall(pred.upper())
    if letters:
        pred = letters[0] if after_trigger else letters[-1]
    else:
        pred = pred.strip().strip(".")
    return pred.rstrip(".").rstrip("/")


def is_choice_letter(value) -> bool:
    return isinstance(value, str) and value.strip() in CHOICE_LETTERS


def multi_choice_gold(gold) -> str | None:
    """A gold of several choice letters (gaokao_math_qa's multiple-answer items: "AD", "A B D") as the
    harness compares it (spaces dropped by strip_string), else None."""
    s = str(gold).replace(" ", "") if isinstance(gold, str) else ""
    return s if len(s) > 1 and all(c in CHOICE_LETTERS for c in s) else None


def choice_gold(gold, answer_format: str = "plain"):
    """A choice set's gold as a letter: an option index (0 → A, as the harness reads MMLU STEM) or a letter.
    A text is never read as an index ("2" is a text; the readers refuse it: fields.read_choice_gold)."""
    if answer_format == "choice":
        if isinstance(gold, int) and not isinstance(gold, bool) and 0 <= gold < len(CHOICE_LETTERS):
            return CHOICE_LETTERS[gold]
    return gold


def extract_final(text: str | None, gold=None, answer_format: str = "plain") -> str | None:
    """The answer graded for a response, as the harness extracts it for the response's dataset.

    ``answer_format == "choice"`` (MMLU STEM): :func:`choice_answer_clean` of the whole response (the
    harness's ``extract_answer`` for mmlu_stem). Otherwise :func:`extract_answer`. Then, for ANY item
    whose gold is a letter A–E (e.g. 37 of GaoKao 2023 En's 385) and whose extracted answer is not a
    letter, the letter is taken from the whole response (math_eval.py's post-processing).
    """
    if not text:
        return None
    if answer_format == "choice":
        pred = choice_answer_clean(text.replace("\u043a\u0438", "")) or None
    else:
        pred = extract_answer(text)
    gold_s = gold_answer_text(gold) if gold is not None else None
    if is_choice_letter(gold_s) and not is_choice_letter(strip_answer(pred) if pred else pred):
        pred = choice_answer_clean(text) or None
    elif multi_choice_gold(gold_s) and pred and not multi_choice_gold(strip_answer(pred)):
        # math_eval.py: a gold of several letters keeps only the letters A-E of the extracted answer
        pred = "".join(c for c in pred if c in CHOICE_LETTERS) or None
    return pred


def strip_answer(s: str) -> str:
    """Light normalisation of an answer string (a subset of the harness's ``strip_string``)."""
    s = str(s).strip().replace("\n", "").rstrip(".")
    s = s.replace("\\!", "").replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = re.sub(r"\\text\{\s*[a-zA-Z][a-zA-Z .]*\}$", "", s).strip() or s  # trailing unit text
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "").replace("$", "").replace("\\(", "").replace("\\)", "")
    s = re.sub(r"\\(?:text|mbox|mathrm|textbf)\{(.*?)\}", r"\1", s)
    s = s.replace("\\%", "").replace("%", "")
    s = re.sub(r"(\d+)\.0*([^\d])", r"\1\2", s)
    s = re.sub(r"(\d+)\.0*$", r"\1", s)
    if len(s.split("=")) == 2 and len(s.split("=")[0].strip()) <= 2:
        s = s.split("=")[1]
    s = s.replace(" ", "")
    if s.startswith("."):
        s = "0" + s
    s = re.sub(r"^(-?\d+)/(\d+)$", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    return s
