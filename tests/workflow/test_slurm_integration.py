"""The workflow through a real SLURM cluster with the project's profile (`snakemake --profile slurm`).

Runs .ci/slurm_integration.sh against a controller that is already up (a dev machine or cluster login
node); skipped with a message otherwise. CI starts its own single-node cluster: `.ci/run` calls the
script directly (it installs slurm-wlm + munge, starts munged/slurmctld/slurmd, runs, stops them).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "slurm_integration.sh"


def _controller_up() -> bool:
    if not (shutil.which("sbatch") and shutil.which("scontrol")):
        return False
    try:
        out = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "is UP" in out


pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not _controller_up(), reason="no SLURM controller running here (sbatch + `scontrol "
                       "ping`); CI runs .ci/slurm_integration.sh with its own single-node cluster"),
]


def test_training_jobs_run_through_sbatch(tmp_path):
    env = {**os.environ, "SLURM_CI_REUSE": "1", "SLURM_CI_WORKDIR": str(tmp_path)}
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert len(summary["job_ids"]) >= 2
    assert all(state == "COMPLETED" for state, _ in summary["states"].values())
    # each PRM was trained inside its own submitted job (SLURM_JOB_ID seen by the training process)
    assert set(summary["trained_in_job"].values()) <= set(summary["job_ids"])
    assert len(set(summary["trained_in_job"].values())) == 2
    for variant in ("ci_hard", "ci_soft"):
        assert (tmp_path / "results" / "prms" / variant / "prm.json").exists()
