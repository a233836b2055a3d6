"""The certified optimum at every ``k`` up to ``p``: no false proof past a fixed support size, answers that
do not fall below easy ones, and time limits and interruptions that hold inside one kernel call.

References: ``lambda_max(C)`` (the optimum at ``k = p`` without signs, and with ``x >= 0`` where the top
eigenvector is positive), brute force on small principal submatrices, the value of every ``k``-sparse
vector the tests can find (the EM from many starts, truncated eigenvectors), and the best single feature
(the optimum at ``k = 1``).
"""

from __future__ import annotations

import time
import zlib

import numpy as np
import pytest
from test_optimal import brute

from repro import EMSparsePCA, optimal_sparse_pca
from repro.linalg import Covariance
from repro.optimal import _kernels as K
from repro.optimal.search import search


def _instance(kind: str, p: int, rng) -> np.ndarray:
    if kind == "wishart":
        A = rng.standard_normal((2 * p, p))
        return A.T @ A / (2 * p)
    if kind == "spiked":
        u = np.zeros(p)
        u[:10] = rng.standard_normal(10)
        A = rng.standard_normal((2 * p, p))
        return A.T @ A / (2 * p) + 5.0 * np.outer(u, u) / (u @ u)
    if kind == "positive":  # a positive factor: the x >= 0 optimum at k = p is the Perron vector
        A = np.abs(rng.standard_normal((p, 2)))
        return A @ A.T + 0.1 * np.eye(p)
    A = rng.standard_normal((p, 3))  # "mixed": a low-rank factor of both signs
    return A @ A.T + 0.1 * np.eye(p)


def _lower_bounds(C: np.ndarray, k: int, nonneg: bool, rng) -> list[float]:
    """Values of ``k``-sparse unit vectors (``x >= 0`` with ``nonneg``) found without the solver: the
    truncated top eigenvector (re-solved on its support) and the EM from the default and random starts."""
    out = []
    v = np.linalg.eigh(C)[1][:, -1]
    for s in (v, -v):
        score = np.maximum(s, 0) if nonneg else np.abs(s)
        S = np.argsort(-score, kind="stable")[:k]
        if nonneg:
            S = S[score[S] > 0]
            if S.size:
                out.append(float(K.nonneg_lower(C, S.astype(np.int64), 200)[0]))
        else:
            out.append(float(np.linalg.eigvalsh(C[np.ix_(S, S)])[-1]))
    cov = Covariance.from_matrix(C)
    for seed in range(3):
        est = EMSparsePCA(cardinality=k, nonneg=nonneg, certify=False, random_state=seed, n_restarts=5)
        w = est.fit(cov).components_[0]
        assert np.count_nonzero(w) <= k and (not nonneg or (w >= 0).all())
        out.append(float(w @ C @ w))
    return out


