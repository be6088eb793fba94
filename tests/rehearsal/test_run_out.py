"""The rehearsal's folders are its own: `python -m prm_lessons.rehearsal.run --out DIR` wipes DIR on a fresh
run and `python -m prm_lessons.rehearsal.hub_cache --hf-home DIR` replaces snapshots in it, so a folder that
holds files these tools did not make (the checkout, `.`, a real Hugging Face cache, any user folder) is
refused in one line with exit status 2 before anything is written or removed; a new, empty, marked or
earlier-made folder is taken."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from prm_lessons.rehearsal import hub_cache, run  # noqa: E402
from prm_lessons.rehearsal.hub_cache import OWN_MARK, claim_dir  # noqa: E402


def _tree(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def _user_folders(tmp: Path) -> dict:
    """Folders holding a user's files, by kind."""
    out = {}
    d = tmp / "user"
    d.mkdir()
    (d / "thesis.tex").write_text("mine")
    out["a user folder"] = d
    c = tmp / "checkout"
    (c / "src").mkdir(parents=True)
    (c / "Snakefile").write_text("rule all:\n")
    out["a checkout"] = c
    hf = tmp / "hf"
    (hf / "hub" / "models--org--name" / "snapshots" / "abc").mkdir(parents=True)
    (hf / "hub" / "models--org--name" / "snapshots" / "abc" / "config.json").write_text("{}")
    out["a real HF cache"] = hf
    h = tmp / "hidden"
    h.mkdir()
    (h / ".env").write_text("KEY=1")
    out["only a hidden file"] = h
    w = tmp / "half"
    (w / "work").mkdir(parents=True)  # one of the two folders an earlier rehearsal made: not enough
    out["one of work/hf-home"] = w
    return out


KINDS = ["a user folder", "a checkout", "a real HF cache", "only a hidden file", "one of work/hf-home"]


def _cli(main, argv) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


def _shared(root: Path, skip: str | None = None) -> Path:
    """A shared data directory with (empty stand-ins of) every file the rehearsal reads, but `skip`."""
    for rel in run.needed_shared_files():
        if rel != skip:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("")
    (root / "data").mkdir(parents=True, exist_ok=True)
    return root


def test_an_explicit_shared_directory_is_used_or_refused_never_passed_over(tmp_path, monkeypatch):
    """--shared or PRM_SHARED that does not exist or lacks a file the rehearsal reads fails at once naming
    it (and the file), even where ../shared would do."""
    monkeypatch.setattr(run, "REPO", _shared(tmp_path / "shared").parent / "checkout")  # ../shared: complete
    monkeypatch.delenv("PRM_SHARED", raising=False)
    assert run.find_shared() == (tmp_path / "shared").resolve()
    typo = tmp_path / "typo-shraed"
    with pytest.raises(SystemExit, match=f"--shared {typo}: no such directory"):
        run.find_shared(str(typo))
    monkeypatch.setenv("PRM_SHARED", str(typo))
    with pytest.raises(SystemExit, match=f"PRM_SHARED={typo}: no such directory"):
        run.find_shared()
    half = _shared(tmp_path / "half", skip="data/processbench/math.json")
    monkeypatch.setenv("PRM_SHARED", str(half))
    with pytest.raises(SystemExit, match=f"PRM_SHARED={half}: lacks 1 file.*data/processbench/math.json"):
        run.find_shared()
    with pytest.raises(SystemExit, match=f"--shared {half}: lacks"):  # the flag wins over the variable
        run.find_shared(str(half))
    assert run.find_shared(str(tmp_path / "shared")) == (tmp_path / "shared").resolve()
    assert "data/processbench/omnimath.json" in run.needed_shared_files()


@pytest.mark.parametrize("kind", KINDS)
def test_rehearsal_out_of_the_user_is_refused_untouched(tmp_path, kind):
    folder = _user_folders(tmp_path)[kind]
    shared = _shared(tmp_path / "shared")
    before = _tree(tmp_path)
    code, err = _cli(run.main, ["--out", str(folder), "--shared", str(shared)])
    assert code == 2 and len(err.splitlines()) == 1 and f"--out {folder}" in err, err
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("kind", KINDS)
def test_hub_cache_hf_home_of_the_user_is_refused_untouched(tmp_path, kind):
    folder = _user_folders(tmp_path)[kind]
    config = tmp_path / "paper.yaml"
    config.write_text("models: {}\n")
    before = _tree(tmp_path)
    code, err = _cli(hub_cache.main, ["--config", str(config), "--hf-home", str(folder)])
    assert code == 2 and len(err.splitlines()) == 1 and f"--hf-home {folder}" in err, err
    assert _tree(tmp_path) == before


def test_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        claim_dir(tmp_path / "f", "--out")


@pytest.mark.parametrize("state", ["new", "empty", "marked", "earlier rehearsal"])
def test_own_folders_are_taken(tmp_path, state):
    d = tmp_path / "r"
    if state != "new":
        d.mkdir()
    if state == "marked":
        (d / OWN_MARK).touch()
        (d / "work").mkdir()
    if state == "earlier rehearsal":
        (d / "work").mkdir()
        (d / "hf-home").mkdir()
    assert claim_dir(d, "--out", made_by_us=("work", "hf-home")) == d and (d / OWN_MARK).exists()


def test_the_plan_is_the_job_table_the_run_starts_with():
    """One Snakemake run, no separate dry run: plan.txt is the head of its output up to the end of the first
    job table, which the report reads as the plan (a job list or a later table is not part of it)."""
    from prm_lessons.rehearsal.report import parse_job_table

    output = ("Building DAG of jobs...\nJob stats:\njob       count\n------  -------\nsample        3\n"
              "train_prm     1\ntotal         4\n\nrule sample:\n    jobid: 1\n"
              "Job stats:\njob       count\n------  -------\nsample        9\ntotal         9\n\n")
    plan = run.plan_text(output)
    assert parse_job_table(plan) == {"sample": 3, "train_prm": 1}
    assert "rule sample:" not in plan
    assert run.plan_text("Nothing to be done.\n") == "Nothing to be done.\n"
