"""The baselines of Sigg & Buhmann (2008) against direct NumPy computations and exact answers:
simple thresholding, PathSPCA (literal FullPathCov / FullPathData twins, exhaustive search), SPCA of Zou et
al. (scikit-learn's LARS on the augmented data, ridge and PCA limits), CE + SR (leave-one-out SVDs)."""

import itertools

import numpy as np
import pytest
from sklearn.linear_model import lars_path

from repro.baselines.cesr import ce_scores, cesr_select, svd_entropy
from repro.baselines.pathspca import pathspca
from repro.baselines.spca_zou import SPCAZou, larsen_k, spca_zou, spca_zou_path
from repro.baselines.thresholding import simple_thresholding, thresholding_path
from repro.em_sparse_pca import CardinalityPath
from repro.linalg import Covariance


def _data(seed, n=40, p=12, shift=1.0):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((p, p)) * np.linspace(2.0, 0.3, p)
    return rng.standard_normal((n, p)) @ M + shift


def _top_eig(S):
    vals, vecs = np.linalg.eigh(S)
    return vals[-1], vecs[:, -1]


def _exhaustive(C, K):
    """max over supports of size K of lambda_max(C[S, S])."""
    best = -np.inf
    for S in itertools.combinations(range(C.shape[0]), K):
        best = max(best, np.linalg.eigvalsh(C[np.ix_(S, S)])[-1])
    return best


# --------------------------------------------------------------------------- thresholding
def test_thresholding_equals_direct_numpy():
    X = _data(1, n=30, p=15)
    C = np.cov(X, rowvar=False)
    pc = np.linalg.eigh(C)[1][:, -1]
    ks = [1, 4, 9, 15]
    path = thresholding_path(X, ks)
    assert isinstance(path, CardinalityPath)
    for j, K in enumerate(ks):
        S = np.sort(np.argsort(-np.abs(pc))[:K])
        w = np.zeros(15)
        w[S] = pc[S]
        w /= np.linalg.norm(w)
        assert abs(abs(path.components[j] @ w) - 1) < 1e-10
        np.testing.assert_allclose(path.variance[j], w @ C @ w, rtol=1e-10)
        lam, v = _top_eig(C[np.ix_(S, S)])
        np.testing.assert_allclose(path.variance_opt[j], lam, rtol=1e-10)
        np.testing.assert_allclose(np.abs(path.components_opt[j][S]), np.abs(v), atol=1e-9)
        assert np.count_nonzero(path.components_opt[j]) == K
    w1, v1 = simple_thresholding(X, 4)
    np.testing.assert_allclose(v1, path.variance_opt[1])
    np.testing.assert_allclose(w1, path.components_opt[1])
    np.testing.assert_allclose(path.variance_opt[-1], np.linalg.eigvalsh(C)[-1], rtol=1e-10)


def test_thresholding_near_ties_go_to_the_lowest_index():
    # variables 1 and 2 are copies (equal loadings in exact arithmetic); 2 scaled by 1 + 1e-15 either way
    # keeps the same K = 2 support: the lower index
    rng = np.random.default_rng(2)
    X = rng.standard_normal((80, 5))
    X[:, 0] *= 6.0
    X[:, 1] = 0.3 * X[:, 0] + rng.standard_normal(80)
    for f in (1 - 1e-15, 1.0, 1 + 1e-15):
        Xf = X.copy()
        Xf[:, 2] = X[:, 1] * f
        assert np.flatnonzero(simple_thresholding(Xf, 2)[0]).tolist() == [0, 1], f


def test_thresholding_wide_data_uses_gram():
    X = _data(2, n=8, p=40)
    C = np.cov(X, rowvar=False)
    path = thresholding_path(X, [5, 20, 40])
    pc = np.linalg.eigh(C)[1][:, -1]
    for j, K in enumerate([5, 20, 40]):
        S = np.argsort(-np.abs(pc))[:K]
        np.testing.assert_allclose(path.variance_opt[j], np.linalg.eigvalsh(C[np.ix_(S, S)])[-1], rtol=1e-9)


