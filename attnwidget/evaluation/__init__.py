"""Evaluation: run a model again to test explanations (faithfulness), and compare
them with ground truth, over data sets. Builds on :mod:`attnwidget.metrics`."""

from .vision import patch_location, perturb_patches, perturbation_curve

__all__ = ["patch_location", "perturb_patches", "perturbation_curve"]
