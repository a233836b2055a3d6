"""Roweis (1997), Figure 2: time complexity and convergence behaviour of EM PCA.

Left: the cost of finding the leading eigenvector and eigenvalue against the dimensionality ``p`` with
``n = 10p`` points, for EM (exactly 20 iterations), sample covariance + diagonalization, sample covariance
only, and the snap-shot method (Sirovich 1987), as floating-point-operation counts (the paper used
MATLAB's ``flops``) and, in a second panel, as measured times. Right: the number of EM iterations until
``|<guess, true eigenvector>| >= 0.999`` against ``p`` (n = 10p), mean +/- one standard deviation.

Data (footnote 5): p eigenvalues drawn uniformly in a positive range, an axis-aligned covariance with those
variances, rotated by the orthonormal basis spanned by p - 1 standard normal points (completed by the
orthogonal complement: a full QR); then ``n = 10p`` points from ``N(0, Sigma)``. A fresh covariance and
data set for every run.

Choices the paper leaves open (and why)
---------------------------------------
* **Eigenvalue range**: uniform on (0, 1), MATLAB's ``rand`` ("some positive range"). A range [a, b] with
  a > 0 only moves the eigenvalues closer together relative to their size and slows EM further.
* **Operation counts** are derived from each algorithm's operations with 2 flops per multiply-add
  (MATLAB's convention): centring ``2np + p`` for every method; EM per iteration (the algorithm as printed,
  k = 1) e-step ``C'C`` (2p - 1), ``C'Y`` (n(2p - 1)), division (n), m-step ``YX'`` (p(2n - 1)), ``XX'``
  (2n - 1), division (p), i.e. ``4np + 2n + 2p - 2``, times 20, plus ``2np + n + 3p`` for the eigenvalue
  (variance of the projection); sample covariance ``p^2 (2n - 1) + p^2`` (``cov`` forms the full matrix);
  diagonalization with ARPACK Lanczos (``scipy.sparse.linalg.eigsh``, the successor of MATLAB's
  ``eigs``), counted as (number of matrix-vector products, measured) x ``(2p^2 - p + 4 p ncv)`` (product
  plus an upper bound on full reorthogonalization against ``ncv = 20`` Lanczos vectors); snap-shot: the
  ``n x n`` Gram matrix ``n^2 (2p - 1)``, Lanczos on it (same count with n), the back-projection
  ``p(2n - 1)`` and a normalization ``3p``.
* **Counted operations decide the cost-order claims** (``em-cost-knp``, ``covariance-cost-np2``).
  "The EM algorithm's complexity is limited by O(knp) per iteration" and "O(np^2)" for the covariance are
  statements about operations, and the paper measured them as such (MATLAB's ``flops``, a counter of the
  operations executed: the left panel). Column ``counted_flops``: for EM, the flops of every pass ``em_pca``
  made over the data in one untimed run, counted at the shapes of the calls (:func:`counted_em_flops`,
  :mod:`experiments._opcount`); for the covariance route, the centring, ``Yc'Yc`` as NumPy computes it
  (``syrk``, one triangle: ``n p (p + 1)``), the division and the Lanczos products ARPACK asked for
  (counted) with its orthogonalization bounded (:func:`counted_cov_flops`). The slope of the counts over ``p
  = 1024, 2048`` (``COUNT_MIN_P``: one code path of ``em_pca``, the fused kernel on data above 64 MiB; at
  ``p = 512`` it multiplies a centred copy, 4np flops per pass against the kernel's 6np, and a slope across
  that switch would read the constant factor 1.5 as order: 2.28 over 512-2048) is called against 2.5 with
  the +/- 6 % band (:func:`call_order`); a count does not move with the machine's load, where the measured
  times did: a full run on another 2-core machine of the same kind moved EM's time slope from 2.28 to 2.37
  (band edge 2.36) and the covariance/EM time-ratio slope from 0.78 to 0.59 (edge 0.65), turning both
  verdicts from reproduced to too close to call. EM's passes are memory-bound (their time per flop depends
  on the cache, on what runs on the other core and, at ``p = 512``, on the data fitting a centred copy below
  64 MiB where larger arrays are read by the fused kernel), while ``syrk`` is compute-bound. The times stay
  in the CSV, the figure and the rows' text, reported beside the counts; these two rows are not timing rows.
* **Measured times** (the second panel, NOT IN THE PAPER; the timing claims): 5 interleaved repeats (3 in
  ``--quick``; every repeat times every size and every method once, the method order rotating, one row per
  repeat in the CSV), as the **CPU time of this process** with single-threaded BLAS (``threadpoolctl``; the
  claims are about work, and the wall clock adds the load of other processes), of:
  ``em_pca(max_iter=20, tol=0)``; centring + ``Yc'Yc/(n-1)``; that + ``eigsh(k=1)``; centring +
  ``Yc Yc'`` + ``eigsh`` + back-projection. The figure shows medians relative to the EM time at the
  smallest p. Before the counts, the cost-order claims used log-log slopes over ``p >= 512`` (``SLOPE_MIN_P``)
  through the per-size medians, with quartiles from 400 bootstrap resamples of the repeats, and time
  ratios measured within a repeat; they are decided with :func:`experiments.runner.claims.call_timing`
  and its too-close-to-call band. **Sizes for the slopes** (ours): below ``p = 512`` the measured slopes
  are pulled toward each other (the covariance's BLAS-3 speed still grows with size and its Lanczos step
  has a fixed overhead; EM's matrix-vector products fall out of cache), so that over ``p = 128..1024``
  the time ratio covariance/EM did not grow at all and both claims were too close to call in every run.
  EM and the covariance + diagonalization are therefore also timed at ``p = 2048`` (``TIMING_EXTRA_P``,
  ``n = 20480``; not on the operation-count grid, rows ``timing_only``), and the slopes use
  ``p = 512, 1024, 2048``, where both are in their asymptotic regimes. **Cost** (ours): the snap-shot
  method is timed up to ``p = 256`` only (``SNAPSHOT_MAX_P``; at ``p = 1024`` forming its ``n x n`` Gram
  matrix took 10 s per repeat, two thirds of the experiment), where its time ratio to the covariance is
  already 50-60x against the 1.15x the claim needs; above, its Lanczos product count for the
  operation-count panel comes from the same Lanczos run with the Gram matrix applied implicitly (the
  same counts, 91 and 121 at p = 256 and 512, as forming it). The covariance alone is not timed at
  ``p = 2048`` (no claim uses it there).
* **Not run alone** (``RUN_ALONE = False``): the cost orders are decided on
  counted operations, which a neighbour cannot move, and the one timing row (snap-shot / covariance time)
  reads 56-61x against a goal of 1x with a band of 15%. EM's matrix-vector products are memory-bound, so
  the experiment on the other core (sharing the 32 MiB L3 cache and the memory bus) moves the time slopes
  reported beside the counts (EM 2.10 vs 2.28, ratio 0.85 vs 0.67 between two full runs of the same
  code); no verdict reads them. A full run with other processes busy on both cores (669 s against
  91 s alone) gave all 6 verdicts of the ledger and a snap-shot ratio of 56.0x (ledger
  58.9x); ``repro verify --quick`` with one BLAS thread moved no number. Running it alone had cost the
  parallel full run about 91 s with the other core idle.
* **Equal accuracy** (claim ``em-more-favourable``): the same EM, from a random start, run until
  ``|cos|`` to the covariance method's eigenvector is at least 0.999 (the paper's criterion); its
  operation count uses the iterations it needed (``iters_equal_accuracy``, ``flops_equal_accuracy``).
* **Runs**: the paper shows "one standard deviation across many runs" without the number; 20 runs per p
  here (4 in ``--quick``), p = 10, 50, 100, ..., 450. EM starts from ``C`` with standard normal entries
  (MATLAB ``randn``) and the inner product uses the normalized guess ``C/|C|``. As a diagnostic the CSV
  also records when the *unnormalized* ``|<C, v>|`` first reaches 0.999 (``iterations_unnormalized``), one
  possible reading of the paper's criterion.
* Grid for the left panel: p = 16, 32, ..., 1024 (16..128 in ``--quick``). Seeds: ``cfg.rng(1, p, r)``
  for run r at dimension p (right), ``cfg.rng(0, p)`` (left).
"""

