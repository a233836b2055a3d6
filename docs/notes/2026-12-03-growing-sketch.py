"""The measurements of the note 2026-12-03-growing-sketch.md: the Frequent Directions sketch of fixed size
(2 k + 64 rows) against the sketch that grows with the tail, on the spiked model of the note
2026-12-02-weights-streaming.md (ten spikes of standard deviation 10 ... 3 over unit noise, p = 5000),
and scikit-learn's IncrementalPCA on the same batches. Process CPU time, one BLAS thread for all three.

Run: python docs/notes/2026-12-03-growing-sketch.py [n] (default n = 4000, batches of 500).
"""

import sys
import time

import numpy as np
import scipy.sparse.linalg as sla
from sklearn.decomposition import IncrementalPCA
from threadpoolctl import threadpool_limits

import repro._stream
from repro import EMPCA


def batches(n, p, size, seed=1):
    rng = np.random.default_rng(seed)
    scale = np.r_[np.linspace(10, 3, 10), np.ones(p - 10)]
    for _ in range(n // size):
        yield rng.standard_normal((size, p)) * scale + 2.0


def main(n=4000, p=5000, size=500, k=10):
    X = np.vstack(list(batches(n, p, size)))
    Xc = X - X.mean(axis=0)
    with threadpool_limits(1, user_api="blas"):
        C = sla.LinearOperator((p, p), matvec=lambda v: Xc.T @ (Xc @ v) / (n - 1), dtype=float)
        values, V = sla.eigsh(C, k=k, which="LA", tol=1e-12)
    order = np.argsort(values)[::-1]
    values, V = values[order], V[:, order]
    print(f"n = {n}, p = {p}, batches of {size}, k = {k}; eigenvalues {values[0]:.4g} ... {values[-1]:.4g}")
    print(
        "| method | rows | CPU s | CPU / CPU(fixed) | sin of the largest angle |"
        " max rel. error of the variances | bound | bound / l_k |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    t_fixed = None
    runs = (("EMPCA.partial_fit, fixed sketch", np.inf), ("EMPCA.partial_fit, growing sketch", None))
    for name, tol in runs:
        old = repro._stream.SKETCH_TOL
        if tol is not None:
            repro._stream.SKETCH_TOL = tol
        try:
            est = EMPCA(k)
            t0 = time.process_time()
            for B in batches(n, p, size):
                est.partial_fit(B)
            t = time.process_time() - t0
        finally:
            repro._stream.SKETCH_TOL = old
        t_fixed = t if t_fixed is None else t_fixed
        W = est.components_.T
        sin = float(np.linalg.norm(W - V @ (V.T @ W), 2))
        rel = float(np.abs(est.explained_variance_ / values - 1).max())
        b = est.sketch_error_bound_
        print(
            f"| {name} | {est._stream.ell} | {t:.1f} | {t / t_fixed:.2f} | {sin:.2g} | {rel:.2g} |"
            f" {b:.3g} | {b / values[-1]:.3g} |"
        )
    with threadpool_limits(1, user_api="blas"):
        ipca = IncrementalPCA(k)
        t0 = time.process_time()
        for B in batches(n, p, size):
            ipca.partial_fit(B)
        t = time.process_time() - t0
    W = ipca.components_.T
    sin = float(np.linalg.norm(W - V @ (V.T @ W), 2))
    rel = float(np.abs(ipca.explained_variance_ / values - 1).max())
    print(f"| IncrementalPCA.partial_fit | - | {t:.1f} | {t / t_fixed:.2f} | {sin:.2g} | {rel:.2g} | - | - |")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
