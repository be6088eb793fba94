"""hub.upload (prm_lessons.plan.publish): off by default, and when on, a repository id per trained variant;
the config errors name the key. The DAG: tests/workflow/test_upload_dag.py; the upload itself (never
against the Hub): tests/training/test_publish_upload.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from prm_lessons import plan
from prm_lessons.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]


def _config(upload: dict | None = None, **extra) -> dict:
    over = {"hub": {"upload": upload}} if upload is not None else {}
    over.update(extra)
    return load_config(ROOT / "config" / "config.yaml", overrides=over)


def test_off_by_default():
    cfg = _config()
    assert cfg["hub"]["upload"] == {"enabled": False, "repo_prefix": None, "private": True, "variants": None}
    assert plan.upload_repos(cfg) == {}


def test_on_one_repo_per_variant_and_the_evaluation_its_card_reports():
    cfg = _config({"enabled": True, "repo_prefix": "my-org/prm-lessons-"})
    repos = plan.upload_repos(cfg)
    assert set(repos) == set(plan.variants(cfg)) and repos
    v = next(iter(repos))
    assert repos[v] == f"my-org/prm-lessons-{v}"
    assert plan.upload_evaluation(cfg, v) == {"processbench": f"results/metrics/processbench/{v}.json",
                                              "bon": f"results/metrics/bon/{v}.json"}
    assert plan.upload_evaluation(_config({"enabled": True, "repo_prefix": "o/"}, prms={"include_trained": False}),
                                  v) == {}
    assert set(plan.upload_repos(_config({"enabled": True, "repo_prefix": "o/", "variants": [v]}))) == {v}


@pytest.mark.parametrize("upload,needle", [
    ({"enabled": True}, "config error at `hub.upload.repo_prefix`: missing required value (with `enabled: True`)"),
    ({"enabled": True, "repo_prefix": None},
     "`hub.upload.repo_prefix`: None is not of type 'string' (with `enabled: True`)"),
    ({"enabled": True, "repo_prefix": "no-org-"}, "config error at `hub.upload.repo_prefix`"),
    ({"enabled": True, "repo_prefix": "org--x/"}, "config error at `hub.upload.repo_prefix`"),
    ({"enabled": "yes"}, "config error at `hub.upload.enabled`"),
    ({"enable": True}, "config error at `hub.upload.enable`: unknown key"),
    ({"enabled": True, "repo_prefix": "o/", "variants": ["a.b"]}, "config error at `hub.upload.variants.0`"),
])
def test_bad_settings_name_the_key(upload, needle):
    with pytest.raises(ConfigError) as e:
        _config(upload)
    assert needle in str(e.value)


def test_unknown_variant_or_overlong_repo_id_is_a_config_error():
    with pytest.raises(ValueError, match=r"`hub.upload.variants`: 'nope' is not a training-set variant"):
        plan.upload_repos(_config({"enabled": True, "repo_prefix": "o/", "variants": ["nope"]}))
    with pytest.raises(ValueError, match=r"`hub.upload.repo_prefix`: .* at most 96"):
        plan.upload_repos(_config({"enabled": True, "repo_prefix": "o/" + "x" * 95}))