from __future__ import annotations

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.sparse.linalg
import scipy.stats
from threadpoolctl import threadpool_limits

from experiments._opcount import count_data_passes
from experiments.runner import _common
from experiments.runner.claims import (
    NOT_REPRODUCED,
    PARTIAL,
    REPRODUCED,
    TOO_CLOSE,
    Claim,
    Outcome,
    call_timing,
)
from repro import ConvergenceWarning
from repro.em_pca import em_pca

RUN_ALONE = False  # verdicts on counted operations and a 50x ratio: a neighbour moves reported slopes
TITLE = "Roweis (1997) Fig. 2: cost and convergence of EM PCA against the dimensionality"

EM_ITERS = 20
NCV = 20
TARGET_COS = 0.999
METHODS = ("EM method", "Sample Covariance + Diag.", "Sample Covariance only", "Snap-shot method")
STYLE = {
    "EM method": {"color": "tab:blue", "marker": "+", "markersize": 7},
    "Sample Covariance + Diag.": {"color": "black", "marker": "o", "markerfacecolor": "none"},
    "Sample Covariance only": {"color": "0.45", "marker": "x"},
    "Snap-shot method": {"color": "tab:red", "marker": "s", "markerfacecolor": "none"},
}
SLOPE_MIN_P = 512
#: Counted-operation slopes from this p: above 64 MiB of data (``repro._chunked.COPY_LIMIT_BYTES``; n = 10p,
#: p >= 1024) ``em_pca`` reads the data with its fused kernel at every size, 6np flops per pass (the centring
#: on the fly, twice per entry), below it it multiplies a centred copy with BLAS, 4np: a constant factor
#: between two code paths, which a slope across the switch (p = 512 to 1024) would read as order (2.28).
COUNT_MIN_P = 1024
FLOPS_MIN_P = 100
TIMING_REPEATS = 5
#: Sizes timed beyond the operation-count grid (EM and the two covariance methods only): the measured-time
#: slopes need sizes where both are in their asymptotic regime (module docstring).
TIMING_EXTRA_P = (2048,)
#: The snap-shot method (an n x n Gram matrix, n = 10p) is timed in every repeat up to this p only; above it
#: its Lanczos product count (the operation-count panel) comes from the same Lanczos run on the Gram matrix
#: applied implicitly, Yc (Yc' x), without forming it (:func:`snapshot_matvecs`).
SNAPSHOT_MAX_P = 256
EQUAL_ACCURACY_MAX_ITER = 100_000
#: Measured-time slopes are called against the midpoint between the two hypotheses (2 = O(np), 3 = O(np^2)
#: with n = 10p), with a band of +/- 6 % (2.36-2.65) inside which the measurement is too close to call.
SLOPE_SPLIT = 2.5
SLOPE_MARGIN = 0.06


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