# --------------------------------------------------------------------------- PathSPCA
def _fullpath_cov_twin(S, kmax):
    """d'Aspremont et al.'s FullPathCov, literally: sort the diagonal, Cholesky factor A, greedy (x'a_i)^2."""
    ix = np.argsort(-np.diag(S), kind="stable")
    Ss = S[np.ix_(ix, ix)]
    A = np.linalg.cholesky(Ss).T  # Ss = A'A
    n = S.shape[0]
    subset = [0]
    vars_, sols = [], []
    for _ in range(kmax):
        lam, v = _top_eig(Ss[np.ix_(subset, subset)])
        vs = np.zeros(n)
        vs[subset] = v
        sols.append(vs)
        vars_.append(lam)
        x = A[:, subset] @ v
        x /= np.linalg.norm(x)
        rest = [i for i in range(n) if i not in subset]
        if not rest:
            break
        vals = (x @ A[:, rest]) ** 2
        subset.append(rest[int(np.argmax(vals))])
    inv = np.empty(n, dtype=int)
    inv[ix] = np.arange(n)
    return np.array(vars_), np.array(sols)[:, inv]


def _fullpath_data_twin(A, kmax):
    """FullPathData: the same greedy on the data factor (n samples < m variables)."""
    m = A.shape[1]
    subset = [int(np.argmax(np.sum(A**2, axis=0)))]
    vars_, sols = [], []
    for _ in range(kmax):
        S = A[:, subset].T @ A[:, subset]
        lam, v = _top_eig(S)
        vs = np.zeros(m)
        vs[subset] = v
        sols.append(vs)
        vars_.append(lam)
        x = A[:, subset] @ v
        x /= np.linalg.norm(x)
        rest = [i for i in range(m) if i not in subset]
        vals = (x @ A[:, rest]) ** 2
        subset.append(rest[int(np.argmax(vals))])
    return np.array(vars_), np.array(sols)


def test_pathspca_matches_fullpathcov_twin():
    X = _data(3, n=60, p=14) * np.linspace(1.0, 2.0, 14)
    C = np.cov(X, rowvar=False)
    path = pathspca(X)
    v_ref, W_ref = _fullpath_cov_twin(C, 14)
    np.testing.assert_allclose(path.variance, v_ref, rtol=1e-10)
    np.testing.assert_array_equal(path.components != 0, W_ref != 0)
    signs = np.sign(np.sum(path.components * W_ref, axis=1))
    np.testing.assert_allclose(path.components * signs[:, None], W_ref, atol=1e-8)
    np.testing.assert_array_equal(path.components, path.components_opt)
    np.testing.assert_allclose(path.variance[-1], np.linalg.eigvalsh(C)[-1], rtol=1e-10)
    assert (np.diff(path.variance) >= -1e-12).all()


def test_pathspca_wide_data_matches_fullpathdata_twin():
    X = _data(4, n=10, p=30) * np.linspace(1.0, 1.5, 30)
    Xc = (X - X.mean(0)) / np.sqrt(X.shape[0] - 1)
    path = pathspca(X, max_cardinality=25)  # beyond n = 10: the Gram branch
    v_ref, W_ref = _fullpath_data_twin(Xc, 25)
    np.testing.assert_allclose(path.variance, v_ref, rtol=1e-9)
    np.testing.assert_array_equal(path.components != 0, W_ref != 0)
    # only the requested cardinalities, same values
    sub = pathspca(X, [3, 12, 25])
    np.testing.assert_allclose(sub.variance, v_ref[[2, 11, 24]], rtol=1e-9)
    assert list(sub.n_iter) == [3, 12, 25] and (np.diff(sub.time) >= 0).all()


