"""Benchmark of EM for sparse PCA (Sigg & Buhmann 2008): cost per iteration, cost of a whole cardinality path,
and scikit-learn's ``SparsePCA`` as the alternative a Python user would reach for.

All ratios are against references measured in the same run on the same data (CBCL faces standardized,
2429 x 361; Armstrong leukemia standardized, 72 x 12582), with BLAS limited to one thread for everything
(``threadpoolctl``; the library does the same, :func:`repro.set_blas_threads`), because on a
2-core machine busy with other processes multi-threaded BLAS timings of matrix-vector products are erratic.

Part A, per iteration (``part == "per_iteration"``): one EM iteration of
:func:`repro.em_sparse_pca.em_sparse_pca_path` (``K = 50``, a fixed random start, ``tol = 1e-300`` so it never
stops early) against the two BLAS products it cannot avoid, ``np.dot(A, w)`` and ``np.dot(A.T, y)`` on the
same C-contiguous scaled data ``A`` (:class:`repro.linalg.Covariance` ``.data``). On leukemia (``N < D``)
the library screens the iteration (see :mod:`repro.em_sparse_pca`: ``X w`` through the support, and of
``X'y`` only the entries a bound cannot rule out of the top ``K + 1``, a full product when it leaves too
many), so an iteration there can cost less than the two products; they stay the reference, as what an
unscreened iteration cannot avoid. The iteration cost is
``(t(T2) - t(T1)) / (i(T2) - i(T1))`` from the path's time and its iteration count (each the fastest of 3
runs), so set-up cancels; ``PAIRS`` = 21 interleaved pairs (in ``--quick`` too), each the reference and the
two path lengths next to each other, the order alternating. Both sides in CPU time of this process (the
goal is about work; one BLAS thread), the reference as the fastest of 3 timings of ``T2 - T1`` product
pairs. Goal: at most 1.3x, decided by :func:`experiments.runner.claims.call_paired` on the 21 per-pair
ratios (the 95% interval of their median beyond a 15% margin; docs/design.md): the row's history band (32%,
pooled with the leukemia value, whose screening changed between runs) no longer decides it. With 9
pairs the interval of a median spans ranks 2 to 8 of 9, nearly the whole sample; two
full runs of the same code read CBCL 1.00x (interval 0.92-1.02x) and 0.96x (0.93-1.11x), the second
0.02 from the 1.13x edge. 21 pairs narrow it to ranks 6 to 16 for about 5 s more.

Part B, whole path (``part == "path"``): wall time of ``em_sparse_pca_path(X, 1..Kmax, renormalize=False)``
(``Kmax`` = 361 on CBCL, 150 on leukemia; first-PC start included) divided by (total EM iterations x the two
products). Goal: at most 1.5. The same with ``renormalize=True`` (emPCAopt: one small eigenproblem per
``K``) is reported alongside, once, not part of the goal (its extra work is not EM iterations). 5 repeats,
each with the reference products timed just before the path (interleaved); both in CPU time of this process
(the goal is about work and every product runs on one thread, so CPU time is the work, and other processes
do not enter it), the reference as the fastest of 3 x 50 product pairs.

Part C, against scikit-learn (``part == "sklearn"``): ``sklearn.decomposition.SparsePCA(n_components=1)``
controls sparsity by an l1 penalty ``alpha``, so reaching a component with exactly ``K`` non-zeros needs a
search: :func:`sklearn_alpha_search` bisects ``alpha`` between 0 (dense) and the largest column norm (where
every loading is zero), starting from the ``(K+1)``-th largest magnitude of the first principal component's
scores ``|X'u_1|``, until the component has exactly ``K`` non-zeros, or a budget of fits is spent (then the
closest found is reported, with ``exact = False``). Its total time, all fits of the search included, is
compared with a cold call of :func:`repro.em_sparse_pca.em_sparse_pca` for that ``K``, and the variance
``w'Cw`` each reaches (both without renormalization), ``K`` in {10, 50, 100}. Budget per search (full run):
``SKLEARN_FITS`` fits (12 on CBCL, where every search ends within 10; 4 on leukemia, 1.5-2 s per fit),
``max_iter = SKLEARN_MAX_ITER`` per fit (its default is 1000; the fits seen here stop after 5-30
iterations), ``method="lars"`` (default), ``random_state=0``. The budget counts fits, not seconds: with a
5 s budget the fit at which a leukemia search stopped, and with it the component reported, depended on the
machine's speed (``K = 100``: nnz 1 after 3 fits in one full run, nnz 155 after 4 in the next).

On the leukemia data the number of non-zeros of SparsePCA's component is not continuous in ``alpha``: it
jumps between two local solutions (for ``K = 50``: 152 non-zeros at ``alpha = 7.36522``, 5 at ``7.36540``),
so no ``alpha`` gives ``K = 10`` or ``50`` there; the closest found is reported, and its variance ratio then
compares components of different cardinality.

Parts A and B measure the EM iteration through the data (``operator="data"``) from the paper's single start
(the principal component, ``init="pc"``), which is what their goals speak of; part D measures the defaults.

Part D, the nsprcomp table (``part == "nsprcomp"``): the 12 cells of the side-by-side table
of ``../shared/peers/compare_empca.sh`` (standardized CBCL faces and Armstrong leukemia, ``K`` in {10, 50,
100}, sparse and non-negative, first component). Like for like with nsprcomp (which always renormalizes,
5 restarts) our fit is ``EMSparsePCA(1, cardinality=K, nonneg=..., renormalize=True, random_state=0)``,
every other setting at its default (the operator chosen by shape: the ``D x D`` covariance on CBCL, formed
in float32 for the search, with the weights on the found support in float64,
the data on leukemia; the PC start, both signs when non-negative, plus random starts, 5 in all, run as one
block),
timed from the data matrix to the result; the default fit (``renormalize="refine"``) is timed next to it.
References timed in the same run, interleaved (``NSPRCOMP_REPEATS`` = 5 rounds; 2 in ``--quick``):

* ``block``: one product block through the data, ``A'(A W')`` for the 5 starts (``A`` the scaled centred
  data): ``ratio_block`` = our time in units of one such block (how many data passes the whole fit costs);
* ``plain``: a plain NumPy emPCA of the same starts (:func:`plain_empca`: sequential runs, ``np.dot`` for
  the products, ``np.partition`` for the threshold, renormalization by ``numpy.linalg.eigh`` on the support,
  or the same EM on the support when non-negative; the PC from ``numpy.linalg.eigh``): ``speedup_plain`` =
  its time / ours.

nsprcomp itself is run side by side when it is installed (R and the peers of ``../shared/peers/``, see
:mod:`experiments._peers`): one R process (:class:`experiments._peers.NsprcompSession`) holds both matrices,
and in each round one nsprcomp call (``set.seed(0); nsprcomp(X, ncomp=1, k=K, nneg=..., nrestart=5,
center=TRUE, scale.=FALSE)``, nsprcomp's defaults but ``k``/``nneg``, timed inside R after one untimed
warm-up call per cell) is made next to our fits, before or after them alternately, and its variance is
``w'Cw`` of the vector it returned (``nsprcomp_source = "live"``). Every time of part D is CPU time: the R
process's (``proc.time``, user + system, around the call) and this process's (``time.process_time``) for
our fits and the references, with one BLAS thread on both sides, so the claim is about work and other
processes do not enter the ratios (with wall time, other processes on both cores
spread single ratios over 2-4x and flipped verdicts between runs). CPU time does not shield the ratio
from what runs beside it, though: in two parallel full runs of the same code nsprcomp's CPU time per call
(CBCL K = 10 sparse) was 0.64 s and 0.23 s (12 cells: 2.8x to 1.6x more in the first), ours 13 ms in both,
depending on which experiment shared the machine (which resource the neighbour contends for was not
isolated), and the row's verdict changed. The benchmark therefore sets ``RUN_ALONE``: a parallel full run
runs it first, with nothing beside it. The recorded fallback times are wall times of an idle-machine run,
where the two clocks agree for single-threaded code. The speed claim
is decided per cell by :func:`experiments.runner.claims.call_timing` on the 5 same-run
ratios (a 15% band around 20x, which the range of the 5 ratios must clear, docs/design.md);
the verdict combines the 12 calls (all met: reproduced; any missed with any met: partly).
Without R (CI, the tests, ``--quick``) its times are the recorded ones of the last side-by-side run
(``experiments/peers_recorded/nsprcomp.csv``; ``nsprcomp_source = "recorded"``), with its recorded variance
in a full run; a ratio against a recorded time compares two runs, so the speed claim is then at most
*partly reproduced* and says so. In ``--quick`` (reduced data) only the five rows of the first
side-by-side table are run, and the nsprcomp variance is that of the EMSparsePCA of that time (the PC
start for sparse, 10 random starts for non-negative, best by EM variance, then renormalized), recomputed here
(``init="pc"``, ``n_restarts=1`` / ``init="random"``, ``n_restarts=10``), divided by that table's ratio
(``NSPRCOMP_VARIANCE_RATIO``; rounded to 3-4 digits, so variance ratios are known to about 5e-4).

Budget (ours, not the papers'): the full run took 176 s with one R process per nsprcomp call and 7 repeats
of every path; now one R session, 5 rounds per cell, and the path with renormalization (reported, not a
goal) timed once.

``--quick``: 400 faces and the first 2000 genes, ``K = 10`` only, 2 sklearn fits, 21 per-iteration pairs;
part D on the same reduced data.
"""

