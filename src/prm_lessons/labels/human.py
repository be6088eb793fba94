"""Human step labels: PRM800K (Lightman et al. 2023) or, in the embedded default, labels by
construction (gold solutions with one injected error, whose location is known exactly).

PRM800K conversion (official jsonl, https://github.com/openai/prm800k, phases 1 and 2): one
instance per labelled solution, following the solution trajectory the labeller took:

* each step's chosen completion (``completions[chosen_completion]``) with its rating; when
  ``chosen_completion`` is null, the ``human_completion`` (phase 1; written to be correct → +1);
  when both are null the labelling stopped at this step: the first completion rated -1 is the
  erroneous step (phase 2 "found_error"), otherwise the trajectory ends before it;
* ratings -1 → negative, +1 → positive, 0 (neutral) → ``neutral`` policy (default positive, as the
  Qwen2.5-Math-7B-PRM800K baseline; ``negative`` as TRL's converter); an unrated step ends the
  trajectory;
* labels are truncated after the first negative step;
* solutions whose ``finish_reason`` is not in ``keep_finish_reasons`` (default: solution,
  found_error; i.e. not bad_problem / give_up) and quality-control / screening duplicates
  (``skip_quality_control``) are dropped;
* instances whose question matches any evaluation problem (normalised text) are removed
  (decontamination), and the count is reported.

``human.prm800k.expand: alternatives`` adds, per solution, one instance for every other rated
completion at each step the trajectory reaches (the chosen steps before it + that completion, its
rating under the same neutral policy; it is the last step, so the instance ends at its first
negative), then removes identical (question, steps) across all files, keeping the first. The paper
reports ~265k PRM800K instances "after deduplication" without the recipe; one trajectory per solution
gives ~98k from phase 2, so the expansion is the INFERRED reading (the trainsets table puts
n_instances beside 264k).
"""
from __future__ import annotations

import logging
import random
import re
import unicodedata
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import as_int, json_type
from ..fields import read_question, read_step
from ..tables import read_table
from . import clean_steps
from .construction import CorruptionError, construction_plan, corrupt_solution

log = logging.getLogger(__name__)

NEUTRAL_POLICIES = ("positive", "negative")
# human.prm800k.expand: the labeller's trajectory only, or also every rated alternative completion
EXPAND_MODES = ("chosen", "alternatives")


# -- decontamination ---------------------------------------------------------------------------------

_LATEX_SPACING = re.compile(r"\\[,!;: ]|\\quad|\\qquad")


def normalize_question(text: str) -> str:
    """Normalised problem text for decontamination: NFKC, lower case, LaTeX spacing commands, ``$``
    and all whitespace removed (so re-wrapped or re-spaced copies of a problem still match)."""
    t = unicodedata.normalize("NFKC", str(text or "")).lower()
    t = _LATEX_SPACING.sub("", t)
    t = t.replace("$", "")
    return re.sub(r"\s+", "", t)


def decontaminate(instances: list[dict], eval_questions: Iterable[str]) -> tuple[list[dict], int]:
    """Drop instances whose normalised question equals a normalised evaluation question."""
    banned = {normalize_question(q) for q in eval_questions if q}
    kept = [x for x in instances if normalize_question(x["question"]) not in banned]
    return kept, len(instances) - len(kept)


# -- PRM800K ---------------------------------------------------------------------------------------------

def _integer(value, what: str, where: str) -> int:
    """An integer field of a PRM800K record, checked, not cast: int(1.7) would make a rating of 1.7 a
    positive label and a completion index of 0.5 the first completion."""
    n = as_int(value)
    if n is None:
        raise ValueError(f"{where}: {what} {value!r} is not an integer (a JSON {json_type(value)})")
    return n


