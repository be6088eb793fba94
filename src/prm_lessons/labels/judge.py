"""LLM-as-a-judge step labels (the paper's §3.1.2) and the ProcessBench critic protocol.

Two verdict formats (``judge.style``):

* ``paper`` — the paper's judge format: the problem in ``<math_problem>``, solution paragraphs in
  ``<paragraph_1>`` … ``<paragraph_n>`` (1-indexed), an ``<analysis_i>`` per paragraph, stop after
  the first erroneous paragraph, end with ``<conclusion>Correct|Incorrect</conclusion>``.
  Verdict: Correct → -1; Incorrect → the last analysed paragraph (the judge stops there), 0-based.
* ``processbench`` — the ProcessBench critic (Zheng et al. 2024, ``critique_template.txt``):
  paragraphs ``<paragraph_0>`` … (0-indexed), the earliest erroneous index in ``\\boxed{}``, -1 for
  none. Verdict: the last ``\\boxed{}`` (as the official ``run_eval.py``).

The template texts below (``judge.template: project_paraphrase``) are written for this project following
the structure the two papers describe, not their words; ``judge.template_path`` loads another text (e.g.
the official file) with the same placeholders (``{tagged_problem}``/``{problem}`` and ``{tagged_response}``).
The paper's own prompt (``judge.template: paper_app_c``) is never shipped: rule ``judge_template`` reads it
out of the paper's source (:mod:`prm_lessons.labels.paper_prompt`).

Reference-guided judging (``judge.reference``, off by default and in the paper, whose judge is
reference-free): the problem placeholder also carries a correct reference solution (the problem's gold
steps, else its gold answer; :func:`reference_text`), marked as a comparison and not the text to check.
Without a reference the prompt is the reference-free one, byte for byte.

Verdict parsing (:func:`parse_verdict`) never raises: a verdict that cannot be read — no conclusion,
no box, a box without an integer, an index outside ``[-1, n_steps)`` — is ``None``; the caller
records it, counts it, and excludes the response from judge-based training sets.

With ``n > 1`` samples the verdict is the majority over the parsed samples (ties: the earliest
sample's value, like ``collections.Counter.most_common``); unparsable samples do not vote.
When a sample is unparsable and ``force_answer`` is on, the judge's own text is continued with the
answer opening (``\\boxed{`` / ``<conclusion>``) for a few tokens; on vLLM that continuation is
constrained by a regex (structured outputs), elsewhere it is parsed like any verdict.
Only a sample the model ended itself is forced: one cut off at ``max_tokens`` (finish reason
``length``) stopped mid-analysis, so forcing it would invent a first-error location. It stays
unparsed with status ``truncated`` and is counted (``n_truncated``) unless ``force_truncated`` is on.
"""
from __future__ import annotations

import logging
import re
import time
from collections import Counter
from typing import Sequence

from .. import as_paths
from ..generation.engine import Completion, SamplingSpec, derive_seed, render_chat
from ..jobs.progress import vllm_bar
from ..templates import read_template
from . import clean_steps

log = logging.getLogger(__name__)

STYLES = ("paper", "processbench")

PAPER_TEMPLATE = """\
The following is a math problem and a solution to it. The solution is split into paragraphs, \
each enclosed in tags and numbered from 1.

{tagged_problem}

{tagged_response}

Check the solution paragraph by paragraph. For each paragraph i, write your analysis inside \
<analysis_i>...</analysis_i>: verify its claims, recalculate every computation, and reflect on \
whether its reasoning follows from the problem and the previous paragraphs. When you reach the \
first paragraph that contains an error, describe the error, give the correction, and stop: do not \
analyse any later paragraph.

Finish with your verdict on the whole solution: <conclusion>Correct</conclusion> if every \
paragraph is correct, otherwise <conclusion>Incorrect</conclusion>."""

PROCESSBENCH_TEMPLATE = """\
Below is a math problem and a proposed solution. The solution is split into paragraphs, each \
enclosed in tags and indexed from 0.

[Math Problem]

{problem}

[Solution]

{tagged_response}

Review and critique the solution one paragraph at a time. If you find an error, return the index \
of the paragraph where the earliest error occurs. If every paragraph is correct, return -1 \
(meaning that no error was found).

Put your final answer (the index) in \\boxed{{}}."""

