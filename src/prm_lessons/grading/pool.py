"""Grading under a hard timeout: the comparison that runs inside a worker process (math-verify, or the
harness's math_equal: ``grader``), the worker pool that kills and replaces a worker that overruns, and
grade / grade_many / equivalent_many. Worker entry point: ``python -m prm_lessons.grading.pool --worker``.
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

from .. import checkout_env
from .extract import CHOICE_LETTERS, choice_gold, extract_final, is_choice_letter, multi_choice_gold, strip_answer
from .golds import gold_answer_text
from .harness import math_equal, normalise_gold, normalise_pred, read_number

log = logging.getLogger(__name__)


STATUSES = ("ok", "no_answer", "timeout", "error")
# `grading.grader`: math_verify (the project's default) or the Qwen2.5-Math harness's math_equal
GRADERS = ("math_verify", "harness")
# grading processes at most (config grading.workers' schema maximum, the CLIs' --workers): each is a Python
# process with math-verify and sympy loaded (~100 MB); more than the cores only queue
MAX_WORKERS = 64


@dataclass(frozen=True)
class GradeResult:
    pred: str | None      # the extracted answer (None: nothing extractable)
    correct: bool
    status: str           # ok | no_answer | timeout | error



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
HARNESS = "harness_math_equal"  # a worker job: [pred, gold] normalised as the harness does, math_equal
PAIR_JOBS = (EQUIV, PARSE, HARNESS)  # jobs on two answers, not on a response (no answer to report)


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
        if fmt in PAIR_JOBS:  # [answer, rep, EQUIV]: one vote? [answer, "", PARSE]: parsable? [pred, gold, HARNESS]
            try:
                if fmt == HARNESS:
                    same = math_equal(text, gold)
                else:
                    same = _equivalent(gold, text) if fmt == EQUIV else bool(_vote_parse(text))
                result = (None, same, "ok")
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
    """One grading process (``python -m prm_lessons.grading.pool --worker``) behind pipes.

    A plain subprocess rather than multiprocessing: no fork (safe from threads and from processes
    holding GPUs) and no re-import of the caller's ``__main__`` (safe from scripts without a main guard).
    """

    def __init__(self):
        env = checkout_env()  # works from a checkout without installing
        self.proc = subprocess.Popen([sys.executable, "-m", "prm_lessons.grading.pool", "--worker"],
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
                return None if fmt and fmt[0] in PAIR_JOBS else extract_final(text, gold, *fmt)
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
                        if by_idx[job][3:4] in ((EQUIV,), (PARSE,), (HARNESS,)):
                            what = {EQUIV: "math-verify comparison", PARSE: "math-verify parse",
                                    HARNESS: "harness math_equal"}[by_idx[job][3]]
                            log.warning("%s of an answer (%d characters) timed out after %.1fs; counted as not "
                                        "equal", what, len(by_idx[job][1] or ""), timeout_s)
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


def shared_pool() -> GradingPool:
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = GradingPool(1)
            atexit.register(_SHARED.close)
        return _SHARED


def grade_many(texts: Sequence[str | None], golds: Sequence, timeout_s: float = 5.0, workers: int = 2,
               pool: GradingPool | None = None, progress_every: int = 0,
               answer_format: str | Sequence[str] = "plain", grader: str = "math_verify",
               keep_units: bool = False) -> list[GradeResult]:
    """Grade many responses in worker processes; a job over ``timeout_s`` is killed (status timeout).

    The worker that ran it is replaced, so one pathological response costs ``timeout_s`` and nothing
    else. Responses with no extractable answer are settled here without a worker (status no_answer),
    and so are answers equal to the gold after normalisation (the common case) and letter golds
    (multiple choice: the letters are compared), so workers only see real comparisons. ``pool``
    reuses a :class:`GradingPool` across calls. ``answer_format`` is the dataset's (one for all, or
    one per response): ``choice`` extracts a choice letter as the harness does for MMLU STEM (see
    :func:`extract_final`). ``grader``: ``math_verify`` (:func:`compare`) or ``harness`` (the
    Qwen2.5-Math harness's ``math_equal`` on its normalised answers, prm_lessons.grading.harness;
    ``keep_units``: the dataset is one the harness normalises without removing units, answer_key.KEEP_UNITS).
    Either way ``pred`` is the extracted answer, not normalised.
    """
    check_timeout(timeout_s)
    check_grader(grader)
    if len(texts) != len(golds):
        raise ValueError(f"grade_many: {len(texts)} responses but {len(golds)} gold answers")
    formats = [answer_format] * len(texts) if isinstance(answer_format, str) else list(answer_format)
    if len(formats) != len(texts):
        raise ValueError(f"grade_many: {len(texts)} responses but {len(formats)} answer formats")
    results: list[GradeResult | None] = [None] * len(texts)
    jobs: list[tuple[int, str, str, str]] = []
    preds: dict[int, str] = {}  # the extracted answer of each harness job (its worker reports none)
    for i, (text, gold, fmt) in enumerate(zip(texts, golds, formats)):
        if grader == "harness" and isinstance(gold, (list, tuple)) and gold:
            gold = gold[0]  # the harness grades a multi-part gold (OlympiadBench) on its first part only
        gold_s = gold_answer_text(choice_gold(gold, fmt))
        pred = extract_final(text, gold_s, fmt) if isinstance(text, str) else None
        if pred is None:
            results[i] = GradeResult(None, False, "no_answer")
            continue
        if grader == "harness":
            settled = harness_settled(pred, gold_s, fmt, keep_units)
            if isinstance(settled, bool):
                results[i] = GradeResult(pred, settled, "ok")
            else:
                preds[i] = pred
                jobs.append((i, *settled, HARNESS))
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
                results[i] = GradeResult(preds[i], res.correct, res.status) if i in preds else res
        finally:
            if own:
                pool.close()
    return results  # type: ignore[return-value]


def harness_settled(pred: str, gold: str, answer_format: str = "plain",
                    keep_units: bool = False) -> bool | tuple[str, str]:
    """The harness grader's verdict where no SymPy is needed, else the (prediction, gold) pair that a
    worker compares with ``math_equal``, both as the harness normalises them (harness.normalise_pred: two
    ``strip_string`` passes; harness.normalise_gold: one, two or none by ``answer_format``; units kept for
    ``keep_units``), except a choice answer (``choice`` format, or a letter gold: the letter the harness's
    choice cleaning took, which it does not normalise). Settled here: equal strings (math_equal's first
    test), a letter gold against another letter or an answer without that letter (no expression without
    the symbol equals it) and two numbers (math_equal decides numbers by tolerance alone)."""
    letter = answer_format == "choice" or is_choice_letter(gold)
    p = pred if letter else normalise_pred(pred, keep_units)
    g = gold.strip() if letter else normalise_gold(gold, answer_format, keep_units)
    if p.strip().lower() == g.strip().lower():
        return True
    if g in CHOICE_LETTERS and (p.strip() in CHOICE_LETTERS or g not in p.upper()):
        return False  # an expression without the symbol G never equals G
    if read_number(p) is not None and read_number(g) is not None:
        return math_equal(p, g)
    return p, g


def parses_many(texts: Sequence[str], timeout_s: float = 5.0, pool: GradingPool | None = None,
                workers: int = 2) -> list[GradeResult]:
    """Whether each answer parses under math-verify as majority voting parses it (``correct``: a
    non-empty parse), each in a worker killed after ``timeout_s``. An answer that does not parse (or
    times out: status timeout) can equal no other answer, so no comparison with it is needed."""
    check_timeout(timeout_s)
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
    check_timeout(timeout_s)
    return _run_pairs([(i, str(b), str(a), EQUIV) for i, (a, b) in enumerate(pairs)], timeout_s, pool, workers)


def check_grader(grader) -> None:
    if grader not in GRADERS:
        raise ValueError(f"grading.grader must be one of {', '.join(GRADERS)}, got {grader!r}")


def check_timeout(timeout_s) -> None:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, numbers.Real) \
            or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"grading timeout must be a positive number of seconds, got {timeout_s!r}")


def grade(text_or_pred: str | None, gold, timeout_s: float = 5.0, answer_format: str = "plain",
          grader: str = "math_verify", keep_units: bool = False) -> GradeResult:
    """Grade one response (or a bare answer) against a gold answer, under a hard time limit.

    ``text_or_pred`` may be a whole response (its final answer is extracted) or an answer already
    extracted (a bare ``"5"`` or ``"\\frac{1}{2}"`` extracts to itself). Uses one persistent worker
    process shared by all calls in this process; never hangs. ``grader``, ``keep_units``: as :func:`grade_many`.
    """
    text = text_or_pred
    if isinstance(text, str) and looks_like_bare_answer(text) and answer_format != "choice":
        text = f"\\boxed{{{text.strip()}}}"
    return grade_many([text], [gold], timeout_s=timeout_s, pool=shared_pool(), answer_format=answer_format,
                      grader=grader, keep_units=keep_units)[0]


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




if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    _worker_main()
