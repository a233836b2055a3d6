"""Running statistics of a stream of row batches, for ``partial_fit``: the weighted mean and scatter,
exact (``p x p``) up to :data:`MAX_SCATTER_FEATURES` features, sketched above.

Each batch ``b`` (rows ``x_i``, weights ``w_i``, total ``W_b``, mean ``m_b``) is merged by Chan, Golub &
LeVeque's pairwise rule: with the running total ``W_a`` and mean ``mu_a``,

    ``S = S_a + S_b + (W_a W_b / W) d d'``,  ``d = m_b - mu_a``,  ``mu = mu_a + d W_b / W``,

with ``S_b = sum_i w_i (x_i - m_b)(x_i - m_b)'``, so no sum of squares about a distant origin cancels and
the result does not depend (beyond round-off) on the order or size of the batches. ``S`` is thus the
scatter of the rows ``sqrt(w_i) (x_i - m_b)`` of every batch plus one row ``sqrt(W_a W_b / W) d`` per
merge: :class:`RunningScatter` adds their outer products to a ``p x p`` matrix, or, above
:data:`MAX_SCATTER_FEATURES` features (a ``p x p`` float64 matrix of 128 MiB), feeds them to a Frequent
Directions sketch ``B`` of ``ell`` rows (:func:`sketch_rows`; memory ``2 ell p`` floats). Frequent
Directions (Liberty 2013; Ghashami, Liberty, Phillips & Woodruff 2016) guarantees

    ``0 <= x'(S - B'B)x <= Delta`` for every unit ``x``,  ``Delta <= ||A - A_k||_F^2 / (ell - k)``,

with ``A`` the rows fed and ``A_k`` its best rank-``k`` approximation; ``Delta`` (the sum of the squared
singular values subtracted at each shrink) is computed exactly and reported. The trace of ``S`` is kept
exactly either way. Memory is independent of the number of rows.

References
----------
T. F. Chan, G. H. Golub and R. J. LeVeque. Algorithms for computing the sample variance. The American
Statistician 37(3), 1983.
M. Ghashami, E. Liberty, J. M. Phillips and D. P. Woodruff. Frequent Directions: simple and deterministic
matrix sketching. SIAM J. Computing 45(5), 2016.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ._validation import check_array, check_features, check_n_features
from ._weights import check_sample_weight, refuse_sparse

#: Largest number of features whose ``p x p`` scatter is kept exactly (128 MiB in float64); above it
#: the scatter is sketched by Frequent Directions with :func:`sketch_rows` rows.
MAX_SCATTER_FEATURES = 4096


def sketch_rows(n_components: int) -> int:
    """Rows ``ell`` of the Frequent Directions sketch for ``k`` components: ``2 k + 64``, so that its
    error ``Delta <= ||A - A_k||_F^2 / (k + 64)``."""
    return 2 * int(n_components) + 64


class RunningScatter:
    """The weighted mean and scatter of the rows seen so far (module docstring).

    ``sketch``: None for the exact ``p x p`` scatter, else the number of rows ``ell`` of the sketch.
    """

    def __init__(self, p: int, sketch: int | None = None):
        self.p = p
        self.n_rows = 0
        self.weight = 0.0
        self.mean = np.zeros(p)
        self.trace = 0.0
        self.ell = sketch
        self.delta = 0.0  # Frequent Directions' error bound on S (0 when exact)
        if sketch is None:
            self.S = np.zeros((p, p))
        else:
            self.B = np.zeros((2 * sketch, p))
            self.filled = 0

    @property
    def exact(self) -> bool:
        return self.ell is None

    def add(self, X: np.ndarray, w: np.ndarray) -> None:
        """Merge a validated batch ``X`` (rows) with weights ``w`` (>= 0)."""
        self.n_rows += X.shape[0]
        keep = w > 0
        if not keep.any():
            return
        X, w = X[keep], w[keep]
        Wb = float(w.sum())
        mb = (w @ X) / Wb
        rows = (X - mb) * np.sqrt(w)[:, None]
        if self.weight > 0.0:
            W = self.weight + Wb
            d = mb - self.mean
            rows = np.vstack([rows, np.sqrt(self.weight * Wb / W) * d])
            self.mean = self.mean + d * (Wb / W)
            self.weight = W
        else:
            self.mean, self.weight = mb, Wb
        self.trace += float(np.vdot(rows, rows))
        if self.exact:
            self.S += rows.T @ rows
        else:
            self._feed(rows)

    def _feed(self, rows: np.ndarray) -> None:
        """Frequent Directions: append rows to the buffer of ``2 ell`` rows, shrinking it when full."""
        i = 0
        while i < rows.shape[0]:
            take = min(rows.shape[0] - i, self.B.shape[0] - self.filled)
            self.B[self.filled : self.filled + take] = rows[i : i + take]
            self.filled += take
            i += take
            if self.filled == self.B.shape[0]:
                self._shrink()

    def _shrink(self) -> None:
        _, s, Vt = np.linalg.svd(self.B[: self.filled], full_matrices=False)
        ell = self.ell
        dl = float(s[ell] ** 2) if s.size > ell else 0.0
        keep = min(ell, s.size)
        self.B[:] = 0.0
        self.B[:keep] = np.sqrt(np.maximum(s[:keep] ** 2 - dl, 0.0))[:, None] * Vt[:keep]
        self.filled = keep
        self.delta += dl

    def scatter(self) -> np.ndarray:
        """The exact scatter ``S`` (symmetrized), for an exact stream."""
        return 0.5 * (self.S + self.S.T)

    def factor(self) -> np.ndarray:
        """The sketch ``B`` (rows), ``B'B`` within ``[S - Delta I, S]``, for a sketched stream."""
        return self.B[: self.filled].copy()

    def top(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` leading eigenvalues (descending) and eigenvectors (columns) of ``S`` or ``B'B``."""
        if self.exact:
            values, vectors = np.linalg.eigh(self.scatter())
            return values[::-1][:k].copy(), vectors[:, ::-1][:, :k].copy()
        _, s, Vt = np.linalg.svd(self.factor(), full_matrices=False)
        if s.size < k:
            raise ValueError(
                f"the sketch of the stream spans {s.size} direction(s), fewer than n_components={k}; "
                "feed more rows or ask for fewer components."
            )
        return s[:k] ** 2, Vt[:k].T.copy()


# --------------------------------------------------------------------------- the estimators' stream
def stream_batch(est, X, sample_weight, min_features: int = 1) -> RunningScatter:
    """Check a batch (complete rows, the columns of the first batch) and merge it into ``est``'s stream."""
    stream = getattr(est, "_stream", None)
    if stream is None and hasattr(est, "n_features_in_"):
        warnings.warn(
            f"{type(est).__name__}.partial_fit after fit: fit keeps no running statistics, so this call "
            "starts a new stream and the rows given to fit do not count; pass every batch to partial_fit.",
            UserWarning,
            stacklevel=3,
        )
    refuse_sparse(X, "partial_fit")
    if stream is None:
        check_features(est, X)
    X = (
        check_n_features(est, X, allow_nan=True)
        if stream is not None
        else check_array(X, "X", allow_nan=True, min_features=min_features)
    )
    if np.isnan(X).any():
        raise ValueError(
            "X holds NaN: partial_fit takes complete rows (the missing-value EM needs every row in every "
            "iteration); fit such data with fit, fit_blocks or a Dask array."
        )
    w = (
        np.ones(X.shape[0])
        if sample_weight is None
        else check_sample_weight(sample_weight, X.shape[0], ddof=None, min_positive=1)
    )
    if stream is None:
        p = X.shape[1]
        k = int(est.n_components)
        if k > p:
            raise ValueError(f"n_components={k} must be at most n_features={p}.")
        stream = RunningScatter(
            p, None if p <= MAX_SCATTER_FEATURES else sketch_rows(k)
        )
        est.n_features_in_ = p
        est._stream = stream
    stream.add(X, w)
    return stream


def ready(est, stream: RunningScatter, ddof: int, extra: int = 0) -> bool:
    """Whether the stream has enough rows for ``n_components`` (``k + 1 + extra`` rows, weight above
    ``ddof``); records ``n_samples_seen_`` and ``sketch_error_bound_`` either way."""
    est.n_samples_seen_ = stream.n_rows
    k = int(est.n_components)
    enough = stream.n_rows >= k + 1 + extra and stream.weight > ddof and stream.trace > 0.0
    est.sketch_error_bound_ = stream.delta / (stream.weight - ddof) if stream.weight > ddof else math.inf
    return enough
