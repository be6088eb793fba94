"""Exact arithmetic on the text of worked solutions: numbers, ``+ - * /`` expressions and the equations
``<expression> = <number>`` a step writes.

Shared by the error injection (prm_lessons.labels.construction), which rewrites the equations it finds, and the
process checker (prm_lessons.labels.process_check), which verifies them. Values are ``Fraction``: no float
rounding decides whether an equation holds (a decimal right side is compared at its written precision).
"""
from __future__ import annotations

import ast
import operator
import re
from fractions import Fraction

__all__ = ["BINOPS", "NUM_RE", "equations", "eval_arith", "eval_node", "fmt_number", "lhs_expression",
           "literal_value", "parse_arith", "to_fraction"]


def fmt_number(value: Fraction | int | float) -> str:
    """Render a number the way a solution would write it: integers plainly, else ≤4 decimals."""
    frac = Fraction(value).limit_denominator(10**9) if isinstance(value, float) else Fraction(value)
    if frac.denominator == 1:
        return str(frac.numerator)
    text = f"{float(frac):.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def to_fraction(text: str) -> Fraction:
    """A written number (``1,250``, ``-3.5``, ``3/4``) as a Fraction; ValueError / ZeroDivisionError else."""
    return Fraction(text.replace(",", ""))


# operator class -> (symbol, function, precedence)
BINOPS = {ast.Add: ("+", operator.add, 1), ast.Sub: ("-", operator.sub, 1),
          ast.Mult: ("*", operator.mul, 2), ast.Div: ("/", operator.truediv, 2)}


def literal_value(node: ast.AST) -> Fraction | None:
    """Value of a number literal, incl. unary minus/plus on a literal; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, Fraction)) \
            and not isinstance(node.value, bool):
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = literal_value(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None


def eval_node(node: ast.AST) -> Fraction:
    """Exact evaluation of + - * / over numbers (no names, calls or powers). Raises ValueError."""
    lit = literal_value(node)
    if lit is not None:
        return lit
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        val = eval_node(node.operand)
        return -val if isinstance(node.op, ast.USub) else val
    if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
        left, right = eval_node(node.left), eval_node(node.right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ValueError("division by zero")
        return BINOPS[type(node.op)][1](left, right)
    raise ValueError(f"not an arithmetic expression: {ast.dump(node)[:80]}")


def parse_arith(text: str) -> ast.AST:
    """The syntax tree of an arithmetic expression (``×``/``÷``/``−`` accepted). Raises ValueError."""
    text = text.replace("×", "*").replace("÷", "/").replace("−", "-")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot parse arithmetic expression {text!r}") from exc


def eval_arith(text: str) -> Fraction:
    """Exact value of an arithmetic expression such as ``-( 32 / 8 ) - 15`` (``×``/``÷`` accepted)."""
    return eval_node(parse_arith(text))


# A number token: optional attached minus sign (not a binary minus: that has a space or follows an
# operand), thousands separators allowed. Not part of a word or of a longer number.
NUM_RE = re.compile(r"(?<![\w.)\]}])(-?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w]|\.\d)")
_EQ_RE = re.compile(r"=")
# a fraction written as the right side (``= 3/4``): only the checker reads it (see `equations`)
_FRACTION_TAIL_RE = re.compile(r"\s*/\s*(\d+)(?![\w.])")


def lhs_expression(text: str) -> str | None:
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
            node = parse_arith(cand)
            eval_node(node)
        except (ValueError, ZeroDivisionError):
            continue
        if any(isinstance(n, ast.BinOp) for n in ast.walk(node)):
            return cand
        return None
    return None


def equations(step: str, strict: bool = False) -> list[dict]:
    """Every equation ``<arithmetic> = <number>`` a step writes, true or false, in text order.

    Each: ``lhs`` (the expression as parsed), ``value`` (its exact value), ``rhs_span`` (the written
    number's span), ``rhs_value``, ``eq_pos`` (the '=') and ``holds`` (the value equals the right side;
    a decimal right side at its written precision: ``2 / 3 = 0.67`` holds). ``strict``: the process
    checker's reading: a right side ``a/b`` is the fraction (``1/2 + 1/4 = 3/4``), and a left side starts
    after the previous equation's right side when a word follows it (``3 - 9 = -6 and -6 * -2 = 12``: two
    equations, not ``-6 - 6 * -2``; a chain ``2 + 3 = 5 + 4 = 9`` still reads ``5 + 4``). Off for the
    error injection, whose number rewriting must find the equations it always found.
    """
    found = []
    prev_end = 0
    for m in _EQ_RE.finditer(step):
        # the left side starts after the previous '=' or sentence delimiter
        segment = step[prev_end:m.start()]
        if strict and found and found[-1]["rhs_span"][0] >= prev_end:
            after = re.match(r"\s*[A-Za-z]+\b", step[found[-1]["rhs_span"][1]:m.start()])
            if after:
                segment = step[found[-1]["rhs_span"][1] + after.end():m.start()]
        cut = max(segment.rfind(c) for c in (":", ";", ",", "\n", ". ", "?"))
        if cut >= 0:
            segment = segment[cut + 1:]
        prev_end = m.end()
        rhs = NUM_RE.search(step, m.end())
        if rhs is None or step[m.end():rhs.start()].strip() not in ("", "$", "€", "£", "\\$"):
            continue
        lhs = lhs_expression(segment)
        if lhs is None:
            continue
        span, rhs_text = rhs.span(), rhs.group(0)
        frac = _FRACTION_TAIL_RE.match(step, rhs.end()) if strict and not rhs.group(3) else None
        if frac is not None:
            span, rhs_text = (rhs.start(), frac.end()), f"{rhs_text}/{frac.group(1)}"
        try:
            value = eval_arith(lhs)
            rhs_val = to_fraction(rhs_text)
        except (ValueError, ZeroDivisionError):
            continue
        decimals = len(rhs.group(3) or ".") - 1
        holds = value == rhs_val or bool(decimals and round(float(value), decimals) == float(rhs_val))
        found.append({"lhs": lhs, "value": value, "rhs_span": span, "rhs_value": rhs_val,
                      "eq_pos": m.start(), "holds": holds})
    return found
