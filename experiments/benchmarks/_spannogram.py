"""What :mod:`experiments.benchmarks.spannogram` measures (its docstring holds the protocol, the choices and
the goals), one function per part of its table: :func:`allk_rows` (parts A and B: the all-k pass against one
k and against :func:`numpy_algorithm3`), :func:`scaling_rows` (part C), :func:`exact_time_rows` and
:func:`exact_rows` (part D: exact rank 2, the exact values against brute force) and :func:`spanpc_rows`
(part E: spanpc, live or recorded).
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from experiments import _peers
from experiments.runner import _common
from repro import SpannogramPCA, spannogram_path
from repro.linalg import Covariance
from repro.spannogram import all_k_pass, rank2_sweep, spannogram_exact

K_ONE = 50
FIG5_KMAX = 1000  # the curve of experiments.asteris2014_fig5 (its KMAX)
PEER_KS = (10, 50, 180)
PEER_REPEATS = 3  # our fits per k, around one spanpc call
MIN_SECONDS = 0.3  # CPU time per timing sample (calls repeated until then)
SWEEP_GENES = 4000


def numpy_algorithm3(V: np.ndarray, C: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Algorithm 3 as printed, in plain NumPy, for one ``k``: the reference of Part B."""
    best, best_x = -np.inf, None
    n = V.shape[0]
    for c in C:
        a = V @ c
        for s in (1.0, -1.0):
            b = s * a
            idx = np.argpartition(-b, k - 1)[:k] if k < n else np.arange(n)
            idx = idx[b[idx] > 0]
            if idx.size == 0:
                continue
            x = np.zeros(n)
            x[idx] = b[idx] / np.linalg.norm(b[idx])
            val = float(np.sum((V.T @ x) ** 2))
            if val > best:
                best, best_x = val, x
    return best_x, best


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _cpu(fn, quick: bool) -> tuple[float, int]:
    """CPU seconds per call of ``fn`` over at least ``MIN_SECONDS`` (0.02 s in ``--quick``)."""
    return _common.cpu_seconds_per_call(fn, 0.02 if quick else MIN_SECONDS)


def _brute(A, k):
    n = A.shape[0]
    best = 0.0
    for r in range(1, k + 1):
        for J in itertools.combinations(range(n), r):
            w, U = np.linalg.eigh(A[np.ix_(J, J)])
            u = U[:, -1]
            if np.all(u >= -1e-12) or np.all(u <= 1e-12):
                best = max(best, float(w[-1]))
    return best


def allk_rows(data: dict, reps: int, cfg) -> tuple[list[dict], dict]:
    """Parts A and B on each data set: the all-k pass against one ``k`` (and the ``k`` range of the paper's
    figure) and against :func:`numpy_algorithm3` for one ``k``, on the same random net; the rows and the
    leading ``V`` of each data set."""
    q = cfg.quick
    S = 60 if q else 1000
    rows: list[dict] = []
    Vs = {}
    for name, X in data.items():
        V = _leading(X, 3)
        Vs[name] = V
        n = V.shape[0]
        C = _random_net(3, S, cfg.rng(1))
        _run_pass_fixed(V[:50], 5, C[:2])  # compile outside the timings
        k_fig = n if name == "CBCL" else min(FIG5_KMAX, n)  # the curve of Fig. 4 / Fig. 5
        _run_pass_fixed(V, K_ONE, C[:2]), _run_pass_fixed(V, n, C[:2]), _run_pass_fixed(V, k_fig, C[:2])
        for r in range(reps):
            t_all, _ = _cpu(lambda V=V, n=n, C=C: _run_pass_fixed(V, n, C), q)
            t_one, _ = _cpu(lambda V=V, C=C: _run_pass_fixed(V, K_ONE, C), q)
            t_fig = t_all
            if k_fig < n:
                t_fig, _ = _cpu(lambda V=V, C=C, k=k_fig: _run_pass_fixed(V, k, C), q)
            t_np, _ = _cpu(lambda V=V, C=C: numpy_algorithm3(V, C, K_ONE), q)
            rows.append({"part": "allk", "dataset": name, "n": n, "repeat": r, "ratio": t_all / t_one,
                         "seconds": t_all, "reference_seconds": t_one, "n_samples": S,
                         "fig_kmax": k_fig, "fig_ratio": t_fig / t_one})  # fmt: skip
            rows.append({"part": "numpy", "dataset": name, "n": n, "repeat": r, "ratio": t_np / t_all,
                         "ratio_per_k": t_np / (t_all / n), "ratio_one_k": t_np / t_one,
                         "seconds": t_np, "reference_seconds": t_all, "n_samples": S})  # fmt: skip
    return rows, Vs


def scaling_rows(reps: int, rng, cfg) -> list[dict]:
    """Part C: the pass for one ``k`` per sample against one ``np.sort`` of ``n`` numbers, over ``n``."""
    q = cfg.quick
    ns = (1000, 4000) if q else (2000, 8000, 32000, 128000)
    Cs = _random_net(3, 20 if q else 200, cfg.rng(3))
    rows = []
    for r in range(reps):
        for n in ns:
            V = rng.standard_normal((n, 3))
            z = rng.standard_normal(n)
            t, _ = _cpu(lambda V=V: _run_pass_fixed(V, K_ONE, Cs), q)
            t_sort, _ = _cpu(lambda z=z: np.sort(z), q)
            rows.append({"part": "scaling", "n": n, "repeat": r, "seconds": t / len(Cs),
                         "reference_seconds": t_sort, "ratio": t / len(Cs) / t_sort})  # fmt: skip
    return rows