# continuation that forces an answer out of a judge that rambled without one, and the regex that
# constrains it on engines with structured outputs
FORCE = {
    "processbench": ("\n\nSo the index of the paragraph with the earliest error is \\boxed{", r"-?[0-9]{1,3}\}"),
    "paper": ("\n\n<conclusion>", r"(Correct|Incorrect)</conclusion>"),
}


# the reference block of a reference-guided judge: after the problem, said to be correct and not the text to check
REFERENCE_NOTE = "A correct solution to the problem, for comparison (it is not the solution to check):"


def tag_steps(steps: Sequence[str], start: int) -> str:
    return "\n\n".join(f"<paragraph_{i}>\n{s}\n</paragraph_{i}>" for i, s in enumerate(steps, start=start))


def reference_text(gold_steps: Sequence[str] | None, answer) -> str | None:
    """What a reference-guided judge sees as the correct solution: the gold steps (one paragraph each)
    and the gold answer where the steps do not box it; the answer alone without gold steps; None
    when the problem has neither."""
    steps = [str(s).strip() for s in (gold_steps if gold_steps is not None else []) if str(s).strip()]
    ans = "" if answer is None else str(answer).strip()
    text = "\n\n".join(steps)
    if ans and "\\boxed" not in text:  # no grading import: a grading fix must not rerun the judge
        text = (text + "\n\n" if text else "") + f"The final answer is {ans}."
    return text or None


def render_judge_prompt(question: str, steps: Sequence[str], style: str = "processbench",
                        template: str | None = None, reference: str | None = None) -> str:
    """The judge's user message for (question, steps). `template` overrides the built-in text.
    `reference` (reference_text): a correct solution shown after the problem; None = the
    reference-free prompt, unchanged."""
    if style not in STYLES:
        raise ValueError(f"judge style must be one of {STYLES}, not {style!r}")
    steps = list(steps)
    tagged = f"<math_problem>\n{question}\n</math_problem>"
    problem = question
    if reference is not None:
        tagged += f"\n\n<reference_solution>\n{REFERENCE_NOTE}\n\n{reference}\n</reference_solution>"
        problem += f"\n\n[Reference Solution]\n\n{REFERENCE_NOTE}\n\n{reference}"
    if style == "paper":
        tmpl = template or PAPER_TEMPLATE
        return tmpl.format(tagged_problem=tagged, problem=problem, tagged_response=tag_steps(steps, 1))
    tmpl = template or PROCESSBENCH_TEMPLATE
    return tmpl.format(problem=problem, tagged_problem=problem, tagged_response=tag_steps(steps, 0))


_CONCLUSION_RE = re.compile(r"<\s*conclusion\s*>\s*[*_\s]*(correct|incorrect)\b", re.I)
_CONCLUSION_LOOSE_RE = re.compile(r"\bconclusion\b\W{0,6}(correct|incorrect)\b", re.I)
_ANALYSIS_RE = re.compile(r"<\s*analysis_(\d+)\s*>", re.I)
_INT_RE = re.compile(r"^[+-]?\d+$")


def last_closed_boxed(text: str) -> str | None:
    r"""Content of the last *closed* ``\boxed{...}`` (nested braces matched). Like the official
    ProcessBench regex ``\boxed\{([^}]*)\}`` an unclosed box (a truncated critique) is skipped,
    but braces inside the box (``\boxed{\text{2}}``) are kept whole."""
    found = None
    for m in re.finditer(r"\\boxed\s*\{", text):
        depth, start = 1, m.end()
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    found = text[start:i]
                    break
    return found


def _boxed_int(text: str) -> str | int | None:
    content = last_closed_boxed(text)
    if content is None:
        return None
    c = content.strip().strip("$").strip()
    c = re.sub(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}", r"\1", c).strip()
    c = re.sub(r"^(?:paragraph[_\s]*|para\.?\s*|step\s*)", "", c, flags=re.I).strip()
    c = c.replace("\u2212", "-")  # unicode minus
    return int(c) if _INT_RE.match(c) else "bad"


