"""Answer extraction (Qwen2.5-Math harness convention) and grading with math-verify under a hard timeout.

* :func:`extract_answer` follows the harness's ``parser.extract_answer``: Minerva's "final answer is
  $…$. I hope", else the content of the last ``\\boxed{…}`` (nested braces matched; ``\\boxed 5``;
  ``\\fbox``), else the text after "the answer is" / "final answer is", else after the first "答案是" (to a blank
  line), else the last number.
* :func:`extract_final` adds multiple choice as the harness grades it: for ``answer_format: choice``
  (MMLU STEM) the choice letter of the response (:func:`choice_answer_clean`), for any item whose
  gold is a letter A–E but whose extracted answer is not, the letter taken from the whole response,
  and for a gold of several letters (gaokao_math_qa) only the letters A–E of the extracted answer.
* :func:`grade` compares the extracted answer with the gold answer: letters by letter, otherwise equal
  after the harness's light string normalisation, else ``math_verify.verify(parse(gold), parse(pred))``.
* Every comparison runs in a worker process that is killed and replaced when it exceeds
  ``timeout_s``; math-verify's own timeouts use ``signal.alarm`` (main thread only, and unable to stop
  a long C-level regex or SymPy call), so they are switched off inside the workers and the process
  boundary is the timeout. A response that times out counts as incorrect with status ``timeout``.
  This works from any thread or process and never hangs.

CLI: ``prm-lessons grade --input IN.jsonl --output OUT.jsonl`` (prm_lessons.cli; rows graded by
:func:`grade_rows`).
"""
from __future__ import annotations

import atexit
import json
import logging
import math
import numbers
import re
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Iterable, Sequence

from . import checkout_env
from .errors import InputError, is_bool, json_type

log = logging.getLogger(__name__)

STATUSES = ("ok", "no_answer", "timeout", "error")


@dataclass(frozen=True)
class GradeResult:
    pred: str | None      # the extracted answer (None: nothing extractable)
    correct: bool
    status: str           # ok | no_answer | timeout | error


# --------------------------------------------------------------------------------------------------
# extraction
# --------------------------------------------------------------------------------------------------

