"""The paper's LLM-as-a-judge prompt (arXiv 2501.07301, App. C) read out of the paper's LaTeX source.

The text is never shipped with the project: rule `judge_template` fetches the source named by
`judge.paper_template` (the arXiv e-print, a tar.gz of LaTeX; a single .tex, gzipped or not; or a
plain-text copy an air-gapped site keeps), checks its checksums, and :func:`extract_prompt` takes the
prompt out of it: from the paper's opening words (``START``) through the ``{tagged_response}``
placeholder, as printed, with the LaTeX wrapping removed (:func:`latex_to_text`) unless the box is a
verbatim environment. :func:`words_sha256` fingerprints the words (every whitespace run as one space),
so a fetched source whose prompt differs from the printed one in any word fails, whatever its line
layout. :func:`as_template` makes the text a ``str.format`` template with the judge's placeholders.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import re
import string
import tarfile
from pathlib import Path

# the prompt's first words and its last placeholder, as the paper prints them (any whitespace or
# LaTeX escaping between); the placeholders the judge fills (labels.judge.render_judge_prompt)
START = re.compile(r"I\s+will\s+provide\s+a\s+math\s+problem\s+along\s+with\s+a\s+solution")
END = re.compile(r"\\?\{\s*tagged\\?_response\s*\\?\}")
PLACEHOLDERS = ("tagged_problem", "tagged_response")
VERBATIM_ENVS = ("verbatim", "Verbatim", "lstlisting", "minted", "BVerbatim", "LVerbatim")

# LaTeX that prints one character or string (the order matters: `\\` before `\_`)
_SYMBOLS = [
    (r"\textless{}", "<"), (r"\textgreater{}", ">"), (r"\textless", "<"), (r"\textgreater", ">"),
    ("$<$", "<"), ("$>$", ">"), (r"\textbraceleft{}", "{"), (r"\textbraceright{}", "}"),
    (r"\textbraceleft", "{"), (r"\textbraceright", "}"), (r"\textasteriskcentered{}", "*"),
    (r"\textasteriskcentered", "*"), (r"\textquotedbl{}", '"'), (r"\textquotedbl", '"'),
    (r"\ldots{}", "..."), (r"\ldots", "..."), (r"\dots{}", "..."), (r"\dots", "..."),
    (r"\_", "_"), (r"\{", "{"), (r"\}", "}"), (r"\&", "&"), (r"\%", "%"), (r"\#", "#"), (r"\$", "$"),
    (r"\*", "*"), ("``", '"'), ("''", '"'), (r"\ ", " "), ("~", " "),
]
# commands that only style or space the text: dropped with their arguments
_LAYOUT = re.compile(r"\\(?:noindent|small|footnotesize|scriptsize|normalsize|ttfamily|rmfamily|sffamily|"
                     r"centering|raggedright|medskip|smallskip|bigskip|nobreak|linebreak|newpage|"
                     r"(?:v|h)space\*?\s*\{[^{}]*\})(?![A-Za-z])\s*")
_TEXT_CMD = re.compile(r"\\(?:textbf|textit|texttt|textrm|textsf|emph|text|mbox|textnormal)\s*\{([^{}]*)\}")
_ENV_LINE = re.compile(r"\\(?:begin|end)\s*\{[^{}]*\}(?:\s*\[[^\]]*\])?(?:\s*\{[^{}]*\})*")


def read_sources(path: str | Path) -> dict[str, str]:
    """The LaTeX (or text) files of a fetched source: every .tex member of a tar archive (gzipped or
    not), else the one file, gunzipped if it is gzip. Name → text."""
    data = Path(path).read_bytes()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            out = {m.name: _decode(tar.extractfile(m).read()) for m in tar.getmembers()
                   if m.isfile() and m.name.endswith(".tex")}
        if not out:
            raise ValueError(f"{path}: an archive without any .tex file")
        return out
    except tarfile.ReadError:
        pass
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return {Path(path).name: _decode(data)}


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _in_verbatim(src: str, pos: int) -> bool:
    """Whether `pos` lies inside a verbatim-like environment (its text is printed as written)."""
    for env in VERBATIM_ENVS:
        begin = src.rfind(f"\\begin{{{env}}}", 0, pos)
        if begin >= 0 and src.find(f"\\end{{{env}}}", begin, pos) < 0:
            return True
    return False


def latex_to_text(src: str) -> str:
    """What a run of LaTeX body text prints, for the markup a prompt box uses: comments dropped,
    environment lines dropped, `\\\\` and `\\newline` line breaks, blank lines as paragraph breaks,
    other source line breaks as spaces, escaped characters and text commands unwrapped. A command it
    does not know is an error naming it: better no prompt than a wrong one."""
    s = re.sub(r"(?<!\\)%[^\n]*\n?", "", src)
    s = _ENV_LINE.sub("", s)
    s = re.sub(r"\\\\(?:\[\s*-?[\d.]+\s*[a-z]{2}\s*\])?|\\newline(?![A-Za-z])", "\x00", s)  # \\[2pt]: a length
    s = re.sub(r"\\par(?![A-Za-z])", "\n\n", s)
    s = _LAYOUT.sub("", s)
    while _TEXT_CMD.search(s):
        s = _TEXT_CMD.sub(r"\1", s)
    for tex, ch in _SYMBOLS:
        s = s.replace(tex, ch)
    s = s.replace("{}", "")
    unknown = sorted(set(re.findall(r"\\[A-Za-z]+", s)))
    if unknown:
        raise ValueError(f"App. C prompt: LaTeX command(s) {', '.join(unknown)} in the prompt that this reader "
                         "does not know; point judge.paper_template.url at a plain-text copy of the prompt")
    paragraphs = re.split(r"\n[ \t]*\n\s*", s.strip())
    return "\n\n".join("\n".join(" ".join(part.split()) for part in p.split("\x00")) for p in paragraphs)


def extract_prompt(sources: dict[str, str]) -> str:
    """The App. C prompt from the source files (read_sources): the first file, in name order, holding
    the opening words followed by the `{tagged_response}` placeholder; verbatim text as written, other
    LaTeX through latex_to_text. Trailing spaces are cut from every line."""
    for name in sorted(sources):
        src = sources[name]
        start = START.search(src)
        if not start:
            continue
        end = END.search(src, start.end())
        if not end:
            raise ValueError(f"App. C prompt: {name} has the prompt's opening words but no "
                             "{tagged_response} placeholder after them")
        raw = src[start.start():end.end()]
        text = raw if _in_verbatim(src, start.start()) else latex_to_text(raw)
        return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))
    raise ValueError(f"App. C prompt not found: no file of the source ({', '.join(sorted(sources)) or 'none'}) "
                     "holds its opening words 'I will provide a math problem along with a solution'")


def words_sha256(text: str) -> str:
    """sha256 of the text's words: every whitespace run as one space, ends trimmed (independent of how
    the source breaks its lines)."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()


