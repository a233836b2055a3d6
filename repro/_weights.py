"""Weights shared by the weighted estimators: the checks of ``sample_weight`` and of per-entry
``weights``, the weighted covariance as a data factor (dense, or of a scipy sparse ``X`` without a dense
copy), and a weighted average of per-sample scores.

Sample weights are frequency weights: a row of weight 2 counts as the row twice, so integer weights
give exactly the fit of the data with repeated rows; the weighted covariance is
``S_w = sum_i w_i (x_i - mu)(x_i - mu)' / (W - ddof)`` with ``mu = sum_i w_i x_i / W``, ``W = sum_i w_i``.

A sparse ``X`` keeps its weighted centring implicit (:class:`WeightedCentredSparse`): over the ``m`` rows
of positive weight, the factor ``A = diag(r) (X - 1 mu')`` with ``r_i = sqrt(f w_i)`` is applied as
``A W = (diag(r) X) W - r (mu' W)`` and ``A'U = (diag(r) X)' U - mu (r'U)``, so
``A'A w = f (X' diag(w) X w - W mu mu'w)`` is never formed, nor is any dense ``m x p`` array;
``diag(r) X`` is a copy of the stored entries only. Per-entry weights with a sparse ``X`` are refused
(:func:`refuse_sparse_entry_weights`): they are one number per entry, a dense array the shape of ``X``.
"""

from __future__ import annotations

import numpy as np

from ._sparse import CentredSparse, sparse_door
from ._validation import _head, is_sparse


def refuse_sparse_entry_weights(X, weights) -> None:
    """Per-entry ``weights`` with a scipy sparse ``X`` are refused with the reason and the fixes."""
    if weights is not None and is_sparse(X):
        raise ValueError(
            "weights (one per entry) with a scipy sparse X are not supported: per-entry weights are a "
            "number for every entry of X, a dense array the shape of X (the dense copy that sparse input "
            "avoids), and their alternating weighted least squares updates every entry. Pass "
            "sample_weight (one weight per row) with the sparse X, or X.toarray() with the weights."
        )


def check_sample_weight(
    sample_weight, n_samples: int, *, ddof: int | None = 1, min_positive: int = 2, name: str = "sample_weight"
):
    """``sample_weight`` as a float64 vector of length ``n_samples``: finite, non-negative, two rows of
    positive weight at least, and a total above ``ddof`` (frequency weights); else a ValueError naming it."""
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a vector of numbers (one weight per sample).") from None
    if w.ndim == 0:
        w = np.full(n_samples, float(w))
    if w.shape != (n_samples,):
        raise ValueError(f"{name} has shape {w.shape}; expected ({n_samples},), one weight per row of X.")
    if not np.isfinite(w).all():
        raise ValueError(
            f"{name} holds NaN or infinite values (rows {_head(np.flatnonzero(~np.isfinite(w)))})."
        )
    if (w < 0).any():
        raise ValueError(
            f"{name} holds negative weights (rows {_head(np.flatnonzero(w < 0))}); weights are >= 0."
        )
    if np.count_nonzero(w) < min_positive:
        raise ValueError(
            f"{name} has {np.count_nonzero(w)} positive weight(s) (the others are zero); "
            + (
                "a covariance needs two rows of positive weight."
                if min_positive > 1
                else "nothing would count."
            )
        )
    total = float(w.sum())
    if ddof is not None and not total > ddof:
        raise ValueError(
            f"{name} sums to {total:.6g}; frequency weights (a weight of 2 counts a row twice) must sum to "
            f"more than {ddof} for the covariance with ddof={ddof}: scale them (e.g. by n_samples / sum)."
        )
    return w


def refuse_nan(X: np.ndarray, name: str = "sample_weight") -> None:
    if np.isnan(X).any():
        raise ValueError(
            f"{name} with missing values (NaN in X) is not supported; pass per-entry weights instead "
            "(weights=, the shape of X: 0 at the missing entries, the row's weight elsewhere)."
        )


