"""Few-shot demonstrations in the policy's user turn, as the Qwen2.5-Math harness builds them for its
multiple-choice sets (evaluation/utils.py ``construct_prompt`` with the ``qwen25-math-cot`` prompt type):
the Chinese ones (``--adapt_few_shot``) and MMLU STEM (``--num_shots 5``, evaluation/sh/eval.sh).

The harness (at the pinned commit) puts every demonstration into the single user turn: the demos joined
by a blank line, each as ``question + "\\n" + answer``, then a blank line and the (stripped) question; the
system turn stays the chain-of-thought prompt. The layout is the same for every set; only the list differs
(``examples["gaokao"]`` for the Chinese sets, ``examples["mmlu_stem"]`` for MMLU STEM, in
evaluation/examples.py). With ``--adapt_few_shot`` only items whose gold is one choice letter A–E get the
demos (``when: choice``), every other item is asked zero-shot; with ``--num_shots`` alone every item gets
them (``when: always``). The demonstrations are data of the harness: they are not shipped with the
project but read from a pinned copy of that file (rule `fewshot_file`, checksummed), or from a JSON list
of ``[question, answer]`` pairs.

A benchmark's ``prompt`` entry (config) drives it; the problems rule writes the rendered user turn into
the problems table's optional ``prompt`` column, which sampling uses instead of ``question`` (the PRMs,
judges and critics keep seeing the question alone).
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pandas as pd

from ..tables import RowError, loads_strict

CHOICE_LETTERS = ("A", "B", "C", "D", "E")
DEMO_SEPARATOR = "\n\n"  # the qwen25-math-cot template's splitter: between demos and before the question
FEWSHOT_DIR = "resources/data/fewshot"
WHEN = ("choice", "always")


def fewshot_path(name: str, fewshot: dict) -> str:
    """Where rule `fewshot_file` keeps the copy of dataset `name`'s demonstrations file."""
    url = str(fewshot.get("url") or "")
    for suffix in (".py", ".json"):
        if url.endswith(suffix):
            return f"{FEWSHOT_DIR}/{name}{suffix}"
    raise ValueError(f"dataset '{name}': prompt.fewshot.url {url!r} must name a .py (the harness's "
                     "examples.py) or a .json file")


def read_demos(path: str | Path, key: str, k: int) -> list[tuple[str, str]]:
    """The first ``k`` (question, answer) demonstrations under ``key``: from a Python file assigning
    ``examples["<key>"] = [(q, a), ...]`` (the harness's examples.py, read as data with
    :func:`ast.literal_eval`, never executed) or a JSON file (an object of such lists, or one list)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: byte {exc.start} is not UTF-8") from None
    if path.suffix == ".json":
        try:  # the rows' strict reader: a repeated key or deep nesting is an error naming the file
            data = loads_strict(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg})") from None
        except RowError as exc:
            raise ValueError(f"{path}: {exc}") from None
        demos = data.get(key) if isinstance(data, dict) else data
    else:
        demos = None
        try:
            tree = ast.parse(text, filename=str(path))
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # ValueError: a NUL byte
            raise ValueError(f"{path}: line {getattr(exc, 'lineno', None) or '?'}: not Python "
                             f"({getattr(exc, 'msg', None) or type(exc).__name__})") from None
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Subscript)
                    and isinstance(node.targets[0].slice, ast.Constant) and node.targets[0].slice.value == key):
                try:
                    demos = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                    raise ValueError(f"{path}: line {node.lineno}: examples[{key!r}] is not a literal (a list "
                                     "of (question, answer) string pairs; the file is read as data, never "
                                     "run)") from None
    if not isinstance(demos, (list, tuple)) or not demos:
        raise ValueError(f"{path}: no demonstrations under '{key}'")
    bad = [i for i, d in enumerate(demos) if not (isinstance(d, (list, tuple)) and len(d) == 2
                                                   and all(isinstance(x, str) for x in d))]
    if bad:
        raise ValueError(f"{path}: demonstration {bad[0]} under '{key}' is not a (question, answer) pair of strings")
    if len(demos) < k:
        raise ValueError(f"{path}: {len(demos)} demonstrations under '{key}', prompt.fewshot.k asks {k}")
    return [(str(q), str(a)) for q, a in demos[:k]]


def is_single_choice(gold) -> bool:
    return isinstance(gold, str) and gold in CHOICE_LETTERS


def user_message(question: str, gold, demos: list[tuple[str, str]], when: str = "choice") -> str:
    """The user turn of one item: demos + question, or the question alone (``when: choice`` and a gold
    that is not one letter A–E, as --adapt_few_shot; no demos)."""
    if when not in WHEN:
        raise ValueError(f"prompt.fewshot.when {when!r}: one of {', '.join(WHEN)}")
    question = str(question).strip()  # the harness strips every question (parse_question)
    if not demos or (when == "choice" and not is_single_choice(gold)):
        return question.strip(" ")
    shots = DEMO_SEPARATOR.join(f"{q}\n{a}" for q, a in demos)
    return (shots + DEMO_SEPARATOR + question).strip(" ")


def prompt_column(problems: pd.DataFrame, prompt: dict, demos_file: str | Path | None) -> pd.Series:
    """The problems table's ``prompt`` column for a dataset with a ``prompt`` entry."""
    fs = prompt.get("fewshot") or {}
    demos = read_demos(demos_file, str(fs.get("key", "gaokao")), int(fs.get("k", 5))) if fs else []
    when = str(fs.get("when", "choice"))
    return pd.Series([user_message(q, a, demos, when) for q, a in zip(problems["question"], problems["answer"])],
                     index=problems.index, dtype=object)