def as_template(text: str) -> str:
    """The prompt as a str.format template: every brace doubled except the judge's placeholders, which
    must each appear exactly once."""
    for p in PLACEHOLDERS:
        if text.count("{" + p + "}") != 1:
            raise ValueError(f"App. C prompt: the placeholder {{{p}}} appears {text.count('{' + p + '}')} times, "
                             "expected once")
    tmpl = text.replace("{", "{{").replace("}", "}}")
    for p in PLACEHOLDERS:
        tmpl = tmpl.replace("{{" + p + "}}", "{" + p + "}")
    fields = {f for _, f, _, _ in string.Formatter().parse(tmpl) if f is not None}
    if fields != set(PLACEHOLDERS):  # cannot happen after the doubling; a check, not an assumption
        raise ValueError(f"App. C prompt: template fields {sorted(fields)}, expected {list(PLACEHOLDERS)}")
    return tmpl


def paper_template(path: str | Path, text_sha256: str | None) -> tuple[str, str]:
    """(str.format template, words_sha256 of the prompt) from a fetched source; `text_sha256`
    (judge.paper_template.text_sha256): the words the paper prints, checked when given."""
    text = extract_prompt(read_sources(path))
    got = words_sha256(text)
    if text_sha256 and got != str(text_sha256).lower():
        raise ValueError(f"judge.paper_template.text_sha256: the prompt read from {path} has words digest {got}, "
                         f"expected {text_sha256} (its words differ from the ones App. C prints; a different "
                         "source than the pinned one, or markup this reader takes wrongly: check the log's text)")
    return as_template(text), got
