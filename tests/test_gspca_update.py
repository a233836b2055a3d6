"""The deletion update of GSPCA's backward steps (``repro.baselines._gspca_kernels.deleted_eigh``) against
``eigh``."""

from __future__ import annotations

import numpy as np
import pytest

from repro.baselines import _gspca_kernels as K
from repro.baselines import gspca_path


def _eig_desc(S):
    lam, V = np.linalg.eigh(S)
    return lam[::-1].copy(), np.ascontiguousarray(V[:, ::-1])


def _twin(lam, V, i):
    """NumPy twin: rebuild ``V diag(lam) V'``, delete row and column ``i``, take a fresh ``eigh``."""
    S = (V * lam) @ V.T
    keep = np.arange(S.shape[0]) != i
    return S[np.ix_(keep, keep)], _eig_desc(S[np.ix_(keep, keep)])


def _check(lam, V, i, tol=1e-13):
    """deleted_eigh agrees with the twin: eigenvalues, orthonormal vectors, reconstruction of the
    submatrix and, for well-separated eigenvalues, the same eigenvectors up to sign."""
    got_lam, got_V = K.deleted_eigh(lam, V, i)
    S, (ref_lam, ref_V) = _twin(lam, V, i)
    scale = max(abs(lam).max(), 1e-300)
    m = S.shape[0]
    np.testing.assert_allclose(got_lam, ref_lam, rtol=0, atol=tol * scale)
    assert np.all(np.diff(got_lam) <= 0)
    np.testing.assert_allclose(got_V.T @ got_V, np.eye(m), rtol=0, atol=tol * 10)
    np.testing.assert_allclose((got_V * got_lam) @ got_V.T, S, rtol=0, atol=tol * 10 * scale)
    gaps = np.abs(np.diff(ref_lam))
    for k in range(m):
        sep = min(gaps[k - 1] if k > 0 else np.inf, gaps[k] if k < m - 1 else np.inf)
        if sep > 1e-6 * scale:  # an isolated eigenvalue: its eigenvector is unique up to sign
            assert abs(got_V[:, k] @ ref_V[:, k]) == pytest.approx(1.0, abs=1e-9)


