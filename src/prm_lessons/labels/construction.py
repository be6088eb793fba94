"""Labels by construction: exact arithmetic and the injection of one real error into a worked solution.

The embedded profile has no human annotators. :func:`corrupt_solution` injects one real arithmetic or
operation error into a gold step-by-step solution at a known step, either propagating it to a wrong
final answer or keeping the original final answer ("correct answer, flawed process"). The labels
stage builds its human labels with it (labels.human) and the data stage a ProcessBench-format set
(data.build_constructed_processbench). :func:`arithmetic_gold_steps` writes the worked solution of
an arithmetic expression (one checkable equation per step), which is what the injection needs.
"""
from __future__ import annotations

import ast
import random
import re
from fractions import Fraction
from typing import Sequence

from ..grading.golds import last_boxed_content
from .arith import BINOPS, NUM_RE, equations, eval_arith, eval_node, fmt_number, literal_value, parse_arith, to_fraction

# --------------------------------------------------------------------------------------------------
# numbers and arithmetic expressions
# --------------------------------------------------------------------------------------------------

def _render(node: ast.AST, parent_prec: int = 0, right_side: bool = False) -> str:
    lit = literal_value(node)
    if lit is not None:
        return fmt_number(lit)
    if isinstance(node, ast.UnaryOp):
        inner = _render(node.operand, 3)
        sign = "-" if isinstance(node.op, ast.USub) else "+"
        return f"{sign}({inner})" if not inner.startswith("(") else f"{sign}{inner}"
    if isinstance(node, ast.BinOp):
        sym, _, prec = BINOPS[type(node.op)]
        text = f"{_render(node.left, prec)} {sym} {_render(node.right, prec, right_side=True)}"
        needs = prec < parent_prec or (right_side and prec <= parent_prec)
        return f"({text})" if needs else text
    raise ValueError(f"cannot render {ast.dump(node)[:80]}")


def _next_ready(node: ast.AST) -> ast.BinOp | None:
    """The next operation in evaluation order (left to right, innermost first) whose operands are numbers."""
    if literal_value(node) is not None:
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
    tree = parse_arith(expression)
    value = eval_node(tree)
    if answer is not None:
        try:
            gold = to_fraction(str(answer).strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"answer {answer!r} is not a number (expression {expression!r})") from None
        if gold != value:
            raise ValueError(f"expression {expression!r} evaluates to {fmt_number(value)}, not the answer {answer!r}")
    steps: list[str] = []
    while literal_value(tree) is None:
        node = _next_ready(tree)
        lhs = _render(node)
        val = eval_node(node)
        tree = _Replace(node, val).visit(tree)
        done = literal_value(tree) is not None
        lead = "First," if not steps else ("Finally," if done else "Next,")
        if done and not steps:
            lead = "Compute:"
        shown = _render(tree)
        rest = "" if shown == fmt_number(val) else f", so the expression becomes {shown}"
        steps.append(f"{lead} {lhs} = {fmt_number(val)}{rest}.")
    final = answer if answer is not None else fmt_number(value)
    steps.append(f"Therefore, the final answer is $\\boxed{{{str(final).strip()}}}$.")
    return steps


# --------------------------------------------------------------------------------------------------
# error injection
# --------------------------------------------------------------------------------------------------

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


def _checkable_equations(step: str) -> list[dict]:
    """Equations ``<arithmetic> = <number>`` in a step whose left side evaluates to the right side."""
    return [e for e in equations(step) if e["holds"]]


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
            val = literal_value(node)
            if val is not None:
                return ast.Constant(mapping.get(val, val))
            return super().visit(node)

    return eval_node(_Map().visit(parse_arith(lhs)))


