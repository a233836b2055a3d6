"""repro.linalg against direct NumPy computations."""

import numpy as np
import pytest

from repro.linalg import (
    BLAS3_GAIN,
    BLOCK_MIN_ROWS,
    Covariance,
    canonical_sign,
    center,
    choose_operator,
    leading_eigenpairs,
    projection_deflate,
    renormalize,
    schur_deflate,
    standardize,
)


def _data(n, p, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) + rng.standard_normal(p)


def test_center_and_standardize_match_numpy():
    X = _data(30, 5)
    Xc, mean = center(X)
    np.testing.assert_allclose(mean, X.mean(0))
    np.testing.assert_allclose(Xc.mean(0), 0, atol=1e-12)
    Z, mean, scale = standardize(X)
    np.testing.assert_allclose(scale, X.std(0, ddof=1))
    np.testing.assert_allclose(Z.std(0, ddof=1), 1)
    np.testing.assert_allclose(Z, (X - X.mean(0)) / X.std(0, ddof=1))


def test_standardize_refuses_constant_column_naming_it():
    X = _data(10, 4)
    X[:, 2] = 3.0
    with pytest.raises(ValueError, match=r"constant column\(s\) 2"):
        standardize(X)


@pytest.mark.parametrize("shape", [(50, 8), (6, 40)])
def test_covariance_operator_matches_numpy_cov(shape):
    X = _data(*shape, seed=1)
    C = Covariance.from_data(X)
    ref = np.cov(X, rowvar=False)
    rng = np.random.default_rng(2)
    W = rng.standard_normal((shape[1], 3))
    np.testing.assert_allclose(C.matvec(W), ref @ W, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(C.quad(W), np.diag(W.T @ ref @ W), rtol=1e-10)
    np.testing.assert_allclose(C.quad(W[:, 0]), W[:, 0] @ ref @ W[:, 0], rtol=1e-10)
    np.testing.assert_allclose(C.gram(W), W.T @ ref @ W, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(C.diag(), np.diag(ref), rtol=1e-12)
    np.testing.assert_allclose(C.trace(), np.trace(ref), rtol=1e-12)
    idx = [0, 3, 5]
    np.testing.assert_allclose(
        C.submatrix(idx), ref[np.ix_(idx, idx)], rtol=1e-10, atol=1e-10 * np.abs(ref).max()
    )
    np.testing.assert_allclose(C.dense(), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(60, 10), (8, 50)])
def test_eigh_matches_numpy_in_both_regimes(shape):
    X = _data(*shape, seed=3)
    ref_vals, ref_vecs = np.linalg.eigh(np.cov(X, rowvar=False))
    k = 4
    vals, vecs = Covariance.from_data(X).eigh(k)
    np.testing.assert_allclose(vals, ref_vals[::-1][:k], rtol=1e-9)
    np.testing.assert_allclose(vecs, canonical_sign(ref_vecs[:, ::-1][:, :k]), atol=1e-8)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(k), atol=1e-10)


def test_eigh_gram_route_refuses_k_beyond_rank():
    X = _data(5, 30)  # centred: rank 4
    with pytest.raises(ValueError, match="numerical rank"):
        Covariance.from_data(X).eigh(5)


def test_leading_eigenpairs_of_a_matrix():
    A = np.diag([1.0, 5.0, 3.0])
    vals, vecs = leading_eigenpairs(A, 2)
    np.testing.assert_allclose(vals, [5.0, 3.0])
    np.testing.assert_allclose(np.abs(vecs), [[0, 0], [1, 0], [0, 1]])


def test_canonical_sign_makes_largest_entry_positive():
    v = np.array([0.1, -0.9, 0.2])
    np.testing.assert_allclose(canonical_sign(v), -v)
    V = np.array([[1.0, 0.2], [-2.0, -0.5]])
    np.testing.assert_allclose(canonical_sign(V), [[-1.0, -0.2], [2.0, 0.5]])


