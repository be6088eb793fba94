"""prm_lessons.jobs.exit: a finished job leaves without the interpreter's teardown only where nothing is
lost, with its log and streams flushed; with a child process or a worker thread alive it exits normally."""
import subprocess
import sys
import textwrap

from conftest import ROOT

PRELUDE = f"""
import atexit, logging, sys
sys.path.insert(0, {str(ROOT / "src")!r})
from prm_lessons.jobs.exit import end_job
logging.basicConfig(filename=sys.argv[1], level=logging.INFO, format="%(message)s")
atexit.register(lambda: print("ATEXIT", flush=True))
print("buffered, no newline", end="")
logging.info("logged line")
"""


def _run(tmp_path, body: str):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(body))
    log = tmp_path / "job.log"
    out = tmp_path / "stdout.txt"
    with open(out, "w") as fh:  # a file: block-buffered stdout, lost by a bare os._exit
        proc = subprocess.run([sys.executable, str(script), str(log)], stdout=fh, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    return proc, out.read_text(), log.read_text()


def test_end_job_skips_teardown_and_flushes_what_was_written(tmp_path):
    proc, out, log = _run(tmp_path, "end_job()\nprint('NOT REACHED')\n")
    assert proc.returncode == 0, proc.stderr
    assert out == "buffered, no newline"  # flushed; atexit handlers (the teardown) skipped; nothing after it
    assert log == "logged line\n"


def test_end_job_keeps_the_normal_exit_with_a_child_process(tmp_path):
    body = """
    import multiprocessing, time
    if __name__ == "__main__":
        child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(0.5,))
        child.start()
        end_job()
        print(" returned")
    """
    proc, out, _ = _run(tmp_path, body)
    assert proc.returncode == 0, proc.stderr
    assert out == "buffered, no newline returned\nATEXIT\n"  # the normal exit: atexit ran, the child was joined


def test_end_job_keeps_the_normal_exit_with_a_worker_thread(tmp_path):
    body = """
    import threading, time
    threading.Thread(target=time.sleep, args=(0.5,)).start()
    end_job()
    print(" returned")
    """
    proc, out, _ = _run(tmp_path, body)
    assert proc.returncode == 0, proc.stderr
    assert out.endswith(" returned\nATEXIT\n")


def test_run_py_ends_only_a_job_snakemake_started():
    """The stand-in object of the tests (conftest.run_rule_script) must return to the test runner."""
    src = (ROOT / "workflow/scripts/run.py").read_text()
    guard = src.split('if __name__ == "__main__":', 1)[1]
    assert 'type(snakemake).__module__.split(".")[0] == "snakemake"' in guard
    assert guard.index("main()") < guard.index("end_job()")
