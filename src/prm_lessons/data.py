"""Problem loaders, the ProcessBench loader, and step-labelled sets built by construction.

Three problem sources share one interface, :func:`load_problems` (reasoning-gym generators, Hugging
Face datasets, local jsonl/json/parquet files); every loader returns the ``problems`` table
(``problem_id``, ``dataset``, ``question``, ``answer``, ``gold_steps``).

By construction (the embedded profile has no human annotators): :func:`corrupt_solution` injects one
real arithmetic or operation error into a gold step-by-step solution at a known step, either
propagating it to a wrong final answer or keeping the original final answer ("correct answer,
flawed process"). The labels stage builds its human labels with it and
:func:`build_constructed_processbench` builds a ProcessBench-format set with it.
"""
from __future__ import annotations

import ast
import json
import logging
import math
import operator
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from . import as_paths

log = logging.getLogger(__name__)

PROBLEM_COLUMNS = ["problem_id", "dataset", "question", "answer", "gold_steps"]
PROCESSBENCH_COLUMNS = ["id", "subset", "generator", "problem", "steps", "final_answer_correct", "label"]
PROCESSBENCH_SUBSETS = ["gsm8k", "math", "olympiadbench", "omnimath"]
CONSTRUCTED_GENERATOR = "constructed"


# --------------------------------------------------------------------------------------------------
# numbers and arithmetic expressions
# --------------------------------------------------------------------------------------------------

def _fmt(value: Fraction | int | float) -> str:
    """Render a number the way a solution would write it: integers plainly, else ≤4 decimals."""
    frac = Fraction(value).limit_denominator(10**9) if isinstance(value, float) else Fraction(value)
    if frac.denominator == 1:
        return str(frac.numerator)
    text = f"{float(frac):.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _to_fraction(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


_BINOPS = {ast.Add: ("+", operator.add, 1), ast.Sub: ("-", operator.sub, 1),
           ast.Mult: ("*", operator.mul, 2), ast.Div: ("/", operator.truediv, 2)}


