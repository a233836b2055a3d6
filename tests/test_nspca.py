"""NSPCA (Zass & Shashua 2006): the entry update, the cubic solver, sweeps, caches, the estimator."""

from __future__ import annotations

import naive
import numpy as np
import pytest
from sklearn.base import clone

from repro.metrics import min_angle_deg
from repro.nspca import (
    NSPCA,
    CardinalityNotReached,
    nspca,
    nspca_for_cardinality,
    nspca_for_min_angle,
    nspca_objective,
)
from repro.nspca import _kernels as K


def quartic(x, c1, c2, alpha):
    return -alpha / 4 * x**4 + c2 / 2 * x**2 + c1 * x


def _data(n=60, d=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * np.linspace(1.0, 2.5, d)


def _scatter(X):
    Xc = X - X.mean(0)
    return np.ascontiguousarray(Xc.T @ Xc)


# --------------------------------------------------------------------------- the cubic of Eq. 5
DEGENERATE_CUBICS = [
    (0.0, 0.0),  # triple root 0
    (0.0, -8.0),  # y^3 = 8
    (0.0, 1e-3),
    (-4.0, 0.0),  # roots 0, +-2
    (4.0, 0.0),  # single root 0
    (-3.0, 2.0),  # double root 1, root -2
    (-3.0, -2.0),  # double root -1, root 2
    (-3e-6, 2e-9),  # double root 1e-3, scaled down
    (-3e8, 2e12),  # double root 1e4, scaled up
    (1.0, 1e-20),
    (-1.0, 1e-20),
]


@pytest.mark.parametrize(("P", "Q"), DEGENERATE_CUBICS)
def test_cubic_degenerate_against_numpy_roots(P, Q):
    n, *roots = K.solve_depressed_cubic(P, Q)
    n_ref, *ref = naive.solve_depressed_cubic(P, Q)
    assert n == n_ref
    scale = max(np.sqrt(abs(P)), np.cbrt(abs(Q)))
    np.testing.assert_allclose(roots[:n], ref[:n], rtol=1e-6, atol=1e-7 * scale)


def test_cubic_random_against_numpy_roots():
    rng = np.random.default_rng(1)
    for _ in range(400):
        scale = 10.0 ** rng.uniform(-6, 6)
        P = rng.normal() * scale**2
        Q = rng.normal() * scale**3
        n, *roots = K.solve_depressed_cubic(P, Q)
        n_ref, *ref = naive.solve_depressed_cubic(P, Q)
        assert n == n_ref
        np.testing.assert_allclose(roots[:n], ref[:n], rtol=1e-9, atol=1e-12 * scale)
        for y in roots[:n]:  # residual of the unit-scaled cubic
            assert abs((y / scale) ** 3 + P / scale**2 * (y / scale) + Q / scale**3) < 1e-10


def test_cubic_extreme_coefficients_do_not_overflow():
    for P, Q in [(1e300, 1e300), (-1e300, 1e290), (1e-300, -1e-300), (-1e200, 0.0), (0.0, -1e307)]:
        n, *roots = K.solve_depressed_cubic(P, Q)
        assert n >= 1
        assert all(np.isfinite(roots[:n]))
    n, r0, *_ = K.solve_depressed_cubic(0.0, -1e300)  # y = 1e100
    assert n == 1 and r0 == pytest.approx(1e100, rel=1e-12)


# --------------------------------------------------------------------------- the entry update (Eq. 4)
def _coefficient_cases():
    rng = np.random.default_rng(2)
    cases = [
        (0.0, 0.0, 1.0),  # f = -x^4/4: max at 0
        (0.0, 2.0, 1.0),  # max at sqrt(2)
        (0.0, -2.0, 1.0),  # max at 0
        (1.0, 0.0, 1.0),
        (-1.0, 0.0, 1.0),
        (-1.0, 3.0, 1.0),  # two positive stationary points: local max beats 0
        (-1.9, 3.0, 1.0),  # local max just above / below f(0): 2 (c2/3)^(3/2) = 2
        (-2.0, 3.0, 1.0),  # double root: inflection, max at 0
        (-0.5, 1.0, 1.0),
        (5.0, -3.0, 2.0),
        (1e-12, 1e-12, 1e-12),
        (3.0, 1e6, 1e3),
    ]
    for _ in range(300):
        alpha = 10.0 ** rng.uniform(-3, 8)
        scale = 10.0 ** rng.uniform(-3, 3)
        c2 = rng.normal() * alpha * scale**2
        c1 = rng.normal() * alpha * scale**3
        cases.append((c1, c2, alpha))
    return cases


def test_argmax_is_global_nonnegative_maximizer_on_a_dense_grid():
    for c1, c2, alpha in _coefficient_cases():
        x = K.nspca_argmax(c1, c2, alpha, 0.0)
        assert x >= 0.0
        sigma = max(np.sqrt(abs(c2) / alpha), np.cbrt(abs(c1) / alpha), 1e-300)
        grid = np.linspace(0.0, 3.0 * sigma, 20001)
        fx = quartic(x, c1, c2, alpha)
        fmax = quartic(grid, c1, c2, alpha).max()
        tol = 1e-9 * alpha * sigma**4
        assert fx >= fmax - tol, (c1, c2, alpha, x)
        # and it is stationary unless it sits on the boundary x = 0
        if x > 0:
            assert abs(-alpha * x**3 + c2 * x + c1) <= 1e-7 * alpha * sigma**3


def test_argmax_equals_numpy_roots_twin_and_closed_form():
    for c1, c2, alpha in _coefficient_cases():
        for x_cur in (0.0, 0.7):
            x = K.nspca_argmax(c1, c2, alpha, x_cur)
            x_ref = naive.nspca_argmax(c1, c2, alpha, x_cur)
            x_cf = K._argmax_robust(c1, c2, alpha, x_cur)  # scaled closed-form (Cardano / Viete) path
            sigma = max(np.sqrt(abs(c2) / alpha), np.cbrt(abs(c1) / alpha), 1e-300)
            f = quartic(x, c1, c2, alpha)
            tol = 1e-9 * alpha * sigma**4
            assert f == pytest.approx(quartic(x_ref, c1, c2, alpha), abs=tol)
            assert f == pytest.approx(quartic(x_cf, c1, c2, alpha), abs=tol)
            assert f >= quartic(x_cur, c1, c2, alpha)  # never worse than the current value


def test_argmax_keeps_current_value_on_ties():
    # c1 = 0, c2 < 0: the maximizer is 0; the current value 0 is kept; from a worse point it moves to 0
    assert K.nspca_argmax(0.0, -1.0, 1.0, 0.0) == 0.0
    assert K.nspca_argmax(0.0, -1.0, 1.0, 0.5) == 0.0
    # local max equal to f(0) up to the tie rule: current value kept
    x_star = K.nspca_argmax(1.0, 1.0, 1.0, 0.0)
    assert K.nspca_argmax(1.0, 1.0, 1.0, x_star) == x_star


@pytest.mark.parametrize("fn", ["kernel", "robust", "twin"])
def test_argmax_switching_point_is_not_decided_by_the_last_bits(fn):
    """c1 = -1/2, c2 = 3/2, alpha = 1 puts the local maximum x = 1 level with f(0) = 0 (exactly,
    in floats). With c1 moved by 1e-15 (relative) either way the answer stays 0 from 0 and 1 from 1: values
    within 1e-12 of the quartic's terms tie, and ties keep the current value (else 0)."""
    f = {"kernel": K.nspca_argmax, "robust": K._argmax_robust, "twin": naive.nspca_argmax}[fn]
    for eps in (0.0, 1e-15, -1e-15, 3e-14):
        c1 = -0.5 * (1 + eps)
        assert f(c1, 1.5, 1.0, 0.0) == 0.0, eps
        assert f(c1, 1.5, 1.0, 1.0) == 1.0, eps
    assert f(-0.5 * (1 - 1e-9), 1.5, 1.0, 0.0) == pytest.approx(1.0, abs=1e-4)  # beyond the tie: the root


def test_argmax_extreme_coefficients_without_overflow():
    for c1, c2, alpha in [(1e300, -1e300, 1e-300), (1e300, 1e300, 1.0), (-1e-300, 1e-300, 1e300),
                          (1e-200, 0.0, 1e-200), (-1e308, 1e308, 1e-10), (1e150, 1e200, 1e100)]:
        x = K.nspca_argmax(c1, c2, alpha, 0.0)
        assert np.isfinite(x) and x >= 0.0, (c1, c2, alpha, x)
    # an exact case: c1 = 0, c2 = 1e300, alpha = 1e-100 -> sqrt(c2/alpha) = 1e200
    assert K.nspca_argmax(0.0, 1e300, 1e-100, 0.0) == pytest.approx(1e200, rel=1e-12)
    assert np.isnan(K.nspca_argmax(np.inf, 1.0, 1.0, 0.0))
    assert np.isnan(K.nspca_argmax(1.0, np.nan, 1.0, 0.0))


# --------------------------------------------------------------------------- sweeps and caches
def _sweep_case(seed, d=7, k=3, alpha=50.0, beta=2.0):
    rng = np.random.default_rng(seed)
    A = _scatter(rng.normal(size=(40, d)))
    U = np.abs(rng.normal(size=(d, k))) * 0.5
    return A, U, alpha, beta


@pytest.mark.parametrize("seed", [0, 11])
@pytest.mark.parametrize("block", [1, 3, 32])
def test_sweep_kernel_matches_numpy_twin(seed, block):
    A, U, alpha, beta = _sweep_case(seed)
    U1, U2 = U.copy(), U.copy()
    AU1, G1 = A @ U1, U1.T @ U1
    AU2, G2 = A @ U2, U2.T @ U2
    for _ in range(3):
        st1, n1 = K.nspca_sweep(A, U1, AU1, G1, alpha, beta, block)
        st2, n2 = naive.nspca_sweep(A, U2, AU2, G2, alpha, beta, block)
        assert st1 == st2 == -1
        assert n1 == n2
        np.testing.assert_allclose(U1, U2, rtol=1e-10, atol=1e-12)
        assert K.nspca_objective(U1, AU1, G1, alpha, beta) == pytest.approx(
            naive.nspca_objective(U2, AU2, G2, alpha, beta), rel=1e-12
        )


def test_fixed_case_first_sweep():
    # hand-checkable: A = diag(3, 1), one column from (1, 1), alpha = 1, beta = 0.
    A = np.diag([3.0, 1.0])
    U = np.ones((2, 1))
    AU, G = A @ U, U.T @ U
    K.nspca_sweep(A, U, AU, G, 1.0, 0.0, 32)
    # entry s=0: c1 = 0, c2 = 3 + 1 - 1*1 = 3 -> x = sqrt(3); entry s=1: c1 = 0, c2 = 1 + 1 - 3 = -1 -> x = 0
    np.testing.assert_allclose(U[:, 0], [np.sqrt(3.0), 0.0], atol=1e-15)
    np.testing.assert_allclose(AU, A @ U, atol=1e-14)
    np.testing.assert_allclose(G, U.T @ U, atol=1e-14)


@pytest.mark.parametrize("block", [1, 4, 32])
def test_caches_equal_recomputation_after_every_sweep(block):
    rng = np.random.default_rng(3)
    d, k = 40, 4
    A = _scatter(rng.normal(size=(80, d)))
    U = np.abs(rng.normal(size=(d, k)))
    AU, G = A @ U, U.T @ U
    for _ in range(6):
        status, _ = K.nspca_sweep(A, U, AU, G, 200.0, 1.0, block)
        assert status == -1
        np.testing.assert_allclose(AU, A @ U, rtol=1e-10, atol=1e-9 * np.abs(A).max())
        np.testing.assert_allclose(G, U.T @ U, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("max_sparse", [0, 1, 4, 64])
def test_au_update_paths_match_twin_and_recomputation(k, max_sparse):
    # max_sparse = 0: always the panel product; 64 >= block: always the per-row update; 1 and 4: mixed.
    # A start near a sparse fixed point (500 sweeps, one row per block perturbed) makes the sweeps change
    # 0-3 rows per block, so the per-row path is taken; the random start changes most rows.
    rng = np.random.default_rng(21 + k)
    d, block, alpha, beta = 45, 8, 80.0, 30.0
    A = _scatter(rng.normal(size=(90, d)))
    U0 = K.nspca_fit(A, np.abs(rng.normal(size=(d, k))), alpha, beta, 500, 0.0, block, 0)[0]
    U0[::block] += 0.05
    for start in (U0, np.abs(rng.normal(size=(d, k)))):
        U1, U2 = start.copy(), start.copy()
        AU1, G1 = A @ U1, U1.T @ U1
        AU2, G2 = A @ U2, U2.T @ U2
        changed_rows = []
        for _ in range(3):
            before = U1.copy()
            st1, n1 = K.nspca_sweep(A, U1, AU1, G1, alpha, beta, block, max_sparse)
            st2, n2 = naive.nspca_sweep(A, U2, AU2, G2, alpha, beta, block)
            assert st1 == st2 == -1 and n1 == n2
            np.testing.assert_allclose(U1, U2, rtol=1e-10, atol=1e-12)
            scale = np.abs(A).max() * np.abs(U1).max()
            np.testing.assert_allclose(AU1, A @ U1, rtol=1e-12, atol=1e-12 * scale)
            np.testing.assert_allclose(G1, U1.T @ U1, rtol=1e-10, atol=1e-12)
            rows = (U1 != before).any(axis=1).reshape(-1)
            changed_rows += [int(rows[b : b + block].sum()) for b in range(0, d, block)]
        # both kinds of block occurred: some with 1..4 changed rows, some with more
        assert any(0 < c <= 1 for c in changed_rows)
        if start is not U0:
            assert any(c > 4 for c in changed_rows)


@pytest.mark.parametrize("k", [1, 4])
def test_default_au_update_fit_matches_twin(k):
    # the default switch (-1: per-row updates at k = 1, mixed at k = 4) follows the twin's iterates
    A, U, alpha, beta = _sweep_case(8, d=70, k=k)
    got = K.nspca_fit(A, U, alpha, beta, 8, 0.0, 32, 3)
    ref = naive.nspca_fit(A, U, alpha, beta, 8, 0.0, 32, 3)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-10)


def test_blocking_does_not_change_iterates():
    A, U, alpha, beta = _sweep_case(5, d=50, k=4)
    outs = []
    for block in (1, 7, 64):
        Ub = U.copy()
        AU, G = A @ Ub, Ub.T @ Ub
        for _ in range(3):
            K.nspca_sweep(A, Ub, AU, G, alpha, beta, block)
        outs.append(Ub)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(outs[0], outs[2], rtol=1e-9, atol=1e-12)


def test_fit_kernel_matches_numpy_twin():
    A, U, alpha, beta = _sweep_case(4, d=6, k=2)
    got = K.nspca_fit(A, U, alpha, beta, 25, 1e-10, 4, 3)
    ref = naive.nspca_fit(A, U, alpha, beta, 25, 1e-10, 4, 3)
    assert got[4] == ref[4] and got[5] == ref[5]
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-10)
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(got[3], ref[3])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(("alpha", "beta"), [(5.0, 0.0), (300.0, 0.0), (300.0, 20.0), (1e4, 5.0)])
def test_objective_never_decreases(alpha, beta):
    X = _data(80, 12, seed=6)
    res = nspca(X, 3, alpha=alpha, beta=beta, random_state=0, max_iter=400, tol=0.0)
    obj = res.objective
    assert np.all(np.diff(obj) >= -1e-11 * np.abs(obj[1:]))
    assert obj[-1] > obj[0]
    # the recorded value is Eq. 3 of the returned U
    assert obj[-1] == pytest.approx(nspca_objective(X, res.U, alpha=alpha, beta=beta), rel=1e-10)