# --------------------------------------------------------------------------- flop counts
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
    """Flops of the EM method (:func:`_methods`) counted on its code path: every pass ``em_pca`` makes
    over the data, at the shapes of the calls (:func:`experiments._opcount.count_data_passes`).

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
    """Flops of the covariance route at the shapes :func:`_methods` calls, with ``m`` counted Lanczos
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


def _eigsh(A, rng):
    """Leading eigenpair of ``A`` (array or operator) by ARPACK Lanczos, with the number of products."""
    op = _Counting(A)
    v0 = rng.standard_normal(A.shape[0])
    w, V = scipy.sparse.linalg.eigsh(op, k=1, which="LA", ncv=min(NCV, A.shape[0] - 1), v0=v0)
    return float(w[0]), V[:, 0], op.count


# --------------------------------------------------------------------------- compute
def _methods(Y: np.ndarray):
    """The four ways of finding the leading eigenvector of ``Y`` (rows = points), as callables."""
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
        _, v, m = _eigsh(cov(), np.random.default_rng(1))
        return v, m

    def snapshot():
        Yc = Y - Y.mean(axis=0)
        _, u, m = _eigsh(Yc @ Yc.T, np.random.default_rng(2))
        v = Yc.T @ u
        return v / np.linalg.norm(v), m

    return {
        "EM method": em,
        "Sample Covariance + Diag.": cov_diag,
        "Sample Covariance only": cov,
        "Snap-shot method": snapshot,
    }


def _em_to_accuracy(Y: np.ndarray, v: np.ndarray, seed: int) -> tuple[int, bool, float]:
    """EM (k = 1) from a random start until |cos(guess, v)| >= 0.999; returns (iterations, ok, seconds)."""

    def cb(t, C, lam):
        c = C[:, 0]
        return abs(float(c @ v)) / float(np.linalg.norm(c)) >= TARGET_COS

    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = em_pca(Y, 1, tol=0.0, max_iter=EQUAL_ACCURACY_MAX_ITER, random_state=seed, callback=cb)
    return res.n_iter, bool(res.converged), time.process_time() - t0


