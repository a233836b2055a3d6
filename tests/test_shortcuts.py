"""The exact shortcuts against the algorithms as written: every family fitted with its shortcuts on (the
default) and inside ``repro._shortcuts.off()`` gives the same components, variances and supports, on
inputs built so that each shortcut is taken (counted through monkeypatch, on and off). Tolerances are
round-off of the quantity compared: loadings to ``1e-9`` (unit vectors through iterative methods stopped
at ``tol``; a sign or a different support would be off by order one), variances relative to ``1e-10``.
"""

from __future__ import annotations

from importlib import import_module

import numpy as np
import pytest

import repro
from repro import _shortcuts, linalg
from repro._chunked import DenseSource
from repro.baselines import pathspca
from repro.spannogram._kernels import uses_bounded, uses_pruned

# (repro.em_pca and its neighbours are also the names of functions: the modules by their full names)
pathspca_mod = import_module("repro.baselines.pathspca")
em_blocks = import_module("repro.em_pca.blocks")
esp_alg = import_module("repro.em_sparse_pca.algorithm")
esp_ops = import_module("repro.em_sparse_pca.operators")
nspca_alg = import_module("repro.nspca.algorithm")
sampled = import_module("repro.spannogram.sampled")

VEC_TOL = 1e-9
VAL_RTOL = 1e-10


def _counter(monkeypatch, owner, name):
    """Replace ``owner.name`` by a wrapper that counts its calls; returns the one-element count list."""
    calls = [0]
    inner = getattr(owner, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return inner(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def _on_off(fit, counts):
    """``fit()`` with the shortcuts on, then off; the counters' values after each."""
    for c in counts:
        c[0] = 0
    on = fit()
    seen_on = [c[0] for c in counts]
    for c in counts:
        c[0] = 0
    with _shortcuts.off():
        assert not _shortcuts.enabled
        off = fit()
    assert _shortcuts.enabled
    return on, off, seen_on, [c[0] for c in counts]


def _same_supports(A, B):
    np.testing.assert_array_equal(np.asarray(A) != 0, np.asarray(B) != 0)


def test_switch_restores_on_error():
    with pytest.raises(RuntimeError), _shortcuts.off():
        raise RuntimeError("inside")
    assert _shortcuts.enabled
    with _shortcuts.off(), _shortcuts.off():
        pass
    assert _shortcuts.enabled


# ------------------------------------------------------------------------------------------- repro.linalg
def test_linalg_lanczos_eigvec_and_support_products(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 60)) @ np.diag(np.linspace(3.0, 0.5, 60))
    X[:, :40] += 3.0 * rng.standard_normal((300, 1))  # a leading eigenvalue well apart: Lanczos certifies
    C = linalg.Covariance.from_matrix(np.cov(X, rowvar=False))
    w = np.zeros(60)
    w[:40] = 1.0 + 0.1 * rng.standard_normal(40)
    counts = [_counter(monkeypatch, linalg, "lanczos_top"), _counter(monkeypatch, linalg, "_top_eigh")]
    (v_on, h_on), (v_off, h_off), on, off = _on_off(lambda: repro.renormalize(C, w), counts)
    assert on == [1, 0] and off == [0, 1]  # the 40 x 40 support: Lanczos on (no dsyevr), dsyevr off
    np.testing.assert_allclose(v_on, v_off, atol=VEC_TOL)
    assert h_on == pytest.approx(h_off, rel=VAL_RTOL)

    D = linalg.Covariance.from_data(X)  # data-backed: X w through the support's columns
    W = np.zeros((3, 60))  # fewer rows than a block product: one row at a time
    W[:, :1] = 1.0
    gather = _counter(monkeypatch, linalg, "support_matvec")
    (F_on, q_on), (F_off, q_off), on, off = _on_off(lambda: D.products(W), [gather])
    assert on == [3] and off == [0]
    np.testing.assert_allclose(F_on, F_off, rtol=1e-12, atol=1e-12 * np.abs(F_off).max())
    np.testing.assert_allclose(q_on, q_off, rtol=1e-12)


# ---------------------------------------------------------------------------------------- EMSparsePCA
def _esp(X, **kw):
    def fit():
        est = repro.EMSparsePCA(random_state=0, **kw).fit(X)
        return est.components_, est.explained_variance_, est.operator_

    return fit


def _compare_esp(on, off):
    (C_on, v_on, _), (C_off, v_off, _) = on, off
    _same_supports(C_on, C_off)
    np.testing.assert_allclose(C_on, C_off, atol=VEC_TOL)
    np.testing.assert_allclose(v_on, v_off, rtol=VAL_RTOL)


def test_em_sparse_pca_wide_screened(monkeypatch):
    # N = 40 < D = 400 through the data: the screened iterations, the top Gram pairs of the start, the
    # supports' own operators of the non-negative renormalization
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 400))
    X[:, :12] += 3.0 * rng.standard_normal((40, 1))
    counts = [
        _counter(monkeypatch, esp_alg._Screen, "reset"),
        _counter(monkeypatch, esp_alg, "_em_on_support"),
    ]
    on, off, seen_on, seen_off = _on_off(_esp(X, cardinality=10, nonneg=True), counts)
    assert all(c > 0 for c in seen_on) and seen_off == [0, 0]
    assert on[2] == off[2] == "data"
    _compare_esp(on, off)