def _rating_label(rating, neutral: str, where: str = "") -> float | None:
    if rating is None:
        return None
    r = _integer(rating, "rating", where)
    if r == 1:
        return 1.0
    if r == -1:
        return 0.0
    if r == 0:
        return 1.0 if neutral == "positive" else 0.0
    raise ValueError(f"{where}: PRM800K rating must be -1, 0 or +1, got {rating!r}")


def _text(obj, where: str = "") -> str | None:
    """A completion's text (the object's `text`, or a string), read as a step (fields.read_step: text, not
    an object or a number stringified); None when absent (the trajectory stops there). A blank text is
    kept here: clean_steps drops it later, as it did before these checks."""
    text = obj.get("text") if isinstance(obj, dict) else obj
    return text if text is None or isinstance(text, str) else read_step(text, where, "a completion's text")


def _walk_prm800k(rec: dict, neutral: str, where: str, expand: bool = False):
    """(question, chosen steps, their labels, alternatives) of one record: the trajectory the labeller
    took and, with `expand`, every other rated completion at each step it reaches (the step where it
    stops included) as (step index, completion index, text, label)."""
    if neutral not in NEUTRAL_POLICIES:
        raise ValueError(f"human.neutral must be one of {NEUTRAL_POLICIES}, not {neutral!r}")
    try:
        question = rec["question"]["problem"]
        steps_in = rec["label"]["steps"]
    except (KeyError, TypeError):
        raise ValueError(f"{where}: not a PRM800K record (needs question.problem and label.steps)") from None
    question = read_question(question, where, "question.problem")
    steps: list[str] = []
    labels: list[float] = []
    alternatives: list[tuple[int, int, str, float]] = []
    if not isinstance(steps_in, (list, type(None))):
        raise ValueError(f"{where}: label.steps is a {type(steps_in).__name__}, not a list")
    for i, st in enumerate(steps_in or []):
        at = f"{where} step {i}"
        comps = st.get("completions") if isinstance(st, dict) else None
        if (not isinstance(st, dict) or not isinstance(comps or [], list)
                or not all(isinstance(c, dict) for c in comps or [])):
            raise ValueError(f"{at}: not a PRM800K step (an object whose completions are a list of objects)")
        comps = comps or []
        chosen = st.get("chosen_completion")
        used = None  # the completion the trajectory takes at this step
        if chosen is not None:
            chosen = _integer(chosen, "chosen_completion", at)
            if not 0 <= chosen < len(comps):
                raise ValueError(f"{where}: chosen_completion {chosen} out of range ({len(comps)} completions)")
            used = chosen
            text, label = (_text(comps[used], f"{at} completion {used}"),
                           _rating_label(comps[used].get("rating"), neutral, f"{at} completion {used}"))
        elif st.get("human_completion") is not None:
            text, label = _text(st["human_completion"], f"{at} human_completion"), 1.0
        else:
            bad = [j for j, c in enumerate(comps)
                   if _rating_label(c.get("rating"), "positive", f"{at} completion {j}") == 0.0]
            used = bad[0] if bad else None
            text, label = (_text(comps[used], f"{at} completion {used}"), 0.0) if bad else (None, None)
        for j, c in enumerate(comps if expand else ()):
            alt = _rating_label(c.get("rating"), neutral, f"{at} completion {j}")
            alt_text = _text(c, f"{at} completion {j}")
            if j != used and alt is not None and alt_text is not None:
                alternatives.append((i, j, alt_text, alt))
        if label is None or text is None:
            break
        steps.append(text)
        labels.append(label)
        if label == 0.0:
            break
    return question, steps, labels, alternatives


def convert_prm800k_record(rec: dict, neutral: str = "positive", where: str = "") -> dict | None:
    """One official PRM800K line → {question, steps, labels} (None when no step is usable)."""
    question, steps, labels, _ = _walk_prm800k(rec, neutral, where)
    if not steps:
        return None
    return {"question": question, "steps": steps, "labels": labels}