def weighted_data_factor(X: np.ndarray, sample_weight, ddof: int = 1) -> tuple[np.ndarray, np.ndarray, int]:
    """``(A, mean, m)``: ``A'A = S_w`` (the weighted covariance, ``ddof``), the weighted mean and the number
    of rows of positive weight, for the estimators that iterate on a covariance operator."""
    refuse_nan(X)
    w = check_sample_weight(sample_weight, X.shape[0], ddof=ddof)
    keep = w > 0
    X, w = X[keep], w[keep]
    total = float(w.sum())
    mean = (w @ X) / total
    A = (X - mean) * np.sqrt(w / (total - ddof))[:, None]
    return np.ascontiguousarray(A), mean, int(X.shape[0])


def weighted_average(values: np.ndarray, sample_weight, n: int) -> float:
    """``sum_i w_i v_i / sum_i w_i``: a per-sample score averaged with ``sample_weight`` (checked)."""
    w = (
        check_sample_weight(sample_weight, n, ddof=None, min_positive=1)
        if sample_weight is not None
        else np.ones(n)
    )
    return float(w @ values / w.sum())


def check_entry_weights(weights, X: np.ndarray, name: str = "weights") -> tuple[np.ndarray, np.ndarray]:
    """``(X0, w)``: per-entry ``weights`` checked against ``X`` (same shape, finite, >= 0, a positive weight
    in every row and column; NaN in ``X`` only where the weight is 0) and ``X`` with those entries at 0."""
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers the shape of X.") from None
    if w.shape != X.shape:
        raise ValueError(
            f"{name} has shape {w.shape}; expected {X.shape}, the shape of X (one weight per entry)."
        )
    if not np.isfinite(w).all():
        raise ValueError(f"{name} holds NaN or infinite values; give 0 for a missing entry.")
    if (w < 0).any():
        raise ValueError(f"{name} holds negative entries; weights are >= 0 (0 = missing).")
    if not w.any():
        raise ValueError(f"{name} is all zero: no entry of X would count.")
    nan = np.isnan(X)
    bad = nan & (w > 0)
    if bad.any():
        raise ValueError(
            f"X holds NaN at entries of positive weight (rows {_head(np.flatnonzero(bad.any(axis=1)))}); "
            f"give those entries weight 0 in {name} (a missing entry) or fill them."
        )
    for axis, what in ((1, "row"), (0, "column")):
        empty = np.flatnonzero(~(w > 0).any(axis=axis))
        if empty.size:
            raise ValueError(f"{name} is 0 on every entry of {what}(s) {_head(empty)} of X; drop them.")
    return np.where(nan, 0.0, X), w


# --------------------------------------------------------------------------- sparse X with sample_weight
def _positive_rows(X, w: np.ndarray):
    """``(X_+, w_+)``: the rows of positive weight of a validated sparse ``X``, as CSR (a copy of the
    stored entries when rows are dropped or the format changes)."""
    keep = w > 0
    X = X.tocsr() if X.format != "csr" else X
    if not keep.all():
        X, w = X[keep], w[keep]
    return X, w