def _timed(p: int, method: str, quick: bool) -> bool:
    """Whether ``method`` is timed in every repeat at size ``p`` (module docstring)."""
    if method == "Snap-shot method":
        return quick or p <= SNAPSHOT_MAX_P
    return method != "Sample Covariance only" or p not in TIMING_EXTRA_P


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
    >>> v_full, m_full = _methods(Y)["Snap-shot method"]()
    >>> bool(abs(v @ v_full) > 1 - 1e-8), m > 0
    (True, True)
    """
    Yc = Y - Y.mean(axis=0)
    n = Yc.shape[0]
    op = scipy.sparse.linalg.LinearOperator(
        (n, n), matvec=lambda x: Yc @ (Yc.T @ x.ravel()), matmat=lambda X: Yc @ (Yc.T @ X), dtype=np.float64
    )
    _, u, m = _eigsh(op, np.random.default_rng(2))
    v = Yc.T @ u
    return v / np.linalg.norm(v), m


def _complexity_rows(cfg: _common.Config) -> list[dict]:
    grid = [16, 32, 64, 128] if cfg.quick else [16, 32, 64, 128, 256, 512, 1024]
    timing_only = [] if cfg.quick else list(TIMING_EXTRA_P)
    repeats = 3 if cfg.quick else TIMING_REPEATS
    data = {p: sample_data(p, cfg.rng(0, p)) for p in grid + timing_only}
    fns = {p: _methods(Y) for p, Y in data.items()}
    seconds = {(p, m): [] for p in data for m in METHODS}
    outs = {}
    with threadpool_limits(1):  # single-threaded BLAS: steadier under load, like MATLAB in 1997
        for p in grid:  # where the snap-shot method is not timed: its product count, Gram matrix implicit
            if not _timed(p, "Snap-shot method", cfg.quick):
                outs[p, "Snap-shot method"] = snapshot_matvecs(data[p])
        # interleaved: every repeat times every size and every method once, the method order rotating,
        # so that a slow spell of the machine hits all of them instead of one curve; CPU time of this
        # process (single-threaded), so that other processes do not enter
        for r in _common.progress(range(repeats), "fig2 complexity (repeats)"):
            for p in data:
                order = METHODS[r % len(METHODS) :] + METHODS[: r % len(METHODS)]
                for method in order:
                    if not _timed(p, method, cfg.quick):
                        continue
                    t0 = time.process_time()
                    out = fns[p][method]()
                    seconds[p, method].append(time.process_time() - t0)
                    outs[p, method] = out
        eq = {p: _em_to_accuracy(data[p], outs[p, "Sample Covariance + Diag."][0], int(p)) for p in grid}
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


def _convergence_rows(cfg: _common.Config) -> list[dict]:
    grid = [10, 20, 40] if cfg.quick else [10, 50, 100, 150, 200, 250, 300, 350, 400, 450]
    runs = 4 if cfg.quick else 20
    rows = []
    for p in _common.progress(grid, "fig2 convergence"):
        for r in range(runs):
            rng = cfg.rng(1, p, r)
            Y = sample_data(p, rng)
            n = Y.shape[0]
            Yc = Y - Y.mean(axis=0)
            w, V = np.linalg.eigh(Yc.T @ Yc / (n - 1))
            v = V[:, -1]
            c0 = rng.standard_normal(p)
            first_unnorm = [None]

            def cb(t, C, lam, v=v, first_unnorm=first_unnorm):
                c = C[:, 0]
                dot = abs(float(c @ v))
                if first_unnorm[0] is None and dot >= TARGET_COS:
                    first_unnorm[0] = t
                return dot / float(np.linalg.norm(c)) >= TARGET_COS

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                res = em_pca(Y, 1, init=c0[None, :], tol=0.0, max_iter=20_000, callback=cb)
            rows.append(
                {
                    "panel": "convergence",
                    "method": "EM method",
                    "p": p,
                    "n": n,
                    "run": r,
                    "iterations": res.n_iter,
                    "converged": bool(res.converged),
                    "iterations_unnormalized": first_unnorm[0],
                    "eig_ratio": w[-1] / w[-2],
                }
            )
    return rows


def compute(cfg: _common.Config) -> pd.DataFrame:
    return pd.DataFrame(_complexity_rows(cfg) + _convergence_rows(cfg))


# --------------------------------------------------------------------------- plot
def _complexity(df: pd.DataFrame, *, timing_sizes: bool = False) -> pd.DataFrame:
    """One row per method and p: the median time over the repeats (older CSVs: one row already).

    Only the operation-count grid unless ``timing_sizes`` (then also the sizes timed beyond it).
    """
    cx = df[df.panel == "complexity"]
    if not timing_sizes and "timing_only" in cx:
        cx = cx[~cx.timing_only.astype(str).str.lower().eq("true")]
    agg = {c: "first" for c in cx.columns if c not in ("panel", "method", "p", "seconds", "repeat")}
    agg["seconds"] = "median"
    return cx.groupby(["method", "p"], as_index=False).agg(agg)


def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, axes = plt.subplots(1, 3, figsize=(11.0, 4.4))
    for ax, col, title, ylabel in (
        (axes[0], "flops", "Time Complexity (operation counts)", "floating point operations"),
        (axes[1], "seconds", "Time measured (NOT IN THE PAPER)", "time relative to EM at smallest p"),
    ):
        cx = _complexity(df, timing_sizes=col == "seconds")
        ref = cx[(cx.method == "EM method")].sort_values("p")["seconds"].iloc[0]
        for method in METHODS:
            d = cx[(cx.method == method) & cx[col].notna()].sort_values("p")
            y = d[col] if col == "flops" else d[col] / ref
            ax.loglog(d.p, y, "-", label=method, **STYLE[method])
            if method == "EM method" and "flops_equal_accuracy" in d:
                d = d[d.flops_equal_accuracy.notna()]
                y = d.flops_equal_accuracy if col == "flops" else d.seconds_equal_accuracy / ref
                ax.loglog(d.p, y, ":", color="tab:blue", marker="+", label="EM to |cos| >= 0.999")
        ax.set_xlabel("dimensionality p (n = 10p)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
    axes[1].set_title("Time measured (NOT IN THE PAPER)", color="darkred")
    # one legend for the two complexity panels, under them, so that no curve is covered
    h, lab = axes[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", bbox_to_anchor=(0.34, 0.07), ncol=3, fontsize=7, frameon=False)
    cv = df[df.panel == "convergence"]
    g = cv.groupby("p")
    # mean +/- one standard deviation, as the paper's error bars; the counts are skewed over decades, so
    # the lower bar is cut at 0.5 iterations on this log axis; the median is drawn too
    mean, sd = g.iterations.mean(), g.iterations.std().fillna(0.0)
    med = g.iterations.median()
    ax = axes[2]
    ax.plot(cv.p, np.maximum(cv.iterations, 0.5), ".", color="tab:blue", alpha=0.25, markersize=3)
    ax.errorbar(
        mean.index,
        mean.values,
        yerr=[(mean - np.maximum(mean - sd, 0.5)).values, sd.values],
        fmt="-o",
        capsize=2,
        color="tab:blue",
        label="EM to |<C/|C|, v>| >= 0.999: mean +/- 1 sd\n(as the paper; cut at 0.5); dots: runs",
    )
    ax.plot(med.index, med.values, "s", color="navy", ms=3.5, label="median")
    un = g.iterations_unnormalized.mean()
    ax.plot(
        un.index,
        np.maximum(un.values, 0.5),
        ":",
        marker="^",
        color="0.5",
        label="unnormalized |<C, v>| >= 0.999 (mean)",
    )
    ax.axhline(EM_ITERS, linestyle="--", color="black", linewidth=0.9, label="20 iterations (left panels)")
    ax.axhline(3.6, linestyle="-.", color="tab:red", linewidth=0.9, label="published mean 3.6")
    ax.set_yscale("log")
    ax.set_xlabel("dimensionality p (n = 10p)")
    ax.set_ylabel("iterations to convergence")
    ax.set_title("Convergence Behaviour")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), fontsize=6.5, ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    return fig


# --------------------------------------------------------------------------- claims
def _slope_points(d: pd.DataFrame, min_p: int = SLOPE_MIN_P) -> pd.DataFrame:
    if d.p[d.p >= min_p].nunique() >= 2:
        return d[d.p >= min_p]
    return d[d.p >= sorted(d.p.unique())[-2]]


def _flops_slope(df: pd.DataFrame, method: str) -> float:
    """Log-log slope of the operation count against p, p >= 100 (analytic: a formula, not a measurement)."""
    d = _slope_points(_complexity(df)[lambda t: t.method == method].sort_values("p"), FLOPS_MIN_P)
    return float(np.polyfit(np.log(d.p.to_numpy(float)), np.log(d.flops.to_numpy(float)), 1)[0])


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


def _timing_frame(df: pd.DataFrame) -> pd.DataFrame:
    cx = _slope_points(df[df.panel == "complexity"])
    if "repeat" not in cx or cx.repeat.isna().all():
        cx = cx.assign(repeat=0)
    return cx.pivot_table(index=["p", "repeat"], columns="method", values="seconds").reset_index()


def _time_slopes(df: pd.DataFrame, method: str) -> np.ndarray:
    """Bootstrap slopes of a method's measured time against p (p >= 100)."""
    t = _timing_frame(df)
    return boot_slopes(t.p, t[method])