def test_fixed_case():
    # [[2, 1, 0], [1, 2, 0], [0, 0, 1]] without variable 2: [[2, 1], [1, 2]], eigenvalues 3, 1
    lam, V = _eig_desc(np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 1.0]]))
    got_lam, got_V = K.deleted_eigh(lam, V, 2)
    np.testing.assert_allclose(got_lam, [3.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(np.abs(got_V), np.full((2, 2), np.sqrt(0.5)), rtol=1e-15)
    # m = 2: the remaining diagonal entry
    lam, V = _eig_desc(np.array([[2.0, 0.5], [0.5, 1.0]]))
    for i, rest in ((0, 1.0), (1, 2.0)):
        got_lam, got_V = K.deleted_eigh(lam, V, i)
        assert got_lam[0] == pytest.approx(rest, rel=1e-15) and abs(got_V[0, 0]) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_twin_on_random_covariances(seed):
    rng = np.random.default_rng(seed)
    for m in (2, 3, 7, 20):
        X = rng.normal(size=(3 * m, m)) @ rng.normal(size=(m, m))
        lam, V = _eig_desc(np.cov(X.T))
        for i in range(m):
            _check(lam, V, i)


def test_deflation_cases():
    """Zero weights (a decoupled variable), repeated, nearly repeated and close eigenvalues (where
    eigenvectors formed from the original weights instead of Loewner's lose orthogonality), a
    rank-deficient matrix (a cluster of zero eigenvalues), exactly as the fresh eigh."""
    rng = np.random.default_rng(5)
    C = np.cov(rng.normal(size=(40, 8)).T)
    C[0, 1:] = C[1:, 0] = 0.0  # decoupled: exact zeros in the eigenvectors
    cases = [C]
    Q, _ = np.linalg.qr(rng.normal(size=(9, 9)))
    clustered = [4, 4 + 1e-15, 2, 2 + 1e-13, 1, 1, 1, 0.5, 0.5]
    close = [3, 2 + 4e-9, 2 + 3e-9, 2 + 2e-9, 2 + 1e-9, 2, 1 + 1e-7, 1, 0.5]  # roots near poles (Loewner)
    for spectrum in ([5, 3, 3, 3, 2, 1, 1, 0.5, 0.1], clustered, close):
        cases.append((Q * spectrum) @ Q.T)
    X = rng.normal(size=(4, 10))
    cases.append(np.cov(X.T))  # rank 3 of 10
    cases.append(np.diag([3.0, 3.0, 2.0, 1.0]))  # every weight zero but one
    for S in cases:
        S = (S + S.T) / 2
        lam, V = _eig_desc(S)
        for i in range(S.shape[0]):
            _check(lam, V, i, tol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_repeated_deletions_stay_exact(seed):
    """A whole backward path of updates (no fresh eigh) ends where a fresh eigh of the last submatrix is."""
    rng = np.random.default_rng(seed)
    d = 60
    X = rng.normal(size=(200, d)) @ np.diag(np.geomspace(100, 0.01, d)) @ rng.normal(size=(d, d))
    C = np.cov(X.T)
    lam, V = _eig_desc(C)
    S = list(range(d))
    while len(S) > 2:
        t = int(rng.integers(len(S)))
        S.pop(t)
        lam, V = K.deleted_eigh(lam, V, t)
    ref_lam, _ = _eig_desc(C[np.ix_(S, S)])
    np.testing.assert_allclose(lam, ref_lam, rtol=0, atol=1e-12 * abs(ref_lam).max())
    np.testing.assert_allclose((V * lam) @ V.T, C[np.ix_(S, S)], rtol=0, atol=1e-12 * abs(C).max())


def _backward_fresh(C):
    """The backward path with a fresh eigh after every removal (the rule before the update)."""
    S = list(range(C.shape[0]))
    removed, values = [], {}
    while len(S) >= 2:
        lam, V = _eig_desc(C[np.ix_(S, S)])
        values[len(S)] = lam[0]
        removed.append(S.pop(int(K.deleted_argmax(lam, V, np.arange(len(S), dtype=np.int64)))))
    values[1] = C[S[0], S[0]]
    return removed, np.array([values[k] for k in range(1, C.shape[0] + 1)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_backward_path_as_with_fresh_eigh(seed):
    """gspca_path's backward search removes the same variables, in the same order, with the same values
    as the search that takes a fresh eigh at every step (a low-rank covariance included)."""
    rng = np.random.default_rng(seed)
    Cs = [np.cov((rng.normal(size=(80, 30)) @ rng.normal(size=(30, 30))).T)]
    Cs.append(np.cov((rng.normal(size=(30, 4)) @ rng.normal(size=(4, 25))).T) + 1e-9 * np.eye(25))
    for C in Cs:
        removed, values = _backward_fresh(C)
        path = gspca_path(C, precomputed=True, direction="backward")
        np.testing.assert_allclose(path.backward_variance, values, rtol=1e-12)
        d = C.shape[0]
        for k in range(1, d + 1):
            gone = set(removed[: d - k])
            assert path.supports[k - 1].tolist() == [j for j in range(d) if j not in gone]


def test_close_eigenvalues_keep_orthogonal_vectors():
    """Eigenvalues 1e-13..1e-7 apart (not deflated): the vectors are orthonormal to a few eps. Formed from
    the original weights instead of Loewner's, the same vectors were 1.6e-14 off (measured on the kernel's
    own roots), above this bound."""
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.normal(size=(9, 9)))
    for gap in (1e-9, 1e-13):
        spectrum = [3, 2 + 4 * gap, 2 + 3 * gap, 2 + 2 * gap, 2 + gap, 2, 1 + 100 * gap, 1, 0.5]
        S = (Q * spectrum) @ Q.T
        lam, V = _eig_desc((S + S.T) / 2)
        for i in range(9):
            got_V = K.deleted_eigh(lam, V, i)[1]
            assert np.abs(got_V.T @ got_V - np.eye(8)).max() < 4e-15
