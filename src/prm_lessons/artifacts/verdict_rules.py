"""The verdicts' vocabulary and rules: the four verdicts, a row of the verdict table, the two rules that
turn intervals into a verdict (an interval against a null, two unpaired intervals), and the Markdown
table that opens paper/report.md. The lessons that use them: prm_lessons.artifacts.verdicts."""
from __future__ import annotations

from typing import NamedTuple, Sequence

from prm_lessons.artifacts.estimates import Est

HEADING = "## The paper's lessons: verdicts of this run"
REPRODUCED, CONTRADICTED, UNDECIDABLE, ABSENT = ("reproduced", "contradicted", "undecidable here",
                                                 "not measured in this run")
VERDICTS = (REPRODUCED, CONTRADICTED, UNDECIDABLE, ABSENT)


class Verdict(NamedTuple):
    """One row of the table. `reason`: why undecidable / not measured; `decide`: the smallest setting
    that would decide it (undecidable rows)."""
    lesson: str
    paper: str
    measured: str
    verdict: str
    reason: str = ""
    decide: str = ""


def interval_verdict(est: Est | None, null: float, null_name: str, above_reproduces: bool = True
                     ) -> tuple[str, str]:
    """(verdict, reason) from an interval against a null value: above it → reproduced (or contradicted
    when `above_reproduces` is False), below it → the other, containing it → undecidable."""
    if est is None or not est.has_ci:
        return UNDECIDABLE, "no interval (a point estimate decides nothing)"
    if est.lo > null:
        return (REPRODUCED if above_reproduces else CONTRADICTED), ""
    if est.hi < null:
        return (CONTRADICTED if above_reproduces else REPRODUCED), ""
    return UNDECIDABLE, f"interval contains {null_name}"


def separated_verdict(higher: Est | None, lower: Est | None, hi_name: str, lo_name: str) -> tuple[str, str]:
    """(verdict, reason) for the paper's claim `hi_name` > `lo_name` from the two unpaired intervals:
    reproduced when `higher`'s lies above `lower`'s, contradicted when below, undecidable when they overlap."""
    if higher is None or lower is None or not (higher.has_ci and lower.has_ci):
        return UNDECIDABLE, "no interval (a point estimate decides nothing)"
    if higher.lo > lower.hi:
        return REPRODUCED, ""
    if higher.hi < lower.lo:
        return CONTRADICTED, ""
    return UNDECIDABLE, f"the intervals of {hi_name} and {lo_name} overlap (their difference's interval contains 0)"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ") or " "


def verdicts_markdown(rows: Sequence[Verdict]) -> str:
    """The section that opens paper/report.md: a short rule, then the table."""
    md = [HEADING, "",
          "Each verdict comes from a 95 % interval, never from a point estimate: an interval that excludes the "
          "null (0, the other arm, the chance rate) decides; one that contains it leaves the lesson "
          "undecidable here, with what would decide it. Every comparison is fixed in advance "
          "(`prm_lessons.artifacts.verdicts`), none chosen from the evaluation results. Percent, "
          "differences in points, [interval].", "",
          "| Lesson | The paper found | This run measured | Verdict | "
          "Why undecidable or not measured; what would decide it |",
          "|---|---|---|---|---|"]
    for r in rows:
        why = r.reason
        if r.decide and r.verdict in (UNDECIDABLE, ABSENT):
            why = (why + ". " if why else "") + "Would decide it: " + r.decide
        verdict = f"**{r.verdict}**" if r.verdict in (REPRODUCED, CONTRADICTED) else r.verdict
        md.append("| " + " | ".join(_cell(x) for x in (r.lesson, r.paper, r.measured, verdict, why)) + " |")
    counts = {v: sum(r.verdict == v for r in rows) for v in VERDICTS}
    md += ["", "Tally: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + ".", ""]
    return "\n".join(md)