@pytest.mark.parametrize("method", ["projection", "schur"])
@pytest.mark.parametrize("shape", [(40, 6), (5, 12)])
def test_deflation_data_and_matrix_forms_agree(method, shape):
    X = _data(*shape, seed=4)
    C = Covariance.from_data(X)
    rng = np.random.default_rng(5)
    w = rng.standard_normal(shape[1])
    w /= np.linalg.norm(w)
    dense = C.dense().copy()
    deflated = C.deflate(w, method)
    fn = projection_deflate if method == "projection" else schur_deflate
    expected = fn(dense, w)
    np.testing.assert_allclose(deflated.dense(), expected, atol=1e-10)
    np.testing.assert_allclose(Covariance.from_matrix(dense).deflate(w, method).dense(), expected, atol=1e-10)
    # Both deflations annihilate w.
    np.testing.assert_allclose(expected @ w, 0, atol=1e-10)


def test_projection_deflation_closed_form_and_schur_keeps_psd():
    rng = np.random.default_rng(6)
    A = rng.standard_normal((7, 7))
    C = A @ A.T
    w = rng.standard_normal(7)
    w /= np.linalg.norm(w)
    P = np.eye(7) - np.outer(w, w)
    np.testing.assert_allclose(projection_deflate(C, w), P @ C @ P, atol=1e-10)
    S = schur_deflate(C, w)
    np.testing.assert_allclose(S, C - C @ np.outer(w, w) @ C / (w @ C @ w), atol=1e-10)
    assert np.linalg.eigvalsh(S).min() > -1e-9


def test_deflation_of_leading_eigenvector_exposes_the_second():
    X = _data(80, 6, seed=7)
    vals, vecs = Covariance.from_data(X).eigh()
    defl = Covariance.from_data(X).deflate(vecs[:, 0])
    v2, _ = defl.eigh(1)
    np.testing.assert_allclose(v2[0], vals[1], rtol=1e-9)


def test_renormalize_is_leading_eigenvector_on_support():
    X = _data(50, 9, seed=8)
    C = np.cov(X, rowvar=False)
    w = np.zeros(9)
    w[[1, 4, 6]] = [0.5, -0.1, 0.3]
    w_new, var = renormalize(C, w)
    sub = C[np.ix_([1, 4, 6], [1, 4, 6])]
    ref_vals, ref_vecs = np.linalg.eigh(sub)
    assert var == pytest.approx(ref_vals[-1])
    np.testing.assert_allclose(np.abs(w_new[[1, 4, 6]]), np.abs(ref_vecs[:, -1]), atol=1e-10)
    assert np.count_nonzero(w_new) == 3 and w_new @ w > 0
    assert np.linalg.norm(w_new) == pytest.approx(1.0)
    assert w_new @ C @ w_new >= (w @ C @ w) / (w @ w) - 1e-12
    # Works through the data operator too, without forming C.
    w_data, _var_data = renormalize(Covariance.from_data(X), w)
    np.testing.assert_allclose(w_data, w_new, atol=1e-10)
    with pytest.raises(ValueError, match="zero vector"):
        renormalize(C, np.zeros(9))


def test_bad_input_names_argument():
    with pytest.raises(ValueError, match="exactly one"):
        Covariance()
    with pytest.raises(ValueError, match="symmetric"):
        Covariance.from_matrix(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="method"):
        Covariance.from_data(_data(5, 3)).deflate(np.ones(3) / np.sqrt(3), "hotelling")
    with pytest.raises(ValueError, match="w must have length 3"):
        projection_deflate(np.eye(3), np.ones(4))


# --------------------------------------------------------------------------- the operator chosen by shape
def test_choose_operator_cost_model():
    # CBCL faces (2429 x 361) with 5 restarts: the covariance; leukemia (72 x 12582): the data
    assert choose_operator(2429, 361, n_vectors=5) == "covariance"
    assert choose_operator(72, 12582, n_vectors=5) == "data"
    assert choose_operator(100, 100, n_vectors=1, n_iter=1) == "data"  # forming C does not pay for 1 use
    for N, D, R, T in [(500, 40, 1, 50), (50, 400, 3, 100), (1000, 900, 1, 2)]:
        data = T * 2 * N * D * R
        cov = N * D * D / BLAS3_GAIN + T * D * D * R
        assert choose_operator(N, D, n_vectors=R, n_iter=T) == ("covariance" if cov < data else "data")


