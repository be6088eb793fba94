"""The resolved config (every default filled, every derived value set) of each combination of config files
the Makefile, `.ci/run`, the tests and the docs use, pinned byte for byte: a change to how the config is
declared, defaulted or checked must not change what any finished run's jobs were given (their params),
or every one of them reruns. Regenerate on purpose only: `PRM_UPDATE_GOLDEN=1 pytest
tests/config/test_validate_golden.py`."""
import json
import os

import pytest

from config_combos import COMBOS, GOLDEN, ROOT
from prm_lessons.config import load_config


def resolved(files: list[str]) -> str:
    return json.dumps(load_config(*(ROOT / "config" / f for f in files)), sort_keys=True, indent=1) + "\n"


@pytest.mark.parametrize("name", sorted(COMBOS))
def test_resolved_config_is_pinned(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # template and data paths in the configs are relative to the checkout
    text = resolved(COMBOS[name])
    path = GOLDEN / f"{name}.json"
    if os.environ.get("PRM_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.is_file(), f"no golden file {path.name}: run with PRM_UPDATE_GOLDEN=1 once, on purpose"
    assert text == path.read_text(), f"{'+'.join(COMBOS[name])}: the resolved config changed"


def test_every_shipped_config_file_is_pinned():
    """A new config file joins the golden set (or this list) when it is added."""
    used = {f for files in COMBOS.values() for f in files}
    shipped = {str(p.relative_to(ROOT / "config")) for p in (ROOT / "config").rglob("*.yaml")}
    assert shipped <= used, f"config files without a golden resolved config: {sorted(shipped - used)}"