def test_em_sparse_pca_wide_two_components(monkeypatch):
    # deflation, signed, renormalize=True: the supports' products of the EM kernel on the data
    rng = np.random.default_rng(2)
    X = rng.standard_normal((30, 300))
    X[:, :8] += 2.0 * rng.standard_normal((30, 1))
    X[:, 8:20] += 1.5 * rng.standard_normal((30, 1))
    scr = _counter(monkeypatch, esp_alg._Screen, "reset")
    on, off, seen_on, seen_off = _on_off(_esp(X, n_components=2, cardinality=8, renormalize=True), [scr])
    assert seen_on[0] > 0 and seen_off == [0]
    _compare_esp(on, off)


def test_em_sparse_pca_tall_covariance(monkeypatch):
    # N = 2000 > D = 160: the covariance operator, its Lanczos start, the float32 search (an approximate
    # search whose weights are recomputed in float64: equal when it finds the same support, as here) and
    # Lanczos on the 40-feature support
    rng = np.random.default_rng(3)
    X = rng.standard_normal((2000, 160))
    X[:, :40] += 1.2 * rng.standard_normal((2000, 1))
    counts = [
        _counter(monkeypatch, esp_alg, "_top_pc_lanczos"),
        _counter(monkeypatch, esp_ops._SearchCovariance, "from_exact"),
        _counter(monkeypatch, linalg, "lanczos_top"),
    ]
    on, off, seen_on, seen_off = _on_off(_esp(X, cardinality=40), counts)
    assert all(c > 0 for c in seen_on) and seen_off == [0, 0, 0]
    assert on[2] == "covariance" and off[2] == "data"
    _compare_esp(on, off)


def test_em_sparse_pca_matrix_support_products(monkeypatch):
    # a given covariance, K = 3 of 200: C w through the support in the whole-run kernel (the products'
    # flag is the kernel's argument: seen through what the kernel is called with)
    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 200))
    X[:, :3] += 2.0 * rng.standard_normal((400, 1))
    C = linalg.Covariance.from_matrix(np.cov(X, rowvar=False))
    fractions = []
    inner = esp_alg.em_rows_matrix

    def spy(*args):
        fractions.append(args[-1])
        return inner(*args)

    monkeypatch.setattr(esp_alg, "em_rows_matrix", spy)
    on = _esp(C, cardinality=3, n_restarts=4)()
    assert fractions and set(fractions) == {linalg.SPARSE_FRACTION}
    fractions.clear()
    with _shortcuts.off():
        off = _esp(C, cardinality=3, n_restarts=4)()
    assert fractions and all(3 * f >= 200 for f in fractions)  # never through the support
    _compare_esp(on, off)


