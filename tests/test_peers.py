"""The peers side by side (experiments/_peers.py): the fallback to recorded times, the verdicts built on them,
and, only where R / Octave and the peers are installed, one live call of each."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from experiments import _peers
from experiments.benchmarks import _em_sparse_pca as esp_measure
from experiments.benchmarks import _spannogram as sp_measure
from experiments.benchmarks import em_sparse_pca as bench_em_sparse_pca
from experiments.benchmarks import spannogram as bench_spannogram
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
    for k in sp_measure.PEER_KS:
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
    d.loc[d.cardinality == sp_measure.PEER_KS[-1], "speedup"] = 20.4
    assert check(d).verdict == TOO_CLOSE


def _nsprcomp_frame(speedup, source):
    rows = []
    for name, K, nonneg in esp_measure.NSPRCOMP_ROWS:
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


def _side_by_side_run(name: str):
    """The side-by-side run a recorded table was transcribed from (``../shared/peers/results/``), or None."""
    import os
    from pathlib import Path

    here = Path(__file__).resolve().parents[1]
    for base in (here.parent / "shared", Path(os.environ.get("REPRO_DATA_MIRROR", "/nonexistent")).parent):
        path = base / "peers" / "results" / name
        if path.is_file():
            return pd.read_csv(path)
    return None


def test_recorded_nsprcomp_equals_the_run_it_was_transcribed_from_label_by_label():
    """Every recorded nsprcomp row (dataset, k, nonneg) carries the median time, variance and non-zeros of the
    same labels in its source run. At CBCL k = 100 the source reads 73.1711 sparse and 73.2209
    non-negative, and today's live runs read the two values the other way round: not a swapped label
    (this test): the two values are two local optima of the problem, and which one each nsprcomp call
    reaches differs between the two runs (the side-by-side script standardizes the raw matrix itself, so
    its data differ from the experiment's in the last bits; confirming that needs R, not here)."""
    src = _side_by_side_run("empca_run2/empca_side_by_side.csv")
    if src is None:
        pytest.skip("the side-by-side results of ../shared/peers are not beside this checkout")
    rec = _peers.recorded("nsprcomp")
    assert len(rec) == len(src) == 12
    for _, r in rec.iterrows():
        s = src[(src.dataset == r.dataset) & (src.k == r.k) & (src.nonneg == r.nonneg)]
        assert len(s) == 1, (r.dataset, r.k, r.nonneg)
        s = s.iloc[0]
        assert r.seconds == pytest.approx(s.nsprcomp_median_s, rel=1e-6)
        assert r.variance == pytest.approx(s.nsprcomp_variance, rel=1e-6)
        assert int(r.nnz) == int(s.nsprcomp_nnz)
        assert r.times_s == s.nsprcomp_times_s
