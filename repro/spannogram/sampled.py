"""Algorithm 3 of Asteris, Papailiopoulos & Dimakis (2014), every cardinality in one pass, and the
data-dependent upper bound of the shaded areas of Figs. 4-6.

The upper bound (derived here; the paper's supplement is not available)
------------------------------------------------------------------------
Write ``A = A_d + R`` with ``R`` PSD, ``||R|| = lambda_{d+1}``. For the optimum ``x*``,
``OPT = x*'A_d x* + x*'R x* <= OPT_d + r_k`` with ``r_k = min(lambda_{d+1}, sum of the k largest diagonal
entries of R)`` (for ``|I| <= k``, ``x'Rx <= lambda_max(R_II) <= tr(R_II)``). ``OPT_d = max_c f_k(c)`` with
``f_k(c)`` the rank-1 value (Eq. 13). If ``x_d`` attains ``OPT_d`` and ``c_d = V'x_d / ||V'x_d||``, every
``c`` gives ``f_k(c) >= (c'V'x_d)^2 = OPT_d (c'c_d)^2``, so ``OPT_d <= max_i f_k(c_i) / cos^2(theta)`` where
``theta`` is the angle from ``+-c_d`` to the nearest sample. Hence::

    OPT <= min( lambda_1,  sum_{top k} A_ii,  max_i f_k(c_i) / cos^2(theta) + r_k ).

* ``net="exact"`` (rank 2, the sweep): ``theta = 0`` -- rigorous.
* ``net="grid"``: the samples are a grid on the faces ``c_j = 1`` of the cube ``[-1, 1]^d`` (``f_k(c) =
  f_k(-c)``, so half the cube suffices), spacing ``h``: every direction lies within ``sin(theta) <= delta =
  h sqrt(d - 1) / 2`` of a grid point -- rigorous (a deterministic net).
* ``net="random"`` (the paper's Algorithm 3): for the fixed unknown ``c_d`` and ``N`` independent uniform
  samples, ``P(theta > t) = (1 - I_{sin^2 t}((d-1)/2, 1/2))^N`` (two antipodal caps); ``theta`` is set so this
  is ``failure_probability`` (default ``1/n``, as in Theorem 2) -- the bound holds for each ``k`` with
  probability at least ``1 - failure_probability`` over the samples.

Every bound is rounded upward by ``8 (n + m) eps`` (of itself and of ``lambda_1``; ``m`` the rows of the
data) for the rounding of the float64 eigenpairs and sums, so a bound that is tight in exact arithmetic
(``rank(A) <= d``, the rank-2 sweep) stays above the optimum in floating point. The random net's bound
remains a probabilistic one: it can fall below the optimum with probability ``failure_probability``
(measured: 2 of 80 fits at ``p = 1/12`` on rank-3 data with 12 features, by up to 3e-4 relative);
``net="grid"`` or ``"exact"`` for a certificate.

Because the bound does not depend on which method produced ``x``, ``x'Ax / bound`` certifies any method's
output (:func:`repro.metrics.certified_fraction`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.special
from sklearn.utils._param_validation import StrOptions, validate_params

from .. import _shortcuts
from .._base import POSITIVE_INT, RANDOM_STATE, RealInterval
from .._threads import blas_limited
from .._validation import (
    check_bool,
    check_cardinalities,
    check_int,
    check_random_state,
)
from ..em_sparse_pca import CardinalityPath
from ..linalg import Covariance
from ._common import (
    _MAX_PATH_ENTRIES,
    _NETS,
    _check_fp,
    _check_net,
    _check_rank,
    _low_rank,
    _LowRank,
    _scaled_cov,
)
from ._kernels import _allk_pass_full, allk_pass, sorted_side
from .exact import _exact2, _x_at

__all__ = ["SpannogramPath", "all_k_pass", "spannogram_bound", "spannogram_path"]

#: The constraints ``spannogram_path`` and ``spannogram_bound`` share (scikit-learn's parameter validation).
_PASS_CONSTRAINTS = {
    "rank": [POSITIVE_INT],
    "n_samples": [POSITIVE_INT],
    "nonneg": ["boolean"],
    "random_state": RANDOM_STATE,
    "net": [StrOptions(set(_NETS))],
    "failure_probability": [None, RealInterval(0, 1, closed="neither")],
}


# --------------------------------------------------------------------------- nets (Algorithm 3)
def _grid_net(d: int, n_samples: int) -> tuple[np.ndarray, float]:
    """Points on the faces ``c_j = 1`` of ``[-1, 1]^d`` (normalized) and ``delta >= sin(theta)``.

    Any unit ``u`` (up to sign) scaled to the cube, ``p = u / ||u||_inf``, lies on a face ``p_j = 1`` within
    ``delta`` (the half-diagonal of a grid cell) of a grid point ``g``; as ``||p||, ||g|| >= 1``, the angle
    between them has ``sin <= ||p - g|| / ||g|| <= delta``.
    """
    if d == 1:
        return np.ones((1, 1)), 0.0
    per_face = max(n_samples // d, 1)
    m = max(int(np.floor(per_face ** (1.0 / (d - 1)) + 1e-9)), 2)
    g = np.linspace(-1.0, 1.0, m)
    h = g[1] - g[0]
    grids = np.stack(np.meshgrid(*([g] * (d - 1)), indexing="ij"), axis=-1).reshape(-1, d - 1)
    pts = []
    for j in range(d):
        P = np.empty((grids.shape[0], d))
        P[:, j] = 1.0
        P[:, [i for i in range(d) if i != j]] = grids
        pts.append(P)
    C = np.vstack(pts)
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    return np.ascontiguousarray(C), h * np.sqrt(d - 1) / 2.0


def _random_net(d: int, n_samples: int, rng) -> np.ndarray:
    C = rng.standard_normal((n_samples, d))  # Alg. 3, line 5
    nrm = np.linalg.norm(C, axis=1, keepdims=True)
    nrm[nrm == 0] = 1.0
    return np.ascontiguousarray(C / nrm)  # line 6


def _cos2_random(d: int, n_samples: int, failure_probability: float) -> float:
    """``cos^2 theta`` with ``P(no sample within theta of +-c_d) = failure_probability``."""
    if d == 1:
        return 1.0
    # two antipodal caps of angle t cover the fraction I_{sin^2 t}((d-1)/2, 1/2) of the sphere
    frac = -math.expm1(math.log(failure_probability) / n_samples)  # 1 - p^(1/N)
    s2 = float(scipy.special.betaincinv((d - 1) / 2.0, 0.5, min(frac, 1.0)))
    return max(1.0 - s2, 0.0)


# --------------------------------------------------------------------------- the all-k pass
@dataclass
class _Pass:
    ks: np.ndarray  # 1..kmax
    val: np.ndarray  # best ||V'x_k||^2 (on A_d)
    f: np.ndarray  # best rank-1 value max_i f_k(c_i)
    sample: np.ndarray
    sign: np.ndarray
    C: np.ndarray
    cos2: float  # net factor of the bound


def _run_pass(V, kmax, nonneg, net, n_samples, rng, failure_probability) -> _Pass:
    n, d = V.shape
    if net == "grid":
        C, delta = _grid_net(d, n_samples)
        cos2 = 1.0 - delta * delta
    else:
        C = _random_net(d, n_samples, rng)
        p = 1.0 / n if failure_probability is None else failure_probability
        cos2 = _cos2_random(d, C.shape[0], p)
    val, f, sample, sign = _all_k(V, C, kmax, nonneg)
    return _Pass(np.arange(1, kmax + 1), val, f, sample, sign, C, cos2)


def _all_k(V, C, kmax, nonneg):
    """The kernel :func:`repro.spannogram._kernels.allk_pass` on the samples ``C``, outputs allocated."""
    val = np.full(kmax, -np.inf)
    f = np.zeros(kmax)
    sample = np.zeros(kmax, dtype=np.int64)
    sign = np.ones(kmax, dtype=np.int64)
    if _shortcuts.enabled:  # the pruned or bounded pass where it applies: exact shortcuts, the same result
        allk_pass(V, C, kmax, nonneg, val, f, sample, sign)
    else:  # every side of every sample sorted and scored to kmax
        _allk_pass_full(V, C, kmax, nonneg, val, f, sample, sign, False)
    return val, f, sample, sign


@validate_params(
    {"V": ["array-like"], "C": ["array-like"], "kmax": [POSITIVE_INT], "nonneg": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def all_k_pass(V, C, kmax, *, nonneg=True):
    """Algorithm 3 on given samples, every ``k = 1..kmax`` in one pass: one step of :func:`spannogram_path`.

    Public so that a benchmark can time the pass on its own; it trusts its input (the kernel
    :func:`repro.spannogram._kernels.allk_pass`: ``V`` and ``C`` C-contiguous float64, ``kmax <= n``).

    Parameters
    ----------
    V : ndarray, shape (n, d)
        ``A_d = V V'`` (:func:`spannogram_path` takes it from the ``d`` leading eigenpairs).
    C : ndarray, shape (n_samples, d)
        The samples ``c``, unit rows (Algorithm 3, lines 5-6).
    kmax : int, 1..n
        The largest cardinality.
    nonneg : bool, default True
        Non-negative or signed supports.

    Returns
    -------
    value : ndarray, shape (kmax,)
        The best ``||V'x_k||^2`` over the samples for each ``k`` (``-inf`` where no sample has a candidate).
    rank1 : ndarray, shape (kmax,)
        The best rank-1 value ``max_i f_k(c_i)`` (what the bound uses).
    sample, sign : ndarray of int, shape (kmax,)
        The sample and side attaining each best value.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.spannogram import all_k_pass
    >>> V = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> value, *_ = all_k_pass(V, np.array([[1.0, 0.0], [0.0, 1.0]]), 1)
    >>> value.tolist()  # the largest ||V_i||^2 a sample reaches: row 0, from c = (1, 0)
    [4.0]
    """
    return _all_k(V, C, int(kmax), bool(nonneg))


def _x_from_pass(V, c, k, nonneg, sign):
    """Rebuild the candidate of :func:`allk_pass` for sample ``c``, side ``sign`` and cardinality ``k``."""
    a = V @ c
    n = a.size
    order = np.empty(n, dtype=np.int64)
    p = sorted_side(a, nonneg, float(sign), k, order, np.empty(n), np.empty(n), np.empty(n, dtype=np.int64))
    idx = order[:p]
    x = np.zeros(n)
    if idx.size == 0:
        return x
    y = a[idx] if not nonneg else sign * a[idx]
    x[idx] = y / np.linalg.norm(y)
    return x


def _bound(lr: _LowRank, opt_d_upper: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The upper bound for each ``k`` in ``ks`` (see the module docstring) and its spectral-only form."""
    lam1 = float(lr.values[0]) if lr.values.size else 0.0
    top_diag = np.cumsum(np.sort(lr.diag)[::-1])[ks - 1]
    top_res = np.cumsum(np.sort(lr.resid_diag)[::-1])[ks - 1]
    spectral = opt_d_upper + lr.lam_next  # Theorem 1's route: OPT <= OPT_d + lambda_{d+1}
    full = np.minimum.reduce(
        [np.full(ks.size, lam1), top_diag, opt_d_upper + np.minimum(lr.lam_next, top_res)]
    )
    # Rounded upward: every term is computed in float64 (eigenvalues and V to about m eps lambda_1,
    # sums of squares to about m eps of themselves, for m the larger side of the data), so a bound that
    # is tight in exact arithmetic (rank(A) <= d, a rank-2 sweep) can fall an ulp or more below the
    # optimum. The margin, 8 (n + m) eps of the bound plus of lambda_1, covers that with room: about 1e-11
    # relative for 12582 features.
    n, m = lr.V.shape[0], max(lr.n_rows, lr.V.shape[0])
    tau = 8.0 * (n + m) * np.finfo(np.float64).eps
    return full * (1.0 + tau) + tau * lam1, np.minimum(spectral, lam1) * (1.0 + tau) + tau * lam1


