"""The Roweis (1997) experiments and benchmark end to end in --quick mode: CSV, PNG, claims, ledger."""

import numpy as np
import pandas as pd
import pytest
from quickrun import check_outputs, quick_run

from experiments import (
    roweis1997_claims,
    roweis1997_fig1,
    roweis1997_fig2,
    roweis1997_missing_data,
    roweis1997_sensible_pca,
)
from experiments.benchmarks import _em_pca as pca_measure
from experiments.benchmarks import _em_scale as scale_measure
from experiments.benchmarks import em_pca as bench_em_pca
from experiments.benchmarks import em_scale as bench_em_scale
from experiments.runner import registry


def _run(module, tmp_path) -> tuple[pd.DataFrame, dict]:
    name = registry.stem(module.__name__)  # a benchmark's module path gives its name, bench_<module>
    out = quick_run(module, tmp_path)
    df, rows = check_outputs(out, name, module, min_png_bytes=10_000)
    assert len(df) > 0
    return df, dict(zip(rows.id, rows.verdict, strict=True))


def test_fig1_quick(tmp_path):
    df, verdicts = _run(roweis1997_fig1, tmp_path)
    # Iterates are numbered from 0 and end at |cos| >= 0.999; the sweep matches the 2-D closed form.
    it = df[(df.kind == "iterate") & (df.panel == "gaussian")].sort_values("iteration")
    assert it.iteration.iloc[0] == 0 and it.cosine.iloc[-1] >= 0.999
    sweep = df[df.kind == "sweep"]
    assert (sweep.iterations == sweep.predicted).all()
    assert verdicts["gaussian-few-iterations"] == "reproduced"
    # tens of thousands of iterations at the stated ratio 1.0001: not the figure's "more than 20"
    assert verdicts["nongaussian-no-local-minimum"] == "partly reproduced"
    paper = sweep[(sweep.panel == "non-gaussian") & (sweep.nominal_ratio == roweis1997_fig1.PAPER_RATIO)]
    assert paper.iterations.iloc[0] > 10_000


def test_fig2_quick(tmp_path):
    df, _ = _run(roweis1997_fig2, tmp_path)
    cx = df[df.panel == "complexity"]
    assert set(cx.method) == set(roweis1997_fig2.METHODS)
    # Operation counts: EM grows like p^2 (n = 10p), the covariance like p^3.
    em = cx[cx.method == "EM method"].drop_duplicates("p").sort_values("p")
    cov = cx[cx.method == "Sample Covariance only"].drop_duplicates("p").sort_values("p")
    assert em.flops.iloc[-1] / em.flops.iloc[-2] == pytest.approx(4.0, rel=0.05)
    assert cov.flops.iloc[-1] / cov.flops.iloc[-2] == pytest.approx(8.0, rel=0.05)
    # interleaved repeats: every method at every p measured the same number of times
    assert cx.groupby(["method", "p"]).size().nunique() == 1 and cx.repeat.nunique() == 3
    # EM to equal accuracy reaches |cos| >= 0.999 of the covariance eigenvector, in more than 0 iterations
    acc = em.dropna(subset=["iters_equal_accuracy"])
    assert acc.converged_equal_accuracy.astype(bool).all() and (acc.iters_equal_accuracy > 0).all()
    cv = df[df.panel == "convergence"]
    assert (cv.iterations >= 0).all() and cv.converged.all()


def test_missing_data_quick(tmp_path):
    df, verdicts = _run(roweis1997_missing_data, tmp_path)
    assert verdicts["complete-data-unchanged"] == "reproduced"
    assert (df[df.method == roweis1997_missing_data.EM_LABEL].estep_complete_err < 1e-10).all()
    assert verdicts["em-beats-imputation"] == "reproduced"
    assert (df[df.fraction > 0].rows_incomplete == 1.0).all()


def test_sensible_pca_quick(tmp_path):
    df, verdicts = _run(roweis1997_sensible_pca, tmp_path)
    assert verdicts["same-subspace-as-pca"] == "reproduced"
    assert verdicts["em-reaches-ml"] == "reproduced"
    m = roweis1997_sensible_pca
    assert set(df[df.kind == "heldout"].group) == {*m.GROUPS, m.FANTASY}


def test_bench_quick(tmp_path):
    df, _ = _run(bench_em_pca, tmp_path)
    a = df[df.part == "per_iteration"]
    assert len(a) == 3 and (a.ratio > 0).all()
    b = df[df.part == "fit"]
    m = pca_measure  # the method names and repeat counts the rows carry
    every = {m.EM, m.EM_MATCH, m.ROWEIS, m.ROWEIS_MATCH, m.RSVD, m.SVDS}
    assert set(b[b.spectrum == "spiked"].method) == every
    # Roweis' EM is not timed on the decaying spectrum (over 100 iterations at rate 0.91)
    assert set(b[b.spectrum == "decaying"].method) == {m.EM, m.EM_MATCH, m.RSVD, m.SVDS}
    # the solvers timed once (Roweis' rows) and the others every round
    assert set(b[b.method.isin([m.ROWEIS, m.ROWEIS_MATCH])].repeats) == {1}
    assert set(b[b.method == m.EM].repeats) == {m.ROUNDS}
    # the pair the randomized rows are decided on: PAIRS rounds, next to each other in alternating order
    assert set(b[b.method.isin([m.EM_MATCH, m.RSVD])].repeats) == {m.PAIRS}
    # every per-iteration shape, the large one too: at least MIN_PAIRS samples, decided on their interval
    assert (a.ratio_samples.str.split().str.len() >= 9).all()
    assert all(c.machine_dependent for c in bench_em_pca.GOALS)
    # Every solver finds the spiked subspace.
    assert (b[b.spectrum == "spiked"].sin_to_exact < 1e-4).all()


