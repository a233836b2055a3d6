"""The spannogram for non-negative sparse PCA, with guarantees (Asteris, Papailiopoulos & Dimakis 2014).

The non-negative ``k``-sparse principal component maximizes ``x'Ax`` over ``S_k = {||x|| = 1, ||x||_0 <= k,
x >= 0}`` (Eq. 2). The spannogram solves it exactly on ``A_d = V V'``, the rank-``d`` truncation of ``A``
(``V = U_d L_d^(1/2)``, Eq. 7), through ``max_x ||V'x||^2 = max_{c in S^d} max_x ((Vc)'x)^2`` (Eq. 13): for a
fixed ``c`` the inner problem is the rank-1 problem of Section 3.1, solved by the ``k`` largest positive
entries of ``Vc`` or of ``-Vc`` (Prop. 3.1).

What is here
------------
* :func:`rank1_solver` -- Prop. 3.1 by selection in O(n) (kernel
  :func:`repro.spannogram._kernels.rank1_solve`).
* :func:`spannogram_exact` -- the exact rank-``d`` algorithm. ``rank=2``: a kinetic sweep of the angle
  (:func:`repro.spannogram._kernels.sweep2`) that keeps the curves sorted and updates the top-``k`` set one
  swap per intersection, O(n^2 log n) for all ``n(n+1)`` events, and takes the closed-form maximum of
  ``c'S_I c`` on every arc between events (beyond the paper, which re-solves every candidate in O(n)).
  ``rank >= 3``: Algorithm 1 with Algorithm 2 as printed -- a candidate ``c`` at each intersection of ``d``
  of the ``n + 1`` curves (the rows of ``V`` and a zero row), the ambiguous-set expansion of tied entries,
  and for each candidate support the exact solver of Section 5 (:func:`max_quadratic_halfspaces`).
* :class:`SpannogramPCA` / :func:`spannogram_path` -- Algorithm 3 (random ``c``, or a deterministic net), for
  every cardinality in one pass (:func:`repro.spannogram._kernels.allk_pass`).
* :func:`spannogram_bound` -- a data-dependent upper bound on the unknown optimum (the shaded areas of
  Figs. 4-6), for all ``k`` in the same pass, and :func:`rho_d`, the a-priori factor of Theorem 1 (Eq. 4).

The upper bound is derived in :mod:`repro.spannogram.sampled`.

Files
-----
``estimator.py`` the door: :class:`SpannogramPCA` (Sec. 7); ``sampled.py`` Algorithm 3 for every ``k``
(its pass on given samples: :func:`all_k_pass`) and the bound; ``exact.py`` Prop. 3.1, Sec. 5, Algorithms 1-2
(the rank-2 sweep: :func:`rank2_sweep`) and Theorem 1; ``_common.py`` the scaled covariance and ``V``;
``_kernels.py`` the Numba kernels.

References
----------
M. Asteris, D. Papailiopoulos and A. Dimakis. Nonnegative sparse PCA with provable guarantees. ICML 2014.
D. Papailiopoulos, A. Dimakis and S. Korokythakis. Sparse PCA through low-rank approximations. ICML 2013
(the signed spannogram, ``nonneg=False``).
L. Mackey. Deflation methods for sparse PCA. NIPS 21, 2008 (Schur complement deflation).
"""

from .estimator import SpannogramPCA
from .exact import max_quadratic_halfspaces, rank1_solver, rank2_sweep, rho_d, spannogram_exact
from .sampled import SpannogramPath, all_k_pass, spannogram_bound, spannogram_path

__all__ = [
    "SpannogramPCA",
    "SpannogramPath",
    "all_k_pass",
    "max_quadratic_halfspaces",
    "rank1_solver",
    "rank2_sweep",
    "rho_d",
    "spannogram_bound",
    "spannogram_exact",
    "spannogram_path",
]
