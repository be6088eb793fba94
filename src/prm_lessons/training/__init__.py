"""Training a PRM: the dataset, the trainer set-up, checkpoints, the launch, and publishing the result.

Modules: train (the entry), data, settings, trainer, checkpoints, launch, features, resamples, model_card,
publish.
"""
