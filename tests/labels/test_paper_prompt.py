"""The App. C reader (prm_lessons.labels.paper_prompt) on sources the test writes in the paper's source
formats (a LaTeX prompt box, verbatim or typeset; a tar.gz e-print; a gzipped .tex): never the paper's text."""
from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from prm_lessons.labels import paper_prompt as pp
from prm_lessons.labels.judge import render_judge_prompt

# a made-up prompt in App. C's shape: the opening words, braces and underscores, the placeholders last
PROMPT = ("I will provide a math problem along with a solution. Check it.\n"
          "<analysis_1>\n...(analysis of paragraph 1)...\n</analysis_1>\n"
          "* Keep {braces} literal; stop at the first error.\n"
          "[Math Problem]\n{tagged_problem}\n[Solution]\n{tagged_response}")

VERBATIM_TEX = ("\\section{Prompt Template for LLM-as-a-judge}\nTo construct data, we use:\n"
                "\\begin{tcolorbox}[title=Prompt for constructing data]\n\\begin{verbatim}\n"
                + PROMPT + "\n\\end{verbatim}\n\\end{tcolorbox}\n")

# the same prompt typeset: \\ line breaks, escaped characters, a comment, a text command, a source line wrap
TYPESET_TEX = ("\\begin{tcolorbox}[title=Prompt]\n\\small\n"
               "I will provide a math problem along with a solution. % a comment\n"
               "Check it.\\\\\n"
               "\\textless{}analysis\\_1\\textgreater{}\\\\\n"
               "\\ldots(analysis of paragraph 1)\\ldots\\\\\n"
               "$<$/analysis\\_1$>$\\\\\n"
               "* Keep \\{braces\\} \\textbf{literal};\n"
               "stop at the first error.\\\\\n"
               "[Math Problem]\\\\\n\\{tagged\\_problem\\}\\\\\n[Solution]\\\\\n\\{tagged\\_response\\}\n"
               "\\end{tcolorbox}\n")


def _tar_gz(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_verbatim_box_is_taken_as_written():
    assert pp.extract_prompt({"main.tex": VERBATIM_TEX}) == PROMPT


def test_typeset_box_prints_the_same_text():
    assert pp.extract_prompt({"main.tex": TYPESET_TEX}) == PROMPT


def test_words_digest_ignores_line_layout_only():
    assert pp.words_sha256(PROMPT) == pp.words_sha256(PROMPT.replace("\n", "  \n ").replace(" Check", "\nCheck"))
    assert pp.words_sha256(PROMPT) != pp.words_sha256(PROMPT.replace("first error", "first  mistake"))


@pytest.mark.parametrize("kind", ["tar.gz", "tex.gz", "tex", "txt"])
def test_paper_template_from_each_source_format(tmp_path, kind):
    path = tmp_path / f"source.{kind}"
    if kind == "tar.gz":  # an arXiv e-print: several .tex files and others; the prompt in an appendix file
        path.write_bytes(_tar_gz({"main.tex": "\\input{appendix}\n", "appendix.tex": VERBATIM_TEX,
                                  "fig.pdf": "not tex"}))
    elif kind == "tex.gz":
        path.write_bytes(gzip.compress(VERBATIM_TEX.encode()))
    else:
        path.write_text(VERBATIM_TEX if kind == "tex" else PROMPT)
    template, words = pp.paper_template(path, pp.words_sha256(PROMPT))
    assert words == pp.words_sha256(PROMPT)
    # a str.format template: the literal braces survive, the placeholders are the judge's
    out = render_judge_prompt("What is 1+1?", ["1+1=2", "So \\boxed{2}"], "paper", template)
    assert out.startswith("I will provide a math problem") and "{braces}" in out
    assert out.endswith("<paragraph_2>\nSo \\boxed{2}\n</paragraph_2>")
    assert "<math_problem>\nWhat is 1+1?\n</math_problem>" in out


def test_words_that_differ_are_an_error_naming_the_key(tmp_path):
    path = tmp_path / "main.tex"
    path.write_text(VERBATIM_TEX.replace("Check it.", "Check it twice."))
    with pytest.raises(ValueError, match="judge.paper_template.text_sha256"):
        pp.paper_template(path, pp.words_sha256(PROMPT))
    assert pp.paper_template(path, None)[1] != pp.words_sha256(PROMPT)  # unchecked: the digest is reported


def test_unknown_latex_command_is_an_error():
    with pytest.raises(ValueError, match=r"\\fancybullet"):
        pp.extract_prompt({"a.tex": TYPESET_TEX.replace("* Keep", "\\fancybullet Keep")})


def test_missing_prompt_or_placeholder_is_an_error():
    with pytest.raises(ValueError, match="not found"):
        pp.extract_prompt({"a.tex": "\\section{Intro} no prompt here"})
    with pytest.raises(ValueError, match="no \\{tagged_response\\}"):
        pp.extract_prompt({"a.tex": VERBATIM_TEX.replace("{tagged_response}", "")})
    with pytest.raises(ValueError, match="tagged_problem"):
        pp.as_template(PROMPT.replace("{tagged_problem}", ""))
    with pytest.raises(ValueError, match="without any .tex"):
        pp.read_sources(_write(_tar_gz({"fig.pdf": "x"})))


def _write(data: bytes):
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "e-print"
    path.write_bytes(data)
    return path
