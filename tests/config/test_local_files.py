"""The local files a config reads (prm_lessons.config.local_files) are found wherever the schema lets a config
name one: the url and `source: local` path keys are enumerated from the schema itself, each is set to a plain
path in a valid config, and the check must pass while the file is there and fail naming the key once it is
gone. A url key added to the schema fails here until a case sets it. The workflow runs the check before any
job (a real dry run below)."""
from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

import pytest
import yaml

import dag
from prm_lessons.config import ConfigError, check_local_files, load_schema, local_files, validate_config

ROOT = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((ROOT / "config/config.yaml").read_text())
SHA = "0" * 64


def _schema_keys(node, path: str = "") -> set[str]:
    """Schema paths (`*`: any name or index) of every `url` and of every `path` beside a `source` that
    can be `local`."""
    found: set[str] = set()
    if not isinstance(node, dict):
        return found
    for alt in node.get("anyOf", []) + node.get("oneOf", []) + node.get("allOf", []):
        found |= _schema_keys(alt, path)
    props = node.get("properties", {})
    for k, v in props.items():
        if k == "url" or (k == "path" and "local" in str(props.get("source", {}).get("enum", ""))):
            found.add(f"{path}.{k}".lstrip(".").replace("#", "*"))
        found |= _schema_keys(v, f"{path}.{k}")
    for sub in [node.get("additionalProperties")] + list(node.get("patternProperties", {}).values()):
        found |= _schema_keys(sub, f"{path}.*")
    if isinstance(node.get("items"), dict):
        found |= _schema_keys(node["items"], f"{path}.#")
    return found


def _ds(**kw) -> dict:
    return {"fields": {"question": "question", "answer": "answer"}, **kw}


# schema path -> (config edits: dotted key -> value, with F for the local file; the key local_files reports)
F = "copies/f.jsonl"
# where a dataset entry (benchmarks' kind) can stand, by name: each gets a url, a local path and a few-shot url
DATASET_MAPS = {"benchmarks": "arith", "problems": "train", "audit.problems": "audit_arith",
                "human.construction.problems": "extra", "processbench.constructed.subsets": "extra",
                "processbench.constructed.dev.subsets": "extra"}
CASES = {}
for where, name in DATASET_MAPS.items():
    entry = f"{where}.{name}"
    CASES[f"{where}.*.url"] = ({entry: _ds(source="url", url=F)}, f"{entry}.url")
    CASES[f"{where}.*.path"] = ({entry: _ds(source="local", path=F)}, f"{entry}.path")
    CASES[f"{where}.*.prompt.fewshot.url"] = ({entry: _ds(source="local", path=F, prompt={
        "fewshot": {"url": "copies/f.py"}})}, f"{entry}.prompt.fewshot.url")
CASES.update({
    "problems.*.parts.*.path": ({"problems.train": {"source": "mix", "parts": {"p1": _ds(source="local", path=F)}}},
                                "problems.train.parts.p1.path"),
    "processbench.url": ({"processbench": {"source": "url", "url": "copies/{subset}.json", "subsets": ["gsm8k"]}},
                         "processbench.url"),
    "processbench.path": ({"processbench": {"source": "local", "path": "copies"}}, "processbench.path"),
    "prmbench.url": ({"prmbench": {"enabled": True, "source": "url", "url": F}}, "prmbench.url"),
    "prmbench.path": ({"prmbench": {"enabled": True, "source": "local", "path": F}}, "prmbench.path"),
    "critics.official_template.url": ({"critics.official_template": {"url": "copies/t.txt"}},
                                      "critics.official_template.url"),
    "judge.paper_template.url": ({"judge.paper_template": {"url": "copies/e.tex", "text_sha256": SHA}},
                                 "judge.paper_template.url"),
    "judge.paper_template.fallbacks.*.url": (
        {"judge.paper_template": {"url": "https://example.org/e", "text_sha256": SHA, "fallbacks": [
            {"url": f"copies/{'1' * 40}/e.tex", "commit": "1" * 40, "sha256": SHA}]}},
        "judge.paper_template.fallbacks.0.url"),
    "human.prm800k.path": ({"human.prm800k": {"source": "local", "path": "copies"}}, "human.prm800k.path"),
    "math_shepherd.path": ({"math_shepherd": {"source": "local", "path": F}}, "math_shepherd.path"),
    "trainsets.variants.*.trl.path": ({"trainsets.variants.from_trl": {"source": "trl", "trl": {
        "source": "local", "path": F}}}, "trainsets.variants.from_trl.trl.path"),
})