def test_pathspca_never_beats_exhaustive_and_equals_it_when_exact():
    C = np.cov(_data(5, n=50, p=8), rowvar=False)
    path = pathspca(Covariance.from_matrix(C))
    for K in range(1, 9):
        assert path.variance[K - 1] <= _exhaustive(C, K) * (1 + 1e-12)
    # K = 1 (largest diagonal) and K = D are always exact
    np.testing.assert_allclose(path.variance[0], C.diagonal().max())
    np.testing.assert_allclose(path.variance[-1], np.linalg.eigvalsh(C)[-1], rtol=1e-12)
    # block-diagonal with a dominant spiked block of decreasing loadings: greedy is exact on it
    rng = np.random.default_rng(6)
    v = np.array([1.0, 0.8, 0.6, 0.45, 0.3])
    B1 = 20 * np.outer(v, v) + 0.05 * np.eye(5)
    G = rng.standard_normal((4, 4))
    B2 = G @ G.T / 4
    Cb = np.zeros((9, 9))
    Cb[:5, :5], Cb[5:, 5:] = B1, B2
    perm = rng.permutation(9)
    Cb = Cb[np.ix_(perm, perm)]
    pb = pathspca(Covariance.from_matrix(Cb), max_cardinality=5)
    for K in range(1, 6):
        np.testing.assert_allclose(pb.variance[K - 1], _exhaustive(Cb, K), rtol=1e-12)


def test_pathspca_start_and_bad_input():
    X = _data(7, n=20, p=9)
    p = pathspca(X, [1, 2], start=4)
    assert p.components[0, 4] != 0 and np.count_nonzero(p.components[0]) == 1
    with pytest.raises(ValueError, match="cardinalities"):
        pathspca(X, [0])
    with pytest.raises(ValueError, match="start"):
        pathspca(X, [2], start=9)
    with pytest.raises(ValueError, match="X"):
        pathspca(np.full((5, 3), np.nan))


def _supports(path):
    return [np.flatnonzero(w).tolist() for w in path.components]


@pytest.mark.parametrize("form", ["matrix", "data"])
def test_pathspca_start_not_decided_by_the_diagonal_last_bits(form):
    # a correlation matrix: every C_ii is 1 up to round-off, so the start is a tie; the rule (lowest index
    # among values within a relative 1e-12 of the largest) takes variable 0 whatever the last bits
    X = _data(11, n=60, p=10)
    X = (X - X.mean(0)) / X.std(0, ddof=1)
    C = np.corrcoef(X, rowvar=False)
    ref = pathspca(Covariance.from_matrix(C))
    assert _supports(ref)[0] == [0]
    for j in range(1, 10):  # one diagonal entry made the largest by 1e-15 (relative)
        Cj = C.copy()
        Cj[j, j] *= 1 + 1e-15
        if form == "matrix":
            path = pathspca(Covariance.from_matrix(Cj))
        else:
            Xj = X.copy()
            Xj[:, j] *= np.sqrt(1 + 1e-15)
            path = pathspca(Xj)
        assert _supports(path) == _supports(ref), j
        np.testing.assert_allclose(path.variance, ref.variance, rtol=1e-12)


def test_pathspca_greedy_step_ties_go_to_the_lowest_index():
    # variables 1 and 2 are the same column up to round-off: after the start 0 their scores tie exactly
    # in exact arithmetic; the step takes 1, also when 2's column is larger by 1e-15 (relative)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 5))
    X[:, 0] *= 3.0
    X[:, 1] = X[:, 0] + rng.standard_normal(50)
    X[:, 2] = X[:, 1] * (1 + 1e-15)
    X[:, 0] *= 1.5  # the largest variance: the start
    path = pathspca(X, [1, 2])
    assert _supports(path) == [[0], [0, 1]]


# --------------------------------------------------------------------------- SPCA (Zou et al.): LARS-EN
def _sklearn_knot(X, y, ridge, K):
    """scikit-learn's LARS-lasso on [X; sqrt(ridge) I], [y; 0]: the coefficients at the first knot where K
    variables are active and the event is an entry (the path is piecewise linear, so a segment's active set is
    the support of its midpoint)."""
    D = X.shape[1]
    Xa = np.vstack([X, np.sqrt(ridge) * np.eye(D)])
    ya = np.concatenate([y, np.zeros(D)])
    _, _, coefs = lars_path(Xa, ya, method="lasso", eps=1e-14)
    n_knots = coefs.shape[1]
    seg = [0] + [int(np.count_nonzero(coefs[:, i] + coefs[:, i + 1])) for i in range(n_knots - 1)]
    for i in range(n_knots - 1):
        if seg[i] == K and seg[i + 1] == K + 1:
            return coefs[:, i]
    return coefs[:, -1]


