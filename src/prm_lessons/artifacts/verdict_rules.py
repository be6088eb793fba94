"""The verdicts' vocabulary and rules: the four verdicts, a row of the verdict table, the two rules that
turn intervals into a verdict (an interval against a null, two unpaired intervals), the Markdown table that
opens paper/report.md and its HTML copy for Snakemake's report. The lessons: prm_lessons.artifacts.verdicts."""
from __future__ import annotations

import html
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


RULE = ("Each verdict comes from a 95 % interval, never from a point estimate: an interval that excludes the "
        "null (0, the other arm, the chance rate) decides; one that contains it leaves the lesson "
        "undecidable here, with what would decide it. Every comparison is fixed in advance "
        "(`prm_lessons.artifacts.verdicts`), none chosen from the evaluation results. Percent, "
        "differences in points, [interval].")
COLUMNS = ("Lesson", "The paper found", "This run measured", "Verdict",
           "Why undecidable or not measured; what would decide it")


def _why(r: Verdict) -> str:
    if r.decide and r.verdict in (UNDECIDABLE, ABSENT):
        return (r.reason + ". " if r.reason else "") + "Would decide it: " + r.decide
    return r.reason


def tally(rows: Sequence[Verdict]) -> str:
    """'Tally: 1 reproduced, 6 undecidable here.'"""
    counts = {v: sum(r.verdict == v for r in rows) for v in VERDICTS}
    return "Tally: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + "."


def verdicts_markdown(rows: Sequence[Verdict]) -> str:
    """The section that opens paper/report.md: a short rule, then the table."""
    md = [HEADING, "", RULE, "", "| " + " | ".join(COLUMNS) + " |", "|---|---|---|---|---|"]
    for r in rows:
        verdict = f"**{r.verdict}**" if r.verdict in (REPRODUCED, CONTRADICTED) else r.verdict
        md.append("| " + " | ".join(_cell(x) for x in (r.lesson, r.paper, r.measured, verdict, _why(r))) + " |")
    md += ["", tally(rows), ""]
    return "\n".join(md)


def verdicts_html(rows: Sequence[Verdict], run: str = "") -> str:
    """The same section as one HTML page (paper/verdicts.html): Snakemake's HTML report shows it under
    *Verdicts* (workflow/rules/paper.smk), as it cannot show paper/report.md's Markdown."""
    esc = html.escape
    title = HEADING.lstrip("# ")
    body = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{esc(title)}</title>",
            "<style>body{font-family:sans-serif;font-size:14px;margin:1em}table{border-collapse:collapse}"
            "td,th{border:1px solid #bbb;padding:4px 6px;vertical-align:top;text-align:left}</style>",
            "</head><body>", f"<h2>{esc(title)}</h2>"]
    if run:
        body.append(f"<p>Run: {esc(run)}</p>")
    body += [f"<p>{esc(RULE)}</p>", f"<p><strong>{esc(tally(rows))}</strong></p>", "<table>",
             "<tr>" + "".join(f"<th>{esc(c)}</th>" for c in COLUMNS) + "</tr>"]
    for r in rows:
        verdict = f"<strong>{esc(r.verdict)}</strong>" if r.verdict in (REPRODUCED, CONTRADICTED) else esc(r.verdict)
        body.append("<tr>" + "".join(f"<td>{x}</td>" for x in (esc(r.lesson), esc(r.paper), esc(r.measured),
                                                                verdict, esc(_why(r)))) + "</tr>")
    body += ["</table>", "</body></html>", ""]
    return "\n".join(body)