def test_large_alpha_gives_nearly_disjoint_vectors():
    # Section 2: with beta = 0 and alpha large, U'U -> I with U >= 0, so the vectors become disjoint.
    X = _data(100, 12, seed=0)
    lam1 = np.linalg.eigvalsh(_scatter(X))[-1]
    cos, ovl = [], []
    for alpha in (0.01 * lam1, lam1, 100 * lam1):
        res = nspca(X, 3, alpha=alpha, random_state=0, max_iter=3000)
        W = res.components
        cos.append(np.abs(W @ W.T - np.eye(3)).max())
        ovl.append(res.overlap[-1])
    assert cos[-1] < 0.01  # nearly disjoint supports at alpha = 100 lambda_1
    assert ovl[0] > ovl[1] > ovl[2]
    assert ovl[2] < 0.05


def test_beta_increases_sparsity():
    X = _data(100, 12, seed=0)
    l0 = [nspca(X, 2, alpha=1e3, beta=b, random_state=0).l0[-1] for b in (0.0, 20.0, 60.0)]
    assert l0[0] > l0[1] > l0[2]


# --------------------------------------------------------------------------- wrapper and estimator
def test_same_random_state_same_output_and_different_state_differs():
    X = _data()
    a = nspca(X, 3, alpha=100.0, beta=1.0, random_state=7)
    b = nspca(X, 3, alpha=100.0, beta=1.0, random_state=7)
    c = nspca(X, 3, alpha=100.0, beta=1.0, random_state=8)
    np.testing.assert_array_equal(a.U, b.U)
    np.testing.assert_array_equal(a.objective, b.objective)
    assert not np.array_equal(a.U, c.U)


