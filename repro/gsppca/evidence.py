"""Theorem 2 of Mattei et al. (2016), corrected, in log space: the exact evidence of a model with ``q`` active
variables, ``alpha`` maximized, and the evidence path of the ``p`` nested models along a ranking (Sec. 2.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import StrOptions, validate_params

from .._base import POSITIVE_INT, POSITIVE_REAL
from .._sparse import row_centred_ss
from .._threads import blas_limited
from .._validation import (
    check_array,
    check_bool,
    check_int,
    check_real,
    check_sparse,
    is_sparse,
    unscale,
)
from . import sparse as _sp
from ._common import (
    _BLOCK,
    _LOG_2PI,
    _MAX_ROOT_ITER,
    _ROOT_TOL,
    NOISE_ESTIMATES,
    _prepare,
    _rescale,
    _support_mask,
)
from .bessel import _kv_ratio, log_bessel_k

__all__ = ["EvidencePath", "evidence_path", "log_density", "log_evidence", "row_log_density"]

#: ``sigma1``: a noise estimate by name or a positive value (scikit-learn's parameter validation).
_SIGMA1 = [StrOptions(set(NOISE_ESTIMATES)), POSITIVE_REAL]


# --------------------------------------------------------------------------- Theorem 2 in log space
@validate_params(
    {
        "r2": [np.ndarray],
        "out2": [np.ndarray],
        "q": [Integral, np.ndarray],
        "p": [Integral],
        "d": [Integral],
        "log_alpha": [Real, np.ndarray],
        "s2": [Real],
    },
    prefer_skip_nested_validation=True,
)
def row_log_density(r2, out2, q, p, d, log_alpha, s2):
    """Per-row log density of Theorem 2 (corrected) of a model with ``q`` of ``p`` variables active.

    Parameters
    ----------
    r2, out2 : ndarray, shape (n_samples,)
        Squared norms of each row on the active and on the inactive variables.
    q, p, d : int
        Active variables, all variables, components.
    log_alpha : float
        ``log alpha``, the prior variance of the loadings.
    s2 : float
        ``sigma1^2``, the noise variance of the inactive variables.

    Returns
    -------
    ndarray, shape (n_samples,)
        ``log p(x_i)``; their sum is :func:`log_evidence` of the model.
    """
    nu = abs(q - d) / 2.0
    r = np.sqrt(r2)
    z = r * np.exp(-0.5 * log_alpha)
    const = (
        -(q + d) / 4.0 * log_alpha
        - 0.5 * p * _LOG_2PI
        + (1.0 - 0.5 * d) * math.log(2.0)
        - math.lgamma(0.5 * d)
        - 0.5 * (p - q) * np.log(s2)
    )
    return const - out2 / (2.0 * s2) + 0.25 * (d - q) * np.log(r2) + log_bessel_k(nu, z)


def _alpha_mle(r2: np.ndarray, q: np.ndarray, d: int) -> np.ndarray:
    """``log alpha`` maximizing the evidence of each column (model) of ``r2`` (n x m), all at once.

    With ``t = log alpha``, ``z_i = r_i e^(-t/2)``, ``nu = |q - d|/2`` and ``R = K_(nu+1)/K_nu``, the score is
    ``g(t) = (1/2) sum_i z_i R(z_i) - n max(q, d) / 2``. ``z R(z)`` increases in ``z`` (from ``2 nu`` to
    ``+inf``), so ``g`` decreases in ``t`` from ``+inf`` to ``-n min(q, d)/2 < 0``: the maximizer is its
    unique root. Newton's method on ``g``, with ``g'(t) = -(1/4) sum_i z_i (z_i R_i^2 - 2 nu R_i - z_i)``
    (from ``R' = R^2 - (2nu+1) R / z - 1``), safeguarded by the bracket that the signs of ``g`` build up
    (bisection when a step leaves it, steps capped at 2 in ``t``), started at the moment estimate
    ``E||x_v||^2 = alpha d q``. Only the columns not yet converged are evaluated.
    """
    n = r2.shape[0]
    nu_all = np.abs(q - d) / 2.0
    r_all = np.sqrt(r2)

    def sums(ta, active):
        return _newton_sums(r_all[:, active] * np.exp(-0.5 * ta)[None, :], nu_all[active])

    return _alpha_newton(sums, np.log(r2.mean(axis=0) / (d * q)), q, d, n)


def _newton_sums(z: np.ndarray, nu: np.ndarray):
    """Column sums of ``z R`` and ``z (z R^2 - 2 nu R - z)`` (``R = K_(nu+1)(z) / K_nu(z)``,
    :func:`_kv_ratio`): the score of :func:`_alpha_mle` and its derivative, summed over the rows of ``z``
    (one row per observation)."""
    nub = np.broadcast_to(nu, z.shape)
    R = _kv_ratio(nub, z)
    return (z * R).sum(axis=0), (z * (z * R * R - 2.0 * nub * R - z)).sum(axis=0)


def _alpha_newton(sums, t0: np.ndarray, q: np.ndarray, d: int, n: int) -> np.ndarray:
    """The safeguarded Newton iterations of :func:`_alpha_mle` from ``t0``, vectorized over the models.

    ``sums(t, active)`` returns the two row sums of :func:`_newton_sums` at ``log alpha = t`` for the models
    (columns) ``active``: from the rows in memory, or from one distributed pass over them
    (:func:`_dask_evidence_path`).
    """
    m = t0.size
    target_all = 0.5 * n * np.maximum(q, d)
    t = np.array(t0, dtype=np.float64)
    lo = np.full(m, -np.inf)
    hi = np.full(m, np.inf)
    active = np.arange(m)
    for _ in range(_MAX_ROOT_ITER):
        if active.size == 0:
            break
        ta = t[active]
        zr, zz = sums(ta, active)
        g = 0.5 * zr - target_all[active]
        dg = -0.25 * zz
        pos = g > 0
        lo[active] = np.where(pos, ta, lo[active])
        hi[active] = np.where(pos, hi[active], ta)
        step = np.where(dg < 0, -g / np.where(dg < 0, dg, -1.0), np.where(pos, 2.0, -2.0))
        step = np.clip(step, -2.0, 2.0)
        new = ta + step
        la, ha = lo[active], hi[active]
        outside = (new <= la) | (new >= ha)
        both = np.isfinite(la) & np.isfinite(ha)
        new = np.where(outside & both, 0.5 * (la + ha), new)
        new = np.where(outside & ~both, np.where(pos, ta + 2.0, ta - 2.0), new)
        t[active] = new
        done = (np.abs(new - ta) <= _ROOT_TOL * np.maximum(1.0, np.abs(ta))) | (g == 0)
        active = active[~done]
    return t


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "support": ["array-like"],
        "n_components": [POSITIVE_INT],
        "alpha": [POSITIVE_REAL],
        "sigma1": [POSITIVE_REAL],
    },
    prefer_skip_nested_validation=True,
)
def log_density(X, support, *, n_components, alpha, sigma1) -> np.ndarray:
    """Log density of each row of ``X`` under Theorem 2 (corrected; see the module docstring).

    The rows are used as given (no centring): this is the density of the noiseless model, Eq. (6).

    Parameters
    ----------
    X : array_like or scipy sparse matrix, shape (n_samples, n_features)
        Sparse rows are read through their stored entries (never densified).
    support : bool mask of length n_features, or int indices
        The active variables ``v``.
    n_components : int
        ``d``, the latent dimension.
    alpha, sigma1 : float > 0
        Prior variance of the loadings and noise standard deviation of the inactive variables.

    Returns
    -------
    ndarray, shape (n_samples,)
    """
    sparse = is_sparse(X)
    X = check_sparse(X, "X") if sparse else check_array(X, "X")
    p = X.shape[1]
    d = check_int(n_components, "n_components", low=1)
    mask = _support_mask(support, p)
    alpha = check_real(alpha, "alpha", low=0.0, low_inclusive=False)
    s2 = check_real(sigma1, "sigma1", low=0.0, low_inclusive=False) ** 2
    if sparse:  # the rows as given: their sums of squares over the stored entries
        r2 = row_centred_ss(X[:, np.flatnonzero(mask)], np.zeros(int(mask.sum())))
    else:
        r2 = np.einsum("ij,ij->i", X[:, mask], X[:, mask])
    if np.any(r2 == 0):
        raise ValueError("X has a row that is zero on the support: the noiseless density is degenerate.")
    if sparse:
        off = np.flatnonzero(~mask)
        out2 = row_centred_ss(X[:, off], np.zeros(off.size)) if off.size else np.zeros(X.shape[0])
    else:
        out2 = np.einsum("ij,ij->i", X[:, ~mask], X[:, ~mask])
    return row_log_density(r2, out2, int(mask.sum()), p, d, math.log(alpha), s2)


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "support": ["array-like"],
        "n_components": [POSITIVE_INT],
        "alpha": [None, POSITIVE_REAL],
        "sigma1": _SIGMA1,
        "return_params": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
@blas_limited
def log_evidence(X, support, *, n_components, alpha=None, sigma1="bc", return_params=False):
    """Exact log evidence ``sum_i log p(x_i | v, alpha, sigma1)`` of Theorem 2 (corrected), Eq. (6).

    Computed in log space with scaled Bessel functions and the uniform asymptotic expansion at large
    orders (:func:`log_bessel_k`), so it stays finite for ``p``, ``q`` in the thousands. ``X`` is centred.

    Parameters
    ----------
    X : array_like or scipy sparse matrix, shape (n_samples, n_features)
        The data (centred here; a sparse matrix implicitly, never densified: :mod:`repro.gsppca.sparse`).
    support : bool mask or int indices
        The active variables (``q = |support|`` in ``1..n_features``).
    n_components : int
        ``d``, ``1 <= d < min(n_samples, n_features)``.
    alpha : float > 0, optional
        Default: the maximizer of the evidence (a univariate root of its score in ``log alpha``).
    sigma1 : float > 0, "bc" or "ml"
        The noise standard deviation of the inactive variables, or its estimate from the spectrum of
        ``Xc'Xc / n``: ``"ml"`` the PPCA maximum-likelihood estimate (the paper's Sec. 2.2), ``"bc"``
        (default; ``None`` means ``"bc"``) its bias-corrected version, the default of the authors'
        GSPPCA.R (:func:`_sigma1_sq`).
    return_params : bool
        Also return ``(alpha, sigma1)`` as used.

    Returns
    -------
    float, or (float, float, float)
        The log evidence; with ``return_params``, also ``alpha`` and ``sigma1``.

    See Also
    --------
    evidence_path : every nested model along a ranking, in one pass.
    theorem1_density : the noisy model's density (Theorem 1).

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Theorem 2, Eq. (6) (corrected: see the module docstring).

    Examples
    --------
    The true support has a larger evidence than the same support less or plus a variable:

    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> np.flatnonzero(v).tolist()
    [4, 6, 9, 10, 14]
    >>> from repro import log_evidence
    >>> true = log_evidence(X, v, n_components=2)
    >>> less = log_evidence(X, [4, 6, 9, 10], n_components=2)
    >>> more = log_evidence(X, [4, 6, 9, 10, 14, 0], n_components=2)
    >>> bool(true > less), bool(true > more)
    (True, True)
    """
    return_params = check_bool(return_params, "return_params")
    if is_sparse(X):  # the centred row norms from the stored entries
        Xs, sc, _, mean, _, d, s2, alpha = _sp.prepare(X, n_components, sigma1, alpha)
        n, p = Xs.shape
        mask = _support_mask(support, p)
        r2, out2, _ = _sp.row_norms(Xs, mean, mask)
    else:
        X, sc, sigma1, alpha = _rescale(X, sigma1, alpha)
        Xc, d, s2 = _prepare(X, n_components, sigma1)
        n, p = Xc.shape
        mask = _support_mask(support, p)
        r2 = np.einsum("ij,ij->i", Xc[:, mask], Xc[:, mask])
        out2 = np.einsum("ij,ij->i", Xc[:, ~mask], Xc[:, ~mask])
    q = int(mask.sum())
    if np.any(r2 == 0):
        raise ValueError(
            "X (centred) has a row that is zero on the support: the noiseless evidence is degenerate there; "
            "add variables to the support."
        )
    if alpha is None:
        log_alpha = float(_alpha_mle(r2[:, None], np.array([float(q)]), d)[0])
    else:
        log_alpha = math.log(check_real(alpha, "alpha", low=0.0, low_inclusive=False))
    value = float(row_log_density(r2, out2, q, p, d, log_alpha, s2).sum()) - n * p * math.log(sc)
    if return_params:
        alpha_x = float(unscale(math.exp(log_alpha), sc, 2, "prior variance alpha", underflow=False))
        return value, alpha_x, float(unscale(math.sqrt(s2), sc, 1, "noise standard deviation"))
    return value


@dataclass
class EvidencePath:
    """Exact log evidence of the nested models ``order[:q]``, ``q = 1..p``.

    Attributes
    ----------
    order : ndarray of int, shape (p,)
        The ranking of the variables, most relevant first.
    log_evidence : ndarray, shape (p,)
        Entry ``q - 1`` for the model of the first ``q`` variables (``-inf`` where degenerate: a row zero
        on the support).
    alpha : ndarray, shape (p,)
        The maximizing ``alpha`` of each model.
    sigma1 : float
        The inactive noise standard deviation used by every model.

    See Also
    --------
    evidence_path : the function that returns it (see there for an example).
    """

    order: np.ndarray
    log_evidence: np.ndarray
    alpha: np.ndarray
    sigma1: float

    @property
    def best_q(self) -> int:
        return int(np.argmax(self.log_evidence)) + 1


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "order": ["array-like"],
        "n_components": [POSITIVE_INT],
        "sigma1": _SIGMA1,
    },
    prefer_skip_nested_validation=True,
)
@blas_limited
def evidence_path(X, order, *, n_components, sigma1="bc") -> EvidencePath:
    """Log evidence (``alpha`` maximized) of every nested model along ``order``, in one pass.

    The squared norms of the active and inactive parts of every row for every ``q`` come from one
    cumulative sum along ``order``; the ``p`` univariate maximizations in ``alpha`` are solved together,
    vectorized over ``q`` (blocks of columns), each from its moment estimate.

    Parameters
    ----------
    X : array_like or scipy sparse matrix, shape (n_samples, n_features)
        The data (centred here). A sparse matrix is never densified whole: the cumulative norms are
        formed one densified row block at a time, in a pass per Newton iteration
        (:mod:`repro.gsppca.sparse`).
    order : int array, a permutation of ``0..n_features-1``
        The ranking of the variables, most relevant first.
    n_components : int
        ``d``, ``1 <= d < min(n_samples, n_features)``.
    sigma1 : float > 0, "bc" or "ml"
        As in :func:`log_evidence`.

    Returns
    -------
    EvidencePath
        ``log_evidence[q - 1]`` and ``alpha[q - 1]`` for the model of the first ``q`` variables of
        ``order``; ``best_q`` the ``q`` of largest evidence.

    See Also
    --------
    log_evidence : one model.
    GSPPCA : ranks the variables by the VEM and selects ``best_q`` of them.

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Section 2.4 (the path of nested models) and Theorem 2.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> np.flatnonzero(v).tolist()
    [4, 6, 9, 10, 14]
    >>> from repro import evidence_path, log_evidence
    >>> order = np.r_[np.flatnonzero(v), np.flatnonzero(~v)]  # the true variables first
    >>> path = evidence_path(X, order, n_components=2)
    >>> path.best_q
    5
    >>> bool(np.isclose(path.log_evidence[4], log_evidence(X, v, n_components=2)))
    True
    """
    return _evidence_path(X, order, n_components, sigma1)


def _evidence_path(X, order, n_components, sigma1, *, check_input=True) -> EvidencePath:
    """:func:`evidence_path`; ``check_input=False``: ``X`` passed ``check_array`` already (GSPPCA's fit)."""
    if is_sparse(X):
        return _sparse_evidence_path(X, order, n_components, sigma1)
    X, sc, sigma1, _ = _rescale(X, sigma1, check_input=check_input)
    Xc, d, s2 = _prepare(X, n_components, sigma1)
    n, p = Xc.shape
    order = _check_order(order, p)
    r2_all, out2_all = _cum_norms(Xc[:, order])
    logev = np.full(p, -np.inf)
    log_alpha = np.full(p, np.nan)
    block = max(1, _BLOCK // n)
    for start in range(0, p, block):
        sl = slice(start, min(p, start + block))
        r2 = r2_all[:, sl]
        ok = np.all(r2 > 0, axis=0)
        if not ok.any():
            continue
        qs = np.arange(sl.start, sl.stop, dtype=np.float64) + 1.0
        r2, out2, qs = r2[:, ok], out2_all[:, sl][:, ok], qs[ok]
        t = _alpha_mle(r2, qs, d)
        cols = np.arange(sl.start, sl.stop)[ok]
        log_alpha[cols] = t
        logev[cols] = n * _path_const(t, qs, p, d, s2) + _path_rows(r2, out2, t, qs, d, s2).sum(axis=0)
    return EvidencePath(
        order=order.astype(np.int64),
        log_evidence=logev - n * p * math.log(sc),
        alpha=unscale(np.exp(log_alpha), sc, 2, "prior variances alpha", underflow=False),
        sigma1=float(unscale(math.sqrt(s2), sc, 1, "noise standard deviation")),
    )


def _check_order(order, p: int) -> np.ndarray:
    """``order`` as an array, refused unless it is a permutation of ``0..p-1``."""
    order = np.asarray(order)
    if (
        order.shape != (p,)
        or not np.issubdtype(order.dtype, np.integer)
        or np.unique(order).size != p
        or (order.min() < 0 or order.max() >= p)
    ):
        raise ValueError(f"order must be a permutation of 0..{p - 1} (an int array of length {p}).")
    return order


def _sparse_evidence_path(X, order, n_components, sigma1) -> EvidencePath:
    """:func:`evidence_path` of a scipy sparse ``X``: the passes of :func:`_dask_evidence_path` over its
    densified row blocks (:class:`repro.gsppca.sparse.SparseRows`), the centring in each block."""
    Xs, sc, _, mean, m2, d, s2, _ = _sp.prepare(X, n_components, sigma1)
    n, p = Xs.shape
    order = _check_order(order, p)
    path = _dask_evidence_path(_sp.SparseRows(Xs), n, mean, m2, order, d, s2)
    return EvidencePath(
        order=path.order,
        log_evidence=path.log_evidence - n * p * math.log(sc),
        alpha=unscale(path.alpha, sc, 2, "prior variances alpha", underflow=False),
        sigma1=float(unscale(path.sigma1, sc, 1, "noise standard deviation")),
    )


def _cum_norms(Xo: np.ndarray):
    """Squared norms of every row on the first ``q`` columns of ``Xo`` and on the others, ``q = 1..p``."""
    sq = Xo**2
    r2 = np.cumsum(sq, axis=1)
    out2 = np.zeros_like(r2)
    out2[:, :-1] = np.cumsum(sq[:, ::-1], axis=1)[:, ::-1][:, 1:]  # no cancellation near q = p
    return r2, out2


def _path_const(t, qs, p, d, s2):
    """The row-independent part of the log density of the models of sizes ``qs`` at ``log alpha = t``."""
    return (
        -(qs + d) / 4.0 * t
        - 0.5 * p * _LOG_2PI
        + (1.0 - 0.5 * d) * math.log(2.0)
        - math.lgamma(0.5 * d)
        - 0.5 * (p - qs) * math.log(s2)
    )


def _path_rows(r2, out2, t, qs, d, s2):
    """The row-dependent part of the log density (rows by models), the rest of :func:`_path_const`."""
    nu = np.abs(qs - d) / 2.0
    z = np.sqrt(r2) * np.exp(-0.5 * t)[None, :]
    return -out2 / (2.0 * s2) + 0.25 * (d - qs)[None, :] * np.log(r2) + log_bessel_k(nu[None, :], z)


# --------------------------------------------------------------------------- the path on dask.distributed
def _min_parts(parts):
    """The reduction of a ``"min"`` pass: the chunks' tuples of ``p``-vectors, elementwise minima."""
    return [np.minimum.reduce(np.asarray(vs, dtype=np.float64)) for vs in zip(*parts, strict=True)]


def _path_chunk(Xb, _cache, mean, order, what, *args):
    """Per-model sums over the rows of one chunk: the cumulative squared norms of its centred rows along
    ``order`` (:func:`_cum_norms`) reduced to their column minima (``what="min"``), the two Newton sums at
    ``log alpha = t`` for the models ``cols`` (``"newton"``, :func:`_newton_sums`), or the row parts of the
    log evidence (``"evidence"``, :func:`_path_rows`)."""
    Xo = (np.asarray(Xb, dtype=np.float64) - mean)[:, order]
    r2, out2 = _cum_norms(Xo)
    if what == "min":
        return (r2.min(axis=0) if r2.shape[0] else np.full(order.size, np.inf),)
    t, cols, d = args[:3]
    qs = cols + 1.0
    if what == "newton":
        return _newton_sums(np.sqrt(r2[:, cols]) * np.exp(-0.5 * t)[None, :], np.abs(qs - d) / 2.0)
    return (_path_rows(r2[:, cols], out2[:, cols], t, qs, d, args[3]).sum(axis=0),)


def _dask_evidence_path(src, n, mean, diag, order, d, s2) -> EvidencePath:
    """:func:`evidence_path` of the data of ``src`` (a :class:`repro._chunked.DaskSource`, centred by
    ``mean``) on the workers: passes of :meth:`~repro._chunked.DaskSource.map_reduce`.

    One pass for the models that are degenerate (a row zero on the support), one per safeguarded Newton
    iteration of :func:`_alpha_newton` (the models still moving; started, as in memory, at the moment
    estimate, from ``diag``: the diagonal of ``Xc'Xc``), one for the log evidence; each pass returns
    ``p``-vectors per row chunk.
    """
    p = order.size
    (rmin,) = src.map_reduce(_path_chunk, _min_parts, mean, order, "min")
    cols = np.flatnonzero(rmin > 0)
    logev = np.full(p, -np.inf)
    log_alpha = np.full(p, np.nan)
    if cols.size:
        qs = cols + 1.0
        t0 = np.log(np.cumsum(diag[order])[cols] / n / (d * qs))

        def sums(ta, active):
            return src.map_sum(_path_chunk, mean, order, "newton", ta, cols[active], d)

        t = _alpha_newton(sums, t0, qs, d, n)
        (rows,) = src.map_sum(_path_chunk, mean, order, "evidence", t, cols, d, s2)
        logev[cols] = n * _path_const(t, qs, p, d, s2) + rows
        log_alpha[cols] = t
    return EvidencePath(
        order=order.astype(np.int64), log_evidence=logev, alpha=np.exp(log_alpha), sigma1=math.sqrt(s2)
    )
