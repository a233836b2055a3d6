"""The certified optimum for wide data (``N`` samples, ``p`` features, ``N << p``) without the ``p x p``
covariance: :func:`repro.optimal_sparse_pca`'s route when it receives data with fewer samples than features
(and at least ``WIDE_MIN_FEATURES``), and :func:`repro.optimal_sparse_pca_wide`'s, which returns the result
at every cardinality.

With ``G = X_c / sqrt(N - 1)`` (``N x p``), ``C = G'G`` has rank ``r <= N``; its thin SVD gives
``C = sum_m lam_m v_m v_m'``. Nothing here forms more than ``N x p`` or ``|R| x p`` (``R`` the candidates).

**Screening.** A feature ``i`` can be dropped when an upper bound ``U_i`` on every support that contains it
is at most the incumbent times ``1 + gap``: then the optimum lies among the others (or the incumbent is
within ``gap`` of it). The returned upper bound is ``max(bound of the search over R, max of the dropped
U_i)``, so it is a proven bound whatever was dropped. ``U_i`` is the smallest of:

1. **trace**: ``C_ii + (k - 1 largest C_jj, j != i)`` (``lambda_max(C_S) <= tr C_S``).
2. **eigen-knapsack**: for unit ``x`` on ``S``, ``x'Cx = sum_m lam_m t_m`` with ``t_m = (v_m'x)^2``,
   ``sum_m t_m <= 1`` and, by Cauchy-Schwarz on ``S``, ``t_m <= sum_{j in S} v_m[j]^2 <= c_m``, the
   ``v_m[i]^2`` plus the ``k - 1`` largest other ``v_m[j]^2``. The largest ``sum lam_m t_m`` under these
   constraints is a fractional knapsack: fill ``t`` in order of decreasing ``lam_m`` up to ``c_m`` until
   the total reaches 1. For ``x >= 0``, ``(v_m'x)^2 <= max(sum_S (v_m)_+^2, sum_S (v_m)_-^2)``, a smaller
   ``c_m``.
3. **the 2 x 2 bound with ``I = {i}``** (:mod:`repro.optimal.estimator`, bound 3): with
   ``a_j = C_ji / sqrt(C_ii)`` and ``b_j^2 = C_jj - a_j^2``, ``lambda_max(C_S)`` is at most the largest
   eigenvalue of ``[[C_ii + sum a_j^2, sum |a_j| b_j], [., sum b_j^2]]``, each sum over its ``k - 1``
   largest terms (``j != i``). It needs the column ``C[:, i] = G'g_i`` (``p N`` flops), so it is computed
   only for the features that survive 1-2, in blocks.

The root bound (before any search) is the smallest of ``lam_1``, the ``k`` largest ``C_ii``, the knapsack
with ``c_m`` the ``k`` largest ``v_m[j]^2``, ``max_i U_i`` (every support holds some ``i``) and the
spannogram certificate (:func:`repro.spannogram_bound`, through the ``N x p`` data).

**Incumbents**: the truncated leading eigenvector and EMSparsePCA (through the data, never ``p x p``); then
the search over ``R`` (:func:`repro.optimal.search.search` on ``C_R = G_R'G_R``, with its own greedy,
eigenvector, EM and swap incumbents).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .._dense import _canonical_sign
from ..em_sparse_pca import em_sparse_pca
from ..linalg import Covariance
from ..spannogram import spannogram_bound
from .roots import _em_support, _spannogram_root
from .search import OptimalResult, certified_result, search

__all__ = ["MAX_CANDIDATES", "WIDE_MIN_FEATURES", "screening_bounds", "solve_wide", "two_by_two_bounds"]

WIDE_MIN_FEATURES = 100
"""Data with ``n < p`` and at least this many features take the wide route. Measured (random rank-5 data
plus noise, n = 10 and 40, k = 3 and 5, the same optimum each time): the wide route took 0.2-0.33x the
covariance route's time at p = 100, 0.06-0.16x at p = 200, 0.01-0.18x at p = 400, but 0.18-2.1x at
p = 50 (0.1-0.4 s either way)."""

MAX_CANDIDATES = 1500
"""The largest candidate set searched (``C_R`` is ``|R| x |R|``); past it the screened bounds alone are
returned with status ``"too_many_candidates"``."""

_BLOCK = 256  # columns of C computed at once for the 2 x 2 bound


def _top_sum_excluding(vals: np.ndarray, m: int) -> np.ndarray:
    """For a (n_items, n_cols) array, ``out[j, c]`` = the sum of the ``m`` largest ``vals[:, c]`` without
    item ``j``."""
    n = vals.shape[0]
    if m <= 0:
        return np.zeros_like(vals)
    m = min(m, n - 1)
    if m <= 0:
        return np.zeros_like(vals)
    srt = -np.sort(-vals, axis=0)  # descending per column
    top_m = srt[:m].sum(axis=0)
    top_m1 = srt[: m + 1].sum(axis=0) if m + 1 <= n else top_m
    kth = srt[m - 1]  # the m-th largest
    # item j among the m largest (value >= the m-th largest): its own value is replaced by the (m+1)-th
    inside = vals >= kth
    return np.where(inside, top_m1 - vals, top_m)


def _knapsack(lam: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """``max sum_m lam_m t_m`` over ``0 <= t_m <= cap[m, ...]``, ``sum_m t_m <= 1``; ``lam`` descending,
    ``cap`` (r,) or (r, n): one knapsack per column."""
    cap = np.minimum(cap, 1.0)
    before = np.cumsum(cap, axis=0) - cap  # capacity used before item m
    take = np.clip(1.0 - before, 0.0, cap)
    return np.tensordot(lam, take, axes=(0, 0))


def _vcaps(V: np.ndarray, nonneg: bool):
    """The per-eigenvector weights whose support sums bound ``t_m``: ``v^2`` (signed) or the positive and
    negative parts' squares (``x >= 0``), each (p, r)."""
    if nonneg:
        return [np.maximum(V, 0.0) ** 2, np.minimum(V, 0.0) ** 2]
    return [V**2]