def test_claims_quick(tmp_path):
    df, verdicts = _run(roweis1997_claims, tmp_path)
    assert set(df.part) == {"iterations", "storage", "global", "power", "sanger", "ratio", "spca_cost"}
    # EM's iterates are those of orthogonal iteration on the covariance, to round-off
    assert (df[df.part == "power"].sin_em_power < 1e-10).all()
    assert verdicts["em-is-power-iteration"] == "reproduced"
    # every random and near-saddle start of the k > 1 EM reaches the exact subspace
    assert (df[df.part == "global"].sin_to_exact < 1e-6).all()
    # storage does not depend on n
    st = df[(df.part == "storage") & (df.vary == "n")]
    assert st.peak_bytes.max() / st.peak_bytes.min() < 1.1


def test_bench_scale_quick(tmp_path):
    pytest.importorskip("dask.array")
    df, _ = _run(bench_em_scale, tmp_path)
    a = df[df.part == "in_memory"]
    assert len(a) == 3 and (a.ratio > 0).all()
    # every ratio is one EM iteration over its neighbouring reference; the sparse fit went through the data
    for r in a.itertuples():
        samples = [float(v) for v in r.ratio_samples.split()]
        pairs = scale_measure.ROWEIS_PAIRS if r.method.startswith("Roweis") else 4
        assert len(samples) == r.repeats == pairs and r.ratio == pytest.approx(np.median(samples), rel=1e-3)
    sp = a[a.method.str.startswith("EMSparsePCA")].iloc[0]
    assert sp.operator == "data" and {sp.auto_one_start, sp.auto_default_starts} <= {"data", "covariance"}
    assert sp.cov_form_iterations > 1 and (a.peak_rss_mb > a.array_mb).all()
    # the in-memory checks can fail: iterations at 1.6-1.8x their products miss the 1.3x goal
    slow = df.copy()
    slow.loc[slow.part == "in_memory", "ratio_samples"] = "1.6 1.7 1.8 1.65"
    for claim in bench_em_scale.GOALS[:3]:
        assert claim.check(slow).verdict == "not reproduced", claim.id
    # Roweis' row has 9 interleaved pairs: decided by call_paired on the 95% CI of the median (2nd and
    # 8th of 9) against the 15% margin's edges 1.13x and 1.495x, not by the history band
    roweis = bench_em_scale.GOALS[0]
    assert roweis.id == "in-memory-roweis"
    for samples, verdict in (
        ("0.95 0.97 1.0 1.02 0.99 1.01 0.98 1.03 1.05", "reproduced"),  # CI 0.97-1.03 < 1.13
        ("1.0 1.05 1.1 1.12 1.14 1.08 1.06 1.02 1.2", "too close to call"),  # CI 1.02-1.14 reaches 1.13
        ("0.5 1.0 1.0 1.0 1.0 1.0 1.0 1.2 2.0", "too close to call"),  # CI 1.0-1.2: the upper end decides
        ("1.6 1.7 1.8 1.65 1.62 1.75 1.68 1.7 1.72", "not reproduced"),  # CI 1.62-1.75 > 1.495
    ):
        paired = df.copy()
        paired.loc[(paired.part == "in_memory") & paired.method.str.startswith("Roweis"), "ratio_samples"] = (
            samples
        )
        out = roweis.check(paired)
        assert out.verdict == verdict, samples
        assert "95% CI" in out.reproduced and "of 9)" in out.reproduced
    d = df[df.part == "disk"]
    tl = d[d.method == "EM timeline"].sort_values("seconds")
    # the EM from disk converges to its reference; svd_compressed finds the same subspace roughly
    assert tl.sin_to_reference.iloc[-1] < 1e-8
    assert d[d.method.str.startswith("svd_compressed")].sin_to_reference.iloc[0] < 0.5
    assert (d[d.method.str.contains("missing")].seconds > 0).all()
    # vs svd_compressed is decided on process CPU time and can fail either way
    assert (tl.cpu_seconds > 0).all() and tl.cpu_seconds.is_monotonic_increasing
    check = next(c for c in bench_em_scale.GOALS if c.id == "vs-svd-compressed").check
    for factor, verdict in ((0.4, "not reproduced"), (2.5, "reproduced"), (1.2, "too close to call")):
        cpu = df.copy()
        svd = (cpu.part == "disk") & cpu.method.str.startswith("svd_compressed")
        _, t_em, _ = bench_em_scale._em_match(df, "cpu_seconds")
        cpu.loc[svd, "cpu_seconds"] = factor * t_em
        assert check(cpu).verdict == verdict, factor


@pytest.mark.parametrize("n_timed", [3, 4, 9])
def test_bench_scale_pairs_alternate_their_order(monkeypatch, n_timed):
    """Part (a) times each EM iteration next to its reference products, the reference before the iteration
    for even pairs and after it for odd ones (R I, I R, ...), one reference per iteration."""
    log: list[str] = []

    class Data:  # stands for X: records each of the reference's two products
        T = property(lambda self: self)

        def __matmul__(self, other):
            log.append("R")
            return other

    def fake_em_pca(X, k, *, max_iter, callback, **kwargs):
        for t in range(max_iter + 1):
            if t:
                log.append("I")
            callback(t, None, None)

    monkeypatch.setattr(scale_measure, "em_pca", fake_em_pca)
    iters, refs = scale_measure.interleaved_em(Data(), np.eye(2), 0, n_timed)
    assert len(iters) == len(refs) == n_timed
    want = "".join("RRI" if j % 2 == 0 else "IRR" for j in range(n_timed))
    assert "".join(log) == want
