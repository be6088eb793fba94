"""Replaceable prompt templates: every kind's placeholders checked by one rule (templates.template_problem),
at config validation (before any job, so before a model loads) and where a job reads the file. Templates
are generated: each kind's valid ones, then members of each bad class (a needed placeholder dropped, an
unknown or positional one added, a lone brace)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from prm_lessons.config import ConfigError, validate_config
from prm_lessons.evaluation.verifiers import load_template as load_verifier_template
from prm_lessons.evaluation.verifiers import template_file
from prm_lessons.labels.judge import load_template as load_judge_template
from prm_lessons.templates import TEMPLATE_KINDS, read_template, template_problem

KINDS = sorted(TEMPLATE_KINDS)
PROSE = st.text(alphabet=st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)), max_size=20)


@st.composite
def valid_templates(draw, kind: str):
    allowed, needed = TEMPLATE_KINDS[kind]
    names = [draw(st.sampled_from(group)) for group in needed]
    names += draw(st.lists(st.sampled_from(allowed), max_size=3))
    names = draw(st.permutations(names))
    literal = draw(st.sampled_from(["", "{{", "}}", "{{x}}"]))
    return "".join(draw(PROSE) + "{" + n + "}" for n in names) + literal + draw(PROSE)


@given(data=st.data(), kind=st.sampled_from(KINDS))
def test_valid_templates_of_every_kind_pass(data, kind):
    text = data.draw(valid_templates(kind))
    assert template_problem(text, kind) is None, text


@given(data=st.data(), kind=st.sampled_from(KINDS))
def test_a_template_without_a_needed_placeholder_is_refused(data, kind):
    """No response placeholder: every prompt of the run identical, verdicts that never saw a response."""
    allowed, needed = TEMPLATE_KINDS[kind]
    group = data.draw(st.sampled_from(needed))
    text = data.draw(valid_templates(kind))
    for p in group:
        text = text.replace("{" + p + "}", "")
    assert "no {" in template_problem(text, kind), text


@given(data=st.data(), kind=st.sampled_from(KINDS),
       extra=st.one_of(st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True), st.sampled_from(["", "0", "1"])))
def test_an_unknown_or_positional_placeholder_is_refused(data, kind, extra):
    if extra in TEMPLATE_KINDS[kind][0]:
        return
    text = data.draw(valid_templates(kind)) + "{" + extra + "}"
    assert "unknown placeholder" in template_problem(text, kind), text


@given(data=st.data(), kind=st.sampled_from(KINDS), brace=st.sampled_from(["{", "}", "{x", "x}"]))
def test_a_lone_brace_is_refused(data, kind, brace):
    text = data.draw(valid_templates(kind)) + " " + brace
    assert template_problem(text, kind), text


def test_the_built_in_templates_pass():
    from prm_lessons.labels.judge import PAPER_TEMPLATE, PROCESSBENCH_TEMPLATE

    for text in (PAPER_TEMPLATE, PROCESSBENCH_TEMPLATE):
        assert template_problem(text, "judge") is None
    for mode in ("pointwise", "pairwise"):
        assert load_verifier_template(mode)  # the package's own files


def test_jobs_read_templates_through_the_same_check(tmp_path):
    bad = tmp_path / "t.txt"
    bad.write_text("Judge this: {problem}\n")
    for load in (load_judge_template, lambda p: load_verifier_template("pointwise", p)):
        with pytest.raises(ValueError, match=r"t\.txt: no \{tagged_response\}"):
            load(str(bad))
    with pytest.raises(ValueError, match="unknown placeholder"):
        read_template(_write(tmp_path / "u.txt", "{problem} {tagged_response} {respons}"), "judge")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- at config validation ---------------------------------------------------------------------------------

BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())


# a fixed count (each example validates a whole config, ~0.17 s): 5 keys x 2 defects, each drawn several times
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=32, deadline=None)
@given(data=st.data(), key=st.sampled_from(["judge.template_path", "critics.template_path",
                                            "critics.judges.c.template_path", "bon_judges.pointwise_template",
                                            "bon_judges.pairwise_template"]),
       bad=st.sampled_from(["missing", "unknown"]))
def test_config_validation_refuses_a_bad_template_naming_the_key(tmp_path_factory, data, key, bad):
    kind = {"bon_judges.pointwise_template": "pointwise", "bon_judges.pairwise_template": "pairwise"}.get(key, "judge")
    text = data.draw(valid_templates(kind))
    if bad == "missing":
        for p in TEMPLATE_KINDS[kind][1][0]:
            text = text.replace("{" + p + "}", "")
    else:
        text += "{answer}"
    f = tmp_path_factory.mktemp("tmpl") / "t.txt"
    f.write_text(text)
    cfg = copy.deepcopy(BASE)
    if key == "critics.judges.c.template_path":
        cfg["critics"]["judges"] = {"c": {"model": "smollm2", "template": "project", "template_path": str(f)}}
    else:
        section, leaf = key.split(".")
        cfg.setdefault(section, {})[leaf] = str(f)
        if section == "critics":
            cfg["critics"]["template"] = "project"
    with pytest.raises(ConfigError, match=f"config error at `{key}`: .*t.txt: (no|unknown)"):
        validate_config(cfg)


def test_config_validation_accepts_the_packaged_templates_as_files():
    cfg = copy.deepcopy(BASE)
    cfg.setdefault("bon_judges", {})["pointwise_template"] = str(template_file("pointwise"))
    cfg["bon_judges"]["pairwise_template"] = str(template_file("pairwise"))
    validate_config(cfg)