def test_precomputed_matches_data():
    X = _data()
    a = nspca(X, 2, alpha=100.0, random_state=1)
    b = nspca(_scatter(X), 2, alpha=100.0, random_state=1, precomputed=True)
    np.testing.assert_allclose(a.U, b.U, rtol=1e-9, atol=1e-12)


def test_init_array_is_used_and_one_sweep_from_fixed_point_is_stable():
    X = _data()
    res = nspca(X, 2, alpha=100.0, random_state=0, tol=0.0, max_iter=2000)
    again = nspca(X, 2, alpha=100.0, init=res.U, max_iter=5)
    np.testing.assert_allclose(again.U, res.U, rtol=1e-6, atol=1e-8)


def test_estimator_attributes_and_sklearn_api():
    X = _data(70, 9, seed=2)
    est = NSPCA(n_components=3, alpha=200.0, beta=1.0, random_state=0)
    Z = est.fit_transform(X)
    assert Z.shape == (70, 3)
    W = est.components_
    assert W.shape == (3, 9)
    assert (W >= 0).all()
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    assert est.U_.shape == (9, 3)
    np.testing.assert_allclose(W, (est.U_ / np.linalg.norm(est.U_, axis=0)).T)
    assert np.all(np.diff(est.explained_variance_) <= 0)
    C = np.cov(X.T)
    np.testing.assert_allclose(est.explained_variance_, np.einsum("ij,jk,ik->i", W, C, W))
    assert est.l0_[-1] == np.count_nonzero(est.U_)
    assert est.overlap_[-1] == pytest.approx(
        np.linalg.norm(np.eye(3) - est.U_.T @ est.U_), rel=1e-9
    )
    np.testing.assert_allclose(est.mean_, X.mean(0))
    np.testing.assert_allclose(Z, (X - X.mean(0)) @ W.T)
    assert clone(est).get_params()["alpha"] == 200.0
    assert est.n_iter_ == len(est.objective_) - 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": -1.0}, "alpha"),
        ({"alpha": 1.0, "beta": -0.1}, "beta"),
        ({"alpha": 1.0, "n_components": 9}, "n_components"),
        ({"alpha": 1.0, "n_components": 0}, "n_components"),
        ({"alpha": np.nan}, "alpha"),
        ({"alpha": 1.0, "init": "pca"}, "init"),
        ({"alpha": 1.0, "n_components": 2, "init": -np.ones((8, 2))}, "init"),
        ({"alpha": 1.0, "n_components": 2, "init": np.ones((8, 3))}, "init"),
        ({"alpha": 1.0, "max_iter": 0}, "max_iter"),
    ],
)
def test_bad_input_raises_value_error(kwargs, match):
    X = _data()
    n_components = kwargs.pop("n_components", 1)
    with pytest.raises(ValueError, match=match):
        nspca(X, n_components, **kwargs)


