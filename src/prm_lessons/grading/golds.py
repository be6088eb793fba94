"""Answer text that data loading needs as much as grading: the last \\boxed{} of a text (gold solutions and
responses alike) and a gold answer as one string. Its own module so that the problems tables (rule
`problems`, upstream of every sampling and scoring job) depend on these two functions only, not on the
harness's prediction extraction (prm_lessons.grading.extract): an extraction fix regrades, it does not
re-sample.
"""
from __future__ import annotations


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


def gold_answer_text(gold) -> str:
    """Gold answers may be LaTeX (``$\\frac{1}{2}$``), lists (OlympiadBench) or numbers: one string."""
    if isinstance(gold, (list, tuple)):
        gold = gold[0] if len(gold) == 1 else ", ".join(map(str, gold))
    gold = str(gold).strip()
    if "$" in gold:  # the harness's strip_string drops every \\$ and $ (college_math has inner $ too)
        gold = gold.replace("\\$", "").replace("$", "").strip()
    return gold
