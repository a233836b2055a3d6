"""EM for sparse and non-negative PCA (Sigg & Buhmann 2008).

The first principal component maximizes ``w'Cw`` subject to ``||w||_2 = 1``. Sigg & Buhmann take EM for
probabilistic PCA in the zero-noise limit with a one-dimensional subspace (Algorithm 1),

    E-step  y = X w / (w'w)                                   (Sec. 3)
    M-step  w* = X'y / (y'y) = f / h                          (Eq. 13)

and add the constraints at the M-step, which is the isotropic QP ``min h w'w - 2 f'w`` (Eq. 12):

* cardinality ``||w||_0 <= K``: the l1-constrained QP (Eq. 14) with the bound set implicitly by ``K``;
  its solution (Algorithm 2) is the soft threshold of ``w*`` at the (K+1)-th largest magnitude,
  ``w_i = sign(w*_i) (|w*_i| - s_(K+1))_+`` -- found here by selection in O(D), not by sorting;
* non-negativity ``w >= 0`` (Eq. 17): negative entries of ``w*`` set to zero, then the same threshold
  among the positive entries (the (K+1)-th largest positive value);

followed by ``w <- w / ||w||_2``, until ``|w(t+1)' w(t)| > 1 - tol``. Only ``f = X'X w`` (up to a positive
factor) enters the M-step, so the iteration needs the covariance as an operator: through the data (``X w``
then ``X'y``, ``2ND`` flops) or through the ``D x D`` covariance formed once (``D^2`` flops), chosen by the
cost model of :func:`repro.linalg.choose_operator` (``operator="auto"``; the covariance on CBCL faces,
2429 x 361, the data on leukemia, 72 x 12582); the iterates agree to round-off. The restarts of a component
run together (:func:`_em_block`): one operator call per iteration for every active restart, then one O(D)
Numba kernel per restart (:mod:`repro.kernels.em_sparse_pca`); a restart leaves the block when it converges.
A tie at the threshold (``s_K = s_(K+1)``, e.g. duplicated features) is broken by index so exactly ``K``
loadings stay non-zero (Algorithm 2 as printed would zero the K-th).

Through the data with few samples (``16 <= N < D``, e.g. leukemia) and a sparse iterate (``4K < D``) an
iteration is screened (:class:`_Screen`, :func:`repro.kernels.em_sparse_pca.em_update_screened`):
``X w`` goes through the support (``N K`` flops), and of ``f = X'y`` only the entries that a bound cannot
rule out of the top ``K + 1`` are computed. The bound compares with the last full product ``f0 = X'y0``:
``f_j - f0_j = a_j'(y - y0)``, split exactly into its part in the span of the 8 leading eigenvectors of
``X X'`` (kept from the principal-component start) and a Cauchy-Schwarz bound on the rest. The M-step is
then exactly Algorithm 2 on the full ``f`` (the same threshold and kept entries; values to round-off);
when the bound leaves more than ``D / 16`` candidates, or a tie sits at the threshold, the iteration does
the full product, which renews the reference. On leukemia 4 to 9 iterations in 10 are screened.

The default start is the first principal component (both signs when non-negative) plus random starts, 5 in
all; with ``renormalize=True`` the restart kept is the best after renormalization. Missing values (NaN) are
handled by Roweis' generalized E-step in the zero-noise limit (:class:`_ObservedData`), and a ``dask.array``
is read one pass per iteration, or once to form the covariance, through :class:`repro._chunked.DaskSource`
(the data layer shared with :mod:`repro.em_pca`, with the same input policy and errors).

Several components (Section 4): projection deflation ``X <- X (I - ww')`` (Eq. 18); for non-negative
components, orthogonality forces disjoint supports (Eq. 19: features used before are excluded); or
quasi-orthogonality by the penalty ``alpha w'VV'w`` added to the M-step QP (Eq. 20), a convex QP with a
non-isotropic Hessian, solved exactly through its (l+1)-dimensional dual by a semismooth Newton method,
with ``alpha`` tuned to the smallest value that meets a minimum angle to the earlier components.

``renormalize=True`` is the paper's "emPCAopt": the optimal weights on the found support (leading
eigenvector of the covariance restricted to it; for non-negative PCA the non-negative EM restricted to it,
run on the support's own operator, ``N x K`` columns or the ``K x K`` block:
:meth:`repro.linalg.Covariance.restrict`).

Notes
-----
Proposition 3.2 (the reconstruction error never increases) holds when the previous iterate is feasible for
the next M-step's l1 bound, ``||w(t)||_1 <= B(t)``. With the cardinality constraint ``B(t)`` is set
implicitly by ``K`` anew at every iteration and that premise can fail, and then the error can increase
(observed on random data; see the tests). With non-negativity alone (a cone) or no constraint it is monotone.
``history_`` exposes the error of every iterate so this can be checked.

References
----------
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008.
S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1998.
B. Moghaddam, Y. Weiss and S. Avidan. Spectral bounds for sparse PCA: exact and greedy algorithms.
NIPS 18, 2006 (variational renormalization).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator

from ._base import ProjectionMixin, unscale_fitted, unscale_path
from ._chunked import DaskSource, check_observed, gram_chunk, is_dask
from ._rescale import rescaled
from ._threads import blas_limited
from ._validation import (
    ConvergenceWarning,
    _all_finite,
    as_float,
    check_array,
    check_cardinalities,
    check_cardinality,
    check_has_variance,
    check_int,
    check_random_state,
    check_real,
    check_scale,
    warn_not_converged,
)
from .kernels.em_sparse_pca import (
    COLLAPSED,
    CONVERGED,
    MAX_ITER,
    em_update_block,
    screened_block,
    screened_finish,
    screened_products,
    support_of,
)
from .linalg import (
    OPERATORS,
    SPARSE_FRACTION,
    Covariance,
    canonical_sign,
    choose_operator,
    renormalize,
)

__all__ = [
    "CardinalityPath",
    "EMSparsePCA",
    "em_sparse_pca",
    "em_sparse_pca_path",
    "penalized_mstep",
    "renormalize_on_support",
]

_ORTHOGONALITY = ("deflation", "disjoint", "quasi")
_MAX_REDRAWS = 50  # random starts drawn to replace one that collapses to the zero vector
_RHO_MAX = 1e12  # largest relative quasi-orthogonality penalty tried


# --------------------------------------------------------------------------- results
@dataclass
class CardinalityPath:
    """One leading sparse component per cardinality, as a sparse-PCA method sweeps ``K``.

    Shared by :func:`em_sparse_pca_path` and the baselines (thresholding, PathSPCA, SPCA).

    Attributes
    ----------
    method : str
    cardinalities : ndarray of int, shape (n_k,)
    components : ndarray, shape (n_k, n_features)
        Unit-norm loadings as the method found them (row ``j`` for ``cardinalities[j]``).
    variance : ndarray, shape (n_k,)
        ``w'Cw`` with ``C`` the sample covariance (``ddof=1``) of the input.
    components_opt, variance_opt : ndarray, shapes (n_k, n_features), (n_k,)
        After renormalization on the support (optimal weights for the sparsity pattern); equal to the
        plain ones for methods that are optimal on their support by construction, NaN when not computed.
    n_iter : ndarray of int, shape (n_k,)
        Iterations of the kept run (EM iterations, SPCA alternations, greedy steps).
    n_iter_total : ndarray of int, shape (n_k,)
        Iterations spent for that ``K`` over all restarts (the cost driver).
    time : ndarray, shape (n_k,)
        Wall-clock seconds it cost to produce that ``K`` (renormalization included), given the shared
        work in ``init_time``. For forward-greedy methods (PathSPCA) it is cumulative: the time of
        steps ``1..K``.
    init_time : float
        Seconds of work shared by all ``K`` (e.g. the first principal component).
    """

    method: str
    cardinalities: np.ndarray
    components: np.ndarray
    variance: np.ndarray
    components_opt: np.ndarray
    variance_opt: np.ndarray
    n_iter: np.ndarray
    time: np.ndarray
    init_time: float = 0.0
    n_iter_total: np.ndarray = field(default=None)

    def __post_init__(self):
        if self.n_iter_total is None:
            self.n_iter_total = np.asarray(self.n_iter).copy()

    def __len__(self) -> int:
        return len(self.cardinalities)

    def to_frame(self):
        """A tidy ``pandas.DataFrame``: one row per cardinality."""
        import pandas as pd

        return pd.DataFrame(
            {
                "method": self.method,
                "cardinality": self.cardinalities,
                "nnz": (self.components != 0).sum(axis=1),
                "variance": self.variance,
                "variance_opt": self.variance_opt,
                "n_iter": self.n_iter,
                "n_iter_total": self.n_iter_total,
                "time": self.time,
            }
        )


# --------------------------------------------------------------------------- data handling
def _as_data(X, name: str = "X") -> tuple[np.ndarray, np.ndarray, int]:
    """Return ``(A, mean, n_samples)`` with ``A'A = C``, the sample covariance (ddof=1).

    ``X`` is a data matrix (rows are samples) or a :class:`repro.linalg.Covariance`; a covariance
    given only as a matrix is factored ``C = U L U'`` -> ``A = L^(1/2) U'`` so the EM can run on it.
    """
    if isinstance(X, Covariance):
        if X.data is not None:
            A = np.ascontiguousarray(X.data, dtype=np.float64)
        else:
            vals, vecs = np.linalg.eigh(X.matrix)
            A = np.ascontiguousarray((vecs * np.sqrt(np.clip(vals, 0.0, None))).T)
        return A, np.zeros(X.n_features), (X.n_samples or A.shape[0] + 1)
    X = check_array(X, name, min_samples=2)
    cov = Covariance.from_data(X)
    return cov.data, X.mean(axis=0), X.shape[0]


def _numerical_rank_and_pc(A: np.ndarray, need_rank: bool = True, n_left: int = 0):
    """Numerical rank of ``A`` and the leading right singular vector (through the smaller Gram matrix).

    With ``need_rank=False`` and ``N < D`` only the top eigenpairs of the Gram matrix are computed and the
    rank is reported as 0 or 1 (as :func:`_rank_and_pc` does). With ``n_left`` (and ``N < D``) also returns
    the ``n_left`` leading eigenvectors of ``A A'`` (``N x n_left``, orthonormal), else None."""
    N, D = A.shape
    left = None
    if N < D:
        G = A @ A.T
        q = min(n_left, N)
        if need_rank:
            vals, U = np.linalg.eigh(G)
        else:
            vals, U = scipy.linalg.eigh(G, subset_by_index=[N - max(q, 1), N - 1])
        if q:
            left = np.ascontiguousarray(U[:, ::-1][:, :q])
        u = U[:, -1]
        v = A.T @ u
        nv = np.linalg.norm(v)
        v = v / nv if nv > 0 else np.zeros(D)
    else:
        G = A.T @ A
        vals, V = np.linalg.eigh(G)
        v = V[:, -1].copy()
    top = max(vals[-1], 0.0)
    rank = int(np.sum(vals > 1e-10 * top)) if top > 0 else 0
    return rank, canonical_sign(v), left


