"""Shared test helpers: the read-only reference data in ../shared (see ../shared/data/README.md), the
one tiny tokenizer builder, a stand-in for Snakemake's `script:` call, and real Snakemake runs in a scratch
directory holding the converted embedded model. Fake engines and other helpers:
tests/support/ (on sys.path through pyproject's pythonpath; layout: docs/testing.md).

Tests on real data call :func:`shared_data_dir` (or use the ``shared_data`` fixture). Off CI a
missing ../shared skips them; under ``CI=true`` it FAILS them, because CI has ../shared and a silent
skip there would hide that the real-data checks never ran.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PRM_LESSONS_SHARED", ROOT / ".." / "shared"))
FIXTURES = ROOT / "tests" / "support" / "fixtures"  # small input files written for the tests


# Hypothesis example counts: `dev` (the default, make test) few, `ci` (.ci/run) many; HYPOTHESIS_PROFILE picks.
# A test's own @settings(max_examples=...) overrides the profile's count.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # hypothesis is a test extra; tests that use it import it themselves
    pass
else:
    _hypothesis_settings.register_profile("dev", max_examples=25, deadline=None)
    _hypothesis_settings.register_profile("ci", max_examples=200, deadline=None)
    _hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "dev")


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def shared_data_dir(*parts: str) -> Path:
    """``../shared/data/<parts...>`` (a file or directory); skips the test when absent, fails under CI=true."""
    path = SHARED.joinpath("data", *parts)
    if not path.exists():
        msg = f"{path} not found (reference data from ../shared; set PRM_LESSONS_SHARED to its location)"
        if on_ci():
            pytest.fail(f"CI=true: {msg}", pytrace=False)
        pytest.skip(msg)
    return path


@pytest.fixture
def shared_data() -> Path:
    """The ../shared/data directory (skip off CI / fail under CI=true when it is missing)."""
    return shared_data_dir()


CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
TEXTS = ["Janet has 16 eggs. She eats 3 and bakes with 4. How many are left?",
         "Step 1: 16 - 3 = 13. Step 2: 13 - 4 = 9. The answer is 9.",
         "Please reason step by step, and put your final answer within \\boxed{}.",
         "We compute 2 + 3 = 5 and then 5 * 4 = 20, so the total is \\boxed{20}."]
STEP_WORDS = "this step is right. this step is wrong. correct wrong paragraph solution problem"  # training signal
MARKER_WORDS = "+ - + - correct wrong paragraph solution problem"  # the released PRMs' +/- label tokens


def tiny_tokenizer(with_step_token: bool = True, *, words: str = STEP_WORDS, vocab_size: int = 300,
                   bos: bool = False, added: tuple[str, ...] = ()):
    """Byte-level BPE with a ChatML template, trained offline in a second on TEXTS + `words`; `<extra_0>` in
    the vocabulary (Qwen-like) or not (SmolLM2-like), a BOS token `<s>` if `bos`, and `added` tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # lazy: torch-free tests
    from transformers import PreTrainedTokenizerFast

    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    specials = (["<pad>"] + (["<s>"] if bos else []) + ["<|im_start|>", "<|im_end|>"]
                + (["<extra_0>"] if with_step_token else []))
    t.train_from_iterator((TEXTS + [words]) * 3, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", eos_token="<|im_end|>",
                                   **({"bos_token": "<s>"} if bos else {}))
    if added:
        fast.add_tokens(list(added))
    fast.chat_template = CHATML
    return fast


def scoring_tokenizer():
    """The scoring adapters' tokenizer: +/- in the merges, a BOS, `<extra_0>` and Math-Shepherd's step tag ки."""
    return tiny_tokenizer(True, words=MARKER_WORDS, vocab_size=400, bos=True, added=("ки",))


def run_rule_script(log_path, func: str, rule: str, gpu: int = 0) -> None:
    """Run workflow/scripts/run.py as Snakemake's `script:` runs it, with a stand-in `snakemake` object
    (params.func = `func`, the rule's name and gpu resource), restoring the streams it redirects."""
    import logging
    import runpy
    import sys
    from types import SimpleNamespace

    items = SimpleNamespace(items=lambda: {}.items())
    fake = SimpleNamespace(scriptdir=str(ROOT / "workflow/scripts"), log=[str(log_path)],
                           params=SimpleNamespace(items=lambda: {"func": func}.items()),
                           input=items, output=items, wildcards=items, threads=1, rule=rule,
                           resources={"gpu": gpu})
    out, err, handlers = sys.stdout, sys.stderr, logging.root.handlers[:]
    try:
        runpy.run_path(str(ROOT / "workflow/scripts/run.py"), init_globals={"snakemake": fake}, run_name="__main__")
    finally:
        sys.stdout, sys.stderr = out, err
        logging.root.handlers[:] = handlers


