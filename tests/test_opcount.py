"""The operation counter of the cost-order claims (experiments/_opcount.py) against independent counts.

The counted flops decide ``roweis1997_fig2`` ``em-cost-knp`` / ``covariance-cost-np2`` and
``roweis1997_claims`` ``spca-cost-knp`` (issue 36): here they are checked against plain NumPy twins of the
EM iterations whose operations are counted by hand, on both of DenseSource's paths (a centred copy and row
blocks), and shown to see a code path of a higher order (a covariance formed) as one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from experiments import _opcount, _roweis
from repro import _chunked
from repro.em_pca import em_pca, sensible_pca


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _twin_rank1_em(Y, iters):
    """Roweis' EM for k = 1 in plain NumPy, counting its flops on the data by hand; returns (q, flops)."""
    n, p = Y.shape
    flops = n * p + p + n * p + 2 * n * p  # means, centring, |Y|^2
    Yc = Y - Y.mean(axis=0)
    q = np.random.default_rng(0).standard_normal(p)
    for t in range(iters + 1):  # a pass for the initial condition and one per m-step
        u = Yc @ q
        a = Yc.T @ u
        flops += 2 * n * p + 2 * n * p + 2 * n  # u = Yq, a = Y'u, u'u
        if t < iters:
            q = a / np.linalg.norm(a)
    return q, flops


@pytest.mark.parametrize("blocked", [False, True])
def test_counts_roweis_em_k1(monkeypatch, blocked):
    n, p, iters = 300, 12, 7
    Y = np.random.default_rng(1).standard_normal((n, p)) * np.linspace(3.0, 1.0, p)
    if blocked:  # every pass reads X with the fused kernel, centring on the fly
        monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)
    with _opcount.count_data_passes() as c:
        res = _quiet(em_pca, Y, 1, max_iter=iters, tol=0.0, random_state=0)
    _, want = _twin_rank1_em(Y, iters)
    if blocked:  # the fused kernel: (x - mean) twice per entry, a subtraction and a multiply-add each
        want += (iters + 1) * 2 * n * p
    assert c.calls["rank1"] == iters + 1 and c.flops == want
    assert res.n_iter == iters


def test_counts_block_em_products():
    """k = 3 (Roweis' iteration, no oversampling): each pass U = YQ, A = Y'U, G = U'U."""
    n, p, k, iters = 200, 15, 3, 5
    Y = np.random.default_rng(2).standard_normal((n, p))
    with _opcount.count_data_passes() as c:
        _quiet(em_pca, Y, k, max_iter=iters, tol=0.0, random_state=0, n_oversamples=0)
    assert c.calls["products"] == iters + 1
    assert c.by_method["products"] == (iters + 1) * (4 * n * p * k + 2 * n * k * k)


def test_spca_counted_per_iteration():
    """The SPCA EM makes one pass (U = YC, Y'U, U'U) per iteration: 4npk + 2nk^2 flops."""
    n, p, k = 400, 30, 4
    X = np.random.default_rng(3).standard_normal((n, p))
    assert _roweis.spca_counted_per_iter(X, k) == 4 * n * p * k + 2 * n * k * k
    with _opcount.count_data_passes() as c:
        _quiet(sensible_pca, X, k, algorithm="em", tol=0.0, max_iter=3, random_state=0)
    assert c.calls == {"__init__": 1, "products": 4}


def test_a_covariance_formed_is_counted_as_such(monkeypatch):
    """The count can fail the O(np) claims: a code path that forms Y'Y counts n p^2 and, with n = 10p,
    grows with slope 3, the alternative the checks call 'not reproduced'."""
    monkeypatch.setattr(_chunked, "COPY_LIMIT_BYTES", 0)  # covariance32 is offered on row blocks only
    sizes, flops = [16, 32, 64], []
    for p in sizes:
        X = np.random.default_rng(p).standard_normal((10 * p, p))
        with _opcount.count_data_passes() as c:
            _chunked.DenseSource(X).covariance32()
        assert c.by_method["covariance32"] == 10 * p * p * (p + 1) + 10 * p * p
        flops.append(c.by_method["covariance32"])
    slope = np.polyfit(np.log(sizes), np.log(flops), 1)[0]
    assert _roweis.call_order(slope, 2.0) == "not reproduced"


def test_methods_restored_after_an_error():
    before = {name: _chunked.DenseSource.__dict__[name] for name in ("rank1", "products", "__init__")}
    with pytest.raises(RuntimeError), _opcount.count_data_passes():
        raise RuntimeError("stop")
    assert {name: _chunked.DenseSource.__dict__[name] for name in before} == before


def test_counted_em_flops_grow_like_p_squared():
    """The EM method of Fig. 2 (n = 10p): counted flops four times as many when p doubles."""
    data = [_roweis.sample_data(p, np.random.default_rng(p)) for p in (32, 64)]
    f = [_roweis.counted_em_flops(Y) for Y in data]
    assert f[1] / f[0] == pytest.approx(4.0, rel=0.02)


def test_counted_covariance_flops_are_the_shapes_formula():
    """The covariance route's count is a formula of n, p and the Lanczos products: centring, Yc'Yc by syrk
    (one triangle), the division, and per product 2p^2 plus 4 p ncv. It grows like p^3 with n = 10p by
    construction, so it cannot decide covariance-cost-np2 (the measured time does); here it is checked
    against the hand count and its slope against the closed form."""
    n, p, m = 160, 16, 7
    hand = (2 * n * p + p) + n * p * (p + 1) + p * p + m * (2 * p * p + 4 * p * min(_roweis.NCV, p - 1))
    assert _roweis.counted_cov_flops(n, p, m) == hand
    sizes = np.array([1024.0, 2048.0])
    f = [_roweis.counted_cov_flops(10 * q, q, 30) for q in sizes]
    slope = np.log(f[1] / f[0]) / np.log(2.0)
    # leading term 10 p^3: the slope is 3 less the share of the lower-order terms
    assert 2.99 < slope < 3.0
    assert _roweis.call_order(slope, 3.0) == "reproduced"
