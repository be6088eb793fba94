"""The one rule for user text (labels, run names, file names shown in captions) and what every renderer
does with text so that it stays text: LaTeX (escaped to characters the paper's pdflatex declares), figures
(no math parsing), CSV (no formula cells), Markdown and the HTML report (no link but relative paths).

The rule: one line of at most TEXT_MAX characters, each printable ASCII, a character the paper's LaTeX
(paper/main.tex: pdflatex, utf8 inputenc, T1 fonts; the kernel adds TS1, OT1, OML, OMS) declares for
UTF-8 input (LATEX_DECLARED), or one of the few symbols tex_escape writes as math (TEX_SYMBOLS). Config
validation holds every free-text key to it (config.base.Text); the renderers below neutralise what the
rule lets through ($, \\, %, #, a leading =, a `javascript:` word)."""
from __future__ import annotations

import csv
import html.parser
import re
import unicodedata

from .fields import invisible

TEXT_MAX = 500  # a label, or a sentence under a table (analysis.not_compared: up to ~330 in config/paper.yaml)

# The printable characters beyond ASCII for which `\ifcsname u8:<char>\endcsname` holds after
# paper/main.tex's preamble (TeX Live 2022; tests/test_text_rule.py asks the installed pdflatex again and
# typesets each). Not in it (pdflatex stops: "Unicode character ... not set up"): Ħ ĸ Ŀ ŉ Ŧ ſ ‗ ‛ ‟ ‣ ․ ‥ ‧,
# Greek, Cyrillic, CJK, emoji. The non-printing ones it declares (U+00A0, U+00AD, U+200C, U+FEFF) are out.
LATEX_DECLARED = (
    (0x00A1, 0x00AC), (0x00AE, 0x0125), (0x0128, 0x0137), (0x0139, 0x013E), (0x0141, 0x0148), (0x014A, 0x0165),
    (0x0168, 0x017E), (0x0192, 0x0192), (0x01C4, 0x01D4), (0x01E2, 0x01E3), (0x01E6, 0x01EB), (0x01F0, 0x01F0),
    (0x01F4, 0x01F5), (0x0218, 0x021B), (0x0232, 0x0233), (0x0237, 0x0237), (0x02C6, 0x02C7), (0x02D8, 0x02D9),
    (0x02DB, 0x02DD), (0x0E3F, 0x0E3F), (0x1E02, 0x1E03), (0x1E0D, 0x1E0D), (0x1E1E, 0x1E21), (0x1E25, 0x1E25),
    (0x1E30, 0x1E31), (0x1E37, 0x1E37), (0x1E43, 0x1E43), (0x1E45, 0x1E45), (0x1E47, 0x1E47), (0x1E5B, 0x1E5B),
    (0x1E63, 0x1E63), (0x1E6D, 0x1E6D), (0x1E8E, 0x1E91), (0x1E9E, 0x1E9E), (0x1EF2, 0x1EF3), (0x2010, 0x2016),
    (0x2018, 0x201A), (0x201C, 0x201E), (0x2020, 0x2022), (0x2026, 0x2026), (0x2030, 0x2031), (0x2039, 0x203B),
    (0x203D, 0x203D), (0x2044, 0x2044), (0x204E, 0x204E), (0x2052, 0x2052), (0x20A1, 0x20A1), (0x20A4, 0x20A4),
    (0x20A6, 0x20A6), (0x20A9, 0x20A9), (0x20AB, 0x20AC), (0x20B1, 0x20B1), (0x2103, 0x2103), (0x2116, 0x2117),
    (0x211E, 0x211E), (0x2120, 0x2120), (0x2122, 0x2122), (0x2126, 0x2127), (0x212E, 0x212E), (0x2190, 0x2193),
    (0x2329, 0x232A), (0x2422, 0x2423), (0x25E6, 0x25E6), (0x25EF, 0x25EF), (0x266A, 0x266A), (0x27E8, 0x27E9),
)