@contextlib.contextmanager
def parsed_workflow(configfiles=(), quiet: bool = True):
    """The workflow as Snakemake parses it (rules, params, resources callables), without building a DAG
    or running a job; `configfiles` relative to the repository (none: the embedded default). The rehearsal's
    overlay gets a working directory prepared as prm_lessons.rehearsal.run prepares it (its local copies
    must exist when the workflow is planned)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings

    workdir = Path(tempfile.mkdtemp())
    if "config/rehearsal.yaml" in map(str, configfiles):
        from prm_lessons.rehearsal.run import prepare_work  # lazy: only the rehearsal overlay needs it

        prepare_work(workdir, shared_data_dir().parent)
    with SnakemakeApi(OutputSettings(quiet=quiet)) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=4), storage_settings=StorageSettings(),
                          config_settings=ConfigSettings(configfiles=[ROOT / c for c in configfiles]),
                          snakefile=ROOT / "Snakefile", workdir=workdir)
        yield wf._workflow  # the parsed rules (snakemake is pinned in pyproject.toml)


@pytest.fixture(scope="session")
def embedded_plan():
    """The embedded default's dry run (`snakemake -n --forceall --cores 2`), parsed once a session
    (tests/support/dag.py)."""
    import dag

    return dag.plan(dag.EMBEDDED)


@pytest.fixture(scope="session")
def all_plan():
    """`make run-all`'s dry run (config/config.yaml + config/all.yaml), parsed once a session (tests/dag.py)."""
    import dag

    return dag.plan(dag.ALL)


@pytest.fixture(scope="session")
def paper_plan():
    """config/paper.yaml's dry run as a cluster submits it (`--profile slurm --cores 64`), parsed once a session."""
    import dag

    return dag.plan(dag.PAPER, profile="slurm", cores=64)


# make run's DAG shrunk (config/test.yaml over the embedded default), as the slow workflow tests run it
TEST_CONFIG = ("config/config.yaml", "config/test.yaml")
SMK_ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def smk_run(*args: str, timeout: int = 600, check: bool = True) -> subprocess.CompletedProcess:
    """`snakemake *args` as a subprocess from the repository root (as users run it), offline; a failure
    (with `check`) raises an AssertionError holding the tail of its output."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=ROOT, env=SMK_ENV, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture(scope="session")
def embedded_model_dir(tmp_path_factory) -> Path:
    """The converted embedded model, once a session: the checkout's when `make run` made one, else
    converted (rule embedded_model, 20-85 s) in a scratch directory."""
    model = ROOT / "resources/models/smollm2"
    if (model / "model.safetensors").exists():
        return model
    wd = tmp_path_factory.mktemp("embedded_model")
    smk_run("resources/models/smollm2", "--cores", "1", "--directory", str(wd),
            "--configfile", *(str(ROOT / c) for c in TEST_CONFIG), timeout=900)
    return wd / "resources/models/smollm2"


def embedded_run_dir(tmp_path: Path, model: Path, *, configfiles: tuple[str, ...] = ()) -> Path:
    """A scratch run directory holding the converted embedded model: hard links where the file system
    allows (rule embedded_model converts it again there: the run directory's code fingerprints are newer).
    With `configfiles` (absolute paths), a copy that `snakemake --touch` marks up to date for them, so no
    job converts it again; touching a hard link would date the checkout's own model, and so every result
    of the checkout made from it."""
    wd = tmp_path / "run"
    (wd / "resources/models").mkdir(parents=True)
    dest = wd / "resources/models/smollm2"
    if configfiles:
        shutil.copytree(model, dest)
        smk_run("resources/models/smollm2", "--touch", "--cores", "1", "--directory", str(wd),
                "--configfile", *configfiles)
        return wd
    try:
        shutil.copytree(model, dest, copy_function=os.link)
    except OSError:  # another file system
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(model, dest)
    return wd