from __future__ import annotations

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.decomposition import SparsePCA
from threadpoolctl import threadpool_limits

from experiments import _peers
from experiments.runner import _common
from experiments.runner.claims import (
    NOT_REPRODUCED,
    PARTIAL,
    REPRODUCED,
    TOO_CLOSE,
    Claim,
    Outcome,
    call_paired,
    call_timing,
)
from repro import EMSparsePCA
from repro.em_sparse_pca import DEFAULT_STARTS, em_sparse_pca, em_sparse_pca_path
from repro.linalg import Covariance

RUN_ALONE = True  # peer and ours in CPU time, unequally slowed by a neighbour (docstring)
TITLE = "Benchmark: emPCA cost per iteration and per path vs BLAS products; vs scikit-learn SparsePCA"

GOAL_ITER = 1.3
GOAL_PATH = 1.5
PATH_REPEATS = 5  # interleaved repeats of the path without renormalization (reference timed in each)
K_ITER = 50
PAIRS = 21  # interleaved pairs of the per-iteration part (docstring; in --quick too: cheap at its sizes)
SKLEARN_KS = (10, 50, 100)
SKLEARN_FITS = {"CBCL faces": 12, "leukemia": 4}  # fits per alpha search, by data set (docstring)
SKLEARN_MAX_ITER = 100