def screening_bounds(G: np.ndarray, k: int, *, nonneg: bool = False, lam=None, V=None):
    """Upper bounds on ``lambda_max(C_S)`` (``C = G'G``) over supports ``|S| <= k``: the root bound, and for
    each feature ``i`` the bound over the supports that contain ``i`` (the trace and eigen-knapsack bounds
    of the module docstring; the 2 x 2 bound is :func:`two_by_two_bounds`).

    Parameters
    ----------
    G : ndarray (n, p)
        A factor of ``C`` (the centred data over ``sqrt(N - 1)``).
    k : int
    nonneg : bool
        Bound over ``x >= 0`` only (smaller knapsack capacities).
    lam, V : ndarray, optional
        The non-zero eigenvalues of ``C`` (descending) and their eigenvectors (p, r), when known.

    Returns
    -------
    root : float
    per_feature : ndarray (p,)

    Examples
    --------
    >>> import numpy as np
    >>> from repro.optimal.wide import screening_bounds
    >>> G = np.random.default_rng(0).standard_normal((4, 9))
    >>> root, U = screening_bounds(G, 2)
    >>> bool(root <= np.linalg.eigvalsh(G.T @ G)[-1] + 1e-9), U.shape
    (True, (9,))
    """
    if lam is None or V is None:
        lam, V = _thin_eig(G)
    p = G.shape[1]
    d = np.einsum("ij,ij->j", G, G)
    # trace
    ds = -np.sort(-d)
    root = min(float(ds[:k].sum()), float(lam[0]) if lam.size else 0.0)
    per = d + _top_sum_excluding(d[:, None], k - 1)[:, 0] if p > 1 else d.copy()
    # eigen-knapsack: c_m = max over the weight families of (own + k - 1 largest others)
    caps_root = None
    caps_i = None
    for Wt in _vcaps(V, nonneg):
        root_c = -np.sort(-Wt, axis=0)[:k].sum(axis=0)  # (r,)
        ci = Wt + _top_sum_excluding(Wt, k - 1)  # (p, r)
        caps_root = root_c if caps_root is None else np.maximum(caps_root, root_c)
        caps_i = ci if caps_i is None else np.maximum(caps_i, ci)
    if lam.size:
        root = min(root, float(_knapsack(lam, caps_root)))
        per = np.minimum(per, _knapsack(lam, caps_i.T))
    else:
        per = np.zeros(p)
    per = np.minimum(per, root)
    return root, per