def prm800k_alternatives(rec: dict, neutral: str = "positive", where: str = "") -> list[dict]:
    """Every rated alternative completion of a record as its own instance: the chosen steps before it
    (all positive: the trajectory goes on only past positive steps) + the alternative with its rating,
    which is the last step, so the instance ends at its first negative. Ids carry the step and the
    completion index (`s{i}c{j}`)."""
    question, steps, labels, alternatives = _walk_prm800k(rec, neutral, where, expand=True)
    return [{"question": question, "steps": steps[:i] + [text], "labels": labels[:i] + [label], "at": f"s{i}c{j}"}
            for i, j, text, label in alternatives]


def convert_prm800k(records: Iterable[dict], neutral: str = "positive",
                    keep_finish_reasons: Sequence[str] = ("solution", "found_error"),
                    skip_quality_control: bool = True, source: str = "prm800k",
                    expand: str = "chosen") -> tuple[list[dict], dict]:
    """Convert official records; returns (instances, counts of what was dropped and why).

    expand ``chosen``: one instance per solution, the labeller's trajectory. ``alternatives``: that
    instance plus one per rated alternative completion (`prm800k_alternatives`; counted as
    ``alternatives``); identical (question, steps) are removed by `deduplicate`, after all files."""
    if expand not in EXPAND_MODES:
        raise ValueError(f"human.prm800k.expand must be one of {EXPAND_MODES}, not {expand!r}")
    out: list[dict] = []
    counts = {"records": 0, "finish_reason": 0, "quality_control": 0, "no_steps": 0}
    if expand == "alternatives":
        counts["alternatives"] = 0
    for n, rec in enumerate(records):
        counts["records"] += 1
        if (not isinstance(rec, dict) or not isinstance(rec.get("label"), dict)
                or not isinstance(rec.get("question"), dict)):
            raise ValueError(f"{source} line {n + 1}: not a PRM800K record (needs question.problem and label.steps)")
        label = rec["label"]
        if keep_finish_reasons and label.get("finish_reason") not in keep_finish_reasons:
            counts["finish_reason"] += 1
            continue
        if skip_quality_control and (rec.get("is_quality_control_question")
                                     or rec.get("is_initial_screening_question")):
            counts["quality_control"] += 1
            continue
        where = f"{source} line {n + 1}"
        inst = convert_prm800k_record(rec, neutral, where=where)
        if inst is None:
            counts["no_steps"] += 1
        else:
            inst["instance_id"] = f"{source}-{n:07d}"
            out.append(inst)
        if expand == "alternatives":
            for alt in prm800k_alternatives(rec, neutral, where=where):
                alt["instance_id"] = f"{source}-{n:07d}-{alt.pop('at')}"
                out.append(alt)
                counts["alternatives"] += 1
    return out, counts


def deduplicate(instances: list[dict]) -> tuple[list[dict], dict]:
    """Keep the first instance of each (question, steps) (exact text); returns (kept, {duplicates,
    label_conflicts}): duplicates removed, and how many of them had other labels than the one kept."""
    seen: dict[tuple, list[float]] = {}
    kept: list[dict] = []
    conflicts = 0
    for x in instances:
        key = (x["question"], tuple(x["steps"]))
        if key in seen:
            conflicts += int(list(seen[key]) != list(x["labels"]))
            continue
        seen[key] = x["labels"]
        kept.append(x)
    return kept, {"duplicates": len(instances) - len(kept), "label_conflicts": conflicts}


def prm800k_files(cfg: dict) -> list[tuple[str, str]]:
    """(name, local path) of the PRM800K jsonl files to convert (downloaded from the Hub if asked)."""
    p = cfg["prm800k"]
    phases = p.get("phases", [1, 2])
    names = [p["file_pattern"].format(phase=ph, split=p.get("split", "train")) for ph in phases]
    if p["source"] == "local":
        base = Path(p["path"])
        return [(n, str(base / n)) for n in names]
    from huggingface_hub import hf_hub_download  # lazy: only the Hub source needs the Hub client

    return [(n, hf_hub_download(p["id"], filename=n, repo_type="dataset", revision=p.get("revision")))
            for n in names]