def _literal_value(node: ast.AST) -> Fraction | None:
    """Value of a number literal, incl. unary minus/plus on a literal; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, Fraction)) \
            and not isinstance(node.value, bool):
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _literal_value(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None


def _eval_node(node: ast.AST) -> Fraction:
    """Exact evaluation of + - * / over numbers (no names, calls or powers). Raises ValueError."""
    lit = _literal_value(node)
    if lit is not None:
        return lit
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        val = _eval_node(node.operand)
        return -val if isinstance(node.op, ast.USub) else val
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval_node(node.left), _eval_node(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ValueError("division by zero")
        return _BINOPS[type(node.op)][1](left, right)
    raise ValueError(f"not an arithmetic expression: {ast.dump(node)[:80]}")


def _parse_arith(text: str) -> ast.AST:
    text = text.replace("×", "*").replace("÷", "/").replace("−", "-")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot parse arithmetic expression {text!r}") from exc


def eval_arith(text: str) -> Fraction:
    """Exact value of an arithmetic expression such as ``-( 32 / 8 ) - 15`` (``×``/``÷`` accepted)."""
    return _eval_node(_parse_arith(text))


def _render(node: ast.AST, parent_prec: int = 0, right_side: bool = False) -> str:
    lit = _literal_value(node)
    if lit is not None:
        return _fmt(lit)
    if isinstance(node, ast.UnaryOp):
        inner = _render(node.operand, 3)
        sign = "-" if isinstance(node.op, ast.USub) else "+"
        return f"{sign}({inner})" if not inner.startswith("(") else f"{sign}{inner}"
    if isinstance(node, ast.BinOp):
        sym, _, prec = _BINOPS[type(node.op)]
        text = f"{_render(node.left, prec)} {sym} {_render(node.right, prec, right_side=True)}"
        needs = prec < parent_prec or (right_side and prec <= parent_prec)
        return f"({text})" if needs else text
    raise ValueError(f"cannot render {ast.dump(node)[:80]}")


def _next_ready(node: ast.AST) -> ast.BinOp | None:
    """The next operation in evaluation order (left to right, innermost first) whose operands are numbers."""
    if _literal_value(node) is not None:
        return None
    if isinstance(node, ast.UnaryOp):
        return _next_ready(node.operand)
    if isinstance(node, ast.BinOp):
        for child in (node.left, node.right):
            found = _next_ready(child)
            if found is not None:
                return found
        return node
    raise ValueError(f"not an arithmetic expression: {ast.dump(node)[:80]}")


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, value: Fraction):
        self.target, self.value = target, value

    def visit(self, node):  # noqa: D401 - ast API
        if node is self.target:
            return ast.copy_location(ast.Constant(self.value), node)
        return super().visit(node)


def arithmetic_gold_steps(expression: str, answer: str | None = None) -> list[str]:
    """A worked solution for an arithmetic expression: one step per operation, in evaluation order.

    ``-( 32 / 8 ) - 15`` → ["First, 32 / 8 = 4, so the expression becomes -4 - 15.",
    "Finally, -4 - 15 = -19.", "Therefore, the final answer is $\\boxed{-19}$."]. Every step holds a
    checkable equation, which is what :func:`corrupt_solution` needs. Raises ValueError when the
    expression's value differs from ``answer``.
    """
    tree = _parse_arith(expression)
    value = _eval_node(tree)
    if answer is not None:
        try:
            gold = _to_fraction(str(answer).strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"answer {answer!r} is not a number (expression {expression!r})") from None
        if gold != value:
            raise ValueError(f"expression {expression!r} evaluates to {_fmt(value)}, not the answer {answer!r}")
    steps: list[str] = []
    while _literal_value(tree) is None:
        node = _next_ready(tree)
        lhs = _render(node)
        val = _eval_node(node)
        tree = _Replace(node, val).visit(tree)
        done = _literal_value(tree) is not None
        lead = "First," if not steps else ("Finally," if done else "Next,")
        if done and not steps:
            lead = "Compute:"
        shown = _render(tree)
        rest = "" if shown == _fmt(val) else f", so the expression becomes {shown}"
        steps.append(f"{lead} {lhs} = {_fmt(val)}{rest}.")
    final = answer if answer is not None else _fmt(value)
    steps.append(f"Therefore, the final answer is $\\boxed{{{str(final).strip()}}}$.")
    return steps


# --------------------------------------------------------------------------------------------------
# error injection
# --------------------------------------------------------------------------------------------------

# A number token: optional attached minus sign (not a binary minus: that has a space or follows an
# operand), thousands separators allowed. Not part of a word or of a longer number.
_NUM_RE = re.compile(r"(?<![\w.)\]}])(-?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w]|\.\d)")
_EQ_RE = re.compile(r"=")
_LHS_TOKEN_RE = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?|[-+*/×÷()]|\s+|[xX](?=\s)|\S")


class CorruptionError(ValueError):
    """The solution has no step where an error can be injected as asked."""


def _rng_random(rng) -> random.Random:
    """Accept random.Random, numpy Generator/RandomState or an int seed; return a random.Random."""
    if isinstance(rng, random.Random):
        return rng
    if isinstance(rng, (int, type(None))):
        return random.Random(rng)
    if hasattr(rng, "integers"):  # numpy Generator
        return random.Random(int(rng.integers(0, 2**63 - 1)))
    if hasattr(rng, "randint"):  # numpy RandomState
        return random.Random(int(rng.randint(0, 2**31 - 1)))
    raise TypeError(f"rng must be random.Random, a numpy Generator or an int seed, not {type(rng).__name__}")


def _lhs_expression(text: str) -> str | None:
    """The longest arithmetic suffix of ``text`` (text before an '='), with unit words and currency dropped.

    "James has covered 475 + 70 " → "475 + 70"; "85 x 30" → "85 * 30"; "12 ÷ 2" → "12 / 2".
    Returns None unless the suffix holds at least one binary operation.
    """
    # multiplication written as x between numbers; currency signs and thousands separators go
    text = re.sub(r"(?<=\d)\s*[x×]\s*(?=[$€£\d])", " * ", text)
    text = re.sub(r"[$€£]", "", text).replace("÷", "/").replace("−", "-").replace("\\cdot", "*").replace("\\times", "*")
    # keep the trailing run of number/operator/paren/space/unit-word characters
    tail = re.search(r"[\d\s+\-*/().,a-zA-Z%]*$", text)
    if not tail:
        return None
    run = tail.group(0)
    # a unit word between numbers ("118 pieces + 972 pieces") is dropped; letters glued to a number
    # ("3x", "2a") mean algebra: keep only what follows the last glued word
    glued = [m for m in re.finditer(r"(?<=\d)[a-zA-Z]+", run)]
    if glued:
        run = run[glued[-1].end():]
    run = re.sub(r"[a-zA-Z%]+", " ", run).replace(",", "")
    run = run.rstrip(" .")
    tokens = [t for t in re.findall(r"\d+(?:\.\d+)?|[-+*/()]", run)]
    # longest suffix of the token list that parses and contains a binary operator
    for start in range(len(tokens)):
        cand = " ".join(tokens[start:])
        try:
            node = _parse_arith(cand)
            _eval_node(node)
        except (ValueError, ZeroDivisionError):
            continue
        if any(isinstance(n, ast.BinOp) for n in ast.walk(node)):
            return cand
        return None
    return None


def _checkable_equations(step: str) -> list[dict]:
    """Equations ``<arithmetic> = <number>`` in a step whose left side evaluates to the right side."""
    found = []
    prev_end = 0
    for m in _EQ_RE.finditer(step):
        # the left side starts after the previous '=' or sentence delimiter
        seg_start = prev_end
        segment = step[seg_start:m.start()]
        cut = max(segment.rfind(c) for c in (":", ";", ",", "\n", ". ", "?"))
        if cut >= 0:
            segment = segment[cut + 1:]
        prev_end = m.end()
        rhs = _NUM_RE.search(step, m.end())
        if rhs is None or step[m.end():rhs.start()].strip() not in ("", "$", "€", "£", "\\$"):
            continue
        lhs = _lhs_expression(segment)
        if lhs is None:
            continue
        try:
            value = eval_arith(lhs)
            rhs_val = _to_fraction(rhs.group(0))
        except (ValueError, ZeroDivisionError):
            continue
        decimals = len(rhs.group(3) or ".")-1
        if value == rhs_val or (decimals and round(float(value), decimals) == float(rhs_val)):
            found.append({"lhs": lhs, "value": value, "rhs_span": rhs.span(), "rhs_value": rhs_val,
                          "eq_pos": m.start()})
    return found


def _wrong_values(value: Fraction, rnd: random.Random) -> list[Fraction]:
    """Plausible wrong results for a computation: off by a little, a slip of a digit, a factor of ten."""
    cands: list[Fraction] = []
    for d in rnd.sample([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 6):
        cands.append(value + d * rnd.choice([-1, 1]))
    if value.denominator == 1 and abs(value) >= 10:
        digits = str(abs(value.numerator))
        i = rnd.randrange(len(digits) - 1)
        swapped = digits[:i] + digits[i + 1] + digits[i] + digits[i + 2:]
        if swapped[0] != "0":
            cands.insert(rnd.randrange(len(cands) + 1), Fraction(int(swapped)) * (1 if value >= 0 else -1))
        cands.append(value * 10)
    out = []
    for c in cands:
        if c != value and c != -value and c not in out:
            out.append(c)
    return out


def _pair(old: Fraction, new: Fraction) -> dict[Fraction, Fraction]:
    """old→new and, for the same number written with a minus sign (``-(4)`` → ``-4``), -old→-new."""
    return {old: new} if old == 0 else {old: new, -old: -new}


def _map_lhs(lhs: str, mapping: dict[Fraction, Fraction]) -> Fraction:
    """Value of an equation's left side after its numbers are rewritten by ``mapping``."""

    class _Map(ast.NodeTransformer):
        def visit(self, node):  # noqa: D401 - ast API
            val = _literal_value(node)
            if val is not None:
                return ast.Constant(mapping.get(val, val))
            return super().visit(node)

    return _eval_node(_Map().visit(_parse_arith(lhs)))