def fit_function_form(est, X) -> tuple[np.ndarray, np.ndarray]:
    """Fit an estimator with a ``_fit_data(A, mean, dof)`` method on data or a :class:`Covariance`.

    Shared by the function forms (``em_sparse_pca``, ``spca_zou``); returns ``(components_,
    explained_variance_)``.
    """
    if isinstance(X, Covariance):
        A, mean, n = _as_data(X)
        est._fit_data(A, mean, min(n - 1, A.shape[0]))
    else:
        est.fit(X)
    return est.components_, est.explained_variance_


def _leading_pc(A: np.ndarray) -> np.ndarray:
    """Leading eigenvector of ``A'A`` (through ``A A'`` when ``N < D``), canonical sign."""
    _, vecs = Covariance(data=A).eigh(1)
    return vecs[:, 0]


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


# --------------------------------------------------------------------------- missing values and chunks
class _ObservedData:
    """The data with missing entries (NaN) as an operator for the zero-noise EM (Roweis 1998, Sec. 4).

    Roweis' generalized E-step in the zero-noise limit, for one component ``w`` (and one mean ``mu`` per
    restart, estimated jointly): per sample, ``y_n`` is the least-squares coefficient of ``w`` on the
    observed coordinates, ``y_n = sum_O (x_nd - mu_d) w_d / sum_O w_d^2``; the missing ones are filled
    with ``mu_d + y_n w_d``; the mean becomes the column mean of the filled data, and the M-step sees
    ``f = Z_c' y`` with ``Z_c`` the filled data centred at the new mean (the constrained M-step then
    thresholds ``f`` exactly as for complete data). With nothing missing this is the complete-data EM:
    ``y = X_c w``, ``f = X_c' X_c w``. All of it is one pass over the data: per chunk
    (:func:`_rank1_chunk_stats`) the products ``Y'X0``, ``Y'M``, ``(Y*Y)'M`` (``X0``: the data with
    zeros at the missing entries, ``M``: the missing mask), then a small reduction.

    ``h`` (the quality of a restart) is ``(T - SSE) / (N - 1)`` with ``SSE`` the squared error on the
    observed entries and ``T`` their sum of squares about the observed column means: ``w'Cw`` when
    nothing is missing.
    """

    def __init__(self, source, *, estimate_mean: bool = True, mean=None, ddof: int = 1):
        self.source = source
        self.chunked = isinstance(source, DaskSource)
        if self.chunked:  # from the source's first pass (observed counts, means, centred sums of squares)
            nobs = source.obs_count
            colsum = nobs * source.obs_mean
            sumsq = source.obs_m2 + colsum * source.obs_mean
            self.n_samples, self.n_features = source.n, source.p
        else:
            miss = np.isnan(source)
            self.X0 = np.where(miss, 0.0, source)
            self.Mf = miss.astype(np.float64) if miss.any() else None
            self.Of = 1.0 - self.Mf if self.Mf is not None else None
            colsum, nobs = self.X0.sum(axis=0), (~miss).sum(axis=0).astype(np.float64)
            sumsq = np.einsum("ij,ij->j", self.X0, self.X0)
            self.n_samples, self.n_features = source.shape
        self.colsum, self.nobs, self.nmiss = colsum, nobs, self.n_samples - nobs
        self.obs_mean = colsum / np.maximum(nobs, 1.0)
        self.estimate_mean = estimate_mean
        self.fixed_mean = self.obs_mean if mean is None else np.asarray(mean, dtype=np.float64)
        if not estimate_mean and mean is None:
            self.fixed_mean = np.zeros(self.n_features)
        self.colsq = sumsq
        self.sumsq = sumsq = float(sumsq.sum())
        # T: squared deviations of the observed entries from the starting mean.
        m0 = self.obs_mean if estimate_mean else self.fixed_mean
        self.total = sumsq - 2.0 * float(m0 @ colsum) + float(nobs @ (m0 * m0))
        self.dof = self.n_samples - ddof
        self.mu = np.zeros((0, self.n_features))

    # ----- the interface used by _em_block
    def start(self, R: int):
        """Reset the per-restart means for a block of ``R`` restarts."""
        base = self.obs_mean if self.estimate_mean else self.fixed_mean
        self.mu = np.tile(base, (R, 1))

    def restart_row(self, r: int):
        self.mu[r] = self.obs_mean if self.estimate_mean else self.fixed_mean

    def row_mean(self, r: int) -> np.ndarray:
        return self.mu[r].copy()

    def trace(self) -> float:
        return self.total / self.dof

    def products(self, W, rows=None, *, update: bool = True, mean=None):
        """One E-step and the M-step statistics for the rows of ``W``: ``(f rows, h)`` as for a covariance."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        if mean is not None:
            mu = np.tile(mean, (W.shape[0], 1))
        else:
            rows = np.arange(W.shape[0]) if rows is None else rows
            mu = self.mu[rows]
        YtX, YtM, Y2tM, sY, sYnum, _ = self._stats(mu, W)
        N = self.n_samples
        mu_new = (self.colsum + mu * self.nmiss + W * YtM) / N if self.estimate_mean else mu
        F = YtX + mu * YtM + W * Y2tM - mu_new * sY[:, None]
        sse = self.sumsq - 2.0 * (mu @ self.colsum) + (mu * mu) @ self.nobs - sYnum
        h = (self.total - sse) / self.dof
        if update and mean is None:
            self.mu[rows] = mu_new
        return F / self.dof, h

    def _stats(self, mu, W):
        if self.chunked:
            return self.source.map_sum(_rank1_chunk_stats, mu, W)
        return _rank1_stats(self.X0, self.Of, self.Mf, mu, W)

    def completed_variance(self, W, w1, mean) -> tuple[np.ndarray, float]:
        """``w'C w`` for the rows of ``W`` and ``tr C``, ``C`` the covariance of the data completed by the
        E-step of ``w1`` (missing entries filled with ``mean + y w1``); the sample covariance when
        nothing is missing. Two passes."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        w1 = np.asarray(w1, dtype=np.float64)[None, :]
        mu = np.asarray(mean, dtype=np.float64)[None, :]
        _, YtM, Y2tM, _, _, _ = self._stats(mu, w1)
        N = self.n_samples
        col_sum = self.colsum + mu[0] * self.nmiss + w1[0] * YtM[0]
        col_sq = self.colsq + mu[0] ** 2 * self.nmiss + 2.0 * mu[0] * w1[0] * YtM[0] + w1[0] ** 2 * Y2tM[0]
        tr = float((col_sq - col_sum * col_sum / N).sum()) / self.dof
        mu_fill = col_sum / N
        if self.chunked:
            (q,) = self.source.map_sum(_completed_quad, mu[0], w1[0], mu_fill, W)
        else:
            X = self.X0 if self.Mf is None else np.where(self.Mf.astype(bool), np.nan, self.X0)
            (q,) = _completed_quad(X, None, mu[0], w1[0], mu_fill, W)
        return q / self.dof, tr

    def deflate(self, w, mean) -> _ObservedData:
        """The residual ``x - mean - y w`` on the observed entries (missing ones stay missing), ``y`` from the
        E-step of ``w``: projection deflation (Eq. 18) of the data, with the mean fixed from now on."""
        w = np.asarray(w, dtype=np.float64)
        mean = np.asarray(mean, dtype=np.float64)
        if self.chunked:
            src = self.source.derive(_rank1_residual, mean, w)  # the same chunks, read through the deflation
        else:
            X = np.where(self.Mf.astype(bool), np.nan, self.X0) if self.Mf is not None else self.X0
            src = _rank1_residual(X, mean, w)
        return _ObservedData(src, estimate_mean=False)

    def imputed_covariance(self) -> Covariance:
        """The covariance of the data with missing entries set to the mean (one pass); ``C`` when complete."""
        m = self.obs_mean if self.estimate_mean else self.fixed_mean
        if self.chunked:
            (G,) = self.source.map_sum(_imputed_gram, m)
        else:
            Z = self.X0 - m if self.Mf is None else np.where(self.Mf.astype(bool), 0.0, self.X0 - m)
            G = Z.T @ Z
        return Covariance(matrix=0.5 * (G + G.T) / self.dof, n_samples=self.n_samples)


