"""Non-negative sparse PCA (NSPCA) of Zass & Shashua (2006).

NSPCA maximizes, over non-negative ``U`` (``d x k``, the principal vectors as columns),

    F(U) = 1/2 ||U'X||_F^2 - alpha/4 ||I - U'U||_F^2 - beta 1'U1          (Eq. 3)

where the columns of ``X`` (``d x n``) are the zero-mean samples, so that ``||U'X||^2 = tr(U'AU)`` with the
scatter matrix ``A = X X'`` (**not** divided by n: the paper's alpha and beta are on that scale).
``alpha`` trades variance for orthonormality (a large alpha makes the vectors nearly disjoint, Section 2),
``beta`` is an L1 (= sum, as U >= 0) sparsity penalty (Section 3). The maximization is the coordinate
ascent of Algorithm 1: each entry ``u_rs`` in turn is set to the global non-negative maximizer of the
quartic Eq. 4, found among zero and the non-negative real roots of the cubic Eq. 5. The kernels are in
:mod:`repro.nspca._kernels` (their docstring derives Eq. 4's coefficients).


Files
-----
``estimator.py`` the door: :func:`nspca`, :func:`nspca_objective`, :class:`NSPCA`; ``algorithm.py``
Algorithm 1 on the scatter matrix (one sweep: :func:`nspca_sweep`); ``search.py`` the searches over
``beta`` (a target cardinality) and ``alpha`` (a smallest angle); ``_kernels.py`` the Numba kernels.

References
----------
R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
Section 5.2 (bisection on beta for a target cardinality).
"""

from .algorithm import (
    CardinalityNotReached,
    NSPCACardinalityResult,
    NSPCAMinAngleResult,
    NSPCAResult,
    nspca_sweep,
)
from .estimator import NSPCA, nspca, nspca_objective
from .search import nspca_for_cardinality, nspca_for_min_angle

__all__ = [
    "NSPCA",
    "CardinalityNotReached",
    "NSPCACardinalityResult",
    "NSPCAMinAngleResult",
    "NSPCAResult",
    "nspca",
    "nspca_for_cardinality",
    "nspca_for_min_angle",
    "nspca_objective",
    "nspca_sweep",
]