# ---------------------------------------------------------------------------------------------- EMPCA
@pytest.mark.parametrize("k", [1, 3])
def test_em_pca(monkeypatch, k):
    # k = 1: the fused rank-one kernel; k = 3 (oversampled): the last pass's Gram product first
    rng = np.random.default_rng(1)  # (a draw whose last pass is predicted: seeds 1, 2, 4, 7 of 0-7)
    X = rng.standard_normal((500, 30)) / np.arange(1, 31)
    counts = [_counter(monkeypatch, em_blocks, "_em_rank1"), _counter(monkeypatch, DenseSource, "gram")]

    def fit():
        est = repro.EMPCA(n_components=k, random_state=0).fit(X)
        return est.components_, est.explained_variance_, est.n_iter_

    on, off, seen_on, seen_off = _on_off(fit, counts)
    assert seen_on[0 if k == 1 else 1] > 0 and seen_off == [0, 0]
    np.testing.assert_allclose(on[0], off[0], atol=VEC_TOL)
    np.testing.assert_allclose(on[1], off[1], rtol=VAL_RTOL)
    assert on[2] == off[2]  # the same iterates: the same stop


# ---------------------------------------------------------------------------------------------- NSPCA
def test_nspca(monkeypatch):
    # d = 70 > one block of 32 deferred rows, two components
    rng = np.random.default_rng(6)
    X = np.abs(rng.standard_normal((200, 70))) + rng.standard_normal((200, 1))
    args = []
    inner = nspca_alg._nspca_fit_kernel

    def spy(*a):
        args.append(a[-3:])
        return inner(*a)

    monkeypatch.setattr(nspca_alg, "_nspca_fit_kernel", spy)

    def fit():
        est = repro.NSPCA(n_components=2, alpha=1e-2, beta=1e-3, random_state=0).fit(X)
        return est.components_, est.n_iter_

    on = fit()
    with _shortcuts.off():
        off = fit()
    assert args == [(32, nspca_alg._REFRESH, -1), (1, 1, 0)]
    _same_supports(on[0], off[0])
    np.testing.assert_allclose(on[0], off[0], atol=VEC_TOL)
    assert on[1] == off[1]


# ----------------------------------------------------------------------------------------- spannogram
@pytest.mark.parametrize("kmax", [20, 300])
def test_spannogram_path(monkeypatch, kmax):
    # 1000 features: kmax = 20 takes the pruned pass, kmax = 300 the bounded one (non-negative)
    n = 1000
    assert uses_pruned(n, kmax) or uses_bounded(n, kmax)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, n)) * rng.pareto(3.0, n)
    counts = [_counter(monkeypatch, sampled, "allk_pass"), _counter(monkeypatch, sampled, "_allk_pass_full")]

    def fit():
        p = repro.spannogram_path(X, [1, 5, kmax], n_samples=300, random_state=0)
        return p.components, p.variance, p.upper_bound

    on, off, seen_on, seen_off = _on_off(fit, counts)
    assert seen_on == [1, 0] and seen_off == [0, 1]
    _same_supports(on[0], off[0])
    np.testing.assert_allclose(on[0], off[0], atol=VEC_TOL)
    np.testing.assert_allclose(on[1], off[1], rtol=VAL_RTOL)
    np.testing.assert_allclose(on[2], off[2], rtol=VAL_RTOL)


# ------------------------------------------------------------------------------------------- PathSPCA
def test_pathspca_wide(monkeypatch):
    # N = 30 < D = 80 up to K = 50: the data, then the pattern's Gram matrix past K = N
    rng = np.random.default_rng(8)
    X = rng.standard_normal((30, 80))
    X[:, :10] += 2.0 * rng.standard_normal((30, 1))
    sizes = []
    inner = pathspca_mod._top_eigh

    def spy(M):
        sizes.append(M.shape[0])
        return inner(M)

    monkeypatch.setattr(pathspca_mod, "_top_eigh", spy)

    def fit():
        sizes.clear()
        p = pathspca(X, max_cardinality=50)
        return p.components, p.variance, list(sizes)

    on, off, _, _ = _on_off(fit, [])
    assert max(on[2]) == 30 and max(off[2]) == 50  # on: N x N past K = N; off: C[I, I] throughout
    _same_supports(on[0], off[0])
    np.testing.assert_allclose(on[0], off[0], atol=VEC_TOL)
    np.testing.assert_allclose(on[1], off[1], rtol=VAL_RTOL)
