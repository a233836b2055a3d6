"""What :mod:`experiments.benchmarks.em_scale` measures (its docstring holds the protocol, the choices and
the goals): :func:`in_memory_rows`, part (a), each fit in a fresh process so that its peak memory is its own,
and :func:`from_disk_rows`, parts (b) and (c), the array written to disk and read back through Dask; the
synthetic data, the interleaved timers and the peak-memory readings they share.
"""

from __future__ import annotations

import multiprocessing as mp
import resource
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from experiments.runner import _common
from experiments.runner.claims import (
    MIN_PAIRS,
)
from repro import ConvergenceWarning
from repro.em_pca import EMPCA, em_pca, subspace_sin
from repro.linalg import Covariance

K = 10
MISSING_FRAC = 0.05
N_LATENT = 32
SPARSE_K = 25  # cardinality of the EMSparsePCA fit in (a): below D / 32, the support path
N_TIMED = 3  # timed EM iterations (each next to its products) of the block EM and EMSparsePCA in (a)
ROWEIS_PAIRS = MIN_PAIRS  # Roweis' iteration in (a): 9 interleaved pairs, decided by call_paired
DISK_TOL = 1e-5  # tol of the reference EM fit from disk (its own error ~ 0.24 * tol, far below 2.8e-2)


def _sizes(quick: bool):
    if quick:
        return (20000, 200), (2**12, 2**8), 512
    return (1_000_000, 1000), (2**17, 2**12), 2048


def _model(p: int, seed: int):
    rng = np.random.default_rng(seed)
    W = np.linalg.qr(rng.standard_normal((p, N_LATENT)))[0] * (10.0 * 0.1 ** (np.arange(N_LATENT) / 31))
    return W, rng.standard_normal(p)


def _fill(out: np.ndarray, W, mu, seed: int, step: int = 8192) -> None:
    """Write ``y = W x + v + mu`` into ``out`` row block by row block, in place (no full-size temporary).

    ``x`` standard normal (``N_LATENT`` entries), ``v`` independent uniform entries on
    ``[-sqrt(3), sqrt(3)]`` (unit variance: isotropic unit noise; uniform draws cost a fifth of normal
    ones, which matters at 1e9 entries); block ``c`` from ``default_rng([seed, c])``.
    """
    tmp = np.empty((min(step, out.shape[0]), out.shape[1]))
    for c, i in enumerate(range(0, out.shape[0], step)):
        rng = np.random.default_rng([seed, c])
        m = min(step, out.shape[0] - i)
        blk, t = out[i : i + m], tmp[:m]
        if blk.flags.c_contiguous:
            rng.random(out=blk)
        else:  # pragma: no cover - the callers pass C-contiguous arrays
            blk[...] = rng.random((m, out.shape[1]))
        blk -= 0.5
        blk *= np.sqrt(12.0)
        np.matmul(rng.standard_normal((m, W.shape[1])), W.T, out=t)
        blk += t
        blk += mu


def _spectrum(p: int) -> np.ndarray:
    lam = np.ones(p)
    lam[:N_LATENT] += (10.0 * 0.1 ** (np.arange(N_LATENT) / 31)) ** 2
    return lam