def exact_time_rows(reps: int, rng, leukemia, V_leukemia, cfg) -> list[dict]:
    """Part D, time: the exact rank-2 sweep over ``n``, and (full run) on the leading genes of the
    leukemia data against Algorithm 3's pass with 10,000 samples."""
    q = cfg.quick
    ns2 = (100, 200) if q else (250, 500, 1000, 2000)
    rows = []
    for r in range(max(2, reps - 2)):
        for n in ns2:
            V = rng.standard_normal((n, 2))
            t = _time(lambda V=V: rank2_sweep(V, 50))
            rows.append({"part": "exact_time", "n": n, "repeat": r, "seconds": t})
    if not q:
        # the leading SWEEP_GENES genes by loading norm (timing only: the sweep of all 12582 took 40 s)
        V2 = _leading(leukemia, 2)
        V2 = np.ascontiguousarray(V2[np.argsort(-np.linalg.norm(V2, axis=1))[:SWEEP_GENES]])
        t = _time(lambda: rank2_sweep(V2, K_ONE))
        C = _random_net(3, 10000, cfg.rng(4))
        t_alg3 = _time(lambda: _run_pass_fixed(V_leukemia, K_ONE, C))
        rows.append({"part": "exact_time", "dataset": f"leukemia ({SWEEP_GENES} genes)", "n": V2.shape[0],
                     "repeat": 0, "seconds": t, "reference_seconds": t_alg3,
                     "ratio": t / t_alg3})  # fmt: skip
    return rows


def exact_rows(rng, quick: bool) -> list[dict]:
    """Part D, values: the exact solver on random rank-2 and rank-3 matrices of size 8 against brute force."""
    rows = []
    for d in (2, 3):
        for trial in range(1 if quick else 4):
            Vr = rng.standard_normal((8, d))
            A = Vr @ Vr.T
            for k in (2, 4):
                _, val = spannogram_exact(Covariance.from_matrix(A), k, rank=d)
                opt = _brute(A, k)
                rows.append({"part": "exact", "rank": d, "trial": trial, "cardinality": k,
                             "value": val, "optimum": opt, "rel_error": (val - opt) / opt})  # fmt: skip
    return rows


def spanpc_rows(X, quick) -> list[dict]:
    """Part E: spanpc (live or recorded) against SpannogramPCA per k and the whole curve, interleaved.

    CPU times on one thread on both sides: per ``k``, our fit (CPU time per fit over ``MIN_SECONDS``),
    one spanpc call (Octave ``cputime`` around ``spanpc``), then ``PEER_REPEATS - 1`` more of ours; each of
    our samples gives one ratio against the spanpc call.
    """
    live = not quick and _peers.available("spanpc")
    ks = PEER_KS[:1] if quick else PEER_KS
    p = X.shape[1]
    curve_ks = np.unique(np.r_[np.arange(1, 201), np.geomspace(200, p, 100).astype(int), p])
    Xc = X - X.mean(axis=0)

    def var(w):
        return float(np.sum((Xc @ w) ** 2) / ((X.shape[0] - 1) * (w @ w)))

    rec = _peers.recorded("spanpc")
    rec = rec[rec.dataset == "mll_raw"].set_index("k")
    SpannogramPCA(cardinality=ks[0], random_state=0).fit(X)  # compile outside the timings
    t0 = time.process_time()
    spannogram_path(X, curve_ks, random_state=0)
    t_curve = time.process_time() - t0
    rows = []
    for k in ks:
        peer = None
        for r in range(1 if quick else PEER_REPEATS):
            holder = {}

            def fit(k=k, r=r, holder=holder):
                holder["est"] = SpannogramPCA(cardinality=k, random_state=r).fit(X)

            t_ours, calls = _cpu(fit, quick)
            if live and peer is None:
                peer = _peers.run_spanpc(X, k, clock="cpu")
            t_peer, v_peer = (peer[0], var(peer[1])) if live else (rec.seconds[k], rec.variance[k])
            v_ours = float(holder["est"].explained_variance_[0])
            source = "live" if live else "recorded"
            rows.append({"part": "spanpc", "dataset": "leukemia raw", "cardinality": k, "repeat": r,
                         "seconds": t_ours, "calls": calls, "peer_seconds": t_peer, "peer_source": source,
                         "speedup": t_peer / t_ours, "variance": v_ours, "peer_variance": v_peer,
                         "variance_ratio": v_ours / v_peer, "curve_seconds": t_curve,
                         "curve_n_k": curve_ks.size, "curve_over_one_k": t_curve / t_ours})  # fmt: skip
    return rows


def _leading(X, d):
    """``V = U_d L_d^(1/2)`` of the covariance of ``X`` (Algorithm 1, lines 1-2; ``X`` of rank above ``d``),
    from the ``d + 1`` leading eigenpairs, as the spannogram computes it."""
    vals, U = Covariance.from_data(X).eigh(d + 1)
    return np.ascontiguousarray(U[:, :d] * np.sqrt(np.clip(vals[:d], 0.0, None)))


def _random_net(d, n_samples, rng):
    """``n_samples`` points drawn uniformly on the unit sphere of R^d (Algorithm 3, lines 5-6)."""
    C = rng.standard_normal((n_samples, d))
    nrm = np.linalg.norm(C, axis=1, keepdims=True)
    nrm[nrm == 0] = 1.0
    return np.ascontiguousarray(C / nrm)


def _run_pass_fixed(V, kmax, C):
    """The all-k kernel on given samples (what the spannogram's random net runs after drawing them)."""
    return all_k_pass(V, C, kmax)[0]