# -- labels by construction --------------------------------------------------------------------------

def construction_instances(problems, corrupted_per_problem: int = 1, include_gold: bool = True,
                           seed: int = 0, keep_final_answer: bool = False,
                           keep_answer_fraction: float | None = None) -> tuple[list[dict], dict]:
    """Gold solutions with one injected error (labels [1]*e + [0]) plus untouched gold solutions (all
    ones). `problems` is a problems table (DataFrame) with gold_steps; problems without gold steps,
    or where no error can be placed, are skipped and counted.

    keep_answer_fraction None: errors in equation steps, all propagating or all keeping the final answer
    (keep_final_answer). A number: error positions planned per solution length as for the constructed
    ProcessBench (`construction.construction_plan`: every position, the answer step included, evenly; this
    share of the errors before the last step keep the final answer); keep_final_answer is ignored."""
    out: list[dict] = []
    counts = {"problems": 0, "no_gold_steps": 0, "not_corruptible": 0}
    plans: dict = {}
    if keep_answer_fraction is not None:
        cleaned = [clean_steps(g if g is not None else []) for g in problems["gold_steps"]]
        with_steps = [i for i, g in enumerate(cleaned) if g]
        # every corrupted copy is erroneous (error_fraction 1); positions cycle per solution length
        plan = construction_plan([len(cleaned[i]) for i in with_steps for _ in range(corrupted_per_problem)],
                                 1.0, float(keep_answer_fraction), random.Random(f"construction-plan-{seed}"))
        for j, i in enumerate(i for i in with_steps for _ in range(corrupted_per_problem)):
            plans.setdefault(i, []).append(plan[j])
        counts["by_position"] = {}
    for r, row in enumerate(problems.itertuples()):
        counts["problems"] += 1
        gold = clean_steps(row.gold_steps if row.gold_steps is not None else [])
        if not gold:
            counts["no_gold_steps"] += 1
            continue
        if include_gold:
            out.append({"instance_id": f"{row.problem_id}-gold", "question": row.question, "steps": gold,
                        "labels": [1.0] * len(gold), "error_index": -1})
        rnd = random.Random(f"construction-{seed}-{row.problem_id}")
        made = set()
        for c in range(corrupted_per_problem):
            try:
                if keep_answer_fraction is None:
                    steps, err = corrupt_solution(gold, str(row.answer), rnd, keep_final_answer=keep_final_answer)
                else:
                    kind, pos = plans[r][c]
                    steps, err = corrupt_solution(gold, str(row.answer), rnd, keep_final_answer=kind == "keep",
                                                  position=pos)
            except CorruptionError:
                counts["not_corruptible"] += 1
                break
            key = tuple(steps)
            if key in made:
                continue
            made.add(key)
            if keep_answer_fraction is not None:  # "length:position:kind" of the instances made
                at = f"{len(gold)}:{err}:{kind}"
                counts["by_position"][at] = counts["by_position"].get(at, 0) + 1
            steps = list(steps)[: err + 1]  # truncated after the first error, like every source
            out.append({"instance_id": f"{row.problem_id}-err{c}", "question": row.question, "steps": steps,
                        "labels": [1.0] * err + [0.0], "error_index": int(err)})
    return out, counts


# -- decontamination against the evaluation sets -------------------------------------------------------

def eval_questions(paths: Sequence[str]) -> list[str]:
    """Questions of every evaluation set (problems tables: question; ProcessBench cases: problem)."""
    qs: list[str] = []
    for p in paths:
        df = read_table(p, None)
        col = "question" if "question" in df.columns else "problem" if "problem" in df.columns else None
        if col is None:
            raise ValueError(f"{p}: evaluation table without a question/problem column")
        qs.extend(read_question(q, f"{p}: row {n + 1}", col) for n, q in enumerate(df[col]))
    return qs
