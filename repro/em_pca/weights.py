"""Weighted fits of the EM PCA family: one weight per sample, or one weight per entry of ``X``.

Sample weights (``sample_weight``, shape ``(n_samples,)``) are frequency weights: a row of weight 2 counts
as the row twice, so integer weights give exactly the fit of the data with repeated rows. The weighted
mean is ``mu = sum_i w_i x_i / W`` (``W = sum_i w_i``) and the weighted covariance
``S_w = sum_i w_i (x_i - mu)(x_i - mu)' / (W - 1)`` (``ddof=1``; :class:`repro.SensiblePCA`, a maximum
likelihood fit, divides by ``W``). Every EM here needs ``S_w`` only through products with the data, so the
rows of positive weight are centred at ``mu`` and scaled once, ``y_i = sqrt(w_i (m - 1) / (W - 1))
(x_i - mu)`` over the ``m`` rows of positive weight, and the unweighted iteration runs on them unchanged
(:class:`WeightedSource`): ``Y'Y / (m - 1) = S_w``. Rows of weight 0 are dropped. A scipy sparse ``X``
keeps the same ``Y`` implicit (:class:`WeightedSparseSource`, on
:class:`repro._weights.WeightedCentredSparse`: ``Y Q = (diag(r) X) Q - r (mu'Q)``,
``Y'U = (diag(r) X)'U - mu (r'U)``, never a dense copy of ``X``), so the fit is the dense weighted fit,
the eigenvectors of ``S_w``.

Per-entry weights with a sparse ``X`` are refused (:func:`repro._weights.refuse_sparse_entry_weights`: a
weight per entry is a dense array the shape of ``X``); pass ``sample_weight`` or ``X.toarray()``.

Entry weights (``weights``, the shape of ``X``; 0 marks a missing entry) define the weighted least-squares
problem of Gabriel & Zamir (1979) and Srebro & Jaakkola (2003),

    ``J(mu, C, Z) = sum_ij w_ij (x_ij - mu_j - z_i'c_j)^2``,

which for 0/1 weights is the objective of Roweis' EM with missing values (Sec. 3.2). :func:`weighted_als`
minimizes it by exact block-coordinate descent: per row the weighted least-squares coordinates
``z_i = (C'W_iC)^-1 C'W_i(x_i - mu)`` and per column the weighted least-squares ``(mu_j, c_j)`` on the
latents ``[1, z_i]``. ``J`` never increases; the iteration stops when the subspace of ``C`` moves by less
than ``tol`` (the sine of the largest principal angle, as :func:`repro.em_pca.em_pca`). With 0/1 weights
its fixed points are those of Roweis' missing-value EM (the same objective), reached in fewer iterations
(each one exact in ``mu`` and ``C`` given the latents).

References
----------
K. R. Gabriel and S. Zamir. Lower rank approximation of matrices by least squares with any choice of
weights. Technometrics 21(4), 1979.
N. Srebro and T. Jaakkola. Weighted low-rank approximation. ICML 2003.
T. F. Chan, G. H. Golub and R. J. LeVeque. Algorithms for computing the sample variance. The American
Statistician 37(3), 1983.
"""

from __future__ import annotations

import math

import numpy as np

from .._chunked import DenseSource, is_dask
from .._dense import _canonical_sign
from .._sparse import SparseSource
from .._validation import check_array, check_scale, is_sparse, unscale, warn_not_converged
from .._weights import (
    check_entry_weights,
    check_sample_weight,
    refuse_nan,
    refuse_sparse_entry_weights,
    weighted_sparse_factor,
)
from ._common import EMPCAResult, _check_common, _sin_orth, _unscale_empca, _unscale_spca
from .blocks import _em_pca_on, _sensible_pca_on