def two_by_two_bounds(G: np.ndarray, idx: np.ndarray, k: int, *, block: int = _BLOCK) -> np.ndarray:
    """For each feature ``i`` in ``idx``, the 2 x 2 bound (module docstring, 3) on ``lambda_max(C_S)`` over
    the supports ``|S| <= k`` that contain ``i``; ``C = G'G`` is computed a block of columns at a time.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.optimal.wide import two_by_two_bounds
    >>> G = np.random.default_rng(0).standard_normal((4, 9))
    >>> U = two_by_two_bounds(G, np.arange(9), 2)
    >>> C = G.T @ G
    >>> bool(U[0] >= np.linalg.eigvalsh(C[np.ix_([0, 1], [0, 1])])[-1] - 1e-9)
    True
    """
    idx = np.asarray(idx, dtype=np.int64)
    d = np.einsum("ij,ij->j", G, G)
    out = np.empty(idx.size)
    r = k - 1
    for s in range(0, idx.size, block):
        cols = idx[s : s + block]
        Cb = G.T @ G[:, cols]  # (p, b)
        dii = d[cols]
        with np.errstate(divide="ignore", invalid="ignore"):
            a2 = np.where(dii > 0, Cb**2 / dii, 0.0)
        a2 = np.minimum(a2, d[:, None])
        b2 = np.maximum(d[:, None] - a2, 0.0)
        ab = np.sqrt(a2 * b2)
        # exclude i itself from its own sums
        a2[cols, np.arange(cols.size)] = -np.inf
        b2[cols, np.arange(cols.size)] = -np.inf
        ab[cols, np.arange(cols.size)] = -np.inf
        if r > 0 and G.shape[1] > 1:
            m = min(r, G.shape[1] - 1)
            sa = -np.partition(-a2, m - 1, axis=0)[:m].sum(axis=0)
            sb = -np.partition(-b2, m - 1, axis=0)[:m].sum(axis=0)
            sab = -np.partition(-ab, m - 1, axis=0)[:m].sum(axis=0)
        else:
            sa = sb = sab = np.zeros(cols.size)
        top = dii + sa
        tr = top + sb
        det = top * sb - sab**2
        out[s : s + block] = 0.5 * (tr + np.sqrt(np.maximum(tr**2 - 4 * det, 0.0)))
    return out


def _thin_eig(G: np.ndarray):
    """The non-zero eigenvalues (descending) and eigenvectors (p, r) of ``G'G`` from the ``n x n`` side."""
    K = G @ G.T
    w, U = np.linalg.eigh(0.5 * (K + K.T))
    keep = w > max(float(w[-1]), 0.0) * 1e-12 * max(G.shape) if w.size else w > 0
    w, U = w[keep][::-1], U[:, keep][:, ::-1]
    V = (G.T @ U) / np.sqrt(w)
    return w, V


def support_value(G: np.ndarray, S: np.ndarray, nonneg: bool):
    """A unit component on support ``S`` and its variance: the top eigenvector of ``C_S`` (through the
    smaller of ``|S| x |S|`` and ``n x n``); for ``x >= 0`` its positive part (a feasible point, a lower
    bound). Returns ``(x_S, value)``."""
    GS = G[:, S]
    if S.size <= G.shape[0]:
        _w, U = np.linalg.eigh(GS.T @ GS)
        x = U[:, -1]
    else:
        _w, U = np.linalg.eigh(GS @ GS.T)
        x = GS.T @ U[:, -1]
    if nonneg:
        if np.sum(np.maximum(x, 0)) < np.sum(np.maximum(-x, 0)):
            x = -x
        x = np.maximum(x, 0.0)
    n = np.linalg.norm(x)
    if not n > 0:
        x = np.zeros(S.size)
        x[int(np.argmax(np.einsum("ij,ij->j", GS, GS)))] = 1.0
    else:
        x = x / n
    y = GS @ x
    return x, float(y @ y)


