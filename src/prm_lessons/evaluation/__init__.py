"""Using a PRM and other verifiers: search, verifiers, critics, and the bias analysis.

Modules: search, search_scorers, verifiers, critic, bias_analysis.
"""
