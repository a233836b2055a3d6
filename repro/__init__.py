"""Constrained and probabilistic PCA: EM PCA, sparse and non-negative PCA, NSPCA, the spannogram,
globally sparse probabilistic PCA, and the baselines the papers compare against.

The public API is re-exported here; see README.md for a tour.
"""

from . import linalg, metrics
from ._validation import ConvergenceWarning
from .linalg import Covariance, center, leading_eigenpairs, standardize

__all__ = [
    "ConvergenceWarning",
    "Covariance",
    "center",
    "leading_eigenpairs",
    "linalg",
    "metrics",
    "standardize",
]
__version__ = "0.1.0"
