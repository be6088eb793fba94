"""Hostile user text for the text rule's tests (tests/test_text_rule.py, tests/config/test_base_text_keys.py,
tests/artifacts/test_render_hostile.py): what the rule lets through but means something to a renderer, and
what it refuses."""
from __future__ import annotations

# LaTeX and matplotlib math and commands, spreadsheet formulas, links and HTML, T1 ligatures, Markdown and
# reStructuredText markup (a literal's end, a hyperlink target)
HOSTILE = ["$x$", "$\\frac{1}{0}$", "$", "\\", "\\input{/etc/passwd}", "%", "#1", "{", "}", "~^&_",
           "=1+1", "=HYPERLINK(\"http://evil.example\";\"x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)",
           "'=1", "javascript:alert(1)", "<script>alert(1)</script>", "[l](javascript:alert(1))",
           "a--b << c >> d ``e'' ,,f !`g ?`h", "see `x <javascript:alert(1)>`_", "x`` `y <http://e.x>`_ ``z",
           "http://evil.example/", "<http://evil.example>", "www.evil.example"]
# line breaks and control characters, non-printing ones LaTeX declares, and characters it does not declare
REFUSED = ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\u2028", "\x85", "\u00a0", "\u00ad", "\u200c", "\ufeff",
           "\u0126", "\u017f", "\u2017", "\u2027", "\u03b1", "\u0416", "\u4e2d", "\U0001f600"]
