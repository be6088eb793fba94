"""A small PRM800K in the official OpenAI jsonl format (phase1_train.jsonl, phase2_train.jsonl), for the
rehearsal: real MATH problems and sampled responses of ../shared/data/bon, ratings made by a fixed rule,
NOT by people. Point `human.prm800k` at it with `source: local, path: DIR`."""
from __future__ import annotations

import json
from pathlib import Path

from ..steps import split_steps
from ..tables import write_text_atomic


def write_prm800k(out_dir: Path, source: Path, first: int = 60, count: int = 20) -> dict:
    """phase1_train.jsonl and phase2_train.jsonl in the official PRM800K format (github.com/openai/prm800k
    README) from `source` (../shared/data/bon/math_cot_100_samples.jsonl): problems `first` ..
    `first+count-1` (the tail of the file, so a rehearsal that evaluates MATH on the first problems is
    not decontaminated away) and their sampled responses split into steps at blank lines.

    Ratings follow a fixed rule, not human judgement: a response graded correct is rated +1 throughout
    (finish_reason "solution"); an incorrect one +1 up to its middle step, which is rated -1 (phase 2:
    "found_error", labelling stops). Phase 1 adds the shapes the converter must handle: a step with
    several rated completions, a human-written step (chosen_completion null), a quality-control
    record and a "give_up" record. Returns {file name: records written}."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in Path(source).read_text().splitlines() if line.strip()]
    rows = rows[first:first + count]
    if not rows:
        raise ValueError(f"{source}: no problems at index {first}..{first + count - 1}")

    def step(text, rating, alts=()):
        comps = [{"text": text, "rating": rating, "flagged": False}] + [
            {"text": a, "rating": r, "flagged": False} for a, r in alts]
        return {"completions": comps, "human_completion": None, "chosen_completion": 0}

    def record(row, steps, finish, phase, generation=None, qc=False):
        q = {"problem": row["question"], "ground_truth_answer": str(row.get("answer", row.get("gt", "")))}
        if phase == 2:
            q.update(ground_truth_solution=row.get("solution"), pre_generated_steps=[
                s["completions"][0]["text"] for s in steps], pre_generated_answer=None,
                pre_generated_verifier_score=None)
        return {"labeler": "rehearsal-rule", "timestamp": None, "generation": generation,
                "is_quality_control_question": qc, "is_initial_screening_question": False,
                "question": q, "label": {"steps": steps, "total_time": 0, "finish_reason": finish}}

    def labelled(response, correct):
        st = split_steps(response)
        if correct:
            return [step(s, 1) for s in st], "solution"
        bad = len(st) // 2
        return [step(s, 1) for s in st[:bad]] + [step(st[bad], -1)], "found_error"

    phase1, phase2 = [], []
    for i, row in enumerate(rows):
        responses, scores = row.get("code") or [], row.get("score") or []
        for j, (resp, ok) in enumerate(zip(responses[:2], scores[:2])):
            steps, finish = labelled(resp, bool(ok))
            phase2.append(record(row, steps, finish, 2, generation=1 + (i % 9)))
        if not responses:
            continue
        st = split_steps(responses[0])
        if len(st) >= 2:
            gold = split_steps(row.get("solution", ""))
            p1 = [step(st[0], 0)]  # a neutral step: counts as positive under `neutral: positive`
            # several alternatives rated at one step; the chosen one is the first (+1)
            p1.append(step(st[1], 1, alts=[(gold[0] if gold else st[0], -1)]))
            # all alternatives wrong, the labeller wrote the step (phase 1 only)
            p1.append({"completions": [{"text": st[-1], "rating": -1, "flagged": False}],
                       "human_completion": {"text": gold[-1] if gold else st[-1]},
                       "chosen_completion": None})
            phase1.append(record(row, p1, "solution", 1))
    if rows:  # records the converter must drop: quality control and give-up
        phase1.append(record(rows[0], [step(split_steps(rows[0]["code"][0])[0], 1)], "solution", 1, qc=True))
        phase1.append(record(rows[-1], [step(split_steps(rows[-1]["code"][0])[0], 1)], "give_up", 1))
    counts = {}
    for name, recs in (("phase1_train.jsonl", phase1), ("phase2_train.jsonl", phase2)):
        write_text_atomic(out / name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs))
        counts[name] = len(recs)
    return counts