@pytest.mark.parametrize(("ridge", "n", "p"), [(0.0, 30, 10), (0.3, 30, 10), (5.0, 30, 10), (1e-3, 8, 25),
                                               (0.1, 8, 25)])
def test_larsen_matches_sklearn_lars_on_augmented_data(ridge, n, p):
    """Including more active variables than samples (p > n, possible only with ridge > 0)."""
    rng = np.random.default_rng(8)
    for trial in range(3):
        X = _data(10 + trial, n=n, p=p)
        X = X - X.mean(0)
        y = X @ rng.standard_normal(p)
        for K in range(1, p + 1):
            b, _ = larsen_k(X, y, ridge, K)
            ref = _sklearn_knot(X, y, ridge, K)
            np.testing.assert_allclose(b, ref, atol=1e-8 * max(1.0, np.abs(ref).max()))
            assert np.count_nonzero(b) == K


LEUK = (
    "leukemia_armstrong_mll/MLL.names",
    "leukemia_armstrong_mll/MLL_train.data",
    "leukemia_armstrong_mll/MLL_test.data",
)


@pytest.mark.data(*LEUK)
def test_larsen_path_is_not_decided_by_the_last_bits_of_y():
    """Leukemia (standardized), ridge 1e-6, K = 100 (more active variables than samples: the
    active Gram's condition is 6e7). A just-dropped variable's round-off root (6.6e-9 C on one OpenBLAS
    kernel) passed the old fixed floor of 1e-9 C on one machine and not on another, and the path ended two
    variables apart; relative perturbations of 1e-15 of y gave two supports on the old code."""
    from data_fetch import load_leukemia_armstrong
    from experiments.runner import _common
    from repro.em_sparse_pca.operators import _as_data, _leading_pc

    A, _, _ = _as_data(_common.preprocess(load_leukemia_armstrong().X, "standardize"))
    y = A @ _leading_pc(A)
    ref = np.flatnonzero(larsen_k(A, y, 1e-6, 100)[0])
    assert ref.size == 100
    rng = np.random.default_rng(0)
    for _ in range(8):
        b, _ = larsen_k(A, y * (1 + 1e-15 * rng.standard_normal(y.size)), 1e-6, 100)
        np.testing.assert_array_equal(np.flatnonzero(b), ref)


def test_soft_threshold_ties_keep_k_entries_by_index():
    # ridge = inf: a tie at the K-th place (exact, and up to 1e-15) keeps the lowest indices, K non-zeros
    X = np.eye(5)
    for eps in (0.0, 1e-15, -1e-15):
        y = np.array([3.0, 2.0, 2.0 * (1 + eps), 2.0, 1.0])
        b, _ = larsen_k(X, y, np.inf, 2)
        np.testing.assert_allclose(b, [2.0, 1.0, 0.0, 0.0, 0.0], atol=1e-14)
    b, _ = larsen_k(X, np.array([3.0, 2.0, 1.5, 1.0, 0.5]), np.inf, 2)  # no tie: the (K+1)-th value
    np.testing.assert_allclose(b, [1.5, 0.5, 0.0, 0.0, 0.0])


def test_larsen_end_of_path_is_ridge_and_inf_is_soft_threshold():
    X = _data(12, n=15, p=25)
    X = X - X.mean(0)
    y = X @ np.random.default_rng(0).standard_normal(25)
    ridge = 0.7
    b, _ = larsen_k(X, y, ridge, 25)
    np.testing.assert_allclose(b, np.linalg.solve(X.T @ X + ridge * np.eye(25), X.T @ y), atol=1e-8)
    c = X.T @ y
    for K in (1, 6, 24):
        thr = np.sort(np.abs(c))[::-1][K]
        b_inf, _ = larsen_k(X, y, np.inf, K)
        np.testing.assert_allclose(b_inf, np.sign(c) * np.maximum(np.abs(c) - thr, 0), atol=1e-12)
        # a huge ridge approaches the limit: ridge * b -> soft threshold
        b_big, _ = larsen_k(X, y, 1e9, K)
        np.testing.assert_allclose(1e9 * b_big, b_inf, rtol=1e-5, atol=1e-6 * np.abs(c).max())


