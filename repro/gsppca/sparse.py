"""GSPPCA (Mattei et al. 2016, Sec. 2.3-2.4) on a scipy sparse ``X`` (CSR or CSC), never densified.

What each step needs of the data, and how a sparse ``X`` gives it (``mu`` the column means, ``F`` the
centred data ``X - 1 mu'`` as the implicit operator :class:`repro._sparse.CentredSparse`):

* the VEM's start (PPCA maximum likelihood, Eq. 2) and the noise estimate ``sigma1``
  (:func:`repro.gsppca._common._sigma1_sq`): the ``d`` leading eigenpairs of the scatter ``F'F`` and its
  trace. From the ``N x N`` or ``D x D`` Gram matrix of ``F`` (the smaller; formed by products and
  densified row blocks, as the dense fit forms it from the centred array) when ``min(N, D)`` is at most
  :data:`repro._sparse.DENSE_EIGH_MAX`, else by Lanczos on the operator;
* the VEM iterations (Prop. 1, Eqs. 10-14): ``F W`` and ``F'Y`` with thin ``W`` (``p x d``) and ``Y``
  (``n x d``), and ``||F||_F^2`` (the column statistics): the operator, two sparse products per iteration;
* the exact evidence of the nested models (Theorem 2, Sec. 2.4): for every row, its squared norms on the
  first ``q`` ranked variables and on the others, ``q = 1..p``, each entering a Bessel function. That is
  a non-linear function of every centred entry, so no product or column statistic gives it: it is
  computed one densified row block (:data:`EVIDENCE_BLOCK_BYTES`) at a time, in passes over the
  blocks (one for the degenerate models, one per Newton iteration in ``log alpha``, one for the values:
  the passes of the Dask fit, :func:`repro.gsppca.evidence._dask_evidence_path`);
* PCA on the selected variables: the ``q x q`` scatter of the selected columns (densified row blocks of
  those columns), or Lanczos on the restricted operator above :data:`repro._sparse.DENSE_EIGH_MAX`;
* ``transform``, ``score_samples``: ``X W - 1 (mu'W)`` and the centred row norms on and off the support
  (:func:`repro._sparse.centred_rows`, :func:`repro._sparse.row_centred_ss`).

So nothing of the fit needs the dense centred data; the largest dense arrays are ``N x d``, the ``p x p``
(or ``n x n``, or ``q x q``) matrices of the eigendecompositions and one row block with its cumulative
norms. What the step functions take by definition (``vem_init`` and ``vem_iterations``: the *centred*
``Xc``, dense for sparse data) stays dense; the doors :class:`repro.GSPPCA`, :func:`repro.evidence_path`
and :func:`repro.log_evidence` take the sparse matrix.
"""

from __future__ import annotations

import math

import numpy as np

from .._sparse import (
    DENSE_EIGH_MAX,
    CentredSparse,
    _max_abs_values,
    column_stats,
    row_centred_ss,
)
from .._validation import _scale_for, check_real, check_sparse
from ._common import _check_d, _sigma1_sq_spectrum

__all__: list[str] = []

#: Rows of the evidence path densified at a time (bytes of the raw block): its cumulative norms and the
#: Newton step's work arrays are a few times this.
EVIDENCE_BLOCK_BYTES = 2**19


