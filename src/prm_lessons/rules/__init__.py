"""Rule glue: one module per workflow/rules/<stage>.smk, one function per rule under the rule's own name.

A rule's `params.func` is "<stage>:<rule>" and workflow/scripts/run.py calls
`prm_lessons.rules.<stage>.<rule>(inputs=, outputs=, params=, wildcards=, threads=)`. A rule function
reads its files and params, calls library code and writes its outputs; the computing lives in the
library modules (one concept each), which never import this package.
"""
