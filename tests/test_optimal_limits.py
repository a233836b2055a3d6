"""The certified optimum's loose ends (issue 37, part D): a time limit binds from the start (the root
heuristics included), every status the code can return is documented, and ``OptimalSparsePCA`` fits wide
data through the ``n x n`` side like :func:`repro.optimal_sparse_pca`."""

from __future__ import annotations

import inspect
import re
import time

import numpy as np
import pytest

from repro import OptimalSparsePCA, optimal_sparse_pca
from repro.optimal import estimator as optimal_mod
from repro.optimal import search, wide
from repro.optimal.wide import WIDE_MIN_FEATURES


def _returned_statuses() -> set[str]:
    """Every status string the two routes assign (``status = "..."``, ``status == "..."``)."""
    found = set()
    for mod in (search, wide, optimal_mod):
        found |= set(re.findall(r'status\s*=\s*"([a-z_]+)"', inspect.getsource(mod)))
    return found


def test_every_status_is_documented():
    statuses = _returned_statuses()
    assert {"optimal", "time_limit", "node_limit", "interrupted", "undecided_leaves"} <= statuses
    assert "too_many_candidates" in statuses
    doc = search.OptimalResult.__doc__
    for s in statuses:
        assert f'"{s}"' in doc, f"status {s!r} is returned but not in OptimalResult's docstring"


def _hard(p=160, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((400, 6)) @ rng.standard_normal((6, p)) + rng.standard_normal((400, p))
    return np.cov(X, rowvar=False)


def test_time_limit_binds_the_root_heuristics():
    """``time_limit=0``: no greedy, EM, swap or spannogram (only the truncated eigenvector, which the root's
    eigendecomposition gives): the solve takes a fraction of the root phase alone (``max_nodes=0``), and the
    result is still a certified feasible component."""
    optimal_sparse_pca(_hard(p=20), 5, precomputed=True)  # compiled before anything is timed
    C = _hard()
    k = 25
    t = time.perf_counter()
    root_only = optimal_sparse_pca(C, k, precomputed=True, max_nodes=0)
    t_root = time.perf_counter() - t
    t = time.perf_counter()
    res = optimal_sparse_pca(C, k, precomputed=True, time_limit=0.0)
    t_zero = time.perf_counter() - t
    assert res.status == "time_limit" and not res.proven and res.n_nodes == 0
    assert t_zero < 0.5 * t_root, (t_zero, t_root)
    x = res.component
    assert np.count_nonzero(x) <= k and np.linalg.norm(x) == pytest.approx(1.0)
    assert res.value == pytest.approx(x @ C @ x, rel=1e-10)
    assert res.upper_bound >= root_only.value * (1 - 1e-9)  # a bound on the optimum, so above any value
    assert res.value <= root_only.upper_bound * (1 + 1e-9)


def test_time_limit_binds_the_wide_route():
    rng = np.random.default_rng(3)
    p = 3 * WIDE_MIN_FEATURES
    X = rng.standard_normal((30, 4)) @ rng.standard_normal((4, p)) + rng.standard_normal((30, p))
    res = optimal_sparse_pca(X, 8, time_limit=0.0)
    assert res.status == "time_limit" and not res.proven and res.n_nodes == 0
    ref = optimal_sparse_pca(X, 8, max_nodes=50)  # proven or not, its value and bound bracket the optimum
    assert res.value <= ref.upper_bound * (1 + 1e-9) and res.upper_bound >= ref.value * (1 - 1e-9)


@pytest.mark.parametrize("nonneg", [False, True])
def test_estimator_fits_wide_data_through_the_small_side(monkeypatch, nonneg):
    """``OptimalSparsePCA.fit`` on n << p data never forms ``p x p`` (``_as_matrix`` refuses), and each
    component is the function's on the data deflated so far; the values equal the covariance route's."""
    rng = np.random.default_rng(11)
    p = WIDE_MIN_FEATURES + 30
    X = rng.standard_normal((12, 3)) @ rng.standard_normal((3, p)) + 0.2 * rng.standard_normal((12, p))
    X[:, :5] *= 3.0
    cov = OptimalSparsePCA(n_components=2, cardinality=3, nonneg=nonneg, precomputed=True)
    cov.fit(np.cov(X, rowvar=False))

    def refuse(*_a, **_k):
        raise AssertionError("the p x p covariance was formed")

    monkeypatch.setattr(optimal_mod, "_as_matrix", refuse)
    est = OptimalSparsePCA(n_components=2, cardinality=3, nonneg=nonneg).fit(X)
    assert est.proven_.all() and est.components_.shape == (2, p)
    first = optimal_sparse_pca(X, 3, nonneg=nonneg)
    np.testing.assert_allclose(est.components_[0], first.component, atol=1e-8)
    w = est.components_[0]
    D = (X - X.mean(axis=0)) @ (np.eye(p) - np.outer(w, w))
    second = optimal_sparse_pca(D, 3, nonneg=nonneg)
    assert est.explained_variance_[1] == pytest.approx(second.value, rel=1e-8)
    np.testing.assert_allclose(est.explained_variance_, cov.explained_variance_, rtol=1e-7)
    assert est.transform(X).shape == (12, 2)


@pytest.mark.parametrize("nonneg", [False, True])
def test_the_root_heuristics_take_the_searchs_matrix_unchecked(nonneg):
    """A deflated covariance whose round-off leaves an eigenvalue below ``check_psd``'s tolerance (the
    door would refuse it from a user) still gets EMSparsePCA's support and the spannogram bound at the
    root: the heuristics trust the matrix the search was given."""
    from repro._validation import check_psd
    from repro.optimal import roots

    rng = np.random.default_rng(2)
    U = np.linalg.qr(rng.standard_normal((7, 7)))[0]
    lam = np.array([3.0, 2.0, 1.0, 0.5, 0.2, 0.0, -1e-7])  # beyond PSD_RTOL x max|diag| x 7: not PSD
    C = (U * lam) @ U.T
    C = (C + C.T) / 2
    with pytest.raises(ValueError, match="not positive semi-definite"):
        check_psd(C, "C")
    S = roots._em_support(C, 3, nonneg)
    assert S is not None and 0 < S.size <= 3
    bound = roots._spannogram_root(C, 3, nonneg)
    assert np.isfinite(bound) and bound >= _brute_force_optimum(C, 3, nonneg) * (1 - 1e-9)


def _brute_force_optimum(C, k, nonneg):
    """Brute force over the supports of at most ``k`` features (signed: ``lambda_max(C_T)``; ``x >= 0``:
    ``max x'C_T x`` over ``x >= 0`` is at least the positive part of the top eigenvector's value)."""
    import itertools

    best = -np.inf
    for m in range(1, k + 1):
        for T in itertools.combinations(range(C.shape[0]), m):
            w, V = np.linalg.eigh(C[np.ix_(T, T)])
            if not nonneg:
                best = max(best, w[-1])
            elif (V[:, -1] > 0).all() or (V[:, -1] < 0).all():
                best = max(best, w[-1])
    return best