def _rank1_stats(X0, Of, Mf, mu, W):
    """Per chunk: the E-step of :class:`_ObservedData` and its sufficient statistics.

    ``X0`` (n x D) has zeros at the missing entries, ``Of``/``Mf`` are the observed/missing masks (None:
    nothing missing), ``mu`` and ``W`` (R x D) the restarts' means and loadings. Returns ``Y'X0``, ``Y'M``,
    ``(Y*Y)'M`` (R x D), ``sum_n y`` and ``sum_n y num`` (R,).
    """
    P = X0 @ W.T
    if Mf is None:
        num = P - np.einsum("ij,ij->i", mu, W)
        Y = num / np.einsum("ij,ij->i", W, W)
        YtM = np.zeros(W.shape)
        Y2tM = YtM
    else:
        num = P - Of @ (mu * W).T
        den = Of @ (W * W).T
        Y = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
        YtM = Y.T @ Mf
        Y2tM = (Y * Y).T @ Mf
    return Y.T @ X0, YtM, Y2tM, Y.sum(axis=0), np.einsum("ij,ij->j", Y, num), np.einsum("ij,ij->j", Y, Y)


def _rank1_chunk_stats(B, cache, mu, W):
    B = np.asarray(B, dtype=np.float64)
    miss = np.isnan(B)
    if miss.any():
        Mf = miss.astype(np.float64)
        return _rank1_stats(np.where(miss, 0.0, B), 1.0 - Mf, Mf, mu, W)
    return _rank1_stats(B, None, None, mu, W)


def _completed_quad(B, cache, mean, w, mu_fill, W):
    """Per chunk: ``sum_n ((z_n - mu_fill) . w_j)^2`` for the rows ``w_j`` of ``W``, ``z_n`` the sample
    completed by the E-step of ``w``."""
    B = np.asarray(B, dtype=np.float64)
    miss = np.isnan(B)
    Z = np.where(miss, 0.0, B)
    if miss.any():
        den = (~miss) @ (w * w)
        num = np.where(miss, 0.0, B - mean) @ w
        y = np.divide(num, den, out=np.zeros(B.shape[0]), where=den > 0)
        Z = np.where(miss, mean + np.outer(y, w), Z)
    P = (Z - mu_fill) @ W.T
    return (np.einsum("ij,ij->j", P, P),)


def _rank1_residual(B, mean, w):
    B = np.asarray(B, dtype=np.float64)
    miss = np.isnan(B)
    R = np.where(miss, 0.0, B - mean)
    den = (~miss) @ (w * w)
    y = np.divide(R @ w, den, out=np.zeros(B.shape[0]), where=den > 0)
    R -= np.outer(y, w)
    R[miss] = np.nan
    return R


def _imputed_gram(B, cache, mean):
    Z = np.asarray(B, dtype=np.float64) - mean
    Z[np.isnan(Z)] = 0.0
    return (Z.T @ Z,)


# --------------------------------------------------------------------------- the EM runs
@dataclass
class _Run:
    w: np.ndarray
    h: float  # w'Cw on the working operator
    n_iter: int
    status: int
    history: np.ndarray  # h of every iterate, start included
    n_iter_total: int = 0  # iterations including collapsed starts that were redrawn
    mean: np.ndarray | None = None  # the run's mean (missing-value operator only)


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
    (:func:`repro.kernels.em_sparse_pca.em_update_screened`), with a full product (``N D``) when the bound
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
            self.B = np.ascontiguousarray(A.T @ U)
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

    def update(self, W, rows, state, norms, cosines, work):
        """The M-step of the rows (after :meth:`products`), as ``em_update_block`` does it on ``X'Y``."""
        A, K, nonneg, exc = self.A, self.K, self.nonneg, self.excluded
        full = screened_block(
            self.At, self.colnorm, K, nonneg, exc, W, rows, self.supp, self.ns, self.Y, self.Y0, self.F0,
            self.ref, self.nref, state, self.cand, self.fc, self.nomask, work, self.max_cand, norms, cosines,
            self.Ut, self.B, self.cr,
        )  # fmt: skip
        n_full = int(np.count_nonzero(full))
        self.n_full += n_full
        self.n_screened += rows.size - n_full
        if n_full:
            for j in np.flatnonzero(full):
                np.dot(A.T, self.Y[rows[j]], out=self.F0[rows[j]])
            screened_finish(
                self.F0, K, nonneg, exc, W, rows, full, self.supp, self.ns, self.Y, self.Y0, self.ref,
                self.nref, state, work, norms, cosines,
            )  # fmt: skip


def _em_block(op, W0, K, nonneg, excluded, tol, max_iter, rngs=None, screen=True) -> list[_Run]:
    """EM runs (Algorithms 1-2) from the rows of ``W0`` (R x D), all together.

    One iteration of every active restart is one call ``op.products(W)`` (``W C`` and ``w'Cw`` for a block:
    one matrix-matrix product) and the kernel :func:`repro.kernels.em_sparse_pca.em_update_block` (the
    O(D) projection per row). A restart that converges (``|w(t+1)' w(t)| > 1 - tol``) or reaches
    ``max_iter`` leaves the block; one that collapses to the zero vector is replaced by a new random start
    from its generator ``rngs[r]`` (up to 50 times) when given. Row ``r``'s iterates are those of a run
    from ``W0[r]`` alone (to round-off: the block product sums in another order).
    """
    W = np.array(W0, dtype=np.float64, order="C", ndmin=2)
    R, D = W.shape
    K, nonneg, tol = int(K), bool(nonneg), float(tol)
    if hasattr(op, "start"):
        op.start(R)
    state = np.zeros(R)
    work = np.empty(D)
    norms, cosines = np.empty(R), np.empty(R)
    it = np.zeros(R, dtype=np.int64)  # iterations of each row's current run
    spent = np.zeros(R, dtype=np.int64)  # iterations of runs that collapsed and were redrawn
    tries = np.zeros(R, dtype=np.int64)
    status = np.full(R, -1)
    hist = np.empty((R, min(max_iter, 255) + 1))  # grown on demand (max_iter may be huge)
    active = np.arange(R)
    scr = _Screen(op, W, K, nonneg, excluded) if screen and _Screen.applies(op, K, D) else None

    def collapse(r, t_end):
        if rngs is not None and rngs[r] is not None and tries[r] < _MAX_REDRAWS:
            tries[r] += 1
            spent[r] += t_end
            W[r] = _draw_start(rngs[r], D, nonneg, excluded)
            it[r] = 0
            state[r] = 0.0
            if hasattr(op, "restart_row"):
                op.restart_row(r)
            if scr is not None:
                scr.reset(r, W)
            return True
        status[r] = COLLAPSED
        it[r] = t_end
        W[r] = 0.0
        return False

    while active.size:
        if scr is None:
            F, H = op.products(W if active.size == R else W[active], active)
        else:
            F, H = None, scr.products(W, active)
        if it.max() + 1 >= hist.shape[1]:
            hist = np.concatenate(
                [hist, np.empty((R, min(hist.shape[1], max_iter + 1 - hist.shape[1]) + 1))], 1
            )
        hist[active, it[active]] = H
        ok = H > 0
        if not ok.all():
            for r in active[~ok]:
                collapse(r, it[r])
            F, rows = (F[ok] if F is not None else None), active[ok]
        else:
            rows = active
        if scr is None:
            em_update_block(
                np.ascontiguousarray(F), K, nonneg, excluded, W, work, state, rows, norms, cosines
            )
        else:
            scr.update(W, rows, state, norms, cosines, work)
        it[rows] += 1
        m = rows.size
        zero = norms[:m] == 0.0
        if zero.any():
            for r in rows[zero]:
                collapse(r, it[r])
        conv = ~zero & (cosines[:m] > 1.0 - tol)
        status[rows[conv]] = CONVERGED
        status[rows[~zero & ~conv & (it[rows] >= max_iter)]] = MAX_ITER
        active = active[status[active] < 0]
    done = np.flatnonzero(status != COLLAPSED)
    hfinal = np.zeros(R)
    if done.size:
        hd = op.products(W[done], done)[1] if scr is None else scr.products(W, done)
        hfinal[done] = hd
        hist[done, it[done]] = hd
    runs = []
    for r in range(R):
        n = int(it[r])
        col = status[r] == COLLAPSED
        hist_r = hist[r, : n + (0 if col else 1)].copy()
        mean = op.row_mean(r) if hasattr(op, "row_mean") else None
        runs.append(_Run(W[r].copy(), float(hfinal[r]), n, int(status[r]), hist_r, n + int(spent[r]), mean))
    return runs


