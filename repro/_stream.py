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

The sketch's size follows the spectrum's tail: it starts at :func:`sketch_rows` rows and, at a shrink that
would leave ``Delta`` above :data:`SKETCH_TOL` times the ``k``-th captured variance (the ``k``-th squared
singular value of the sketch after the shrink), it doubles ``ell`` instead of shrinking (the buffer's rows
are kept as they are: nothing is lost), up to :func:`max_sketch_rows` (``p``, and a buffer of at most
:data:`MAX_SKETCH_BYTES`). Frequent Directions' guarantee holds at every ``ell`` (each shrink subtracts
at most its own ``s_ell^2`` in any direction), so ``Delta`` stays exact and the a-priori bound holds with
the initial ``ell``. Where the cap is not reached, ``Delta <= SKETCH_TOL sigma_k^2`` at the end, so each of
the ``k`` captured variances is within a factor ``1 + SKETCH_TOL`` below the stream's (Weyl); a flat
tail, the hard case (Frequent Directions subtracts about one tail row's energy ``~ p`` per shrink while a
direction of variance ``l`` gains ``ell l`` between shrinks), grows the sketch until ``ell l`` dominates.

Badly scaled batches (largest magnitude outside ``[2^-256, 2^256]``, where products underflow or
overflow) are merged as ``X / s``, ``s`` a power of two (:func:`repro._validation.check_scale`; exact):
the stream takes the first batch's ``s`` (``scale``) and then the largest of its batches', rescaling
what it holds (the mean by ``c``, scatter, trace and bound by ``c^2``, ``c`` a power of two) when a
larger batch comes; the fits scale their outputs back. Ordinarily scaled streams have ``s = 1`` and
are not touched.

A scipy sparse batch (CSR or CSC) gives the same statistics: its weighted mean is ``X'w / W_b`` (a sparse
product) and its centred rows ``sqrt(w_i) (x_i - m_b)`` are formed one row block of
:data:`repro._sparse.BLOCK_BYTES` at a time, so no more than a block is ever dense. Dense and sparse
batches may be mixed in one stream (both add the same rows to the same scatter).

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

from ._sparse import BLOCK_BYTES
from ._validation import (
    _scale_for,
    check_array,
    check_features,
    check_n_features,
    check_scale,
    check_sparse,
    is_sparse,
)
from ._weights import check_sample_weight

#: Largest number of features whose ``p x p`` scatter is kept exactly (128 MiB in float64); above it
#: the scatter is sketched by Frequent Directions with :func:`sketch_rows` rows at first.
MAX_SCATTER_FEATURES = 4096
#: The sketch grows (``ell`` doubled) while its error bound ``Delta`` would exceed this fraction of the
#: ``k``-th captured variance (module docstring).
SKETCH_TOL = 0.1
#: Largest buffer of the sketch (``2 ell p`` float64), the memory of the exact scatter at its limit.
MAX_SKETCH_BYTES = 8 * MAX_SCATTER_FEATURES**2


def sketch_rows(n_components: int) -> int:
    """Initial rows ``ell`` of the Frequent Directions sketch for ``k`` components: ``2 k + 64``, so that
    its error ``Delta <= ||A - A_k||_F^2 / (k + 64)``."""
    return 2 * int(n_components) + 64