def _ratio_slopes(df: pd.DataFrame) -> np.ndarray:
    """Bootstrap slopes of the time ratio covariance + diag. / EM (same repeat) against p."""
    t = _timing_frame(df)
    return boot_slopes(t.p, t["Sample Covariance + Diag."] / t["EM method"])


def _q(call) -> str:
    """``"2.21 (bootstrap 95% 2.13-2.38)"``: median and central 95% of bootstrap slopes."""
    return f"{call.median:.2f} (bootstrap 95% {call.low:.2f}-{call.high:.2f})"


def _counted_slope(df: pd.DataFrame, method: str) -> tuple[float, list[int]]:
    """Log-log slope of a method's counted flops against p over the sizes from ``COUNT_MIN_P`` (the last
    two in ``--quick``), and those sizes."""
    cx = _slope_points(df[df.panel == "complexity"], COUNT_MIN_P)
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


def _check_slope(method: str, expected: float, what: str):
    """Called on the counted operations of the code that ran (module docstring): is the slope of the
    method's flops against p nearer 2 = O(np) or 3 = O(np^2)? The measured times are reported beside."""

    def check(df: pd.DataFrame) -> Outcome:
        cs, sizes_c = _counted_slope(df, method)
        verdict = call_order(cs, expected)
        other = 3.0 if expected < SLOPE_SPLIT else 2.0
        cov_slope = _counted_slope(df, "Sample Covariance + Diag.")[0]
        em_slope = _counted_slope(df, "EM method")[0]
        lower = expected < SLOPE_SPLIT
        own = call_timing(
            _time_slopes(df, method), SLOPE_SPLIT, lower_is_better=lower, margin=SLOPE_MARGIN, bootstrap=True
        )
        sep = call_timing(_ratio_slopes(df), 0.5, lower_is_better=False, margin=0.3, bootstrap=True)
        tf = _timing_frame(df)
        reps = int(tf.repeat.nunique())
        sizes = ", ".join(str(p) for p in sizes_c)
        agree = {"met": "agree", "too close": "too close to call", "missed": "disagree"}
        return Outcome(
            f"counted-operation slope vs p {cs:.2f} (expected {expected:g}, alternative {other:g}; "
            f"covariance+diag./EM counted: {cov_slope - em_slope:.2f}); measured-time slope {_q(own)}, "
            f"time ratio covariance+diag./EM slope {_q(sep)} (reported, not decisive)",
            verdict,
            f"{what}. Decided on the floating-point operations counted on the code that ran, at p = {sizes} "
            "(n = 10p): for EM every pass em_pca made over the data, counted at the shapes of the calls "
            "(experiments._opcount); for the covariance route the centring, Yc'Yc by syrk and the Lanczos "
            "products ARPACK asked for (counted by the operator). The paper's own measure is an operation "
            "count (MATLAB's flops, Fig. 2 left), and a count does not move with the machine's load; the "
            f"slope is called against {SLOPE_SPLIT} (midway between 2 = O(np) and 3 = O(np^2) with n = 10p; "
            f"+/- {100 * SLOPE_MARGIN:.0f} % band, too close to call inside). The measured times are "
            f"reported beside ({reps} interleaved repeats per size, process CPU time, one BLAS thread; "
            "central 95% of 400 bootstrap resamples of the per-size medians): the method's time slope "
            f"against {SLOPE_SPLIT} and the slope of the covariance/EM time ratio against 0.5 (between 1, "
            f"the paper's orders, and 0) {agree[own.state]} / {agree[sep.state]} with the counted orders. "
            "They decided this row before the counts did, and two full runs of the same code moved them "
            "across their band edges (EM's time slope 2.28 -> 2.37 against 2.36, the ratio slope 0.78 -> "
            "0.59 against 0.65): EM's passes are memory-bound and its time per flop depends on the cache "
            "and on what runs beside it, while the covariance's syrk is compute-bound.",
        )

    return check