def _reset_peak() -> None:
    """Start a new peak-RSS window (``VmHWM``) for this process, where the kernel allows it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def interleaved_em(X, Q, s: int | str, n_timed: int) -> tuple[list[float], list[float]]:
    """Iteration times of ``em_pca(X, K)`` and of the two products ``X Q``, ``X'(X Q)``, in pairs.

    One fit with ``max_iter = n_timed``; iteration ``j`` (one pass and the O(pk^2) update) is the time
    between the callbacks ``j`` and ``j + 1``, less the products timed in between. Its reference products
    run right before it for even ``j`` and right after it for odd ``j`` (R I, I R, R I, ...: the order
    alternates, as :func:`experiments.runner.claims.call_paired` asks), so every pair is of neighbours.
    CPU time of the process (one BLAS thread).
    """
    iters: list[float] = []
    refs: list[float] = []
    last: list[float] = []

    def ref() -> None:
        r0 = time.process_time()
        U = X @ Q
        X.T @ U
        refs.append(time.process_time() - r0)

    def cb(t, C, lam):
        now = time.process_time()
        if last:
            iters.append(now - last[0])
            if (t - 1) % 2 == 1:  # odd pair: its reference right after its iteration
                ref()
        if t < n_timed and t % 2 == 0:  # even pair: its reference right before its iteration
            ref()
        last[:] = [time.process_time()]
        return False

    em_pca(X, K, max_iter=n_timed, tol=0.0, random_state=0, n_oversamples=s, callback=cb)
    return iters, refs


class _IterationTimer:
    """The ``callback`` of ``EMSparsePCA``, timing the EM iterations between its calls.

    ``EMSparsePCA`` calls it after every EM iteration (all restarts of a component as one block). Each call
    runs the reference products ``A w``, ``A'(A w)`` (dense ``w``, timed, one BLAS thread) and marks the
    end; the time from that mark to the next call is one EM iteration (products and the O(D) projection
    kernel).
    """

    def __init__(self, data):
        self.data = data
        self.iters: list[float] = []
        self.refs: list[float] = []
        self._last: float | None = None
        self._w = np.random.default_rng(4).standard_normal(data.shape[1])

    def __call__(self, t, W):
        now = time.process_time()
        if self._last is not None:
            self.iters.append(now - self._last)
        with threadpool_limits(1):
            r0 = time.process_time()
            y = self.data @ self._w
            self.data.T @ y
            self.refs.append(time.process_time() - r0)
        self._last = time.process_time()


def _memory_child(n: int, p: int, n_timed: int, cov_rows: int, conn) -> None:
    import gc

    from repro import set_blas_threads
    from repro.em_sparse_pca import EMSparsePCA
    from repro.linalg import choose_operator

    out: dict = {"rows": []}
    t0 = time.perf_counter()
    W, mu = _model(p, 1)
    X = np.empty((n, p))
    _fill(X, W, mu, 11)
    out["fill_seconds"] = time.perf_counter() - t0
    out["rss_data_mb"] = _peak_rss_mb()
    rng = np.random.default_rng(2)
    for label, s, cols, pairs in (
        ("Roweis EM (k = 10 columns)", 0, K, ROWEIS_PAIRS),
        ("block EM + Rayleigh-Ritz (20 columns)", "auto", 2 * K, n_timed),
    ):
        Q = np.linalg.qr(rng.standard_normal((p, cols)))[0]
        _reset_peak()
        t0 = time.perf_counter()
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            em_pca(X[:1000], K, max_iter=2, tol=0.0, random_state=0, n_oversamples=s)  # warm-up
            iters, refs = interleaved_em(X, Q, s, pairs)
        gc.collect()
        out["rows"].append(
            {
                "method": label,
                "iters": iters,
                "refs": refs,
                "wall_seconds": time.perf_counter() - t0,
                "peak_rss_mb": _peak_rss_mb(),
            }
        )
    # EMSparsePCA through the data: centre and scale X in place (C = A'A, A = (X - mean) / sqrt(n - 1)),
    # so that the fit holds no copy, and time its iterations by the operator they go through.
    _reset_peak()
    t0 = time.perf_counter()
    X -= X.mean(axis=0)
    X *= 1.0 / np.sqrt(n - 1)
    op = Covariance(data=X, n_samples=n)
    timer = _IterationTimer(X)
    card = min(SPARSE_K, p // 40)
    est = EMSparsePCA(
        1,
        cardinality=card,
        init="random",
        n_restarts=1,
        renormalize=False,
        tol=1e-15,
        max_iter=n_timed + 1,
        random_state=0,
        operator="data",
        callback=timer,
    )
    set_blas_threads(None)  # the one-off set-up (rank and start: A'A) on both cores; iterations use one
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(op)
    finally:
        set_blas_threads(1)
    T = int(est.n_iter_[0])
    if len(timer.refs) != T:
        raise RuntimeError(
            f"EMSparsePCA made {len(timer.refs)} callbacks for {T} iterations (expected one per iteration): "
            "the timing in bench_em_scale no longer matches the fit's iteration."
        )
    # calls: one after each iteration; interval j (between calls j and j + 1, after reference j) is
    # iteration j + 1, from the sparse iterate of iteration j (iteration 1 starts from the dense start).
    out["rows"].append(
        {
            "method": f"EMSparsePCA (k = 1, cardinality {card}, data)",
            "iters": timer.iters,
            "refs": timer.refs[: T - 1],
            "wall_seconds": time.perf_counter() - t0,
            "peak_rss_mb": _peak_rss_mb(),
            "operator": est.operator_,
            "card": int(est.cardinality_[0]),
        }
    )
    # information: what operator="auto" picks here, and what forming C costs in data iterations (on the
    # first cov_rows rows; both costs are linear in the rows)
    out["auto_one_start"] = choose_operator(n, p, n_vectors=1)
    out["auto_default_starts"] = choose_operator(n, p, n_vectors=5)
    with threadpool_limits(1):
        sub = X[:cov_rows]
        form, it = [], []
        for _ in range(1):  # information only: one repeat
            r0 = time.process_time()
            Covariance.from_data(sub, operator="covariance")
            form.append(time.process_time() - r0)
            r0 = time.process_time()
            y = sub @ timer._w
            sub.T @ y
            it.append(time.process_time() - r0)
    out["cov_form_iterations"] = float(np.median(form) / np.median(it))
    del op, timer, X, sub
    gc.collect()
    conn.send(out)
    conn.close()


def _run_child(ctx, target, args, parent, child) -> dict:
    """Run ``target(*args)`` in a fresh process and return what it sends (its memory goes back on exit)."""
    proc = ctx.Process(target=target, args=args)
    proc.start()
    child.close()  # so that a child that dies ends recv() instead of leaving it waiting
    try:
        out = parent.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"{target.__name__} exited with code {proc.exitcode} before reporting") from None
    proc.join()
    return out


def in_memory_rows(cfg: _common.Config) -> list[dict]:
    (n, p), _, _ = _sizes(cfg.quick)
    n_timed = 4 if cfg.quick else N_TIMED
    cov_rows = min(n, 50000)
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    out = _run_child(ctx, _memory_child, (n, p, n_timed, cov_rows, child), parent, child)
    rows = []
    for r in out["rows"]:
        it, ref = np.asarray(r["iters"]), np.asarray(r["refs"])
        samples = it / ref
        rows.append(
            {
                "part": "in_memory",
                "method": r["method"],
                "shape": f"{n} x {p}",
                "n": n,
                "p": p,
                "seconds": float(np.median(it)),
                "ref_seconds": float(np.median(ref)),
                "ratio": float(np.median(samples)),
                "ratio_samples": " ".join(f"{v:.4g}" for v in samples),
                "repeats": len(samples),
                "wall_seconds": r["wall_seconds"],
                "peak_rss_mb": r["peak_rss_mb"],
                "array_mb": n * p * 8 / 2**20,
                "fill_seconds": out["fill_seconds"],
                "operator": r.get("operator", ""),
                "auto_one_start": out["auto_one_start"] if "operator" in r else "",
                "auto_default_starts": out["auto_default_starts"] if "operator" in r else "",
                "cov_form_iterations": out["cov_form_iterations"] if "operator" in r else np.nan,
                "cov_rows": cov_rows,
            }
        )
    return rows


class _ChunkReader:
    """Array-like over a float64 file: ``__getitem__`` maps the file, copies the rows out and unmaps it.

    Optionally inserts NaN at a reproducible random ``missing`` fraction of the entries of each read.
    """

    def __init__(self, path: str, shape: tuple[int, int], missing: float = 0.0):
        self.path, self.shape, self.missing = path, shape, missing
        self.dtype = np.dtype(np.float64)
        self.ndim = 2

    def __getitem__(self, key):
        mm = np.memmap(self.path, dtype=np.float64, mode="r", shape=self.shape)
        out = np.array(mm[key])
        del mm
        if self.missing and out.size:
            rows = key[0] if isinstance(key, tuple) else key
            rng = np.random.default_rng([7, rows.start or 0])
            flat = out.reshape(-1)
            flat[rng.integers(0, flat.size, int(self.missing * flat.size))] = np.nan  # ~missing (repeats)
        return out


def _peak_rss_mb() -> float:
    """Peak resident memory of this process (``VmHWM``; ``ru_maxrss`` would carry the parent's peak over
    ``fork`` + ``exec`` on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Stop(Exception):
    """Raised by a callback to end a fit once what is timed has been measured."""


def _disk_child(path: str, shape, chunk_rows: int, quick: bool, conn) -> None:
    import dask
    import dask.array as da

    dask.config.set(scheduler="threads", num_workers=2)
    out: dict = {}
    X = da.from_array(_ChunkReader(path, shape), chunks=(chunk_rows, shape[1]), asarray=False, name=False)
    stamps, cpu, bases = [], [], []

    def cb(t, C, lam):
        stamps.append(time.perf_counter())
        cpu.append(time.process_time())
        bases.append(np.array(C))
        return False

    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = EMPCA(K, tol=DISK_TOL, max_iter=200, random_state=0, callback=cb).fit(X)
    bases_ref = list(bases)
    out["em_seconds"] = time.perf_counter() - t0
    out["em_iter"] = ref.n_iter_
    out["em_converged"] = ref.converged_
    V = ref.components_.T
    out["timeline_s"] = [s - t0 for s in stamps]
    out["timeline_cpu_s"] = [c - c0 for c in cpu]
    out["timeline_sin"] = [subspace_sin(Bt, V) for Bt in bases_ref]
    out["rss_after_em_mb"] = _peak_rss_mb()
    # (c) svd_compressed on the centred array
    t0, c0 = time.perf_counter(), time.process_time()
    Xc = X - ref.mean_
    # compute=True: the input is read again for every pass instead of being held in memory between
    # passes (with the default compute=False the scheduler keeps the chunks: peak memory of the array)
    _, _, v = da.linalg.svd_compressed(Xc, k=K, n_power_iter=2, seed=0, compute=True)
    v = v.compute()
    out["svd_seconds"] = time.perf_counter() - t0
    out["svd_cpu_seconds"] = time.process_time() - c0
    out["svd_sin"] = subspace_sin(v.T, V)
    out["rss_after_svd_mb"] = _peak_rss_mb()
    # missing values: a few iterations of the generalized e-step on the same array, 5% NaN
    Xm = da.from_array(
        _ChunkReader(path, shape, MISSING_FRAC), chunks=(chunk_rows, shape[1]), asarray=False, name=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm = np.random.default_rng(0).standard_normal((50, 20))
        warm[np.eye(50, 20, dtype=bool)] = np.nan
        EMPCA(2, max_iter=2).fit(da.from_array(warm, chunks=(25, 20)))  # compile the e-step kernel first
    stamps.clear()

    def cb_stop(t, C, lam):  # time stamps; abort after the second (no final Rayleigh-Ritz pass: untimed)
        stamps.append(time.perf_counter())
        if len(stamps) == 2:
            raise _Stop

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        try:
            EMPCA(K, tol=0.0, max_iter=1, random_state=0, callback=cb_stop).fit(Xm)
        except _Stop:
            pass
        t_all = stamps[1] - t0
    # callbacks after the e-steps of iterations 0 and 1: one full iteration (e-step + m-step) between them
    out["missing_s_per_iter"] = stamps[1] - stamps[0]
    out["missing_setup_s"] = t_all - out["missing_s_per_iter"]
    out["peak_rss_mb"] = _peak_rss_mb()
    conn.send(out)
    conn.close()


def from_disk_rows(cfg: _common.Config) -> list[dict]:
    _, (n, p), chunk_rows = _sizes(cfg.quick)
    W, mu = _model(p, 3)
    with tempfile.TemporaryDirectory(prefix="bench_em_scale_") as tmp:
        path = str(Path(tmp) / "Y.f64")
        t0 = time.perf_counter()
        mm = np.memmap(path, dtype=np.float64, mode="w+", shape=(n, p))
        _fill(mm, W, mu, 13)
        mm.flush()
        del mm
        write_s = time.perf_counter() - t0
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        out = _run_child(ctx, _disk_child, (path, (n, p), chunk_rows, cfg.quick, child), parent, child)
    rows = []
    base = {
        "part": "disk",
        "shape": f"{n} x {p}",
        "n": n,
        "p": p,
        "chunk_rows": chunk_rows,
        "array_mb": n * p * 8 / 2**20,
        "write_seconds": write_s,
    }
    lam = _spectrum(p)
    rate = lam[K] / lam[K - 1]  # Roweis' iteration converges at lambda_11/lambda_10 (planted spectrum)
    roweis_iters = int(np.ceil(np.log(1e-6) / np.log(rate)))
    rows.append(
        {
            **base,
            "method": f"EMPCA(10) default, tol {DISK_TOL:g}",
            "seconds": out["em_seconds"],
            "n_iter": out["em_iter"],
            "converged": out["em_converged"],
            "peak_rss_mb": out["peak_rss_mb"],
            "rss_after_em_mb": out["rss_after_em_mb"],
            "lam10": lam[K - 1],
            "lam11": lam[K],
        }
    )
    for t, c, s in zip(out["timeline_s"], out["timeline_cpu_s"], out["timeline_sin"], strict=True):
        rows.append({**base, "method": "EM timeline", "seconds": t, "cpu_seconds": c, "sin_to_reference": s})
    rows.append(
        {
            **base,
            "method": "svd_compressed (n_power_iter=2)",
            "seconds": out["svd_seconds"],
            "cpu_seconds": out["svd_cpu_seconds"],
            "sin_to_reference": out["svd_sin"],
        }
    )
    rows.append(
        {
            **base,
            "method": f"EM with {MISSING_FRAC:.0%} missing, per iteration",
            "seconds": out["missing_s_per_iter"],
            "setup_seconds": out["missing_setup_s"],
            "n_iter": roweis_iters,
            # set-up, the iterations, and the final Rayleigh-Ritz pass (about one iteration's reading)
            "extrapolated_seconds": out["missing_setup_s"] + (roweis_iters + 1) * out["missing_s_per_iter"],
        }
    )
    return rows
