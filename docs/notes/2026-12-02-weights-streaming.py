"""The measurements of the note 2026-12-02-weights-streaming.md (run: python this_file.py).

Needs, besides the project's environment, ``wpca`` (PyPI) and sbailey/empca's ``empca.py`` on the path
(PYTHONPATH=/tmp/peerpkgs:/tmp/peerpkgs/empca_src); neither is a dependency of the project.

A. Per-entry weights: the weighted objective J = sum_ij w_ij (x_ij - mean_j - z_i'c_j)^2 each method
   reaches, evaluated the same way for all (its mean and components, the best coordinates of every row
   given them), and the time of each fit, 3 rounds, median; ratios against EMPCA in the same run.
B. partial_fit against scikit-learn's IncrementalPCA on the same batches: time, accuracy against the exact
   sample covariance, and the peak memory the stream allocates (tracemalloc, the batches excluded).
"""

from __future__ import annotations

import os
import time
import tracemalloc

import numpy as np
from sklearn.decomposition import IncrementalPCA

from repro import EMPCA, EMSparsePCA

ROUNDS = 3


def objective(X0, w, mean, V):
    """J at (mean, V) with the best coordinates of each row (weighted least squares per row)."""
    D = X0 - mean
    A = np.einsum("ij,kj,lj->ikl", w, V, V)
    b = (w * D) @ V.T
    Z = np.linalg.solve(A + 1e-300 * np.eye(V.shape[0]), b[..., None])[..., 0]
    R = D - Z @ V
    return float((w * R * R).sum())


def spectra(n=500, p=100, k=5, seed=0):
    """Rank-k signal, heteroscedastic noise (per-entry sigma), 10% of the entries missing (w = 0)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, p)
    basis = np.array([np.sin((j + 1) * np.pi * t) for j in range(k)])
    X = 5 + (rng.standard_normal((n, k)) * np.linspace(3, 1, k)) @ basis
    sigma = rng.uniform(0.05, 1.0, (n, p))
    X = X + sigma * rng.standard_normal((n, p))
    w = 1 / sigma**2
    w[rng.random((n, p)) < 0.1] = 0.0
    return X, w


def timed(fn):
    times, out = [], None
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times))


def _wpca():
    """wpca 0.1 with today's scikit-learn and SciPy: two renamed keywords (check_array's force_all_finite
    is ensure_all_finite, eigh's eigvals is subset_by_index); the algorithms are untouched."""
    import types

    import scipy.linalg
    import sklearn.utils
    import wpca
    import wpca.utils
    import wpca.wpca

    def check_array(X, **kw):
        if "force_all_finite" in kw:
            kw["ensure_all_finite"] = kw.pop("force_all_finite")
        return sklearn.utils.check_array(X, **kw)

    def eigh(a, eigvals=None, **kw):
        return scipy.linalg.eigh(a, subset_by_index=eigvals, **kw)

    wpca.utils.check_array = check_array
    wpca.wpca.linalg = types.SimpleNamespace(eigh=eigh)
    return wpca


def part_a():
    import empca as sbailey

    wpca = _wpca()

    X, w = spectra()
    X0 = np.where(w > 0, X, 0.0)
    k = 5
    wmean = (w * X0).sum(0) / w.sum(0)
    rows = []
    ours, t_ours = timed(lambda: EMPCA(k).fit(X, weights=w))
    rows.append(("repro EMPCA(weights=)", objective(X0, w, ours.mean_, ours.components_), t_ours))
    m, t = timed(lambda: wpca.WPCA(k).fit(X0, weights=w))
    rows.append(("wpca.WPCA", objective(X0, w, m.mean_, m.components_), t))
    m, t = timed(lambda: wpca.EMPCA(k, max_iter=100, random_state=0).fit(X0, weights=w))
    rows.append(("wpca.EMPCA (max_iter=100)", objective(X0, w, m.mean_, m.components_), t))
    Xc = np.where(w > 0, X0 - wmean, 0.0)
    m, t = timed(lambda: sbailey.empca(Xc, w, niter=100, nvec=k, silent=True))
    V = np.linalg.qr(m.eigvec.T)[0].T
    rows.append(("sbailey/empca (niter=100, weighted mean removed)", objective(X0, w, wmean, V), t))
    print("| method | J | J / J(repro) | time (s) | time / time(repro) |")
    print("| --- | --- | --- | --- | --- |")
    for name, J, t in rows:
        print(f"| {name} | {J:.6g} | {J / rows[0][1]:.6f} | {t:.3f} | {t / t_ours:.2f} |")


def batches(n, p, size, seed=1):
    """Rows of a spiked model, generated batch by batch (so the data never sit in memory at once)."""
    rng = np.random.default_rng(seed)
    scale = np.r_[np.linspace(10, 3, 10), np.ones(p - 10)]
    for _ in range(n // size):
        yield rng.standard_normal((size, p)) * scale + 2.0


def _stream(make, n, p, size, memory_batches=10):
    """The time of a stream over every batch, then (in a second stream, traced) the peak memory that
    ``partial_fit`` allocates over the first ``memory_batches`` batches (the batches not counted)."""
    est = make()
    t0 = time.perf_counter()
    for B in batches(n, p, size):
        est.partial_fit(B)
    elapsed = time.perf_counter() - t0
    traced, peak = make(), 0
    for i, B in enumerate(batches(n, p, size)):
        if i == memory_batches:
            break
        tracemalloc.start()
        traced.partial_fit(B)
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return est, elapsed, peak


def part_b(n, p, size, k=10):
    from repro._stream import RunningScatter

    exact = RunningScatter(p)
    for B in batches(n, p, size):
        exact.add(B, np.ones(size))
    values, vectors = np.linalg.eigh(exact.scatter() / (n - 1))
    top, V = values[::-1][:k], vectors[:, ::-1][:, :k]
    print(f"n = {n}, p = {p}, batches of {size}, k = {k}")
    head = "| method | time (s) | time / time(repro) | sin angle to exact | max rel. error of variances |"
    print(head + " peak MiB |")
    print("| --- | --- | --- | --- | --- | --- |")
    res = []
    for name, make in (
        ("repro EMPCA.partial_fit", lambda: EMPCA(k)),
        ("sklearn IncrementalPCA", lambda: IncrementalPCA(k)),
    ):
        est, t, peak = _stream(make, n, p, size)
        W = est.components_.T
        sin = float(np.linalg.norm(W - V @ (V.T @ W), 2))
        rel = float(np.abs(est.explained_variance_ / top - 1).max())
        res.append((name, t, sin, rel, peak / 2**20))
        bound = getattr(est, "sketch_error_bound_", None)
        if bound is not None:
            print(f"(sketch_error_bound_ = {bound:.4g}, top eigenvalue {top[0]:.4g})")
    for name, t, sin, rel, mib in res:
        print(f"| {name} | {t:.2f} | {t / res[0][1]:.2f} | {sin:.2e} | {rel:.2e} | {mib:.1f} |")
    _, t, peak = _stream(lambda: EMSparsePCA(1, cardinality=20, random_state=0, certify=False), n, p, size)
    print(f"EMSparsePCA(cardinality=20).partial_fit: {t:.2f} s, peak {peak / 2**20:.1f} MiB")


if __name__ == "__main__":
    print(os.popen("uptime").read().strip())
    part_a()
    print(os.popen("uptime").read().strip())
    part_b(100_000, 200, 1000)
    print(os.popen("uptime").read().strip())
    part_b(10_000, 5000, 1000)
    print(os.popen("uptime").read().strip())