def _em(op, w0, K, nonneg, excluded, tol, max_iter) -> _Run:
    """One EM run from ``w0``: :func:`_em_block` with a block of one."""
    return _em_block(op, np.asarray(w0)[None, :], K, nonneg, excluded, tol, max_iter)[0]


def _em_on_support(op: Covariance, w0, nonneg, tol, max_iter) -> _Run:
    """The EM from ``w0`` with every feature off its support excluded (no cardinality bound), run on the
    support's own operator (:meth:`repro.linalg.Covariance.restrict`: ``N K`` or ``K^2`` per iteration
    instead of ``N D`` or ``D^2``); the same iterates as ``_em(op, w0, D, nonneg, w0 == 0, ...)`` to
    round-off, mapped back to all ``D`` features."""
    S = np.flatnonzero(w0)
    r = _em(op.restrict(S), w0[S], S.size, nonneg, np.zeros(S.size, dtype=bool), tol, max_iter)
    w = np.zeros(w0.shape[0])
    w[S] = r.w
    r.w = w
    return r


def _quad_rows(op: Covariance, W) -> np.ndarray:
    """``w'Cw`` for the rows of ``W``, each through its support (``N K`` or ``K^2`` flops when K-sparse)."""
    h = np.empty(W.shape[0])
    D = W.shape[1]
    for r, w in enumerate(W):
        S = np.flatnonzero(w)
        if S.size * SPARSE_FRACTION >= D:  # dense: no copy of the support's columns
            h[r] = op.quad(w)
        elif op.matrix is not None:
            h[r] = w[S] @ op.matrix[np.ix_(S, S)] @ w[S]
        else:
            y = op.data[:, S] @ w[S]
            h[r] = y @ y
    return h


def _draw_start(rng: np.random.Generator, D: int, nonneg: bool, excluded: np.ndarray) -> np.ndarray:
    """A random unit start: Gaussian direction, folded into the non-negative orthant if ``nonneg``."""
    w = rng.standard_normal(D)
    if nonneg:
        w = np.abs(w)
    w[excluded] = 0.0
    n = np.linalg.norm(w)
    if n == 0:  # every feature excluded; the caller refuses this case
        return w
    return w / n