def parse_verdict_detail(text: str | None, n_steps: int, style: str = "processbench") -> tuple[int | None, str]:
    """(first_error, status): status 'ok', 'no_verdict' (nothing readable) or 'out_of_range'."""
    if style not in STYLES:
        raise ValueError(f"judge style must be one of {STYLES}, not {style!r}")
    if not text:
        return None, "no_verdict"
    if style == "processbench":
        v = _boxed_int(text)
        if v is None or v == "bad":
            return None, "no_verdict"
    else:
        found = _CONCLUSION_RE.findall(text) or _CONCLUSION_LOOSE_RE.findall(text)
        if not found:
            return None, "no_verdict"
        if found[-1].lower() == "correct":
            return -1, "ok"
        analysed = [int(m) for m in _ANALYSIS_RE.findall(text)]
        if not analysed:  # "Incorrect" without saying where: the location is unknown
            return None, "no_verdict"
        v = max(analysed) - 1  # 1-indexed tags; the judge stops at the first error
    if v == -1 or 0 <= v < n_steps:
        return v, "ok"
    return None, "out_of_range"


def parse_verdict(text: str | None, n_steps: int, style: str = "processbench") -> int | None:
    """First erroneous step (0-based), -1 for none, None when unreadable or out of range."""
    return parse_verdict_detail(text, n_steps, style)[0]


def vote(values: Sequence[int | None]) -> int | None:
    """Majority over parsed verdicts; ties → the value seen first; None if nothing parsed."""
    parsed = [v for v in values if v is not None]
    return Counter(parsed).most_common(1)[0][0] if parsed else None


def case_verdict(details: Sequence[tuple[int | None, str]], cut: Sequence[bool]) -> tuple[int | None, str]:
    """One item's verdict from its samples' (value, status) and whether each was cut off at max_tokens:
    (majority value, status); status 'ok', else 'out_of_range', 'truncated' (a cut-off sample stayed
    unread) or 'no_verdict'."""
    fe = vote([d[0] for d in details])
    if fe is not None:
        return fe, "ok"
    statuses = ["truncated" if (c and d[1] == "no_verdict") else d[1] for d, c in zip(details, cut)]
    return None, next((s for s in ("out_of_range", "truncated") if s in statuses), "no_verdict")


def load_template(path) -> str | None:
    """A judge or critic template, checked (templates.read_template): `path` a path, a rule's input list of
    at most one (the file plan.judge_template_input names), or empty/None (the built-in text)."""
    paths = as_paths(path)
    if len(paths) > 1:
        raise ValueError(f"judge template: {len(paths)} files given, expected at most one")
    return read_template(paths[0], "judge") if paths else None


def guided_generate(engine, prompts: list[str], max_tokens: int, regex: str | Sequence[str] | None):
    """Short greedy continuation, regex-constrained where the engine is vLLM (structured outputs);
    `regex`: one pattern for every prompt, or one per prompt (verifiers: one line per step)."""
    regexes = [regex] * len(prompts) if regex is None or isinstance(regex, str) else list(regex)
    if regexes and all(regexes) and getattr(engine, "backend", "") == "vllm" and hasattr(engine, "llm"):
        try:
            from vllm import SamplingParams  # lazy: vLLM only where the engine is vLLM
            from vllm.sampling_params import StructuredOutputsParams

            params = [SamplingParams(n=1, temperature=0.0, max_tokens=max_tokens,
                                     structured_outputs=StructuredOutputsParams(regex=r)) for r in regexes]
            t0 = time.perf_counter()
            # BOS: as VLLMEngine.generate; a progress line a minute (thousands of long prompts at paper scale)
            results = engine.llm.generate(prompts, params, use_tqdm=vllm_bar(log, "forced verdicts"),
                                          tokenization_kwargs={"add_special_tokens": False})
            if hasattr(engine, "account_results"):  # the job's token budget (prm_lessons.jobs.budget)
                done = [[Completion("", len(getattr(r.outputs[0], "token_ids", None) or []), "stop")] for r in results]
                engine.account_results(results, done, len(prompts), t0)
            return [r.outputs[0].text for r in results]
        except Exception as exc:  # an engine without a structured-output backend: plain decoding
            log.warning("guided decoding unavailable (%s); falling back to plain decoding", exc)
    outs = engine.generate(prompts, SamplingSpec(n=1, temperature=0.0, max_tokens=max_tokens, seed=0))
    return [o[0].text for o in outs]


