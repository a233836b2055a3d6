"""The certified optimum of sparse PCA: ``max x'Cx`` over unit ``x`` with at most ``k`` non-zeros, by branch
and bound (optionally with ``x >= 0``).

A node fixes features in (``I``) or out and leaves the rest free (``F``); ``r = k - |I|`` may still enter.
It is pruned when an upper bound on every support below it is at most the incumbent (times ``1 + gap``).
The bounds (kernels in :mod:`repro.optimal._kernels`), cheapest first:

1. **trace** (Berk & Bertsimas 2019): ``lambda_max(C_S) <= tr C_S``.
2. **Li & Xie's cut** (2024): for PSD ``C = G'G``, ``C_S = G_S'G_S`` and
   ``||G_S||^2 <= ||G_I||^2 + sum_{j in S - I} ||g_j||^2``, so
   ``lambda_max(C_S) <= lambda_max(C_I) + (r largest C_jj of F)``.
3. **the 2 x 2 bound** (this library): let ``h`` be the top left singular vector of ``G_I`` (value
   ``l1``, next ``l2``). A unit ``y = c h + s w`` (``w`` unit, orthogonal to ``h``, ``c, s >= 0``) gives
   ``y'G_I G_I'y <= l1 c^2 + l2 s^2`` (no cross term: ``h`` is an eigenvector) and
   ``(g_j'y)^2 <= (|a_j| c + b_j s)^2`` with ``a_j = g_j'h = C_{j,I} u1 / sqrt(l1)``,
   ``b_j^2 = C_jj - a_j^2``. Summing, ``lambda_max(C_S) = max_y y'G_S G_S'y`` is at most the largest
   eigenvalue of ``[[l1 + sum a_j^2, sum |a_j| b_j], [., l2 + sum b_j^2]]``, a non-negative matrix whose
   largest eigenvalue grows with each entry: each sum is replaced by its ``r`` largest terms over ``F``.
   With one feature ``j`` forced in, the same bound (or ``lambda_max(C_{I+j})``'s own 2 x 2 bound plus
   Li & Xie's cut) decides whether ``j`` can be fixed out of the node's subtree.
   The **angle bound** keeps one choice of the ``r`` features for both entries: with ``y = cos(t) h +
   sin(t) w``, ``lambda_max(C_S) <= max_t l1 cos^2 + l2 sin^2 + (r largest (|a_j| cos + b_j sin)^2)``,
   certified on a partition of ``[0, pi/2]`` (on a piece every term grows with ``cos`` and ``sin``, so
   the piece is bounded at its ``cos`` from the left end and ``sin`` from the right). The
   **multi-direction bound** keeps every direction ``h_t`` of ``C_I`` apart: ``lambda_max`` of
   ``diag(l_1, .., l_q, l_{q+1})`` plus the entrywise ``r`` largest ``u_js u_jt``,
   ``u_j = (|a_j1|, .., |a_jq|, b_j)``.
   The **eigen-knapsack bound**: with ``C = sum lam_j v_j v_j'`` (decreasing), ``x'Cx = sum_q
   (lam_q - lam_{q+1}) P_q`` with ``P_q = ||V_q'x||^2 <= min(1, ||V_q[S, :]||_F^2)``, and the Frobenius
   norm over ``S`` is at most its rows on ``I`` plus the ``r`` largest free rows.
4. **Gershgorin** (Berk & Bertsimas): ``lambda_max(C_S) <= lambda_max(|C|_S) <=`` the largest row sum of
   ``|C|_S``; for ``x >= 0``, ``x'Cx <= x'max(C, 0)x``, so ``max(C, 0)`` replaces ``|C|``.
5. ``lambda_max(C_A)`` over the allowed features ``A = I + F`` (eigenvalue interlacing), when
   ``|A| <= eig_limit``.
6. **the l1 (DSPCA-dual) bound** (d'Aspremont et al.'s dual, this library's search over ``rho``): a unit
   ``x`` with at most ``k`` non-zeros has ``||x||_1^2 <= k``, so for ``U`` with zero diagonal and
   ``|U_ij| <= rho``, ``x'Cx <= lambda_max(C_A - U_A) + rho (k - 1)``; ``U = clip(C, -rho, rho)`` off the
   diagonal, ``rho`` searched from the parent's, the value certified by a Cholesky factorization. Nodes
   that survive it branch on the free feature with the largest weight in its top eigenvector.
   With ``root_dual``, ``U`` is also optimized once at the root (:mod:`repro.optimal.l1_dual`:
   accelerated projected gradient on the smoothed ``lambda_max``, the dual of d'Aspremont et al.'s
   relaxation; ``rho`` is the largest ``|U_ij|`` of the ``U`` found, so any iterate is a valid point),
   and every node bounds its allowed features with that one ``U``: ``lambda_max((C - U)_A) + rho (k -
   1)`` bounds every support inside ``A`` by the same argument and interlacing. (The semidefinite
   relaxation of d'Aspremont et al. itself adds nothing: its value is this dual's minimum.)
7. **the perspective (Boolean) bound** (Bertsimas, Cory-Wright & Pauphilet 2022; derivation in
   :mod:`repro.optimal.perspective`), with ``root_perspective``: the l1 dual plus the multipliers of
   the perspective constraints, ``lambda_max(C - V - W_s + diag(a)) + rho (k - 1) + topk(||w_i||^2 /
   (4 a_i))``, minimized from the l1 dual's ``U``; its point replaces the l1 one at the nodes (the same
   form: ``lambda_max(M_A)`` plus a constant).

At the root the spannogram certificate (:func:`repro.spannogram_bound`, Asteris et al. 2014) is a further
bound, and the incumbent is the best of a greedy forward selection, the truncated leading eigenvector and
EMSparsePCA, each polished by a swap local search; each node tries ``I`` plus its ``r`` free features
best aligned with ``C_I``'s top direction. The search is depth-first (at most ``p + 1`` open nodes).
With ``x >= 0`` a decided support is evaluated exactly by enumerating its subsets (at the optimum ``x``
is a positive eigenvector of ``C_T`` on its support ``T``), up to a budget per leaf; a leaf whose
enumeration runs out keeps ``lambda_max`` of its support in the bound (status "undecided_leaves"). Any
``k`` up to ``p``, with or without signs: no structure of the search has a fixed size.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import validate_params

from .._base import POSITIVE_INT, IntInterval, ProjectionMixin, RealInterval
from .._dense import _projection_deflate
from .._validation import (
    as_float,
    check_array,
    check_cardinality,
    check_features,
    check_has_variance,
    check_int,
    check_psd,
    check_scale,
    unscale,
)
from ..linalg import Covariance
from .roots import _em_support, _spannogram_root
from .search import OptimalResult, best_feature_result, search
from .wide import WIDE_MIN_FEATURES, solve_wide

__all__ = ["OptimalResult", "OptimalSparsePCA", "optimal_sparse_pca", "optimal_sparse_pca_wide"]

#: The constraints of the two functions' shared parameters (scikit-learn's ``validate_params``: a value
#: outside them is refused with an error that names the parameter); ``k <= n_features`` and the data are
#: checked in the body, where the data are known.
_SEARCH_CONSTRAINTS = {
    "X": ["array-like", "sparse matrix", Covariance],  # sparse: refused below with the fix (toarray)
    "k": [POSITIVE_INT],
    "nonneg": ["boolean"],
    "gap": [RealInterval(0, None, closed="left")],
    "time_limit": [None, RealInterval(0, None, closed="left")],
    "max_nodes": [None, IntInterval(0, None, closed="left")],
    "eig_limit": [IntInterval(0, None, closed="left")],
    "root_em": ["boolean"],
    "root_spannogram": ["boolean"],
    "verbose": ["boolean"],
    "root_dual": [IntInterval(0, None, closed="left")],
    "root_perspective": [IntInterval(0, None, closed="left")],
}


def _constant_features(M: np.ndarray) -> np.ndarray:
    bad = ~np.isfinite(np.diag(M))
    return np.flatnonzero(bad | (~np.isfinite(M)).all(axis=0))


def _scaled_data(X) -> tuple[np.ndarray, float]:
    """Checked data rows divided by ``s``, the power of two of :func:`repro._validation.check_scale` (1 for
    ordinarily scaled data; dividing by it is exact): the problem is scale-equivariant (supports and
    components unchanged, variances times ``s^2``), and ``X * 1e-160`` would underflow the covariance to
    subnormal numbers (wrong values) or ``X * 1e160`` overflow it."""
    X = check_array(X, "X", min_samples=2)
    check_has_variance(X, "optimal_sparse_pca")
    s = check_scale(X)
    return (X / s if s != 1.0 else X), s


def _unscaled(res: OptimalResult, s: float, power: int) -> OptimalResult:
    """``res`` of the problem on ``X / s``, as the result for ``X``: variances and bounds times ``s^power``
    (refused with the reason where float64 cannot hold them)."""
    if s == 1.0:
        return res

    def up(v):
        return float(unscale(v, s, power, "variances", underflow=False))

    return replace(res, value=up(res.value), upper_bound=up(res.upper_bound), root_bound=up(res.root_bound))


def _as_matrix(X, precomputed: bool, check_psd_too: bool = True) -> tuple[np.ndarray, float, int]:
    """``(C, s, power)``: the covariance as a dense float64 matrix, checked once (finite, symmetric,
    positive semi-definite by the library's one rule, :func:`repro._validation.check_psd`), divided by
    ``s**power``, ``s`` the power of two that brings the backing array into the safe range (the variances
    scale as ``s**power``).

    A given matrix is scaled by its largest entry (``power`` 1), a :class:`repro.Covariance` as
    :meth:`repro.Covariance.rescaled` does (``power`` 2 when data back it: their covariance would overflow
    float64 before it is scaled), data rows that :func:`_scaled_data` has already checked and scaled not at
    all (``s = 1``). Only a matrix whose semi-definiteness nothing has shown yet is tested for it: a
    covariance of data is one by construction, and :meth:`repro.Covariance.from_matrix` has tested its
    matrix. Variances float64 cannot hold are refused here, before the search, with the reason.
    """
    power, psd_known = 1, True
    if isinstance(X, Covariance):
        op, s, power = X.rescaled()
        M = np.array(op.dense(), dtype=float)
        psd_known = X.data is not None or getattr(X, "_psd_checked", False)
    elif precomputed:
        M = as_float(X, "X")  # sparse, masked, complex or non-numeric input: refused with the reason
        if M.ndim != 2 or M.shape[0] != M.shape[1]:
            raise ValueError(f"X with precomputed=True must be a square matrix; got shape {M.shape}.")
        if M.shape[0] == 0:
            raise ValueError(
                "X with precomputed=True is an empty (0, 0) matrix; pass the (n_features, n_features) "
                "covariance or correlation matrix of at least one feature."
            )
        if not np.all(np.isfinite(M)):
            bad = _constant_features(M)
            where = f" (features {bad[:10].tolist()}{'...' if bad.size > 10 else ''})" if bad.size else ""
            raise ValueError(
                f"X holds {int(np.sum(~np.isfinite(M)))} NaN or infinite entries{where}: a "
                "correlation matrix has NaN where a feature is constant. Drop those features (or pass the "
                "covariance matrix)."
            )
        asym = float(np.max(np.abs(M - M.T)))
        if asym > 1e-8 * max(float(np.max(np.abs(M))), 1e-300):
            raise ValueError(f"X with precomputed=True must be symmetric; max |X - X'| = {asym:.3g}.")
        M = 0.5 * (M + M.T)
        s = check_scale(M, "X")
        M = M / s if s != 1.0 else M
        psd_known = False
    else:  # data rows, checked and scaled by _scaled_data: no second check
        M, s = np.array(Covariance._from_valid(X).dense(), dtype=float), 1.0
    if M.shape[0] == 0:
        raise ValueError("X has no features.")
    top = float(np.max(np.abs(np.diag(M))))
    if not top > 0:
        raise ValueError("X has no variance (a zero covariance): every unit vector is optimal, with value 0.")
    if s != 1.0:  # the largest variance, refused now where float64 cannot hold it (not after the search)
        unscale(top, s, power, "variances", underflow=False)
    if not psd_known and check_psd_too:
        check_psd(M, "X")
    return M, s, power


@validate_params(_SEARCH_CONSTRAINTS | {"precomputed": ["boolean"]}, prefer_skip_nested_validation=True)
def optimal_sparse_pca(
    X,
    k,
    *,
    nonneg: bool = False,
    precomputed: bool = False,
    gap: float = 1e-6,
    time_limit: float | None = None,
    max_nodes: int | None = None,
    eig_limit: int = 40,
    root_em: bool = True,
    root_spannogram: bool = True,
    verbose: bool = False,
    root_dual: int = 0,
    root_perspective: int = 0,
) -> OptimalResult:
    """The optimal ``k``-sparse principal component, proven: ``max x'Cx``, ``||x|| = 1``, ``|x|_0 <= k``.

    Branch and bound over supports (module docstring: the bounds and why each is valid). The returned
    component is the best found; ``upper_bound`` bounds the optimum, so ``value / upper_bound`` certifies
    how close it is even when the search stops early.

    Parameters
    ----------
    X : array_like (n_samples, n_features), Covariance, or (n_features, n_features) with ``precomputed``
        Data (centred here), a :class:`repro.Covariance`, or a covariance/correlation matrix. Data with
        fewer samples than features and at least 100 features (``WIDE_MIN_FEATURES``) go through the
        ``n x n`` side and never form the ``p x p`` covariance (Notes).
    k : int
        The largest number of non-zeros, ``1 <= k <= n_features``.
    nonneg : bool, default False
        Also require ``x >= 0``.
    precomputed : bool, default False
        ``X`` is a covariance or correlation matrix (symmetric positive semi-definite, finite).
    gap : float, default 1e-6
        Relative tolerance: the search ends when ``upper_bound <= value * (1 + gap)``.
    time_limit : float, optional
        Seconds; past it the best component is returned with its certified gap (``status`` "time_limit").
    max_nodes : int, optional
        A limit on the nodes processed (``status`` "node_limit"); on the wide route, on each cardinality's.
    eig_limit : int, default 40
        Largest number of allowed features for which a node computes ``lambda_max`` over all of them.
    root_em, root_spannogram : bool, default True
        Use EMSparsePCA as a root incumbent, and the spannogram certificate as a root bound.
    verbose : bool, default False
        Print a progress line (nodes, open nodes, value, bound, gap) to stderr about every second.
    root_dual : int, default 0
        Iterations (one ``eigh`` of the ``p x p`` matrix each) of the l1 bound with its ``U`` optimized
        (:func:`repro.optimal.l1_dual.l1_dual_bound`) at the root, run only when the cheaper root bounds
        leave a gap, and within a quarter of ``time_limit`` (``repro.optimal.search.ROOT_DUAL_SHARE``);
        every node then also bounds its allowed features with that ``U``. 0: not used. On unstructured
        covariances 300 closes most of the root gap that the clipped ``U`` leaves (Wishart p = 200,
        k = 5 from 7.8% to 0.9%); on structured ones that the nodes prove quickly it costs more than it
        saves (CBCL, x >= 0, k = 1..20: 4.4x the time for 26% fewer nodes), so it is not the default.
    root_perspective : int, default 0
        Function evaluations (one ``eigh`` each) of the perspective (Boolean) bound
        (:mod:`repro.optimal.perspective`) after the l1 dual, from its ``U``; where it ends lower, the
        nodes use its point instead. 0: not used (1,200 lowered the root gap on Arrhythmia, k = 20, from
        the l1 dual's 8.0% to 4.9%, for about 3,700 ``eigh`` of CPU).

    Returns
    -------
    OptimalResult
        Component, value, upper bound, gap, ``proven``, status, nodes, time and the prune counts.
        Interrupting (Ctrl-C) returns the incumbent with status "interrupted" (in the door, before the
        search: the largest variance's feature, with a bound that needs no factorization).

    See Also
    --------
    OptimalSparsePCA : several components, each certified.
    optimal_sparse_pca_wide : wide data, the result at every cardinality ``1..k``.
    repro.spannogram_bound : the upper bound of Asteris et al. (2014).

    Notes
    -----
    **Wide data** (``n < p``, ``p >= 100``; ``repro.optimal.wide``): the cardinalities ``1..k`` are
    solved in turn; for each, a feature is screened out when a bound on every support holding it (the
    trace, an eigen-knapsack over the ``n``-dimensional spectrum, the 2 x 2 bound, and the previous
    cardinality's upper bound plus ``C_ii``) is at most the incumbent, and the search runs on the
    remaining candidates' ``|R| x |R|`` covariance. More than 1500 candidates: no search, status
    "too_many_candidates", and the screening bounds give the certified gap. ``prunes`` counts the
    screened features and the candidates.

    **Scale.** Data (or a given matrix) whose largest entry lies outside ``2^-256 .. 2^256`` are divided by
    a power of two first (exact; the problem is scale-equivariant), and the value and bounds scaled back;
    where float64 cannot hold them (variances below 2.2e-308 or above 1.8e308) the call is refused with
    the reason, rather than solved on a covariance of subnormal or infinite numbers.

    References
    ----------
    Berk, L. & Bertsimas, D. (2019). Certifiably optimal sparse principal component analysis. Math. Prog.
    Comp. 11, 381-420. Li, Y. & Xie, W. (2024). Exact and approximation algorithms for sparse PCA. INFORMS
    J. Computing.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import optimal_sparse_pca
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 12)) @ rng.standard_normal((12, 12))
    >>> res = optimal_sparse_pca(X, 4)
    >>> res.proven, res.status, int(np.count_nonzero(res.component)) <= 4
    (True, 'optimal', True)
    >>> bool(res.value <= res.upper_bound)
    True
    """
    t0 = time.perf_counter()
    wide = C0 = None
    try:
        if precomputed or isinstance(X, Covariance):
            C0, s, power = _as_matrix(X, bool(precomputed))  # the matrix / s**power
        else:
            data, s = _scaled_data(X)  # X / s, exact: badly scaled data neither underflow nor overflow C
            power = 2
            if data.shape[0] < data.shape[1] and data.shape[1] >= WIDE_MIN_FEATURES:
                wide = data  # through the n x n side: never the p x p covariance
            else:
                C0, _, _ = _as_matrix(data, False)
    except KeyboardInterrupt:
        return _interrupted_at_door(X, k, bool(precomputed) or isinstance(X, Covariance), gap, t0)
    p = C0.shape[0] if wide is None else wide.shape[1]
    k = check_int(k, "k", low=1, high=p)
    kw = _search_settings(nonneg, gap, time_limit, max_nodes, eig_limit, root_em, root_spannogram, verbose)
    duals = {"root_dual": int(root_dual), "root_perspective": int(root_perspective)}
    try:
        res = _solve(C0, wide, k, t0=t0, **duals, **kw)
        return _unscaled(res, s, power)
    except KeyboardInterrupt:  # between the door and the search's own handlers
        return _interrupted_at_door(X, k, bool(precomputed) or isinstance(X, Covariance), gap, t0)


def _interrupted_at_door(X, k, on_matrix: bool, gap: float, t0: float) -> OptimalResult:
    """The result of a Ctrl-C in the door, before the search: the largest variance's unit vector (the
    first of the largest), status "interrupted", and a bound that needs no factorization. The door's
    linear checks run again (an invalid ``X`` is still refused); the semi-definiteness test does not, so
    a given matrix gets a bound that holds for every symmetric matrix, ``x'Mx <= sum |M_ij| |x_i| |x_j|
    <= min(k max |M_ij|, max_i sum_j |M_ij|)`` (``||x||_1^2 <= k``; Gershgorin), and data, whose
    covariance is semi-definite, the sum of the ``k`` largest variances (``lambda_max(C_S) <= tr C_S``)."""
    if on_matrix:
        M, s, power = _as_matrix(X, True, check_psd_too=False)
        A = np.abs(M)
        diag = np.diag(M).copy()
        upper = min(k * float(A.max()), float(A.sum(axis=1).max()))
    else:
        data, s = _scaled_data(X)
        power = 2
        diag = data.var(axis=0, ddof=1)
    p = diag.shape[0]
    k = check_int(k, "k", low=1, high=p)
    if not on_matrix:
        upper = float(np.sum(np.sort(diag)[::-1][:k]))
    return _unscaled(best_feature_result(diag, upper, gap, t0), s, power)


def _search_settings(nonneg, gap, time_limit, max_nodes, eig_limit, root_em, root_spannogram, verbose):
    """The search's keyword arguments from values ``validate_params`` accepted, as plain Python numbers
    (a NumPy bool or integer is one; the kernels are compiled for Python's)."""
    return dict(
        nonneg=bool(nonneg),
        gap=float(gap),
        time_limit=None if time_limit is None else float(time_limit),
        max_nodes=None if max_nodes is None else int(max_nodes),
        eig_limit=int(eig_limit),
        root_em=bool(root_em),
        root_spannogram=bool(root_spannogram),
        verbose=bool(verbose),
    )


@validate_params(_SEARCH_CONSTRAINTS, prefer_skip_nested_validation=True)
def optimal_sparse_pca_wide(
    X,
    k,
    *,
    nonneg: bool = False,
    gap: float = 1e-6,
    time_limit: float | None = None,
    max_nodes: int | None = None,
    eig_limit: int = 40,
    root_em: bool = True,
    root_spannogram: bool = True,
    verbose: bool = False,
    root_dual: int = 0,
    root_perspective: int = 0,
) -> dict[int, OptimalResult]:
    """The certified optimum at every cardinality ``1..k`` of wide data (fewer samples than features),
    never forming the ``p x p`` covariance.

    The route :func:`optimal_sparse_pca` takes for data with ``n < p`` and ``p >= WIDE_MIN_FEATURES``
    (its Notes), which solves the cardinalities ``1..k`` in turn (the search at ``j`` screens with the
    bound proven at ``j - 1``); this function returns every one of them, not only the last, and takes
    any ``n < p``.

    Parameters
    ----------
    X : array_like (n_samples, n_features)
        Data (centred here) with ``2 <= n_samples < n_features``; a covariance matrix or a
        :class:`repro.Covariance` goes to :func:`optimal_sparse_pca`, one ``k`` at a time.
    k : int
        The largest cardinality, ``1 <= k <= n_features``.
    nonneg, root_em, root_spannogram, verbose : bool
        As in :func:`optimal_sparse_pca` (defaults False, True, True, False).
    gap : float, default 1e-6
        Relative tolerance of each cardinality's proof.
    eig_limit, root_dual, root_perspective : int
        As in :func:`optimal_sparse_pca` (defaults 40, 0 and 0); the last two at ``k`` only.
    time_limit : float, optional
        Seconds for the whole chain; past it the cardinalities below ``k`` are skipped and the search at
        ``k`` stops with its certified gap (``status`` "time_limit").
    max_nodes : int, optional
        A limit on the nodes of each cardinality's search (``status`` "node_limit").

    Returns
    -------
    dict of int to OptimalResult
        Cardinality ``j`` -> its result (component, value, certified bound, its own node count; ``time``
        is the seconds since the call began), for ``j = 1..k`` in order. ``k`` is always there; a
        cardinality below it that the time limit skipped, or that Ctrl-C did not reach, is not (the
        result at ``k`` then has status "time_limit" or "interrupted", with its certified gap).

    See Also
    --------
    optimal_sparse_pca : one cardinality, any data or covariance.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import optimal_sparse_pca_wide
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((10, 3)) @ rng.standard_normal((3, 120)) + rng.standard_normal((10, 120))
    >>> levels = optimal_sparse_pca_wide(X, 3)
    >>> sorted(levels), all(np.count_nonzero(r.component) <= j for j, r in levels.items())
    ([1, 2, 3], True)
    >>> all(r.proven for r in levels.values()), bool(levels[1].value <= levels[2].value <= levels[3].value)
    (True, True)
    """
    t0 = time.perf_counter()
    if isinstance(X, Covariance):
        raise ValueError(
            "X is a repro.Covariance; optimal_sparse_pca_wide takes the data rows (n_samples < n_features). "
            "Call optimal_sparse_pca(X, j) at each cardinality j instead."
        )
    data, s = _scaled_data(X)
    n, p = data.shape
    if not n < p:
        raise ValueError(
            f"X of shape {data.shape} has n_samples >= n_features; optimal_sparse_pca_wide is the route of "
            "data with fewer samples than features. Call optimal_sparse_pca(X, j) at each cardinality j."
        )
    k = check_int(k, "k", low=1, high=p)
    kw = _search_settings(nonneg, gap, time_limit, max_nodes, eig_limit, root_em, root_spannogram, verbose)
    levels: dict[int, OptimalResult] = {}
    duals = {"root_dual": int(root_dual), "root_perspective": int(root_perspective)}
    last = solve_wide(data, k, t0=t0, levels=levels, **duals, **kw)
    levels.setdefault(k, last)  # Ctrl-C before the search at k ended: the result for k is the route's
    return {j: _unscaled(r, s, 2) for j, r in levels.items()}


def _solve(C, D, k, *, nonneg, gap, time_limit, max_nodes=None, eig_limit=40, root_em=True,
           root_spannogram=True, verbose=False, t0=None, root_dual=0,
           root_perspective=0) -> OptimalResult:  # fmt: skip
    """The search on a covariance ``C`` or centred wide data ``D`` (the other None) that the library checked
    or derived itself (a deflation): no validation here, so a deflated covariance whose round-off leaves an
    eigenvalue of -1e-16 is solved, not refused as a user's matrix would be."""
    t0 = time.perf_counter() if t0 is None else t0
    kw = dict(nonneg=nonneg, gap=gap, time_limit=time_limit, max_nodes=max_nodes, eig_limit=eig_limit)
    kw["root_dual"], kw["root_perspective"] = root_dual, root_perspective
    if D is not None:
        return solve_wide(
            D, k, root_em=root_em, root_spannogram=root_spannogram, verbose=verbose, t0=t0, **kw
        )
    return search(
        C,
        k,
        em_start=_em_support if root_em else None,
        spannogram=_spannogram_root if root_spannogram else None,
        verbose=verbose,
        t0=t0,
        **kw,
    )


def _total_variance(C, D) -> float:
    """The trace of the covariance ``C``, or of the centred data ``D``'s (up to the factor ``n - 1``)."""
    return float(np.trace(C)) if D is None else float(np.einsum("ij,ij->", D, D))


#: A deflated covariance whose trace is at most this fraction of the first one has no variance left: the
#: rest is round-off (about 1e-16 of the trace), and another component would be noise.
_NO_VARIANCE_LEFT = 1e-10


class OptimalSparsePCA(ProjectionMixin, BaseEstimator):
    """Sparse PCA with certified optimal components: each is :func:`optimal_sparse_pca` of the
    (projection-)deflated covariance.

    Parameters
    ----------
    n_components : int, default 1
        Number of components.
    cardinality : int, sequence of int, or None
        Largest number of non-zeros of each component (one value for all, or one per component); ``None``:
        no sparsity constraint (PCA, certified trivially).
    nonneg : bool, default False
        Non-negative loadings.
    precomputed : bool, default False
        ``fit`` receives a covariance or correlation matrix (then ``transform`` and ``inverse_transform``
        raise: a covariance has no data mean to centre with).
    gap : float, default 1e-6
        Relative tolerance of each proof.
    time_limit : float, optional
        Seconds per component; past it the component keeps its certified gap.

    Attributes
    ----------
    components_ : ndarray (n_components, n_features)
        Unit loadings as rows.
    explained_variance_ : ndarray (n_components,)
        ``w'Cw`` of each on the deflated covariance it was computed from.
    upper_bounds_ : ndarray (n_components,)
        Proven upper bounds on each deflated problem's optimum.
    gaps_ : ndarray (n_components,)
        Certified relative gaps.
    proven_ : ndarray of bool (n_components,)
        Whether each reached ``gap``.
    results_ : list of OptimalResult
        The full result of each component.
    mean_ : ndarray (n_features,)
        Column means (zeros for a precomputed matrix).
    n_features_in_ : int
        Number of features seen by ``fit``.

    See Also
    --------
    optimal_sparse_pca

    Examples
    --------
    >>> import numpy as np
    >>> from repro import OptimalSparsePCA
    >>> rng = np.random.default_rng(1)
    >>> X = rng.standard_normal((100, 8)) @ rng.standard_normal((8, 8))
    >>> est = OptimalSparsePCA(n_components=2, cardinality=3).fit(X)
    >>> est.components_.shape, bool(est.proven_.all())
    ((2, 8), True)
    >>> est.transform(X).shape
    (100, 2)
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "cardinality": [None, POSITIVE_INT, "array-like"],
        "nonneg": ["boolean"],
        "precomputed": ["boolean"],
        "gap": [RealInterval(0, 1, closed="left")],
        "time_limit": [None, RealInterval(0, None, closed="neither")],
    }

    def __init__(
        self, n_components=1, *, cardinality=None, nonneg=False, precomputed=False, gap=1e-6, time_limit=None
    ):
        self.n_components = n_components
        self.cardinality = cardinality
        self.nonneg = nonneg
        self.precomputed = precomputed
        self.gap = gap
        self.time_limit = time_limit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the components.

        Parameters
        ----------
        X : array_like (n_samples, n_features), Covariance, or a matrix with ``precomputed=True``
            The data.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self : OptimalSparsePCA
        """
        if not isinstance(X, Covariance):
            check_features(self, X)  # n_features_in_, and feature_names_in_ from a DataFrame
        D = C = None  # D: wide data (n < p, p >= WIDE_MIN_FEATURES), deflated as data, never the p x p C
        self._on_matrix = isinstance(X, Covariance) or self.precomputed
        if self._on_matrix:
            C, s, power = _as_matrix(X, True)  # the matrix / s**power: values scale as s**power
            self.mean_ = np.zeros(C.shape[0])
            p = C.shape[0]
        else:
            X, s = _scaled_data(X)  # X / s: variances scale as s^2, components unchanged
            self.mean_ = X.mean(axis=0) * s
            p, power = X.shape[1], 2
            if X.shape[0] < p and p >= WIDE_MIN_FEATURES:
                D = X - X.mean(axis=0)
            else:
                C, _, _ = _as_matrix(X, False)
        n = check_int(self.n_components, "n_components", low=1, high=p)
        ks = check_cardinality(p if self.cardinality is None else self.cardinality, p, n)
        total = _total_variance(C, D)
        comps, results = [], []
        for i in range(n):
            left = _total_variance(C, D)
            if i and not left > _NO_VARIANCE_LEFT * total:
                raise ValueError(
                    f"n_components={n} is more than these data have: after {i} component(s) the deflated "
                    f"covariance has no variance left (its trace is {left / total:.1e} of the first, "
                    f"round-off), so only {i} component(s) exist; pass n_components={i}."
                )
            # the library's own matrices (checked above, or deflated from them): solved without re-checking
            res = _solve(C, D, int(ks[i]), nonneg=self.nonneg, gap=self.gap, time_limit=self.time_limit)
            results.append(_unscaled(res, s, power))
            comps.append(res.component)
            if i + 1 < n and D is None:
                C = _projection_deflate(C, res.component)
                C = 0.5 * (C + C.T)
            elif i + 1 < n:  # (I - ww') C (I - ww') is the covariance of D (I - ww')
                w = res.component
                D = D - np.outer(D @ w, w)
        self.components_ = np.array(comps)
        self.results_ = results
        self.explained_variance_ = np.array([r.value for r in results])
        self.upper_bounds_ = np.array([r.upper_bound for r in results])
        self.gaps_ = np.array([r.gap for r in results])
        self.proven_ = np.array([r.proven for r in results])
        self.n_features_in_ = p
        return self

    def _check_data_mean(self):
        """``transform`` and ``inverse_transform`` need the data's mean, which a covariance does not have."""
        if getattr(self, "_on_matrix", False):
            raise ValueError(
                "This OptimalSparsePCA was fitted on a covariance (precomputed=True or a Covariance), which "
                "carries no data mean to centre X with, so transform and inverse_transform are not "
                "available. Project centred data yourself, (X - X.mean(axis=0)) @ est.components_.T, or fit "
                "on the data rows (precomputed=False)."
            )