def _substitute(step: str, mapping: dict[Fraction, Fraction]) -> tuple[str, dict]:
    """Rewrite the number tokens of a step by ``mapping`` and recompute its checkable equations.

    An equation whose left side changes gets the recomputed right side, and that change joins the
    mapping (so it reaches the rest of the step and later steps). Returns (new text, new mapping).
    Hand-rolled because no library rewrites numbers in free-text solutions.
    """
    mapping = dict(mapping)
    eqs = {e["rhs_span"][0]: e for e in _checkable_equations(step)}
    out, pos = [], 0
    for m in _NUM_RE.finditer(step):
        out.append(step[pos:m.start()])
        pos = m.end()
        val = _to_fraction(m.group(0))
        eq = eqs.get(m.start())
        if eq is not None:
            try:
                new_val = _map_lhs(eq["lhs"], mapping)
            except (ValueError, ZeroDivisionError):
                new_val = eq["value"]
            if new_val != eq["value"]:
                mapping.update(_pair(eq["rhs_value"], new_val))
            out.append(_fmt(new_val) if new_val != eq["value"] else m.group(0))
            continue
        out.append(_fmt(mapping[val]) if val in mapping else m.group(0))
    out.append(step[pos:])
    return "".join(out), mapping


def corrupt_solution(gold_steps: Sequence[str], answer: str, rng, keep_final_answer: bool = False
                     ) -> tuple[list[str], int]:
    """Inject one real error into a correct step-by-step solution; return (steps, error_index).

    The error is placed in a step with a checkable equation (``<arithmetic> = <number>``): either a
    miscalculated result (off by a little, swapped digits, a factor of ten) or the wrong operation
    applied (+ ↔ -, * ↔ /) with its result computed consistently. Either way the step at
    ``error_index`` (0-based, as in ProcessBench) is wrong and every earlier step is untouched.

    keep_final_answer=False: later steps carry the wrong value (numbers rewritten, equations
    recomputed), so the final answer changes; a placement whose error does not reach the final answer
    is not used. keep_final_answer=True: later steps stay as they were, so the solution still ends in
    the original final answer ("correct answer, flawed process").

    ``rng`` is a ``random.Random``, a numpy Generator or an int seed. Raises :class:`CorruptionError`
    (a ValueError) when no step allows the requested kind of error.
    """
    rnd = _rng_random(rng)
    steps = [str(s) for s in gold_steps]
    if not steps:
        raise CorruptionError("no steps to corrupt")
    answer = str(answer).strip()
    candidates = [(i, eq) for i, s in enumerate(steps) for eq in _checkable_equations(s)]
    if not candidates:
        raise CorruptionError("no step holds a checkable equation (<arithmetic> = <number>)")
    rnd.shuffle(candidates)
    for idx, eq in candidates:
        step = steps[idx]
        a, b = eq["rhs_span"]
        options: list[tuple[str, Fraction]] = []  # (new lhs text or "", wrong value)
        op_swap = _operation_swap(eq["lhs"], rnd)
        if op_swap is not None and rnd.random() < 0.35:
            options.append(op_swap)
        options += [("", v) for v in _wrong_values(eq["value"], rnd)]
        if op_swap is not None and op_swap not in options:
            options.append(op_swap)
        for new_lhs, wrong in options:
            head = step[:a]
            if new_lhs:
                lhs_pos = step.rfind(_lhs_anchor(eq["lhs"]), 0, eq["eq_pos"])
                if lhs_pos < 0:
                    continue
                head = _replace_operator(step, lhs_pos, eq["eq_pos"], new_lhs)
                if head is None:
                    continue
                head = head + step[eq["eq_pos"]:a]
            new_step = head + _fmt(wrong)
            mapping = _pair(eq["value"], wrong)
            if keep_final_answer:
                new_steps = steps[:idx] + [new_step + step[b:]] + steps[idx + 1:]
                if _final_answer_text(new_steps) != _final_answer_text(steps):
                    continue
            else:
                tail, mapping = _substitute(step[b:], mapping)
                new_steps = steps[:idx] + [new_step + tail]
                for later in steps[idx + 1:]:
                    text, mapping = _substitute(later, mapping)
                    new_steps.append(text)
                old_final, new_final = _final_answer_text(steps), _final_answer_text(new_steps)
                if old_final is None or new_final is None or new_final == old_final \
                        or _same_number(new_final, answer):
                    continue
            # a miscalculation must leave the equation false (an operation swap is consistent
            # arithmetic applied to the wrong operation, which contradicts the problem instead)
            if not new_lhs and any(e["rhs_span"][0] == a for e in _checkable_equations(new_steps[idx])):
                continue
            return new_steps, idx
    raise CorruptionError("no placement of an error changes the final answer" if not keep_final_answer
                          else "no placement of an error keeps the final answer")


