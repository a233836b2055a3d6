"""Constrained and probabilistic PCA: EM PCA, sparse and non-negative PCA, NSPCA, the spannogram,
globally sparse probabilistic PCA, and the baselines the papers compare against.

The public API is re-exported here; see README.md for a tour.
"""

from . import baselines, linalg, metrics
from ._threads import get_blas_threads, set_blas_threads
from ._validation import ConvergenceWarning
from .em_pca import EMPCA, SensiblePCA, em_pca, em_pca_blocks, ppca_closed_form, sensible_pca
from .em_pca.imputer import PPCAImputer, ppca_impute
from .em_sparse_pca import CardinalityPath, EMSparsePCA, em_sparse_pca, em_sparse_pca_path
from .linalg import Covariance, center, leading_eigenpairs, renormalize, standardize
from .nspca import (
    NSPCA,
    CardinalityNotReached,
    nspca,
    nspca_for_cardinality,
    nspca_for_min_angle,
    nspca_objective,
)
from .optimal import OptimalResult, OptimalSparsePCA, optimal_sparse_pca, optimal_sparse_pca_wide
from .spannogram import (
    SpannogramPCA,
    rank1_solver,
    rho_d,
    spannogram_bound,
    spannogram_exact,
    spannogram_path,
)

__all__ = [
    "EMPCA",
    "NSPCA",
    "CardinalityNotReached",
    "CardinalityPath",
    "ConvergenceWarning",
    "Covariance",
    "EMSparsePCA",
    "OptimalResult",
    "OptimalSparsePCA",
    "PPCAImputer",
    "SensiblePCA",
    "SpannogramPCA",
    "baselines",
    "center",
    "em_pca",
    "em_pca_blocks",
    "em_sparse_pca",
    "em_sparse_pca_path",
    "get_blas_threads",
    "leading_eigenpairs",
    "linalg",
    "metrics",
    "nspca",
    "nspca_for_cardinality",
    "nspca_for_min_angle",
    "nspca_objective",
    "optimal_sparse_pca",
    "optimal_sparse_pca_wide",
    "ppca_closed_form",
    "ppca_impute",
    "rank1_solver",
    "renormalize",
    "rho_d",
    "sensible_pca",
    "set_blas_threads",
    "spannogram_bound",
    "spannogram_exact",
    "spannogram_path",
    "standardize",
]
__version__ = "0.1.0"

from .gsppca import GSPPCA, evidence_path, gsppca_vem, log_evidence, theorem1_density

__all__ += ["GSPPCA", "evidence_path", "gsppca_vem", "log_evidence", "theorem1_density"]