def last_boxed_content(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` (nested braces matched), or of ``\\boxed 5``.

    As in the Qwen2.5-Math harness, the last occurrence wins and an unclosed brace (a truncated
    response) yields everything after it. None when there is no box.
    """
    if not text:
        return None
    idx = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if idx < 0:
        return None
    rest = text[idx + (len("\\boxed") if text.startswith("\\boxed", idx) else len("\\fbox")):]
    if not rest.startswith("{"):
        # "\boxed 5$" / "\boxed 5": the harness takes the text up to the next "$"
        content = rest.split("$")[0].strip()
        return content or None
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return rest[1:i]
    return rest[1:]


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
    """A choice set's gold as a letter: an option index (0 → A, as the harness reads MMLU STEM) or a letter."""
    if answer_format == "choice":
        if isinstance(gold, int) and not isinstance(gold, bool) and 0 <= gold < len(CHOICE_LETTERS):
            return CHOICE_LETTERS[gold]
        if isinstance(gold, str) and gold.strip().isdigit() and int(gold) < len(CHOICE_LETTERS):
            return CHOICE_LETTERS[int(gold)]
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


def gold_answer_text(gold) -> str:
    """Gold answers may be LaTeX (``$\\frac{1}{2}$``), lists (OlympiadBench) or numbers: one string."""
    if isinstance(gold, (list, tuple)):
        gold = gold[0] if len(gold) == 1 else ", ".join(map(str, gold))
    gold = str(gold).strip()
    if "$" in gold:  # the harness's strip_string drops every \\$ and $ (college_math has inner $ too)
        gold = gold.replace("\\$", "").replace("$", "").strip()
    return gold


# --------------------------------------------------------------------------------------------------
# comparison (runs inside a worker process)
# --------------------------------------------------------------------------------------------------

def _verify(pred: str, gold: str) -> bool:
    """math-verify comparison of two extracted answers; its signal timeouts are off (we own the timeout)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify  # lazy: heavy (SymPy)

    configs = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]

    def _parse(ans: str):
        return parse(f"\\boxed{{{ans}}}", extraction_config=configs, parsing_timeout=None,
                     raise_on_error=False)

    gold_parsed = _parse(gold)
    if not gold_parsed:
        gold_parsed = parse(gold, parsing_timeout=None)
    pred_parsed = _parse(pred)
    if not pred_parsed:
        pred_parsed = parse(pred, parsing_timeout=None)
    if not gold_parsed or not pred_parsed:
        return False
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=None))


def compare(pred: str, gold: str) -> bool:
    """True when ``pred`` and ``gold`` denote the same answer (no timeout: use :func:`grade`)."""
    a, b = strip_answer(pred), strip_answer(gold)
    if a == b or a.lower() == b.lower():  # the harness's math_equal compares case-insensitively first
        return True
    return _verify(pred, gold)


def _letter_match(pred: str, gold: str) -> bool:
    """A letter gold: the harness's math_equal reduces to a case-insensitive match of the letter."""
    return strip_answer(pred).upper() == gold.strip().upper()


def _grade_unsafe(text: str, gold: str, answer_format: str = "plain") -> tuple[str | None, bool, str]:
    gold_s = gold_answer_text(gold)
    pred = extract_final(text, gold_s, answer_format)
    if pred is None:
        return None, False, "no_answer"
    if is_choice_letter(gold_s):
        return pred, _letter_match(pred, gold_s), "ok"
    if multi := multi_choice_gold(gold_s):  # the letters in the gold's order (a string match, as there)
        return pred, strip_answer(pred).upper() == multi, "ok"
    return pred, compare(pred, gold_s), "ok"


EQUIV = "math_verify_equiv"  # a worker job comparing two answers as majority voting groups them
PARSE = "math_verify_parse"  # a worker job: does an answer parse at all (else it equals nothing)?


def _vote_parse(text: str):
    from math_verify import parse  # lazy: heavy (SymPy)

    return parse(text if "$" in text or "\\boxed" in text else f"${text}$", parsing_timeout=None)


def _equivalent(rep: str, other: str) -> bool:
    """math-verify equivalence of two answers as `maj_grouping: math_verify` groups them (the harness's
    use_symbol=True): each parsed as is when it holds `$` or `\\boxed`, else as `$answer$`, then
    verify(rep, other). Runs in a worker (its signal timeouts are off: the pool owns the timeout)."""
    from math_verify import verify  # lazy: heavy (SymPy)

    return bool(verify(_vote_parse(rep), _vote_parse(other), timeout_seconds=None))


def _worker_main() -> None:
    """Worker loop over stdin/stdout, one JSON line each way: "ready", then [text, gold] -> [pred, correct, status]."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # "timeout disabled" notices
    warnings.filterwarnings("ignore")
    import math_verify  # noqa: F401  - lazy: import before "ready" so start-up never counts against a job

    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints from libraries must not corrupt the protocol
    out.write('"ready"\n')
    out.flush()
    for line in sys.stdin:
        job = json.loads(line)
        if job is None:
            return
        text, gold, fmt = (job + ["plain"])[:3]  # [text, gold] or [text, gold, answer_format]
        if fmt in (EQUIV, PARSE):  # [answer, rep, EQUIV]: one vote? [answer, "", PARSE]: parsable?
            try:
                result = (None, _equivalent(gold, text) if fmt == EQUIV else bool(_vote_parse(text)), "ok")
            except Exception as exc:  # noqa: BLE001 - math-verify failure: not equivalent, reported
                result = (None, False, f"error:{type(exc).__name__}")
            out.write(json.dumps(result) + "\n")
            out.flush()
            continue
        try:
            result = _grade_unsafe(text, gold, fmt)
        except Exception as exc:  # noqa: BLE001 - a math-verify/SymPy failure on odd input: reported
            result = (extract_final(text, gold, fmt), False, f"error:{type(exc).__name__}")
        out.write(json.dumps(result) + "\n")
        out.flush()


class _Worker:
    """One grading process (``python -m prm_lessons.grading --worker``) behind pipes.

    A plain subprocess rather than multiprocessing: no fork (safe from threads and from processes
    holding GPUs) and no re-import of the caller's ``__main__`` (safe from scripts without a main guard).
    """

    def __init__(self):
        env = checkout_env()  # works from a checkout without installing
        self.proc = subprocess.Popen([sys.executable, "-m", "prm_lessons.grading", "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     text=True, bufsize=1)
        self.conn = self.proc.stdout
        self.ready = False
        self.job: int | None = None
        self.started = 0.0

    def submit(self, idx: int, text: str, gold: str, answer_format: str = "plain") -> None:
        self.job, self.started = idx, time.monotonic()
        self.proc.stdin.write(json.dumps([text, gold, answer_format]) + "\n")
        self.proc.stdin.flush()

    def recv(self):
        line = self.conn.readline()
        if not line:
            return None
        return json.loads(line)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(5)
        for fh in (self.proc.stdin, self.proc.stdout):
            try:
                fh.close()
            except OSError:
                pass

    def close(self) -> None:
        try:
            self.proc.stdin.write("null\n")
            self.proc.stdin.flush()
            self.proc.wait(2)
        except (BrokenPipeError, OSError, ValueError, Exception):  # noqa: BLE001 - best effort
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(2)
        for fh in (self.proc.stdin, self.proc.stdout):
            try:
                fh.close()
            except OSError:
                pass


class GradingPool:
    """Worker processes for math-verify comparisons with a hard per-job time limit.

    Hand-rolled on multiprocessing because concurrent.futures cannot stop a running task, and a
    hung SymPy/regex call must be killed, not waited for. Workers persist across calls; a worker that
    overruns is killed and replaced (a fresh one starts in the background).
    """

    def __init__(self, workers: int = 2):
        self.size = max(1, int(workers))
        self.workers: list[_Worker] = []
        self.lock = threading.Lock()

    def _top_up(self) -> None:
        self.workers = [w for w in self.workers if w.proc.poll() is None]
        while len(self.workers) < self.size:
            self.workers.append(_Worker())

    def run(self, jobs: list[tuple], timeout_s: float, progress_every: int = 0) -> dict[int, GradeResult]:
        """Compare (index, response text, gold[, answer_format]) jobs; returns {index: GradeResult}."""
        with self.lock:
            by_idx = {j[0]: j for j in jobs}

            def fallback_pred(i):  # the answer reported for a job whose comparison did not finish
                _, text, gold, *fmt = by_idx[i]
                return None if fmt and fmt[0] in (EQUIV, PARSE) else extract_final(text, gold, *fmt)
            queue = list(reversed(jobs))
            out: dict[int, GradeResult] = {}
            self._top_up()
            while queue or any(w.job is not None for w in self.workers):
                for w in self.workers:
                    if w.ready and w.job is None and queue:
                        w.submit(*queue.pop())
                busy = [w for w in self.workers if w.job is not None]
                waiting = [w for w in self.workers if w.job is not None or not w.ready]
                deadline = min((w.started + timeout_s for w in busy), default=time.monotonic() + 60)
                ready = wait([w.conn for w in waiting], timeout=max(0.0, deadline - time.monotonic()))
                by_conn = {w.conn: w for w in waiting}
                for conn in ready:
                    w = by_conn[conn]
                    try:
                        msg = w.recv()
                    except (EOFError, OSError, ValueError):  # the worker died (e.g. out of memory)
                        msg = None
                    if msg == "ready":
                        w.ready = True
                        continue
                    job, w.job = w.job, None
                    if msg is None:
                        if job is not None:
                            out[job] = GradeResult(fallback_pred(job), False, "error")
                            log.warning("grading worker died on response %d; counted incorrect", job)
                        elif w.proc.poll() is not None:
                            raise RuntimeError("grading worker failed to start (see its stderr)")
                        self._replace(w)
                        continue
                    pred, correct, status = msg
                    if status.startswith("error"):
                        log.debug("grading error on response %d: %s", job, status)
                        status = "error"
                    out[job] = GradeResult(pred, bool(correct) and status == "ok", status)
                now = time.monotonic()
                for w in busy:
                    if w.job is not None and now - w.started >= timeout_s:
                        job = w.job
                        out[job] = GradeResult(fallback_pred(job), False, "timeout")
                        if by_idx[job][3:4] in ((EQUIV,), (PARSE,)):
                            log.warning("math-verify %s of an answer (%d characters) timed out after %.1fs; "
                                        "counted as not equal", "comparison" if by_idx[job][3] == EQUIV else "parse",
                                        len(by_idx[job][1] or ""), timeout_s)
                        else:
                            log.warning("grading response %d (%d characters) timed out after %.1fs; "
                                        "counted incorrect", job, len(by_idx[job][1] or ""), timeout_s)
                        self._replace(w)
                if progress_every and len(out) % progress_every == 0 and ready:
                    log.info("graded %d/%d comparisons", len(out), len(jobs))
            return out

    def _replace(self, w: _Worker) -> None:
        w.kill()
        self.workers[self.workers.index(w)] = _Worker()

    def close(self) -> None:
        with self.lock:
            for w in self.workers:
                w.close()
            self.workers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_SHARED: GradingPool | None = None
_SHARED_LOCK = threading.Lock()


def _shared_pool() -> GradingPool:
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = GradingPool(1)
            atexit.register(_SHARED.close)
        return _SHARED


def grade_many(texts: Sequence[str | None], golds: Sequence, timeout_s: float = 5.0, workers: int = 2,
               pool: GradingPool | None = None, progress_every: int = 0,
               answer_format: str | Sequence[str] = "plain") -> list[GradeResult]:
    """Grade many responses in worker processes; a job over ``timeout_s`` is killed (status timeout).

    The worker that ran it is replaced, so one pathological response costs ``timeout_s`` and nothing
    else. Responses with no extractable answer are settled here without a worker (status no_answer),
    and so are answers equal to the gold after normalisation (the common case) and letter golds
    (multiple choice: the letters are compared), so workers only see real comparisons. ``pool``
    reuses a :class:`GradingPool` across calls. ``answer_format`` is the dataset's (one for all, or
    one per response): ``choice`` extracts a choice letter as the harness does for MMLU STEM (see
    :func:`extract_final`).
    """
    _check_timeout(timeout_s)
    if len(texts) != len(golds):
        raise ValueError(f"grade_many: {len(texts)} responses but {len(golds)} gold answers")
    formats = [answer_format] * len(texts) if isinstance(answer_format, str) else list(answer_format)
    if len(formats) != len(texts):
        raise ValueError(f"grade_many: {len(texts)} responses but {len(formats)} answer formats")
    results: list[GradeResult | None] = [None] * len(texts)
    jobs: list[tuple[int, str, str, str]] = []
    for i, (text, gold, fmt) in enumerate(zip(texts, golds, formats)):
        gold_s = gold_answer_text(choice_gold(gold, fmt))
        pred = extract_final(text, gold_s, fmt) if isinstance(text, str) else None
        if pred is None:
            results[i] = GradeResult(None, False, "no_answer")
            continue
        if is_choice_letter(gold_s):
            results[i] = GradeResult(pred, _letter_match(pred, gold_s), "ok")
            continue
        if strip_answer(pred) == strip_answer(gold_s):
            results[i] = GradeResult(pred, True, "ok")
            continue
        jobs.append((i, text, gold_s, fmt))
    if jobs:
        own = pool is None
        pool = pool or GradingPool(min(workers, len(jobs)))
        try:
            for i, res in pool.run(jobs, timeout_s, progress_every).items():
                results[i] = res
        finally:
            if own:
                pool.close()
    return results  # type: ignore[return-value]


def parses_many(texts: Sequence[str], timeout_s: float = 5.0, pool: GradingPool | None = None,
                workers: int = 2) -> list[GradeResult]:
    """Whether each answer parses under math-verify as majority voting parses it (``correct``: a
    non-empty parse), each in a worker killed after ``timeout_s``. An answer that does not parse (or
    times out: status timeout) can equal no other answer, so no comparison with it is needed."""
    _check_timeout(timeout_s)
    return _run_pairs([(i, str(t), "", PARSE) for i, t in enumerate(texts)], timeout_s, pool, workers)


def _run_pairs(jobs: list, timeout_s: float, pool: GradingPool | None, workers: int) -> list[GradeResult]:
    if not jobs:
        return []
    own = pool is None
    pool = pool or GradingPool(min(workers, len(jobs)))
    try:
        res = pool.run(jobs, timeout_s)
    finally:
        if own:
            pool.close()
    return [res[i] for i in range(len(jobs))]


def equivalent_many(pairs: Sequence[tuple[str, str]], timeout_s: float = 5.0, workers: int = 2,
                    pool: GradingPool | None = None) -> list[GradeResult]:
    """math-verify equivalence of (representative, answer) pairs as majority voting groups answers
    (:func:`_equivalent`), each comparison in a worker process killed after ``timeout_s``.
    ``correct`` = equivalent; a comparison that times out (status timeout) or fails (error) counts as
    not equivalent. ``pool`` reuses a :class:`GradingPool`; without one a pool of ``workers`` runs
    them and is closed."""
    _check_timeout(timeout_s)
    return _run_pairs([(i, str(b), str(a), EQUIV) for i, (a, b) in enumerate(pairs)], timeout_s, pool, workers)


def _check_timeout(timeout_s) -> None:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) \
            or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"grading timeout must be a positive number of seconds, got {timeout_s!r}")


def grade(text_or_pred: str | None, gold, timeout_s: float = 5.0, answer_format: str = "plain") -> GradeResult:
    """Grade one response (or a bare answer) against a gold answer, under a hard time limit.

    ``text_or_pred`` may be a whole response (its final answer is extracted) or an answer already
    extracted (a bare ``"5"`` or ``"\\frac{1}{2}"`` extracts to itself). Uses one persistent worker
    process shared by all calls in this process; never hangs.
    """
    text = text_or_pred
    if isinstance(text, str) and looks_like_bare_answer(text) and answer_format != "choice":
        text = f"\\boxed{{{text.strip()}}}"
    return grade_many([text], [gold], timeout_s=timeout_s, pool=_shared_pool(), answer_format=answer_format)[0]


def looks_like_bare_answer(text: str) -> bool:
    """A short answer on its own ("\\frac{1}{2}", "5 cm", "x = 3") rather than a written response."""
    if len(text) > 100 or "\n" in text.strip() or "boxed" in text or "fbox" in text or "answer is" in text:
        return False
    if not (re.search(r"[\d\\]", text) or len(text.strip()) <= 3):  # "5 cm", "\\pi", "A"
        return False
    prose = re.sub(r"\\[a-zA-Z]+\{[^{}]*\}", " ", text)  # \text{...}, \mathrm{...}
    return len(re.findall(r"[A-Za-z]{2,}", prose)) < 3


def summarize(results: Iterable[GradeResult]) -> dict:
    results = list(results)
    counts = Counter(r.status for r in results)
    return {"n": len(results), "correct": sum(r.correct for r in results),
            **{s: counts.get(s, 0) for s in STATUSES}}


# --------------------------------------------------------------------------------------------------
# rows of a JSONL file (the `grade` CLI)
# --------------------------------------------------------------------------------------------------

def gold_problem(gold) -> str | None:
    """Why a gold answer cannot be graded (None when it can): null, NaN or infinite, empty, a boolean,
    an object, or a list that is empty or holds such a value (a list of scalars is a multi-part
    answer, as OlympiadBench's). Grading null against a response saying "None" would count it right."""
    if isinstance(gold, (list, tuple)):
        if not gold:
            return "is an empty list"
        for k, g in enumerate(gold):
            why = "is a list" if isinstance(g, (list, tuple)) else _scalar_gold_problem(g)
            if why:
                return f"element {k} {why}"
        return None
    return _scalar_gold_problem(gold)


def _scalar_gold_problem(gold) -> str | None:
    if gold is None:
        return "is null"
    if is_bool(gold):
        return f"is a boolean ({gold})"
    if isinstance(gold, numbers.Real):
        return None if math.isfinite(float(gold)) else f"is {float(gold)}"
    if isinstance(gold, str):
        return None if gold_answer_text(gold) else "is empty"
    return f"is a JSON {json_type(gold)}"


def _row_name(n: int, row) -> str:
    ident = row.get("id", row.get("idx")) if isinstance(row, dict) else None
    return f"row {n + 1}" + (f" (id {ident})" if ident is not None and not isinstance(ident, (dict, list)) else "")


def check_grade_rows(rows: Sequence, response_field: str = "response", answer_field: str = "answer") -> None:
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
        why = gold_problem(row[answer_field])
        if why:
            problems.append(f"{name}: gold answer (field '{answer_field}') {why}; a row without a gold "
                            "answer cannot be graded")
    if problems:
        raise InputError(problems)


def grade_rows(rows: list[dict], response_field: str = "response", answer_field: str = "answer",
               timeout_s: float = 5.0, workers: int = 2, answer_format: str = "plain") -> tuple[list[dict], dict]:
    """Add ``pred``/``correct``/``grade_status`` to each row (lists of responses give lists).
    ``answer_format``: the dataset's (``choice`` for MMLU STEM; see :func:`extract_final`).
    The rows are checked first (:func:`check_grade_rows`: InputError naming every bad row, nothing
    graded); a response that is not text, or a list element that is not, has no answer."""
    _check_timeout(timeout_s)
    check_grade_rows(rows, response_field, answer_field)
    flat_texts, flat_golds, where = [], [], []
    for n, row in enumerate(rows):
        resp = row[response_field]
        items = resp if isinstance(resp, list) else [resp]
        for k, text in enumerate(items):
            flat_texts.append(text if isinstance(text, str) else None)
            flat_golds.append(row[answer_field])
            where.append((n, k, isinstance(resp, list)))
    results = grade_many(flat_texts, flat_golds, timeout_s=timeout_s, workers=workers, answer_format=answer_format)
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


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    _worker_main()