def _substitute(step: str, mapping: dict[Fraction, Fraction]) -> tuple[str, dict]:
    """Rewrite the number tokens of a step by ``mapping`` and recompute its checkable equations.

    An equation whose left side changes gets the recomputed right side, and that change joins the
    mapping (so it reaches the rest of the step and later steps). Returns (new text, new mapping).
    Hand-rolled because no library rewrites numbers in free-text solutions.
    """
    mapping = dict(mapping)
    eqs = {e["rhs_span"][0]: e for e in _checkable_equations(step)}
    out, pos = [], 0
    for m in NUM_RE.finditer(step):
        out.append(step[pos:m.start()])
        pos = m.end()
        val = to_fraction(m.group(0))
        eq = eqs.get(m.start())
        if eq is not None:
            try:
                new_val = _map_lhs(eq["lhs"], mapping)
            except (ValueError, ZeroDivisionError):
                new_val = eq["value"]
            if new_val != eq["value"]:
                mapping.update(_pair(eq["rhs_value"], new_val))
            out.append(fmt_number(new_val) if new_val != eq["value"] else m.group(0))
            continue
        out.append(fmt_number(mapping[val]) if val in mapping else m.group(0))
    out.append(step[pos:])
    return "".join(out), mapping


def corrupt_solution(gold_steps: Sequence[str], answer: str, rng, keep_final_answer: bool = False,
                     position: int | None = None) -> tuple[list[str], int]:
    """Inject one real error into a correct step-by-step solution; return (steps, error_index).

    The error is placed in a step with a checkable equation (``<arithmetic> = <number>``): either a
    miscalculated result (off by a little, swapped digits, a factor of ten) or the wrong operation
    applied (+ ↔ -, * ↔ /) with its result computed consistently. Either way the step at
    ``error_index`` (0-based, as in ProcessBench) is wrong and every earlier step is untouched.

    keep_final_answer=False: later steps carry the wrong value (numbers rewritten, equations
    recomputed), so the final answer changes; a placement whose error does not reach the final answer
    is not used. keep_final_answer=True: later steps stay as they were, so the solution still ends in
    the original final answer ("correct answer, flawed process").

    ``position``: place the error at that step only. The step that states the final answer
    (``\\boxed{...}`` without an equation, the last step of :func:`arithmetic_gold_steps`) is then a
    valid place too: the answer written down differs from the value the steps computed (a
    transcription error), which cannot keep the final answer. None: any equation step.

    ``rng`` is a ``random.Random``, a numpy Generator or an int seed. Raises :class:`CorruptionError`
    (a ValueError) when no step allows the requested kind of error.
    """
    rnd = _rng_random(rng)
    steps = [str(s) for s in gold_steps]
    if not steps:
        raise CorruptionError("no steps to corrupt")
    answer = str(answer).strip()
    candidates = [(i, eq) for i, s in enumerate(steps) for eq in _checkable_equations(s)]
    if position is not None:
        if not 0 <= position < len(steps):
            raise CorruptionError(f"position {position} is outside the solution's {len(steps)} steps")
        candidates = [(i, eq) for i, eq in candidates if i == position]
        if not candidates:
            return _corrupt_final_answer(steps, position, answer, rnd, keep_final_answer)
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
            new_step = head + fmt_number(wrong)
            mapping = _pair(eq["value"], wrong)
            if keep_final_answer:
                new_steps = steps[:idx] + [new_step + step[b:]] + steps[idx + 1:]
                if final_answer_text(new_steps) != final_answer_text(steps):
                    continue
            else:
                tail, mapping = _substitute(step[b:], mapping)
                new_steps = steps[:idx] + [new_step + tail]
                for later in steps[idx + 1:]:
                    text, mapping = _substitute(later, mapping)
                    new_steps.append(text)
                old_final, new_final = final_answer_text(steps), final_answer_text(new_steps)
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


def _corrupt_final_answer(steps: list[str], position: int, answer: str, rnd: random.Random,
                          keep_final_answer: bool) -> tuple[list[str], int]:
    """A wrong final answer written in the answer step at ``position`` (its \\boxed{} content)."""
    if keep_final_answer:
        raise CorruptionError(f"an error in the answer step {position} cannot keep the final answer")
    if position != len(steps) - 1:
        raise CorruptionError(f"step {position} holds no checkable equation and is not the answer step")
    shown = last_boxed_content(steps[position])
    if shown is None:
        raise CorruptionError(f"step {position} holds neither a checkable equation nor a \\boxed{{}} answer")
    try:
        value = to_fraction(shown.strip())
    except (ValueError, ZeroDivisionError):
        raise CorruptionError(f"the answer {shown!r} of step {position} is not a number") from None
    wrong = next((w for w in _wrong_values(value, rnd) if not _same_number(fmt_number(w), answer)), None)
    if wrong is None:  # pragma: no cover - _wrong_values always offers several
        raise CorruptionError("no wrong value for the final answer")
    step = steps[position]
    start = step.rfind("\\boxed{") + len("\\boxed{")
    new_step = step[:start] + step[start:].replace(shown, fmt_number(wrong), 1)
    return steps[:position] + [new_step], position


