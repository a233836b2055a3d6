"""spannogram"""

from .estimator import (
    SpannogramPCA,
    SpannogramPath,
    max_quadratic_halfspaces,
    rank1_solver,
    rho_d,
    spannogram_bound,
    spannogram_exact,
    spannogram_path,
)

__all__ = [
    "SpannogramPCA",
    "SpannogramPath",
    "max_quadratic_halfspaces",
    "rank1_solver",
    "rho_d",
    "spannogram_bound",
    "spannogram_exact",
    "spannogram_path",
]
