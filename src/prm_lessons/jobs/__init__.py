"""What runs inside every job: hardware, exit codes, progress, time budgets, shards.

Modules: hardware, exit, progress, budget, shards.
"""
