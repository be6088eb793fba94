"""Rule judge_template (prm_lessons.rules.data): the paper's App. C prompt from a fetched source, checked;
the config rules around judge.template; which file the judge rules read; the rehearsal's stand-in."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from prm_lessons import plan
from prm_lessons.config import ConfigError, validate_config
from prm_lessons.data.sources import file_digests
from prm_lessons.labels.judge import PAPER_TEMPLATE, load_template, render_judge_prompt
from prm_lessons.labels.paper_prompt import words_sha256
from prm_lessons.rules.data import judge_template

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
PROMPT = "I will provide a math problem along with a solution.\nJudge it {ok}.\n{tagged_problem}\n{tagged_response}"
SOURCE = "\\appendix\n\\begin{verbatim}\n" + PROMPT + "\n\\end{verbatim}\n"


def _run(tmp_path, source: Path, **checks):
    out = tmp_path / "resources" / "templates" / "judge_paper_app_c.txt"
    spec = {"url": str(source), "sha256": None, "git_blob_sha1": None, "text_sha256": None, **checks}
    judge_template(inputs={}, outputs={"file": str(out)}, params={"spec": spec}, wildcards={}, threads=1)
    return out


def test_rule_writes_the_template_the_judge_reads(tmp_path):
    src = tmp_path / "e-print.tex"
    src.write_text(SOURCE)
    out = _run(tmp_path, src, text_sha256=words_sha256(PROMPT), **file_digests(src))
    prompt = render_judge_prompt("Q?", ["a", "b"], "paper", load_template([str(out)]))
    assert prompt.startswith("I will provide") and "Judge it {ok}." in prompt
    assert prompt.endswith("<paragraph_2>\nb\n</paragraph_2>")
    assert not list(tmp_path.rglob("*.part"))  # the fetched source is not kept either way


def test_rule_fails_on_a_different_source_or_different_words(tmp_path):
    src = tmp_path / "e-print.tex"
    src.write_text(SOURCE)
    pinned = file_digests(src)
    src.write_text(SOURCE.replace("Judge it", "Rate it"))
    with pytest.raises(ValueError, match="sha256 .* expected"):
        _run(tmp_path, src, **pinned)
    with pytest.raises(ValueError, match="judge.paper_template.text_sha256"):
        _run(tmp_path, src, text_sha256=words_sha256(PROMPT))
    assert not (tmp_path / "resources" / "templates" / "judge_paper_app_c.txt").exists()


def test_unpinned_source_checksum_is_logged_for_pinning(tmp_path, caplog):
    src = tmp_path / "e-print.tex"
    src.write_text(SOURCE)
    with caplog.at_level("WARNING"):
        _run(tmp_path, src, text_sha256=words_sha256(PROMPT))
    assert file_digests(src)["sha256"] in caplog.text and "judge.paper_template.sha256 is null" in caplog.text


def test_judge_rules_read_the_configured_template():
    assert plan.judge_template_input({"template": "project_paraphrase"}) == []
    assert plan.judge_template_input({"template": "project_paraphrase", "template_path": "t.txt"}) == ["t.txt"]
    assert plan.judge_template_input({"template": "paper_app_c"}) == [plan.JUDGE_PAPER_TEMPLATE]
    assert load_template([]) is None and load_template(None) is None


@pytest.mark.parametrize("judge, key, message", [
    ({"template": "paper_app_c", "style": "processbench"}, "judge.template", "style: paper"),
    ({"template": "paper_app_c", "style": "paper", "template_path": "t.txt"}, "judge.template_path", "paraphrase"),
    ({"template": "paper_app_c", "style": "paper", "paper_template": {"text_sha256": None}}, "judge.paper_template",
     "unchecked"),
    ({"template": "app_c"}, "judge.template", ""),
])
def test_bad_judge_template_config_names_the_key(judge, key, message):
    cfg = copy.deepcopy(BASE)
    cfg["judge"] = {**cfg["judge"], **judge}
    with pytest.raises(ConfigError) as exc:
        validate_config(cfg)
    assert f"config error at `{key}`:" in str(exc.value), str(exc.value)
    assert re.search(message, str(exc.value)), str(exc.value)


def test_paper_config_uses_the_papers_prompt_and_the_embedded_one_the_paraphrase():
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())["judge"]
    assert paper["template"] == "paper_app_c" and paper["style"] == "paper"
    assert paper["paper_template"]["url"] == "https://arxiv.org/e-print/2501.07301v2"
    assert re.fullmatch(r"[0-9a-f]{64}", paper["paper_template"]["text_sha256"])
    assert BASE["judge"].get("template", "project_paraphrase") == "project_paraphrase"


def test_rehearsal_stand_in_passes_its_own_checks_and_is_not_the_paper(tmp_path):
    from prm_lessons.rehearsal.run import APP_C_STANDIN, write_app_c_source

    src = write_app_c_source(tmp_path / "app_c.tex")
    overlay = yaml.safe_load((ROOT / "config/rehearsal.yaml").read_text())["judge"]["paper_template"]
    assert overlay["url"] == "data/templates/app_c.tex"
    out = _run(tmp_path, src, text_sha256=overlay["text_sha256"])
    assert words_sha256(APP_C_STANDIN) == overlay["text_sha256"]
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())["judge"]["paper_template"]
    assert overlay["text_sha256"] != paper["text_sha256"]
    assert PAPER_TEMPLATE.split("\n")[0] in out.read_text()  # the project's paraphrase, not the paper's words


def test_schema_default_words_digest_is_the_paper_configs():
    from prm_lessons.config import load_schema

    props = load_schema()["properties"]["judge"]["properties"]["paper_template"]["properties"]
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())["judge"]["paper_template"]
    assert props["text_sha256"]["default"] == paper["text_sha256"]
    assert props["url"]["default"] == paper["url"] and props["sha256"]["default"] is None


COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _fallback(tmp_path, text: str) -> dict:
    """A public copy pinned by commit, as a local path that names the commit (no network in tests)."""
    copy_ = tmp_path / "mirror" / COMMIT / "e-print.tex"
    copy_.parent.mkdir(parents=True)
    copy_.write_text(text)
    return {"url": str(copy_), "commit": COMMIT, "sha256": file_digests(copy_)["sha256"]}


def test_an_unreachable_source_falls_back_to_the_pinned_copy(tmp_path, caplog):
    fb = _fallback(tmp_path, SOURCE)
    with caplog.at_level("WARNING"):
        out = _run(tmp_path, str(tmp_path / "offline" / "e-print"), text_sha256=words_sha256(PROMPT),
                   fallbacks=[{**fb, "url": str(tmp_path / "gone" / COMMIT)}, fb])
    assert "Judge it {{ok}}." in out.read_text()  # the template escapes the prompt's own braces
    assert "could not be fetched" in caplog.text and f"at commit {COMMIT}" in caplog.text


def test_a_fallback_is_checked_by_its_checksum_and_its_commit(tmp_path):
    fb = _fallback(tmp_path, SOURCE)
    offline = str(tmp_path / "offline" / "e-print")
    with pytest.raises(ValueError, match="fallbacks.0.*sha256"):
        _run(tmp_path, offline, fallbacks=[{**fb, "sha256": "0" * 64}])
    with pytest.raises(ValueError, match="does not name its commit"):
        _run(tmp_path, offline, fallbacks=[{**fb, "commit": "f" * 40}])
    with pytest.raises(OSError, match="nor any of its 1 fallbacks"):
        _run(tmp_path, offline, fallbacks=[{**fb, "url": str(tmp_path / "gone" / COMMIT)}])


def test_a_fetched_source_that_fails_its_checks_is_not_replaced_by_a_fallback(tmp_path):
    src = tmp_path / "e-print.tex"
    src.write_text(SOURCE)
    with pytest.raises(ValueError, match="sha256 .* expected"):
        _run(tmp_path, src, sha256="0" * 64, fallbacks=[_fallback(tmp_path, SOURCE)])


def test_config_fallback_must_name_its_commit_in_its_url():
    cfg = copy.deepcopy(BASE)
    fb = {"url": "https://raw.githubusercontent.com/o/r/main/x.tex", "commit": COMMIT, "sha256": "a" * 64}
    cfg.setdefault("judge", {}).setdefault("paper_template", {})["fallbacks"] = [fb]
    with pytest.raises(ConfigError, match="fallbacks.0.url"):
        validate_config(cfg)
    fb["url"] = f"https://raw.githubusercontent.com/o/r/{COMMIT}/x.tex"
    validate_config(cfg)
