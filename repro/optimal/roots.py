"""The root heuristics of the certified optimum, used by both routes (the covariance route of
:mod:`repro.optimal.estimator` and the ``n x n`` side of :mod:`repro.optimal.wide`): EMSparsePCA's support
as an incumbent, and the spannogram certificate (with the DNN bound for ``x >= 0``) as a root bound.

They take the search's own (scaled, possibly deflated) matrix and ask nothing of it: a heuristic that
fails gives no incumbent or an infinite bound, never an error."""

from __future__ import annotations

import numpy as np

from ..em_sparse_pca import em_sparse_pca
from ..linalg import Covariance
from ..spannogram import spannogram_bound
from .dnn import DNN_MAX_FEATURES, _dnn_bound


def _own(C: np.ndarray) -> Covariance:
    """The search's matrix ``C`` as a :class:`repro.Covariance`, not checked again: the door checked the
    user's matrix (or the library derived ``C`` from a checked one: a deflation, the wide route's candidate
    set), so a round-off eigenvalue of -1e-16 is not refused here as a user's matrix would be."""
    cov = Covariance._trusted(matrix=np.ascontiguousarray((C + C.T) / 2.0))  # as from_matrix symmetrizes
    cov._psd_checked = True  # what repro.spannogram asks of a matrix it did not check itself
    return cov


def _em_support(C: np.ndarray, k: int, nonneg: bool):
    """EMSparsePCA's support on ``C`` (the EM alone), or None when it fails."""
    try:
        comps, _ = em_sparse_pca(
            _own(C), 1, cardinality=k, nonneg=nonneg, certify=False, n_restarts=20, random_state=0
        )
    except Exception:
        return None
    nz = np.count_nonzero(comps[0])
    if not 0 < nz <= k:
        return None
    # its non-zeros only: with x >= 0 a support padded with zero loadings is evaluated by the projected
    # power iteration on the larger set, which can end below the EM's own value
    return np.argsort(-np.abs(comps[0]), kind="stable")[:nz].astype(np.int64)


def _spannogram_root(C: np.ndarray, k: int, nonneg: bool, incumbent: np.ndarray | None = None) -> float:
    """The spannogram certificate (grid net, rank 2) at the root; ``inf`` when it cannot be computed.

    With ``x >= 0`` also the DNN bound (:func:`repro.optimal.dnn.dnn_bound`, valid at every
    ``k``; at most ``DNN_MAX_FEATURES`` features) when it can prove the ``incumbent``: only if the
    incumbent is a KKT point of the problem without a cardinality constraint (``(C x)_j <= 0`` off its
    support), since the bound is at least that problem's optimum. Where the cardinality binds (CBCL, the
    leukemia candidates) the check fails and the minimization (about 0.5 s at p = 93) is skipped."""
    try:
        b = float(spannogram_bound(_own(C), k, rank=2, n_samples=400, nonneg=nonneg))
    except Exception:
        b = np.inf
    if nonneg and k > 1 and C.shape[0] <= DNN_MAX_FEATURES and _global_kkt(C, incumbent):
        b = min(b, _dnn_bound(C)[0])
    return b


def _global_kkt(C: np.ndarray, x: np.ndarray | None) -> bool:
    """Whether unit ``x >= 0`` satisfies the KKT conditions of ``max x'Cx``, ``x >= 0``, ``||x|| = 1``
    off its support, ``(C x)_j <= 0`` (to a relative ``1e-8``); on it, ``x`` is an eigenvector already."""
    if x is None or not np.any(x):
        return x is None
    g = C @ x
    off = x == 0
    return not off.any() or float(g[off].max()) <= 1e-8 * float(x @ g)