def _check_favourable(df: pd.DataFrame) -> Outcome:
    """Equal accuracy: EM run until |cos| to the covariance eigenvector >= 0.999 (the paper's criterion)."""
    cx = _complexity(df)
    em = cx[cx.method == "EM method"].set_index("p").sort_index()
    diag = cx[cx.method == "Sample Covariance + Diag."].set_index("p").sort_index()
    ratio_eq = diag.flops / em.flops_equal_accuracy  # > 1: EM cheaper at equal accuracy
    ratio_20 = diag.flops / em.flops
    p0, p1 = ratio_eq.index.min(), ratio_eq.index.max()
    slope = float(np.polyfit(np.log(ratio_eq.index.to_numpy(float)), np.log(ratio_eq.to_numpy(float)), 1)[0])
    its = em.iters_equal_accuracy
    cheaper, grows = bool(ratio_eq.loc[p1] > 1), bool(slope > 0)
    conv = bool(em.converged_equal_accuracy.astype(bool).all())
    verdict = REPRODUCED if cheaper and grows else (PARTIAL if cheaper or grows else NOT_REPRODUCED)
    verdict = verdict if conv else NOT_REPRODUCED
    return Outcome(
        f"equal accuracy (|cos| >= 0.999): covariance + diag. costs {ratio_eq.loc[p1]:.2f}x the EM "
        f"operations at p = {p1} ({ratio_eq.loc[p0]:.2f}x at p = {p0}; log-log slope of the ratio vs p "
        f"{slope:.2f}); "
        f"EM needed {int(its.loc[p0])} to {int(its.max())} iterations; with the figure's 20 iterations: "
        f"{ratio_20.loc[p1]:.1f}x",
        verdict,
        "Operation counts (the paper's measure), EM counted for the iterations it needed from a random start "
        f"to reach the covariance eigenvector to |cos| >= {TARGET_COS} (the paper's own criterion; the "
        "covariance method's Lanczos step reaches machine precision for little more than the cost of "
        "forming the covariance). Reproduced would need EM cheaper at the largest p and the advantage "
        "growing with p. With footnote 5's spectrum the gap lambda1/lambda2 - 1 shrinks like 1/p, so the "
        "iterations EM needs grow with p and eat the per-iteration advantage (np vs np^2) that the 20-"
        "iteration curve of Fig. 2 shows; measured time at equal accuracy is in the CSV "
        "(seconds_equal_accuracy) for information, not for the verdict.",
    )