def _incumbents(G, V, k, nonneg, root_em, cov, prev, U, extend=True):
    """Candidate supports: the truncated leading eigenvector, EMSparsePCA (on the data operator) and the
    previous cardinality's support ``prev`` extended by its best feature among the 500 largest ``U``
    (``prev`` itself when not ``extend``: out of time)."""
    v = V[:, 0]
    if nonneg and np.sum(np.maximum(v, 0)) < np.sum(np.maximum(-v, 0)):
        v = -v
    score = np.maximum(v, 0) if nonneg else np.abs(v)
    supports = [np.sort(np.argsort(-score, kind="stable")[:k])]
    if prev is not None and prev.size and not extend:
        supports.append(np.sort(prev))
    elif prev is not None and prev.size:
        best, best_S = -np.inf, None
        for i in np.argsort(-U, kind="stable")[:500]:
            if i in prev:
                continue
            S = np.sort(np.append(prev, i))
            val = support_value(G, S, nonneg)[1]
            if val > best:
                best, best_S = val, S
        if best_S is not None:
            supports.append(best_S)
    if root_em:
        try:
            comps, _ = em_sparse_pca(
                cov, 1, cardinality=k, nonneg=nonneg, certify=False, n_restarts=5, random_state=0
            )
            s = np.flatnonzero(comps[0])
            if 0 < s.size <= k:
                supports.append(s)
        except Exception:  # a heuristic start: the search does not depend on it
            pass
    return supports


