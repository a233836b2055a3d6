"""The exact shortcuts' gain: each case fitted with the shortcuts on and inside ``repro._shortcuts.off()``,
in interleaved pairs (the order alternating), timed with the process CPU clock (one BLAS thread), after
one untimed call of each; per case the median and range of the on / off ratios, the median times, and the
largest difference of the results (absolute, and relative to the largest entry).

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. \
        python docs/notes/2026-12-03-shortcuts.py [PAIRS] [NAME]

``NAME``: only the cases whose name contains it.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import repro
from repro import _shortcuts, linalg
from repro.baselines import pathspca


def _est(make, X):
    def fit():
        e = make().fit(X)
        return e.components_, e.explained_variance_

    return fit


def _path(fn, *args, **kw):
    def fit():
        p = fn(*args, **kw)
        return p.components, p.variance

    return fit


def cases():
    rng = np.random.default_rng(0)
    Xw = rng.standard_normal((72, 3000))
    Xw[:, :30] += 2.0 * rng.standard_normal((72, 1))
    yield (
        "EMSparsePCA N=72 D=3000 K=20 nonneg (screen, Gram pairs, support EM)",
        _est(lambda: repro.EMSparsePCA(cardinality=20, nonneg=True, random_state=0), Xw),
    )
    Xt = rng.standard_normal((5000, 200))
    Xt[:, :40] += 1.2 * rng.standard_normal((5000, 1))
    yield (
        "EMSparsePCA N=5000 D=200 K=40 (covariance, Lanczos start, float32 search)",
        _est(lambda: repro.EMSparsePCA(cardinality=40, random_state=0), Xt),
    )
    Xe = rng.standard_normal((3000, 200)) / np.arange(1, 201) ** 0.5
    yield "EMPCA k=1 N=3000 D=200 (fused rank-one)", _est(lambda: repro.EMPCA(random_state=0), Xe)
    # (a draw whose last pass is predicted: seeds 2, 3, 4 of 0-5 with this spectrum)
    Xg = np.random.default_rng(2).standard_normal((3000, 200)) / np.arange(1, 201)
    yield (
        "EMPCA k=5 N=3000 D=200 (predicted last pass)",
        _est(lambda: repro.EMPCA(n_components=5, random_state=0), Xg),
    )
    Xn = np.abs(rng.standard_normal((300, 200))) + rng.standard_normal((300, 1))
    yield (
        "NSPCA d=200 k=2 (deferred/sparse AU updates, cache refresh)",
        _est(lambda: repro.NSPCA(n_components=2, alpha=1e-2, beta=1e-3, random_state=0), Xn),
    )
    Xs = rng.standard_normal((60, 3000)) * rng.pareto(3.0, 3000)
    yield (
        "spannogram_path n=3000 kmax=50 (pruned pass)",
        _path(repro.spannogram_path, Xs, [1, 10, 50], n_samples=2000, random_state=0),
    )
    yield (
        "spannogram_path n=3000 kmax=1000 (bounded pass)",
        _path(repro.spannogram_path, Xs, [1, 100, 1000], n_samples=300, random_state=0),
    )
    Xp = rng.standard_normal((50, 600))
    Xp[:, :20] += 2.0 * rng.standard_normal((50, 1))
    yield "PathSPCA N=50 D=600 kmax=300 (data, Gram past K=N)", _path(pathspca, Xp, max_cardinality=300)
    Y = rng.standard_normal((2000, 400)) @ np.diag(np.linspace(3, 0.5, 400))
    C = linalg.Covariance.from_matrix(np.cov(Y, rowvar=False))
    w = np.zeros(400)
    w[:200] = 1.0 + 0.1 * rng.standard_normal(200)
    yield (
        "renormalize 200 of 400, relative gap 2.6% (Lanczos uncertified -> dsyevr)",
        lambda: repro.renormalize(C, w),
    )
    Y2 = Y.copy()
    Y2[:, :200] += 3.0 * rng.standard_normal((2000, 1))
    C2 = linalg.Covariance.from_matrix(np.cov(Y2, rowvar=False))
    yield "renormalize 200 of 400, spiked (Lanczos certified)", lambda: repro.renormalize(C2, w)


def cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def off(fn):
    with _shortcuts.off():
        return cpu(fn)


def main(pairs: int, only: str) -> None:
    print("load", os.getloadavg())
    for name, fn in cases():
        if only not in name:
            continue
        fn()
        off(fn)
        ratios, t_on, t_off = [], [], []
        for i in range(pairs):
            if i % 2 == 0:
                a, r_on = cpu(fn)
                b, r_off = off(fn)
            else:
                b, r_off = off(fn)
                a, r_on = cpu(fn)
            ratios.append(a / b)
            t_on.append(a)
            t_off.append(b)
        diffs = [np.abs(np.asarray(x) - np.asarray(y)) for x, y in zip(r_on, r_off, strict=True)]
        dv = max(float(d.max()) for d in diffs)
        scale = [max(float(np.abs(y).max()), 1e-300) for y in r_off]
        rel = max(float(d.max()) / m for d, m in zip(diffs, scale, strict=True))
        r = np.sort(ratios)
        print(
            f"{name}: on/off CPU median {np.median(r):.3f} range [{r[0]:.3f}, {r[-1]:.3f}] (on "
            f"{np.median(t_on) * 1e3:.1f} ms, off {np.median(t_off) * 1e3:.1f} ms); max |on - off| {dv:.2e}, "
            f"rel {rel:.2e}"
        )
    print("load", os.getloadavg())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7, sys.argv[2] if len(sys.argv) > 2 else "")