def _check_iterations(df: pd.DataFrame) -> Outcome:
    cv = df[df.panel == "convergence"]
    cx = _complexity(df)
    cx_top = cx[cx.method == "EM method"].sort_values("p").iloc[-1]
    mean_all, sd_all = cv.iterations.mean(), cv.iterations.std(ddof=1)
    by = cv.groupby("p").iterations.mean()
    rho = scipy.stats.spearmanr(cv.p, cv.iterations)[0]
    growth = by.iloc[-1] / by.iloc[0]
    un = cv.iterations_unnormalized.astype(float)
    censored = int((~cv.converged.astype(bool)).sum())
    near = abs(mean_all - 3.6) <= 1.5
    flat = growth <= 2.0
    return Outcome(
        f"mean {mean_all:.1f} +/- {sd_all:.1f} over {len(cv)} runs; mean {by.iloc[0]:.1f} at "
        f"p = {by.index[0]}, {by.iloc[-1]:.1f} at p = {by.index[-1]} (Spearman rho vs p {rho:.2f}); "
        f"unnormalized criterion: mean {un.mean():.1f}",
        REPRODUCED if near and flat else (PARTIAL if near or flat else NOT_REPRODUCED),
        "With footnote 5's covariance the top eigenvalues of the sample covariance are close (ratio "
        f"lambda1/lambda2 median {cv.eig_ratio.median():.3f}), so EM, which contracts by lambda2/lambda1 per "
        "iteration, needs tens to hundreds of iterations from a random start, growing with p"
        + (f"; {censored} runs hit the 20000-iteration cap" if censored else "")
        + f". So the 20 iterations of the left panel do not converge either (|cos| to the eigenvector after "
        f"20 iterations at p = {cx_top.p}: {cx_top.cos_to_eigenvector:.2f}). Reading the criterion as the "
        "unnormalized inner product |<C, v>| (|C| grows from ~sqrt(p)) gives a few iterations instead, close "
        "to the published 3.6; which one the paper used is not stated.",
    )


