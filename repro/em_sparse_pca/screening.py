"""Screened iterations of the data-backed EM (an exact shortcut of Sigg & Buhmann's Algorithm 2 with few
samples).

With ``16 <= N < D`` and a sparse iterate, ``X w`` goes through the support and of ``f = X'y`` only the
entries a bound cannot rule out of the top ``K + 1`` are computed (kernel
:func:`repro.em_sparse_pca._kernels.em_update_screened`); the M-step is then Algorithm 2 on the full ``f``.
"""

from __future__ import annotations

import numpy as np

from ..linalg import SPARSE_FRACTION, Covariance
from ._kernels import screened_products, support_of

#: Screened iterations (:class:`_Screen`) run on a data-backed covariance with at least this many samples.
SCREEN_MIN_SAMPLES = 16
#: A screened iteration computes at most ``n_features / SCREEN_CANDIDATES`` entries of ``X'y`` exactly;
#: beyond that one full product, which also renews the bound's reference.
SCREEN_CANDIDATES = 16
#: Leading eigenvectors of ``X X'`` (kept from the principal-component start) that refine the screening bound.
SCREEN_RANK = 8


class _Screen:
    """The EM iterations of a block through the data when the iterates are sparse (``N`` samples, ``D``
    features, ``K`` non-zeros): ``X w`` through the support (``N K`` flops), and of ``X'y`` only the
    entries that a bound cannot rule out of the top ``K + 1``
    (:func:`repro.em_sparse_pca._kernels.em_update_screened`), with a full product (``N D``) when the bound
    leaves too many. The M-step is exactly the one on the full ``X'y`` (the same threshold and kept
    entries; values to round-off), so the iterates are those of the plain iteration to round-off.

    Per row: ``Y`` (its E-step ``X w``), ``Y0``/``F0`` (the E-step and product of its last full pass),
    ``supp``/``ns`` (the support of ``w``), ``ref``/``nref`` (the top ``K + 1`` features of ``F0``).
    """

    def __init__(self, op: Covariance, W, K, nonneg, excluded):
        A = op.data
        N, D = A.shape
        R = W.shape[0]
        self.A, self.K, self.nonneg, self.excluded = A, int(K), bool(nonneg), excluded
        self.At = A.T  # (a transposed copy measured no faster: the gathers run 4 features at a time)
        self.colnorm = op.column_norms()
        U = getattr(op, "_gram_left", None)
        if U is not None and U.shape[0] == N:  # the refined bound (see em_update_screened)
            q = U.shape[1]
            self.Ut = np.ascontiguousarray(U.T)
            self.B = np.ascontiguousarray((U.T @ A).T)  # (A'U as written: 1.6x the time on leukemia)
            g = 8.0 * (N + q + 2) * np.finfo(float).eps
            c2 = self.colnorm**2
            self.cr = np.sqrt(np.maximum(c2 - np.einsum("ij,ij->i", self.B, self.B), 0.0) + g * c2)
        else:
            self.Ut, self.B, self.cr = np.empty((0, N)), np.empty((D, 0)), self.colnorm
        self.Y, self.Y0, self.F0 = np.empty((R, N)), np.empty((R, N)), np.empty((R, D))
        self.supp, self.ns = np.empty((R, D), dtype=np.int64), np.zeros(R, dtype=np.int64)
        self.ref, self.nref = np.empty((R, D), dtype=np.int64), np.zeros(R, dtype=np.int64)
        self.cand, self.fc, self.nomask = np.empty(D, dtype=np.int64), np.empty(D), np.zeros(D, dtype=bool)
        self.max_cand = max(D // SCREEN_CANDIDATES, self.K + 1)
        self.n_screened = self.n_full = 0  # row iterations settled by the bound / by a full product
        for r in range(R):
            self.reset(r, W)

    @staticmethod
    def applies(op, K, D) -> bool:
        return (
            isinstance(op, Covariance)
            and op.matrix is None
            and SCREEN_MIN_SAMPLES <= op.data.shape[0] < D
            and K * SPARSE_FRACTION < D
        )

    def reset(self, r, W):
        """Row ``r`` got a new start: its support anew, no reference yet."""
        self.ns[r] = support_of(W[r], self.supp[r])
        self.nref[r] = 0

    def products(self, W, active) -> np.ndarray:
        """``Y[r] = X w_r`` for the active rows (through the support when sparse); returns ``||X w_r||^2``."""
        H = np.empty(active.size)
        dense = screened_products(self.At, W, active, self.supp, self.ns, self.Y, H, SPARSE_FRACTION)
        for j in np.flatnonzero(dense):
            r = active[j]
            np.dot(self.A, W[r], out=self.Y[r])
            H[j] = self.Y[r] @ self.Y[r]
        return H