# --------------------------------------------------------------------------- Eq. 20: the penalized M-step
def penalized_mstep(
    b,
    V,
    rho: float,
    *,
    l1_bound: float | None = None,
    nonneg: bool = False,
    allowed=None,
    mu0=None,
    lam0: float | None = None,
    tol: float = 1e-13,
    max_iter: int = 100,
):
    """Solve the quasi-orthogonal M-step QP (Sigg & Buhmann 2008, Eqs. 14, 17, 20) exactly.

    ``min_w  ||w||^2 - 2 b'w + rho ||V'w||^2``  subject to ``w >= 0`` (if ``nonneg``),
    ``||w||_1 <= l1_bound`` (if given) and ``w_i = 0`` off ``allowed``.

    This is Eq. 12 divided by ``h`` (so ``b = f/h = w*``, ``rho = alpha/h``) plus the penalty of Eq. 20:
    convex, with the non-isotropic Hessian ``2 (I + rho VV')``. It is solved through its dual in the
    ``l + 1`` multipliers ``(mu, lambda)`` of ``u = V'w`` and the l1 bound:
    ``w(mu, lambda) = T_lambda(b - V mu)`` (``T`` the soft threshold, or ``(.-lambda)_+`` if ``nonneg``)
    minimizes the Lagrangian, and the convex, piecewise-quadratic dual function
    ``phi = 1/2 ||w||^2 + ||mu||^2 / (2 rho) + lambda B`` is minimized over ``lambda >= 0`` by a projected
    semismooth Newton method with Armijo backtracking (exact once the active set settles).

    Parameters
    ----------
    b : ndarray, shape (D,)
    V : ndarray, shape (D, l)
        Earlier components as columns.
    rho : float > 0
    l1_bound : float or None
    nonneg : bool
    allowed : bool ndarray, shape (D,), optional
    mu0, lam0 : warm start of the multipliers.

    Returns
    -------
    w : ndarray, shape (D,)
        The minimizer (not normalized).
    mu : ndarray, shape (l,)
    lam : float
    """
    b = np.asarray(b, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64).reshape(b.shape[0], -1)
    D, l = V.shape
    allowed = np.ones(D, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    use_lam = l1_bound is not None and np.isfinite(l1_bound)
    B = float(l1_bound) if use_lam else 0.0
    mu = np.zeros(l) if mu0 is None else np.array(mu0, dtype=np.float64)
    lam = max(float(lam0), 0.0) if (use_lam and lam0 is not None) else 0.0
    inv_rho = 1.0 / rho
    scale = 1.0 + float(np.abs(b).max(initial=0.0))

    def primal(mu, lam):
        r = b - V @ mu
        if nonneg:
            a = r - lam
            s = np.ones(D)
        else:
            a = np.abs(r) - lam
            s = np.sign(r)
        act = (a > 0) & allowed
        w = np.where(act, s * a, 0.0)
        return w, act, s

    def phi(mu, lam, w):
        return 0.5 * float(w @ w) + 0.5 * inv_rho * float(mu @ mu) + (lam * B if use_lam else 0.0)

    w, act, s = primal(mu, lam)
    f = phi(mu, lam, w)
    for _ in range(max_iter):
        g_mu = inv_rho * mu - V.T @ w
        g_lam = B - float(np.abs(w).sum()) if use_lam else 0.0
        free_lam = use_lam and not (lam <= 0.0 and g_lam >= 0.0)
        pg = np.abs(g_mu).max(initial=0.0)
        if free_lam:
            pg = max(pg, abs(g_lam))
        if pg <= tol * scale:
            break
        VA = V[act]
        H = VA.T @ VA + inv_rho * np.eye(l)
        if free_lam:
            sA = s[act]
            Hf = np.empty((l + 1, l + 1))
            Hf[:l, :l] = H
            Hf[:l, l] = Hf[l, :l] = VA.T @ sA
            Hf[l, l] = act.sum() + 1e-12 * scale
            d = -np.linalg.solve(Hf, np.append(g_mu, g_lam))
            d_mu, d_lam = d[:l], d[l]
        else:
            d_mu, d_lam = -np.linalg.solve(H, g_mu), 0.0
        t = 1.0
        while True:
            mu_n = mu + t * d_mu
            lam_n = max(lam + t * d_lam, 0.0) if use_lam else 0.0
            w_n, act_n, s_n = primal(mu_n, lam_n)
            f_n = phi(mu_n, lam_n, w_n)
            decrease = float(g_mu @ (mu_n - mu)) + (g_lam * (lam_n - lam) if use_lam else 0.0)
            if f_n <= f + 1e-4 * decrease + 1e-15 * abs(f) or t < 1e-10:
                break
            t *= 0.5
        moved = max(np.abs(mu_n - mu).max(initial=0.0), abs(lam_n - lam))
        mu, lam, w, act, s, f = mu_n, lam_n, w_n, act_n, s_n, f_n
        if moved <= 1e-16 * scale:
            break
    return w, mu, lam


def _alg2_l1_bound(b: np.ndarray, K: int, nonneg: bool, allowed: np.ndarray) -> float:
    """The l1 bound that Algorithm 2 sets implicitly: ``sum_{i<=K} (s_i - s_(K+1))`` (Eq. 14)."""
    v = b[allowed]
    v = v[v > 0] if nonneg else np.abs(v)
    if K >= v.size:
        return float(v.sum())
    part = -np.partition(-v, K)  # part[K] is the (K+1)-th largest, part[:K] the K largest
    return float(np.sum(part[:K] - part[K]))


def _em_quasi(op, w0, K, nonneg, excluded, V, rho, tol, max_iter) -> _Run:
    """EM with the penalized M-step of Eq. 20 (Python loop around :func:`penalized_mstep`).

    With a cardinality ``K`` the QP gets the l1 bound Algorithm 2 would set; since the Hessian is not
    isotropic its solution can have more than ``K`` non-zeros, and then only the ``K`` largest are kept.
    """
    D = w0.shape[0]
    allowed = ~excluded
    w = w0.copy()
    mu = lam = None
    hist = []
    status = MAX_ITER
    n_iter = max_iter
    for t in range(max_iter):
        F, H = op.products(w[None, :])
        h = float(H[0])
        hist.append(h)
        if not h > 0:
            return _Run(np.zeros(D), 0.0, t, COLLAPSED, np.array(hist), t)
        b = F[0] / h  # Eq. 13
        bound = _alg2_l1_bound(b, K, nonneg, allowed) if K < D else None
        wn, mu, lam = penalized_mstep(
            b, V, rho, l1_bound=bound, nonneg=nonneg, allowed=allowed, mu0=mu, lam0=lam
        )
        if K < D and np.count_nonzero(wn) > K:
            keep = np.argpartition(-np.abs(wn), K)[:K]
            tmp = np.zeros(D)
            tmp[keep] = wn[keep]
            wn = tmp
        nrm = np.linalg.norm(wn)
        if nrm == 0:
            return _Run(np.zeros(D), 0.0, t + 1, COLLAPSED, np.array(hist), t + 1)
        wn /= nrm
        c = abs(float(wn @ w))
        w = wn
        if c > 1.0 - tol:
            status, n_iter = 0, t + 1
            break
    h = float(op.products(w[None, :])[1][0])
    hist.append(h)
    return _Run(w, h, n_iter, status, np.array(hist), n_iter)


# --------------------------------------------------------------------------- one component
@dataclass
class _Settings:
    nonneg: bool
    init: object  # "auto", "pc", "random" or an ndarray (D,)
    n_restarts: int
    renormalize: bool
    tol: float
    max_iter: int


@dataclass
class _Component:
    w: np.ndarray  # final (renormalized if asked)
    w_em: np.ndarray  # as EM found it
    h: float
    h_em: float
    n_iter: int
    n_iter_total: int
    status: int
    history: np.ndarray
    rho: float = 0.0
    mean: np.ndarray | None = None
    mean_em: np.ndarray | None = None


def _starts(s: _Settings, D, excluded, start_rngs, pc) -> list[tuple[np.ndarray, object]]:
    """The starts of one component as ``(w0, rng for redraws)``.

    ``"auto"`` (the default): the first principal component (both signs with ``nonneg``) and random starts
    up to ``n_restarts`` in all; ``"pc"``: the principal component (both signs with ``nonneg``);
    ``"random"``: ``n_restarts`` random starts; an array: that start.
    """
    if isinstance(s.init, np.ndarray):
        return [(s.init, start_rngs[0])]
    if s.init in ("pc", "auto"):
        pcs = [pc, -pc] if s.nonneg else [pc]
        out = [(p, start_rngs[i % len(start_rngs)]) for i, p in enumerate(pcs)]
        if s.init == "auto":
            out += [(_draw_start(g, D, s.nonneg, excluded), g) for g in start_rngs[len(pcs) :]]
        return out
    return [(_draw_start(g, D, s.nonneg, excluded), g) for g in start_rngs]


def _best(runs: list[_Run]) -> tuple[_Run | None, int]:
    """The run of largest variance (first on ties) and the iterations spent by all."""
    best, total = None, 0
    for r in runs:
        total += r.n_iter_total
        if r.status != COLLAPSED and (best is None or r.h > best.h):
            best = r
    return best, total


def _solve_component(op, K, s: _Settings, excluded, start_rngs, pc, V=None, rho=0.0) -> _Component:
    """EM (best of the starts, run as one block) for one component on the working operator, then
    renormalization."""
    D = op.n_features
    nonneg = s.nonneg
    starts = _starts(s, D, excluded, start_rngs, pc)
    if V is None:
        W0 = np.array([w for w, _ in starts])
        runs = _em_block(op, W0, K, nonneg, excluded, s.tol, s.max_iter, [g for _, g in starts])
    else:
        runs = []
        for w0, g in starts:
            r = _em_quasi(op, w0, K, nonneg, excluded, V, rho, s.tol, s.max_iter)
            tries, spent = 0, r.n_iter
            while r.status == COLLAPSED and tries < _MAX_REDRAWS and g is not None:
                r = _em_quasi(
                    op, _draw_start(g, D, nonneg, excluded), K, nonneg, excluded, V, rho, s.tol, s.max_iter
                )
                spent += r.n_iter
                tries += 1
            r.n_iter_total = spent
            runs.append(r)
    best, total = _best(runs)
    if best is None:
        raise ValueError(
            "every start collapsed to the zero vector (no feature can take a non-zero loading); the "
            "remaining data has no variance on the allowed features: lower n_components."
        )
    if not s.renormalize:
        w_em, h_em, mean = best.w, best.h, best.mean
        w, h = w_em, h_em
    else:
        # emPCAopt: optimal weights on the support (Sigg & Buhmann 2008, Sec. 5.1), for the support of
        # every restart (each distinct support once); the restart kept is the best after renormalization,
        # so adding starts never lowers the result.
        seen: dict = {}
        pick = None
        for r in runs:
            if r.status == COLLAPSED:
                continue
            key = (r.w != 0).tobytes()
            if key not in seen:
                seen[key] = _renormalized(op, r, nonneg, excluded, V, rho, s)
                total += seen[key][3]
            w_r, h_r, mean_r, _ = seen[key]
            if (
                pick is None
                or h_r > pick[1] * (1 + 1e-12)
                or (h_r >= pick[1] * (1 - 1e-12) and r.h > pick[0].h)
            ):
                pick = (r, h_r, w_r, mean_r)
        r, h, w, mean = pick
        w_em, h_em, best = r.w, r.h, r
    if not nonneg:  # the sign is arbitrary; fix it so the result does not depend on which start won
        w_em, w = canonical_sign(w_em), canonical_sign(w)
    return _Component(w, w_em, h, h_em, best.n_iter, total, best.status, best.history, rho, mean, best.mean)


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


# --------------------------------------------------------------------------- validation helpers
_INITS = ("auto", "pc", "random")


def _check_init(init, D: int, L: int):
    if init is None or (isinstance(init, str) and init in _INITS):
        return init
    if isinstance(init, str):
        raise ValueError(f"init must be None, 'auto', 'pc', 'random' or an array; got {init!r}.")
    arr = as_float(init, "init")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != D or arr.shape[0] not in (1, L):
        raise ValueError(
            f"init must have shape ({D},) or ({L}, {D}) (one start per component); got {np.shape(init)}."
        )
    if not np.isfinite(arr).all():
        raise ValueError("init holds NaN or infinite values.")
    norms = np.linalg.norm(arr, axis=1)
    if (norms == 0).any():
        raise ValueError("init holds a zero vector; a start must be a non-zero direction.")
    return arr / norms[:, None]


#: Starts of the default (``init=None`` -> ``"auto"``): the first principal component (both signs for
#: non-negative PCA) and random starts up to this many in all, run as one block.
DEFAULT_STARTS = 5


def _resolve_restarts(n_restarts, init_kind: str) -> int:
    if n_restarts is None:
        return {"random": 10, "auto": DEFAULT_STARTS}.get(init_kind, 1)
    return check_int(n_restarts, "n_restarts", low=1)


# --------------------------------------------------------------------------- operators
def _prepare(X, operator: str, n_vectors: int, name: str = "X", checked: bool = False):
    """The working operator for ``X`` and what the fit needs of it.

    Returns ``(op, mean, n_samples)``: a :class:`repro.linalg.Covariance` (through the data or the
    ``D x D`` matrix, by :func:`repro.linalg.choose_operator` unless ``operator`` forces one) for complete
    data, or an :class:`_ObservedData` for data with missing values (NaN) or a Dask array that the cost
    model keeps as data. ``checked=True``: ``X`` already passed ``check_array`` (NaN allowed).
    """
    if operator not in OPERATORS:
        raise ValueError(f"operator must be one of {OPERATORS}; got {operator!r}.")
    if isinstance(X, Covariance):
        op = X
        if operator == "covariance" and X.matrix is None:
            op = Covariance(matrix=X.dense(), n_samples=X.n_samples)
        elif operator == "data" and X.data is None:
            A, _, _ = _as_data(X)
            op = Covariance(data=A, n_samples=X.n_samples)
        return op, np.zeros(X.n_features), X.n_samples or X.n_features + 1
    if is_dask(X):  # the first pass: statistics and checks (repro._chunked's policy)
        src = DaskSource(X, name, min_samples=2)
        N, D = src.n, src.p
        kind = operator if operator != "auto" else choose_operator(N, D, n_vectors=n_vectors)
        if not src.missing and kind == "covariance":  # one more pass forms the D x D covariance
            (G,) = src.map_sum(gram_chunk, src.mean)
            return Covariance(matrix=0.5 * (G + G.T) / (N - 1), n_samples=N), src.mean, N
        op = _ObservedData(src)
        return op, op.obs_mean, N
    if not checked:
        X = check_array(X, name, min_samples=2, allow_nan=True)
    N, D = X.shape
    if not _all_finite(X):  # one sum decides the usual case; NaN (missing) entries otherwise
        miss = np.isnan(X)
        check_observed(name, np.flatnonzero(miss.all(axis=1)), (~miss).sum(axis=0))
        op = _ObservedData(X)
        return op, op.obs_mean, N
    mean = X.mean(axis=0)
    op = Covariance._from_valid(X, operator=operator, n_vectors=n_vectors, mean=mean)
    return op, mean, N


def _rank_and_pc(op, need_rank: bool = True) -> tuple[int, np.ndarray]:
    """Numerical rank of the operator and its leading eigenvector (canonical sign); for data with missing
    values, of the covariance with missing entries set to the mean.

    With ``need_rank=False`` (one component: only "is there any variance" matters) the rank is reported as
    0 or 1 and a ``D x D`` matrix gets only its leading eigenpair (Lanczos, to machine precision), not a
    full eigendecomposition.
    """
    if isinstance(op, _ObservedData):
        op = op.imputed_covariance()
    if op.matrix is not None and not need_rank and op.n_features > 50:
        return _top_pc_lanczos(op.matrix)
    if op.matrix is not None:
        vals, V = np.linalg.eigh(op.matrix)
        v = V[:, -1].copy()
        top = max(vals[-1], 0.0)
        rank = int(np.sum(vals > 1e-10 * top)) if top > 0 else 0
        return rank, canonical_sign(v)
    rank, pc, left = _numerical_rank_and_pc(op.data, need_rank, SCREEN_RANK)
    op._gram_left = left  # kept for the screened iterations (:class:`_Screen`) on this operator
    return rank, pc


def _top_pc_lanczos(M: np.ndarray) -> tuple[int, np.ndarray]:
    import scipy.sparse.linalg

    D = M.shape[0]
    if not np.trace(M) > 0:
        return 0, np.zeros(D)
    try:
        vals, V = scipy.sparse.linalg.eigsh(M, k=1, which="LA", v0=np.ones(D), tol=0)
    except scipy.sparse.linalg.ArpackError:  # pragma: no cover - falls back to the dense solver
        vals, V = np.linalg.eigh(M)
    v = V[:, -1].copy()
    return (1 if vals[-1] > 0 else 0), canonical_sign(v)


def _leading_pc_op(op) -> np.ndarray:
    if isinstance(op, _ObservedData):
        op = op.imputed_covariance()
    _, vecs = op.eigh(1)
    return vecs[:, 0]


def _deflate(op, w, mean):
    """Projection deflation (Eq. 18) of the working operator."""
    if isinstance(op, _ObservedData):
        return op.deflate(w, mean)
    return op.deflate(w, "projection")


# --------------------------------------------------------------------------- the fit
def _fit(
    op,
    L,
    ks,
    *,
    nonneg,
    init,
    n_restarts,
    renormalize,
    orthogonality,
    min_angle_deg,
    penalty,
    tol,
    max_iter,
    rng,
):
    """Components one after another on the working operator. Returns a list of _Component."""
    D = op.n_features
    rank, pc0 = _rank_and_pc(op, need_rank=L > 1)
    if rank == 0:
        raise ValueError("X has no variance (every column is constant); there is no component to find.")
    if orthogonality == "deflation" and L > rank:
        raise ValueError(
            f"n_components={L} exceeds the numerical rank {rank} of the centred data; deflation leaves "
            f"nothing after {rank} components. Lower n_components."
        )
    if orthogonality == "quasi" and L > 1 and isinstance(op, _ObservedData):
        raise ValueError(
            "orthogonality='quasi' is not supported with missing values or Dask input; use 'deflation' or "
            "'disjoint', or impute the missing entries."
        )
    Aw = op
    excluded = np.zeros(D, dtype=bool)
    comps: list[_Component] = []
    V = np.zeros((D, 0))
    for l in range(L):
        K = int(ks[l])
        if excluded.all():
            raise ValueError(
                f"n_components={L} is too many: components {l} and later have no feature left, since "
                "orthogonal non-negative components need disjoint supports (Eq. 19). Lower n_components or "
                "use orthogonality='quasi'."
            )
        if isinstance(init, np.ndarray):
            kind = init[l] if init.shape[0] > l else "auto"
        else:
            kind = init if init is not None else "auto"
        kind_name = kind if isinstance(kind, str) else "array"
        R = _resolve_restarts(n_restarts, kind_name)
        seeds = rng.integers(0, 2**63 - 1, size=R)
        start_rngs = [np.random.default_rng(int(sd)) for sd in seeds]
        pc = None
        if isinstance(kind, str) and kind in ("pc", "auto"):
            if l == 0 or orthogonality != "deflation":
                pc = pc0
            else:
                try:
                    pc = _leading_pc_op(Aw)
                except ValueError:
                    raise ValueError(
                        f"n_components={L} exceeds the rank of the data left after {l} deflations; lower "
                        "n_components."
                    ) from None
        s = _Settings(nonneg, kind, R, renormalize, tol, max_iter)
        if orthogonality == "quasi" and l > 0:
            comp = _solve_quasi(Aw, K, s, excluded, start_rngs, pc, V, penalty, min_angle_deg)
        else:
            comp = _solve_component(Aw, K, s, excluded, start_rngs, pc)
        if comp.status == MAX_ITER:
            warn_not_converged("EMSparsePCA", max_iter, tol, f"(component {l})")
        comp.op = Aw
        comps.append(comp)
        w = comp.w
        V = np.column_stack([V, w])
        if orthogonality == "deflation" and l + 1 < L:
            Aw = _deflate(Aw, w, comp.mean)
        if orthogonality == "disjoint" or (orthogonality == "deflation" and nonneg):
            excluded = excluded | (w != 0)  # Eq. 19
    return comps


def _solve_quasi(op, K, s, excluded, start_rngs, pc, V, penalty, min_angle_deg) -> _Component:
    """Quasi-orthogonal component (Eq. 20): restarts at the initial penalty, then the penalty search.

    With ``min_angle_deg``, the relative penalty ``rho = alpha / h`` is raised (x10) until the angle to
    every earlier component is at least the minimum, then lowered by bisection in ``log(rho)`` to the
    smallest value that still meets it (the least penalized, hence highest-variance, admissible solution).
    """
    comp = _solve_component(op, K, s, excluded, start_rngs, pc, V=V, rho=penalty)
    if min_angle_deg is None:
        return comp
    cos_max = np.cos(np.deg2rad(min_angle_deg))

    def ok(c):
        return c is not None and float(np.abs(V.T @ c.w).max()) <= cos_max + 1e-12

    def solve_at(rho, start):
        s1 = _Settings(s.nonneg, start, 1, s.renormalize, s.tol, s.max_iter)
        try:
            return _solve_component(op, K, s1, excluded, start_rngs[:1], None, V=V, rho=rho)
        except ValueError:  # every start collapsed under this penalty: not admissible
            return None

    def cost(c):
        return 0 if c is None else c.n_iter_total

    total = comp.n_iter_total
    good = comp if ok(comp) else None
    bad_rho = None if good is not None else penalty
    good_rho = penalty if good is not None else None
    last = comp
    if good is None:
        rho = penalty
        while good is None and rho < _RHO_MAX:
            rho *= 10.0
            c = solve_at(rho, last.w_em)
            total += cost(c)
            if c is None:
                break
            last = c
            if ok(last):
                good, good_rho = last, rho
            else:
                bad_rho = rho
        if good is None:
            warnings.warn(
                f"EMSparsePCA: no quasi-orthogonality penalty (up to {_RHO_MAX:g}) reached the minimum "
                f"angle of {min_angle_deg} degrees to the earlier components (a non-negative vector is "
                "at most arccos(min_i v_i) away from a dense non-negative earlier component v); returning "
                "the most penalized solution. Lower min_angle_deg.",
                ConvergenceWarning,
                stacklevel=4,
            )
            last.n_iter_total = total
            return last
    else:
        # Already admissible at the initial penalty: look for a smaller one.
        rho = penalty
        while bad_rho is None and rho > 1e-6:
            rho /= 10.0
            c = solve_at(rho, good.w_em)
            total += cost(c)
            if ok(c):
                good, good_rho = c, rho
            else:
                bad_rho = rho
    if bad_rho is not None:
        lo, hi = np.log(bad_rho), np.log(good_rho)
        for _ in range(6):
            mid = 0.5 * (lo + hi)
            c = solve_at(float(np.exp(mid)), good.w_em)
            total += cost(c)
            if ok(c):
                good, hi = c, mid
            else:
                lo = mid
    good.n_iter_total = total
    return good


def _check_params(est_params: dict, D: int, N_rank_bound: int):
    p = est_params
    L = check_int(p["n_components"], "n_components", low=1, high=max(N_rank_bound, 1))
    ks = check_cardinality(p["cardinality"], D, L)
    orth = p["orthogonality"]
    if orth not in _ORTHOGONALITY:
        raise ValueError(f"orthogonality must be one of {_ORTHOGONALITY}; got {orth!r}.")
    min_angle = p["min_angle_deg"]
    if min_angle is not None:
        if orth != "quasi":
            raise ValueError("min_angle_deg is used only with orthogonality='quasi'.")
        min_angle = check_real(min_angle, "min_angle_deg", low=0.0, high=90.0, low_inclusive=False)
    penalty = check_real(p["penalty"], "penalty", low=0.0, low_inclusive=False)
    tol = check_real(p["tol"], "tol", low=0.0, high=1.0, low_inclusive=False)
    max_iter = check_int(p["max_iter"], "max_iter", low=1)
    init = _check_init(p["init"], D, L)
    if p["n_restarts"] is not None:
        check_int(p["n_restarts"], "n_restarts", low=1)
    return L, ks, orth, min_angle, penalty, tol, max_iter, init


# --------------------------------------------------------------------------- public API
class EMSparsePCA(ProjectionMixin, BaseEstimator):
    """Sparse and/or non-negative PCA by constrained EM (Sigg & Buhmann 2008).

    The restarts of a component run together as one block (:func:`_em_block`): each EM iteration
    (Algorithms 1-2, Eqs. 13, 14, 17) is one matrix-matrix product with the covariance operator for all
    active restarts, then the kernel :func:`repro.kernels.em_sparse_pca.em_update_block` per restart.

    ``X`` may hold missing values (NaN), handled by Roweis' generalized E-step (Roweis 1998, Sec. 4, in
    the zero-noise limit; see :class:`_ObservedData`), or be a ``dask.array`` (one pass over the data
    per EM iteration, or one pass to form the covariance when the cost model prefers it).

    Parameters
    ----------
    n_components : int
        Number of components, computed one after another (Section 4).
    cardinality : int, sequence of int, or None
        Non-zeros per component (one for all, or one per component); ``None`` = no sparsity constraint.
    nonneg : bool
        Non-negative loadings (Eq. 17).
    n_restarts : int or None
        Starts per component, the best (largest variance) kept. ``None``: 5 for ``init="auto"``, 10 for
        random starts (Sec. 5.2 uses the best of ten), 1 for the principal-component start.
    init : None, "auto", "pc", "random", or ndarray of shape (n_features,) or (n_components, n_features)
        Start. ``None`` or ``"auto"``: the first principal component of the (deflated) data (both signs
        with ``nonneg``) plus random starts (non-negative ones with ``nonneg``), ``n_restarts`` in all, run
        as one block; this beats both the paper's single PC start for sparse PCA (Sec. 3.1) and its random
        starts for non-negative PCA (Sec. 3.2) on small brute-force problems (see the tests). ``"pc"``:
        only the principal component (the paper's sparse PCA; both signs with ``nonneg``). ``"random"``:
        random unit vectors. A start that collapses to the zero vector is replaced by a new random one
        (up to 50 times). With missing values the principal component is that of the data with missing
        entries set to the column means.
    renormalize : bool
        "emPCAopt": optimal weights on the found support (Sec. 5.1).
    orthogonality : {"deflation", "disjoint", "quasi"}
        ``"deflation"``: ``X <- X (I - ww')`` after each component (Eq. 18), plus, when ``nonneg``, disjoint
        supports (Eq. 19: non-negative orthogonal components cannot share a feature). ``"disjoint"``: only
        Eq. 19. ``"quasi"``: no deflation; the M-step QP gets the penalty ``alpha w'VV'w`` (Eq. 20) with
        ``alpha = penalty * h`` (so ``penalty`` is scale free), tuned to ``min_angle_deg`` when given.
    min_angle_deg : float or None
        Minimum angle (degrees) to every earlier component for ``orthogonality="quasi"`` (Sec. 5.2 uses 85).
        The penalty is then the smallest found (x10 steps, then bisection in log) that meets it.
    penalty : float
        The (initial) relative quasi-orthogonality penalty ``alpha / h``.
    tol : float
        Convergence: ``|w(t+1)' w(t)| > 1 - tol``.
    max_iter : int
    random_state : None, int or np.random.Generator
    operator : {"auto", "data", "covariance"}
        How the covariance is applied (:func:`repro.linalg.choose_operator`): ``"auto"`` iterates on the
        ``D x D`` covariance when the cost model says it pays (``n_samples`` well above ``n_features``),
        otherwise on the data. Same iterates to round-off either way. Data with missing values always
        iterate on the data.

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Unit-norm loadings (rows).
    explained_variance_ : ndarray, shape (n_components,)
        ``w'Cw`` with ``C`` the sample covariance (ddof=1) of the training data (not deflated). With
        missing values, ``C`` is the covariance of the data completed by the E-step of the first component
        (missing entries filled with ``mean_ + y w_1``).
    explained_variance_ratio_ : ndarray, shape (n_components,)
        ``explained_variance_ / tr(C)`` (the same completed ``C`` with missing values).
    n_iter_ : ndarray of int, shape (n_components,)
        EM iterations of the kept run of each component.
    history_ : list of ndarray
        Per component, the reconstruction error ``||Xc - Xc w w'||_F^2 / (n - 1) = tr(C_l) - w'C_l w``
        of every iterate of the kept run (start first, ``C_l`` the data the component was fitted on); with
        missing values the squared error on the observed entries, over ``n - 1``.
    penalty_ : ndarray, shape (n_components,)
        Relative quasi-orthogonality penalty used per component (0 for the first and when not quasi).
    mean_ : ndarray, shape (n_features,)
        Column means (with missing values: estimated jointly with the first component).
    n_features_in_ : int
    operator_ : str
        The operator used: ``"data"``, ``"covariance"`` or ``"missing"`` (the generalized E-step).

    References
    ----------
    C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008.
    """

    def __init__(
        self,
        n_components=1,
        *,
        cardinality=None,
        nonneg=False,
        n_restarts=None,
        init=None,
        renormalize=False,
        orthogonality="deflation",
        min_angle_deg=None,
        penalty=1.0,
        tol=1e-8,
        max_iter=1000,
        random_state=None,
        operator="auto",
    ):
        self.n_components = n_components
        self.cardinality = cardinality
        self.nonneg = nonneg
        self.n_restarts = n_restarts
        self.init = init
        self.renormalize = renormalize
        self.orthogonality = orthogonality
        self.min_angle_deg = min_angle_deg
        self.penalty = penalty
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.operator = operator

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN marks a missing entry (Roweis' generalized E-step)
        return tags

    def transform(self, X):
        """Project ``X`` on the loadings, ``(X - mean_) @ components_.T``; NaN entries are missing.

        A row with missing entries is first completed by its least-squares fit on the observed ones
        (``mean_ + components_' z`` with ``z`` the least-squares coordinates, Roweis' E-step), then
        projected, so complete rows give exactly the plain projection.
        """
        from sklearn.utils.validation import check_is_fitted

        from ._validation import check_n_features

        check_is_fitted(self, "components_")
        if is_dask(X):  # one pass, chunk by chunk; the result (n_samples, n_components) in memory
            return DaskSource(X, "X", first_pass=False).map_rows(self.transform)
        X = check_array(X, "X", allow_nan=True)
        check_n_features(self, X)
        W = self.components_
        Xc = X - self.mean_
        miss = np.isnan(Xc)
        if miss.any():
            Xc = Xc.copy()
            for i in np.flatnonzero(miss.any(axis=1)):
                obs = ~miss[i]
                z = np.linalg.lstsq(W[:, obs].T, Xc[i, obs], rcond=None)[0]
                Xc[i, ~obs] = W[:, ~obs].T @ z
        return Xc @ W.T

    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features; NaN marks a missing entry; a ``dask.array`` is read in
        chunks); returns self."""
        s = 1.0
        if not is_dask(X) and not isinstance(X, Covariance):
            X = check_array(X, "X", min_samples=2, allow_nan=True)
            check_has_variance(X, "EMSparsePCA")
            s = check_scale(X)  # badly scaled data: fit X / s, scale the variances back (exact, s = 2^e)
            if s != 1.0:
                X = X / s
        n_vec = self.n_restarts if self.n_restarts is not None else DEFAULT_STARTS
        n_vec = int(n_vec) if isinstance(n_vec, (int, np.integer)) else 1
        op, mean, n = _prepare(X, self.operator, n_vec, checked=True)  # an array was checked above
        self._fit_op(op, mean, n - 1)
        unscale_fitted(self, s)
        return self

    def _fit_data(self, A, mean, rank_bound):
        """Fit on a data factor ``A`` with ``A'A = C`` (used by :func:`fit_function_form`)."""
        self._fit_op(Covariance(data=np.ascontiguousarray(A, dtype=np.float64)), mean, rank_bound)
        return self

    @blas_limited
    def _fit_op(self, op, mean, rank_bound):
        D = op.n_features
        L, ks, orth, min_angle, penalty, tol, max_iter, init = _check_params(
            self.get_params(), D, min(rank_bound, D)
        )
        rng = check_random_state(self.random_state)
        comps = _fit(
            op,
            L,
            ks,
            nonneg=bool(self.nonneg),
            init=init,
            n_restarts=self.n_restarts,
            renormalize=bool(self.renormalize),
            orthogonality=orth,
            min_angle_deg=min_angle,
            penalty=penalty,
            tol=tol,
            max_iter=max_iter,
            rng=rng,
        )
        W = np.array([c.w for c in comps])
        missing = isinstance(op, _ObservedData)
        if missing:
            mean = comps[0].mean if comps[0].mean is not None else mean
            ev, tr = op.completed_variance(W, W[0], mean)
            total = np.full(L, tr)
        else:
            ev = _quad_rows(op, W)
            total = np.full(L, op.trace())
        self.components_ = W
        self.explained_variance_ = ev
        self.explained_variance_ratio_ = np.divide(ev, total, out=np.zeros(L), where=total > 0)
        self.n_iter_ = np.array([c.n_iter for c in comps], dtype=np.int64)
        # Reconstruction error tr(C_l) - h of every iterate, C_l the operator the component was fitted on.
        self.history_ = [c.op.trace() - c.history for c in comps]
        self.penalty_ = np.array([c.rho for c in comps])
        self.cardinality_ = (W != 0).sum(axis=1)
        self.mean_ = np.asarray(mean, dtype=np.float64)
        self.n_features_in_ = D
        self.operator_ = "missing" if missing else op.operator
        return self


def em_sparse_pca(X, n_components=1, **params):
    """Function form of :class:`EMSparsePCA`.

    ``X`` is a data matrix (n_samples, n_features) or a :class:`repro.linalg.Covariance` (e.g. a given
    correlation matrix, factored so the EM can run on it). Keyword parameters as for :class:`EMSparsePCA`.

    Returns
    -------
    components : ndarray, shape (n_components, n_features)
    explained_variance : ndarray, shape (n_components,)
    """
    est = EMSparsePCA(n_components, **params)
    if isinstance(X, Covariance):
        op, mean, n = _prepare(X, est.operator, 1)
        est._fit_op(op, mean, min(n - 1, op.n_features))
    else:
        est.fit(X)
    return est.components_, est.explained_variance_


@blas_limited
@rescaled(unscale_path, "em_sparse_pca_path")
def em_sparse_pca_path(
    X,
    cardinalities,
    *,
    nonneg=False,
    renormalize=True,
    init=None,
    n_restarts=None,
    tol=1e-8,
    max_iter=1000,
    random_state=None,
    operator="auto",
) -> CardinalityPath:
    """The first sparse (non-negative) component for every cardinality in one call.

    The starts are computed once and reused for every ``K`` (Sec. 3.1: "as initialization is independent
    of K, w(1) can be cached"): the first principal component and the same random starts (drawn once
    from ``random_state``) -- so each ``K`` gives exactly what :class:`EMSparsePCA` gives for that ``K``
    with the same arguments. ``init="warm"`` instead starts each ``K`` (in increasing order) from the
    previous ``K``'s solution: fewer iterations, but possibly a different local optimum.

    Parameters
    ----------
    X : array, shape (n_samples, n_features) (NaN: missing), dask.array, or Covariance
    cardinalities : sequence of int
        Each in ``1..n_features``; any order (results follow the given order).
    nonneg, n_restarts, tol, max_iter, random_state, operator
        As for :class:`EMSparsePCA`.
    renormalize : bool
        Also compute the renormalized ("emPCAopt") loadings and variances; NaN otherwise.
    init : None, "auto", "pc", "random", "warm" or ndarray (n_features,)

    Returns
    -------
    CardinalityPath
        ``components`` are the EM loadings, ``components_opt`` the renormalized ones; ``time`` per ``K``
        excludes the shared start (``init_time``).
    """
    t0 = time.perf_counter()
    warm = isinstance(init, str) and init == "warm"
    n_vec = n_restarts if isinstance(n_restarts, (int, np.integer)) else DEFAULT_STARTS
    op, _, _ = _prepare(X, operator, int(n_vec))
    D = op.n_features
    ks = check_cardinalities(cardinalities, D)
    init_c = _check_init(None if warm else init, D, 1)
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_inclusive=False)
    max_iter = check_int(max_iter, "max_iter", low=1)
    rng = check_random_state(random_state)
    nonneg = bool(nonneg)
    kind = init_c[0] if isinstance(init_c, np.ndarray) else (init_c or "auto")
    R = _resolve_restarts(n_restarts, kind if isinstance(kind, str) else "array")

    rank, pc = _rank_and_pc(op, need_rank=False)
    if rank == 0:
        raise ValueError("X has no variance (every column is constant); there is no component to find.")
    seeds = rng.integers(0, 2**63 - 1, size=R)
    excluded = np.zeros(D, dtype=bool)
    init_time = time.perf_counter() - t0

    n = ks.size
    comps = np.zeros((n, D))
    comps_opt = np.full((n, D), np.nan)
    var = np.empty(n)
    var_opt = np.full(n, np.nan)
    n_iter = np.empty(n, dtype=np.int64)
    n_total = np.empty(n, dtype=np.int64)
    times = np.empty(n)
    order = np.argsort(ks, kind="stable") if warm else np.arange(n)
    prev = None
    for j in order:
        t1 = time.perf_counter()
        start_rngs = [np.random.default_rng(int(sd)) for sd in seeds]
        this_kind = kind if (prev is None or not warm) else prev
        s = _Settings(nonneg, this_kind, R, bool(renormalize), tol, max_iter)
        c = _solve_component(
            op, int(ks[j]), s, excluded, start_rngs if prev is None or not warm else start_rngs[:1], pc
        )
        if c.status == MAX_ITER:
            warn_not_converged("em_sparse_pca_path", max_iter, tol, f"(cardinality {ks[j]})")
        comps[j], var[j] = c.w_em, c.h_em
        if renormalize:
            comps_opt[j], var_opt[j] = c.w, c.h
        if isinstance(op, _ObservedData):  # report what EMSparsePCA reports: the completed data's variance
            var[j] = op.completed_variance(c.w_em[None, :], c.w_em, c.mean_em)[0][0]
            if renormalize:
                var_opt[j] = op.completed_variance(c.w[None, :], c.w, c.mean)[0][0]
        n_iter[j], n_total[j] = c.n_iter, c.n_iter_total
        prev = c.w_em
        times[j] = time.perf_counter() - t1
    return CardinalityPath(
        method="emPCA (nn)" if nonneg else "emPCA",
        cardinalities=ks,
        components=comps,
        variance=var,
        components_opt=comps_opt,
        variance_opt=var_opt,
        n_iter=n_iter,
        time=times,
        init_time=init_time,
        n_iter_total=n_total,
    )
