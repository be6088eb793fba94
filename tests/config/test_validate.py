"""Config validation: both shipped configs pass; bad configs fail naming the key path."""
import copy
from pathlib import Path

import pytest
import yaml

from prm_lessons.config import ConfigError, deep_update, load_config, model_path, validate_config

ROOT = Path(__file__).resolve().parents[2]


def base():
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def test_embedded_default_is_valid_and_gets_defaults():
    cfg = validate_config(base())
    assert cfg["models"]["smollm2"]["trust_remote_code"] is False
    assert cfg["sampling"]["step_separator"] == "\n\n"
    assert model_path(cfg, "policy") == "resources/models/smollm2"


def test_paper_config_is_valid_layered_on_default():
    # paper.yaml replaces the default (README); layered, the default's bon.policies would merge in first
    cfg = load_config(ROOT / "config/paper.yaml")
    assert cfg["sampling"]["n"] == 8
    assert cfg["sampling"]["temperature"] == 0.7 and cfg["sampling"]["top_p"] == 0.8
    # Hub models load from the directory rule download_model links them into
    assert model_path(cfg, "policy") == "resources/hub/qwen25_math_7b_instruct"
    assert cfg["models"][cfg["roles"]["policy"]]["id"] == "Qwen/Qwen2.5-Math-7B-Instruct"
    assert model_path(cfg, "judge") == "resources/hub/qwen25_72b_instruct"
    paper_benchmarks = {"gsm8k", "math", "minerva_math", "gaokao2023en", "olympiadbench", "college_math", "mmlu_stem"}
    assert paper_benchmarks <= set(cfg["benchmarks"])


@pytest.mark.parametrize("patch, path", [
    ({"sampling": {"n_samplez": 3}}, "sampling.n_samplez"),
    ({"sampling": {"n": "four"}}, "sampling.n"),
    ({"sampling": {"top_p": 1.5}}, "sampling.top_p"),
    ({"models": {"smollm2": {"dtype": "int3"}}}, "models.smollm2.dtype"),
    ({"grading": {"timeout_s": 0}}, "grading.timeout_s"),
    ({"bogus_section": {}}, "bogus_section"),
])
def test_bad_values_name_the_key_path(patch, path):
    cfg = deep_update(base(), patch)
    with pytest.raises(ConfigError, match=f"`{path}`"):
        validate_config(cfg)


def test_missing_required_value_is_named():
    cfg = base()
    del cfg["models"]["smollm2"]["id"]
    with pytest.raises(ConfigError, match=r"`models\.smollm2\.id`: missing"):
        validate_config(cfg)


def test_role_must_name_a_defined_model():
    cfg = copy.deepcopy(base())
    cfg["roles"]["judge"] = "nonexistent"
    with pytest.raises(ConfigError, match=r"`roles\.judge`"):
        validate_config(cfg)


@pytest.mark.parametrize("patch, path", [
    ({"analysis": {"policy": "nope"}}, r"analysis\.policy"),
    ({"analysis": {"second_policy": "smollm2"}}, r"analysis\.second_policy"),  # the primary = analysis.policy
    ({"analysis": {"table10": {"n": 3}}}, r"analysis\.table10\.n"),
    ({"analysis": {"table10": {"benchmarks": ["nope"]}}}, r"analysis\.table10\.benchmarks\.0"),
    ({"analysis": {"chinese_benchmarks": ["cmath"]}}, r"analysis\.chinese_benchmarks\.0"),
])
def test_analysis_policy_and_table_keys_are_checked(patch, path):
    with pytest.raises(ConfigError, match=f"`{path}`"):
        validate_config(deep_update(base(), patch))


def test_artifacts_a_config_cannot_have_are_not_planned():
    from prm_lessons import plan

    emb = validate_config(base())  # make run: one policy, no Best-of-N judge, no search
    s = plan.analysis_settings(emb)
    assert (s["policy"], s["second_policy"], s["n"]) == ("smollm2", None, 4)
    assert s["table10"] == {"n": 2, "benchmarks": ["arith", "chain_sum"]}
    skipped = plan.analysis_skipped(emb)
    assert set(skipped) == {"table8", "table9", "table11", "table12", "table14", "table15", "table16"}
    assert "search.prms is empty" in skipped["table8"] and "no LLM judge" in skipped["table11"]
    every = load_config(ROOT / "config/config.yaml", ROOT / "config/all.yaml")  # make run-all
    assert plan.analysis_settings(every)["second_policy"] == "smollm2_t1"
    assert set(plan.analysis_skipped(every)) == {"table15", "table16"}
    one = base()
    one["bon"]["policies"] = {"smollm2": {"model": "smollm2", "label": "L"}}
    one["bon"]["more_n"] = []
    skipped = plan.analysis_skipped(validate_config(one))
    assert set(skipped) == {"table8", "table9", "table10", "table11", "table12", "table14", "table15", "table16"}
    assert "no second policy" in skipped["table9"] and "bon.more_n is empty" in skipped["table10"]
    paper = load_config(ROOT / "config/paper.yaml")
    assert plan.analysis_skipped(paper) == {}


def test_threshold_protocol_paper_gsm8k_embedded_auto_and_inapplicable_ones_named():
    paper = load_config(ROOT / "config/paper.yaml")
    assert paper["processbench_eval"]["tune_on"] == "gsm8k"  # ProcessBench §4.1, the paper's
    tuned = {n for n, e in paper["prms"]["models"].items() if e.get("threshold") == "tune"}
    assert {"skywork_prm_1_5b", "skywork_prm_7b"} <= tuned
    assert validate_config(base())["processbench_eval"]["tune_on"] == "auto"  # the dev split
    paper_yaml = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    for patch in ({"processbench_eval": {"tune_on": "dev"}},  # no dev split: real ProcessBench
                  {"processbench": {"subsets": ["math", "omnimath"]}}):  # gsm8k without a GSM8K subset
        with pytest.raises(ConfigError, match=r"`processbench_eval\.tune_on`"):
            validate_config(deep_update(copy.deepcopy(paper_yaml), patch))
    with pytest.raises(ConfigError,
                       match=r"`processbench_eval\.tune_on`.*constructed\.subsets lacks \(arith, chain_sum\)"):
        validate_config(deep_update(base(), {"processbench_eval": {"tune_on": "gsm8k"}}))
    assert validate_config(deep_update(base(), {"processbench_eval": {"tune_on": "crossfit"}}))


def test_the_larger_overlay_only_enlarges_the_default():
    """config/larger.yaml (the pre-budget sizes) names only keys the default has, each at least as large
    (a sweep list a superset): a typo or a changed default that made it smaller would go unnoticed."""
    overlay = yaml.safe_load((ROOT / "config/larger.yaml").read_text())
    small = load_config(ROOT / "config/config.yaml")
    large = load_config(ROOT / "config/config.yaml", ROOT / "config/larger.yaml")

    def leaves(node, path=()):
        for key, value in node.items():
            yield from leaves(value, path + (key,)) if isinstance(value, dict) else [(path + (key,), value)]

    grew = 0
    for path, value in leaves(overlay):
        before, after = small, large
        for key in path:
            assert key in before, f"config/larger.yaml sets {'.'.join(path)}, which config/config.yaml lacks"
            before, after = before[key], after[key]
        assert after == value
        if isinstance(value, list):
            assert set(before) <= set(value), path
        else:
            assert value >= before, path
        grew += value != before
    assert grew >= 8