def test_nan_input_raises():
    X = _data()
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        nspca(X, 1, alpha=1.0)
    with pytest.raises(ValueError, match="NaN"):
        NSPCA(alpha=1.0).fit(X)


def test_nonfinite_update_raises_instead_of_continuing():
    A = np.full((4, 4), 1e300)
    with pytest.raises(FloatingPointError, match="non-finite"):
        nspca(A, 2, alpha=1.0, precomputed=True, random_state=0)


def test_max_iter_warns():
    from repro import ConvergenceWarning

    with pytest.warns(ConvergenceWarning):
        nspca(_data(), 2, alpha=1e4, random_state=0, max_iter=2, tol=0.0)


# --------------------------------------------------------------------------- target cardinality
def test_for_cardinality_reaches_exact_targets():
    X = _data(100, 12, seed=0)
    for target in (1, 3, 5):
        res = nspca_for_cardinality(X, target, alpha=1e3, n_restarts=2, random_state=0)
        assert res.cardinality == target
        assert np.count_nonzero(res.component) == target
        assert (res.component >= 0).all()
        assert np.linalg.norm(res.component) == pytest.approx(1.0)
        assert res.variance == pytest.approx(res.component @ np.cov(X.T) @ res.component)
        # the returned beta reproduces the cardinality from the stored solution (a fixed point)
        again = nspca(X, 1, alpha=1e3, beta=res.beta, init=res.u[:, None], max_iter=50)
        assert np.count_nonzero(again.U) == target


