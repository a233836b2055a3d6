"""The cardinality chain (``repro.optimal._kernels.chain_bounds``, ``repro.optimal.search._chain_screen``): a
certified bound on the optimum at ``k - 1`` bounds every support of ``k`` that holds a feature, so a feature
whose bound is below the incumbent is fixed out of every open node. Its NumPy twin, its validity against brute
force (signed and ``x >= 0``, over the whole set and a sub-set), and searches with the chain from the root and
from a few nodes against brute force, with its counters."""

from __future__ import annotations

import numpy as np
import pytest
from test_optimal import brute

from repro.optimal import _kernels as K
from repro.optimal.search import search


def _weak_cov(rng, p):
    """A covariance with a few strong features and weak ones (where the chain fixes features out)."""
    n = int(rng.integers(p, 3 * p))
    X = rng.standard_normal((n, p)) @ rng.standard_normal((p, p))
    X = X * np.exp(rng.uniform(-2.5, 1.0, p))
    return X.T @ X / n


def twin_chain(C, R, k, U, nonneg):
    """lambda_max [[U, g_j], [g_j, C_jj]], g_j^2 the k - 1 largest W_ij^2 over i in R - j."""
    W = np.maximum(C, 0.0) if nonneg else np.abs(C)
    out = []
    for j in R:
        w2 = np.sort([W[i, j] ** 2 for i in R if i != j])[::-1]
        g = np.sqrt(np.sum(w2[: k - 1]))
        out.append(float(np.linalg.eigvalsh(np.array([[U, g], [g, C[j, j]]]))[-1]))
    return np.array(out)


@pytest.mark.parametrize("nonneg", [False, True])
def test_chain_bounds_twin_and_validity(nonneg):
    """With U the brute-force optimum at k - 1: the kernel equals its twin, bounds the brute-force optimum
    over the supports in R that hold j, and the features it screens (bound at most the optimum at k) are
    in no support better than that optimum; the screening fires on these instances."""
    rng = np.random.default_rng(3715 + nonneg)
    screened = 0
    for trial in range(10 if not nonneg else 8):
        p = int(rng.integers(5, 8)) if not nonneg else int(rng.integers(5, 7))
        k = int(rng.integers(2, p))
        C = _weak_cov(rng, p)
        W = np.maximum(C, 0.0) if nonneg else np.abs(C)
        U = brute(C, k - 1, nonneg)
        opt = brute(C, k, nonneg)
        R = np.arange(p) if trial % 2 == 0 else np.sort(rng.choice(p, int(rng.integers(k, p + 1)), False))
        b = K.chain_bounds(C, W, R.astype(np.int64), k, U)
        np.testing.assert_allclose(b, twin_chain(C, R, k, U, nonneg), rtol=1e-12, atol=1e-14)
        for q, j in enumerate(R):
            with_j = brute(C, k, nonneg, I=(int(j),), F=[int(i) for i in R if i != j])
            tol = 1e-9 * max(1.0, abs(with_j))
            assert with_j <= b[q] + tol
            if b[q] <= opt:
                screened += 1
                assert with_j <= opt + tol
    assert screened > 0


@pytest.mark.parametrize("nonneg", [False, True])
def test_search_with_the_chain_agrees_with_brute_force(nonneg):
    """Searches chained from the root (chain_after = 0) and after a few nodes (open nodes then lose the
    screened features, or are pruned when they fixed one in) prove the brute-force optimum; the chain's
    counters record what it fixed and the nodes of its searches at k - 1, k - 2, ..."""
    rng = np.random.default_rng(3716 + nonneg)
    fixed = 0
    for trial in range(6):
        p = int(rng.integers(7, 10)) if not nonneg else int(rng.integers(6, 8))
        k = int(rng.integers(3, 5))
        C = _weak_cov(rng, p)
        opt = brute(C, k, nonneg)
        for after in (0, 2):
            evals = 0 if trial % 2 else 8
            res = search(C, k, nonneg=nonneg, gap=1e-9, chain_after=after, chain_frac=1.0, l1_evals=evals)
            assert res.proven
            assert res.value == pytest.approx(opt, rel=1e-8)
            assert np.count_nonzero(res.component) <= k
            fixed += res.prunes["chain_fixed_out"]
            assert res.n_nodes >= res.prunes["chain_nodes"]
    assert fixed > 0