class SparseRows:
    """The rows of a sparse ``X`` as dense row blocks of :data:`EVIDENCE_BLOCK_BYTES`, one alive at a time:
    the ``map_sum`` / ``map_reduce`` of a source (:mod:`repro._chunked`), for the chunk functions of the
    evidence path (:func:`repro.gsppca.evidence._path_chunk`), which centre each block themselves."""

    def __init__(self, X):
        self.X = X.tocsr() if X.format != "csr" else X
        self.n, self.p = X.shape

    def _blocks(self):
        step = max(1, int(EVIDENCE_BLOCK_BYTES // (8 * max(self.p, 1))))
        for i in range(0, self.n, step):
            yield self.X[i : i + step].toarray()

    def map_reduce(self, fn, combine, *args):
        """``fn(block, None, *args)`` on every row block, the results combined in row order."""
        acc = None
        for B in self._blocks():
            part = fn(B, None, *args)
            acc = part if acc is None else combine([acc, part])
        return acc

    def map_sum(self, fn, *args):
        """The sums over the row blocks of ``fn(block, None, *args)`` (a tuple of arrays), a list."""
        return self.map_reduce(fn, _sum_pair, *args)


def _sum_pair(parts):
    return [np.asarray(a, dtype=np.float64) + b for a, b in zip(*parts, strict=True)]


def centred(X) -> tuple[CentredSparse, np.ndarray, np.ndarray]:
    """``(F, mean, m2)``: the centred operator of a validated sparse ``X`` (``c = 1``), its column means
    and centred sums of squares (``diag(F'F)``, without cancellation)."""
    mean, m2 = column_stats(X)
    F = CentredSparse(X, mean, 1.0)
    F._diag = m2
    return F, mean, m2


def top_spectrum(F: CentredSparse, d: int):
    """The ``d`` leading eigenvalues (descending) and eigenvectors (``p x d``) of ``F'F / n``.

    As :func:`repro.gsppca.vem.vem_init` computes them on the dense centred data: from ``F F' / n`` when
    ``n <= p`` (eigenvectors ``F'U / sqrt(n l)``), else from ``F'F / n``, when ``min(n, p)`` is at most
    :data:`DENSE_EIGH_MAX`; above, the Lanczos eigenpairs of the operator (:meth:`CentredSparse.top_eigh`).
    """
    n, p = F.shape
    if min(n, p) > DENSE_EIGH_MAX:
        vals, A = F.top_eigh(d)
        return vals / n, A
    if n <= p:
        vals, U = np.linalg.eigh((F @ F.T) / n)
        vals, U = vals[::-1][:d], U[:, ::-1][:, :d]
        return vals, (F.T @ U) / np.sqrt(np.maximum(vals * n, 1e-300))
    vals, A = np.linalg.eigh((F.T @ F) / n)
    return vals[::-1][:d], A[:, ::-1][:, :d]


def noise_sq(vals: np.ndarray, total: float, n: int, p: int, d: int, sigma1) -> float:
    """``sigma1^2`` from ``sigma1`` (a positive float already divided by the scale, or the name of an
    estimate) and the ``d`` leading eigenvalues ``vals`` (descending) of the covariance of trace
    ``total``: the estimates read no other eigenvalue (:func:`_sigma1_sq_spectrum`)."""
    if sigma1 is None or isinstance(sigma1, str):
        noise = "bc" if sigma1 is None else sigma1
        return _sigma1_sq_spectrum(np.clip(vals[::-1], 0.0, None), total, n, p, d, noise)
    return float(sigma1) ** 2


def selected_pca(F: CentredSparse, support: np.ndarray, k: int):
    """The ``k`` leading right singular vectors (``k x q``) and squared singular values of the selected
    centred columns ``F[:, support]``: from their ``q x q`` scatter (row blocks of those columns), or by
    Lanczos on the restricted operator when ``q`` exceeds :data:`DENSE_EIGH_MAX`."""
    sub = F.restrict(np.flatnonzero(support))
    q = sub.shape[1]
    if q > DENSE_EIGH_MAX and k < q - 1:
        vals, vecs = sub.top_eigh(k)
    else:
        vals, vecs = np.linalg.eigh(sub.gram())
        vals, vecs = vals[::-1][:k], vecs[:, ::-1][:, :k]
    return vecs.T, np.clip(vals, 0.0, None)


def row_norms(X, mean: np.ndarray, support: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(r2, out2, s)``: the squared norms of the rows of ``(X - mean) / s`` on the support and off it,
    for sparse rows ``X``; ``s`` a power of two (1 for ordinarily scaled data) that keeps the squares
    finite and normal (:func:`repro._validation.check_scale`'s rule, read from the stored values and the
    means, which bound the centred entries within a factor of two)."""
    top = max(float(np.max(np.abs(X.data))) if X.nnz else 0.0, float(np.max(np.abs(mean))))
    s = _scale_for(top)
    if s != 1.0:
        X, mean = X / s, mean / s
    on, off = np.flatnonzero(support), np.flatnonzero(~support)
    r2 = row_centred_ss(X[:, on], mean[on])
    out2 = row_centred_ss(X[:, off], mean[off]) if off.size else np.zeros(X.shape[0])
    return r2, out2, s


def prepare(X, n_components, sigma1, alpha=None, *, noise: bool = True):
    """The sparse twin of :func:`repro.gsppca._common._rescale` and ``_prepare`` for the function forms:
    ``X`` checked (:func:`repro._validation.check_sparse`) and divided by the power of two ``s`` of its
    largest magnitude (1 for ordinarily scaled data), a given ``sigma1`` and ``alpha`` with it, ``d``,
    the centred operator and the noise variance (``noise=False``: not estimated, None).

    Returns ``(Xs, s, F, mean, m2, d, s2, alpha)`` (``alpha`` of ``X / s``, or None).
    """
    X = check_sparse(X, "X", min_samples=2)
    s = _scale_for(_max_abs_values(X))
    if s != 1.0:
        X = X / s
        if sigma1 is not None and not isinstance(sigma1, str):
            sigma1 = check_real(sigma1, "sigma1", low=0.0, low_inclusive=False) / s
        if alpha is not None:
            alpha = check_real(alpha, "alpha", low=0.0, low_inclusive=False) / (s * s)
    n, p = X.shape
    d = _check_d(n_components, n, p)
    F, mean, m2 = centred(X)
    s2 = None
    if noise:
        if sigma1 is None or isinstance(sigma1, str):
            vals, _ = top_spectrum(F, d)
        else:
            vals = None
            sigma1 = check_real(sigma1, "sigma1", low=0.0, low_inclusive=False)
        s2 = noise_sq(vals, float(m2.sum()) / n, n, p, d, sigma1)
    return X, s, F, mean, m2, d, s2, alpha


def log_scale(n: int, p: int, s: float) -> float:
    """``n p log s``: what the log evidence of ``X / s`` differs from that of ``X`` by."""
    return n * p * math.log(s)