# Part D: the rows of the first nsprcomp table (dataset, K, nonneg), and its variance ratio
# (EMSparsePCA at the time / nsprcomp), used for --quick only
NSPRCOMP_ROWS = tuple(
    (name, K, nonneg)
    for name in ("CBCL faces", "leukemia")
    for K in (10, 50, 100)
    for nonneg in (False, True)
)  # the 12 cells of the side-by-side table (../shared/peers/compare_empca.sh)
NSPRCOMP_ROWS_QUICK = (  # --quick (reduced data, no peer): the first table's rows, variance ratio known
    ("CBCL faces", 10, False),
    ("CBCL faces", 10, True),
    ("leukemia", 10, True),
    ("leukemia", 50, True),
    ("leukemia", 100, True),
)
PEER_DATASET = {"CBCL faces": "cbcl", "leukemia": "mll"}  # names in experiments/peers_recorded/
NSPRCOMP_VARIANCE_RATIO = {
    ("CBCL faces", 10, False): 1.010,
    ("CBCL faces", 10, True): 1.000,
    ("leukemia", 10, True): 1.000,
    ("leukemia", 50, True): 0.9995,
    ("leukemia", 100, True): 0.9999,
}
NSPRCOMP_GOAL = 20.0
NSPRCOMP_REPEATS = 5
N_STARTS = DEFAULT_STARTS  # the default block of starts


# --------------------------------------------------------------------------- sklearn alpha search
def _sklearn_fit(X, alpha, max_iter, random_state):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sp = SparsePCA(n_components=1, alpha=alpha, max_iter=max_iter, random_state=random_state).fit(X)
    w = sp.components_[0]
    return w, int(np.count_nonzero(w))


def sklearn_alpha_search(
    X,
    K: int,
    *,
    max_fits: int = 12,
    max_iter: int = SKLEARN_MAX_ITER,
    random_state: int = 0,
) -> dict:
    """Bisection on scikit-learn ``SparsePCA``'s ``alpha`` for a first component with exactly ``K`` non-zeros.

    Parameters
    ----------
    X : ndarray (n_samples, n_features)
    K : int
        Wanted number of non-zero loadings.
    max_fits : int
        The search stops after this many fits (a count, not a time: see the module docstring).
    max_iter, random_state : passed to ``SparsePCA``.

    Returns
    -------
    dict
        ``alpha``, ``nnz`` (of the returned component), ``exact`` (``nnz == K``), ``n_fits``, ``seconds``
        (the whole search), ``component`` (unit norm, shape (n_features,)).
    """
    X = np.asarray(X, dtype=np.float64)
    t0 = time.perf_counter()
    Xc = X - X.mean(axis=0)
    u = np.linalg.svd(Xc, full_matrices=False)[0][:, 0]
    s = np.sort(np.abs(Xc.T @ u))[::-1]
    lo, hi = 0.0, float(np.linalg.norm(Xc, axis=0).max())  # nnz(0) = D, nnz(hi) = 0
    alpha = float(s[K]) if K < s.size else 0.0
    best = None
    n_fits = 0
    while True:
        w, nnz = _sklearn_fit(X, alpha, max_iter, random_state)
        n_fits += 1
        key = (abs(nnz - K), n_fits)
        if best is None or key[0] <= best["key"][0]:
            best = {"key": key, "alpha": alpha, "nnz": nnz, "component": w}
        if nnz == K or n_fits >= max_fits:
            break
        if nnz > K:
            lo = alpha
        else:
            hi = alpha
        if hi - lo <= 1e-9 * max(hi, 1e-300):
            break
        alpha = 0.5 * (lo + hi)
    w = best["component"]
    n = np.linalg.norm(w)
    return {
        "alpha": best["alpha"],
        "nnz": best["nnz"],
        "exact": best["nnz"] == K,
        "n_fits": n_fits,
        "seconds": time.perf_counter() - t0,
        "component": w / n if n > 0 else w,
    }


# --------------------------------------------------------------------------- parts
def _two_products(A, reps, inner, clock=time.perf_counter, agg=np.median):
    w = np.random.default_rng(0).standard_normal(A.shape[1])
    y = np.empty(A.shape[0])
    f = np.empty(A.shape[1])
    AT = A.T
    ts = []
    for _ in range(reps):
        t0 = clock()
        for _ in range(inner):
            np.dot(A, w, out=y)
            np.dot(AT, y, out=f)
        ts.append((clock() - t0) / inner)
    return float(agg(ts))


