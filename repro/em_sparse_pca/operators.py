"""The covariance operators the door builds besides :class:`repro.linalg.Covariance` itself (Sigg & Buhmann
2008, Sec. 3: only ``f = X'X w`` enters the M-step, so the EM needs the covariance as an operator only).

:class:`_SearchCovariance`: a single component's search on the covariance formed in float32 (its exact
counterpart :class:`_CentredData`, the data never copied in float64), which :func:`repro.em_sparse_pca.
estimator._prepare` picks where it pays; :func:`_as_data` and :func:`fit_function_form`: a covariance given as
a matrix factored so the EM (and the baselines sharing the function forms) can run on it; :func:`_leading_pc`:
the first principal component of a data factor (the baselines' start).
"""

from __future__ import annotations

import math

import numpy as np

from .._linalg_kernels import centred_float32, centred_scaled
from .._validation import check_array
from ..linalg import Covariance


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
    _, vecs = Covariance._trusted(data=A).eigh(1)
    return vecs[:, 0]



#: The float32 search covariance (:class:`_SearchCovariance`) is formed when forming the float64 one would
#: cost at least this many multiply-adds (``N D^2 / 2``: about 2 ms at BLAS peak on one core); below it the
#: saving is smaller than the copy it needs.
SEARCH32_MIN_FLOPS = 2.5e7

#: ... and when the cardinality is at most this fraction of the features: the float64 weights of the
#: found support cost ``N K^2 / 2`` (its covariance), against the ``N D^2 / 4`` the float32 matrix saves;
#: measured on CBCL faces (D = 361): 1.2-1.3x faster at K = 10-50, about 1.0x at K = 120, 0.6-0.9x at
#: K = 180-250.
SEARCH32_MAX_SUPPORT = 0.3

#: ... and when every non-zero column norm of the scaled centred data is within this factor of the largest
#: (so that no product of two columns comes near float32's underflow after scaling by a power of two).
SEARCH32_MAX_RANGE = 2.0**40

class _CentredData(Covariance):
    """The sample covariance of complete data ``X`` (``N x D``, validated) through its scaled centred data
    ``A = (X - mean) / sqrt(N - 1)``, for the float32 search (:class:`_SearchCovariance`), without the
    ``N x D`` float64 array ``A``: one pass over ``X`` gives the column norms
    (:func:`repro._linalg_kernels.centred_scaled`), a second the float32 copy of ``A / s``
    (:meth:`float32`), and the weights of the support the search finds need only its columns
    (:meth:`_columns`: ``N K``), each entry computed as the full array would hold it. ``data`` forms that
    array on first use (nothing on the search's path asks for it: the copy and the third pass for the
    norms cost a CBCL fit (2429 x 361) 1.4 ms of about 11)."""

    def __init__(self, X: np.ndarray, mean: np.ndarray):
        N, D = X.shape
        self._X, self._mean, self._c = X, mean, float(np.sqrt(N - 1))
        self._full = self._last = None
        self.matrix = None
        self.n_features, self.n_samples = D, N
        self._diag = np.empty(D)
        centred_scaled(X, mean, self._c, np.empty((0, 0)), self._diag)  # the column norms alone

    @property
    def data(self) -> np.ndarray:
        if self._full is None:
            self._full = Covariance._from_valid(self._X, operator="data", mean=self._mean).data
        return self._full

    def _gather(self, idx) -> np.ndarray:
        """A new array of the columns ``idx`` (``N x len(idx)``, C-contiguous)."""
        if self._full is not None:
            return super()._gather(idx)
        return (self._X[:, idx] - self._mean[idx]) / self._c

    def _columns(self, idx) -> np.ndarray:
        """The columns ``idx``, for reading only: the last support's are kept (the weights of the found
        support and its variance ask for the same columns)."""
        idx = np.asarray(idx)
        key = idx.tobytes()
        if self._last is None or self._last[0] != key:
            self._last = key, self._gather(idx)
        return self._last[1]

    def quad(self, W):
        """``w'Cw`` through the non-zero columns of a vector ``w``; columns ``W`` as the base class."""
        if np.ndim(W) != 1:
            return super().quad(W)
        S = np.flatnonzero(W)
        y = self._columns(S) @ W[S]
        return float(y @ y)

    def float32(self, scale: float) -> np.ndarray:
        """``A * scale`` rounded to float32 (``scale`` a power of two), as ``np.multiply(A, scale,
        out=float32 array)`` gives it."""
        out = np.empty(self._X.shape, dtype=np.float32)
        centred_float32(self._X, self._mean, self._c, scale, out)
        return out



class _SearchCovariance(Covariance):
    """The sample covariance for a single component's search: every product through ``M~``, the
    covariance formed in float32 (``A32' A32``, ``A32`` the scaled centred data divided by a power of two
    and rounded to float32, stored as float64): half the cost of the float64 ``A'A``, which dominates a fit
    when ``N >> D``. ``exact`` is the float64 data factor (a :class:`_CentredData`), for the weights of the
    result (see :func:`repro.em_sparse_pca.algorithm._exact_weights`), its variance and the trace.

    ``M~`` differs from ``C`` by about ``sqrt(N) * 6e-8 * ||a_i|| ||a_j||`` per entry (the rounding of the
    data and float32 sums), far below the sampling error of a sample covariance (``~ 1 / sqrt(N)`` in the
    same units) for any ``N`` below about 1e7. The EM, the first principal component (the default start),
    the renormalization of each restart's support and the truncated-power steps of ``"refine"`` all run on
    ``M~``, so they choose among supports whose variances are known to about 1e-7; the support chosen then
    gets its optimal weights from the float64 data. The result is exact for its support; the search can
    differ from the float64 one only where two supports tie to about 1e-7 (on standardized CBCL faces,
    K = 1..361, sparse and non-negative, emPCAopt and refined: the same support in 614 of 616 fits, the
    other two an exact tie between single features of unit variance). ``history_`` (the EM's own
    ``w'Cw``) carries that relative error of 1e-7.
    """

    def __init__(self, matrix, exact: Covariance):
        self._set(None, matrix, exact.n_samples)
        self.exact = exact

    @staticmethod
    def pays(N: int, D: int, K: int) -> bool:
        """Whether the float32 search pays for cardinality ``K`` on ``N x D`` data (by shape alone)."""
        return N > D and N * D * D / 2 >= SEARCH32_MIN_FLOPS and K <= SEARCH32_MAX_SUPPORT * D

    @classmethod
    def applies(cls, exact: Covariance, K: int) -> bool:
        """Whether the float32 search pays and is safe for cardinality ``K`` on the data-backed ``exact``
        (``N x D``)."""
        if not cls.pays(exact.n_samples, exact.n_features, K):
            return False
        norms = exact.column_norms()
        nz = norms[norms > 0]
        return nz.size > 0 and nz.max() <= SEARCH32_MAX_RANGE * nz.min()

    @classmethod
    def from_exact(cls, exact: _CentredData) -> _SearchCovariance:
        # s, a power of two >= the largest column norm: every entry of A / s and of A32'A32 is in [-1, 1]
        s = 2.0 ** math.frexp(float(exact.column_norms().max()))[1]
        A32 = exact.float32(1.0 / s)
        G = A32.T @ A32  # float32 syrk
        M = G.astype(np.float64)
        M += M.T
        M *= 0.5 * s * s
        return cls(M, exact)

    def diag(self):
        return self.exact.diag()

    def _deflate(self, w, method="projection"):  # pragma: no cover - single components only (see _prepare)
        raise NotImplementedError("the float32 search covariance serves single components only")
