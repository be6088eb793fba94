"""GPU checks before a cluster run: the preflight script and the GPU environment it reports.

Modules: gpu, gpu_env.
"""
