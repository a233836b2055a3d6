"""What :mod:`experiments.benchmarks.em_pca` measures (its docstring holds the protocol, the choices and the
goals): :func:`per_iteration_rows`, part A (one EM iteration against its two products, interleaved), and
:func:`fit_rows`, part B (EMPCA to a fixed accuracy against randomized PCA and svds, in alternating
rounds); the data, the exact subspace and the method names the rows carry.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse.linalg
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from experiments.runner import _common
from experiments.runner.claims import MIN_PAIRS
from repro import ConvergenceWarning
from repro.em_pca import EMPCA, em_pca, subspace_sin

K = 10
N_FIT = 50000  # rows of the Part B data (a timing-only size, see "Data")
ROUNDS = 3  # interleaved rounds of Part B
BIG_PAIRS = 40  # single EM iterations and reference pairs of the 100000 x 1000 row (A B, B A, ...)
PAIRS = 9  # rounds of EMPCA to randomized accuracy and randomized PCA, in alternating order (call_paired)
EQUAL_SIN = 1e-5  # equal accuracy with svds: sine to the exact subspace at most this, for both
SVDS_TOLS = (1e-2, 1e-3, 0.0)  # ARPACK tol for svds: the first (loosest) that reaches EQUAL_SIN
EM = "EMPCA default: block EM + Rayleigh-Ritz (tol 1e-6)"
EM_MATCH = "EMPCA default, to randomized accuracy"
ROWEIS = "Roweis EM, k columns (tol 1e-6)"
ROWEIS_MATCH = "Roweis EM, to randomized accuracy"
RSVD = "randomized PCA (sklearn)"
SVDS = "svds (ARPACK)"


def per_iteration_rows(cfg: _common.Config) -> list[dict]:
    full = [(2429, 361), (72, 12582), (100000, 1000)]
    shapes = [(500, 100), (30, 3000), (5000, 200)] if cfg.quick else full
    rows = []
    for n, p in shapes:
        rng = cfg.rng(0, n, p)
        X = rng.standard_normal((n, p))
        w, y = rng.standard_normal(p), rng.standard_normal(n)
        big = (n, p) == shapes[-1]  # the large shape (its --quick stand-in: 5000 x 200)
        # iterations of the two fits differenced, reference pairs per block, samples (the benchmark's
        # docstring, "Repeats"); the large shape: samples of single iterations within one fit, one
        # reference pair each
        if big:
            T1, T2, n_ref, reps = 0, 0, 1, BIG_PAIRS
        else:
            T1, T2, n_ref, reps = (5, 25, 10, MIN_PAIRS) if cfg.quick else (50, 450, 100, 21)

        def fit(T, clock, X=X):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                t0 = clock()
                em_pca(X, 1, max_iter=T, tol=0.0, random_state=0)
                return clock() - t0

        def ref(clock, X=X, w=w, y=y, n_ref=n_ref):
            t0 = clock()
            for _ in range(n_ref):
                np.dot(X, w)
                np.dot(X.T, y)
            return (clock() - t0) / n_ref

        def iteration_pairs(reps, clock, X=X, ref=ref):
            """``reps`` (even) pairs (EM iteration, reference pair) timed in one fit between the calls of a
            callback, which times the references: iteration 1, its reference, the reference of iteration
            2, iteration 2, iteration 3, ... (A B, B A, ...); the set-up and the first pass are not timed."""
            its, refs, last = [], [], []

            def cb(t, C, lam):
                now = clock()
                if last:
                    its.append(now - last[-1])
                if len(its) >= reps:
                    return True
                if len(its) % 2:  # after an odd-numbered iteration: its reference, then the next one's
                    refs.extend([ref(clock), ref(clock)])
                last.append(clock())
                return False

            em_pca(X, 1, max_iter=reps + 1, tol=0.0, random_state=0, callback=cb)
            return its, refs

        fit(2, time.perf_counter)  # warm-up (numba cache load)
        for threads in (1,) if (cfg.quick or big) else (None, 1):
            # one thread: the process CPU clock; default threads: the wall clock (CPU time would sum the
            # BLAS threads' spinning)
            clock = time.process_time if threads == 1 else time.perf_counter
            with threadpool_limits(threads):
                samples, its, refs = [], [], []
                # default threads: information beside the claim, 5 samples (erratic under load anyway).
                # A sample: the fits of T1 and T2 iterations (their difference is T2 - T1 iterations, the
                # set-up cancels) between two blocks of reference pairs
                if big:
                    its, refs = iteration_pairs(reps, clock)
                    samples = [it / r for it, r in zip(its, refs, strict=True)]
                for _ in range(0 if big else reps if threads == 1 else min(reps, 5)):
                    r1 = ref(clock)
                    it = (fit(T2, clock) - fit(T1, clock)) / (T2 - T1)
                    r2 = ref(clock)
                    samples.append(it / (0.5 * (r1 + r2)))
                    its.append(it)
                    refs += [r1, r2]
            per, ref_s = float(np.median(its)), float(np.median(refs))
            rows.append(
                {
                    "part": "per_iteration",
                    "shape": f"{n} x {p}",
                    "n": n,
                    "p": p,
                    "method": "EM iteration (k = 1)",
                    "blas_threads": "default" if threads is None else str(threads),
                    "seconds": per,
                    "ref_seconds": ref_s,
                    "ratio": per / ref_s,
                    "repeats": len(samples),
                    "ratio_samples": " ".join(f"{v:.4g}" for v in samples),
                }
            )
        del X
    return rows


def _data(spectrum: str, n: int, p: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if spectrum == "spiked":
        lam = np.ones(p)
        lam[:K] = np.linspace(60.0, 15.0, K)
    else:
        lam = 1.0 / np.arange(1, p + 1)
    V = np.linalg.qr(rng.standard_normal((p, p)))[0]
    B = V * np.sqrt(lam)
    X = np.empty((n, p))
    step = 20000
    for i in range(0, n, step):  # in blocks: no second n x p temporary
        m = min(step, n - i)
        X[i : i + m] = rng.standard_normal((m, p)) @ B.T
    X += rng.standard_normal(p)  # a non-zero mean, so that centring is part of the work
    return X, lam


def _exact(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(axis=0)
    S = np.zeros((X.shape[1], X.shape[1]))
    for i in range(0, X.shape[0], 20000):
        D = X[i : i + 20000] - mean
        S += D.T @ D
    S /= X.shape[0] - 1
    w, V = np.linalg.eigh(S)
    return S, (w[::-1][:K], V[:, ::-1][:, :K])


def _accuracy(W: np.ndarray, S: np.ndarray, exact) -> tuple[float, float]:
    """(sin of largest angle to the exact subspace, captured variance / exact top-K variance)."""
    Q = np.linalg.qr(W)[0]
    captured = float(np.trace(Q.T @ S @ Q))
    return subspace_sin(Q, exact[1]), captured / float(exact[0].sum())


#: Bytes touched just before each timed fit (more than any solver here allocates: a centred copy of the
#: 800 MB matrix and some columns), see "Clock" in the benchmark's docstring.
WARM_BYTES = 2**30


def _warm_memory(nbytes: int = WARM_BYTES) -> None:
    """Touch and free ``nbytes`` of fresh memory, so the fit that follows allocates pages the host backs."""
    buf = np.ones(nbytes // 8)
    del buf


def _interleaved(fns: dict, rounds: int, cap: float = 10.0, warm=(), once=(), pairs=(), n_pairs=0) -> dict:
    """Time every solver once per round, round after round; a solver slower than ``cap``, or named in
    ``once``, runs only in the first round; the solvers in ``warm`` get :func:`_warm_memory` before each
    run. The solvers of each pair in ``pairs`` (two labels each, next to each other in ``fns``) run in
    ``max(rounds, n_pairs)`` rounds (the others in ``rounds``), next to each other, their order swapped
    every round (A B, B A, ...).

    Returns ``{label: (last output, [process CPU seconds per round])}`` (every solver runs single-threaded
    here; see "Clock" in the benchmark's docstring).
    """
    out = {label: (None, []) for label in fns}
    labels = list(fns)
    paired = {label for pair in pairs for label in pair}
    slots = [tuple(labels.index(x) for x in pair) for pair in pairs]
    assert all(b == a + 1 for a, b in slots), "the paired solvers run next to each other"
    for r in range(max(rounds, n_pairs)):
        order = list(labels)
        for a, b in slots if r % 2 else ():
            order[a], order[b] = order[b], order[a]
        for label in order:
            fn = fns[label]
            res, times = out[label]
            if r >= rounds and label not in paired:
                continue
            if r and (times[-1] > cap or label in once):
                continue
            if label in warm:
                _warm_memory()
            t0 = time.process_time()
            res = fn()
            times.append(time.process_time() - t0)
            out[label] = (res, times)
    return out


def fit_rows(cfg: _common.Config) -> list[dict]:
    n, p = (2000, 100) if cfg.quick else (N_FIT, 1000)
    rows = []
    for s, spectrum in enumerate(("spiked", "decaying")):
        X, lam = _data(spectrum, n, p, cfg.rng(1, s))
        S, exact = _exact(X)

        def em(X=X, s="auto"):
            m = EMPCA(K, tol=1e-6, max_iter=5000, random_state=0, n_oversamples=s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                m.fit(X)
            return m.components_.T, m.n_iter_

        def roweis(X=X):
            return em(X, 0)

        def rsvd(X=X):
            return PCA(n_components=K, svd_solver="randomized", random_state=0).fit(X).components_.T, 0

        def svds(X=X, tol=0.0):
            Xc = X - X.mean(axis=0)
            _, _, Vt = scipy.sparse.linalg.svds(Xc, k=K, random_state=0, tol=tol)
            return Vt.T, 0

        # svds at the loosest ARPACK tol that reaches the equal accuracy (untimed; bench docstring)
        svds_tol = next(t for t in SVDS_TOLS if t == 0 or _accuracy(svds(tol=t)[0], S, exact)[0] <= EQUAL_SIN)

        # randomized PCA's accuracy, so EM can be stopped at it: that of randomized PCA's first timed run,
        # which comes before every run of EM to it (the pair's first round, then Roweis' EM); the same in
        # every round (random_state=0)
        target = []

        def rsvd_first(X=X, S=S, exact=exact, target=target):
            out = rsvd(X)
            if not target:
                target.append(_accuracy(out[0], S, exact)[0])
            return out

        def em_to_target(s, X=X, target=target, V=exact[1]):
            assert target, "randomized PCA runs before EM to its accuracy"

            def cb(t, C, lam_, target=target[0]):  # C: the EM matrix, or the top-K Ritz basis (oversampled)
                return subspace_sin(C, V) <= target

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                res = em_pca(X, K, max_iter=5000, tol=0.0, random_state=0, callback=cb, n_oversamples=s)
            return res.components.T, res.n_iter

        fns = {
            EM: em,
            RSVD: rsvd_first,
            EM_MATCH: lambda: em_to_target("auto"),
            SVDS: lambda svds_tol=svds_tol: svds(tol=svds_tol),
            ROWEIS: roweis,
            ROWEIS_MATCH: lambda: em_to_target(0),
        }
        if spectrum == "decaying":  # Roweis' EM at rate 0.91: information only, untimed (bench docstring)
            del fns[ROWEIS], fns[ROWEIS_MATCH]
        results = _interleaved(
            fns,
            ROUNDS,
            warm=(RSVD, SVDS),
            once=(ROWEIS, ROWEIS_MATCH),
            pairs=((RSVD, EM_MATCH),),
            n_pairs=PAIRS,
        )
        t_em = np.array(results[EM][1])
        for label in sorted(results, key=[EM, EM_MATCH, RSVD, SVDS, ROWEIS, ROWEIS_MATCH].index):
            (W, it), times = results[label]
            sin, captured = _accuracy(W, S, exact)
            times = np.array(times)
            rows.append(
                {
                    "part": "fit",
                    "spectrum": spectrum,
                    "shape": f"{n} x {p}",
                    "n": n,
                    "p": p,
                    "method": label,
                    "seconds": float(np.median(times)),
                    "ratio": float(np.median(times) / np.median(t_em)),
                    "seconds_samples": " ".join(f"{v:.6g}" for v in times),  # one per round, in order
                    "sin_to_exact": sin,
                    "variance_captured": captured,
                    "n_iter": it,
                    "svds_tol": svds_tol if label == SVDS else np.nan,
                    "repeats": len(times),
                    "eig_ratio_11_10": lam[K] / lam[K - 1],
                }
            )
        del X, S
    return rows