def solve_wide(
    X: np.ndarray,
    k: int,
    *,
    nonneg: bool,
    gap: float,
    time_limit: float | None,
    max_nodes: int | None,
    eig_limit: int,
    root_em: bool,
    root_spannogram: bool,
    verbose: bool,
    t0: float,
    max_candidates: int = MAX_CANDIDATES,
    levels: dict | None = None,
    root_dual: int = 300,
    root_perspective: int = 0,
) -> OptimalResult:
    """The wide route on data ``X`` (n, p) that the door checked and scaled, ``n < p``: the cardinalities
    ``1..k`` in turn, each screened with the bounds of the module docstring (and the previous one's upper
    bound), then searched over its candidates (``C_R`` only). ``max_nodes`` limits each cardinality's
    search; ``time_limit`` the whole. ``levels``, when a dict, receives each cardinality's result
    (``levels[j]``; a cardinality skipped for the time limit is not there).
    ``root_dual``, ``root_perspective``: the optimized l1 dual's and the perspective bound's iterations
    at the root of the last cardinality's search."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    G = (X - X.mean(axis=0)) / np.sqrt(n - 1)  # C = G'G is Covariance.from_data(X) (ddof = 1)
    d = np.einsum("ij,ij->j", G, G)
    if not float(d.max()) > 0:
        raise ValueError("X has no variance (a zero covariance): every unit vector is optimal, with value 0.")
    ub_prev, prev, total_nodes, res, j, lam, V = np.inf, None, 0, None, 0, None, None
    try:
        lam, V = _thin_eig(G)
        cov = Covariance._from_valid(X) if root_em or root_spannogram else None  # X: checked at the door
        for j in range(1, k + 1):
            if j < k and time_limit is not None and time.perf_counter() - t0 >= time_limit:
                ub_prev = np.inf  # out of time: straight to k (a bound at j - 1 screens only cardinality j)
                continue
            res = _one_cardinality(
                G, d, lam, V, cov, j, nonneg, gap, time_limit, max_nodes, eig_limit, root_em and j == k,
                root_spannogram and j == k, verbose, t0, max_candidates, ub_prev, prev,
                root_dual if j == k else 0, root_perspective if j == k else 0,
            )  # fmt: skip
            total_nodes += res.n_nodes
            if levels is not None:
                levels[j] = res
            ub_prev, prev = res.upper_bound, np.flatnonzero(res.component)
            if res.status == "interrupted" and j < k:  # Ctrl-C inside a search: no further cardinality
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        if res is None or j < k or res.status != "interrupted":
            return _interrupted(G, d, lam, V, k, nonneg, gap, res, total_nodes, t0)
    return replace(res, n_nodes=total_nodes, time=time.perf_counter() - t0)  # the levels keep their own


def _interrupted(G, d, lam, V, k, nonneg, gap, res, n_nodes, t0) -> OptimalResult:
    """Ctrl-C before the search at ``k`` finished: the last cardinality's component (feasible at ``k``), or
    the best single feature, against the screening's root bound at ``k`` (the trace and ``lambda_max``;
    the trace alone, the sum of the ``k`` largest variances, before the ``n x n`` spectrum is known)."""
    if lam is None:
        root = float(np.sum(np.sort(d)[::-1][:k]))
    else:
        root, _ = screening_bounds(G, k, nonneg=nonneg, lam=lam, V=V)
    if res is not None and np.any(res.component):
        x = res.component
    else:
        x = np.zeros(G.shape[1])
        x[int(np.argmax(d))] = 1.0
    y = G @ x
    prunes = {} if res is None else dict(res.prunes)
    return certified_result(x, float(y @ y), root, gap, "interrupted", n_nodes, t0, root, prunes)


def _one_cardinality(
    G, d, lam, V, cov, k, nonneg, gap, time_limit, max_nodes, eig_limit, root_em, root_spannogram, verbose,
    t0, max_candidates, ub_prev, prev, root_dual=300, root_perspective=0,
) -> OptimalResult:  # fmt: skip
    """One cardinality of :func:`solve_wide`; ``ub_prev`` bounds the optimum at ``k - 1``, so
    ``U_i <= ub_prev + C_ii`` (``||G_S||^2 <= ||G_{S - i}||^2 + ||g_i||^2``)."""
    p = G.shape[1]
    root, U = screening_bounds(G, k, nonneg=nonneg, lam=lam, V=V)
    U = np.minimum(U, ub_prev + d)
    prunes = {"screened_trace_knapsack": 0, "screened_2x2": 0, "candidates": p}

    best_x, best_val = np.zeros(p), -np.inf

    def out_of_time() -> bool:  # the heuristics and optional bounds start only within the time limit
        return time_limit is not None and time.perf_counter() - t0 >= time_limit

    def offer(S, xS, val):
        nonlocal best_x, best_val
        if val > best_val:
            best_val = val
            best_x = np.zeros(p)
            best_x[S] = xS

    for S in _incumbents(G, V, k, nonneg, root_em and not out_of_time(), cov, prev, U, not out_of_time()):
        xS, val = support_value(G, S, nonneg)
        offer(S, xS, val)

    def threshold():
        return best_val * (1 + gap)

    # the 2 x 2 bound on the features the cheap bounds keep
    R = np.flatnonzero(U > threshold())
    prunes["screened_trace_knapsack"] = int(p - R.size)
    if 0 < R.size <= 4 * max_candidates and not out_of_time():
        U2 = two_by_two_bounds(G, R, k)
        U[R] = np.minimum(U[R], U2)
    root = min(root, float(U.max()))
    if root_spannogram and cov is not None and best_val < root * (1 - gap) and not out_of_time():
        try:
            root = min(root, float(spannogram_bound(cov, k, rank=2, n_samples=400, nonneg=nonneg)))
        except Exception:  # an optional bound
            pass
    R = np.flatnonzero(U > threshold())
    prunes["screened_2x2"] = int(p - R.size - prunes["screened_trace_knapsack"])

    status, n_nodes, ub_R = "optimal", 0, -np.inf
    prunes["candidates"] = int(R.size)
    if R.size > max_candidates:
        status = "too_many_candidates"
        ub_R = float(U[R].max())
    elif R.size:
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - t0), 0.0)
        GR = G[:, R]
        CR = GR.T @ GR
        res = search(
            0.5 * (CR + CR.T),
            min(k, R.size),
            nonneg=nonneg,
            gap=gap,
            time_limit=left,
            max_nodes=max_nodes,
            eig_limit=eig_limit,
            em_start=_em_support if root_em else None,
            spannogram=_spannogram_root if root_spannogram else None,
            verbose=verbose,
            t0=time.perf_counter(),
            root_dual=root_dual,
            root_perspective=root_perspective,
        )
        n_nodes = res.n_nodes
        for name, c in res.prunes.items():
            prunes[name] = prunes.get(name, 0) + c
        S = np.flatnonzero(res.component)
        if S.size:
            y = G[:, R[S]] @ res.component[S]
            offer(R[S], res.component[S], float(y @ y))
        ub_R = res.upper_bound
        status = res.status
    dropped = np.ones(p, bool)
    dropped[R] = False
    ub_dropped = float(U[dropped].max()) if dropped.any() else -np.inf
    upper = min(root, max(ub_R, ub_dropped, best_val))
    x = best_x if nonneg else _canonical_sign(best_x[:, None])[:, 0]
    x = x / np.linalg.norm(x)
    y = G @ x
    value = float(y @ y)
    return certified_result(x, value, upper, gap, status, n_nodes, t0, root, prunes)