def test_spca_full_cardinality_returns_the_pcs():
    X = _data(13, n=50, p=10)
    vals, vecs = np.linalg.eigh(np.cov(X, rowvar=False))
    for ridge in (1e-6, 1.0, np.inf):
        W, v = spca_zou(X, 2, cardinality=10, ridge=ridge, tol=1e-12, max_iter=2000)
        signs = np.sign(np.sum(W * vecs[:, ::-1][:, :2].T, axis=1))
        np.testing.assert_allclose(W * signs[:, None], vecs[:, ::-1][:, :2].T, atol=1e-6)
        np.testing.assert_allclose(v, vals[::-1][:2], rtol=1e-8)


def test_spca_cardinality_and_opt():
    X = _data(14, n=40, p=15)
    est = SPCAZou(3, cardinality=[2, 5, 4]).fit(X)
    W = est.components_
    np.testing.assert_array_equal((W != 0).sum(axis=1), [2, 5, 4])
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), 1.0)
    C = np.cov(X, rowvar=False)
    np.testing.assert_allclose(est.explained_variance_, np.einsum("ij,jk,ik->i", W, C, W), rtol=1e-10)
    opt = SPCAZou(3, cardinality=[2, 5, 4], renormalize=True).fit(X)
    np.testing.assert_array_equal(opt.components_ != 0, W != 0)
    assert (opt.explained_variance_ >= est.explained_variance_ * (1 - 1e-12)).all()
    assert est.transform(X).shape == (40, 3)


def test_spca_path_equals_independent_runs():
    X = _data(15, n=12, p=30)
    ks = [1, 4, 9]
    path = spca_zou_path(X, ks, ridge=0.1)
    for j, K in enumerate(ks):
        W, v = spca_zou(X, 1, cardinality=K, ridge=0.1)
        np.testing.assert_allclose(path.components[j], W[0], atol=1e-12)
        np.testing.assert_allclose(path.variance[j], v[0], rtol=1e-12)
        assert np.count_nonzero(path.components[j]) == K
    assert (path.variance_opt >= path.variance * (1 - 1e-12)).all()
    warm = spca_zou_path(X, ks, ridge=0.1, warm_start=True)
    assert ((warm.components != 0).sum(axis=1) == ks).all()


def test_spca_bad_input():
    X = _data(16)
    with pytest.raises(ValueError, match="ridge"):
        SPCAZou(ridge=-1.0).fit(X)
    with pytest.raises(ValueError, match="cardinality"):
        SPCAZou(cardinality=13).fit(X)
    with pytest.raises(ValueError, match="n_components"):
        SPCAZou(n_components=50).fit(X)
    with pytest.raises(ValueError, match="cardinalities"):
        spca_zou_path(X, [0])


# --------------------------------------------------------------------------- CE + SR
def _naive_entropy(M):
    s = np.linalg.svd(M, compute_uv=False)
    V = s**2 / np.sum(s**2)
    V = V[V > 0]
    return -np.sum(V * np.log(V)) / np.log(min(M.shape))


@pytest.mark.parametrize(("n", "p"), [(6, 20), (15, 7)])
def test_ce_equals_naive_leave_one_out_svd(n, p):
    rng = np.random.default_rng(n * p)
    X = rng.standard_normal((n, p)) * rng.uniform(0.2, 3.0, p)
    np.testing.assert_allclose(svd_entropy(X), _naive_entropy(X), rtol=1e-12)
    ce = ce_scores(X)
    ref = np.array([_naive_entropy(X) - _naive_entropy(np.delete(X, i, axis=1)) for i in range(p)])
    np.testing.assert_allclose(ce, ref, atol=1e-10)
    idx = cesr_select(X, 4)
    np.testing.assert_array_equal(idx, np.argsort(-ref, kind="stable")[:4])


def test_cesr_bad_input():
    X = np.random.default_rng(0).standard_normal((5, 9))
    with pytest.raises(ValueError, match="n_features"):
        cesr_select(X, 10)
    with pytest.raises(ValueError, match="X"):
        ce_scores(np.full((4, 6), np.inf))