# LaTeX's ten special characters and brackets, and the symbols outside LATEX_DECLARED that the project's
# own text uses, written as commands
TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
               "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
               # a cell that starts with [ after a row's \\ would be read as its optional length
               "[": "{[}", "]": "{]}"}
TEX_SYMBOLS = {"Δ": r"$\Delta$", "≤": r"$\leq$", "≥": r"$\geq$", "−": r"$-$", "→": r"$\rightarrow$",
               "±": r"$\pm$", "≈": r"$\approx$", "×": r"$\times$"}
# T1 fonts join these pairs into other characters (-- en dash, << guillemet, `` and '' quotes, ,, low
# quote, !` and ?` inverted marks): an empty group between them keeps the text as written
_TEX_LIGATURES = {"-": "-", "<": "<", ">": ">", "`": "`", "'": "'", ",": ",", "!": "`", "?": "`"}


_SETTABLE = frozenset({chr(c) for c in range(0x20, 0x7F)} | set(TEX_SYMBOLS)
                      | {chr(c) for lo, hi in LATEX_DECLARED for c in range(lo, hi + 1) if chr(c).isprintable()})


def settable(ch: str) -> bool:
    """Whether one character may be in user text: printable ASCII, declared for pdflatex, or a TEX_SYMBOLS key."""
    return ch in _SETTABLE


def settable_characters() -> list[str]:
    """Every character the rule allows, in code point order."""
    return sorted(_SETTABLE)


def text_problem(text) -> str | None:
    """Why `text` cannot be user text that renderers print (the module's rule), or None."""
    if not isinstance(text, str):
        return None  # the schema reports the type
    if len(text) > TEXT_MAX:
        return f"{len(text)} characters (at most {TEXT_MAX}: it is printed in tables, figures and captions)"
    for ch in text:
        if not settable(ch):
            what = "a line break or control character" if ch.isspace() or not ch.isprintable() else "a character"
            # a letter typed as base + combining accent (macOS file names, some keyboards): its composed form
            # may be settable; say so rather than rewrite the user's text
            composed = unicodedata.normalize("NFC", text)
            hint = ("; it is a combining accent: the same text composed (Unicode NFC, e.g. 'é' for 'e' + U+0301) "
                    "is accepted" if unicodedata.combining(ch) and composed != text
                    and text_problem(composed) is None else "")
            return (f"{what} {ch!r} (U+{ord(ch):04X}) that the paper's LaTeX cannot set: one line of "
                    f"Latin-script text, dashes and quotes{hint}")
    return None


# -- LaTeX -------------------------------------------------------------------------------------------------

def tex_escape(text: object) -> str:
    """`text` as LaTeX that prints it: the ten special characters and brackets escaped, a few symbols as
    math, T1 ligatures broken, line breaks and other control characters as spaces (a line break inside a table cell
    or a \\newcommand would end it), and any other character the paper's pdflatex does not declare (CJK,
    Greek, emoji) as '?' rather than a stopped PDF build."""
    s = str(text)
    out = []
    for i, ch in enumerate(s):
        if ch in TEX_ESCAPES:
            out.append(TEX_ESCAPES[ch])
        elif ch in TEX_SYMBOLS:
            out.append(TEX_SYMBOLS[ch])
        elif not ch.isprintable():
            out.append(" ")
        elif not settable(ch):
            out.append("?")
        else:
            out.append(ch)
            if ch in _TEX_LIGATURES and s[i + 1:i + 2] == _TEX_LIGATURES[ch]:
                out.append("{}")
    return "".join(out)


# -- figures -----------------------------------------------------------------------------------------------
# matplotlib reads text between two '$' as math (mathtext; with usetex, as LaTeX): a label `$x$` would be
# set as math and one with `$\foo$` stops the figure. Every text of a figure is plain text.
MPL_TEXT_RC = {"text.parse_math": False, "text.usetex": False}