def test_for_cardinality_unreachable_target_raises_with_nearest():
    # at beta = 0 the non-negative solution already has only 7 of 12 non-zeros: 12 cannot be reached
    X = _data(100, 12, seed=0)
    with pytest.raises(CardinalityNotReached) as info:
        nspca_for_cardinality(X, 12, alpha=1e3, n_restarts=2, random_state=0)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.target == 12 and err.above is None and err.below is not None and err.below < 12
    with pytest.raises(ValueError, match="target"):
        nspca_for_cardinality(X, 13, alpha=1e3)


# --------------------------------------------------------------------------- joint target cardinality
def _check_joint_result(res, X, k):
    assert res.components.shape == (k, X.shape[1]) and res.U.shape == (X.shape[1], k)
    assert (res.U >= 0).all() and (res.components >= 0).all()
    assert res.cardinality == np.count_nonzero(res.U) == np.count_nonzero(res.components)
    norms = np.linalg.norm(res.U, axis=0)
    np.testing.assert_allclose(res.components, (res.U / norms).T, rtol=1e-15, atol=0)
    C = np.cov(X.T)
    np.testing.assert_allclose(res.explained_variance, np.einsum("ij,jk,ik->i", res.components, C,
                                                                 res.components), rtol=1e-10)
    assert np.all(np.diff(res.explained_variance) <= 0)  # ranked by variance
    assert res.variance == pytest.approx(res.explained_variance.sum(), rel=1e-12)


