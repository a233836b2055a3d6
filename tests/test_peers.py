"""The peers side by side (experiments/_peers.py): the fallback to recorded times, the verdicts built on them,
and, only where R / Octave and the peers are installed, one live call of each."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from experiments import _peers, bench_em_sparse_pca, bench_spannogram
from experiments.runner.claims import NOT_REPRODUCED, PARTIAL, REPRODUCED, TOO_CLOSE


@pytest.fixture
def no_peers(monkeypatch):
    monkeypatch.setenv("REPRO_PEERS", "off")


def test_unavailable_when_turned_off(no_peers):
    assert not any(_peers.available(p) for p in _peers.PEERS)
    with pytest.raises(RuntimeError, match="not installed"):
        _peers.run_nsprcomp(np.eye(3), 1, True)
    with pytest.raises(RuntimeError, match="not installed"):
        _peers.run_spanpc(np.eye(3), 1)


def test_unavailable_without_files(monkeypatch, tmp_path):
    monkeypatch.delenv("REPRO_PEERS", raising=False)
    monkeypatch.setenv("PEERS_HOME", str(tmp_path))
    assert _peers.peers_home() == tmp_path
    assert not any(_peers.available(p) for p in _peers.PEERS)
    assert str(tmp_path) in _peers.source_note(False, "nsprcomp")


def test_bad_peer_name():
    with pytest.raises(ValueError, match="peer must be one of"):
        _peers.available("spca")
    with pytest.raises(ValueError, match="peer must be one of"):
        _peers.recorded("spca")


def test_recorded_tables():
    ns = _peers.recorded("nsprcomp")
    assert len(ns) == 12 and set(ns.dataset) == {"cbcl", "mll"} and set(ns.k) == {10, 50, 100}
    assert (ns.seconds > 0).all() and (ns.nnz <= ns.k).all()
    # the CBCL k = 100 non-negative cell
    row = ns[(ns.dataset == "cbcl") & (ns.k == 100) & ns.nonneg].iloc[0]
    assert row.variance == pytest.approx(73.2209, abs=1e-4)
    sp = _peers.recorded("spanpc")
    assert set(sp.dataset) == {"cbcl_raw", "mll_raw"} and set(sp.k) == {10, 50, 180}
    # each median is the median of the recorded times
    for r in pd.concat([ns, sp]).itertuples():
        assert r.seconds == pytest.approx(np.median([float(t) for t in r.times_s.split()]), rel=2e-3)
    gs = _peers.recorded("gsppca")
    assert list(gs.q) == [595, 2803]


def _spanpc_frame(speedup, source, variance_ratio=1.0):
    rows = []
    for k in bench_spannogram.PEER_KS:
        for r in range(3):
            rows.append({"part": "spanpc", "cardinality": k, "repeat": r, "speedup": speedup,
                         "peer_source": source, "variance_ratio": variance_ratio, "curve_over_one_k": 3.0,
                         "curve_n_k": 299})  # fmt: skip
    return pd.DataFrame(rows)


def test_spanpc_verdicts():
    check = bench_spannogram._check_spanpc
    assert check(_spanpc_frame(40.0, "live")).verdict == REPRODUCED
    rec = check(_spanpc_frame(40.0, "recorded"))
    assert rec.verdict == PARTIAL and "RECORDED" in rec.note
    assert check(_spanpc_frame(5.0, "live")).verdict == NOT_REPRODUCED
    assert check(_spanpc_frame(40.0, "live", variance_ratio=0.99)).verdict != REPRODUCED
    # one k inside the 15% band around 20x: too close to call, whatever the other k give
    d = _spanpc_frame(40.0, "live")
    d.loc[d.cardinality == bench_spannogram.PEER_KS[-1], "speedup"] = 20.4
    assert check(d).verdict == TOO_CLOSE


def _nsprcomp_frame(speedup, source):
    rows = []
    for name, K, nonneg in bench_em_sparse_pca.NSPRCOMP_ROWS:
        for r in range(5):
            rows.append({"part": "nsprcomp", "dataset": name, "cardinality": K, "nonneg": nonneg, "repeat": r,
                         "speedup_nsprcomp": speedup, "nsprcomp_source": source, "seconds": 0.01,
                         "ratio_block": 10.0, "speedup_plain": 2.0, "variance_vs_nsprcomp": 1.0,
                         "speedup_nsprcomp_default": speedup,
                         "default_variance_vs_nsprcomp": 1.0})  # fmt: skip
    return pd.DataFrame(rows)


def test_nsprcomp_speed_verdicts():
    check = bench_em_sparse_pca._check_nsprcomp_speed
    assert check(_nsprcomp_frame(40.0, "live")).verdict == REPRODUCED
    rec = check(_nsprcomp_frame(40.0, "recorded"))
    assert rec.verdict == PARTIAL and "RECORDED" in rec.note
    assert check(_nsprcomp_frame(5.0, "live")).verdict == NOT_REPRODUCED
    assert "recorded" in bench_em_sparse_pca._check_nsprcomp_variance(_nsprcomp_frame(40.0, "recorded")).note


def _data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 25))
    X[:, :5] += 3.0 * rng.standard_normal((120, 1))
    return X


@pytest.mark.skipif(not _peers.available("nsprcomp"), reason="R / nsprcomp not installed (PEERS_HOME)")
def test_live_nsprcomp():
    seconds, w = _peers.run_nsprcomp(_data(), 5, True)
    assert seconds > 0 and w.shape == (25,)
    assert np.count_nonzero(w) <= 5 and np.all(w >= 0)
    assert set(np.flatnonzero(w)) == set(range(5))  # the planted block


@pytest.mark.skipif(not _peers.available("spanpc"), reason="Octave / spanpc not installed (PEERS_HOME)")
def test_live_spanpc():
    seconds, w = _peers.run_spanpc(_data(), 5, n_samples=300)
    assert seconds > 0 and w.shape == (25,)
    assert np.count_nonzero(w) <= 5 and np.all(w >= 0)
    assert set(np.flatnonzero(w)) == set(range(5))