def _per_iteration(name, X, reps, rng) -> dict:
    A = Covariance.from_data(X).data
    w0 = rng.standard_normal(X.shape[1])
    T1, T2 = 5, 45

    def run(T):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            p = em_sparse_pca_path(
                X, [K_ITER], init=w0, renormalize=False, tol=1e-300, max_iter=T, operator="data"
            )
            t = time.process_time() - t0
        return t, int(p.n_iter_total[0])

    run(2)  # warm-up
    R, D = [], []
    for i in range(reps):
        # a pair: the reference and the two path lengths next to each other, the order alternating (A B,
        # B A) so that a drift within the run moves both sides; each length timed 3 times, the fastest
        # kept (the difference of two noisy times can go negative)
        if i % 2 == 0:
            R.append(_two_products(A, 3, T2 - T1, clock=time.process_time, agg=min))
        ta, ia = min(run(T1) for _ in range(3))
        tb, ib = min(run(T2) for _ in range(3))
        if i % 2 == 1:
            R.append(_two_products(A, 3, T2 - T1, clock=time.process_time, agg=min))
        if ib > ia:
            D.append((tb - ta) / (ib - ia))
        else:
            R.pop()
    per, ref = float(np.median(D)), float(np.median(R))
    samples = [d / r for d, r in zip(D, R, strict=False)]
    return {
        "samples": ";".join(f"{v:.5g}" for v in samples),
        "part": "per_iteration",
        "dataset": name,
        "shape": f"{X.shape[0]} x {X.shape[1]}",
        "method": f"emPCA iteration (K = {K_ITER})",
        "seconds": per,
        "ref_seconds": ref,
        "ratio": per / ref,
        "reference": "np.dot(A, w) + np.dot(A.T, y)",
        "repeats": reps,
    }


def _path(name, X, kmax, reps) -> list[dict]:
    A = Covariance.from_data(X).data
    rows = []
    for renorm in (False, True):
        ts, refs, iters = [], [], 0
        for _ in range(reps if not renorm else 1):  # with renormalization: reported, not a goal
            # CPU time of this process (the goal is about work; BLAS runs on one thread): the reference is
            # the fastest of 3 x 50 product pairs, timed in each repeat just before the path
            refs.append(_two_products(A, 3, 50, clock=time.process_time, agg=min))
            t0 = time.process_time()
            p = em_sparse_pca_path(X, np.arange(1, kmax + 1), renormalize=renorm, init="pc", operator="data")
            ts.append(time.process_time() - t0)
            iters = int(p.n_iter_total.sum())
        sec, ref = float(np.median(ts)), float(np.median(refs))
        rows.append(
            {
                "samples": ";".join(f"{t / (r * iters):.5g}" for t, r in zip(ts, refs, strict=True)),
                "part": "path",
                "dataset": name,
                "shape": f"{X.shape[0]} x {X.shape[1]}",
                "method": f"emPCA path K = 1..{kmax}" + (" + renormalization" if renorm else ""),
                "renormalize": renorm,
                "seconds": sec,
                "ref_seconds": ref * iters,
                "n_iter_total": iters,
                "mean_iter": iters / kmax,
                "ratio": sec / (ref * iters),
                "reference": "total EM iterations x (np.dot(A, w) + np.dot(A.T, y)), CPU time",
                "repeats": len(ts),
            }
        )
    return rows


def _sklearn(name, X, ks, fits, reps) -> list[dict]:
    C = Covariance.from_data(X)
    rows = []
    for K in ks:
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            W, var = em_sparse_pca(X, 1, cardinality=int(K), init="pc", operator="data", renormalize=False)
            ts.append(time.perf_counter() - t0)
        em_sec = float(np.median(ts))
        r = sklearn_alpha_search(X, int(K), max_fits=fits)
        sk_var = float(C.quad(r["component"]))
        rows.append(
            {
                "part": "sklearn",
                "dataset": name,
                "shape": f"{X.shape[0]} x {X.shape[1]}",
                "method": "SparsePCA (sklearn) + alpha bisection",
                "cardinality": int(K),
                "seconds": r["seconds"],
                "ref_seconds": em_sec,
                "ratio": r["seconds"] / em_sec,
                "reference": "em_sparse_pca (cold call)",
                "nnz": r["nnz"],
                "exact": r["exact"],
                "n_fits": r["n_fits"],
                "alpha": r["alpha"],
                "variance": sk_var,
                "em_variance": float(var[0]),
                "variance_ratio": sk_var / float(var[0]),
                "em_nnz": int(np.count_nonzero(W[0])),
            }
        )
    return rows


# --------------------------------------------------------------------------- part D: the nsprcomp table
def _threshold_plain(f, K, nonneg, excluded):
    """Algorithm 2 in plain NumPy: soft threshold at the (K+1)-th largest candidate magnitude (a tie at
    the K-th place broken by index, as the kernel does)."""
    a = np.where(excluded, 0.0, np.maximum(f, 0.0) if nonneg else np.abs(f))
    sign = 1.0 if nonneg else np.sign(f)
    D = a.size
    if K >= np.count_nonzero(a):
        return np.where(a > 0, a * sign, 0.0)
    part = np.partition(a, [D - K - 1, D - K])
    thr, s_k = part[D - K - 1], part[D - K]
    keep = a > thr
    if s_k == thr:  # tie at the boundary
        keep[np.flatnonzero(a == thr)[: K - int(keep.sum())]] = True
        below = a[a < thr]
        thr = below.max() if below.size else 0.0
    return np.where(keep, (a - thr) * sign, 0.0)


def _plain_run(A, w, K, nonneg, excluded, tol, max_iter):
    for _ in range(max_iter):
        f = A.T @ (A @ w)
        t = _threshold_plain(f, K, nonneg, excluded)
        n = np.linalg.norm(t)
        if n == 0:
            return None
        t /= n
        c = abs(float(t @ w))
        w = t
        if c > 1.0 - tol:
            break
    return w