# --------------------------------------------------------------------------- sample weights
class WeightedSource(DenseSource):
    """The rows of positive weight, centred at the weighted mean and scaled so that the unweighted EM on
    them is the weighted EM (module docstring): a :class:`repro._chunked.DenseSource` holding ``Y``."""

    def __init__(self, X: np.ndarray, w: np.ndarray, ddof: int):
        keep = w > 0
        X, w = X[keep], w[keep]
        total = float(w.sum())
        self.total_weight = total
        self.mean = (w @ X) / total
        self.n, self.p = X.shape
        scale = np.sqrt(w * ((self.n - ddof) / (total - ddof)))
        self.X = None
        self.Y = np.ascontiguousarray((X - self.mean) * scale[:, None])
        self.ss = float(np.vdot(self.Y, self.Y))
        self.missing, self.n_missing = False, 0
        self.obs_count, self.obs_mean, self.obs_m2 = np.full(self.p, float(self.n)), self.mean, None


class WeightedSparseSource(SparseSource):
    """The :class:`WeightedSource` of a scipy sparse ``X``: the same ``Y`` (rows of positive weight,
    ``y_i = r_i (x_i - mu)``, ``r_i = sqrt(w_i (m - ddof) / (W - ddof))``) kept implicit in a
    :class:`repro._weights.WeightedCentredSparse`; the products of :class:`repro._sparse.SparseSource`."""

    def __init__(self, X, sample_weight, ddof: int, method: str, min_features: int = 1):
        self.name = "X"
        def scale(m, W):  # Y'Y / (m - ddof) = S_w, as the dense WeightedSource
            return (m - ddof) / (W - ddof)

        factor, mean, m, total, s = weighted_sparse_factor(
            X, sample_weight, ddof, method, min_features=min_features, scale=scale
        )
        self.scale = s
        self.factor, self.mean, self.total_weight = factor, mean, total
        self.n, self.p = m, factor.shape[1]
        m2 = factor.column_ss()
        self.ss = float(m2.sum())
        self.obs_count, self.obs_mean, self.obs_m2 = np.full(self.p, float(self.n)), mean, m2


def weighted_source(X, sample_weight, ddof: int, method: str = "EMPCA", min_features: int = 1):
    """``(source, s)``: the :class:`WeightedSource` of validated ``X`` (``X / s`` when badly scaled), or the
    :class:`WeightedSparseSource` of a scipy sparse ``X`` (checked here)."""
    if is_sparse(X):
        source = WeightedSparseSource(X, sample_weight, ddof, method, min_features)
        return source, source.scale
    refuse_nan(X)
    w = check_sample_weight(sample_weight, X.shape[0], ddof=ddof)
    s = check_scale(X)
    return WeightedSource(X / s if s != 1.0 else X, w, ddof), s


# --------------------------------------------------------------------------- entry weights
def weighted_objective(
    X0: np.ndarray, w: np.ndarray, mean: np.ndarray, Z: np.ndarray, V: np.ndarray
) -> float:
    """``J = sum_ij w_ij (x_ij - mean_j - (Z V)_ij)^2`` (``X0``: X with its weight-0 entries at 0)."""
    R = X0 - mean - Z @ V
    return float(np.einsum("ij,ij,ij->", w, R, R))


