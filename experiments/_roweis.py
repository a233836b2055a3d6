"""What the Roweis (1997) experiments share: footnote 5's data, EM run to a target accuracy, the operation
counts of Fig. 2's methods, Lanczos with counted products, Sanger's rule, the storage and SPCA-cost
measurements, and log-log slopes bootstrapped over repeats (one module, so no experiment imports another).
"""

from __future__ import annotations

import math
import time
import tracemalloc
import warnings

import numba
import numpy as np
import pandas as pd
import scipy.sparse.linalg
from sklearn.base import clone
from threadpoolctl import threadpool_limits

from experiments._opcount import count_data_passes
from experiments.runner import _common
from experiments.runner.claims import NOT_REPRODUCED, REPRODUCED, TOO_CLOSE
from repro import ConvergenceWarning
from repro.em_pca import EMPCA, em_pca, sensible_pca, subspace_sin

EM_ITERS = 20  # Fig. 2 left: EM runs exactly this many iterations
NCV = 20  # Lanczos vectors of ARPACK's eigsh
TARGET_COS = 0.999  # |<guess, eigenvector>| >= 0.999: the paper's convergence criterion (Fig. 2)
TARGET_SIN = math.sqrt(1.0 - TARGET_COS**2)  # the same criterion for k columns: sine of the largest angle
EQUAL_ACCURACY_MAX_ITER = 100_000