def _same_number(a: str, b: str) -> bool:
    try:
        return _to_fraction(a) == _to_fraction(b)
    except (ValueError, ZeroDivisionError):
        return a.strip() == b.strip()


def _final_answer_text(steps: Sequence[str]) -> str | None:
    """The final answer a solution states: last \\boxed{...}, else text after '####', else None."""
    from prm_lessons.grading import last_boxed_content  # local import: grading imports math-verify

    text = "\n\n".join(steps)
    boxed = last_boxed_content(text)
    if boxed is not None:
        return boxed.strip()
    if "####" in text:
        return text.rsplit("####", 1)[1].strip()
    return None


_SWAP = {"+": "-", "-": "+", "*": "/", "/": "*"}


def _operation_swap(lhs: str, rnd: random.Random) -> tuple[str, Fraction] | None:
    """Apply the wrong operation: the single binary operator of ``lhs`` swapped (+↔-, *↔/)."""
    node = _parse_arith(lhs)
    if not isinstance(node, ast.BinOp) or _literal_value(node.left) is None or _literal_value(node.right) is None:
        return None
    sym = _BINOPS[type(node.op)][0]
    new = f"{_render(node.left, 2)} {_SWAP[sym]} {_render(node.right, 2, True)}"
    try:
        val = eval_arith(new)
    except (ValueError, ZeroDivisionError):
        return None
    if val == _eval_node(node) or val.denominator not in (1, 2, 4, 5, 10):
        return None
    return new, val


def _lhs_anchor(lhs: str) -> str:
    return lhs.split()[0]


def _replace_operator(step: str, start: int, end: int, new_lhs: str) -> str | None:
    """step[:end] with the one binary operator between ``start`` and ``end`` replaced by new_lhs's."""
    new_sym = next(c for c in new_lhs.split()[1:] if c in "+-*/")
    region = step[start:end]
    ops = [m for m in re.finditer(r"(?<=\s)[-+*/×÷x](?=\s)", region)]
    if len(ops) != 1:
        return None
    m = ops[0]
    shown = {"*": "×" if m.group(0) == "×" else ("x" if m.group(0) == "x" else "*"),
             "/": "÷" if m.group(0) == "÷" else "/"}.get(new_sym, new_sym)
    return step[:start] + region[:m.start()] + shown + region[m.end():]


# --------------------------------------------------------------------------------------------------
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
    from prm_lessons.grading import last_boxed_content

    ans = last_boxed_content(str(solution))
    if ans is None or not ans.strip():
        raise ValueError("no \\boxed{...} answer in the solution")
    return ans.strip()


def split_solution(text: str) -> list[str]:
    """A worked solution split into steps on blank lines (the paper's step separator)."""
    return [p.strip() for p in re.split(r"\n\s*\n", str(text)) if p.strip()]


def _choice_question(question: str, choices: Sequence[str]) -> str:
    # the Qwen2.5-Math harness's MMLU-STEM format
    opts = " ".join(f"({'ABCDEFGHIJ'[i]}) {str(c).strip()}" for i, c in enumerate(choices))
    return f"{question.strip()}\nAnswer Choices: {opts}"


def _reasoning_gym_rows(spec: dict) -> list[dict]:
    import reasoning_gym

    generator = spec.get("generator")
    if not generator:
        raise ValueError("dataset spec with source reasoning_gym needs `generator`")
    if not spec.get("size"):
        raise ValueError(f"reasoning_gym dataset '{generator}' needs `size`")
    ds = reasoning_gym.create_dataset(generator, size=int(spec["size"]), seed=int(spec.get("seed", 0)),
                                      **(spec.get("params") or {}))
    rows = []
    for i, item in enumerate(ds):
        meta = item.get("metadata") or {}
        rows.append({"source_id": f"{generator}:{spec.get('seed', 0)}:{i}", "question": item.get("question"),
                     "answer": item.get("answer"), "gold_steps": _reasoning_gym_steps(generator, item, meta)})
    return rows


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
            # reasoning-gym floors inexact divisions, so a few gold answers are not the exact value;
            # such a problem keeps its question and answer but gets no gold steps
            log.info("%s item %s: no gold steps (%s)", generator, meta.get("source_index"), exc)
    return None


def _hub_records(spec: dict) -> list[dict]:
    import datasets

    if not spec.get("id"):
        raise ValueError("dataset spec with source hub needs `id`")
    kwargs = {"revision": spec["revision"]} if spec.get("revision") else {}
    ds = datasets.load_dataset(spec["id"], spec.get("config"), split=spec.get("split", "test"), **kwargs)
    return [dict(r) for r in ds]


# --------------------------------------------------------------------------------------------------
# pinned source files: downloaded once (rule benchmark_file / processbench_file), checksummed
# --------------------------------------------------------------------------------------------------

DOWNLOAD_DIR = "resources/data"


def _url_suffix(url: str) -> str:
    from urllib.parse import urlparse

    name = Path(urlparse(str(url)).path).name
    for suffix in (".jsonl.gz", ".jsonl", ".json", ".parquet"):
        if name.endswith(suffix):
            return suffix
    raise ValueError(f"{url}: cannot tell the file type from its name (.jsonl, .jsonl.gz, .json or .parquet)")


