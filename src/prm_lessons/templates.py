"""Prompt templates a config can replace (judge, critics, Best-of-N judges): the placeholders each kind
fills and the ones it needs, checked at config validation (before any job, so before any model loads)
and again where a job reads the file.

A template is a `str.format` text: `{name}` placeholders, `{{` and `}}` for literal braces. A template
without its response placeholder makes every prompt of a run identical (verdicts that never saw a
response); an unknown placeholder fails only at the first prompt, after the model loaded.
"""
from __future__ import annotations

import re
import string
from pathlib import Path

# where rule critique_template puts ProcessBench's official critique template (fetched at a pinned
# commit, so it is checked when a critic job reads it, not at config validation)
OFFICIAL_CRITIC_TEMPLATE = "resources/templates/critique_template.txt"

# kind -> (the placeholders its renderer fills, groups of which the template needs one each)
TEMPLATE_KINDS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]] = {
    # labels.judge.render_judge_prompt (judge labels, label audit, critics)
    "judge": (("problem", "tagged_problem", "tagged_response"), (("tagged_response",), ("problem", "tagged_problem"))),
    # verifiers.render_pointwise / render_pairwise (Best-of-N judges)
    "pointwise": (("problem", "tagged_response", "n_steps"), (("tagged_response",), ("problem",))),
    "pairwise": (("problem", "response_a", "response_b"), (("response_a",), ("response_b",), ("problem",))),
}


def template_problem(text: str, kind: str) -> str | None:
    """Why `text` cannot be a `kind` template, or None: not a format string, a positional or unknown
    placeholder, or a needed one missing."""
    allowed, needed = TEMPLATE_KINDS[kind]
    shown = ", ".join("{" + p + "}" for p in allowed)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        return f"not a template ({exc}): placeholders are {shown}; a literal brace is written twice ({{{{ or }}}})"
    names = [re.split(r"[.\[!:]", f, maxsplit=1)[0] for f in fields]
    unknown = sorted({n for n in names if n not in allowed})
    if unknown:
        return (f"unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)} (a {kind} template fills "
                f"{shown}; a literal brace is written twice)")
    missing = [g for g in needed if not any(p in names for p in g)]
    if missing:
        return (f"no {' or '.join('{' + p + '}' for p in missing[0])} placeholder: every prompt would lack it "
                f"(a {kind} template fills {shown})")
    return None


def read_template(path: str | Path, kind: str) -> str:
    """The template at `path`, checked (template_problem); ValueError naming the file otherwise."""
    text = Path(path).read_text(encoding="utf-8")
    problem = template_problem(text, kind)
    if problem:
        raise ValueError(f"{path}: {problem}")
    return text