def _solve_stack(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A[i]^-1 b[i]`` for a stack of small symmetric systems; the minimum-norm solution where singular."""
    try:
        return np.linalg.solve(A, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.einsum("ikl,il->ik", np.linalg.pinv(A, hermitian=True), b)


def _row_step(X0, w, mean, C):
    """Per row: ``z_i = argmin_z sum_j w_ij (x_ij - mean_j - c_j'z)^2``."""
    k = C.shape[1]
    CC = (C[:, :, None] * C[:, None, :]).reshape(C.shape[0], k * k)
    A = (w @ CC).reshape(-1, k, k)
    b = (w * (X0 - mean)) @ C
    return _solve_stack(A, b)


def _column_step(X0, w, Z):
    """Per column: ``(mean_j, c_j) = argmin sum_i w_ij (x_ij - mean_j - c_j'z_i)^2``."""
    n, k = Z.shape
    Z1 = np.c_[np.ones(n), Z]
    ZZ = (Z1[:, :, None] * Z1[:, None, :]).reshape(n, (k + 1) ** 2)
    A = (w.T @ ZZ).reshape(-1, k + 1, k + 1)
    b = (w * X0).T @ Z1
    coef = _solve_stack(A, b)
    return coef[:, 0].copy(), np.ascontiguousarray(coef[:, 1:])


def _initial_subspace(X0, w, k, init):
    """The start: ``init`` transposed, or the top ``k`` right singular vectors of the data centred at the
    weighted column means with the weight-0 entries at 0 (the start of the missing-value EM)."""
    if init is not None:
        return np.linalg.qr(init)[0]
    mu = (w * X0).sum(axis=0) / w.sum(axis=0)
    D = np.where(w > 0, X0 - mu, 0.0)
    return np.ascontiguousarray(np.linalg.svd(D, full_matrices=False)[2][:k].T)


def weighted_als(X0, w, k, max_iter, tol, init=None):
    """Minimize ``J`` (module docstring) by alternating weighted least squares; ``X0`` and ``w`` checked.

    Returns ``(mean, V, Z, J, n_iter, converged, history)``: ``mean + Z V`` is the fitted matrix, ``V``
    (k x p) orthonormal rows, ``history`` the objective and subspace change of every iteration.
    """
    Q = _initial_subspace(X0, w, k, init)
    mean = (w * X0).sum(axis=0) / w.sum(axis=0)
    J_hist, change_hist = [], [math.nan]
    converged = False
    n_iter = 0
    for t in range(1, max_iter + 1):
        n_iter = t
        Z = _row_step(X0, w, mean, Q)
        mean, C = _column_step(X0, w, Z)
        Q_new, R = np.linalg.qr(C)
        change = _sin_orth(Q_new, Q)
        Q = Q_new
        J_hist.append(weighted_objective(X0, w, mean, Z @ R.T, Q.T))
        change_hist.append(change)
        if change <= tol:
            converged = True
            break
    Z = _row_step(X0, w, mean, Q)  # the latents of the final subspace (J does not increase)
    J = weighted_objective(X0, w, mean, Z, Q.T)
    J_hist.append(J)
    history = {
        "iteration": np.arange(len(J_hist)),
        "subspace_change": np.array(change_hist, dtype=float),
        "weighted_error": np.array(J_hist),
    }
    return mean, Q.T, Z, J, n_iter, converged, history


def em_pca_entry_weights(X: np.ndarray, weights, n_components, max_iter, tol, init=None):
    """EM PCA with per-entry weights on validated ``X``: an :class:`EMPCAResult` and ``J`` at the result.

    The fitted matrix ``mean + Z V`` is re-expressed about its own column means: ``mean`` moves to
    ``mean + mean(Z V)`` and the centred low-rank part ``U s V'`` gives ``components`` (its right singular
    vectors) and ``explained_variance = s^2 / (n - 1)``. ``total_variance`` adds to its trace the weighted
    residual ``J / ((n - 1) w_bar)`` (``w_bar`` the mean positive weight): with 0/1 weights it is the
    trace of the completed data's covariance, as for Roweis' missing-value EM.
    """
    X0, w = check_entry_weights(weights, X)
    n, p = X0.shape
    k, max_iter, tol = _check_common(n_components, max_iter, tol, n, p)
    s = check_scale(np.where(w > 0, X0, 0.0))
    if s != 1.0:
        X0 = X0 / s
    if init is not None:
        init = np.asarray(init, dtype=np.float64).reshape(-1, p).T
        if init.shape[1] != k:
            raise ValueError(f"init must have shape (n_components, n_features) = ({k}, {p}).")
    mean, V, Z, J, n_iter, converged, hist = weighted_als(X0, w, k, max_iter, tol, init)
    if not converged:
        warn_not_converged("EMPCA", n_iter, tol, "(per-entry weights: alternating weighted least squares)")
    L = Z @ V
    shift = L.mean(axis=0)
    _, sv, Vt = np.linalg.svd(L - shift, full_matrices=False)
    comps = _canonical_sign(np.ascontiguousarray(Vt[:k].T)).T
    ev = sv[:k] ** 2 / (n - 1)
    w_bar = float(w[w > 0].mean())
    total = float(ev.sum()) + J / ((n - 1) * w_bar)
    hist["eigenvalues"] = np.empty((0, k))
    res = EMPCAResult(np.ascontiguousarray(comps), ev, total, mean + shift, n_iter, converged, hist)
    if s != 1.0:
        res = res._replace(
            explained_variance=unscale(ev, s, 2, "variances", underflow=False),
            total_variance=float(unscale(total, s, 2, "variances")),
            mean=unscale(res.mean, s, 1, "means"),
        )
        J = float(unscale(J, s, 2, "squared errors"))
    return res, J


# --------------------------------------------------------------------------- the estimators' weighted fits
def _checked(X, sample_weight, weights, min_features: int = 1):
    """``X`` validated (NaN allowed where the weights say so), and the entry weights (None, or the product
    of ``weights`` and ``sample_weight``)."""
    if is_dask(X):
        raise ValueError(
            "sample_weight and weights take an in-memory X; for a Dask array fit without weights, or scale "
            "its rows by sqrt(sample_weight) about the weighted mean yourself."
        )
    refuse_sparse_entry_weights(X, weights)
    if is_sparse(X):  # checked with the weights by weighted_sparse_factor
        return X, None
    X = check_array(X, "X", allow_nan=True, min_samples=2, min_features=min_features)
    if weights is None:
        return X, None
    w = np.asarray(weights, dtype=np.float64) if not isinstance(weights, np.ndarray) else weights
    if sample_weight is not None:
        sw = check_sample_weight(sample_weight, X.shape[0], ddof=None, min_positive=1)
        w = np.asarray(w, dtype=np.float64) * sw[:, None] if np.shape(w) == X.shape else w
    return X, w


def fit_empca_weighted(est, X, sample_weight, weights):
    """:meth:`repro.EMPCA.fit` with ``sample_weight`` or per-entry ``weights`` (module docstring)."""
    X, w = _checked(X, sample_weight, weights)
    p = est.get_params()
    if w is not None:
        if isinstance(p["n_oversamples"], int) and p["n_oversamples"] > 0:
            raise ValueError("n_oversamples must be 0 or 'auto' with per-entry weights (one k-column model).")
        res, J = em_pca_entry_weights(X, w, p["n_components"], p["max_iter"], p["tol"], p["init"])
        est._store(res, X.shape[1])
        est.weighted_error_ = J
        return est
    source, s = weighted_source(X, sample_weight, ddof=1)
    shape = (source.n, source.p)
    res = _em_pca_on(
        source,
        *(
            p[k]
            for k in ("n_components", "max_iter", "tol", "random_state", "init", "callback", "n_oversamples")
        ),
    )
    if s != 1.0:
        res = _unscale_empca(res, s, shape)
    return est._store(res, source.p)


def fit_spca_weighted(est, X, sample_weight, weights):
    """:meth:`repro.SensiblePCA.fit` with ``sample_weight`` (the rows' frequencies; the log-likelihood is
    the weighted sum ``sum_i w_i log p(x_i)``). Per-entry weights are refused (see :mod:`repro.em_pca`)."""
    if weights is not None:
        raise ValueError(
            "SensiblePCA takes sample_weight, not per-entry weights: its noise eps is one variance shared "
            "by every entry; for weighted entries use EMPCA(...).fit(X, weights=...), for missing ones NaN."
        )
    X, _ = _checked(X, sample_weight, None, min_features=2)
    source, s = weighted_source(X, sample_weight, ddof=0, method="SensiblePCA", min_features=2)
    p = est.get_params()
    res = _sensible_pca_on(
        source,
        *(p[k] for k in ("n_components", "algorithm", "max_iter", "tol", "random_state", "init")),
        None,
    )
    if s != 1.0:
        res = _unscale_spca(res, s, (source.n, source.p))
    ratio = source.total_weight / source.n  # the loop's likelihood counts each kept row once
    h = dict(res.history)
    h["log_likelihood"] = h["log_likelihood"] * ratio
    return est._store(res._replace(log_likelihood=res.log_likelihood * ratio, history=h))