def test_chain_screen_prunes_open_nodes_that_fixed_a_screened_feature_in():
    """_chain_screen on hand-made open nodes: a node with the screened feature free fixes it out (and drops
    its parent's l1 bound), a node with it fixed in is pruned, the others are untouched."""
    from repro.optimal.search import _chain_screen

    C = np.array([[4.0, 1.5, 0.0], [1.5, 3.0, 0.0], [0.0, 0.0, 0.01]]) + 0.001
    W = np.abs(C)
    counts = np.zeros(K.N_COUNTS, np.int64)
    status = np.array([[0, 0, 0], [0, 0, 1], [1, -1, 0]], np.int8)
    bounds = np.array([9.0, 9.0, 9.0])
    l1s = np.array([5.0, 5.0, 5.0])
    chain = {"U": 4.01, "R": np.arange(3), "inc": -np.inf}
    _chain_screen(C, W, 2, chain, 4.5, status, bounds, l1s, np.arange(3), counts)  # rows: all open
    # feature 2: lambda_max [[4.01, 0.001...], [., 0.011]] < 4.5; 0 and 1 (g = 1.501) stay
    assert list(chain["R"]) == [0, 1]
    assert counts[K.CHAIN_OUT] == 1
    assert status[0].tolist() == [0, 0, -1] and l1s[0] == np.inf
    assert bounds[1] == -np.inf
    assert status[2].tolist() == [1, -1, -1] and bounds[2] == 9.0


def test_chain_pays_only_where_it_can_screen():
    """The gate: an incumbent with fewer than k features (the optimum at k - 1 reaches it) never pays; on
    a matrix with one strong pair and weak features it pays at a small fraction, not at fraction 0; and
    a search whose gate fails runs no chain (the same nodes as without it)."""
    from repro.optimal.search import _chain_pays

    rng = np.random.default_rng(3717)
    C = np.diag(np.r_[5.0, 4.0, rng.uniform(0.01, 0.02, 8)])
    C[0, 1] = C[1, 0] = 1.0
    W = np.abs(C)
    x = np.zeros(10)
    x[[0, 1]] = 1.0
    opt = float(np.linalg.eigvalsh(C[:2, :2])[-1])
    assert _chain_pays(C, W, 2, False, x, opt, 0.25)
    assert not _chain_pays(C, W, 2, False, x, opt, 0.0)  # features 0 and 1 survive
    x1 = np.zeros(10)
    x1[0] = 1.0
    assert not _chain_pays(C, W, 2, False, x1, opt, 1.0)
    D = _weak_cov(np.random.default_rng(5), 9)
    a = search(D, 4, nonneg=False, gap=1e-9, chain_after=0, chain_frac=0.0)
    b = search(D, 4, nonneg=False, gap=1e-9, chain_after=None)
    assert a.prunes["chain_nodes"] == 0 and a.n_nodes == b.n_nodes and a.value == b.value


def test_chain_budget_and_start():
    """The chain starts at exactly chain_after nodes (node counts independent of the clock: two runs
    agree), its searches at k - 1, k - 2, ... spend at most CHAIN_BUDGET times the nodes before it, and
    it does not start where a node cap leaves less than that."""
    from repro.optimal.search import CHAIN_BUDGET

    rng = np.random.default_rng(3718)
    ran = capped = 0
    for _ in range(6):
        C = _weak_cov(rng, 10)
        runs = [search(C, 5, nonneg=False, gap=1e-9, chain_after=1, chain_frac=1.0, l1_evals=0) for _ in "ab"]
        assert runs[0].n_nodes == runs[1].n_nodes and runs[0].value == runs[1].value
        assert runs[0].prunes["chain_nodes"] <= CHAIN_BUDGET * 1
        assert runs[0].value == pytest.approx(brute(C, 5), rel=1e-8)
        short = search(C, 5, nonneg=False, gap=1e-9, chain_after=1, chain_frac=1.0, l1_evals=0, max_nodes=4)
        assert short.prunes["chain_nodes"] == 0  # 3 nodes left, less than the chain's budget of 4: no chain
        ran += runs[0].prunes["chain_nodes"] > 0
        capped += runs[0].prunes["chain_nodes"] == CHAIN_BUDGET  # from the root the chain takes 7 or 9
    assert ran > 0 and capped > 0