def downloaded_path(name: str, spec: dict) -> str:
    """Where rule `benchmark_file` keeps the copy of a `source: url` dataset entry."""
    if not spec.get("url"):
        raise ValueError(f"dataset '{name}': source url needs `url`")
    return f"{DOWNLOAD_DIR}/benchmarks/{name}{_url_suffix(spec['url'])}"


def processbench_paths(spec: dict) -> dict[str, str]:
    """subset -> where rule `processbench_file` keeps its copy (source url; `url` holds `{subset}`)."""
    url = spec.get("url") or ""
    if "{subset}" not in url:
        raise ValueError("processbench source url needs `url` with a {subset} placeholder")
    subsets = list(spec.get("subsets") or PROCESSBENCH_SUBSETS)
    return {s: f"{DOWNLOAD_DIR}/processbench/{s}{_url_suffix(url.format(subset=s))}" for s in subsets}


def pinned_file_spec(spec: dict) -> dict:
    """What a download depends on (rule params), so editing `limit` or `fields` does not fetch again."""
    return {k: spec.get(k) for k in ("url", "sha256", "git_blob_sha1")}


def file_digests(path: str | Path) -> dict[str, str]:
    """sha256 of the file's bytes and its git blob id (sha1 of ``blob <size>\\0`` + bytes)."""
    import hashlib

    data = Path(path).read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "git_blob_sha1": git_blob_sha1(data)}


def git_blob_sha1(data: bytes) -> str:
    """git's object id of these bytes as a blob (what `git ls-tree` lists for a file)."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def verify_checksums(path: str | Path, expected: dict, what: str) -> None:
    """Raise ValueError naming ``what`` when the file's sha256 / git blob id differs from ``expected``
    (keys ``sha256`` and ``git_blob_sha1``; absent or null keys are not checked)."""
    wanted = {k: str(expected[k]).lower() for k in ("sha256", "git_blob_sha1") if expected.get(k)}
    if not wanted:
        return
    got = file_digests(path)
    for key, value in wanted.items():
        if got[key] != value:
            raise ValueError(f"{what}: {key} of {path} is {got[key]}, expected {value} "
                             "(a different file than the pinned one; fix the `url` or the checksum)")


def fetch_file(url: str, dest: str | Path, checksums: dict, what: str) -> None:
    """Copy ``url`` (http(s)://, file:// or a plain path, so an air-gapped site can point at its own
    copy) to ``dest``, verify its checksums, then move it into place: a failed or wrong download
    never leaves a file that a later run would trust."""
    import shutil
    import urllib.request
    from urllib.parse import unquote, urlparse

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    parsed = urlparse(str(url))
    try:
        if parsed.scheme in ("http", "https"):
            with urllib.request.urlopen(url, timeout=120) as resp, open(tmp, "wb") as fh:
                shutil.copyfileobj(resp, fh)
        else:
            src = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(str(url))
            if not src.exists():
                raise FileNotFoundError(f"{what}: {src} not found (from url {url})")
            shutil.copyfile(src, tmp)
        verify_checksums(tmp, checksums, what)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)


def check_rows(n: int, expected, what: str) -> None:
    if expected is not None and int(n) != int(expected):
        raise ValueError(f"{what}: {n} rows, expected {int(expected)} (`rows` in the config); "
                         "the file is not the pinned set")


def rule_benchmark_file(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `benchmark_file`: a `source: url` dataset entry → its verified local copy."""
    spec = params["spec"]
    fetch_file(spec["url"], outputs["file"], spec, f"dataset '{wildcards['name']}'")
    log.info("dataset %s: %s -> %s (%s)", wildcards["name"], spec["url"], outputs["file"],
             file_digests(outputs["file"])["sha256"])