@pytest.mark.parametrize(("k", "target"), [(2, 6), (3, 9), (3, 13)])
def test_for_cardinality_joint_reaches_exact_target(k, target):
    X = _data(100, 12, seed=0)
    res = nspca_for_cardinality(X, target, n_components=k, alpha=1e3, n_restarts=2, random_state=0)
    assert res.exact and res.target == target and res.cardinality == target
    _check_joint_result(res, X, k)
    # the returned beta keeps the joint cardinality from the stored solution (a fixed point)
    again = nspca(X, k, alpha=1e3, beta=res.beta, init=res.U, max_iter=50)
    assert np.count_nonzero(again.U) == target
    with pytest.raises(AttributeError, match="components"):
        res.component  # noqa: B018 - the one-component shortcut refuses several components
    with pytest.raises(AttributeError, match="'U'"):
        res.u  # noqa: B018


def test_for_cardinality_one_component_is_the_k1_case_of_the_joint_search():
    X = _data(100, 12, seed=0)
    a = nspca_for_cardinality(X, 4, alpha=1e3, n_restarts=2, random_state=3)
    b = nspca_for_cardinality(X, 4, n_components=1, alpha=1e3, n_restarts=2, random_state=3)
    np.testing.assert_array_equal(a.component, b.components[0])
    np.testing.assert_array_equal(a.u, b.U[:, 0])
    assert a.beta == b.beta and a.n_fits == b.n_fits and a.exact
    assert a.variance == pytest.approx(a.component @ np.cov(X.T) @ a.component)


