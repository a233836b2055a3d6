"""Greedy sparse PCA (Moghaddam, Weiss & Avidan 2006): secular-equation kernels, greedy paths, brute force."""

from __future__ import annotations

import itertools

import naive
import numpy as np
import pytest
from sklearn.base import clone

from repro._ties import argmax_tied
from repro.baselines import _gspca_kernels as K
from repro.baselines.gspca import GSPCA, gspca, gspca_path
from repro.linalg import Covariance, projection_deflate


def _cov(d, n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    return np.cov(X.T)


def _tied(lam, vals):
    """The backward step's rule: the first position within 1e-12 |lambda_1| of the largest value."""
    return argmax_tied(vals, scale=abs(lam[0]))


def _eig_desc(S):
    lam, V = np.linalg.eigh(S)
    return lam[::-1].copy(), np.ascontiguousarray(V[:, ::-1])


def _exhaustive(C, k):
    best, best_S = -np.inf, None
    for S in itertools.combinations(range(C.shape[0]), k):
        v = np.linalg.eigvalsh(C[np.ix_(S, S)])[-1]
        if v > best:
            best, best_S = v, S
    return best, best_S


def _greedy_naive(C, K_max):
    """Forward and backward greedy with eigvalsh on every candidate submatrix (no secular equations)."""
    D = C.shape[0]
    lam = lambda S: np.linalg.eigvalsh(C[np.ix_(S, S)])[-1]  # noqa: E731
    S = [argmax_tied(np.diag(C))]
    fwd = [lam(S)]
    while len(S) < K_max:
        cand = [j for j in range(D) if j not in S]
        vals = [lam([*S, j]) for j in cand]
        S.append(cand[argmax_tied(vals, scale=lam(S))])
        fwd.append(max(vals))
    S = list(range(D))
    bwd = {D: lam(S)}
    while len(S) > 1:
        vals = [lam(S[:t] + S[t + 1 :]) for t in range(len(S))]
        S.pop(argmax_tied(vals, scale=lam(S)))
        bwd[len(S)] = max(vals)
    return np.array(fwd), np.array([bwd[k] for k in range(1, K_max + 1)])


# --------------------------------------------------------------------------- kernels vs twins
def test_bordered_fixed_case():
    # [[2, 0, 1], [0, 1, 0], [1, 0, 2]]: eigenvalues 3, 1, 1
    lam = np.array([2.0, 1.0])
    Z = np.array([[1.0], [0.0]])
    assert K.bordered_max_eig(lam, Z, np.array([2.0]))[0] == pytest.approx(3.0, rel=1e-14)
    assert naive.bordered_max_eig(lam, Z, np.array([2.0]))[0] == pytest.approx(3.0, rel=1e-14)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bordered_matches_twin(seed):
    rng = np.random.default_rng(seed)
    for m in (1, 2, 5, 9):
        lam = np.sort(rng.normal(size=m) * 3)[::-1].copy()
        Z = rng.normal(size=(m, 6))
        Z[:, 0] = 0.0  # zero border
        Z[0, 1] = 0.0  # no weight on the leading eigenvalue
        Z[:, 2] *= 1e-9  # tiny border
        a = rng.normal(size=6) * 3
        np.testing.assert_allclose(K.bordered_max_eig(lam, Z, a), naive.bordered_max_eig(lam, Z, a),
                                   rtol=1e-11, atol=1e-11)


def test_deleted_fixed_case():
    S = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    lam, V = _eig_desc(S)
    got = K.deleted_max_eig(lam, V, np.arange(3, dtype=np.int64))
    np.testing.assert_allclose(got, [2.0, 2.0, 3.0], rtol=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_deleted_matches_twin(seed):
    for m in (2, 3, 6, 10):
        S = _cov(m, seed=seed + m)
        if m >= 3:
            S[0, 1:] = S[1:, 0] = 0.0  # a decoupled variable (zero weights in the eigenvectors)
        lam, V = _eig_desc(S)
        cand = np.arange(m, dtype=np.int64)
        np.testing.assert_allclose(K.deleted_max_eig(lam, V, cand), naive.deleted_max_eig(lam, V, cand),
                                   rtol=1e-10, atol=1e-12)
    # repeated leading eigenvalue: removing any variable keeps it (interlacing)
    lam, V = _eig_desc(np.diag([3.0, 3.0, 1.0]))
    np.testing.assert_allclose(K.deleted_max_eig(lam, V, np.arange(3, dtype=np.int64)), [3.0, 3.0, 3.0])


def _all_backward_steps(C):
    """``(lam, V)`` of every support on C's backward-elimination path (full solves, the old rule)."""
    S = list(range(C.shape[0]))
    while len(S) >= 2:
        lam, V = _eig_desc(C[np.ix_(S, S)])
        yield lam, V
        S.pop(_tied(lam, K.deleted_max_eig(lam, V, np.arange(len(S), dtype=np.int64))))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_deleted_argmax_is_argmax_of_every_value(seed):
    """The pruned search picks exactly argmax_tied(deleted_max_eig) (first index on ties) at every backward
    step of random covariances, a low-rank one (many near-equal candidates), one with duplicated
    variables (exact ties) and one with decoupled variables (zero weights), and on a subset of candidates."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 3)) @ rng.normal(size=(3, 25))  # rank 3
    Cs = [_cov(30, seed=seed), np.cov(X.T) + 1e-9 * np.eye(25)]
    Y = rng.normal(size=(40, 8))
    Cs.append(np.cov(Y[:, [0, 1, 1, 2, 3, 3, 3, 4, 5, 6, 7]].T))  # duplicated columns: tied removals
    D = _cov(12, seed=seed + 10)
    D[0, 1:] = D[1:, 0] = D[5, :5] = D[:5, 5] = 0.0
    D[5, 6:] = D[6:, 5] = 0.0
    Cs.append(D)
    n_steps = 0
    for C in Cs:
        for lam, V in _all_backward_steps(C):
            m = lam.shape[0]
            cand = np.arange(m, dtype=np.int64)
            assert K.deleted_argmax(lam, V, cand) == _tied(lam, K.deleted_max_eig(lam, V, cand))
            sub = np.sort(rng.choice(m, size=max(1, m // 2), replace=False)).astype(np.int64)
            assert K.deleted_argmax(lam, V, sub) == _tied(lam, K.deleted_max_eig(lam, V, sub))
            n_steps += 1
    assert n_steps == 29 + 24 + 10 + 11


def test_deleted_argmax_ties_and_nonfinite():
    # all three removals keep lambda_max = 3 (repeated leading eigenvalue): the first position wins
    lam, V = _eig_desc(np.diag([3.0, 3.0, 1.0]))
    assert K.deleted_argmax(lam, V, np.arange(3, dtype=np.int64)) == 0
    assert K.deleted_argmax(lam, V, np.array([2, 1], dtype=np.int64)) == 0
    # a NaN in the eigenvectors: every candidate is solved and np.argmax's rule applies
    lam, V = _eig_desc(_cov(5, seed=3))
    V[2, 3] = np.nan
    cand = np.arange(5, dtype=np.int64)
    assert K.deleted_argmax(lam, V, cand) == np.argmax(K.deleted_max_eig(lam, V, cand))


def _path_supports(C, direction):
    return [S.tolist() for S in gspca_path(C, direction=direction, precomputed=True).supports]


@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
def test_ties_are_not_decided_by_the_last_bits(direction):
    """a correlation matrix (every C_jj = 1: the forward start is a tie) and duplicated variables
    (tied additions and removals). Making one tied entry larger by 1e-15 (relative) changes no support:
    ties go to the lowest index. np.argmax on the old code followed the perturbation."""
    rng = np.random.default_rng(4)
    Y = rng.normal(size=(40, 6)) @ rng.normal(size=(6, 6))
    Y = Y[:, [0, 1, 1, 2, 3, 3, 4, 5]]  # columns 1, 2 and 4, 5 are duplicates
    R = np.corrcoef(Y.T)
    ref = _path_supports(R, direction)
    if direction != "backward":
        assert ref[0] == [0]  # the start: the lowest index among the equal diagonal entries
    for j in range(8):
        Rj = R.copy()
        Rj[j, :] *= 1 + 1e-15
        Rj[:, j] *= 1 + 1e-15  # variable j scaled by 1 + 1e-15: C_jj larger by 2e-15
        assert _path_supports(Rj, direction) == ref, j


# --------------------------------------------------------------------------- greedy vs brute force
@pytest.mark.parametrize(("d", "seed"), [(5, 0), (7, 1), (8, 2), (8, 3)])
def test_greedy_against_exhaustive_search(d, seed):
    C = _cov(d, seed=seed)
    path = gspca_path(C, precomputed=True)
    for k in range(1, d + 1):
        best, _ = _exhaustive(C, k)
        assert path.variance[k - 1] <= best * (1 + 1e-12)  # never better than the optimum
    # exact where greedy is provably exact: k = 1 (forward), k = d - 1 (backward's first step), k = d
    for k in (1, d - 1, d):
        assert path.variance[k - 1] == pytest.approx(_exhaustive(C, k)[0], rel=1e-12)
    # the reported loadings realize the reported variance on their support
    for k in range(1, d + 1):
        w = path.components[k - 1]
        assert np.count_nonzero(w) == k == len(path.supports[k - 1])
        assert np.linalg.norm(w) == pytest.approx(1.0)
        assert w @ C @ w == pytest.approx(path.variance[k - 1], rel=1e-12)


@pytest.mark.parametrize("seed", [0, 4])
def test_forward_and_backward_equal_naive_greedy(seed):
    d = 8
    C = _cov(d, seed=seed)
    fwd, bwd = _greedy_naive(C, d)
    path = gspca_path(C, precomputed=True)
    np.testing.assert_allclose(path.forward_variance, fwd, rtol=1e-12)
    np.testing.assert_allclose(path.backward_variance, bwd, rtol=1e-12)
    np.testing.assert_allclose(path.variance, np.maximum(fwd, bwd), rtol=1e-12)


def test_directions_and_single_component_agree_with_path():
    C = _cov(12, seed=5)
    path = gspca_path(C, 12, precomputed=True)
    for k in (3, 6):
        res = gspca(C, k, precomputed=True)
        assert res.variance[0] == pytest.approx(path.variance[k - 1], rel=1e-12)
        for direction, ref in (("forward", path.forward_variance), ("backward", path.backward_variance)):
            r = gspca(C, k, precomputed=True, direction=direction)
            assert r.variance[0] == pytest.approx(ref[k - 1], rel=1e-12)


def test_full_cardinality_is_pca():
    C = _cov(6, seed=7)
    res = gspca(C, 6, 2, precomputed=True)
    _, V = _eig_desc(C)
    assert abs(res.components[0] @ V[:, 0]) == pytest.approx(1.0, abs=1e-10)
    assert abs(res.components[1] @ V[:, 1]) == pytest.approx(1.0, abs=1e-10)


def test_deflation_components():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 10))
    res = gspca(X, 4, 3)
    assert res.components.shape == (3, 10)
    assert (np.count_nonzero(res.components, axis=1) == 4).all()
    C = np.cov(X.T)
    # the second component is the greedy solution on the projection-deflated matrix
    C2 = projection_deflate(C, res.components[0])
    np.testing.assert_allclose(res.components[1], gspca(C2, 4, precomputed=True).components[0], atol=1e-10)
    # a Covariance operator is accepted too
    r2 = gspca(Covariance.from_data(X), 4, 3)
    np.testing.assert_allclose(r2.components, res.components, atol=1e-10)
    # per-component cardinalities
    r3 = gspca(X, [2, 5], 2)
    assert list(np.count_nonzero(r3.components, axis=1)) == [2, 5]


def test_estimator():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 9)) + 3.0
    est = GSPCA(2, cardinality=3)
    Z = est.fit_transform(X)
    assert Z.shape == (60, 2)
    np.testing.assert_allclose(np.linalg.norm(est.components_, axis=1), 1.0)
    assert (np.count_nonzero(est.components_, axis=1) == 3).all()
    np.testing.assert_allclose(est.mean_, X.mean(0))
    C = np.cov(X.T)
    np.testing.assert_allclose(est.explained_variance_,
                               np.einsum("ij,jk,ik->i", est.components_, C, est.components_))
    assert clone(est).get_params()["cardinality"] == 3
    # deterministic
    np.testing.assert_array_equal(GSPCA(2, cardinality=3).fit(X).components_, est.components_)


@pytest.mark.parametrize("direction", ["both", "forward", "backward"])
def test_default_cardinality_is_unconstrained_pca(direction):
    """``GSPCA()`` (cardinality None): the leading eigenvectors of the deflated covariance, i.e. PCA."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(50, 7)) @ rng.normal(size=(7, 7))
    est = GSPCA(2, direction=direction).fit(X)
    vals, vecs = np.linalg.eigh(np.cov(X.T))
    for j in range(2):
        assert abs(abs(est.components_[j] @ vecs[:, -1 - j]) - 1.0) < 1e-10
    np.testing.assert_allclose(est.explained_variance_, vals[::-1][:2], rtol=1e-10)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda X: gspca(X, 0), "cardinality"),
        (lambda X: gspca(X, 7), "cardinality"),
        (lambda X: gspca(X, 2, direction="sideways"), "direction"),
        (lambda X: gspca(X, 2, deflation="none"), "deflation"),
        (lambda X: gspca(X, [1, 2], 3), "cardinality"),
        (lambda X: gspca_path(X, 0), "max_cardinality"),
        (lambda X: GSPCA(1, cardinality=0).fit(X), "cardinality"),
        (lambda X: gspca(np.where(X > 1, np.nan, X), 2), "NaN"),
    ],
)
def test_bad_input(call, match):
    X = np.random.default_rng(0).normal(size=(20, 6))
    with pytest.raises(ValueError, match=match):
        call(X)