def _same_number(a: str, b: str) -> bool:
    try:
        return to_fraction(a) == to_fraction(b)
    except (ValueError, ZeroDivisionError):
        return a.strip() == b.strip()


def final_answer_text(steps: Sequence[str]) -> str | None:
    """The final answer a solution states: last \\boxed{...}, else text after '####', else None."""
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
    node = parse_arith(lhs)
    if not isinstance(node, ast.BinOp) or literal_value(node.left) is None or literal_value(node.right) is None:
        return None
    sym = BINOPS[type(node.op)][0]
    new = f"{_render(node.left, 2)} {_SWAP[sym]} {_render(node.right, 2, True)}"
    try:
        val = eval_arith(new)
    except (ValueError, ZeroDivisionError):
        return None
    if val == eval_node(node) or val.denominator not in (1, 2, 4, 5, 10):
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


def _apportion(sizes: dict, fraction: float, rnd: random.Random) -> dict:
    """Largest-remainder split of ``round(sum(sizes) * fraction)`` over the keys of ``sizes``: every key
    gets ``sizes[k] * fraction`` rounded down or up (less than one away), the total is exact, and the
    leftover units go to the largest remainders (ties broken by ``rnd``)."""
    fraction = float(fraction)
    quota = {k: n * fraction for k, n in sizes.items()}
    got = {k: min(sizes[k], int(q + 1e-9)) for k, q in quota.items()}
    left = int(round(sum(sizes.values()) * fraction)) - sum(got.values())
    if left > 0:
        keys = sorted(sizes)
        ties = {k: rnd.random() for k in keys}
        keys.sort(key=lambda k: (-round(quota[k] - got[k], 9), ties[k]))
        for k in [k for k in keys if got[k] < sizes[k]][:left]:
            got[k] += 1
    return got


def construction_plan(lengths: Sequence[int], error_fraction: float, keep_answer_fraction: float,
                      rnd: random.Random) -> list[tuple[str, int]]:
    """Balanced slots (kind, error position) for solutions of the given lengths, one per entry.

    Within each length L a share ``error_fraction`` of the slots are erroneous, their positions spread
    over 0..L-1 (counts differ by at most one; which positions get the one extra is drawn), the rest
    clean (kind "clean", position -1). Of the erroneous slots before the last step, a share
    ``keep_answer_fraction`` keep the final answer ("keep") at every (length, position); the others
    propagate the error ("error"). Shares are apportioned by largest remainder: every length (and every
    (length, position) for the keeps) is less than one slot away from its share, and the totals are
    ``round(len(lengths) * error_fraction)`` and ``round(early errors * keep_answer_fraction)``, so a
    small set still gets its keeps. Neither the length nor the step position tells whether or where a
    solution is wrong. Slots are shuffled within each length; deterministic for a given ``rnd``."""
    by_len: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_len.setdefault(int(n), []).append(i)
    errs = _apportion({n: len(idx) for n, idx in by_len.items()}, error_fraction, rnd)
    at: dict[tuple[int, int], int] = {}  # erroneous slots per (length, position)
    for n in sorted(by_len):
        extra = set(rnd.sample(range(n), errs[n] % n))
        for p in range(n):
            at[(n, p)] = errs[n] // n + (p in extra)
    keeps = _apportion({k: c for k, c in at.items() if k[1] < k[0] - 1}, keep_answer_fraction, rnd)
    plan: list[tuple[str, int]] = [("clean", -1)] * len(lengths)
    for n, idx in sorted(by_len.items()):
        slots = []
        for p in range(n):
            kept = keeps.get((n, p), 0)
            slots += [("keep", p)] * kept + [("error", p)] * (at[(n, p)] - kept)
        slots += [("clean", -1)] * (len(idx) - errs[n])
        rnd.shuffle(slots)
        for i, slot in zip(idx, slots):
            plan[i] = slot
    return plan
