"""SPCA of Zou, Hastie & Tibshirani (2006): sparse loadings by alternating elastic-net regression.

For ``k`` components with loadings ``B`` (``D x k``) and an orthonormal ``A`` (``D x k``), SPCA
(their Algorithm 1, the "general SPCA") alternates

1. for fixed ``A``, each column ``b_j`` is the (naive) elastic net of ``X a_j`` on ``X``:
   ``b_j = argmin ||X a_j - X b||^2 + lambda2 ||b||^2 + lambda1_j ||b||_1``  (Eq. 3.12 / criterion 3.12);
2. for fixed ``B``, ``A = U V'`` from the SVD ``X'X B = U D V'`` (reduced-rank Procrustes);

from ``A`` = the first ``k`` principal components, until the normalized ``B`` stops changing, and
returns ``b_j / ||b_j||``. As in the comparison of Sigg & Buhmann (2008) and Zou's ``elasticnet`` R package
(``sparse="varnum"``), the l1 penalty is given as a number of non-zeros: ``lambda1_j`` is the point of the
LARS-EN path (LARS with the lasso modification on the augmented data ``[X; sqrt(lambda2) I]``, target
``[X a_j; 0]``) where ``K_j`` variables are active and the next would enter -- the analogue of Algorithm 2's
threshold at the (K+1)-th magnitude. LARS can drop a variable; the path goes on until exactly ``K_j`` are
active at an entering event.

LARS-EN is run through the data: each step costs one pass over ``X`` (``X'[r u]``, the correlations and
the equiangular direction together) plus O(K^2) for a Cholesky factor of ``X_A'X_A + lambda2 I`` that is
updated as variables enter (rebuilt after a drop), so nothing ``D x D`` is formed. The active columns
``X_A`` are gathered once per step and serve the residual, the direction ``X_A d`` and the Cholesky row of
the variable that enters (the same products on the same arrays as three separate gathers, bit for bit:
1.42x in CPU time on the SPCA calls of Sigg & Buhmann's Fig. 2 on the CBCL faces, 2429 x 361, where each
gather copies up to 361 strided columns of 2429 rows; 1.03-1.06x on leukemia, 72 rows, within the noise).

``ridge=np.inf`` is the "SPCA for p >> n" limit (Zou et al. Sec. 3.5): ``b_j`` is the soft threshold of
``X'X a_j``, here at its (K+1)-th largest magnitude (ties: below). ``renormalize=True`` gives the
"SPCAopt" of Sigg & Buhmann: the leading eigenvector of the covariance on each found support.

Ties and round-off. LARS's choices break near-ties by the lowest index: the first variable
(``argmax |c|``), the next event among entries and among drops (steps within 1e-12 ``C`` tie), and, for
``ridge=np.inf``, the ``K``-th place of the soft threshold (the threshold is then the largest magnitude
below the tied group, so ``K`` entries stay non-zero). A variable just dropped sits at ``c = +-C``; its
root on that side is exactly 0, and the computed one is round-off, which is discarded whatever its size
(a fixed floor of ``1e-9 C`` was not enough where the active Gram is ill-conditioned). The method itself
is sensitive where ``K`` exceeds the number of samples with a small ridge: the active Gram's condition
is about ``||X||^2 / ridge`` (6e7 on leukemia, ridge 1e-6, K = 100), so the coefficients carry that
many times the round-off, and the alternation's stopping test (``max |B_new - B_old| < tol``) reads
iterates that can differ from machine to machine in their 8th digit: where the change sits near
``tol``, the number of alternations (and so the result) is decided by round-off in the method itself.

References
----------
H. Zou, T. Hastie and R. Tibshirani. Sparse principal component analysis. Journal of Computational and
Graphical Statistics 15(2), 265-286, 2006.
B. Efron, T. Hastie, I. Johnstone and R. Tibshirani. Least angle regression. Annals of Statistics 32(2),
407-499, 2004.
H. Zou and T. Hastie. Regularization and variable selection via the elastic net. JRSS B 67(2), 2005.
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import validate_params

from .._base import POSITIVE_INT, ProjectionMixin, RealInterval, unscale_fitted, unscale_path
from .._dense import _canonical_sign
from .._threads import blas_limited
from .._ties import argmax_tied, order_tied, tie_tol
from .._validation import (
    check_array,
    check_cardinalities,
    check_cardinality,
    check_features,
    check_has_variance,
    check_int,
    check_n_components,
    check_scale,
    check_vector,
    warn_not_converged,
)
from ..em_sparse_pca import CardinalityPath, renormalize_on_support
from ..em_sparse_pca.operators import _leading_pc
from ..linalg import Covariance
from ._common import cardinality_path, check_data, data_factor

__all__ = ["SPCAZou", "larsen_k", "spca_zou", "spca_zou_path"]

#: The elastic net's ``lambda2``: a real >= 0, ``np.inf`` the soft-thresholding limit (Sec. 3.5).
RIDGE = RealInterval(0, None, closed="both")
#: The alternation's tolerance: a real > 0.
TOL = RealInterval(0, None, closed="neither")


# --------------------------------------------------------------------------- LARS-EN to K active
@validate_params(
    {
        "X": ["array-like"],
        "y": ["array-like"],
        "ridge": [RIDGE],
        "K": [POSITIVE_INT],
        "max_steps": [None, POSITIVE_INT],
    },
    prefer_skip_nested_validation=True,
)
def larsen_k(X, y, ridge: float, K: int, *, max_steps: int | None = None) -> tuple[np.ndarray, int]:
    """Naive elastic net ``min ||y - Xb||^2 + ridge ||b||^2 + lambda1 ||b||_1`` at the LARS-EN knot with ``K``
    active variables.

    LARS with the lasso modification (Efron et al. 2004) on the augmented problem
    ``X* = [X; sqrt(ridge) I]``, ``y* = [y; 0]`` (Zou & Hastie 2005), run through ``X`` only: the
    correlations are ``c = X'(y - Xb) - ridge b``. The path stops at the first knot where ``K`` variables
    are active and the next event would add one more (so the solution has ``K`` non-zeros); with
    ``K = n_features``, or when no variable can enter any more, it runs to the end of the path, the ridge
    solution ``(X'X + ridge I)^(-1) X'y``. ``ridge=np.inf`` returns the limit ``ridge * b``: the soft
    threshold of ``X'y`` at its (K+1)-th largest magnitude (a tie at the K-th place keeps the lowest
    indices and thresholds at the largest magnitude below the tie; module docstring).

    Parameters
    ----------
    X : ndarray, shape (n_samples, n_features)
        Design matrix (centre it first for a model without intercept).
    y : ndarray, shape (n_samples,)
        Response.
    ridge : float >= 0 or np.inf
        The elastic net's ``lambda2``.
    K : int, 1 <= K <= n_features
        Number of active variables at which the path stops.
    max_steps : int, optional
        Cap on LARS steps (default ``8 * K + 100``).

    Returns
    -------
    b : ndarray, shape (n_features,)
        The naive elastic-net coefficients, ``K`` non-zeros (fewer only at the end of the path).
    n_steps : int
        LARS steps taken.

    See Also
    --------
    spca_zou : SPCA, which solves one such problem per component and alternation.

    References
    ----------
    Efron, B., Hastie, T., Johnstone, I. & Tibshirani, R. (2004). Least angle regression. Annals of
    Statistics 32:407-499. Zou, H. & Hastie, T. (2005). Regularization and variable selection via the
    elastic net. JRSS B 67:301-320, Lemma 1 (the augmented problem) and Section 3.4 (LARS-EN).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import larsen_k
    >>> y = X[:, 0] + 0.1 * rng.standard_normal(100)
    >>> b, n_steps = larsen_k(X - X.mean(0), y - y.mean(), 0.0, 2)
    >>> np.flatnonzero(b).tolist(), n_steps
    ([0, 1], 2)
    """
    X = check_array(X, "X")
    y = check_vector(y, "y", X.shape[0])
    K = check_int(K, "K", low=1, high=X.shape[1])
    return _larsen_k(X, y, float(ridge), K, max_steps=max_steps)


def _larsen_k(X, y, ridge: float, K: int, *, max_steps: int | None = None) -> tuple[np.ndarray, int]:
    """:func:`larsen_k` on checked input (float64 arrays, ``1 <= K <= n_features``)."""
    D = X.shape[1]
    if np.isinf(ridge):
        c = X.T @ y
        return _soft_threshold_k(c, K), 1
    max_steps = 8 * K + 100 if max_steps is None else max_steps
    tiny = np.finfo(float).eps
    beta = np.zeros(D)
    active: list[int] = []
    is_active = np.zeros(D, dtype=bool)
    never = np.zeros(D, dtype=bool)  # collinear with the active set: cannot enter
    just_dropped = -1  # the variable dropped by the last step, if any
    L = np.zeros((0, 0))
    col_sq = np.einsum("ij,ij->j", X, X)
    c = X.T @ y
    C = float(np.abs(c).max())
    scale = max(C, 1e-300)
    if C <= tiny * scale:
        return beta, 0
    j = argmax_tied(np.abs(c))  # near-ties (round-off) to the lowest index
    steps = 0

    def add(j: int, L: np.ndarray, XA: np.ndarray | None = None) -> np.ndarray | None:
        # XA: X[:, active] when the caller has it (the same array: the same product, bit for bit)
        if active:
            g = (X[:, active] if XA is None else XA).T @ X[:, j]
        else:
            g = np.empty(0)
        if L.shape[0]:
            lvec = scipy.linalg.solve_triangular(L, g, lower=True, check_finite=False)
        else:
            lvec = np.empty(0)
        d2 = col_sq[j] + ridge - float(lvec @ lvec)
        if d2 <= 1e-12 * (col_sq[j] + ridge):
            return None
        k = L.shape[0]
        Ln = np.zeros((k + 1, k + 1))
        Ln[:k, :k] = L
        Ln[k, :k] = lvec
        Ln[k, k] = np.sqrt(d2)
        return Ln

    Ln = add(j, L)
    if Ln is None:
        return beta, 0
    L = Ln
    active.append(j)
    is_active[j] = True
    while steps < max_steps:
        steps += 1
        A = np.array(active)
        # Correlations (exact, from the residual) and the equiangular direction in one pass over X.
        XA = X[:, A]  # gathered once per step, for r, u and a variable's entry (add)
        r = y - XA @ beta[A]
        s = np.sign(c[A])
        d = scipy.linalg.cho_solve((L, True), s, check_finite=False)
        u = XA @ d
        ca = X.T @ np.column_stack([r, u])
        c = ca[:, 0] - ridge * beta
        a = ca[:, 1]
        a[A] += ridge * d
        C = float(np.abs(c[A]).max())
        # Events: a variable enters, an active coefficient crosses zero, or correlations reach 0.
        gamma, event, who = C, "end", -1
        cand = ~is_active & ~never
        if cand.any():
            ci, ai = c[cand], a[cand]
            with np.errstate(divide="ignore", invalid="ignore"):
                g1 = (C - ci) / (1.0 - ai)
                g2 = (C + ci) / (1.0 + ai)
            floor = np.full(ci.shape, tiny * C)
            g1[~(g1 > floor)] = np.inf
            g2[~(g2 > floor)] = np.inf
            if just_dropped >= 0:
                # A variable just dropped sits at c = +-C: its root on that side (gamma = 0 exactly) is
                # round-off, whatever its size, and is discarded; the root on the other side (re-entry with
                # the opposite sign) is genuine. (The floor of 1e-9 C this replaces let a round-off root of
                # 6.6e-9 C through on one OpenBLAS kernel and not on another -- leukemia, ridge 1e-6,
                # K = 100, where the active Gram's condition is 6e7 -- and the two LARS paths ended on
                # supports 2 of 100 variables apart.)
                t = int(np.flatnonzero(np.flatnonzero(cand) == just_dropped)[0])
                if ci[t] > 0:
                    g1[t] = np.inf
                else:
                    g2[t] = np.inf
            g = np.minimum(g1, g2)
            m = argmax_tied(-g, scale=C)  # the first event; events within 1e-12 C tie: lowest index
            if g[m] < gamma:
                gamma, event, who = float(g[m]), "add", int(np.flatnonzero(cand)[m])
        with np.errstate(divide="ignore", invalid="ignore"):
            gd = -beta[A] / d
        gd[~(gd > tiny)] = np.inf
        if gd.size and gd.min() < gamma:
            m = argmax_tied(-gd, scale=C)
            gamma, event, who = float(gd[m]), "drop", int(A[m])
        beta[A] += gamma * d
        c = c - gamma * a
        just_dropped = -1
        if event == "end":
            break
        if event == "drop":
            beta[who] = 0.0
            active.remove(who)
            is_active[who] = False
            just_dropped = who
            if not active:  # only possible with exact ties: restart from the largest correlation
                cand = ~never
                cand[who] = False
                if not cand.any():
                    break
                j = int(np.flatnonzero(cand)[argmax_tied(np.abs(c[cand]))])
                L = add(j, np.zeros((0, 0)))
                if L is None:
                    break
                active.append(j)
                is_active[j] = True
                continue
            Aa = np.array(active)
            G = X[:, Aa].T @ X[:, Aa] + ridge * np.eye(len(active))
            L = np.linalg.cholesky(G)
            continue
        # event == "add"
        if len(active) >= K:
            break
        Ln = add(who, L, XA)  # active is still A: XA is X[:, active]
        if Ln is None:  # collinear with the active set: it can never enter
            never[who] = True
            continue
        L = Ln
        active.append(who)
        is_active[who] = True
    return beta, steps


def _soft_threshold_k(c: np.ndarray, K: int) -> np.ndarray:
    """The soft threshold of ``c`` keeping its ``K`` largest magnitudes (``ridge = inf``).

    The threshold is the (K+1)-th largest magnitude. Ties: magnitudes within a relative 1e-12
    of the largest tie (:func:`repro._ties.order_tied`); a tie at the ``K``-th place keeps its lowest
    indices, and the threshold is then the largest magnitude below the tied group (the rule of the EM's
    M-step, :func:`repro.em_sparse_pca._kernels.mstep_cut`), so ``K`` entries stay non-zero whatever the
    last bits (a plain threshold at the (K+1)-th value kept fewer than ``K`` at an exact tie, and a
    round-off-sized coefficient at a near one).
    """
    a = np.abs(c)
    D = a.size
    if K >= D:
        return c.copy()
    order = order_tied(a)
    keep = order[:K]
    tol = tie_tol(a)
    m = float(a[keep].min())
    rest = a[order[K:]]
    if rest[0] < m - tol:  # no tie at the cut: the (K+1)-th largest, as printed
        thr = float(rest[0])
    else:  # the largest magnitude below the tied group
        below = rest[rest < m - tol]
        thr = float(below.max()) if below.size else 0.0
    out = np.zeros(D)
    out[keep] = np.sign(c[keep]) * np.maximum(a[keep] - thr, 0.0)
    return out


# --------------------------------------------------------------------------- SPCA
def _spca(A, ks, ridge, A0, tol, max_iter):
    """Alternating elastic net / Procrustes (Zou et al. 2006, Algorithm 1) on ``A`` (``A'A = C``)."""
    D, L = A0.shape
    Amat = A0.copy()
    B = np.zeros((D, L))
    Bn_old = None
    n_iter = max_iter
    converged = False
    for it in range(max_iter):
        XA = A @ Amat  # (N, L): the targets X a_j
        for j in range(L):
            B[:, j], _ = _larsen_k(A, XA[:, j], ridge, int(ks[j]))
        # Procrustes: X'X B = U S V', A = U V'.
        M = A.T @ (A @ B)
        U, _, Vt = np.linalg.svd(M, full_matrices=False)
        Amat = U @ Vt
        Bn = _unit_columns(B)
        if Bn_old is not None and np.abs(Bn - Bn_old).max() < tol:
            n_iter, converged = it + 1, True
            break
        Bn_old = Bn
    W = _canonical_sign(_unit_columns(B)).T
    return W, n_iter, converged


def _unit_columns(B: np.ndarray) -> np.ndarray:
    """``B`` with unit-norm columns (zero columns stay zero).

    Each column is divided by its largest magnitude first: with a large ridge the elastic-net
    coefficients are ~1e-290 and their squares underflow, so the plain 2-norm would be 0.
    """
    top = np.abs(B).max(axis=0)
    top[top == 0] = 1.0
    Bs = B / top
    norms = np.linalg.norm(Bs, axis=0)
    norms[norms == 0] = 1.0
    return Bs / norms


def _scale_ridge(ridge: float, s: float) -> float:
    """``ridge / s^2``: the ridge for the data ``X / s`` (``s`` a power of two, so the division is exact).

    Overflow to inf is the soft-threshold limit and underflow to 0 the lasso limit: in both cases the
    ridge is that far outside the scale of ``X'X`` that the limit is the same problem.
    """
    if s == 1.0 or ridge == 0.0 or np.isinf(ridge):
        return ridge
    with np.errstate(over="ignore", under="ignore"):
        return float(np.float64(ridge) / s / s)


class SPCAZou(ProjectionMixin, BaseEstimator):
    """Sparse PCA by alternating elastic net (Zou, Hastie & Tibshirani 2006), ``K`` non-zeros per component.

    Parameters
    ----------
    n_components : int, default 1
        Number of sparse components, ``1..n_features``.
    cardinality : int, sequence of int, or None
        Non-zeros per component (the LARS-EN stopping point). ``None``: all features.
    ridge : float >= 0 or np.inf
        ``lambda2``. Default ``1e-6``, the default of Zou's ``elasticnet::spca``; ``np.inf`` is the
        soft-thresholding limit for ``p >> n``.
    renormalize : bool
        "SPCAopt": optimal weights on each found support (leading eigenvector of ``C[S, S]``).
    tol : float
        Stop when the normalized loadings change by less than ``tol`` (max abs); ``1e-3`` and
        ``max_iter=200`` are the defaults (``eps.conv``, ``max.iter``) of ``elasticnet::spca``. With a fixed
        number of non-zeros the l1 penalty changes at every alternation and the loadings can keep
        drifting slowly; stopping at ``max_iter`` then gives a ConvergenceWarning.
    max_iter : int, default 200
        Maximum number of alternations.

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Unit-norm sparse loadings as rows, ``cardinality`` non-zeros each.
    explained_variance_ : ndarray, shape (n_components,)
        ``w'Cw`` (``C`` the sample covariance, ddof=1) of each component.
    n_iter_ : int
        Alternations run.
    mean_ : ndarray, shape (n_features,)
        Column means of the training data (subtracted by ``transform``).
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    spca_zou : the function form (also on a covariance).
    spca_zou_path : the first component for every cardinality.
    repro.EMSparsePCA : the EM method of Sigg & Buhmann (2008) compared with it.

    References
    ----------
    H. Zou, T. Hastie and R. Tibshirani. Sparse principal component analysis. JCGS 15(2), 2006,
    Algorithm 1 (alternating elastic net and reduced-rank Procrustes).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import SPCAZou
    >>> est = SPCAZou(n_components=2, cardinality=3).fit(X)
    >>> [np.flatnonzero(w).tolist() for w in est.components_]
    [[0, 1, 2], [0, 1, 3]]
    >>> est.transform(X).shape
    (100, 2)
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "cardinality": [None, POSITIVE_INT, "array-like"],
        "ridge": [RIDGE],
        "renormalize": ["boolean"],
        "tol": [TOL],
        "max_iter": [POSITIVE_INT],
    }

    def __init__(
        self, n_components=1, *, cardinality=None, ridge=1e-6, renormalize=False, tol=1e-3, max_iter=200
    ):
        self.n_components = n_components
        self.cardinality = cardinality
        self.ridge = ridge
        self.renormalize = renormalize
        self.tol = tol
        self.max_iter = max_iter

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features); returns self.

        Data whose largest magnitude is outside ``[2^-256, 2^256]`` are fitted as ``X / s`` (``s`` a power
        of two) with ``ridge / s^2``, which is the same problem, and the variances scaled back.

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Training data.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, X)
        X = check_data(X)
        check_has_variance(X, "SPCAZou")
        s = check_scale(X)
        A, mean = data_factor(X / s if s != 1.0 else X)
        self._fit_data(A, mean, X.shape[0] - 1, scale=s)
        unscale_fitted(self, s)
        return self

    @blas_limited
    def _fit_data(self, A, mean, rank_bound, scale=1.0):
        """The fit on the covariance factor ``A`` (``A'A = C``) of checked data; the parameters were
        checked by ``_parameter_constraints`` (the bounds that depend on the data here)."""
        D = A.shape[1]
        L = check_n_components(
            self.n_components,
            rank_bound + 1,
            D,
            high=max(min(rank_bound, D), 1),
            why="centring removes one dimension, so the data span at most n_samples - 1 directions",
        )
        ks = check_cardinality(self.cardinality, D, L)
        ridge = _scale_ridge(float(self.ridge), scale)
        tol, max_iter = float(self.tol), int(self.max_iter)
        try:
            _, A0 = Covariance._trusted(data=A).eigh(L)  # A: built from checked data
        except ValueError:
            raise ValueError(
                f"n_components={L} exceeds the numerical rank of X; lower n_components."
            ) from None
        W, n_iter, converged = _spca(A, ks, ridge, A0, tol, max_iter)
        if not converged:
            warn_not_converged("SPCAZou", max_iter, tol)
        if self.renormalize:
            W = np.array([renormalize_on_support(A, w)[0] for w in W])
        AW = A @ W.T
        self.components_ = W
        self.explained_variance_ = np.einsum("ij,ij->j", AW, AW)
        self.n_iter_ = n_iter
        self.mean_ = mean
        self.n_features_in_ = D
        return self


@validate_params(
    {"X": ["array-like", Covariance], "n_components": [POSITIVE_INT]},
    prefer_skip_nested_validation=False,  # the estimator validates **params
)
def spca_zou(X, n_components=1, **params):
    """Function form of :class:`SPCAZou`; ``X`` may be a :class:`repro.linalg.Covariance`.

    Parameters
    ----------
    X : array, shape (n_samples, n_features), or :class:`repro.linalg.Covariance`
        Data (centred here) or a covariance.
    n_components : int, default 1
        Number of sparse components.
    **params
        The other parameters of :class:`SPCAZou` (``cardinality``, ``ridge``, ``renormalize``, ``tol``,
        ``max_iter``).

    Returns
    -------
    components : ndarray, shape (n_components, n_features)
        Unit-norm sparse loadings as rows.
    explained_variance : ndarray, shape (n_components,)
        ``w'Cw`` of each component.

    See Also
    --------
    SPCAZou, spca_zou_path

    References
    ----------
    Zou, H., Hastie, T. & Tibshirani, R. (2006). Sparse principal component analysis. J. Computational
    and Graphical Statistics 15:265-286, Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import spca_zou
    >>> components, variance = spca_zou(X, 2, cardinality=3)
    >>> components.shape, np.count_nonzero(components, axis=1).tolist()
    ((2, 10), [3, 3])
    """
    est = SPCAZou(n_components, **params)
    if not isinstance(X, Covariance):
        est.fit(X)
        return est.components_, est.explained_variance_
    est._validate_params()  # what fit's _fit_context does
    op, s, power = X.rescaled()  # data near 1e160 behind it: C / s^2 with ridge / s^2, the same problem
    if power != 2:
        op, s = X, 1.0
    A, mean = data_factor(op)
    n = X.n_samples or A.shape[0] + 1
    est._fit_data(A, mean, min(n - 1, A.shape[0]), scale=s)
    unscale_fitted(est, s)
    return est.components_, est.explained_variance_


@validate_params(
    {
        "X": ["array-like", Covariance],
        "cardinalities": [POSITIVE_INT, "array-like"],
        "ridge": [RIDGE],
        "renormalize": ["boolean"],
        "warm_start": ["boolean"],
        "tol": [TOL],
        "max_iter": [POSITIVE_INT],
    },
    prefer_skip_nested_validation=True,
)
@blas_limited
def spca_zou_path(
    X, cardinalities, *, ridge=1e-6, renormalize=True, warm_start=False, tol=1e-3, max_iter=200
) -> CardinalityPath:
    """The first SPCA component for every cardinality in one call.

    Each ``K`` starts from the first principal component (computed once), as SPCA does; with
    ``warm_start=True`` each ``K`` (in increasing order) starts from the previous ``K``'s ``A`` instead.

    Parameters
    ----------
    X : array, shape (n_samples, n_features), or :class:`repro.linalg.Covariance`
        Data (centred here) or a covariance.
    cardinalities : sequence of int
        Each in ``1..n_features``.
    ridge : float >= 0 or np.inf, default 1e-6
        The elastic net's ``lambda2`` (see :class:`SPCAZou`).
    renormalize : bool, default True
        Also compute the optimal weights on each support ("SPCAopt").
    warm_start : bool, default False
        Start each ``K`` from the previous one's solution instead of the first principal component.
    tol : float, default 1e-3
        Stop when the normalized loadings change by less than ``tol`` (max abs).
    max_iter : int, default 200
        Maximum number of alternations per cardinality.

    Returns
    -------
    CardinalityPath
        ``components``: SPCA loadings; ``components_opt``: renormalized ("SPCAopt") when ``renormalize``;
        ``n_iter``: alternations.

    See Also
    --------
    SPCAZou, repro.em_sparse_pca_path

    References
    ----------
    Zou, H., Hastie, T. & Tibshirani, R. (2006). Sparse principal component analysis. J. Computational
    and Graphical Statistics 15:265-286. Sigg, C. D. & Buhmann, J. M. (2008). ICML, Figure 2 (SPCA and
    SPCAopt).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro.baselines import spca_zou_path
    >>> path = spca_zou_path(X, [2, 4])
    >>> [np.flatnonzero(w).tolist() for w in path.components_opt]
    [[0, 1], [0, 1, 2, 3]]
    """
    s = 1.0
    if isinstance(X, Covariance):  # data near 1e160 behind it: their covariance's products overflow
        op, s_op, power = X.rescaled()
        if power == 2:
            X, s = op, s_op
    else:  # badly scaled data: X / s with ridge / s^2, the same problem
        X = check_data(X)
        check_has_variance(X, "spca_zou_path")
        s = check_scale(X)
        X = X / s if s != 1.0 else X
    A, _ = data_factor(X)
    D = A.shape[1]
    ks = check_cardinalities(cardinalities, D)
    ridge = _scale_ridge(float(ridge), s)
    tol, max_iter = float(tol), int(max_iter)
    t0 = time.perf_counter()
    pc = _leading_pc(A)[:, None]
    init_time = time.perf_counter() - t0
    start = pc
    not_converged: list[int] = []

    def alternate(K):  # Algorithm 1 for one component from ``start``; warm starts move it along
        nonlocal start
        W, it, converged = _spca(A, np.array([K]), ridge, start, tol, max_iter)
        if not converged:
            not_converged.append(K)
        w = W[0]
        if warm_start:
            start = (A.T @ (A @ w))[:, None]
            start /= np.linalg.norm(start)
        return w, it

    order = np.argsort(ks, kind="stable") if warm_start else None
    path = cardinality_path(
        "SPCA", A, ks, alternate, renormalize=renormalize, init_time=init_time, order=order
    )
    if not_converged:
        warn_not_converged("spca_zou_path", max_iter, tol, f"(cardinalities {not_converged})")
    return unscale_path(path, s)
