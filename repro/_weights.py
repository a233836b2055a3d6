"""Weights shared by the weighted estimators: the checks of ``sample_weight`` and of per-entry
``weights``, the weighted covariance as a data factor, and a weighted average of per-sample scores.

Sample weights are frequency weights: a row of weight 2 counts as the row twice, so integer weights
give exactly the fit of the data with repeated rows; the weighted covariance is
``S_w = sum_i w_i (x_i - mu)(x_i - mu)' / (W - ddof)`` with ``mu = sum_i w_i x_i / W``, ``W = sum_i w_i``.
"""

from __future__ import annotations

import numpy as np

from ._validation import _head, is_sparse

#: The scikit-learn check a sparse-input estimator with ``sample_weight`` fails, and why (its tags list it)
SPARSE_WEIGHTS_FAILURE = {
    "check_sample_weight_equivalence_on_sparse_data": (
        "sample_weight with a scipy sparse X is refused with the reason (the weighted sparse operator is "
        "not built): fit dense rows with weights, or the sparse X without them"
    )
}


def refuse_sparse(X, what: str) -> None:
    """A scipy sparse ``X`` is refused where weights or streams need the rows' entries, with what to pass."""
    if is_sparse(X):
        raise ValueError(
            f"X is a scipy sparse matrix: {what} takes dense rows (the estimator fits a sparse X without "
            "them). Pass X.toarray() (or dense batches), or fit the sparse X without weights."
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