def _check_ratio(df: pd.DataFrame) -> Outcome:
    cv = df[df.panel == "convergence"]
    x = 1.0 / np.log(cv.eig_ratio.to_numpy())
    rho = scipy.stats.spearmanr(x, cv.iterations)[0]
    rho_p = scipy.stats.spearmanr(cv.p, cv.iterations)[0]
    return Outcome(
        f"Spearman rho(iterations, 1/log(lambda1/lambda2)) = {rho:.2f} (vs p: {rho_p:.2f})",
        REPRODUCED if rho >= 0.5 else (PARTIAL if rho >= 0.3 else NOT_REPRODUCED),
        "Across all runs of the right panel; the eigenvalue ratio predicts the count better than p does "
        "when the first correlation is the larger.",
    )


def _check_snapshot(df: pd.DataFrame) -> Outcome:
    """The part that can fail: with n > p the snap-shot method is slower than forming the covariance."""
    fs = _flops_slope(df, "Snap-shot method")
    cx = df[df.panel == "complexity"]
    pmax = cx[(cx.method == "Snap-shot method") & cx.seconds.notna()].p.max()  # the largest p it is timed at
    top = cx[cx.p == pmax]
    if "repeat" not in top or top.repeat.isna().all():
        top = top.assign(repeat=0)
    t = top.pivot_table(index="repeat", columns="method", values="seconds")
    call = call_timing(t["Snap-shot method"] / t["Sample Covariance only"], 1.0, lower_is_better=False)
    costliest = _complexity(df).query("p == @pmax").set_index("method").flops.idxmax()
    return Outcome(
        f"at p = {pmax} (n = {10 * pmax}): snap-shot time / sample-covariance time {call.text('.1f', 'x')}; "
        f"operation-count slope {fs:.2f} (analytic), costliest by operations: {costliest}",
        call.verdict if costliest == "Snap-shot method" else NOT_REPRODUCED,
        "Decided on the measured time ratio against the covariance timed in the same repeats (median above "
        f"1 by more than {call.band_text()}: "
        "the snap-shot method is the one not to use when n > p). With n = 10p the "
        "n x n Gram matrix (n^2 p) costs 10x the covariance's np^2 operations; the operation-count slope "
        "follows from the formulas and is not evidence.",
    )


CLAIMS = [
    Claim(
        "em-cost-knp",
        "Sec. 3.1, Fig. 2: the EM algorithm's complexity is limited by O(knp) per iteration (with n = 10p: "
        "cost grows like p^2).",
        "O(knp): slope 2",
        _check_slope("EM method", 2.0, "EM: 20 x 4np"),
        # decided on counted operations, which do not depend on the machine: not a timing row
    ),
    Claim(
        "covariance-cost-np2",
        "Sec. 3.1, Fig. 2: methods that explicitly compute the sample covariance have complexities limited "
        "by O(np^2) (with n = 10p: p^3).",
        "O(np^2): slope 3",
        _check_slope("Sample Covariance + Diag.", 3.0, "covariance + Lanczos"),
        # decided on counted operations: not a timing row
    ),
    Claim(
        "snapshot-cost-n2p",
        "Sec. 3.1: the snap-shot method must compute and diagonalize a matrix of all inner products between "
        "points, O(n^2 p); one would not use it when n > p.",
        "O(n^2 p): slope 3",
        _check_snapshot,
        machine_dependent=True,
    ),
    Claim(
        "em-more-favourable",
        "Sec. 3.1: as expected, the EM algorithm scales more favourably in cases where k is small and both p "
        "and n are large.",
        "",
        _check_favourable,
    ),
    Claim(
        "iterations-constant-3.6",
        "Sec. 3.1, Fig. 2 (right): up to 450 dimensions (4500 datapoints), the number of iterations "
        "[until the inner product of guess and eigendirection is 0.999 or greater] remains roughly constant "
        "with a mean of 3.6.",
        "roughly constant, mean 3.6",
        _check_iterations,
    ),
    Claim(
        "eigenvalue-ratio-controls",
        "Sec. 3.1: the ratios of the first k eigenvalues seem to be the critical parameters controlling the "
        "number of iterations until convergence.",
        "",
        _check_ratio,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
