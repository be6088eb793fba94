"""Problem loaders, pinned source files, the ProcessBench loader and a ProcessBench-format set built
by construction.

Three problem sources share one interface, :func:`load_problems` (reasoning-gym generators, Hugging
Face datasets, local jsonl/json/parquet files); every loader returns the ``problems`` table
(``problem_id``, ``dataset``, ``question``, ``answer``, ``gold_steps``).

:func:`build_constructed_processbench` builds ProcessBench cases from gold solutions with one error
injected at a known step (the error injection itself lives in :mod:`prm_lessons.labels.construction`).

Modules (one concept each, so that a job's code closure, prm_lessons.plan.codedeps, holds only what it runs;
this file imports nothing):
- `problems`: answer formats, reasoning-gym and Hub records, record mapping and validation, `load_problems`;
- `sources`: pinned source files (rules benchmark_file / processbench_file): download paths, fetching,
  checksums;
- `processbench`: the ProcessBench loader and case validation, and the constructed ProcessBench-format set.
"""
