"""repro.metrics against direct computations."""

import itertools

import numpy as np
import pytest

from repro.linalg import Covariance
from repro.metrics import (
    adjusted_variance,
    cardinality,
    cumulative_variance,
    explained_variance,
    fscore_selection,
    jaccard_score,
    min_angle_deg,
    overlap,
    qr_adjusted_variance,
)


def _setup(seed=0, n=40, p=7, k=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) @ rng.standard_normal((p, p))
    W = rng.standard_normal((k, p))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    return X, W


def test_explained_and_cumulative_variance():
    X, W = _setup()
    C = np.cov(X, rowvar=False)
    expected = np.array([w @ C @ w for w in W])
    np.testing.assert_allclose(explained_variance(C, W), expected)
    np.testing.assert_allclose(explained_variance(Covariance.from_data(X), W), expected)
    np.testing.assert_allclose(explained_variance(C, W[0]), expected[:1])
    np.testing.assert_allclose(cumulative_variance(C, W), np.cumsum(expected))


def test_adjusted_variance_is_projection_variance():
    X, W = _setup(1)
    Xc = X - X.mean(0)
    n = X.shape[0]
    C = Covariance.from_data(X)
    adj = adjusted_variance(C, W)
    for i in range(1, W.shape[0] + 1):
        V = W[:i].T
        Xi = Xc @ V @ np.linalg.inv(V.T @ V) @ V.T  # Shen & Huang (2008): projection on span(V)
        assert adj[i - 1] == pytest.approx(np.trace(Xi.T @ Xi) / (n - 1), rel=1e-10)
    assert np.all(np.diff(adj) >= -1e-12)


def test_adjusted_equals_plain_for_eigenvectors():
    X, _ = _setup(2)
    C = np.cov(X, rowvar=False)
    vals, vecs = np.linalg.eigh(C)
    W = vecs[:, ::-1][:, :3].T
    np.testing.assert_allclose(adjusted_variance(C, W), np.cumsum(vals[::-1][:3]), rtol=1e-10)
    np.testing.assert_allclose(qr_adjusted_variance(C, W), vals[::-1][:3], rtol=1e-10)


def test_qr_adjusted_variance_matches_qr_of_scores():
    X, W = _setup(3)
    Xc = X - X.mean(0)
    _, R = np.linalg.qr(Xc @ W.T)
    expected = np.diag(R) ** 2 / (X.shape[0] - 1)
    np.testing.assert_allclose(qr_adjusted_variance(np.cov(X, rowvar=False), W), expected, rtol=1e-9)


def test_duplicated_component_adds_no_variance():
    X, W = _setup(4)
    W2 = np.vstack([W[0], W[0]])
    C = np.cov(X, rowvar=False)
    adj = adjusted_variance(C, W2)
    assert adj[1] == pytest.approx(adj[0])
    assert qr_adjusted_variance(C, W2)[1] == pytest.approx(0, abs=1e-10)


def test_cardinality_and_overlap():
    W = np.array([[0.0, 1.0, 0.0, 1e-9], [1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(cardinality(W), [2, 1])
    np.testing.assert_array_equal(cardinality(W, tol=1e-6), [1, 1])
    assert overlap(np.eye(3)) == 0.0
    U = np.array([[1.0, 0.0], [1.0, 0.0]]) / np.sqrt(2) * np.sqrt(2)
    # rows (1,0),(1,0): W W' = [[1,1],[1,1]] -> ||I - W W'||_F = sqrt(2)
    assert overlap(U) == pytest.approx(np.sqrt(2))


def test_min_angle_deg_exact_and_brute_force():
    t = np.deg2rad(60)
    W = np.array([[1.0, 0.0, 0.0], [np.cos(t), np.sin(t), 0.0], [0.0, 0.0, 2.0]])
    assert min_angle_deg(W) == pytest.approx(60.0)
    assert min_angle_deg(W[[0, 2]]) == pytest.approx(90.0)
    assert min_angle_deg(3.0 * W) == pytest.approx(60.0)  # scale free
    assert min_angle_deg(np.array([[1.0, 0.0], [-1.0, 1e-12]])) == pytest.approx(0.0, abs=1e-6)  # lines
    assert min_angle_deg(np.array([[1.0, 2.0], [0.0, 0.0]])) == 90.0  # a zero row is orthogonal
    assert min_angle_deg(np.array([1.0, 2.0])) == 90.0  # one row
    rng = np.random.default_rng(4)
    V = rng.standard_normal((5, 6))
    ref = min(
        np.degrees(np.arccos(min(1.0, abs(V[i] @ V[j]) / np.linalg.norm(V[i]) / np.linalg.norm(V[j]))))
        for i, j in itertools.combinations(range(5), 2)
    )
    assert min_angle_deg(V) == pytest.approx(ref, abs=1e-9)
    with pytest.raises(ValueError, match="W"):
        min_angle_deg(np.array([[1.0, np.nan], [0.0, 1.0]]))


def _jaccard_bruteforce(a, b):
    n11 = n10 = n01 = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        sa, sb = a[i] == a[j], b[i] == b[j]
        n11 += sa and sb
        n10 += sa and not sb
        n01 += sb and not sa
    return n11 / (n11 + n10 + n01)


def test_jaccard_against_pair_enumeration():
    rng = np.random.default_rng(5)
    for _ in range(5):
        a = rng.integers(0, 3, 25)
        b = rng.integers(0, 4, 25)
        assert jaccard_score(a, b) == pytest.approx(_jaccard_bruteforce(a, b))
    a = np.array([0, 0, 1, 1, 2])
    assert jaccard_score(a, (a + 1) % 3) == 1.0  # relabelling-invariant
    with pytest.raises(ValueError, match="equal length"):
        jaccard_score([0, 1], [0, 1, 2])


def test_jaccard_equals_scikit_learns_pair_confusion_bit_for_bit():
    # the contingency-table arithmetic is scikit-learn's pair_confusion_matrix without its checks:
    # the Sigg Fig. 4 numbers must not move by one bit (labels of any kind, empty and single groups)
    from sklearn.metrics.cluster import pair_confusion_matrix

    rng = np.random.default_rng(11)
    for t in range(400):
        n = int(rng.integers(0, 40))
        a, b = rng.integers(0, int(rng.integers(1, 6)), n), rng.integers(-2, int(rng.integers(1, 6)), n)
        if t % 4 == 0:
            a = np.array([f"g{x}" for x in a])
        C = pair_confusion_matrix(a, b)
        denom = C[1, 1] + C[0, 1] + C[1, 0]
        assert jaccard_score(a, b) == (1.0 if denom == 0 else float(C[1, 1] / denom))


def test_fscore_selection():
    assert fscore_selection([0, 1, 2], [1, 2, 3]) == pytest.approx(2 / 3)
    mask = np.array([True, True, False, False])
    assert fscore_selection(mask, np.array([True, False, False, False]), 4) == pytest.approx(2 / 3)
    assert fscore_selection([0], [1]) == 0.0
    with pytest.raises(ValueError, match="selected"):
        fscore_selection(np.array([0.5]), [1])


def test_shape_mismatch_is_named():
    with pytest.raises(ValueError, match="features"):
        explained_variance(np.eye(4), np.ones((1, 3)))
