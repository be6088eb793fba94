"""The key order of every resolved config is pinned too (tests/config/test_validate_golden.py compares sorted
keys): Snakemake compares a job's params by their repr, so a config dict whose keys come in another order
reruns every job that takes it. The rule (prm_lessons.config.order): the keys the user wrote first, in the
order written, then the defaults in the models' order. The digests were taken when the order was checked
equal to the JSON Schema validator's (commit c9b5c83). Regenerate on purpose only:
`PRM_UPDATE_GOLDEN=1 pytest tests/config/test_order.py`."""
import hashlib
import json
import os

import pytest

from config_combos import COMBOS, GOLDEN, ROOT
from prm_lessons.config import load_config, validate_config

ORDER = GOLDEN.parent / "config-order.json"


def _digest(files: list[str]) -> str:
    text = json.dumps(load_config(*(ROOT / "config" / f for f in files)))  # no sort_keys: the order counts
    return hashlib.sha256(text.encode()).hexdigest()


def test_key_order_of_every_resolved_config_is_pinned(monkeypatch):
    monkeypatch.chdir(ROOT)
    got = {name: _digest(files) for name, files in sorted(COMBOS.items())}
    if os.environ.get("PRM_UPDATE_GOLDEN") == "1":
        ORDER.write_text(json.dumps(got, indent=1) + "\n")
    assert got == json.loads(ORDER.read_text())


def test_written_keys_come_first_then_defaults_in_model_order():
    cfg = yaml_config()
    cfg["sampling"] = {"top_p": 0.9, "n": 2, "max_tokens": 512}
    out = validate_config(cfg)
    keys = list(out["sampling"])
    assert keys[:3] == ["top_p", "n", "max_tokens"]
    from prm_lessons.config.model_run import Sampling
    rest = [k for k in Sampling.model_fields if k not in ("top_p", "n", "max_tokens")]
    assert keys[3:] == rest


def yaml_config() -> dict:
    import yaml
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


@pytest.mark.parametrize("key", ["run", "models", "sampling"])
def test_top_level_sections_keep_the_files_order(key):
    written = list(yaml_config())
    out = list(validate_config(yaml_config()))
    assert out[:len(written)] == written and key in out