# --------------------------------------------------------------------------- data (footnote 5)
def random_covariance(p: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues uniform on (0, 1) and axes from p - 1 Gaussian points; returns (eigenvalues, axes)."""
    d = rng.uniform(0.0, 1.0, p)
    P = rng.standard_normal((p, p - 1))
    Q = np.linalg.qr(P, mode="complete")[0]
    return d, Q


def sample_data(p: int, rng: np.random.Generator) -> np.ndarray:
    d, Q = random_covariance(p, rng)
    Z = rng.standard_normal((10 * p, p))
    return Z @ (Q * np.sqrt(d)).T


def exact_subspace(X: np.ndarray, k: int) -> np.ndarray:
    """Top-k eigenvectors of the sample covariance (columns)."""
    Xc = X - X.mean(axis=0)
    w, V = np.linalg.eigh(Xc.T @ Xc)
    return V[:, ::-1][:, :k], w[::-1] / (X.shape[0] - 1)


def gaussian(rng, n: int, lam: np.ndarray, rotate: bool = True) -> np.ndarray:
    Z = rng.standard_normal((n, lam.size)) * np.sqrt(lam)
    if not rotate:
        return Z
    Q = np.linalg.qr(rng.standard_normal((lam.size, lam.size)))[0]
    return Z @ Q.T


def iters_to(X, V, k, seed, max_iter, n_oversamples=0):
    """EM iterations until sin(span C, span V) <= TARGET_SIN; (iterations, reached, seconds)."""
    V = np.ascontiguousarray(V)

    def cb(t, C, lam):
        return subspace_sin(C, V) <= TARGET_SIN

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = em_pca(
            X, k, tol=0.0, max_iter=max_iter, random_state=seed, callback=cb, n_oversamples=n_oversamples
        )
    return res.n_iter, bool(res.converged), time.perf_counter() - t0


# --------------------------------------------------------------------------- flop counts
# Operation counts of Fig. 2 (left panel), derived from each algorithm's operations with 2 flops per
# multiply-add (MATLAB's convention): centring ``2np + p`` for every method; EM per iteration (the algorithm
# as printed, k = 1) e-step ``C'C`` (2p - 1), ``C'Y`` (n(2p - 1)), division (n), m-step ``YX'`` (p(2n - 1)),
# ``XX'`` (2n - 1), division (p), i.e. ``4np + 2n + 2p - 2``, times 20, plus ``2np + n + 3p`` for the
# eigenvalue (variance of the projection); sample covariance ``p^2 (2n - 1) + p^2`` (``cov`` forms the full
# matrix); diagonalization with ARPACK Lanczos (``scipy.sparse.linalg.eigsh``, the successor of MATLAB's
# ``eigs``), counted as (number of matrix-vector products, measured) x ``(2p^2 - p + 4 p ncv)`` (product
# plus an upper bound on full reorthogonalization against ``ncv = 20`` Lanczos vectors); snap-shot: the ``n
# x n`` Gram matrix ``n^2 (2p - 1)``, Lanczos on it (same count with n), the back-projection ``p(2n - 1)``
# and a normalization ``3p``.
def flops_center(n: int, p: int) -> float:
    return 2.0 * n * p + p


def flops_em(n: int, p: int, iters: int = EM_ITERS) -> float:
    per_iter = 4.0 * n * p + 2 * n + 2 * p - 2
    return flops_center(n, p) + iters * per_iter + (2.0 * n * p + n + 3 * p)


def flops_cov(n: int, p: int) -> float:
    return flops_center(n, p) + p * p * (2.0 * n - 1) + p * p


def flops_lanczos(m: int, size: int) -> float:
    return m * (2.0 * size * size - size + 4.0 * NCV * size)


def flops_snapshot(n: int, p: int, m: int) -> float:
    return flops_center(n, p) + n * n * (2.0 * p - 1) + flops_lanczos(m, n) + p * (2.0 * n - 1) + 3 * p


def counted_em_flops(Y: np.ndarray) -> float:
    """Flops of Fig. 2's EM method (k = 1, ``EM_ITERS`` iterations) counted on its code path: every pass
    ``em_pca`` makes over the data, at the shapes of the calls
    (:func:`experiments._opcount.count_data_passes`).

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.random.default_rng(0).standard_normal((160, 16))
    >>> counted_em_flops(Y) == 4 * 160 * 16 + 16 + (EM_ITERS + 1) * (4 * 160 * 16 + 2 * 160)
    True
    """
    with count_data_passes() as c, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        em_pca(Y, 1, max_iter=EM_ITERS, tol=0.0, random_state=0)
    return c.flops


def counted_cov_flops(n: int, p: int, m: int) -> float:
    """Flops of the covariance route at the shapes Fig. 2 calls it, with ``m`` counted Lanczos
    products (0: the covariance alone).

    Column means and centring (``2np + p``), ``Yc'Yc`` by ``syrk`` (NumPy computes ``A.T @ A`` as one
    triangle: ``n p (p + 1)``), the division by ``n - 1`` (``p^2``), and per Lanczos product the
    ``p x p`` matrix-vector product (``2p^2``, counted by the operator) plus ARPACK's orthogonalization
    against at most ``ncv`` vectors (``4 p ncv``, an upper bound: ARPACK's Fortran is not instrumented).

    Examples
    --------
    >>> counted_cov_flops(160, 16, 0) == 2 * 160 * 16 + 16 + 160 * 16 * 17 + 16 * 16
    True
    """
    lanczos = m * (2.0 * p * p + 4.0 * p * min(NCV, p - 1)) if m else 0.0
    return 2.0 * n * p + p + n * p * (p + 1.0) + p * p + lanczos


class _Counting(scipy.sparse.linalg.LinearOperator):
    """A dense symmetric matrix as an operator that counts its products."""

    def __init__(self, A):
        super().__init__(dtype=np.float64, shape=A.shape)
        self.A = A
        self.count = 0

    def _matvec(self, x):
        self.count += 1
        return self.A @ x.ravel()

    def _matmat(self, X):
        self.count += X.shape[1]
        return self.A @ X


def eigsh_counted(A, rng):
    """Leading eigenpair of ``A`` (array or operator) by ARPACK Lanczos, with the number of products."""
    op = _Counting(A)
    v0 = rng.standard_normal(A.shape[0])
    w, V = scipy.sparse.linalg.eigsh(op, k=1, which="LA", ncv=min(NCV, A.shape[0] - 1), v0=v0)
    return float(w[0]), V[:, 0], op.count


def snapshot_matvecs(Y: np.ndarray) -> tuple[np.ndarray, int]:
    """The snap-shot method's eigenvector and Lanczos product count, the Gram matrix applied implicitly.

    The same ``eigsh`` run as the snap-shot method (same start, same operator ``Yc Yc'`` up to round-off)
    at O(np) per product instead of forming the ``n x n`` matrix (O(n^2 p)): for the operation-count panel
    at sizes where forming it is not timed.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.random.default_rng(0).standard_normal((200, 20))
    >>> v, m = snapshot_matvecs(Y)
    >>> Yc = Y - Y.mean(axis=0)
    >>> u_full = eigsh_counted(Yc @ Yc.T, np.random.default_rng(2))[1]
    >>> v_full = Yc.T @ u_full / np.linalg.norm(Yc.T @ u_full)
    >>> bool(abs(v @ v_full) > 1 - 1e-8), m > 0
    (True, True)
    """
    Yc = Y - Y.mean(axis=0)
    n = Yc.shape[0]
    op = scipy.sparse.linalg.LinearOperator(
        (n, n), matvec=lambda x: Yc @ (Yc.T @ x.ravel()), matmat=lambda X: Yc @ (Yc.T @ X), dtype=np.float64
    )
    _, u, m = eigsh_counted(op, np.random.default_rng(2))
    v = Yc.T @ u
    return v / np.linalg.norm(v), m


# --------------------------------------------------------------------------- Sanger's rule
@numba.njit(cache=False)
def gha_pass(W: np.ndarray, Y: np.ndarray, eta: float, order: np.ndarray) -> np.ndarray:
    """One pass of Sanger's generalized Hebbian algorithm over the rows of centred ``Y`` (in ``order``).

    Per point ``y``: ``z = W y``, ``W += eta (z y' - tril(z z') W)`` (Sanger 1989; k = 1 is Oja's rule).
    Written as loops for Numba; ``tests/test_claim_counterexamples_roweis.py`` checks it against the
    NumPy formula.
    """
    k, p = W.shape
    z = np.empty(k)
    for i in order:
        y = Y[i]
        for a in range(k):
            z[a] = W[a] @ y
        # row a: W_a += eta z_a (y - sum_{b <= a} z_b W_b), with the W_b of before this point
        upd = np.zeros((k, p))
        for a in range(k):
            r = y.copy()
            for b in range(a + 1):
                r -= z[b] * W[b]
            upd[a] = eta * z[a] * r
        W += upd
    return W


def gha_passes(Y, V, k, eta, rng, max_passes):
    W = rng.standard_normal((k, Y.shape[1])) / math.sqrt(Y.shape[1])
    for t in range(1, max_passes + 1):
        W = gha_pass(W, Y, eta, rng.permutation(Y.shape[0]))
        if not np.all(np.isfinite(W)):
            return max_passes + 1, False
        if subspace_sin(W.T, V) <= TARGET_SIN:
            return t, True
    return max_passes + 1, False


# --------------------------------------------------------------------------- storage
def _block_factory(n: int, p: int, rows: int, seed: int):
    scale = 1.0 / np.sqrt(np.arange(1, p + 1))

    def blocks():
        for i in range(0, n, rows):
            yield np.random.default_rng([seed, i]).standard_normal((min(rows, n - i), p)) * scale

    return blocks


def peak_bytes(n: int, p: int, k: int, rows: int = 100) -> int:
    """Peak bytes Python allocates during one ``fit_blocks`` of ``n x p`` data in blocks of ``rows``.

    A first fit of two blocks runs untraced before it: what a process allocates once (compiled kernels'
    dispatch tables, caches) is not storage of the fit, and without it the first size measured in a fresh
    process carried about 330 KB more than the same size measured second."""
    model = EMPCA(k, tol=0.0, max_iter=2, random_state=0, n_oversamples=0)
    blocks = _block_factory(n, p, rows, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clone(model).fit_blocks(_block_factory(min(n, 2 * rows), p, rows, 1))
        tracemalloc.start()
        try:
            model.fit_blocks(blocks)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return int(peak)


# --------------------------------------------------------------------------- SPCA cost
def spca_seconds(X, k, iters):
    """CPU seconds of this process for ``iters`` EM iterations of SPCA (single-threaded BLAS)."""
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sensible_pca(X, k, algorithm="em", tol=0.0, max_iter=iters, random_state=0)  # Roweis' EM
    return time.process_time() - t0


def spca_counted_per_iter(X, k) -> float:
    """Flops per SPCA EM iteration counted on the code path: every pass over the data at the shapes of the
    calls (:func:`experiments._opcount.count_data_passes`), as ``(12 iterations - 2 iterations) / 10``
    like the times (set-up cancels)."""
    flops = {}
    for iters in (2, 12):
        with count_data_passes() as c, warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            sensible_pca(X, k, algorithm="em", tol=0.0, max_iter=iters, random_state=0)
        flops[iters] = c.flops
    return (flops[12] - flops[2]) / 10.0


# --------------------------------------------------------------------------- Fig. 2's four methods
def em_to_eigenvector(Y: np.ndarray, v: np.ndarray, c0: np.ndarray):
    """Fig. 2 right: EM (k = 1) from ``c0`` until ``|<C/|C|, v>| >= 0.999`` (at most 20000 iterations);
    returns the result and the first iteration at which the unnormalized ``|<C, v>|`` reached 0.999 (or
    None), one possible reading of the paper's criterion."""
    first_unnorm = [None]

    def cb(t, C, lam):
        c = C[:, 0]
        dot = abs(float(c @ v))
        if first_unnorm[0] is None and dot >= TARGET_COS:
            first_unnorm[0] = t
        return dot / float(np.linalg.norm(c)) >= TARGET_COS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = em_pca(Y, 1, init=c0[None, :], tol=0.0, max_iter=20_000, callback=cb)
    return res, first_unnorm[0]


METHODS = ("EM method", "Sample Covariance + Diag.", "Sample Covariance only", "Snap-shot method")


def fig2_methods(Y: np.ndarray):
    """Fig. 2's four ways of finding the leading eigenvector of ``Y`` (rows = points), as callables."""
    n = Y.shape[0]

    def em():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = em_pca(Y, 1, max_iter=EM_ITERS, tol=0.0, random_state=0)
        return res.components[0], 2 * (EM_ITERS + 1)

    def cov():
        Yc = Y - Y.mean(axis=0)
        return Yc.T @ Yc / (n - 1)

    def cov_diag():
        _, v, m = eigsh_counted(cov(), np.random.default_rng(1))
        return v, m

    def snapshot():
        Yc = Y - Y.mean(axis=0)
        _, u, m = eigsh_counted(Yc @ Yc.T, np.random.default_rng(2))
        v = Yc.T @ u
        return v / np.linalg.norm(v), m

    return {
        "EM method": em,
        "Sample Covariance + Diag.": cov_diag,
        "Sample Covariance only": cov,
        "Snap-shot method": snapshot,
    }


def em_to_accuracy(Y: np.ndarray, v: np.ndarray, seed: int) -> tuple[int, bool, float]:
    """EM (k = 1) from a random start until |cos(guess, v)| >= 0.999; returns (iterations, ok, seconds)."""

    def cb(t, C, lam):
        c = C[:, 0]
        return abs(float(c @ v)) / float(np.linalg.norm(c)) >= TARGET_COS

    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = em_pca(Y, 1, tol=0.0, max_iter=EQUAL_ACCURACY_MAX_ITER, random_state=seed, callback=cb)
    return res.n_iter, bool(res.converged), time.process_time() - t0


TIMING_REPEATS = 5
#: Sizes timed beyond the operation-count grid (EM and the two covariance methods only): the measured-time
#: slopes need sizes where both are in their asymptotic regime (module docstring).
TIMING_EXTRA_P = (2048,)
#: The snap-shot method (an n x n Gram matrix, n = 10p) is timed in every repeat up to this p only; above it
#: its Lanczos product count (the operation-count panel) comes from the same Lanczos run on the Gram matrix
#: applied implicitly, Yc (Yc' x), without forming it (:func:`snapshot_matvecs`).
SNAPSHOT_MAX_P = 256


def timed(p: int, method: str, quick: bool) -> bool:
    """Whether ``method`` is timed in every repeat at size ``p`` (module docstring)."""
    if method == "Snap-shot method":
        return quick or p <= SNAPSHOT_MAX_P
    return method != "Sample Covariance only" or p not in TIMING_EXTRA_P


def time_methods(data: dict, grid: list, repeats: int, quick: bool) -> tuple[dict, dict]:
    """CPU seconds of Fig. 2's methods, interleaved: every repeat times every size and every method once,
    the method order rotating, so that a slow spell of the machine hits all of them instead of one curve.

    ``data`` maps p to its points. Returns the seconds per (p, method), one per repeat, and each method's
    output per (p, method); where the snap-shot method is not timed, its eigenvector and product count
    come from :func:`snapshot_matvecs`. CPU time of this process: run it under one BLAS thread.
    """
    fns = {p: fig2_methods(Y) for p, Y in data.items()}
    seconds = {(p, m): [] for p in data for m in METHODS}
    outs = {}
    for p in grid:  # where the snap-shot method is not timed: its product count, Gram matrix implicit
        if not timed(p, "Snap-shot method", quick):
            outs[p, "Snap-shot method"] = snapshot_matvecs(data[p])
    # interleaved: every repeat times every size and every method once, the method order rotating,
    # so that a slow spell of the machine hits all of them instead of one curve; CPU time of this
    # process (single-threaded), so that other processes do not enter
    for r in _common.progress(range(repeats), "fig2 complexity (repeats)"):
        for p in data:
            order = METHODS[r % len(METHODS) :] + METHODS[: r % len(METHODS)]
            for method in order:
                if not timed(p, method, quick):
                    continue
                t0 = time.process_time()
                out = fns[p][method]()
                seconds[p, method].append(time.process_time() - t0)
                outs[p, method] = out
    return seconds, outs


def complexity_rows(cfg, timing_repeats: int) -> list[dict]:
    """Fig. 2 left: every method at every size, one row per timed repeat, with its operation count (as
    printed and as counted), its Lanczos products and, for EM, the run to equal accuracy (roweis1997_fig2's
    docstring)."""
    grid = [16, 32, 64, 128] if cfg.quick else [16, 32, 64, 128, 256, 512, 1024]
    timing_only = [] if cfg.quick else list(TIMING_EXTRA_P)
    repeats = 3 if cfg.quick else timing_repeats
    data = {p: sample_data(p, cfg.rng(0, p)) for p in grid + timing_only}
    with threadpool_limits(1):  # single-threaded BLAS: steadier under load, like MATLAB in 1997
        seconds, outs = time_methods(data, grid, repeats, cfg.quick)
        eq = {p: em_to_accuracy(data[p], outs[p, "Sample Covariance + Diag."][0], int(p)) for p in grid}
        # counted operations (the verdicts' measure), in one untimed EM run per size: the flops of every
        # pass em_pca makes over the data, at the shapes of the calls (experiments._opcount)
        em_counted = {p: counted_em_flops(data[p]) for p in data}
    rows = []
    for p in data:
        n = data[p].shape[0]
        v = outs[p, "Sample Covariance + Diag."][0]
        m_cov = outs[p, "Sample Covariance + Diag."][1]
        f_diag = flops_cov(n, p) + flops_lanczos(m_cov, p)
        methods = [
            ("EM method", flops_em(n, p), outs[p, "EM method"][1], outs[p, "EM method"][0]),
            ("Sample Covariance + Diag.", f_diag, m_cov, v),
        ]
        counted = {
            "EM method": em_counted[p],
            "Sample Covariance + Diag.": counted_cov_flops(n, p, m_cov),
            "Sample Covariance only": counted_cov_flops(n, p, 0),
        }
        if p in grid:
            methods.append(("Sample Covariance only", flops_cov(n, p), 0, None))
        if p in grid:
            m_snap = outs[p, "Snap-shot method"][1]
            snap = ("Snap-shot method", flops_snapshot(n, p, m_snap), m_snap, outs[p, "Snap-shot method"][0])
            methods.append(snap)
        for method, flops, m, v_m in methods:
            extra = {"timing_only": p in timing_only, "counted_flops": counted.get(method, np.nan)}
            if method == "EM method" and p in grid:
                # the same EM run from a random start until |cos| to the covariance eigenvector >= 0.999
                it_eq, conv_eq, sec_eq = eq[p]
                extra |= {
                    "iters_equal_accuracy": it_eq,
                    "converged_equal_accuracy": conv_eq,
                    "flops_equal_accuracy": flops_em(n, p, it_eq),
                    "seconds_equal_accuracy": sec_eq,
                }
            for r, sec in enumerate(seconds[p, method] or [np.nan]):  # NaN: run once, untimed
                rows.append(
                    {
                        "panel": "complexity",
                        "method": method,
                        "p": p,
                        "n": n,
                        "repeat": r,
                        "flops": flops,
                        "seconds": sec,
                        "matvecs": m,
                        # agreement with the covariance eigenvector (20 EM iterations need not converge)
                        "cos_to_eigenvector": np.nan if v_m is None else abs(float(v_m @ v)),
                        **extra,
                    }
                )
    return rows


# --------------------------------------------------------------------------- Fig. 2's CSV: sizes and slopes
SLOPE_MIN_P = 512
#: Counted-operation slopes from this p: above 64 MiB of data (``repro._chunked.COPY_LIMIT_BYTES``; n = 10p,
#: p >= 1024) ``em_pca`` reads the data with its fused kernel at every size, 6np flops per pass (the centring
#: on the fly, twice per entry), below it it multiplies a centred copy with BLAS, 4np: a constant factor
#: between two code paths, which a slope across the switch (p = 512 to 1024) would read as order (2.28).
COUNT_MIN_P = 1024
FLOPS_MIN_P = 100
#: Slopes are called against the midpoint between the two hypotheses (2 = O(np), 3 = O(np^2)
#: with n = 10p), with a band of +/- 6 % (2.36-2.65) inside which the measurement is too close to call.
SLOPE_SPLIT = 2.5
SLOPE_MARGIN = 0.06


def complexity(df: pd.DataFrame, *, timing_sizes: bool = False) -> pd.DataFrame:
    """One row per method and p: the median time over the repeats (older CSVs: one row already).

    Only the operation-count grid unless ``timing_sizes`` (then also the sizes timed beyond it).
    """
    cx = df[df.panel == "complexity"]
    if not timing_sizes and "timing_only" in cx:
        cx = cx[~cx.timing_only.astype(str).str.lower().eq("true")]
    agg = {c: "first" for c in cx.columns if c not in ("panel", "method", "p", "seconds", "repeat")}
    agg["seconds"] = "median"
    return cx.groupby(["method", "p"], as_index=False).agg(agg)


def slope_points(d: pd.DataFrame, min_p: int = SLOPE_MIN_P) -> pd.DataFrame:
    if d.p[d.p >= min_p].nunique() >= 2:
        return d[d.p >= min_p]
    return d[d.p >= sorted(d.p.unique())[-2]]


def flops_slope(df: pd.DataFrame, method: str) -> float:
    """Log-log slope of the operation count against p, p >= 100 (analytic: a formula, not a measurement)."""
    d = slope_points(complexity(df)[lambda t: t.method == method].sort_values("p"), FLOPS_MIN_P)
    return float(np.polyfit(np.log(d.p.to_numpy(float)), np.log(d.flops.to_numpy(float)), 1)[0])


def timing_frame(df: pd.DataFrame) -> pd.DataFrame:
    cx = slope_points(df[df.panel == "complexity"])
    if "repeat" not in cx or cx.repeat.isna().all():
        cx = cx.assign(repeat=0)
    return cx.pivot_table(index=["p", "repeat"], columns="method", values="seconds").reset_index()


def time_slopes(df: pd.DataFrame, method: str) -> np.ndarray:
    """Bootstrap slopes of a method's measured time against p (p >= 100)."""
    t = timing_frame(df)
    return boot_slopes(t.p, t[method])


def ratio_slopes(df: pd.DataFrame) -> np.ndarray:
    """Bootstrap slopes of the time ratio covariance + diag. / EM (same repeat) against p."""
    t = timing_frame(df)
    return boot_slopes(t.p, t["Sample Covariance + Diag."] / t["EM method"])


def slope_text(call) -> str:
    """``"2.21 (bootstrap 95% 2.13-2.38)"``: median and central 95% of bootstrap slopes."""
    return f"{call.median:.2f} (bootstrap 95% {call.low:.2f}-{call.high:.2f})"


def counted_slope(df: pd.DataFrame, method: str) -> tuple[float, list[int]]:
    """Log-log slope of a method's counted flops against p over the sizes from ``COUNT_MIN_P`` (the last
    two in ``--quick``), and those sizes."""
    cx = slope_points(df[df.panel == "complexity"], COUNT_MIN_P)
    d = cx[cx.method == method].groupby("p").counted_flops.first().dropna().sort_index()
    ps = d.index.to_numpy(float)
    return float(np.polyfit(np.log(ps), np.log(d.to_numpy(float)), 1)[0]), [int(x) for x in ps]


def call_order(slope: float, expected: float) -> str:
    """Verdict of a counted-operation slope against the midpoint between O(np) and O(np^2).

    Rule (fixed before the counted run): reproduced when the slope is on the expected order's
    side of ``SLOPE_SPLIT`` (2.5, midway between 2 = O(np) and 3 = O(np^2) with n = 10p) by more than
    ``SLOPE_MARGIN`` (outside 2.36-2.65), not reproduced when as far on the other side, too close to call
    in between. A count does not vary between runs; the band is for sizes too small for the leading term.

    Examples
    --------
    >>> call_order(2.0, 2.0), call_order(2.98, 3.0), call_order(2.98, 2.0), call_order(2.5, 3.0)
    ('reproduced', 'reproduced', 'not reproduced', 'too close to call')
    """
    lo, hi = SLOPE_SPLIT / (1.0 + SLOPE_MARGIN), SLOPE_SPLIT * (1.0 + SLOPE_MARGIN)
    if slope < lo:
        return REPRODUCED if expected < SLOPE_SPLIT else NOT_REPRODUCED
    if slope > hi:
        return REPRODUCED if expected > SLOPE_SPLIT else NOT_REPRODUCED
    return TOO_CLOSE


# --------------------------------------------------------------------------- roweis1997_claims: the parts
# One function per part of the experiment (the ``part`` column of its CSV; the protocol is its docstring),
# each returning that part's rows.
ETA_GRID = (0.0003, 0.001, 0.003, 0.01)  # Sanger's rule: learning rates c / lambda_1


# --------------------------------------------------------------------------- iterations at scale
def datasets(cfg):
    if cfg.quick:
        yield "synthetic 4000 x 200 (j^-1)", gaussian(cfg.rng(0, 0), 4000, 1.0 / np.arange(1, 201), False)
        return
    from data_fetch import load_cbcl_faces, load_mnist

    yield "CBCL faces 2429 x 361", load_cbcl_faces().X / 255.0
    yield "MNIST train 60000 x 784", load_mnist("train").X / 255.0
    lam = 1.0 / np.arange(1, 1001)
    yield "synthetic 20000 x 1000 (j^-1)", gaussian(cfg.rng(0, 1), 20_000, lam, False)
    yield "synthetic 200000 x 1000 (j^-1)", gaussian(cfg.rng(0, 2), 200_000, lam, False)


def iteration_rows(cfg) -> list[dict]:
    rows = []
    for name, X in _common.progress(datasets(cfg), "claims: iterations"):
        V, lam = exact_subspace(X, 11)
        for k in (1, 10):
            starts = 3 if X.shape[0] <= 5000 else 1
            for s in range(starts):
                it, ok, sec = iters_to(X, V[:, :k], k, s, max_iter=300)
                rows.append(
                    {
                        "part": "iterations",
                        "dataset": name,
                        "n": X.shape[0],
                        "p": X.shape[1],
                        "k": k,
                        "seed": s,
                        "iterations": it,
                        "reached": ok,
                        "seconds": sec,
                        "gap_ratio": lam[k] / lam[k - 1],
                    }
                )
        del X
    return rows


# --------------------------------------------------------------------------- storage
def storage_rows(cfg) -> list[dict]:
    if cfg.quick:
        grid = [("n", n, 100, 4) for n in (1000, 4000)] + [("p", 2000, p, 4) for p in (100, 400)]
        grid += [("k", 2000, 400, k) for k in (1, 8)]
    else:
        grid = [("n", n, 500, 5) for n in (5000, 20_000, 80_000)]
        grid += [("p", 5000, p, 5) for p in (250, 500, 1000, 2000)]
        grid += [("k", 5000, 1000, k) for k in (1, 5, 20, 50)]
    rows = []
    for vary, n, p, k in _common.progress(grid, "claims: storage"):
        peak = peak_bytes(n, p, k)
        rows.append(
            {
                "part": "storage",
                "vary": vary,
                "n": n,
                "p": p,
                "k": k,
                "block_rows": 100,
                "peak_bytes": peak,
                "data_bytes": 8 * n * p,
            }
        )
    return rows


# --------------------------------------------------------------------------- global convergence
def three_spectra(p: int, rng) -> dict[str, np.ndarray]:
    spiked = np.ones(p)
    spiked[:5] += np.array([10.0, 8.0, 6.0, 5.0, 4.0])
    return {
        "spiked": spiked,
        "power law j^-1": 1.0 / np.arange(1, p + 1),
        "uniform (0, 1)": rng.uniform(0, 1, p),
    }


def global_rows(cfg) -> list[dict]:
    n, p = 500, 50
    starts = 4 if cfg.quick else 40
    rows = []
    for si, (spec, lam) in enumerate(three_spectra(p, cfg.rng(2, 0)).items()):
        X = gaussian(cfg.rng(2, 1, si), n, lam)
        V, w = exact_subspace(X, 10)
        for k in (3,) if cfg.quick else (3, 5):
            inits = [("random", None, s) for s in range(starts)]
            for s in range(1 if cfg.quick else 5):
                C0 = V[:, k : 2 * k] + 1e-6 * cfg.rng(2, 2, si, k, s).standard_normal((p, k))
                inits.append(("near saddle", C0.T, s))
            for kind, init, s in inits:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    res = em_pca(
                        X, k, tol=1e-10, max_iter=20_000, random_state=1000 + s, init=init, n_oversamples=0
                    )
                rows.append(
                    {
                        "part": "global",
                        "spectrum": spec,
                        "k": k,
                        "start": kind,
                        "seed": s,
                        "iterations": res.n_iter,
                        "reached": bool(res.converged),
                        "sin_to_exact": subspace_sin(res.components.T, V[:, :k]),
                        "gap_ratio": w[k] / w[k - 1],
                    }
                )
    return rows


# --------------------------------------------------------------------------- power iteration
def power_rows(cfg) -> list[dict]:
    n, p, T = 400, 60, 30
    X = gaussian(cfg.rng(3, 0), n, cfg.rng(3, 2).uniform(0.0, 1.0, p))  # footnote 5: slow convergence
    Xc = X - X.mean(axis=0)
    S = Xc.T @ Xc / (n - 1)
    rows = []
    for k in (1, 3):
        V, _ = exact_subspace(X, k)
        C0 = cfg.rng(3, 1, k).standard_normal((p, k))
        em_iter = []

        def cb(t, C, lam, em_iter=em_iter):
            em_iter.append(np.array(C, copy=True))
            return False

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            em_pca(X, k, tol=0.0, max_iter=T, init=C0.T, callback=cb, n_oversamples=0)
        Q = np.linalg.qr(C0)[0]
        for t, C in enumerate(em_iter):
            if t > 0:
                Q = np.linalg.qr(S @ Q)[0]  # orthogonal (power) iteration on the covariance
            rows.append(
                {
                    "part": "power",
                    "k": k,
                    "iteration": t,
                    "sin_em_power": subspace_sin(C, Q),
                    "sin_em_exact": subspace_sin(C, V),
                }
            )
    return rows


# --------------------------------------------------------------------------- Sanger's rule
def sanger_rows(cfg) -> list[dict]:
    n, p, max_passes = 1000, 30, 60
    seeds = 1 if cfg.quick else 3
    spectra = {k: v for k, v in three_spectra(p, cfg.rng(4, 0)).items() if k != "uniform (0, 1)"}
    if cfg.quick:
        spectra = {"spiked": spectra["spiked"]}
    rows = []
    for spec, lam in spectra.items():
        for s in range(seeds):
            X = gaussian(cfg.rng(4, 1, s, len(spec)), n, lam)
            Y = X - X.mean(axis=0)
            V, w = exact_subspace(X, 3)
            for k in (1, 3):
                it, ok, _ = iters_to(X, V[:, :k], k, s, max_iter=2000)
                rows.append(
                    {
                        "part": "sanger",
                        "spectrum": spec,
                        "seed": s,
                        "k": k,
                        "method": "EM",
                        "eta": np.nan,
                        "passes": it,
                        "reached": ok,
                    }
                )
                for c in ETA_GRID if not cfg.quick else ETA_GRID[1:3]:
                    t, ok = gha_passes(Y, V[:, :k], k, c / w[0], cfg.rng(4, 2, s, k), max_passes)
                    rows.append(
                        {
                            "part": "sanger",
                            "spectrum": spec,
                            "seed": s,
                            "k": k,
                            "method": "GHA",
                            "eta": c,
                            "passes": t,
                            "reached": ok,
                        }
                    )
    return rows


# --------------------------------------------------------------------------- eigenvalue ratios, k = 3
def ratio_rows(cfg) -> list[dict]:
    n, p, k = 400, 40, 3
    rows = []
    for r in range(10 if cfg.quick else 60):
        rng = cfg.rng(5, r)
        X = gaussian(rng, n, rng.uniform(0.0, 1.0, p))
        V, w = exact_subspace(X, k + 1)
        it, ok, _ = iters_to(X, V[:, :k], k, r, max_iter=20_000)
        rows.append(
            {
                "part": "ratio",
                "run": r,
                "k": k,
                "iterations": it,
                "reached": ok,
                "ratio_k": w[k - 1] / w[k],
                "ratio_1": w[0] / w[1],
            }
        )
    return rows


# --------------------------------------------------------------------------- SPCA cost
def spca_rows(cfg) -> list[dict]:
    if cfg.quick:
        grid = [("n", n, 50, 3) for n in (500, 1000, 2000)] + [("p", 1000, p, 3) for p in (25, 50, 100)]
        grid += [("k", 1000, 100, k) for k in (2, 4, 8)]
        repeats = 3
    else:
        grid = [("n", n, 200, 5) for n in (2000, 8000, 32_000)]
        grid += [("p", 8000, p, 5) for p in (100, 200, 400, 800)]
        grid += [("k", 8000, 400, k) for k in (2, 4, 8, 16)]
        repeats = 5
    data = {}
    for _, n, p, _ in grid:
        if (n, p) not in data:
            data[n, p] = cfg.rng(6, n, p).standard_normal((n, p)) / np.sqrt(np.arange(1, p + 1))
    rows = []
    counted = {(n, p, k): spca_counted_per_iter(data[n, p], k) for _, n, p, k in grid}  # untimed
    with threadpool_limits(1):
        for r in _common.progress(range(repeats), "claims: SPCA cost"):
            for vary, n, p, k in grid:  # interleaved: every configuration once per repeat
                t_long = spca_seconds(data[n, p], k, 12)
                t_short = spca_seconds(data[n, p], k, 2)
                rows.append(
                    {
                        "part": "spca_cost",
                        "vary": vary,
                        "n": n,
                        "p": p,
                        "k": k,
                        "repeat": r,
                        "seconds_per_iter": max(t_long - t_short, 1e-9) / 10.0,
                        "counted_flops_per_iter": counted[n, p, k],
                    }
                )
    return rows


# --------------------------------------------------------------------------- slopes
def boot_slopes(x, y, *, n_boot: int = 400, seed: int = 0) -> np.ndarray:
    """Log-log slopes of ``y`` against ``x`` through the per-``x`` medians of bootstrap resamples.

    ``y`` holds repeated measurements, several per value of ``x``. Each resample draws, for every ``x``,
    as many of its measurements as there are, with replacement, takes their median and fits the slope:
    the spread of these slopes is that of the median-based slope, which one slow spell of the
    machine moves far less than the slope of a single repeat. Fixed seed: a CSV always gives the same
    samples.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    xs = np.unique(x)
    lx = np.log(xs)
    by = [np.log(y[x == v]) for v in xs]
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for b in range(n_boot):
        med = [np.median(t[rng.integers(0, t.size, t.size)]) for t in by]
        out[b] = np.polyfit(lx, med, 1)[0]
    return out
