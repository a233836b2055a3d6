"""The searches over NSPCA's penalties: ``beta`` for a target cardinality by bracketing and bisection (as
Sigg & Buhmann 2008, Sec. 5.2, ran NSPCA) and ``alpha`` for a smallest angle between the components."""

from __future__ import annotations

import numpy as np
from sklearn.utils._param_validation import validate_params

from .._base import NONNEG_REAL, POSITIVE_INT, POSITIVE_REAL, RANDOM_STATE, RealInterval
from .._validation import (
    check_bool,
    check_int,
    check_n_components,
    check_random_state,
    check_real,
)
from ..metrics import min_angle_deg as _min_angle_deg
from .algorithm import (
    _MAX_DOUBLINGS,
    CardinalityNotReached,
    NSPCACardinalityResult,
    NSPCAMinAngleResult,
    _check_params,
    _fit_scatter,
    _initial_U,
    _scatter,
)

__all__ = ["nspca_for_cardinality", "nspca_for_min_angle"]


# --------------------------------------------------------------------------- searches over beta and alpha
def _ranked(U: np.ndarray, A: np.ndarray, scale: float):
    """Unit-norm columns of ``U`` as rows, their unscaled variances ``w'Aw``, and the variance order.

    Each column is divided by its own (1-D) norm; a zero column stays a zero row.
    """
    W = np.array(U.T, dtype=np.float64)
    for j in range(W.shape[0]):
        norm = np.linalg.norm(U[:, j])
        if norm > 0:
            W[j] = U[:, j] / norm
    var = np.array([float(w @ A @ w) for w in W])
    order = np.argsort(-var, kind="stable")
    return W[order], np.ascontiguousarray(U[:, order]), var[order] * scale


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "target": [POSITIVE_INT],
        "alpha": [POSITIVE_REAL],
        "n_components": [POSITIVE_INT],
        "n_restarts": [POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "rtol": [POSITIVE_REAL],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "exact": ["boolean"],
        "score": [None, callable],
        "beta_start": [POSITIVE_REAL],
        "precomputed": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def nspca_for_cardinality(
    X,
    target: int,
    *,
    alpha: float,
    n_components: int = 1,
    n_restarts: int = 10,
    random_state=None,
    rtol: float = 1e-5,
    max_iter: int = 1000,
    tol: float = 1e-8,
    exact: bool = True,
    score=None,
    beta_start: float = 1.0,
    precomputed: bool = False,
) -> NSPCACardinalityResult:
    """NSPCA with exactly ``target`` non-zeros in ``U`` (all components together), by bisection on beta.

    As Sigg & Buhmann (2008, Sec. 5.2) ran NSPCA: for each of ``n_restarts`` random starts, beta is
    bracketed (``beta = 0`` is the densest; from ``beta_start`` times the gradient scale ``max |A U_0|`` of
    the ``beta = 0`` solution ``U_0``, beta is doubled until the cardinality falls below ``target``, at most
    200 times) and bisected until the cardinality equals ``target`` or the bracket's relative length is
    below ``rtol`` (1e-5 in their paper). Each fit is warm-started from the solution at the denser end of
    the bracket. With ``n_components > 1`` the target is the joint cardinality ``||U||_0`` (Sigg & Buhmann,
    Fig. 3 middle: ten components, 200 non-zeros).

    Every fit of the search is a candidate; the one kept has the cardinality nearest to ``target`` and,
    among those, the largest ``score`` (default: the summed variance ``sum_j w_j' C w_j`` of its unit-norm
    columns; for one component the variance). The cardinality of NSPCA jumps with beta, so ``target``
    may be unreachable at a given alpha: then ``exact=True`` raises :class:`CardinalityNotReached` and
    ``exact=False`` returns the nearest fit with ``exact=False`` in the result.

    Round-off: the method is sensitive here. Where ``target`` is unreachable the bisection
    closes on a jump of the cardinality in beta, and the cardinalities of its last fits either side
    (``CardinalityNotReached.below`` / ``above``) are those of fits a relative ``rtol`` from the jump,
    each the end of up to ``max_iter`` coordinate-ascent sweeps whose summation order (the BLAS kernel,
    the per-block ``AU`` update) moves them: they are counts decided near round-off, and compare between
    machines only loosely (asteris2014_fig4 on two environments: only these diagnostics of cardinalities
    NSPCA misses moved, never whether a target was reached). A single coordinate's choice between 0 and
    a local maximum of equal value is a tie with a stated rule (:func:`repro.nspca._kernels.nspca_argmax`).

    Parameters
    ----------
    X : array_like or scipy sparse matrix (n_samples, n_features), or (d, d) with ``precomputed=True``
        Data (rows are samples, centred here; a sparse ``X`` never densified, as in
        :meth:`repro.NSPCA.fit`), or the scatter matrix ``A`` itself.
    target : int
        Wanted number of non-zero entries of ``U``, ``1..n_features * n_components``.
    alpha : float > 0
        Orthonormality penalty of Eq. 3 (for one component: a unit-norm penalty); it decides which
        cardinalities are reachable.
    n_components : int
        k, the number of principal vectors fitted jointly, ``1..n_features``.
    n_restarts : int
        Random starts (Sigg & Buhmann used ten).
    random_state : None, int or numpy Generator
        Seed of the random starts.
    rtol : float > 0
        Relative length of the beta bracket at which the bisection gives up.
    max_iter, tol : int, float
        As in :func:`nspca`.
    exact : bool
        Whether a search that does not reach ``target`` raises (True) or returns the nearest fit (False).
    score : callable or None
        ``score(U) -> float`` on the raw ``U`` (n_features, n_components), larger is better; it chooses
        among fits of the same cardinality (e.g. an adjusted variance for several components).
    beta_start : float > 0
        First positive beta tried, relative to the gradient scale ``max |A U_0|``.
    precomputed : bool
        Whether ``X`` is the scatter matrix ``A``.

    Returns
    -------
    NSPCACardinalityResult
        ``components`` (k, d) ranked by variance, ``U``, ``beta``, ``variance``, ``cardinality``,
        ``exact``, ... (``component`` and ``u`` for one component).

    Raises
    ------
    CardinalityNotReached
        With ``exact=True``, when no fit reaches exactly ``target``; carries the nearest cardinalities
        found and the nearest fit (``closest``).
    ValueError
        Bad input (target outside ``1..d k``, alpha <= 0, rtol <= 0, ...).

    See Also
    --------
    nspca, CardinalityNotReached, repro.EMSparsePCA

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006.
    C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
    Sec. 5.2.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import nspca_for_cardinality
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8)) + np.linspace(0, 2, 8) * rng.standard_normal((60, 1))
    >>> res = nspca_for_cardinality(X, 2, alpha=1e3, random_state=0)
    >>> res.cardinality, res.exact, np.flatnonzero(res.component).tolist()
    (2, True, [6, 7])
    """
    A, _, n = _scatter(X, precomputed)
    d = A.shape[0]
    k = check_n_components(n_components, n, d)
    target = check_int(target, "target", low=1, high=d * k)
    alpha, _, max_iter, tol = _check_params(alpha, 0.0, max_iter, tol)
    n_restarts = check_int(n_restarts, "n_restarts", low=1)
    rtol = check_real(rtol, "rtol", low=0.0, low_inclusive=False)
    beta_start = check_real(beta_start, "beta_start", low=0.0, low_inclusive=False)
    exact = check_bool(exact, "exact")
    if score is not None and not callable(score):
        raise ValueError(f"score must be None or a callable score(U) -> float; got {score!r}.")
    rng = check_random_state(random_state)
    scale = 1.0 if n is None else 1.0 / (n - 1)

    seen: list[tuple[float, int]] = []
    best = None  # (key, U, beta, n_iter), key = (|cardinality - target|, -score)

    def fit(beta, init):
        nonlocal best
        res = _fit_scatter(A, k, alpha, beta, max_iter, tol, init, rng, warn=False)
        c = int(np.count_nonzero(res.U))
        seen.append((float(beta), c))
        s = float(score(res.U)) if score is not None else float(_ranked(res.U, A, 1.0)[2].sum())
        key = (abs(c - target), -s)
        if best is None or key < best[0]:
            best = (key, res.U.copy(), float(beta), int(res.n_iter))
        return res.U, c

    for _ in range(n_restarts):
        U_lo, c_lo = fit(0.0, _initial_U("random", d, k, rng))
        if c_lo <= target:  # beta = 0 is the densest: reached, or unreachable from this start
            continue
        lo = 0.0
        hi = max(beta_start * float(np.max(np.abs(A @ U_lo))), 1e-300)
        U_hi, c_hi = fit(hi, U_lo)
        doublings = 0
        while c_hi > target and doublings < _MAX_DOUBLINGS:
            lo, U_lo = hi, U_hi
            hi *= 2.0
            U_hi, c_hi = fit(hi, U_lo)
            doublings += 1
        while c_hi < target and (hi - lo) > rtol * hi:
            mid = 0.5 * (lo + hi)
            U_mid, c_mid = fit(mid, U_lo)
            if c_mid == target:
                break
            if c_mid > target:
                lo, U_lo = mid, U_mid
            else:
                hi, c_hi = mid, c_mid

    _, U, beta, n_iter = best
    W, U, var = _ranked(U, A, scale)
    c = int(np.count_nonzero(U))
    result = NSPCACardinalityResult(
        W, U, beta, float(var.sum()), c, len(seen), var, target, c == target, n_iter
    )
    if exact and c != target:
        cards = np.array([c for _, c in seen])
        below = int(cards[cards < target].max()) if (cards < target).any() else None
        above = int(cards[cards > target].min()) if (cards > target).any() else None
        raise CardinalityNotReached(target, below, above, seen, alpha, rtol, n_components=k, closest=result)
    return result


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_components": [POSITIVE_INT],
        "min_angle_deg": [RealInterval(0, 90, closed="right")],
        "beta": [NONNEG_REAL],
        "log10_alpha_range": ["array-like"],
        "ratio": [RealInterval(1, None, closed="neither")],
        "random_state": RANDOM_STATE,
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "strict": ["boolean"],
        "precomputed": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def nspca_for_min_angle(
    X,
    n_components: int,
    min_angle_deg: float,
    *,
    beta: float = 0.0,
    log10_alpha_range=(3.0, 10.0),
    ratio: float = 1.25,
    random_state=None,
    max_iter: int = 3000,
    tol: float = 1e-8,
    strict: bool = True,
    precomputed: bool = False,
) -> NSPCAMinAngleResult:
    """NSPCA with the smallest ``alpha`` whose components are at least ``min_angle_deg`` degrees apart.

    ``alpha`` trades variance for orthogonality (Zass & Shashua 2006, Sec. 2); Sigg & Buhmann (2008,
    Sec. 5.2, Fig. 3 right) compare quasi-orthogonal components at a minimum angle. The search tries the
    decades ``alpha = 10^e`` for ``e`` from ``log10_alpha_range[0]`` in steps of 1 up to
    ``log10_alpha_range[1]``, stopping at the first that meets the angle, then bisects in ``log(alpha)``
    (geometric means) between it and the decade below until the bracket's ratio is at most ``ratio``.
    Every fit starts from the same random ``U`` (drawn once from ``random_state``), so the angle varies
    with ``alpha`` only. The returned alpha is the smallest alpha of the search that meets the angle, and
    every alpha tried below it does not; if the lowest decade already meets it, that decade is returned
    (widen the range downwards to search further).

    Parameters
    ----------
    X : array_like or scipy sparse matrix (n_samples, n_features), or (d, d) with ``precomputed=True``
        Data (rows are samples, centred here; a sparse ``X`` never densified, as in
        :meth:`repro.NSPCA.fit`), or the scatter matrix ``A`` itself.
    n_components : int
        k, ``2..n_features``.
    min_angle_deg : float
        Wanted smallest angle between two components, in ``(0, 90]`` degrees.
    beta : float >= 0
        Sparsity penalty, fixed during the search (0 in Sigg & Buhmann's Fig. 3 right).
    log10_alpha_range : (float, float)
        Lowest and highest decade exponent of the search.
    ratio : float > 1
        Bisection stops when the bracket ``hi / lo`` is at most this.
    random_state : None, int or numpy Generator
        Seed of the one random start shared by every fit.
    max_iter, tol : int, float
        As in :func:`nspca`.
    strict : bool
        Whether a search whose largest alpha misses the angle raises (True) or returns that fit with
        ``reached=False`` (False).
    precomputed : bool
        Whether ``X`` is the scatter matrix ``A``.

    Returns
    -------
    NSPCAMinAngleResult
        ``components`` (k, d) ranked by variance, ``U``, ``alpha``, ``angle``, ``reached``, ``path``, ...

    Raises
    ------
    ValueError
        Bad input, or (``strict=True``) no alpha of the range meets the angle.

    See Also
    --------
    nspca, repro.metrics.min_angle_deg

    References
    ----------
    R. Zass and A. Shashua. Nonnegative sparse PCA. NIPS 19, 2006, Sec. 2.
    C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008,
    Sec. 5.2.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import nspca_for_min_angle
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60, 8)) + np.linspace(0, 2, 8) * rng.standard_normal((60, 1))
    >>> res = nspca_for_min_angle(X, 2, 80.0, random_state=0)
    >>> res.reached, bool(res.angle >= 80.0), res.components.shape
    (True, True, (2, 8))
    """
    A, _, n = _scatter(X, precomputed)
    d = A.shape[0]
    if d < 2:
        raise ValueError("X must have at least 2 features for an angle between components.")
    k = check_n_components(n_components, n, d)
    if k < 2:
        raise ValueError(f"n_components must be at least 2 for an angle between components; got {k}.")
    min_angle = check_real(min_angle_deg, "min_angle_deg", low=0.0, high=90.0, low_inclusive=False)
    _, beta, max_iter, tol = _check_params(1.0, beta, max_iter, tol)
    try:
        e_lo, e_hi = log10_alpha_range
    except (TypeError, ValueError):
        raise ValueError(
            f"log10_alpha_range must be a pair (low, high) of decade exponents; got {log10_alpha_range!r}."
        ) from None
    e_lo = check_real(e_lo, "log10_alpha_range[0]", low=-300.0, high=300.0)
    e_hi = check_real(e_hi, "log10_alpha_range[1]", low=e_lo, high=300.0)
    ratio = check_real(ratio, "ratio", low=1.0, low_inclusive=False)
    strict = check_bool(strict, "strict")
    rng = check_random_state(random_state)
    scale = 1.0 if n is None else 1.0 / (n - 1)
    seed = int(rng.integers(2**31 - 1))
    U0 = _initial_U("random", d, k, np.random.default_rng(seed))
    path: list[tuple[float, float]] = []

    def run(alpha):
        res = _fit_scatter(A, k, float(alpha), beta, max_iter, tol, U0, rng, warn=False)
        ang = _min_angle_deg(res.U.T)
        path.append((float(alpha), ang))
        return res, ang

    def result(res, alpha, ang, reached):
        W, U, var = _ranked(res.U, A, scale)
        return NSPCAMinAngleResult(
            W, U, float(alpha), float(ang), reached, var, len(path), int(res.n_iter), np.array(path)
        )

    lo, hi = None, None
    for e in np.arange(e_lo, e_hi + 0.5):
        alpha = 10.0**e
        res, ang = run(alpha)
        if ang >= min_angle:
            hi, hi_res, hi_ang = alpha, res, ang
            break
        lo = alpha
    if hi is None:
        if strict:
            raise ValueError(
                f"NSPCA components are at most {max(a for _, a in path):.3g} degrees apart for alpha up to "
                f"{path[-1][0]:g}, short of min_angle_deg={min_angle:g}; raise log10_alpha_range[1] "
                "(or lower beta)."
            )
        return result(res, alpha, ang, False)
    while lo is not None and hi / lo > ratio:
        mid = float(np.sqrt(lo * hi))
        res, ang = run(mid)
        if ang >= min_angle:
            hi, hi_res, hi_ang = mid, res, ang
        else:
            lo = mid
    return result(hi_res, hi, hi_ang, True)