def test_for_cardinality_joint_unreachable_raises_or_returns_closest():
    # at this alpha the joint cardinality jumps from 7 to 5 over beta (found by a scan): 6 is missed
    X = _data(100, 12, seed=3)
    kw = dict(n_components=3, alpha=1e5, n_restarts=1, random_state=0)
    with pytest.raises(CardinalityNotReached, match="joint cardinality") as info:
        nspca_for_cardinality(X, 6, **kw)
    err = info.value
    assert err.target == 6 and err.below == 5 and err.above == 7
    cards = np.array([c for _, c in err.seen])
    assert 6 not in cards
    res = nspca_for_cardinality(X, 6, exact=False, **kw)
    assert not res.exact and res.target == 6
    assert abs(res.cardinality - 6) == np.abs(cards - 6).min() == 1
    _check_joint_result(res, X, 3)
    # the exception carries the same nearest fit
    np.testing.assert_array_equal(err.closest.U, res.U)
    assert err.closest.beta == res.beta and err.closest.n_fits == res.n_fits == len(err.seen)


def test_for_cardinality_keeps_nearest_then_best_score():
    # record every fit's U through the score callable and re-derive the choice independently
    X = _data(100, 12, seed=3)
    Xc = X - X.mean(0)
    calls = []

    def score(U):
        v = float(np.linalg.norm(Xc @ U))  # any score; here the projected norm of the raw U
        calls.append((np.count_nonzero(U), v, U.copy()))
        return v

    res = nspca_for_cardinality(X, 6, n_components=3, alpha=1e5, n_restarts=3, random_state=1,
                                exact=False, score=score)
    assert len(calls) == res.n_fits
    dist = min(abs(c - 6) for c, _, _ in calls)
    best = max((v, i) for i, (c, v, _) in enumerate(calls) if abs(c - 6) == dist)
    U_best = calls[best[1]][2]
    assert res.cardinality == calls[best[1]][0]
    # same columns (the result ranks them by variance)
    assert sorted(map(tuple, U_best.T)) == sorted(map(tuple, res.U.T))


def test_for_cardinality_joint_same_random_state_same_result():
    X = _data(100, 12, seed=0)
    a = nspca_for_cardinality(X, 9, n_components=3, alpha=1e3, n_restarts=2, random_state=5)
    b = nspca_for_cardinality(X, 9, n_components=3, alpha=1e3, n_restarts=2, random_state=5)
    np.testing.assert_array_equal(a.U, b.U)
    assert a.beta == b.beta and a.n_fits == b.n_fits
    c = nspca_for_cardinality(X, 9, n_components=3, alpha=1e3, n_restarts=2, random_state=6)
    assert not np.array_equal(a.U, c.U)


def test_for_cardinality_beta_start_only_moves_the_bracket():
    X = _data(100, 12, seed=0)
    a = nspca_for_cardinality(X, 9, n_components=3, alpha=1e3, n_restarts=1, random_state=0)
    b = nspca_for_cardinality(X, 9, n_components=3, alpha=1e3, n_restarts=1, random_state=0, beta_start=1e-3)
    assert a.cardinality == b.cardinality == 9
    assert b.n_fits > a.n_fits  # about log2(1e3) = 10 more doublings before the bracket closes


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"target": 25, "n_components": 2}, "target"),
        ({"target": 0}, "target"),
        ({"n_components": 0}, "n_components"),
        ({"n_components": 13}, "n_components"),
        ({"rtol": 0.0}, "rtol"),
        ({"beta_start": 0.0}, "beta_start"),
        ({"exact": "yes"}, "exact"),
        ({"score": 3.0}, "score"),
        ({"n_restarts": 0}, "n_restarts"),
        ({"alpha": -1.0}, "alpha"),
    ],
)
def test_for_cardinality_bad_input(kwargs, match):
    kw = {"target": 4, "alpha": 1e3, **kwargs}
    target = kw.pop("target")
    with pytest.raises(ValueError, match=match):
        nspca_for_cardinality(_data(100, 12, seed=0), target, **kw)


# --------------------------------------------------------------------------- minimum angle
def _mixed(d=10, seed=3):
    """Correlated data (mixed Gaussian features): NSPCA's components overlap at a small alpha."""
    rng, mix = np.random.default_rng(seed), np.random.default_rng(seed + 1)
    return rng.standard_normal((5 * d, d)) @ mix.standard_normal((d, d))


