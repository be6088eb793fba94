"""Sampling responses from a policy model: the engine, sampling settings, few-shot prompts.

Modules: engine, sampling, cpu_top_p, fewshot.
"""