def _config(edits: dict) -> dict:
    cfg = copy.deepcopy(BASE)
    for dotted, value in edits.items():
        *parents, last = dotted.split(".")
        node = cfg
        for k in parents:
            node = node.setdefault(k, {})
        node[last] = copy.deepcopy(value)
    return validate_config(cfg)


def _files(key: str, cfg: dict) -> list[str]:
    return [p for k, p in local_files(cfg) if k == key]


def test_every_url_and_local_path_key_of_the_schema_has_a_case():
    # a mix's parts are dataset entries: a recursive reference, which the inlined schema leaves out
    assert _schema_keys(load_schema()) | {"problems.*.parts.*.path"} == set(CASES)


@pytest.mark.parametrize("schema_key", sorted(CASES))
def test_each_local_file_key_is_checked(tmp_path, schema_key):
    edits, key = CASES[schema_key]
    cfg = _config(edits)
    files = _files(key, cfg)
    assert files, sorted(local_files(cfg))
    for other, f in local_files(cfg):  # the entry's own file (a few-shot url's dataset) is there
        if other != key:
            _touch(tmp_path / f)
    with pytest.raises(ConfigError) as exc:
        check_local_files(cfg, tmp_path)
    assert f"`{key}`" in str(exc.value) and files[0] in str(exc.value)
    for f in files:
        _touch(tmp_path / f)
    check_local_files(cfg, tmp_path)


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("x")


def test_a_subset_url_is_checked_per_subset(tmp_path):
    cfg = _config({"processbench": {"source": "url", "url": "copies/{subset}.json", "subsets": ["gsm8k", "math"]}})
    (tmp_path / "copies").mkdir()
    (tmp_path / "copies/gsm8k.json").write_text("[]")
    with pytest.raises(ConfigError, match=r"`processbench\.url`.*copies/math\.json"):
        check_local_files(cfg, tmp_path)


def test_what_reads_nothing_is_not_checked():
    off = _config({"benchmarks.b2": _ds(source="url", url=F, enabled=False)})
    assert not [k for k, _ in local_files(off) if k.startswith("benchmarks.b2")]
    https = _config({"benchmarks.arith": _ds(source="url", url="https://example.org/x.jsonl", sha256=SHA)})
    assert not [k for k, _ in local_files(https) if k.startswith("benchmarks.arith")]
    with_fallbacks = _config({
        "judge.paper_template": {"url": "copies/gone.tex", "text_sha256": SHA, "fallbacks": [
            {"url": f"https://example.org/{'1' * 40}/e", "commit": "1" * 40, "sha256": SHA}]}})
    assert "judge.paper_template.url" not in {k for k, _ in local_files(with_fallbacks)}


def test_a_file_url_names_its_plain_path():
    cfg = copy.deepcopy(BASE)
    cfg["benchmarks"]["gsm8k"] = _ds(source="url", url="file:///srv/copies/gsm8k.jsonl")
    with pytest.raises(ConfigError, match=r"benchmarks\.gsm8k\.url.*file:// URL is not read here.*"
                                          r"plain path \(/srv/copies/gsm8k\.jsonl\)"):
        validate_config(cfg)


def test_the_workflow_checks_before_any_job(tmp_path):
    overlay = tmp_path / "air-gapped.yaml"
    overlay.write_text(yaml.safe_dump({"benchmarks": {"b2": _ds(source="url", url=str(tmp_path / "gone.jsonl"))}}))
    run = subprocess.run([*dag.SNAKEMAKE, "-n", "--cores", "1", "--configfile", str(ROOT / "config/config.yaml"),
                          str(overlay)], cwd=ROOT, env=dag.ENV, capture_output=True, text=True, timeout=900)
    assert run.returncode != 0
    text = re.sub(r"\s+", " ", run.stdout + run.stderr)
    assert "benchmarks.b2.url" in text and "gone.jsonl" in text and "no such file" in text, text[-2000:]