# --------------------------------------------------------------------------- path
@dataclass
class SpannogramPath(CardinalityPath):
    """A :class:`repro.em_sparse_pca.CardinalityPath` with the spannogram's certificate.

    Extra attributes
    ----------------
    upper_bound : ndarray (n_k,)
        Upper bound on the unknown optimum ``OPT_k`` (module docstring); rigorous for ``net`` "grid" and
        "exact", with probability ``1 - failure_probability`` per ``k`` for "random".
    upper_bound_spectral : ndarray (n_k,)
        The bound with ``lambda_{d+1}`` alone for the residual (the route of Theorem 1's proof).
    n_nonzero : ndarray of int (n_k,)
        Non-zeros of each component: fewer than ``k`` when ``Vc`` has fewer positive entries.
    rank, n_samples : int
    net : str
    """

    upper_bound: np.ndarray = field(default=None)
    upper_bound_spectral: np.ndarray = field(default=None)
    n_nonzero: np.ndarray = field(default=None)
    rank: int = 0
    n_samples: int = 0
    net: str = "random"

    def to_frame(self):
        df = super().to_frame()
        df["n_nonzero"] = self.n_nonzero
        df["upper_bound"] = self.upper_bound
        df["upper_bound_spectral"] = self.upper_bound_spectral
        df["certified_fraction"] = self.variance / self.upper_bound
        return df