def _weighted_column_ss(X, w: np.ndarray, mean: np.ndarray, total: float) -> np.ndarray:
    """``m2_j = sum_i w_i (x_ij - mean_j)^2`` of a CSR ``X``: over the stored entries, plus ``mean_j^2``
    times the weight of the rows not stored in column ``j`` (0 where every row is stored), so no sum of
    squares about the origin cancels. Runs over row blocks of about a million stored entries."""
    n, p = X.shape
    m2, stored_w, stored = np.zeros(p), np.zeros(p), np.zeros(p)
    step = max(1, (2**20 * n) // max(X.nnz, 1))
    for a in range(0, n, step):
        B = X[a : a + step]
        wi = np.repeat(w[a : a + step], np.diff(B.indptr))
        m2 += np.bincount(B.indices, weights=wi * (B.data - mean[B.indices]) ** 2, minlength=p)
        stored_w += np.bincount(B.indices, weights=wi, minlength=p)
        stored += np.bincount(B.indices, minlength=p)
    unstored_w = np.where(stored == n, 0.0, np.maximum(total - stored_w, 0.0))
    return m2 + unstored_w * mean * mean


class WeightedCentredSparse(CentredSparse):
    """``A = diag(r) (X - 1 mu') - U V'`` of a sparse ``X`` (module docstring), as a
    :class:`repro._sparse.CentredSparse` on ``diag(r) X`` whose first correction is the weighted centring
    ``r mu'``; the further corrections are deflations. ``base_ss``: ``diag(A'A)`` before any deflation,
    from the stored entries (:func:`_weighted_column_ss`), so the variances do not cancel."""

    def __init__(self, Xr, r, mu, base_ss, U=None, V=None):
        U = r[:, None] if U is None else U
        V = mu[:, None] if V is None else V
        super().__init__(Xr, np.zeros(Xr.shape[1]), 1.0, U, V)
        self.base_ss = base_ss

    def _like(self, other: CentredSparse, base_ss=None) -> WeightedCentredSparse:
        """``other`` (the parent's result on the same stored entries) as a weighted factor."""
        base = self.base_ss if base_ss is None else base_ss
        return WeightedCentredSparse(other.X, other.U[:, 0], other.V[:, 0], base, other.U, other.V)

    def column_ss(self) -> np.ndarray:
        """``diag(A'A)``: ``base_ss`` less the deflations' part (computed once, kept)."""
        if self._diag is None:
            if self.V.shape[1] == 1:
                self._diag = self.base_ss
            else:  # d_j - 2 v_j'(U'a_j) + v_j'(U'U) v_j over the deflations, a_j the undeflated column
                U, V = self.U[:, 1:], self.V[:, 1:]
                base = WeightedCentredSparse(self.X, self.U[:, 0], self.V[:, 0], self.base_ss)
                UtA = base.rmatvec(U).T
                d = self.base_ss - 2.0 * np.einsum("jm,mj->j", V, UtA)
                d += np.einsum("jm,mk,jk->j", V, U.T @ U, V)
                self._diag = np.maximum(d, 0.0)
        return self._diag

    def deflate(self, w, method: str = "projection") -> WeightedCentredSparse:
        return self._like(super().deflate(w, method))

    def restrict(self, idx) -> WeightedCentredSparse:
        idx = np.asarray(idx)
        sub = self._like(super().restrict(idx), self.base_ss[idx])
        if self._diag is not None:
            sub._diag = self._diag[idx]
        return sub

    def scaled(self, s: float) -> WeightedCentredSparse:
        return self._like(super().scaled(s), self.base_ss / (s * s))

    def max_abs(self) -> float:
        r, mu = np.abs(self.U[:, 0]), np.abs(self.V[:, 0])
        return max(super().max_abs(), float(r.max(initial=0.0)) * float(mu.max(initial=0.0)))


def weighted_sparse_factor(X, sample_weight, ddof: int, method: str, *, min_features: int = 1, scale=None):
    """``(A, mean, m, W, s)`` of a scipy sparse ``X`` with ``sample_weight``: the checks of a sparse fit
    (:func:`repro._sparse.sparse_door`: NaN, infinities, no variance; ``X / s`` when badly scaled) and of
    the weights, then the :class:`WeightedCentredSparse` factor of the ``m`` rows of positive weight with
    ``r_i = sqrt(f w_i)``, ``f = scale(m, W)`` (default ``1 / (W - ddof)``: ``A'A = S_w``), the weighted
    mean ``mu`` and the total weight ``W``. Nothing of size ``m x p`` is made dense."""
    X, s = sparse_door(X, method, min_samples=2, min_features=min_features)
    w = check_sample_weight(sample_weight, X.shape[0], ddof=ddof)
    X, w = _positive_rows(X, w)
    total = float(w.sum())
    m = X.shape[0]
    mean = np.asarray(X.T @ w, dtype=np.float64).ravel() / total
    f = 1.0 / (total - ddof) if scale is None else float(scale(m, total))
    return rows_factor(X, w, mean, f), mean, m, total, s


def rows_factor(X, w: np.ndarray, mean: np.ndarray, f: float) -> WeightedCentredSparse:
    """``diag(sqrt(f w)) (X - 1 mean')`` of a validated sparse ``X`` (rows of weight 0 dropped) about a
    given ``mean``: the weighted factor of a fit, or of a weighted score about the fitted ``mean_``."""
    X, w = _positive_rows(X, w)
    r = np.sqrt(f * w)
    Xr = X.copy()
    Xr.data *= np.repeat(r, np.diff(X.indptr))
    base_ss = _weighted_column_ss(X, w, mean, float(w.sum())) * f
    return WeightedCentredSparse(Xr, r, mean, base_ss)