def rule_processbench_file(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench_file`: one ProcessBench subset (processbench source url) → its verified copy."""
    subset, spec = wildcards["subset"], params["spec"]
    checks = {k: (spec.get(k) or {}).get(subset) for k in ("sha256", "git_blob_sha1")}
    fetch_file(spec["url"].format(subset=subset), outputs["file"], checks, f"ProcessBench subset '{subset}'")


def _read_records(path: str | Path) -> list[dict]:
    """Rows of a local .jsonl / .json (list of objects, or {"data": [...]}) / .parquet file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    if suffix in (".jsonl", ".jsonl.gz"):
        import gzip

        opener = gzip.open if suffix.endswith(".gz") else open
        rows = []
        with opener(path, "rt") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{path}: line {n} is not valid JSON ({exc.msg})") from None
        return rows
    if suffix == ".json":
        with open(path) as fh:
            data = json.load(fh)
        if isinstance(data, dict):
            data = data.get("data", data.get("rows"))
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of objects (or {{'data': [...]}})")
        return data
    if suffix == ".parquet":
        return pd.read_parquet(path).to_dict("records")
    raise ValueError(f"{path}: unsupported file type '{suffix}' (use .jsonl, .json or .parquet)")


def _missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _as_list(value):
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, str) and value.strip().startswith("[") and value.strip().endswith("]"):
        try:  # lists stored as strings (some jsonl exports)
            parsed = json.loads(value)
            if isinstance(parsed, list):
                return parsed
        except json.JSONDecodeError:
            pass
    return value


def _map_record(rec: dict, spec: dict, row_id: str) -> dict:
    """One source record → {question, answer, gold_steps, source_id}, per the spec's field mapping."""
    fields = {"question": "question", "answer": "answer", "gold_steps": None, "id": None, "choices": None,
              **(spec.get("fields") or {})}
    fmt = spec.get("answer_format", "plain")
    if fmt not in ANSWER_FORMATS:
        raise ValueError(f"unknown answer_format '{fmt}' (one of {', '.join(ANSWER_FORMATS)})")
    qf, af = fields["question"], fields["answer"]
    if qf not in rec:
        raise ValueError(f"row {row_id}: no field '{qf}' (fields.question); fields present: {sorted(rec)}")
    if _missing(rec[qf]):
        raise ValueError(f"row {row_id}: empty question (field '{qf}')")
    question = str(rec[qf])
    if af not in rec or _missing(rec[af]) if not isinstance(rec.get(af), (list, tuple)) else not rec[af]:
        if af in rec and spec.get("missing_answer") == "keep":
            # kept with an empty gold (never graded correct), as the harness keeps such rows in its denominator
            source_id = rec.get(fields["id"]) if fields.get("id") else None
            return {"question": question, "answer": "", "gold_steps": None,
                    "source_id": None if source_id is None else str(source_id)}
        raise ValueError(f"row {row_id}: missing answer (field '{af}')")
    raw_answer = _as_list(rec[af])
    try:
        if fmt == "gsm8k":
            answer = gsm8k_answer(raw_answer)
        elif fmt == "boxed":
            answer = boxed_answer(raw_answer)
        elif fmt == "choice":
            if not fields.get("choices") or fields["choices"] not in rec:
                raise ValueError("answer_format choice needs fields.choices naming the options field")
            choices = _as_list(rec[fields["choices"]])
            question = _choice_question(question, choices)
            letter = str(raw_answer).strip()
            answer = "ABCDEFGHIJ"[int(letter)] if letter.isdigit() else letter.upper()
        else:
            from prm_lessons.grading import gold_answer_text

            answer = gold_answer_text(raw_answer)  # lists (OlympiadBench) → first; "$…$" unwrapped
    except (ValueError, IndexError) as exc:
        raise ValueError(f"row {row_id}: bad answer in field '{af}': {exc}") from None
    if _missing(answer):
        raise ValueError(f"row {row_id}: missing answer (field '{af}')")
    gold_steps = None
    if fields.get("gold_steps"):
        gf = fields["gold_steps"]
        if gf not in rec:
            raise ValueError(f"row {row_id}: no field '{gf}' (fields.gold_steps)")
        raw = _as_list(rec[gf])
        if isinstance(raw, list):
            gold_steps = [str(s).strip() for s in raw if str(s).strip()]
        elif not _missing(raw):
            gold_steps = gsm8k_steps(raw) if fmt == "gsm8k" and "####" in str(raw) else split_solution(raw)
        if gold_steps is not None and not gold_steps:
            raise ValueError(f"row {row_id}: empty gold steps (field '{gf}')")
    elif fmt == "gsm8k":
        gold_steps = gsm8k_steps(raw_answer)
    source_id = rec.get(fields["id"]) if fields.get("id") else None
    return {"question": question, "answer": str(answer).strip(), "gold_steps": gold_steps,
            "source_id": None if source_id is None else str(source_id)}


def load_problems(name: str, spec: dict, path: str | Path | None = None) -> pd.DataFrame:
    """The problems table for one dataset entry of the config (``problems:`` or ``benchmarks:``).

    Columns: ``problem_id`` (``{name}-{i:05d}``, stable for a given spec), ``dataset`` (= name),
    ``question``, ``answer`` (str), ``gold_steps`` (list of str, or None), and ``source_id`` (the
    source's own id where known). A bad row (missing answer, empty question) raises ValueError
    naming the row. ``source: url`` reads the copy made by rule `benchmark_file` (``path``, default
    :func:`downloaded_path`). Checksums (``sha256``/``git_blob_sha1``, url and local) and ``rows``
    (any source, counted before ``limit``) stop the load with a message naming the set.
    """
    source = spec.get("source")
    n_source = None  # rows of the whole set, before `limit` (recorded in the table's metadata)
    if source == "reasoning_gym":
        records = _reasoning_gym_rows(spec)
        n_source = len(records)
        mapped = []
        for i, rec in enumerate(records):
            row_id = f"{name}-{i:05d} ({rec['source_id']})"
            if _missing(rec["question"]):
                raise ValueError(f"row {row_id}: empty question")
            if _missing(rec["answer"]):
                raise ValueError(f"row {row_id}: missing answer")
            mapped.append({**rec, "question": str(rec["question"]), "answer": str(rec["answer"]).strip()})
    elif source in ("hub", "local", "url"):
        what = f"dataset '{name}'"
        if source == "hub":
            records = _hub_records(spec)
        else:
            if source == "local" and not spec.get("path"):
                raise ValueError("dataset spec with source local needs `path`")
            file = spec["path"] if source == "local" else (path or downloaded_path(name, spec))
            verify_checksums(file, spec, what)
            records = _read_records(file)
        check_rows(len(records), spec.get("rows"), what)
        n_source = len(records)
        if spec.get("limit"):
            records = records[: int(spec["limit"])]
        id_field = (spec.get("fields") or {}).get("id")
        mapped = [_map_record(rec, spec, f"{name}-{i:05d}" + (f" (id {rec.get(id_field)})" if id_field else ""))
                  for i, rec in enumerate(records)]
    else:
        raise ValueError(f"dataset '{name}': unknown source {source!r} (reasoning_gym, hub, local or url)")
    if not mapped:
        raise ValueError(f"dataset '{name}': no problems")
    df = pd.DataFrame(mapped)
    df.insert(0, "problem_id", [f"{name}-{i:05d}" for i in range(len(df))])
    df.insert(1, "dataset", name)
    df = df[PROBLEM_COLUMNS + ["source_id"]]
    df.attrs["rows_loaded"] = n_source
    return df


def dataset_spec(config: dict, name: str) -> dict:
    """The spec of a dataset named under ``problems:`` or ``benchmarks:`` (names must not clash)."""
    found = [sec for sec in ("problems", "benchmarks") if name in (config.get(sec) or {})]
    if not found:
        raise KeyError(f"dataset '{name}' is not defined under `problems` or `benchmarks`")
    if len(found) > 1:
        raise ValueError(f"dataset name '{name}' is defined under both `problems` and `benchmarks`")
    return config[found[0]][name]


def local_source_inputs(spec: dict | None, name: str | None = None) -> list[str]:
    """Rule inputs for a spec: its local file or directory (so replacing it reruns the rule), the
    downloaded copy for `source: url` (made by rule benchmark_file / processbench_file), else none."""
    spec = spec or {}
    if spec.get("source") == "local" and spec.get("path"):
        return [spec["path"]]
    if spec.get("source") == "url":
        if name is None:  # the processbench section
            return list(processbench_paths(spec).values())
        return [downloaded_path(name, spec)]
    return []


def rule_problems(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `problems`: results/problems/{dataset}.parquet from the dataset's config entry."""
    from prm_lessons.tables import write_table

    name = wildcards["dataset"]
    spec = params["spec"]
    path = None
    if spec.get("source") == "url":  # the copy rule benchmark_file made
        path = (as_paths(inputs.get("source")) or [None])[0]
    df = load_problems(name, spec, path=path)
    n_steps = df["gold_steps"].map(lambda s: len(s) if s is not None else 0)
    log.info("dataset %s: %d problems, %d with gold steps (mean %.1f steps)", name, len(df),
             int((n_steps > 0).sum()), float(n_steps[n_steps > 0].mean()) if (n_steps > 0).any() else 0.0)
    write_table(df, outputs["problems"], "problems",
                meta={"dataset": name, "spec": params["spec"], "rows_loaded": df.attrs.get("rows_loaded")})


# --------------------------------------------------------------------------------------------------
# ProcessBench
# --------------------------------------------------------------------------------------------------

def _validate_cases(df: pd.DataFrame) -> pd.DataFrame:
    for row in df.itertuples(index=False):
        steps = row.steps
        if _missing(row.problem):
            raise ValueError(f"ProcessBench case {row.id}: empty problem")
        if steps is None or len(steps) == 0 or any(_missing(s) for s in steps):
            raise ValueError(f"ProcessBench case {row.id}: empty steps")
        if not (-1 <= int(row.label) < len(steps)):
            raise ValueError(f"ProcessBench case {row.id}: label {row.label} outside -1..{len(steps) - 1}")
    if df["id"].duplicated().any():
        raise ValueError(f"ProcessBench: duplicate case id {df.loc[df['id'].duplicated(), 'id'].iloc[0]}")
    return df


def _cases_from_records(records: Iterable[dict], subset: str) -> list[dict]:
    out = []
    for n, rec in enumerate(records):
        cid = rec.get("id", f"{subset}-{n}")
        missing = [k for k in ("problem", "steps", "final_answer_correct", "label") if k not in rec]
        if missing:
            raise ValueError(f"ProcessBench case {cid}: missing field(s) {missing}")
        steps = _as_list(rec["steps"])
        if not isinstance(steps, list):
            raise ValueError(f"ProcessBench case {cid}: steps must be a list")
        out.append({"id": str(cid), "subset": subset, "generator": str(rec.get("generator") or ""),
                    "problem": rec["problem"], "steps": [str(s) for s in steps],
                    "final_answer_correct": bool(rec["final_answer_correct"]), "label": int(rec["label"])})
    return out


def load_processbench(spec: dict, files: dict[str, str | Path] | None = None) -> pd.DataFrame:
    """ProcessBench cases: from the Hub (``Qwen/ProcessBench``, one split per subset), a directory
    of the official ``{subset}.json`` files, or pinned files (``source: url``, copies made by rule
    `processbench_file`; ``files`` maps subset -> copy, default :func:`processbench_paths`).
    Columns: id, subset, generator, problem, steps (list), final_answer_correct (bool), label (int;
    −1 = no erroneous step, else the 0-based first error).

    spec: ``source`` (hub | local | url), ``id``/``revision`` (hub), ``path`` (local directory),
    ``url`` (with ``{subset}``), ``sha256``/``git_blob_sha1``/``rows`` (subset -> value; checked
    before ``limit``, an error names the subset), ``subsets`` (default all four), ``limit`` (first N
    cases per subset, or null).
    """
    source = spec.get("source", "hub")
    subsets = list(spec.get("subsets") or PROCESSBENCH_SUBSETS)
    limit = spec.get("limit")
    rows: list[dict] = []
    for subset in subsets:
        what = f"ProcessBench subset '{subset}'"
        checks = {k: (spec.get(k) or {}).get(subset) for k in ("sha256", "git_blob_sha1")}
        if source == "hub":
            import datasets

            kwargs = {"revision": spec["revision"]} if spec.get("revision") else {}
            records = [dict(r) for r in datasets.load_dataset(spec.get("id", "Qwen/ProcessBench"), split=subset,
                                                              **kwargs)]
        elif source in ("local", "url"):
            if source == "url":
                file = Path((files or processbench_paths(spec))[subset])
            else:
                if not spec.get("path"):
                    raise ValueError("processbench source local needs `path` (a directory of {subset}.json files)")
                path = Path(spec["path"])
                found = [p for p in (path / f"{subset}.json", path / f"{subset}.jsonl", path / f"{subset}.parquet")
                         if p.exists()]
                if not found:
                    raise FileNotFoundError(f"{path}: no {subset}.json (or .jsonl/.parquet) for ProcessBench subset '{subset}'")
                file = found[0]
            verify_checksums(file, checks, what)
            records = _read_records(file)
        else:
            raise ValueError(f"processbench: unknown source {source!r} (hub, local, url or constructed)")
        check_rows(len(records), (spec.get("rows") or {}).get(subset), what)
        if limit:
            records = records[: int(limit)]
        rows += _cases_from_records(records, subset)
    df = pd.DataFrame(rows, columns=PROCESSBENCH_COLUMNS)
    return _validate_cases(df)


def build_constructed_processbench(problems: pd.DataFrame, n_per_subset: int = 12, seed: int = 0,
                                   error_fraction: float = 0.5, keep_answer_fraction: float = 0.3,
                                   subset_column: str = "dataset") -> pd.DataFrame:
    """A ProcessBench-format set built by construction from problems with gold steps.

    Per subset (one per value of ``subset_column``, e.g. one per benchmark generator), up to
    ``n_per_subset`` cases: a share ``error_fraction`` gets one injected error at a known step
    (:func:`corrupt_solution`; of those, a share ``keep_answer_fraction`` keeps the correct final
    answer — the "correct answer, flawed process" case), the rest are the untouched gold solutions
    (label −1, final answer correct). Problems whose solution admits no error are used untouched.
    Deterministic for a given seed.
    """
    if problems.empty:
        raise ValueError("constructed ProcessBench: no problems")
    rnd = random.Random(seed)
    rows = []
    for subset, group in problems.groupby(subset_column, sort=True):
        group = group[group["gold_steps"].map(lambda s: s is not None and len(s) > 0)]
        if group.empty:
            raise ValueError(f"constructed ProcessBench: subset '{subset}' has no problems with gold steps")
        picked = group.iloc[:n_per_subset]
        n = len(picked)
        n_err = int(round(n * error_fraction))
        n_keep = int(round(n_err * keep_answer_fraction))
        kinds = ["keep"] * n_keep + ["error"] * (n_err - n_keep) + ["clean"] * (n - n_err)
        rnd.shuffle(kinds)
        for k, (row, kind) in enumerate(zip(picked.itertuples(index=False), kinds)):
            gold = list(row.gold_steps)
            steps, label, fac = gold, -1, True
            if kind != "clean":
                try:
                    steps, label = corrupt_solution(gold, str(row.answer), rnd, keep_final_answer=(kind == "keep"))
                    fac = kind == "keep"
                except CorruptionError as exc:
                    log.info("constructed ProcessBench: %s left untouched (%s)", row.problem_id, exc)
            rows.append({"id": f"{subset}-{k}", "subset": str(subset), "generator": CONSTRUCTED_GENERATOR,
                         "problem": row.question, "steps": steps, "final_answer_correct": fac,
                         "label": int(label), "problem_id": row.problem_id})
    df = pd.DataFrame(rows)
    return _validate_cases(df[PROCESSBENCH_COLUMNS + ["problem_id"]])


def rule_processbench(*, inputs: dict, outputs: dict, params: dict, wildcards: dict, threads: int) -> None:
    """Rule `processbench`: results/processbench/cases.parquet from the config's `processbench:` section."""
    from prm_lessons.tables import write_table

    spec = dict(params["spec"])
    source = spec.get("source", "constructed")
    if source == "constructed":
        con = spec.get("constructed") or {}
        # held out: drop any problem whose question also appears among the training problems
        seen = set()
        for name, train_spec in (params.get("exclude") or {}).items():
            seen |= set(load_problems(name, train_spec)["question"])
        frames = []
        for subset, sub in (con.get("subsets") or {}).items():
            problems = load_problems(f"processbench-{subset}", sub)
            problems["subset"] = subset
            overlap = problems["question"].isin(seen)
            if overlap.any():
                log.info("processbench subset %s: %d problem(s) also among the training problems, dropped",
                         subset, int(overlap.sum()))
            frames.append(problems[~overlap])
        if not frames:
            raise ValueError("processbench.constructed.subsets: no subsets defined")
        cases = build_constructed_processbench(
            pd.concat(frames, ignore_index=True), subset_column="subset",
            n_per_subset=int(con.get("n_per_subset", 12)),
            seed=int(con.get("seed", 0)), error_fraction=float(con.get("error_fraction", 0.5)),
            keep_answer_fraction=float(con.get("keep_answer_fraction", 0.3)))
    else:
        files = None
        if source == "url":  # the copies rule processbench_file made, in processbench_paths order
            got = as_paths(inputs.get("source"))
            files = dict(zip(processbench_paths(spec), got)) if got else None
        cases = load_processbench(spec, files=files)
    err = cases["label"] != -1
    log.info("processbench (%s): %d cases; per subset: %s; erroneous %d, correct %d, "
             "correct answer with erroneous step %d", source, len(cases),
             cases["subset"].value_counts().sort_index().to_dict(), int(err.sum()), int((~err).sum()),
             int((err & cases["final_answer_correct"]).sum()))
    write_table(cases, outputs["cases"], "processbench", meta={"spec": spec})
