"""docs/evaluate-your-prm.md on a CPU install: a PRM entry added to the embedded default runs on CPU
unless it asks for GPUs, a `source: local` path that does not exist fails validation naming the key, and
config errors suggest the nearest key and name the file that set it."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from prm_lessons import plan
from prm_lessons.config import ConfigError, load_config, validate_config
from prm_lessons.config.derive import cpu_run

ROOT = Path(__file__).resolve().parents[2]
SHA = "0123456789abcdef0123456789abcdef01234567"


def base() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text())


def with_prm(cfg: dict, model: dict) -> dict:
    cfg = copy.deepcopy(cfg)
    cfg["models"]["my_prm"] = model
    cfg["prms"]["models"] = {"my_prm": {"adapter": "token_classification", "model": "my_prm", "label": "My-PRM"}}
    return cfg


HUB = {"source": "hub", "id": "your-org/your-trl-prm", "revision": SHA, "dtype": "bfloat16"}


def test_a_hub_prm_in_the_embedded_default_asks_for_no_gpu():
    cfg = validate_config(with_prm(base(), HUB))
    assert cpu_run(cfg) and cfg["models"]["my_prm"]["gpus"] == 0
    specs = plan.resolve_prm_specs(cfg)
    assert plan.scoring_gpus(cfg, specs, "my_prm") == 0
    assert cfg["models"]["smollm2"].get("gpus") is None  # the embedded entry is left as given: no job's params change


def test_a_run_that_asks_for_gpus_keeps_the_tensor_parallel_default():
    cfg = with_prm(base(), HUB)
    cfg["training"]["gpus"] = 1
    out = validate_config(cfg)
    assert not cpu_run(out) and out["models"]["my_prm"]["gpus"] is None
    assert plan.scoring_gpus(out, plan.resolve_prm_specs(out), "my_prm") == 1
    cfg["training"]["gpus"] = 0
    cfg["models"]["other"] = {"source": "hub", "id": "org/other", "revision": SHA, "gpus": 2}
    assert validate_config(cfg)["models"]["my_prm"]["gpus"] is None  # another entry asks for GPUs


def test_an_explicit_gpus_is_kept():
    cfg = validate_config(with_prm(base(), {**HUB, "gpus": 1}))
    assert cfg["models"]["my_prm"]["gpus"] == 1


def test_paper_models_keep_their_gpu_default():
    cfg = load_config(ROOT / "config/paper.yaml")
    assert not cpu_run(cfg)
    assert all(e.get("gpus") is None for e in cfg["models"].values())


def test_a_local_model_that_does_not_exist_fails_naming_its_id(tmp_path):
    missing = tmp_path / "my-trl-prn"
    with pytest.raises(ConfigError, match=r"`models\.my_prm\.id`: local model directory .*my-trl-prn.* does not "
                                          r"exist \(relative to the working directory"):
        validate_config(with_prm(base(), {"source": "local", "id": str(missing)}))
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"`models\.my_prm\.id`: .* is not a directory"):
        validate_config(with_prm(base(), {"source": "local", "id": str(tmp_path / "file")}))
    with pytest.raises(ConfigError, match=r"a Hub id\? set `source: hub`"):
        validate_config(with_prm(base(), {"source": "local", "id": "your-org/your-trl-prm"}))
    model = tmp_path / "my-trl-prm"
    model.mkdir()
    cfg = validate_config(with_prm(base(), {"source": "local", "id": str(model)}))
    assert cfg["models"]["my_prm"]["gpus"] == 0


def test_a_relative_local_path_is_read_from_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "prm").mkdir()
    monkeypatch.chdir(tmp_path)
    validate_config(with_prm(base(), {"source": "local", "id": "prm"}))


def test_an_unused_local_model_is_not_checked(tmp_path):
    cfg = base()
    cfg["models"]["spare"] = {"source": "local", "id": str(tmp_path / "absent")}
    validate_config(cfg)


@pytest.mark.parametrize("patch, key, nearest", [
    ({"training": {"learning_rat": 0.1}}, "training.learning_rat", "learning_rate"),
    ({"sampling": {"temprature": 0.5}}, "sampling.temprature", "temperature"),
    ({"models": {"smollm2": {"gpu": 0}}}, "models.smollm2.gpu", "gpus"),
])
def test_an_unknown_key_suggests_the_nearest(patch, key, nearest):
    cfg = base()
    for section, value in patch.items():
        for k, v in value.items():
            if isinstance(v, dict):
                cfg[section][k].update(v)
            else:
                cfg[section][k] = v
    with pytest.raises(ConfigError) as e:
        validate_config(cfg)
    assert f"`{key}`: unknown key; did you mean `{nearest}`? (allowed:" in str(e.value)


def test_an_unknown_key_far_from_any_suggests_nothing():
    cfg = base()
    cfg["sampling"]["zzzzzz"] = 1
    with pytest.raises(ConfigError) as e:
        validate_config(cfg)
    assert "did you mean" not in str(e.value)


def test_an_unknown_adapter_option_suggests_the_nearest(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    cfg = with_prm(base(), {"source": "local", "id": str(model)})
    cfg["prms"]["models"]["my_prm"]["params"] = {"step_separater": "\n"}
    with pytest.raises(ConfigError, match=r"`prms\.models\.my_prm\.params\.step_separater`: unknown key; "
                                          r"did you mean `step_separator`\?"):
        validate_config(cfg)


def test_an_error_names_the_file_that_set_the_key(tmp_path):
    overlay = tmp_path / "my_prm.yaml"
    overlay.write_text(yaml.safe_dump({"models": {"my_prm": {**HUB, "gpu": 0}},
                                       "prms": {"models": {"my_prm": {"adapter": "token_classification",
                                                                      "model": "my_prm"}}}}))
    with pytest.raises(ConfigError) as e:
        load_config(ROOT / "config/config.yaml", overlay)
    assert f"{overlay}: config error at `models.my_prm.gpu`: unknown key; did you mean `gpus`?" in str(e.value)
    # a missing key: the file that set its deepest given parent
    overlay.write_text(yaml.safe_dump({"models": {"my_prm": {"source": "hub"}}}))
    with pytest.raises(ConfigError, match=rf"{overlay}: config error at `models\.my_prm\.id`: missing required value"):
        load_config(ROOT / "config/config.yaml", overlay)
    # a key only the base file sets: the base file; both set it: the later one (the merge keeps it)
    first = tmp_path / "first.yaml"
    cfg = base()
    cfg["sampling"]["top_p"] = 1.5
    first.write_text(yaml.safe_dump(cfg))
    overlay.write_text(yaml.safe_dump({"sampling": {"n": 2}}))
    with pytest.raises(ConfigError, match=rf"{first}: config error at `sampling\.top_p`"):
        load_config(first, overlay)
    overlay.write_text(yaml.safe_dump({"sampling": {"top_p": 2}}))
    with pytest.raises(ConfigError, match=rf"{overlay}: config error at `sampling\.top_p`"):
        load_config(first, overlay)