@pytest.mark.parametrize("shape", [(50, 8), (6, 20), (6, 80)])
def test_products_are_the_same_through_data_or_matrix(shape):
    X = np.random.default_rng(4).standard_normal(shape)
    C = np.cov(X, rowvar=False)
    W = np.random.default_rng(5).standard_normal((3, shape[1]))
    for op in ("data", "covariance", "auto"):
        cov = Covariance.from_data(X, operator=op)
        F, h = cov.products(W)
        np.testing.assert_allclose(F, W @ C, atol=1e-12)
        np.testing.assert_allclose(h, np.einsum("ij,jk,ik->i", W, C, W), rtol=1e-12)
    # a row with few non-zeros goes through its support (D = 80: both rows), row-major data or not
    Ws = np.zeros((2, shape[1]))
    Ws[0, [1, 3]] = [0.6, -0.8]
    Ws[1, 2] = 1.0
    A = Covariance.from_data(X).data
    ops = [Covariance(data=A), Covariance(data=np.asfortranarray(A))]
    ops.append(Covariance.from_data(X, operator="covariance"))
    for cov in ops:
        F, h = cov.products(Ws)
        np.testing.assert_allclose(F, Ws @ C, atol=1e-12)
        np.testing.assert_allclose(h, np.einsum("ij,jk,ik->i", Ws, C, Ws), rtol=1e-12)
    # quad_rows: products' h bit for bit (without W C), for dense, sparse and zero rows, below and from
    # BLOCK_MIN_ROWS rows on
    rng = np.random.default_rng(6)
    for R in (1, 3, BLOCK_MIN_ROWS, BLOCK_MIN_ROWS + 2):
        Wb = rng.standard_normal((R, shape[1]))
        Wb[::2, 3:] = 0.0  # sparse rows
        Wb[-1] = 0.0
        for cov in ops + [Covariance.from_data(X, operator=o) for o in ("data", "covariance")]:
            assert np.array_equal(cov.quad_rows(Wb), cov.products(Wb)[1])
    assert Covariance.from_data(X, operator="covariance").data is None
    expected = "covariance" if shape[0] > shape[1] else "data"
    assert Covariance.from_data(X, operator="auto").operator == expected
    with pytest.raises(ValueError, match="operator"):
        Covariance.from_data(X, operator="gram")


