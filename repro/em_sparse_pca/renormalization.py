"""Variational renormalization (the paper's "emPCAopt"; Moghaddam, Weiss & Avidan 2006): the optimal
weights on the support found by the EM (:func:`renormalize_on_support`; for non-negative PCA the
non-negative EM restricted to the support, :func:`_renormalized`).
"""

from __future__ import annotations

import numpy as np

from ..kernels.em_sparse_pca import COLLAPSED
from ..linalg import SPARSE_FRACTION, Covariance, renormalize
from ._common import _Run, _Settings
from .quasi import _em_quasi
from .solvers import _em, _em_on_support


def renormalize_on_support(A: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """Optimal unit weights on the support of ``w`` for the covariance ``A'A`` (variational renormalization).

    :func:`repro.linalg.renormalize` on the data factor ``A``: through the ``N x N`` Gram matrix when the
    support is larger than ``N`` (so ``K = 12582`` on 72 samples costs a 72 x 72 eigenproblem).

    Returns
    -------
    w_new : ndarray, shape (n_features,)
        Unit norm, zero off the support, pointing the same way as ``w``.
    variance : float
        ``w_new' A'A w_new``.
    """
    return renormalize(Covariance(data=A), w)


def _renormalized(op, run: _Run, nonneg, excluded, V, rho, s: _Settings):
    """Optimal weights on the support of an EM run: ``(w, h, mean, iterations spent)``."""
    if not nonneg and V is None and isinstance(op, Covariance):
        w, h = renormalize(op, run.w)
        return w, h, run.mean, 0
    # the EM itself restricted to the support (non-negative, quasi, missing values)
    D = run.w.shape[0]
    off = excluded | (run.w == 0)
    if V is None and isinstance(op, Covariance) and np.count_nonzero(run.w) * SPARSE_FRACTION < D:
        r = _em_on_support(op, run.w, nonneg, s.tol, s.max_iter)  # a sparse support: its own small operator
    elif V is None:
        r = _em(op, run.w, D, nonneg, off, s.tol, s.max_iter)
    else:
        r = _em_quasi(op, run.w, D, nonneg, off, V, rho, s.tol, s.max_iter)
    if r.status != COLLAPSED and r.h >= run.h:
        return r.w, r.h, r.mean, r.n_iter
    return run.w, run.h, run.mean, r.n_iter