def plain_empca(X, starts, K, nonneg, *, tol=1e-8, max_iter=1000):
    """A plain NumPy emPCA (Sigg & Buhmann 2008, Algorithms 1-2) with renormalization, run from each start in
    turn, the best renormalized variance kept: the same-run reference of part D.

    Returns ``(w, variance)``; ``variance = w'Cw`` with ``C`` the sample covariance (ddof=1).
    """
    N, D = X.shape
    A = (X - X.mean(axis=0)) / np.sqrt(N - 1)
    G = A @ A.T if N < D else A.T @ A
    _, vecs = np.linalg.eigh(G)
    pc = A.T @ vecs[:, -1] if N < D else vecs[:, -1]
    pc /= np.linalg.norm(pc)
    if pc[np.argmax(np.abs(pc))] < 0:
        pc = -pc
    none = np.zeros(D, dtype=bool)
    best, best_h = None, -np.inf
    for w0 in starts(pc):
        w = _plain_run(A, w0, K, nonneg, none, tol, max_iter)
        if w is None:
            continue
        S = np.flatnonzero(w)
        if nonneg:  # the EM on the support
            wr = _plain_run(A, w, D, True, w == 0, tol, max_iter)
            w = wr if wr is not None and np.sum((A @ wr) ** 2) >= np.sum((A @ w) ** 2) else w
        else:
            AS = A[:, S]
            M = AS.T @ AS if S.size <= N else AS @ AS.T
            _, V = np.linalg.eigh(M)
            v = V[:, -1] if S.size <= N else AS.T @ V[:, -1]
            w = np.zeros(D)
            w[S] = v / np.linalg.norm(v)
        h = float(np.sum((A @ w) ** 2))
        if h > best_h:
            best, best_h = w, h
    return best, best_h


def _default_starts(D, nonneg, seed):
    """The starts EMSparsePCA(random_state=seed) draws by default: the PC (both signs when non-negative),
    then random unit vectors (folded when non-negative) from the per-start generators."""
    seeds = np.random.default_rng(seed).integers(0, 2**63 - 1, size=N_STARTS)

    def starts(pc):
        out = [pc, -pc] if nonneg else [pc]
        for sd in seeds[len(out) :]:
            w = np.random.default_rng(int(sd)).standard_normal(D)
            w = np.abs(w) if nonneg else w
            out.append(w / np.linalg.norm(w))
        return out

    return starts


def _recorded_nsprcomp(name, K, nonneg):
    """(seconds, variance) of nsprcomp in the last side-by-side run (experiments/peers_recorded/)."""
    rec = _peers.recorded("nsprcomp")
    row = rec[(rec.dataset == PEER_DATASET[name]) & (rec.k == K) & (rec.nonneg == bool(nonneg))].iloc[0]
    return float(row.seconds), float(row.variance)


def _nsprcomp(data, reps, quick) -> list[dict]:
    live = not quick and _peers.available("nsprcomp")
    session = _peers.NsprcompSession() if live else None
    try:
        if live:
            for name in PEER_DATASET:
                session.load(PEER_DATASET[name], data[name][0])
        rows = []
        for name, K, nonneg in NSPRCOMP_ROWS_QUICK if quick else NSPRCOMP_ROWS:
            rows += _nsprcomp_cell(data[name][0], name, K, nonneg, reps, quick, session)
    finally:
        if session is not None:
            session.close()
    return rows