def judge_responses(engine, questions: Sequence[str], steps_lists: Sequence[Sequence[str]], ids: Sequence[str], *,
                    style: str = "processbench", n: int = 1, temperature: float = 0.0, top_p: float = 1.0,
                    top_k: int | None = None, max_tokens: int = 1024, seed: int = 0, template: str | None = None,
                    system_prompt: str | None = None, force_answer: bool = True, force_max_tokens: int = 8,
                    guided: bool = True, force_truncated: bool = False,
                    references: Sequence[str | None] | None = None) -> list[dict]:
    """Judge every (question, steps); `references`: per item a correct solution for a reference-guided
    judge (reference_text), None = reference-free. One row per item: first_error, verdicts (raw texts), parsed,
    status, votes (parsed value per sample), n_forced, n_truncated, tokens_generated, cut (per sample:
    cut off at max_tokens), forced_at (per sample: where the forced answer starts in its text, -1 if none).

    Items with no steps get no call (first_error None, status 'no_steps'). Each of the n samples is
    its own request with a seed derived from (seed, id, j)."""
    # indices refer to the steps as given (ProcessBench labels do); callers clean sample steps first
    steps_lists = [[str(x) for x in s] if s is not None else [] for s in steps_lists]
    todo = [i for i, s in enumerate(steps_lists) if clean_steps(s)]
    reqs = [(i, j) for i in todo for j in range(n)]
    refs = list(references) if references is not None else [None] * len(steps_lists)
    if len(refs) != len(steps_lists):
        raise ValueError(f"judge: {len(refs)} references for {len(steps_lists)} responses")
    prompts = {i: render_chat(engine.tokenizer, system_prompt, render_judge_prompt(
        questions[i], steps_lists[i], style, template, refs[i])) for i in todo}
    spec = SamplingSpec(n=1, temperature=temperature, top_p=top_p if temperature > 0 else 1.0,
                        top_k=top_k if temperature > 0 else None, max_tokens=max_tokens, seed=None)
    outs = engine.generate_logged([prompts[i] for i, _ in reqs], spec,
                                  [derive_seed("judge", seed, ids[i], j) for i, j in reqs], "judged") if reqs else []
    texts = {rq: o[0].text for rq, o in zip(reqs, outs)}
    tokens = {rq: int(o[0].n_tokens) for rq, o in zip(reqs, outs)}
    cut = {rq for rq, o in zip(reqs, outs) if o[0].finish_reason == "length"}
    parsed = {rq: parse_verdict_detail(texts[rq], len(steps_lists[rq[0]]), style) for rq in reqs}
    forced: dict = {}  # forced sample -> where its forced continuation starts in its text
    if force_answer:
        retry = [rq for rq in reqs if parsed[rq][1] == "no_verdict" and (rq not in cut or force_truncated)]
        if retry:
            suffix, regex = FORCE[style]
            conts = guided_generate(engine, [prompts[i] + texts[(i, j)] + suffix for i, j in retry],
                                     force_max_tokens, regex if guided else None)
            for rq, cont in zip(retry, conts):
                full = texts[rq] + suffix + cont
                v = parse_verdict_detail(full, len(steps_lists[rq[0]]), style)
                if v[1] != "no_verdict":
                    forced[rq] = len(texts[rq])
                    texts[rq], parsed[rq] = full, v
    rows = []
    for i in range(len(steps_lists)):
        if i not in prompts:
            rows.append({"first_error": None, "verdicts": [], "parsed": False, "status": "no_steps",
                         "votes": [], "n_forced": 0, "n_truncated": 0, "tokens_generated": 0, "cut": [],
                         "forced_at": []})
            continue
        rq = [(i, j) for j in range(n)]
        # a cut-off sample that stayed unread is "truncated", not just "no_verdict"
        fe, status = case_verdict([parsed[r] for r in rq], [r in cut for r in rq])
        rows.append({"first_error": fe, "verdicts": [texts[r] for r in rq], "parsed": fe is not None,
                     "status": status, "votes": [parsed[r][0] for r in rq], "n_forced": sum(r in forced for r in rq),
                     "n_truncated": sum(r in cut and r not in forced for r in rq),
                     "tokens_generated": sum(tokens[r] for r in rq),
                     # per sample: cut off at max_tokens; where the forced answer starts (-1: not forced)
                     "cut": [r in cut for r in rq], "forced_at": [forced.get(r, -1) for r in rq]})
    return rows