@validate_params(
    {
        "X": ["array-like", "sparse matrix", Covariance],
        "cardinalities": [POSITIVE_INT, "array-like"],
        **_PASS_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@blas_limited
def spannogram_path(
    X,
    cardinalities,
    *,
    rank: int = 3,
    n_samples: int = 10000,
    nonneg: bool = True,
    random_state=None,
    net: str = "random",
    failure_probability: float | None = None,
) -> SpannogramPath:
    """Algorithm 3 for every cardinality in one pass, with the data-dependent upper bound.

    ``V`` comes from the ``rank + 1`` leading eigenpairs of the covariance (:class:`repro.linalg.Covariance`,
    through the Gram matrix when ``n_samples < n_features``: the ``n x n`` matrix is never formed). Each
    sample ``c`` is sorted once and every ``k = 1..max(cardinalities)`` is scored from prefix sums
    (:func:`repro.spannogram._kernels.allk_pass`), so the curve costs what the largest ``k`` alone costs
    (which grows with that ``k``: on the 12582 leukemia genes, every ``k`` up to 12582 took about 14x the
    CPU time of ``k = 50``, see :mod:`experiments.bench_spannogram`). Each ``k`` gets exactly the vector
    Algorithm 3 run for that ``k`` alone on the same samples returns.

    Parameters
    ----------
    X : array or scipy sparse matrix (n_samples, n_features), or Covariance
        Data (centred here; a sparse matrix through :meth:`repro.Covariance.from_data`, never densified)
        or a covariance (``Covariance.from_matrix`` for a given PSD matrix).
    cardinalities : int or sequence of int, each in 1..n_features
        The cardinalities ``k`` to return a component for.
    rank : int, default 3
        ``d``, the rank of the approximation ``A_d``.
    n_samples : int >= 1
        Samples ``c`` (``O(eps^-d log n)`` in Theorem 2; 1e4 for ``d = 3``, ``eps = 0.1``, as the authors).
        With ``net="grid"`` the largest cube-face grid with at most this many points.
    nonneg : bool, default True
        Non-negative components; ``False``: signed sparse PCA.
    random_state : None, int or Generator
        Seed of the samples (``net="random"``).
    net : {"random", "grid", "exact"}
        "random": the paper's Gaussian samples. "grid": a deterministic net (rigorous bound). "exact": the
        exact rank-2 sweep (``rank`` must be 2).
    failure_probability : float or None
        For ``net="random"``: the bound fails with at most this probability (default ``1/n``).

    Returns
    -------
    SpannogramPath
        One unit vector per requested cardinality (so ask for a grid when ``n`` is large: 12582 genes x all
        12582 cardinalities would be 1.3 GB; more than 5e7 stored entries are refused).

    See Also
    --------
    SpannogramPCA : several components, one after another.
    spannogram_bound : the upper bound alone.
    repro.metrics.certified_fraction : the certificate for another method's components.

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Algorithm 3, Theorem 2 and Figures 4-6.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import spannogram_path
    >>> path = spannogram_path(X, [2, 4], n_samples=2000, random_state=0)
    >>> path.n_nonzero.tolist(), bool((path.components >= 0).all())
    ([2, 4], True)
    >>> bool(np.all(path.variance <= path.upper_bound))  # the optimum lies between the two
    True
    """
    t0 = time.perf_counter()
    sc = _scaled_cov(X, method="spannogram_path")
    cov = sc.cov
    d = _check_rank(rank, cov)
    ks = check_cardinalities(cardinalities, cov.n_features)
    S = check_int(n_samples, "n_samples", low=1)
    net = _check_net(net)
    fp = _check_fp(failure_probability)
    if net == "exact" and d != 2:
        raise ValueError(f"net='exact' is the rank-2 sweep; got rank={d}. Use rank=2 or net='grid'.")
    rng = check_random_state(random_state)
    nonneg = check_bool(nonneg, "nonneg")
    if ks.size * cov.n_features > _MAX_PATH_ENTRIES:
        raise ValueError(
            f"cardinalities asks for {ks.size} components of {cov.n_features} features "
            f"({8 * ks.size * cov.n_features / 1e9:.1f} GB); pass fewer cardinalities (a grid: the pass "
            "still scores every k up to the largest) or use spannogram_bound for the bound of every k."
        )
    lr = _low_rank(cov, d)
    kmax = int(ks.max())
    init_time = time.perf_counter() - t0
    t1 = time.perf_counter()
    n = cov.n_features
    comps = np.zeros((ks.size, n))
    if net == "exact":
        val, phi = _exact2(lr.V, kmax, nonneg)
        opt_upper = val[ks - 1]
        for j, k in enumerate(ks):
            comps[j] = _x_at(lr.V, np.array([np.sin(phi[k - 1]), np.cos(phi[k - 1])]), int(k), nonneg)
        S_used = 0
    else:
        ps = _run_pass(lr.V, kmax, nonneg, net, S, rng, fp)
        opt_upper = ps.f[ks - 1] / ps.cos2
        for j, k in enumerate(ks):
            if np.isfinite(ps.val[k - 1]):
                comps[j] = _x_from_pass(lr.V, ps.C[ps.sample[k - 1]], int(k), nonneg, ps.sign[k - 1])
        S_used = ps.C.shape[0]
    var = np.atleast_1d(cov.quad(comps.T)) if ks.size else np.zeros(0)
    elapsed = time.perf_counter() - t1
    ub, ub_spec = _bound(lr, opt_upper, ks)
    ub, ub_spec = np.maximum(ub, var), np.maximum(ub_spec, var)
    var, ub, ub_spec = sc.variances(var), sc.variances(ub), sc.variances(ub_spec)
    nnz = np.count_nonzero(comps, axis=1)
    return SpannogramPath(
        method="Spannogram" if nonneg else "Spannogram (signed)",
        cardinalities=ks,
        components=comps,
        variance=var,
        components_opt=comps,
        variance_opt=var,
        n_iter=np.full(ks.size, S_used, dtype=np.int64),
        time=np.full(ks.size, elapsed / max(ks.size, 1)),
        init_time=init_time,
        upper_bound=ub,
        upper_bound_spectral=ub_spec,
        n_nonzero=nnz,
        rank=d,
        n_samples=S_used,
        net=net,
    )


@validate_params(
    {
        "X": ["array-like", "sparse matrix", Covariance],
        "cardinality": [POSITIVE_INT, "array-like"],
        **_PASS_CONSTRAINTS,
        "spectral_only": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
@blas_limited
def spannogram_bound(
    X,
    cardinality,
    *,
    rank: int = 3,
    n_samples: int = 10000,
    nonneg: bool = True,
    net: str = "grid",
    random_state=None,
    failure_probability: float | None = None,
    spectral_only: bool = False,
) -> np.ndarray | float:
    """Upper bound on ``OPT_k = max x'Ax`` over unit non-negative ``k``-sparse ``x`` (Figs. 4-6, shaded).

    ``OPT <= min(lambda_1, sum_{top k} A_ii, max_i f_k(c_i) / cos^2(theta) + min(lambda_{d+1}, sum_{top k}
    (A - A_d)_ii))``, derived in the module docstring. Rigorous for ``net="grid"`` (default; a deterministic
    net with ``sin(theta) <= h sqrt(d-1)/2``) and ``net="exact"`` (rank 2, ``theta = 0``); for
    ``net="random"`` it holds with probability at least ``1 - failure_probability`` (default ``1/n``) for
    each ``k``. ``spectral_only=True`` gives the weaker form with ``lambda_{d+1}`` as the residual
    (Theorem 1's route).

    Parameters
    ----------
    X : array or scipy sparse matrix (n_samples, n_features), or Covariance
        Data (centred here; a sparse matrix through :meth:`repro.Covariance.from_data`, never densified)
        or a covariance (``Covariance.from_matrix`` for a given PSD matrix).
    cardinality : int or sequence of int
        One ``k`` (returns a float) or several (returns an array); all come from one pass.
    rank, n_samples, nonneg, net, random_state, failure_probability : int, int, bool, str, int, float
        As in :func:`spannogram_path` (but ``net="grid"`` by default, so that the bound is rigorous).
    spectral_only : bool, default False
        Use ``lambda_{d+1}`` alone for the residual (the weaker bound of Theorem 1's proof).

    Returns
    -------
    float or ndarray
        The upper bound on ``OPT_k`` for each requested ``k``.

    See Also
    --------
    spannogram_path, repro.metrics.certified_fraction

    References
    ----------
    Asteris, M., Papailiopoulos, D. & Dimakis, A. G. (2014). Nonnegative sparse PCA with provable
    guarantees. ICML, Theorem 2 and Section 5 ("data dependent bounds"; the shaded areas of Figures 4-6).

    Examples
    --------
    The unknown optimum lies between the variance a method reaches and the bound, which is at most the
    trivial bound ``lambda_1``:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((100, 10)) @ np.diag(np.linspace(3, 0.5, 10))
    >>> X[:, :4] += 2 * rng.standard_normal((100, 1))  # four correlated variables
    >>> from repro import spannogram_bound, spannogram_path
    >>> bound = spannogram_bound(X, 2, n_samples=2000)
    >>> reached = spannogram_path(X, [2], n_samples=2000, random_state=0).variance[0]
    >>> bool(reached <= bound <= np.linalg.eigvalsh(np.cov(X, rowvar=False))[-1])
    True
    """
    sc = _scaled_cov(X, method="spannogram_bound")
    cov = sc.cov
    d = _check_rank(rank, cov)
    scalar = np.ndim(cardinality) == 0
    ks = check_cardinalities(cardinality, cov.n_features)
    S = check_int(n_samples, "n_samples", low=1)
    net = _check_net(net)
    fp = _check_fp(failure_probability)
    if net == "exact" and d != 2:
        raise ValueError(f"net='exact' is the rank-2 sweep; got rank={d}. Use rank=2 or net='grid'.")
    nonneg, spectral_only = check_bool(nonneg, "nonneg"), check_bool(spectral_only, "spectral_only")
    lr = _low_rank(cov, d)
    kmax = int(ks.max())
    if net == "exact":
        val, _ = _exact2(lr.V, kmax, nonneg)
        upper = val[ks - 1]
    else:
        ps = _run_pass(lr.V, kmax, nonneg, net, S, check_random_state(random_state), fp)
        upper = ps.f[ks - 1] / ps.cos2
    full, spec = _bound(lr, upper, ks)
    out = sc.variances(spec if spectral_only else full)
    return float(out[0]) if scalar else out