# -- CSV ---------------------------------------------------------------------------------------------------
# A spreadsheet reads a cell that starts with =, +, -, @ (or a tab / carriage return before one) as a
# formula. Such a string cell is written with a leading apostrophe (the spreadsheets' "text" prefix), and
# so is one that starts with an apostrophe, so that reading strips exactly one: the round trip is exact.
# So is a cell whose first visible character is one of them behind white space or invisible characters
# (" =1", "\n=1", a zero-width space: importers may trim them), or their full-width forms (＝ ＋ － ＠,
# which some locales read as the ASCII ones). A plain number (-0.5, +3) is no formula and stays as written.
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CSV_FORMULA_CHARS = "=+-@\uff1d\uff0b\uff0d\uff20"
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _formula_like(value: str) -> bool:
    if value.startswith((*CSV_FORMULA_START, "'")):
        return not _PLAIN_NUMBER.fullmatch(value)
    start = next((i for i, ch in enumerate(value) if not invisible(ch)), len(value))
    return value[start:start + 1] in tuple(CSV_FORMULA_CHARS) and not _PLAIN_NUMBER.fullmatch(value[start:])


def csv_cell(value):
    """One cell as written to a CSV (the rule above); non-strings unchanged."""
    if isinstance(value, str) and _formula_like(value):
        return "'" + value
    return value


def csv_cell_read(value):
    """One cell as read back from a CSV written with csv_cell: one leading apostrophe dropped."""
    return value[1:] if isinstance(value, str) and value.startswith("'") else value


def _text_columns(df) -> list[int]:
    """Positions of the columns that may hold strings (object or string dtype); two may share a name."""
    import pandas as pd  # lazy: config validation imports this module, never a frame

    return [i for i in range(df.shape[1])
            if df.iloc[:, i].dtype == object or isinstance(df.iloc[:, i].dtype, pd.StringDtype)]


def _map_text_cells(df, fn):
    out = df.copy()
    out.columns = [fn(c) for c in out.columns]
    for i in _text_columns(out):
        out.isetitem(i, out.iloc[:, i].map(fn, na_action="ignore"))
    return out


def csv_frame(df):
    """A copy of `df` whose string cells and column names are written as csv_cell says."""
    return _map_text_cells(df, csv_cell)


def csv_write_options(df) -> dict:
    """DataFrame.to_csv keywords for `df` (as csv_frame writes it): Python's csv writer quotes a cell that
    holds its line terminator (\\n) but not a lone carriage return, which every reader takes for a line
    break (a row split in two); with one, every text cell is quoted."""
    cells = [*map(str, df.columns)] + [v for i in _text_columns(df) for v in df.iloc[:, i] if isinstance(v, str)]
    return {"quoting": csv.QUOTE_NONNUMERIC} if any("\r" in v for v in cells) else {}


def csv_frame_read(df):
    """A frame read from a CSV written with csv_frame, its string cells and column names as they were."""
    return _map_text_cells(df, csv_cell_read)


# -- HTML --------------------------------------------------------------------------------------------------
# The HTML report links only to relative paths (and fragments): no `javascript:`, `data:`, `http:` or
# protocol-relative link comes from a caption. Browsers drop ASCII whitespace and control characters
# inside a scheme ("java\tscript:"), so they are dropped before the check.
_URL_ATTRS = {"href", "src", "srcset", "action", "formaction", "xlink:href", "poster", "background", "cite", "data",
              "ping", "longdesc", "manifest", "usemap"}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def link_problem(url: str) -> str | None:
    """Why `url` is not a relative link (a path or a #fragment), or None."""
    bare = "".join(ch for ch in url if ord(ch) > 0x20 and ord(ch) != 0x7F)
    if _SCHEME.match(bare):
        return f"{url!r} has a scheme"
    if bare.startswith(("/", "\\")):
        return f"{url!r} is absolute or protocol-relative"
    return None


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.urls += [v or "" for k, v in attrs if k.lower() in _URL_ATTRS]

    handle_startendtag = handle_starttag


def html_link_problems(text: str) -> list[str]:
    """Every link of an HTML fragment that is not relative (link_problem), as messages."""
    parser = _Links()
    parser.feed(text)
    parser.close()
    return [p for p in map(link_problem, parser.urls) if p]
