"""The files generated from the config models are committed as generated (regenerate: `python
tools/docs.py write`), every key the reference lists is a key of the models, and the config guide
(config/README.md) and the per-key notes (docs/config-notes.md) name only keys that exist."""
import re
from pathlib import Path

import pytest

from prm_lessons.config.docs import GENERATED, key_exists, model_keys, reference_markdown

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("rel", sorted(GENERATED))
def test_generated_files_are_up_to_date(rel):
    assert (ROOT / rel).read_text(encoding="utf-8") == GENERATED[rel](), (
        f"{rel} is stale: run `python tools/docs.py write`")


def test_every_key_of_the_reference_is_a_key_of_the_models():
    rows = re.findall(r"^#+ `([^`]+)`|^\| `([a-z_0-9]+)` \|", reference_markdown(), re.M)
    section, keys = "", []
    for heading, key in rows:
        if heading:
            section = heading
        elif section:
            keys.append(f"{section}.{key}")
    assert keys and set(keys) <= set(model_keys())
    for key in keys:
        assert key_exists(re.sub(r"\[\]", ".0", key.replace("<name>", "x").replace("<key>", "x"))), key


# a backticked dotted path whose first part is a section: `sampling.n`, `bon.more_n`, `prms.models.<name>.adapter`
KEY_RE = re.compile(r"`([a-z_]+(?:\.[A-Za-z0-9_<>*-]+)+)`")


def test_the_config_guide_names_only_keys_that_exist():
    from prm_lessons.config import Config

    text = "".join((ROOT / rel).read_text(encoding="utf-8") for rel in ("config/README.md", "docs/config-notes.md"))
    paths = [p for p in KEY_RE.findall(text) if p.split(".")[0] in Config.model_fields
             and not re.search(r"\.(yaml|csv|smk|json|md|py|parquet)$", p)]
    assert paths, "the guide names no key paths"
    unknown = [p for p in paths if not key_exists(p)]
    assert not unknown, f"config/README.md or docs/config-notes.md name keys the models do not have: {unknown}"


@pytest.mark.parametrize("path", ["sampling.n", "models.smollm2.dtype", "bon.more_n.0.n",
                                  "prms.models.x.params.step_tag", "benchmarks.math.fields.answer",
                                  "trainsets.variants.mc_hard.trl.path"])
def test_key_exists_reads_maps_lists_and_unions(path):
    assert key_exists(path)


@pytest.mark.parametrize("path", ["sampling.n_samplez", "models.smollm2.dtypes", "bon.more_n.0.nn", "nosuch.key"])
def test_key_exists_refuses_unknown_keys(path):
    assert not key_exists(path)
