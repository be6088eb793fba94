"""Answer extraction (Qwen2.5-Math harness convention) and grading (math-verify, or the harness's own
``math_equal``: ``grading.grader``) under a hard timeout.

One concept per module, so that a job's code closure holds only what it runs (prm_lessons.plan.codedeps):

* :mod:`.golds`: the last ``\\boxed{…}`` of a text and a gold answer as one string, which loading the
  problems needs too (so an extraction or grading fix reruns grading and metrics, never the problems
  tables, sampling or scoring).
* :mod:`.extract`: :func:`~.extract.extract_answer` follows the harness's ``parser.extract_answer``:
  Minerva's "final answer is $…$. I hope", else the content of the last ``\\boxed{…}`` (nested braces
  matched; ``\\boxed 5``; ``\\fbox``), else the text after "the answer is" / "final answer is", else after
  the first "答案是" (to a blank line), else the last number. :func:`~.extract.extract_final` adds multiple
  choice as the harness grades it: for ``answer_format: choice`` (MMLU STEM) the choice letter of the
  response, for any item whose gold is a letter A–E but whose extracted answer is not, the letter taken
  from the whole response, and for a gold of several letters (gaokao_math_qa) only the letters A–E of the
  extracted answer.
* :mod:`.harness`: :func:`~.harness.math_equal`, the harness's ``grader.py`` equivalence (numbers within
  relative tolerance 1e-4 and its percentage variants, choices, tuples/intervals/matrices element-wise,
  equations, SymPy equality), re-implemented; :func:`~.harness.normalise` is its ``strip_string``.
* :mod:`.pool`: :func:`~.pool.grade` compares the extracted answer with the gold answer. With
  ``grader="math_verify"`` (the default): letters by letter, otherwise equal after the harness's light
  string normalisation, else ``math_verify.verify(parse(gold), parse(pred))``. With ``grader="harness"``:
  both normalised as the harness does (its ``strip_string`` twice on the prediction, once or twice on the
  gold by the dataset's answer_format), then ``math_equal``. Every comparison runs in a worker process
  (``python -m prm_lessons.grading.pool --worker``) that is killed and replaced when it exceeds
  ``timeout_s``; math-verify's own timeouts use ``signal.alarm`` (main thread only, and unable to stop a
  long C-level regex or SymPy call), so they are switched off inside the workers and the process boundary
  is the timeout. A response that times out counts as incorrect with status ``timeout``. This works from
  any thread or process and never hangs. :func:`~.pool.grade_many` grades many at once.
* :mod:`.rows`: rows of a JSONL file for the CLI ``prm-lessons grade --input IN.jsonl --output OUT.jsonl``
  (prm_lessons.cli; rows checked and graded by :func:`~.rows.grade_rows`).

This file imports nothing: importing one submodule must not pull in the others.
"""
