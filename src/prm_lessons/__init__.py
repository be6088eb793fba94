"""prm-lessons: the experiments of 'The Lessons of Developing Process Reward Models in Mathematical
Reasoning' (arXiv 2501.07301) as a Snakemake workflow. All stage logic lives in this package."""

__version__ = "0.1.0"
