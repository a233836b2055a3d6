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


def _spiked(p, seed=0):
    """A covariance with a known spectrum: ``U diag(lam) U'``, the top ``lam`` 9.0, the rest in 0.5..3."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((p, p)))[0]
    lam = np.concatenate(([9.0], rng.uniform(0.5, 3.0, p - 1)))
    C = (U * lam) @ U.T
    return (C + C.T) / 2, 9.0


def test_the_lanczos_root_certifies_lambda_max():
    """The root's Lanczos pair and its Cholesky certificate: an upper bound on the known ``lambda_max``
    within 1e-8 of it; past the deadline no bound and no vector (nothing claimed)."""
    C, top = _spiked(600)
    bound, x = search._certified_top(C, np.inf, 0.0)
    assert top <= bound <= top * (1 + 1e-8)
    assert float(x @ C @ x) == pytest.approx(top, rel=1e-9)
    assert search._certified_top(C, time.perf_counter() - 1.0, 0.0) == (np.inf, None)


@pytest.mark.parametrize("nonneg", [False, True])
def test_a_short_limit_takes_the_lanczos_root(monkeypatch, nonneg):
    """Where the root's full ``eigh`` does not fit (its estimate made huge here), no ``p x p``
    eigendecomposition runs: the nodes get ``lambda_max``'s certified bound for the knapsack, and the
    result brackets the optimum as the full root's does (value at most its bound, bound at least its
    value)."""
    C, _ = _spiked(600, seed=1)
    ref = optimal_sparse_pca(C, 6, precomputed=True, nonneg=nonneg, max_nodes=20)
    eigh = np.linalg.eigh

    def no_full_eigh(M, *a, **kw):
        assert M.shape[0] < 600, "the root's full eigendecomposition ran"
        return eigh(M, *a, **kw)

    monkeypatch.setattr(search, "EIGH_PER_PROBE", 1e12)
    monkeypatch.setattr(np.linalg, "eigh", no_full_eigh)
    r = optimal_sparse_pca(C, 6, precomputed=True, nonneg=nonneg, time_limit=1.0, root_spannogram=False)
    assert r.status in ("time_limit", "optimal") and r.n_nodes >= 0
    assert 0 < np.count_nonzero(r.component) <= 6 and (not nonneg or (r.component >= 0).all())
    assert r.value == pytest.approx(float(r.component @ C @ r.component), rel=1e-10)
    assert r.upper_bound >= ref.value * (1 - 1e-9) and r.value <= ref.upper_bound * (1 + 1e-9)


def _ctrl_c_during(monkeypatch, owner, name, delay):
    """On the first call of ``owner.name``, a timer thread sends SIGINT (Ctrl-C) to this process after
    ``delay`` seconds: it lands during that step or, where the step ends first, in a later one."""
    import os
    import signal
    import threading

    real, timers = getattr(owner, name), []

    def wrapped(*args, **kw):
        if not timers:
            timers.append(threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT)))
            timers[0].start()
        return real(*args, **kw)

    monkeypatch.setattr(owner, name, wrapped)
    return timers


def _call_interrupted(fn):
    """``fn()``'s result; a Ctrl-C that reaches the caller fails the test, unless it came after ``fn``
    returned (the timer fired late)."""
    import traceback

    box = []
    try:
        box.append(fn())
        time.sleep(0.05)  # a signal still in flight lands here
    except KeyboardInterrupt:
        if not box:
            pytest.fail("Ctrl-C escaped the call:\n" + traceback.format_exc())
    return box[0]


_STEPS = {  # step -> (what to wrap, the route: "matrix", "data" (n > p) or "wide" (n < p))
    "door": ((optimal_mod, "check_psd"), "matrix"),
    "door, data": ((optimal_mod, "check_has_variance"), "data"),
    "root eigh": ((np.linalg, "eigh"), "matrix"),
    "EM": ((optimal_mod, "_em_support"), "data"),
    "spannogram": ((optimal_mod, "_spannogram_root"), "matrix"),
    "root dual": ((search, "l1_dual_bound"), "matrix"),
    "node loop": ((search._k, "bnb_run"), "matrix"),
    "wide spectrum": ((wide, "_thin_eig"), "wide"),
    "wide nodes": ((search._k, "bnb_run"), "wide"),
}


@pytest.mark.parametrize("step", list(_STEPS))
def test_ctrl_c_from_a_timer_at_each_step(monkeypatch, step):
    """A real SIGINT from a timer thread at a random moment of each step (p = 300; the wide route 30 x
    300): the call returns status "interrupted" (or "optimal" where the proof was complete when it
    landed), a feasible component with its exact value, and a bound at least a known lower bound on the
    optimum. (A Ctrl-C inside compiled code that reads the clock once ended in a ``SystemError``.)"""
    (owner, name), route = _STEPS[step]
    rng = np.random.default_rng(sorted(_STEPS).index(step))
    X = rng.standard_normal((30 if route == "wide" else 400, 6)) @ rng.standard_normal((6, 300))
    X += rng.standard_normal(X.shape)
    C = np.cov(X, rowvar=False)
    k = 8
    low = optimal_sparse_pca(C, k, precomputed=True, max_nodes=0, root_em=False).value  # <= the optimum
    for nonneg in (False, True):
        timers = _ctrl_c_during(monkeypatch, owner, name, float(rng.uniform(0.0, 0.01)))
        kw = {"nonneg": nonneg, "gap": 1e-12, "root_dual": 20, "time_limit": 20.0}
        if route == "matrix":
            r = _call_interrupted(lambda kw=kw: optimal_sparse_pca(C, k, precomputed=True, **kw))
        else:
            r = _call_interrupted(lambda kw=kw: optimal_sparse_pca(X, k, **kw))
        for t in timers:
            t.cancel()
        monkeypatch.undo()
        assert timers, f"the step {step} did not run"
        assert r.status in ("interrupted", "optimal"), r.status
        x = r.component
        assert 0 < np.count_nonzero(x) <= k and (not nonneg or (x >= 0).all())
        assert r.value == pytest.approx(float(x @ C @ x), rel=1e-9)
        assert r.upper_bound >= r.value and (nonneg or r.upper_bound >= low * (1 - 1e-9))


def test_ctrl_c_in_the_em_certificate():
    """``EMSparsePCA(certify=seconds)``: a SIGINT from a timer during the certificate's node loop ends
    the fit with the EM's (or the search's better) component and a certified gap."""
    import os
    import signal
    import threading

    from repro import EMSparsePCA

    rng = np.random.default_rng(6)
    X = rng.standard_normal((400, 6)) @ rng.standard_normal((6, 300)) + rng.standard_normal((400, 300))
    real, timers = search._k.bnb_run, []

    def wrapped(*args):
        if not timers:
            timers.append(threading.Timer(0.005, os.kill, (os.getpid(), signal.SIGINT)))
            timers[0].start()
        return real(*args)

    mp = pytest.MonkeyPatch()
    mp.setattr(search._k, "bnb_run", wrapped)
    try:
        est = _call_interrupted(lambda: EMSparsePCA(cardinality=8, certify=20.0, random_state=0).fit(X))
    finally:
        mp.undo()
    assert timers and np.count_nonzero(est.components_[0]) <= 8
    assert 0 <= est.certified_gap_[0] < np.inf