def _nsprcomp_cell(X, name, K, nonneg, reps, quick, session) -> list[dict]:
    """One cell of the nsprcomp table: ``reps`` interleaved rounds of our fit like for like
    (``renormalize=True``), the default fit, the references, and nsprcomp (``session``) when it runs live."""
    N, D = X.shape
    A = Covariance.from_data(X).data
    Wb = np.random.default_rng(0).standard_normal((N_STARTS, D))
    starts = _default_starts(D, nonneg, 0)
    kw = dict(cardinality=K, nonneg=nonneg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if quick:  # the EMSparsePCA of the first table's time, for its variance ratio
            old = EMSparsePCA(
                1, init="random" if nonneg else "pc", n_restarts=10 if nonneg else 1, random_state=0,
                renormalize=True, **kw,
            ).fit(X)  # fmt: skip
            ref_var = float(old.explained_variance_[0]) / NSPRCOMP_VARIANCE_RATIO[(name, K, nonneg)]
        EMSparsePCA(1, random_state=0, renormalize=True, **kw).fit(X)  # warm-up (compilation)
        EMSparsePCA(1, random_state=0, **kw).fit(X)
    rec_seconds, rec_var = _recorded_nsprcomp(name, K, nonneg)
    if not quick:
        ref_var = rec_var
    if session is not None:
        session.run(PEER_DATASET[name], K, nonneg)  # untimed warm-up
    Xc = X - X.mean(axis=0)
    clock = time.process_time  # CPU time of this process (one BLAS thread), nsprcomp's of its R process
    rows = []
    for rep in range(reps):
        t_peer = None
        if session is not None and rep % 2 == 1:
            t_peer, w_peer = session.run(PEER_DATASET[name], K, nonneg, clock="cpu")
        t0 = clock()
        for _ in range(5):
            A.T @ (A @ Wb.T)
        t_block = (clock() - t0) / 5
        t0 = clock()
        est = EMSparsePCA(1, random_state=0, renormalize=True, **kw).fit(X)
        t_ours = clock() - t0
        t0 = clock()
        dft = EMSparsePCA(1, random_state=0, **kw).fit(X)
        t_default = clock() - t0
        t0 = clock()
        _, v_plain = plain_empca(X, starts, K, nonneg)
        t_plain = clock() - t0
        if session is not None and t_peer is None:
            t_peer, w_peer = session.run(PEER_DATASET[name], K, nonneg, clock="cpu")
        if session is not None:
            ref_var = float(np.sum((Xc @ w_peer) ** 2) / ((N - 1) * (w_peer @ w_peer)))
        peer_seconds = t_peer if session is not None else rec_seconds
        var = float(est.explained_variance_[0])
        rows.append(
            {
                "part": "nsprcomp",
                "dataset": name,
                "shape": f"{N} x {D}",
                "method": f"EMSparsePCA renormalize=True, K = {K}"
                + (" non-negative" if nonneg else " sparse"),
                "cardinality": K,
                "nonneg": nonneg,
                "repeat": rep,
                "operator": est.operator_,
                "seconds": t_ours,
                "block_seconds": t_block,
                "plain_seconds": t_plain,
                "ratio_block": t_ours / t_block,
                "speedup_plain": t_plain / t_ours,
                "nsprcomp_source": "live" if session is not None else "recorded",
                "nsprcomp_seconds": peer_seconds,
                "speedup_nsprcomp": peer_seconds / t_ours,
                "variance": var,
                "plain_variance": v_plain,
                "nsprcomp_variance": ref_var,
                "variance_vs_nsprcomp": var / ref_var,
                "default_seconds": t_default,
                "default_variance": float(dft.explained_variance_[0]),
                "speedup_nsprcomp_default": peer_seconds / t_default,
                "default_variance_vs_nsprcomp": float(dft.explained_variance_[0]) / ref_var,
                "nnz": int(np.count_nonzero(est.components_[0])),
            }
        )
    return rows


def compute(cfg: _common.Config) -> pd.DataFrame:
    from data_fetch import load_cbcl_faces, load_leukemia_armstrong

    faces = load_cbcl_faces().X
    leuk = load_leukemia_armstrong().X
    if cfg.quick:
        faces = faces[cfg.rng(0).choice(faces.shape[0], 400, replace=False)]
        leuk = leuk[:, :2000]
    data = {
        "CBCL faces": (_common.preprocess(faces, "standardize"), 361),
        "leukemia": (_common.preprocess(leuk, "standardize"), 150),
    }
    rows = []
    with threadpool_limits(1, user_api="blas"):
        for i, (name, (X, kmax)) in enumerate(data.items()):
            rows.append(_per_iteration(name, X, PAIRS, cfg.rng(1, i)))
            rows += _path(name, X, 40 if cfg.quick else kmax, 1 if cfg.quick else PATH_REPEATS)
        for name, (X, _) in data.items():
            rows += _sklearn(
                name,
                X,
                (10,) if cfg.quick else SKLEARN_KS,
                2 if cfg.quick else SKLEARN_FITS[name],
                1 if cfg.quick else 3,
            )
        rows += _nsprcomp(data, 2 if cfg.quick else NSPRCOMP_REPEATS, cfg.quick)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- plot
def plot(df: pd.DataFrame, cfg: _common.Config):
    fig, (ax1, ax2, ax3, ax4) = plt.subplots(1, 4, figsize=(14.5, 3.4))
    a = df[df.part.isin(["per_iteration", "path"])].reset_index(drop=True)
    labels = [f"{r.dataset}\n{r.method.replace('emPCA ', '')}" for r in a.itertuples()]
    ax1.barh(
        range(len(a)), a.ratio, color=["tab:blue" if p == "per_iteration" else "tab:cyan" for p in a.part]
    )
    ax1.set_yticks(range(len(a)), labels, fontsize=6)
    ax1.axvline(GOAL_ITER, color="black", ls="--", lw=0.8, label=f"goal {GOAL_ITER} (iteration)")
    ax1.axvline(GOAL_PATH, color="gray", ls=":", lw=0.8, label=f"goal {GOAL_PATH} (path)")
    ax1.set_xlabel("time / two BLAS products per iteration")
    ax1.legend(fontsize=6.5, loc="lower right")
    s = df[df.part == "sklearn"]
    for name, g in s.groupby("dataset"):
        ax2.plot(g.cardinality, g.ratio, marker="o", label=name)
        ax3.plot(g.cardinality, g.variance_ratio, marker="o", label=name)
        for r in g.itertuples():
            if not r.exact:
                for ax, v in ((ax2, r.ratio), (ax3, r.variance_ratio)):
                    ax.annotate(f"nnz {int(r.nnz)}", (r.cardinality, v), fontsize=6)
    ax2.set_yscale("log")
    ax2.set_xlabel("Cardinality K")
    ax2.set_ylabel("time sklearn search / emPCA")
    ax2.legend(fontsize=7)
    ax3.axhline(1.0, color="black", ls="--", lw=0.8)
    ax3.set_xlabel("Cardinality K")
    ax3.set_ylabel("variance sklearn / emPCA")
    ax3.legend(fontsize=7)
    d = df[df.part == "nsprcomp"]
    if len(d):
        g = d.groupby(["dataset", "cardinality", "nonneg"], sort=False).median(numeric_only=True)
        g = g.reset_index()
        y = np.arange(len(g))
        names = [_row_name((r.dataset, r.cardinality, r.nonneg)) for r in g.itertuples()]
        src = _nsprcomp_source(df)
        ax4.barh(y - 0.2, g.speedup_nsprcomp, height=0.4, color="tab:green", label=f"vs nsprcomp ({src})")
        ax4.barh(y + 0.2, g.speedup_plain, height=0.4, color="tab:gray", label="vs plain NumPy (same run)")
        for yi, v in zip(y, g.variance_vs_nsprcomp, strict=True):
            ax4.annotate(f"var {v:.3f}", (0.02, yi + 0.32), xycoords=("axes fraction", "data"), fontsize=6)
        ax4.axvline(NSPRCOMP_GOAL, color="black", ls="--", lw=0.8, label=f"goal {NSPRCOMP_GOAL:.0f}x")
        ax4.set_yticks(y, names, fontsize=7)
        ax4.set_xscale("log")
        ticks = [0.5, 1, 2, 5, 10, 20, 50, 100]
        ax4.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax4.xaxis.set_minor_formatter(plt.NullFormatter())
        ax4.set_xlim(0.5, 200)
        ax4.set_ylim(-0.6, len(g) + 0.9)
        ax4.set_xlabel("speed-up of the default fit")
        ax4.legend(fontsize=6, loc="upper right", ncol=1)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- claims
def _samples(row) -> list[float]:
    return [float(v) for v in str(row.samples).split(";") if v]


def _combine(calls: dict) -> str:
    """One verdict from per-row timing calls: all met, all missed, any too close, else partly."""
    states = {c.state for c in calls.values()}
    if states == {"met"}:
        return REPRODUCED
    if states == {"missed"}:
        return NOT_REPRODUCED
    if "too close" in states and "missed" not in states:
        return TOO_CLOSE
    return PARTIAL


def _check_iter(df):
    g = df[df.part == "per_iteration"].set_index("dataset")
    calls = {d: call_paired(_samples(r), GOAL_ITER) for d, r in g.iterrows()}
    return Outcome(
        ", ".join(f"{d}: {c.text('.2f', 'x')}" for d, c in calls.items()),
        _combine(calls),
        "project goal: one emPCA iteration through the data <= 1.3 x the two BLAS products "
        f"(single-threaded, process CPU time), decided with {next(iter(calls.values())).band_text()} "
        "(each pair: the products and the two path lengths next to each other, in alternating order)",
    )


def _check_path(df):
    g = df[(df.part == "path") & (~df.renormalize.astype(bool))].set_index("dataset")
    r = df[(df.part == "path") & (df.renormalize.astype(bool))].set_index("dataset")
    calls = {d: call_timing(_samples(row), GOAL_PATH) for d, row in g.iterrows()}
    txt = ", ".join(f"{d}: {c.text('.2f')} ({int(g.n_iter_total[d])} iterations)" for d, c in calls.items())
    txt += "; with renormalization: " + ", ".join(f"{d}: {v:.2f}" for d, v in r.ratio.items())
    return Outcome(
        txt,
        _combine(calls),
        "project goal: the whole path (PC start, through the data) <= 1.5 x total iterations x two products; "
        "renormalization (emPCAopt) reported alongside, not part of the goal",
    )


def _check_sklearn(df):
    s = df[df.part == "sklearn"]
    parts = [
        f"{r.dataset} K={int(r.cardinality)}: sklearn {r.ratio:.0f}x the time, {r.variance_ratio:.3f}x the "
        "variance of emPCA"
        + ("" if r.exact else f" (closest reached: nnz {int(r.nnz)} in {int(r.n_fits)} fits)")
        for r in s.itertuples()
    ]
    ex = s[s.exact.astype(bool)]
    ok = len(ex) == len(s) and bool((s.ratio > 1).all()) and bool((s.variance_ratio <= 1.001).all())
    partial = bool((s.ratio > 1).all())
    return Outcome(
        "; ".join(parts),
        REPRODUCED if ok else (PARTIAL if partial else NOT_REPRODUCED),
        "project comparison: emPCA faster to exactly K non-zeros and at least the variance of "
        "SparsePCA; not reproduced fully where the alpha search did not reach exactly K in its budget",
    )


def _nsprcomp_rows(df):
    d = df[df.part == "nsprcomp"]
    return {k: g for k, g in d.groupby(["dataset", "cardinality", "nonneg"], sort=False)}


def _row_name(key):
    name, K, nonneg = key
    return f"{name.split()[0]} {int(K)} {'nn' if bool(nonneg) else 'sparse'}"


def _nsprcomp_source(df) -> str:
    d = df[df.part == "nsprcomp"]
    src = set(d.nsprcomp_source) if "nsprcomp_source" in d else {"published"}
    return "live" if src == {"live"} else ("recorded" if "recorded" in src else "published")


def _check_nsprcomp_variance(df):
    rows = _nsprcomp_rows(df)
    ratios = {k: float(g.default_variance_vs_nsprcomp.median()) for k, g in rows.items()}
    like = {k: float(g.variance_vs_nsprcomp.median()) for k, g in rows.items()}
    ok = all(v >= 1 - 5e-4 for v in ratios.values())
    src = _nsprcomp_source(df)
    how = {
        "live": "nsprcomp run side by side in this run: w'Cw of the vector it returned",
        "recorded": "nsprcomp's recorded variance (experiments/peers_recorded/nsprcomp.csv, last "
        "side-by-side run; R not installed here), or on --quick's reduced data the issue's ratio to the "
        "EMSparsePCA of the time, recomputed here",
        "published": "the issue's ratio to the EMSparsePCA of the time, recomputed here",
    }[src]
    n_like = sum(v >= 1 - 5e-4 for v in like.values())
    return Outcome(
        ", ".join(f"{_row_name(k)}: {v:.4f}" for k, v in ratios.items())
        + f"; like for like (renormalize=True): {n_like}/{len(like)} cells >= 1 within 5e-4 ("
        + ", ".join(f"{_row_name(k)}: {v:.4f}" for k, v in like.items() if v < 1 - 5e-4)
        + ")",
        REPRODUCED if ok else (PARTIAL if any(v >= 1 - 5e-4 for v in ratios.values()) else NOT_REPRODUCED),
        f"variance of the default fit (renormalize='refine') / nsprcomp's at its defaults (5 restarts) "
        f"({how}); >= 1 within 5e-4 in every cell; the like-for-like fit (renormalize=True) reported "
        "alongside",
    )


def _check_nsprcomp_speed(df):
    rows = _nsprcomp_rows(df)
    calls = {
        k: call_timing(g.speedup_nsprcomp, NSPRCOMP_GOAL, lower_is_better=False) for k, g in rows.items()
    }
    same_run = "; ".join(
        f"{_row_name(k)}: {g.seconds.median() * 1e3:.0f} ms = {g.ratio_block.median():.0f} product blocks, "
        f"{g.speedup_plain.median():.2f}x plain NumPy, at defaults {g.speedup_nsprcomp_default.median():.1f}x"
        for k, g in rows.items()
    )
    verdict = _combine(calls)
    if _nsprcomp_source(df) == "live":
        how = (
            "nsprcomp run side by side, interleaved with the default fit in this run; CPU time on both "
            "sides (R proc.time, Python process_time; one BLAS thread each)"
        )
    else:
        how = (
            "nsprcomp NOT run in this run (R or the peers not installed, or --quick): its RECORDED "
            "seconds of the last side-by-side run (experiments/peers_recorded/nsprcomp.csv) against this "
            "run's fits, so the ratio compares two runs and the verdict is at most partly reproduced"
        )
        verdict = PARTIAL if verdict == REPRODUCED else verdict
    return Outcome(
        ", ".join(f"{_row_name(k)}: {c.text('.1f', 'x')}" for k, c in calls.items()),
        verdict,
        f"speed-up of EMSparsePCA(renormalize=True) over nsprcomp (5 restarts), like for like, per cell, "
        f"median of {NSPRCOMP_REPEATS} interleaved rounds ({how}); goal >= 20x in every cell, each decided "
        f"with {next(iter(calls.values())).band_text()}. "
        f"Same-run ratios (and the default fit's speed-up): {same_run}",
    )


def _check_vs_plain(df):
    rows = _nsprcomp_rows(df)
    calls = {k: call_timing(g.speedup_plain, 1.0, lower_is_better=False) for k, g in rows.items()}
    return Outcome(
        ", ".join(f"{_row_name(k)}: {c.text('.2f', 'x')}" for k, c in calls.items()),
        _combine(calls),
        "speed-up of the default fit over a plain NumPy emPCA of the same starts, timed interleaved in the "
        "same run; the gains: the D x D covariance on CBCL (D^2 instead of 2ND per iteration, then D K once "
        "the iterate is K-sparse) and, on leukemia (72 x 12582), screened iterations (X w through the "
        "K-sparse support, X'y only where a bound cannot rule a feature out of the top K+1; a full product "
        "in 1 iteration in 5 to 10) and the non-negative renormalization on the support's own N x K columns",
    )


GOALS = [
    Claim(
        "iteration-cost",
        "Project goal (DESIGN.md): one emPCA iteration costs at most 1.3x the two BLAS "
        "products X w and X'y (Sigg & Buhmann: O(D) work besides them)",
        "<= 1.3x",
        _check_iter,
        machine_dependent=True,
    ),
    Claim(
        "path-cost",
        "Project goal: a whole cardinality path costs at most 1.5x (total EM iterations x two BLAS products)",
        "<= 1.5",
        _check_path,
        machine_dependent=True,
    ),
    Claim(
        "vs-sklearn",
        "Project comparison: emPCA reaches a component with exactly K non-zeros faster than "
        "scikit-learn's SparsePCA with an alpha search, with at least its variance",
        "",
        _check_sklearn,
        machine_dependent=True,
    ),
    Claim(
        "nsprcomp-variance",
        "Project goal: the default EMSparsePCA (first component) reaches at least the variance of "
        "nsprcomp at its defaults in each of the 12 cells (CBCL faces and leukemia, K = 10 / 50 / 100, "
        "sparse and non-negative)",
        ">= 1",
        _check_nsprcomp_variance,
    ),
    Claim(
        "nsprcomp-speed",
        "Project goal: like for like (renormalize=True, nsprcomp's 5 restarts), each of the 12 "
        "cells at least 20x faster than nsprcomp",
        ">= 20x",
        _check_nsprcomp_speed,
        machine_dependent=True,
    ),
    Claim(
        "vs-plain-numpy",
        "Project goal: the default fit (operator by shape, restarts as one block) is faster than a plain "
        "NumPy emPCA of the same starts",
        "> 1x",
        _check_vs_plain,
        machine_dependent=True,
    ),
]


def main(argv=None):
    return _common.run(__name__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