def test_counterexample_beyond_62_is_no_longer_proven_at_62():
    """A 70 x 70 Wishart covariance: at k = 70 the optimum is ``lambda_max`` (every unit vector is
    allowed); the search used to stop at 62 non-zeros and call the k = 62 optimum proven at k = 63..70."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((70, 70))
    C = A.T @ A / 70
    lam = np.linalg.eigvalsh(C)[-1]
    r = optimal_sparse_pca(C, 70, precomputed=True)
    assert r.proven and r.value == pytest.approx(lam, rel=1e-10)
    assert r.upper_bound >= lam * (1 - 1e-12)
    prev = 0.0
    for k in (62, 63, 64):
        r = optimal_sparse_pca(C, k, precomputed=True)
        assert np.count_nonzero(r.component) <= k
        assert r.upper_bound >= max(_lower_bounds(C, k, False, rng)) * (1 - 1e-12)
        assert r.value >= prev * (1 - 1e-12)  # the optimum grows with k, and so must the answer
        prev = r.value
    assert np.count_nonzero(r.component) > 62  # the k = 64 optimum is dense here


@pytest.mark.parametrize("kind", ["wishart", "spiked", "positive", "mixed"])
@pytest.mark.parametrize("nonneg", [False, True])
def test_k_near_p_against_lambda_max_and_found_vectors(kind, nonneg):
    """``k = p, p - 1, p - 2`` at p = 66 (past the old limit of 62): the bound is never below a value
    the test can find, the value never below the answer at ``k - 1``, and at ``k = p`` the signed
    optimum (and the non-negative one of a positive factor) is ``lambda_max``."""
    rng = np.random.default_rng(zlib.crc32(kind.encode()) % 1000 + nonneg)  # not hash(): salted per process
    p = 66
    C = _instance(kind, p, rng)
    lam = np.linalg.eigvalsh(C)[-1]
    prev = 0.0
    for k in (p - 2, p - 1, p):
        r = optimal_sparse_pca(C, k, precomputed=True, nonneg=nonneg, time_limit=5.0)
        x = r.component
        assert np.count_nonzero(x) <= k and np.linalg.norm(x) == pytest.approx(1.0)
        assert not nonneg or (x >= 0).all()
        assert r.value == pytest.approx(float(x @ C @ x), rel=1e-12)
        assert r.value <= lam * (1 + 1e-12) and r.upper_bound >= r.value
        assert r.upper_bound >= max(_lower_bounds(C, k, nonneg, rng)) * (1 - 1e-9)
        assert r.value >= prev * (1 - 1e-12)
        prev = r.value
        if k == p and (not nonneg or kind == "positive"):
            assert r.proven and r.value == pytest.approx(lam, rel=1e-10)


def test_every_k_on_small_submatrices_equals_brute_force():
    """Principal submatrices (p = 9) of the instances above, every k with and without signs: the value
    equals brute force and the bound is at least it."""
    rng = np.random.default_rng(62)
    for kind in ("wishart", "spiked", "positive", "mixed"):
        C = _instance(kind, 20, rng)
        S = np.sort(rng.choice(20, 9, replace=False))
        M = C[np.ix_(S, S)]
        for nonneg in (False, True):
            for k in range(1, 10):
                opt = brute(M, k, nonneg)
                r = optimal_sparse_pca(M, k, precomputed=True, nonneg=nonneg)
                assert r.proven and r.value == pytest.approx(opt, rel=1e-9), (kind, nonneg, k)
                assert r.upper_bound >= opt * (1 - 1e-12)


def test_nonneg_leaf_enumeration_takes_any_size():
    """``nonneg_value`` holds its state as a removed sequence, not a 64-bit mask: a support of 70 works,
    and the result equals brute force where brute force runs (a rank-one matrix: the optimum is the
    larger one-signed part of its vector), cut short by a budget of 2,000 subsets (each a 70 x 70
    eigenproblem); and a vector with one negative entry, at position 66 (past 64 bits), is enumerated
    to the end and solved exactly."""
    rng = np.random.default_rng(0)
    v = rng.standard_normal(70)
    C = np.outer(v, v)
    val, x, complete = K.nonneg_value(C, np.arange(70, dtype=np.int64), -np.inf, 2_000)
    opt = max(np.sum(np.maximum(v, 0) ** 2), np.sum(np.maximum(-v, 0) ** 2))
    assert val == pytest.approx(opt, rel=1e-12) and (x >= 0).all() and not complete
    assert x @ C @ x == pytest.approx(val, rel=1e-12)
    u = np.ones(70)
    u[66] = -0.5  # the optimum drops position 66: every other subset is pruned or mixes signs
    val, x, complete = K.nonneg_value(np.outer(u, u), np.arange(70, dtype=np.int64), -np.inf, 200_000)
    assert complete and val == pytest.approx(69.0, rel=1e-12)
    np.testing.assert_allclose(x, np.where(u > 0, 1 / np.sqrt(69), 0.0), atol=1e-12)
    M = np.cov(rng.standard_normal((30, 8)), rowvar=False)
    val, _, complete = K.nonneg_value(M, np.arange(8, dtype=np.int64), -np.inf, 200_000)
    assert complete and val == pytest.approx(brute(M, 8, True), rel=1e-12)


def test_k_equals_one_is_the_largest_variance_everywhere():
    """k = 1 is the largest diagonal entry: the solver's answer, and the EM's default (no certificate),
    also on covariances with repeated spectra where the EM from the principal component and random starts
    used to end on another feature (31% below)."""
    import scipy.stats

    for seed in range(12):
        p = 20
        ev = np.r_[np.ones(10), 3.0 * np.ones(10)] if seed % 2 else np.r_[np.ones(p - 3), [5.0, 5.0, 5.0]]
        Q = scipy.stats.ortho_group.rvs(p, random_state=seed)
        C = (Q * ev) @ Q.T
        C = 0.5 * (C + C.T)
        top = C.diagonal().max()
        for nonneg in (False, True):
            r = optimal_sparse_pca(C, 1, precomputed=True, nonneg=nonneg)
            assert r.proven and r.value == pytest.approx(top, rel=1e-12)
            est = EMSparsePCA(cardinality=1, nonneg=nonneg, certify=False).fit(Covariance.from_matrix(C))
            assert est.explained_variance_[0] == pytest.approx(top, rel=1e-12)


def _hard_nonneg(p=130):
    rng = np.random.default_rng(1)
    B = rng.standard_normal((2 * p, p))
    return B.T @ B / (2 * p)


def test_time_limit_holds_inside_the_node_loop():
    """x >= 0, k = p - 2 on an unstructured covariance: each leaf enumerates sub-supports of 128 features
    (a 20 s time limit once took 390 s). Now the node loop, the enumeration and the certificates read the
    clock: the call returns within 10% or 0.2 s of the limit, with a valid bound."""
    C = _hard_nonneg()
    optimal_sparse_pca(C, 128, precomputed=True, nonneg=True, time_limit=0.05)  # compiled and warm
    for limit in (0.5, 1.5):
        t = time.perf_counter()
        r = optimal_sparse_pca(C, 128, precomputed=True, nonneg=True, time_limit=limit)
        spent = time.perf_counter() - t
        assert spent <= limit + max(0.1 * limit, 0.2), spent
        assert r.status == "time_limit" and r.upper_bound >= r.value > 0


def test_interruption_at_the_root_returns_the_best_single_feature():
    """Ctrl-C during the root heuristics (here: inside the EM start) returns an incumbent with status
    "interrupted" and a valid bound, not a ``KeyboardInterrupt`` out of the call."""
    rng = np.random.default_rng(3)
    C = _instance("wishart", 12, rng)

    def em_start(*_):
        raise KeyboardInterrupt

    r = search(C, 4, nonneg=False, gap=1e-6, em_start=em_start)
    assert r.status == "interrupted" and not r.proven
    assert r.value >= C.diagonal().max() * (1 - 1e-12)
    assert r.upper_bound >= brute(C, 4) * (1 - 1e-12)


def _ctrl_c_after(monkeypatch, owner, name: str, calls: int) -> list:
    """Make ``owner.name`` raise ``KeyboardInterrupt`` (what Ctrl-C does) on its call after the first
    ``calls``; returns the list that counts its calls."""
    real, seen = getattr(owner, name), []

    def interrupted(*args, **kw):
        seen.append(1)
        if len(seen) > calls:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(owner, name, interrupted)
    return seen


def test_interruption_in_the_node_loop_keeps_the_incumbent(monkeypatch):
    """Ctrl-C between node batches: the incumbent so far with its certified gap."""
    C = _hard_nonneg(60)
    _ctrl_c_after(monkeypatch, K, "bnb_run", 2)
    r = search(C, 20, nonneg=False, gap=1e-9, chain_after=None)
    assert r.status == "interrupted" and r.n_nodes > 0
    assert r.upper_bound >= r.value >= C.diagonal().max()


def test_em_certificate_takes_a_time_limit():
    """``EMSparsePCA(certify=seconds)``: the proof on any size, stopped at the limit with its certified gap
    (``certify=True`` on 60 x 60, k = 12, ran for minutes with no way to bound it)."""
    X = np.random.default_rng(0).standard_normal((120, 60))
    EMSparsePCA(cardinality=12, certify=0.05).fit(X)  # compiled and warm
    t = time.perf_counter()
    est = EMSparsePCA(cardinality=12, certify=1.0).fit(X)
    assert time.perf_counter() - t <= 1.0 + 0.2 + 0.2  # the limit, its 10% or 0.2 s, and the EM's fit
    assert 0 < est.certified_gap_[0] < 1
    plain = EMSparsePCA(cardinality=12, certify=False).fit(X)
    assert est.explained_variance_[0] >= plain.explained_variance_[0] * (1 - 1e-12)
    with pytest.raises(ValueError, match="certify"):
        EMSparsePCA(cardinality=12, certify="yes").fit(X)


def test_progress_line_shows_the_live_bound(capsys):
    """``verbose``: a line after the root heuristics, then lines whose bound is the live global bound (the
    largest open nodes re-bounded on a copy), below the root's on an unstructured covariance where the
    depth-first stack keeps the root's children open; the node count does not depend on ``verbose``.
    Without the root dual (``root_dual=0``), whose bound the nodes cannot beat within seconds."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((400, 200))
    C = A.T @ A / 400
    r = optimal_sparse_pca(C, 10, precomputed=True, time_limit=2.5, verbose=True, root_dual=0)
    lines = capsys.readouterr().err.splitlines()
    assert "root" in lines[0]
    bounds = [float(line.split("bound ")[1].split(",")[0]) for line in lines[1:]]
    assert bounds and min(bounds) < r.root_bound * (1 - 1e-3)
    assert all(b >= r.value for b in bounds)
    quiet = optimal_sparse_pca(C, 10, precomputed=True, max_nodes=300)
    loud = optimal_sparse_pca(C, 10, precomputed=True, max_nodes=300, verbose=True)
    assert quiet.n_nodes == loud.n_nodes and quiet.value == loud.value


@pytest.mark.parametrize("where", ["search", "screening"])
def test_interruption_on_the_wide_route(monkeypatch, where):
    """Ctrl-C on the ``n x n`` route (wide data, cardinalities 1..k in turn), inside a search or between
    them: status "interrupted" with a component feasible at ``k`` and a bound valid at ``k``, not the
    next cardinality's status (it read "too_many_candidates" with a 52% gap)."""
    from repro.optimal import wide

    rng = np.random.default_rng(4)
    X = rng.standard_normal((30, 120))
    if where == "search":
        calls = _ctrl_c_after(monkeypatch, K, "bnb_run", 3)
    else:
        calls = _ctrl_c_after(monkeypatch, wide, "two_by_two_bounds", 2)
    r = optimal_sparse_pca(X, 6, root_em=False)
    assert calls and r.status == "interrupted" and not r.proven
    assert 0 < np.count_nonzero(r.component) <= 6
    C = np.cov(X, rowvar=False)
    assert r.value == pytest.approx(float(r.component @ C @ r.component), rel=1e-9)
    assert r.upper_bound >= max(_lower_bounds(C, 6, False, rng)) * (1 - 1e-9)