def test_for_min_angle_meets_angle_with_smallest_alpha_of_its_grid():
    X = _mixed()
    res = nspca_for_min_angle(X, 3, 80.0, random_state=0, log10_alpha_range=(0.0, 6.0), ratio=1.25)
    assert res.reached
    assert res.angle >= 80.0
    assert min_angle_deg(res.components) == pytest.approx(res.angle, abs=1e-9)
    assert min_angle_deg(res.U.T) == pytest.approx(res.angle, abs=1e-9)
    assert (res.components >= 0).all()
    np.testing.assert_allclose(np.linalg.norm(res.components, axis=1), 1.0)
    assert np.all(np.diff(res.explained_variance) <= 0)
    alphas, angles = res.path[:, 0], res.path[:, 1]
    assert len(res.path) == res.n_fits
    # every alpha tried below the returned one misses the angle, the returned one meets it
    assert (angles[alphas < res.alpha] < 80.0).all()
    assert angles[alphas == res.alpha][0] == res.angle
    below = alphas[alphas < res.alpha]
    assert len(below) > 0 and res.alpha / below.max() <= 1.25
    # the search ran the decades 1, 10, ... up to the first that meets the angle, then bisected below it
    n_dec = int(np.argmax(angles >= 80.0)) + 1
    assert n_dec >= 2
    np.testing.assert_allclose(alphas[:n_dec], 10.0 ** np.arange(n_dec), rtol=1e-15)
    assert (alphas[n_dec:] > alphas[n_dec - 2]).all() and (alphas[n_dec:] < alphas[n_dec - 1]).all()
    # the same alpha on the same start reproduces the returned fit
    again = nspca_for_min_angle(X, 3, 80.0, random_state=0, log10_alpha_range=(np.log10(res.alpha),) * 2)
    assert again.alpha == pytest.approx(res.alpha, rel=1e-12) and again.n_fits == 1
    assert again.angle == pytest.approx(res.angle, abs=1e-6)


def test_for_min_angle_larger_angle_needs_larger_alpha():
    X = _mixed()
    lo = nspca_for_min_angle(X, 3, 60.0, random_state=0, log10_alpha_range=(0.0, 6.0))
    hi = nspca_for_min_angle(X, 3, 85.0, random_state=0, log10_alpha_range=(0.0, 6.0))
    assert lo.reached and hi.reached and hi.alpha >= lo.alpha and hi.angle >= 85.0


def test_for_min_angle_unreachable_raises_or_flags():
    X = _mixed()
    with pytest.raises(ValueError, match="min_angle_deg"):
        nspca_for_min_angle(X, 3, 89.9, random_state=0, log10_alpha_range=(-3.0, -2.0))
    res = nspca_for_min_angle(X, 3, 89.9, random_state=0, log10_alpha_range=(-3.0, -2.0), strict=False)
    assert not res.reached and res.angle < 89.9
    assert res.alpha == pytest.approx(1e-2) and res.n_fits == 2


def test_for_min_angle_same_random_state_same_result():
    X = _mixed()
    a = nspca_for_min_angle(X, 3, 80.0, random_state=4, log10_alpha_range=(0.0, 6.0))
    b = nspca_for_min_angle(X, 3, 80.0, random_state=4, log10_alpha_range=(0.0, 6.0))
    np.testing.assert_array_equal(a.U, b.U)
    np.testing.assert_array_equal(a.path, b.path)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((1, 80.0), {}, "n_components"),
        ((11, 80.0), {}, "n_components"),
        ((3, 0.0), {}, "min_angle_deg"),
        ((3, 95.0), {}, "min_angle_deg"),
        ((3, 80.0), {"ratio": 1.0}, "ratio"),
        ((3, 80.0), {"log10_alpha_range": (5.0, 3.0)}, "log10_alpha_range"),
        ((3, 80.0), {"log10_alpha_range": 3.0}, "log10_alpha_range"),
        ((3, 80.0), {"beta": -1.0}, "beta"),
        ((3, 80.0), {"strict": 1}, "strict"),
    ],
)
def test_for_min_angle_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        nspca_for_min_angle(_mixed(), *args, **kwargs)
