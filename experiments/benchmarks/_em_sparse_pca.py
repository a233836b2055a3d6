"""What :mod:`experiments.benchmarks.em_sparse_pca` measures, one function per part of its table (the
protocol, the choices and the goals are that module's docstring): :func:`per_iteration_row` (part A),
:func:`path_rows` (part B), :func:`sklearn_rows` with :func:`sklearn_alpha_search` (part C), and
:func:`nsprcomp_rows` with the plain NumPy emPCA :func:`plain_empca` and nsprcomp run side by side or
recorded (part D).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.decomposition import SparsePCA

from experiments import _peers
from repro import EMSparsePCA
from repro.em_sparse_pca import DEFAULT_STARTS, em_sparse_pca, em_sparse_pca_path
from repro.linalg import Covariance

K_ITER = 50
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
N_STARTS = DEFAULT_STARTS  # the default block of starts


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
        The search stops after this many fits (a count, not a time: see the benchmark's docstring).
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


def per_iteration_row(name, X, reps, rng) -> dict:
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


def path_rows(name, X, kmax, reps) -> list[dict]:
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


def sklearn_rows(name, X, ks, fits, reps) -> list[dict]:
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


def nsprcomp_rows(data, reps, quick) -> list[dict]:
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