def max_sketch_rows(n_components: int, p: int) -> int:
    """The most rows the sketch grows to: ``p`` (a sketch of ``p`` rows shrinks without loss), and a
    buffer ``2 ell p`` of at most :data:`MAX_SKETCH_BYTES`; never fewer than :func:`sketch_rows`."""
    return max(sketch_rows(n_components), min(int(p), MAX_SKETCH_BYTES // (16 * int(p))))


class RunningScatter:
    """The weighted mean and scatter of the rows seen so far (module docstring).

    ``sketch``: None for the exact ``p x p`` scatter, else the initial number of rows ``ell`` of the
    sketch; ``k``: the components the sketch must keep (None: a sketch of fixed size ``ell``).
    """

    def __init__(self, p: int, sketch: int | None = None, k: int | None = None):
        self.p = p
        self.n_rows = 0
        self.weight = 0.0
        self.mean = np.zeros(p)
        self.trace = 0.0
        self.ell = sketch
        self.delta = 0.0  # Frequent Directions' error bound on S (0 when exact)
        self.scale = 1.0  # the statistics are those of the rows / scale (a power of two)
        if sketch is None:
            self.S = np.zeros((p, p))
        else:
            self.k = k
            self.max_ell = sketch if k is None else max(sketch, max_sketch_rows(k, p))
            self.B = np.zeros((2 * sketch, p))
            self.filled = 0

    @property
    def exact(self) -> bool:
        return self.ell is None

    def rescale(self, s: float) -> None:
        """Hold the statistics of the rows divided by ``s`` (a power of two) instead of ``scale``."""
        c = self.scale / s
        if self.weight > 0.0:  # (c <= 1 here: the scale only grows once rows are held)
            self.mean = self.mean * c
            self.trace *= c * c
            self.delta *= c * c
            if self.exact:
                self.S *= c * c
            else:
                self.B *= c
        self.scale = s

    def add(self, X, w: np.ndarray) -> None:
        """Merge a validated batch ``X`` (rows: an array, or a CSR / CSC matrix) with weights ``w``."""
        self.n_rows += X.shape[0]
        keep = w > 0
        if not keep.any():
            return
        sparse = is_sparse(X)
        if sparse:
            X = X.tocsr() if X.format != "csr" else X
            if not keep.all():
                X, w = X[keep], w[keep]
        else:
            X, w = X[keep], w[keep]
        Wb = float(w.sum())
        mb = np.asarray(X.T @ w, dtype=np.float64).ravel() / Wb if sparse else (w @ X) / Wb
        merge = None
        if self.weight > 0.0:
            W = self.weight + Wb
            d = mb - self.mean
            merge = np.sqrt(self.weight * Wb / W) * d
            self.mean = self.mean + d * (Wb / W)
            self.weight = W
        else:
            self.mean, self.weight = mb, Wb
        sw = np.sqrt(w)
        if not sparse:  # one block: the batch's centred rows and the merge's row
            rows = (X - mb) * sw[:, None]
            self._absorb(rows if merge is None else np.vstack([rows, merge]))
            return
        step = max(1, BLOCK_BYTES // (8 * self.p))  # rows of a block densified at a time
        for a in range(0, X.shape[0], step):
            rows = X[a : a + step].toarray()
            rows -= mb
            rows *= sw[a : a + step, None]
            self._absorb(rows)
        if merge is not None:
            self._absorb(merge[None, :])

    def _absorb(self, rows: np.ndarray) -> None:
        """The rows' outer products into the scatter (or the sketch), their squared norms into the trace."""
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
        """Subtract ``s_ell^2`` from every squared singular value of the buffer, keeping ``ell`` rows; or,
        where that would leave ``Delta`` above ``SKETCH_TOL`` times the ``k``-th captured variance, double
        ``ell`` (up to ``max_ell``) and keep the buffer as it is."""
        _, s, Vt = np.linalg.svd(self.B[: self.filled], full_matrices=False)
        ell = self.ell
        dl = float(s[ell] ** 2) if s.size > ell else 0.0
        if dl > 0.0 and ell < self.max_ell and self.k is not None:
            captured = float(s[self.k - 1] ** 2) - dl if s.size >= self.k else 0.0
            if self.delta + dl > SKETCH_TOL * captured:
                self.ell = min(2 * ell, self.max_ell)
                B = np.zeros((2 * self.ell, self.p))
                B[: self.filled] = self.B[: self.filled]
                self.B = B
                return
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
        F = self.B[: self.filled]
        if min(F.shape) < k:
            raise ValueError(
                f"the sketch of the stream spans {min(F.shape)} direction(s), fewer than n_components={k}; "
                "feed more rows or ask for fewer components."
            )
        # the top k of the smaller Gram matrix (F F' or F'F), then a Rayleigh-Ritz step on the data:
        # the values are those of F'F on an orthonormal subspace (so never above them), at m^2 p + m p k
        # flops instead of the full SVD's 4 m^2 p
        G = F @ F.T if F.shape[0] < F.shape[1] else F.T @ F
        U = np.linalg.eigh(0.5 * (G + G.T))[1]
        U = U[:, ::-1][:, :k]
        Q = np.linalg.qr(F.T @ U if F.shape[0] < F.shape[1] else U)[0]
        _, s, Wt = np.linalg.svd(F @ Q, full_matrices=False)
        return s**2, Q @ Wt.T


# --------------------------------------------------------------------------- the estimators' stream
def stream_batch(est, X, sample_weight, min_features: int = 1) -> RunningScatter:
    """Check a batch (complete rows, the columns of the first batch; an array or a scipy sparse matrix,
    kept sparse) and merge it into ``est``'s stream."""
    stream = getattr(est, "_stream", None)
    if stream is None and hasattr(est, "n_features_in_"):
        warnings.warn(
            f"{type(est).__name__}.partial_fit after fit: fit keeps no running statistics, so this call "
            "starts a new stream and the rows given to fit do not count; pass every batch to partial_fit.",
            UserWarning,
            stacklevel=3,
        )
    if stream is None:
        check_features(est, X)
    if is_sparse(X):  # NaN and infinities among the stored values refused with the reason
        X = (
            check_n_features(est, X, sparse=True)
            if stream is not None
            else check_sparse(X, "X", min_features=min_features)
        )
    else:
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
        stream = RunningScatter(p, None if p <= MAX_SCATTER_FEATURES else sketch_rows(k), k)
        est.n_features_in_ = p
        est._stream = stream
    s = _scale_for(float(abs(X).max()) if X.nnz else 0.0) if is_sparse(X) else check_scale(X)
    if s > stream.scale or stream.weight == 0.0:  # the largest scale of the batches, the first one's at first
        stream.rescale(s)
    stream.add(X if stream.scale == 1.0 else X / stream.scale, w)
    return stream


def ready(est, stream: RunningScatter, ddof: int, extra: int = 0) -> bool:
    """Whether the stream has enough rows for ``n_components`` (``k + 1 + extra`` rows, weight above
    ``ddof``); records ``n_samples_seen_`` and ``sketch_error_bound_`` either way."""
    est.n_samples_seen_ = stream.n_rows
    k = int(est.n_components)
    enough = stream.n_rows >= k + 1 + extra and stream.weight > ddof and stream.trace > 0.0
    bound = stream.delta / (stream.weight - ddof) if stream.weight > ddof else math.inf
    with np.errstate(over="ignore"):  # the bound of the rows themselves (inf past float64: still a bound)
        est.sketch_error_bound_ = float(bound * stream.scale * stream.scale)
    return enough