def test_from_data_scaled_centred_data_and_restrict():
    """``from_data`` keeps exactly ``(X - mean) / sqrt(n - ddof)``; ``restrict`` is ``C[idx][:, idx]`` as an
    operator backed like its parent; ``column_norms`` is ``sqrt(diag(C))``."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((9, 30)) * rng.uniform(0.1, 5.0, 30) + 2.0
    cov = Covariance.from_data(X)
    np.testing.assert_array_equal(cov.data, (X - X.mean(axis=0)) / np.sqrt(8))
    assert cov.data.flags.c_contiguous
    np.testing.assert_array_equal(Covariance.from_data(X, center=False).data, X / np.sqrt(8))
    C = np.cov(X, rowvar=False)
    idx = np.array([3, 17, 4, 29])
    for op in (cov, Covariance.from_data(X, operator="covariance")):
        sub = op.restrict(idx)
        assert sub.operator == op.operator and sub.n_features == 4
        np.testing.assert_allclose(sub.dense(), C[np.ix_(idx, idx)], atol=1e-12)
        np.testing.assert_allclose(op.column_norms(), np.sqrt(np.diag(C)), rtol=1e-12)


def test_lanczos_kernel_matches_numpy_twin():
    import naive

    from repro._linalg_kernels import lanczos_top

    rng = np.random.default_rng(40)
    for n in (1, 5, 40, 90):
        X = rng.standard_normal((n + 3, n))
        A = X.T @ X
        v0 = rng.standard_normal(n)
        for steps, tol in ((40, 4 * np.finfo(float).eps), (3, 4 * np.finfo(float).eps), (40, 1e-6)):
            x, y = np.empty(n), np.empty(n)
            got = lanczos_top(A, v0, steps, tol, x)
            want = naive.lanczos_top(A, v0, steps, tol, y)
            assert got[2] == want[2] and (got[1] < 0) == (want[1] < 0)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
            np.testing.assert_allclose(x, y, atol=1e-9)
    assert lanczos_top(np.eye(3), np.zeros(3), 10, 1e-12, np.empty(3))[1] < 0  # zero start: not converged


def test_centred_kernels_match_numpy_twins():
    # the float32 copy bit for bit (the same IEEE operations per entry, a power-of-two scale), the squared
    # column norms to round-off (the twin sums pairwise, the kernel row by row)
    import naive

    from repro._linalg_kernels import centred_float32, centred_scaled

    rng = np.random.default_rng(41)
    for n, d, scale in ((2, 1, 1.0), (7, 5, 0.5), (300, 40, 2.0**-7), (1000, 3, 2.0**5)):
        X = rng.standard_normal((n, d)) * rng.uniform(0.1, 100.0, d) + rng.uniform(-50, 50, d)
        mean, c = X.mean(axis=0), np.sqrt(n - 1)
        got, want, alone = np.empty(d), np.empty(d), np.empty(d)
        A, B = np.empty((n, d)), np.empty((n, d))
        centred_scaled(X, mean, c, A, got)
        naive.centred_scaled(X, mean, c, B, want)
        assert np.array_equal(A, B)
        np.testing.assert_allclose(got, want, rtol=1e-13)
        centred_scaled(X, mean, c, np.empty((0, 0)), alone)  # the norms alone: the same sums
        assert np.array_equal(alone, got)
        got32, want32 = np.empty((n, d), np.float32), np.empty((n, d), np.float32)
        centred_float32(X, mean, c, scale, got32)
        naive.centred_float32(X, mean, c, scale, want32)
        assert np.array_equal(got32, want32)


def test_from_data_centres_in_one_pass():
    # the data operator holds (X - mean) / sqrt(n - ddof) exactly as NumPy computes it, with diag(C) from
    # the same pass; a centring that overflows (finite X) is still refused, by the constructor's test
    rng = np.random.default_rng(42)
    X = rng.standard_normal((40, 7)) * 1e3 + 5e3
    for ddof in (0, 1):
        C = Covariance._from_valid(X, ddof=ddof)
        want = np.subtract(X, X.mean(axis=0))
        np.divide(want, np.sqrt(40 - ddof), out=want)
        assert np.array_equal(C.data, want)
        np.testing.assert_allclose(C.diag(), np.var(X, axis=0, ddof=ddof), rtol=1e-12)
        np.testing.assert_allclose(C.trace(), np.trace(np.cov(X, rowvar=False, ddof=ddof)), rtol=1e-12)
    assert np.array_equal(Covariance._from_valid(X, center=False).data, X / np.sqrt(39))
    big = np.array([[1.7e308, 1.0], [1.7e308, 2.0], [-1.7e308, 0.5]])
    for operator in ("data", "covariance"):
        with np.errstate(over="ignore", invalid="ignore"), pytest.raises(ValueError, match="X is finite but"):
            Covariance.from_data(big, operator=operator)
    # products that overflow: refused for the matrix; kept as data, whose eigenvalues then say the same
    huge = rng.standard_normal((30, 3)) * 1e160
    with np.errstate(over="ignore", invalid="ignore"), pytest.raises(ValueError, match="overflow float64"):
        Covariance.from_data(huge, operator="covariance")
    with pytest.raises(ValueError, match="too large for float64"):
        Covariance.from_data(huge, operator="data").eigh(1)


@pytest.mark.parametrize("n", [32, 33, 60, 150])
def test_top_eigvec_is_the_leading_eigenpair_from_any_start(n):
    """_top_eigvec (Lanczos from a start, certified by Cholesky, dsyevr otherwise) gives _top_eigh's
    leading eigenpair: from a good start, a random one, one orthogonal to the leading eigenvector (Lanczos
    converges to a smaller Ritz value there; the certificate refuses it), on full-rank, rank-deficient,
    degenerate, indefinite and zero matrices."""
    from repro.linalg import _top_eigh, _top_eigvec

    rng = np.random.default_rng(n)
    X = rng.standard_normal((n + 5, n))
    low = rng.standard_normal((n // 4, n))
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    degenerate = (Q * np.r_[3.0, 3.0, np.linspace(1.0, 0.1, n - 2)]) @ Q.T
    indefinite = (Q * np.r_[2.0, np.linspace(1.0, -5.0, n - 1)]) @ Q.T
    for A in (X.T @ X, low.T @ low, degenerate, indefinite, np.zeros((n, n))):
        A = np.ascontiguousarray(0.5 * (A + A.T))
        vals, vecs = _top_eigh(A, 1)
        v = vecs[:, 0]
        noise = rng.standard_normal(n)
        orth = noise - (noise @ v) * v
        for start in (v + 1e-3 * noise, noise, orth):
            got_vals, got_vecs = _top_eigvec(A, start)
            assert got_vals.shape == (1,) and got_vecs.shape == (n, 1)
            scale = max(np.abs(vals[0]), np.linalg.norm(A), 1e-300)
            assert abs(got_vals[0] - vals[0]) <= 1e-12 * scale
            x = got_vecs[:, 0]
            assert abs(np.linalg.norm(x) - 1.0) < 1e-12
            # an eigenvector for the leading eigenvalue (in the degenerate case any one of its plane)
            np.testing.assert_allclose(A @ x, vals[0] * x, atol=1e-10 * scale)


def test_top_eigvec_certificate_refuses_a_smaller_ritz_value(monkeypatch):
    import repro.linalg as L

    rng = np.random.default_rng(42)
    X = rng.standard_normal((65, 60))
    A = X.T @ X
    v = L._top_eigh(A, 1)[1][:, 0]
    noise = rng.standard_normal(60)
    calls = []
    top_eigh = L._top_eigh
    monkeypatch.setattr(L, "_top_eigh", lambda A, k: (calls.append(k), top_eigh(A, k))[1])
    L._top_eigvec(A, v + 1e-3 * noise)
    assert calls == []  # Lanczos, certified
    L._top_eigvec(A, noise - (noise @ v) * v)  # converges to the second eigenvalue: refused
    assert calls == [1]


def test_renormalize_uses_lanczos_and_matches_eigh():
    """renormalize on a support of 32 or more features runs Lanczos from the loadings: the same weights as
    the dense eigenproblem, on a matrix and through the data (K <= N and the Gram path K > N)."""
    from repro.linalg import renormalize

    rng = np.random.default_rng(41)
    for N in (300, 40):
        X = rng.standard_normal((N, 120)) @ rng.standard_normal((120, 120))
        C = Covariance.from_data(X)
        S = np.sort(rng.choice(120, 60, replace=False))
        w = np.zeros(120)
        w[S] = rng.standard_normal(60)
        Cd = np.cov(X, rowvar=False)
        vals, vecs = np.linalg.eigh(Cd[np.ix_(S, S)])
        want = vecs[:, -1] * np.sign(vecs[:, -1] @ w[S])
        for op in (C, Covariance(matrix=Cd)):
            got, var = renormalize(op, w)
            np.testing.assert_allclose(var, vals[-1], rtol=1e-12)
            np.testing.assert_allclose(got[S], want, atol=1e-9)
            assert np.count_nonzero(got) == 60


@pytest.mark.parametrize("n", [1, 2, 7, 60, 200])
def test_top_eigh_is_the_leading_eigenpairs_of_the_full_decomposition(n):
    """_top_eigh (the subset driver) against NumPy's full decomposition (another LAPACK driver): the ``k``
    largest eigenvalues in descending order, and eigenvectors for them (to round-off)."""
    from repro.linalg import _top_eigh

    rng = np.random.default_rng(n)
    X = rng.standard_normal((max(n // 2, 1), n))  # rank-deficient when n > 1
    for A in (X.T @ X, np.zeros((n, n)), np.diag(np.arange(n, dtype=float))):
        scale = max(np.linalg.norm(A), 1.0)
        w = np.linalg.eigvalsh(A)[::-1]
        for k in sorted({1, min(3, n), n}):
            vals, vecs = _top_eigh(A, k)
            np.testing.assert_allclose(vals, w[:k], rtol=0, atol=1e-12 * scale)
            assert np.all(np.diff(vals) <= 0) and vecs.shape == (n, k) and vecs.flags.c_contiguous
            np.testing.assert_allclose(A @ vecs, vecs * vals, atol=1e-10 * scale)
            np.testing.assert_allclose(vecs.T @ vecs, np.eye(k), atol=1e-12)
