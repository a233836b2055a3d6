"""bench_optimal in --quick mode: outputs, ledger rows, and the proven Pit Props optima."""

from __future__ import annotations

import numpy as np
import pytest
from quickrun import check_outputs, quick_run

from data_fetch._needs import LOADER_FILES
from experiments.benchmarks import optimal as bench_optimal

DATA = (
    LOADER_FILES["load_spca_optimal"] + LOADER_FILES["load_spca_optimal_results"] + LOADER_FILES["load_lrs"]
)


@pytest.mark.data(*DATA)
def test_bench_optimal_quick(tmp_path):
    out = quick_run(bench_optimal, tmp_path)
    df, rows = check_outputs(out, "bench_optimal", bench_optimal)
    pit = df[df.part == "pitprops"]
    assert list(pit.k) == list(range(1, 14)) and pit.proven.all()
    bench = df[df.part == "benchmark"]
    for h in ("em", "spannogram", "thresholding", "pathspca"):  # no heuristic beats a proven optimum
        assert (bench[bench.proven][f"{h}_ratio"] <= 1 + 1e-9).all()
    assert (bench.upper_bound >= bench.value).all()
    assert rows.set_index("id").loc["pitprops-optima", "verdict"] == "reproduced"
    papers = df[df.part == "papers"].set_index(["instance", "k", "nonneg"])
    assert papers.proven.all() and (papers.upper_bound >= papers.value).all()
    # x >= 0 restricts the signed problem: its optimum is at most the signed one
    assert papers.loc[("LRS", 5, True), "value"] <= papers.loc[("LRS", 5, False), "value"] * (1 + 1e-9)
    # the frontier: each solve's value lies between the best single feature's and lambda_max (k = 1 and
    # k = p), below its own certified bound; the instances' numbers are the matrices'
    front = df[df.part == "frontier"]
    assert sorted(zip(front.p, front.k, strict=True)) == [(30, 5), (30, 10), (40, 5)]
    assert (front.timed_value <= front.lambda_max * (1 + 1e-12)).all()
    assert (front.timed_upper_bound >= front.timed_value).all()
    from experiments.benchmarks._frontier import wishart

    for p in (30, 40):
        w = np.linalg.eigvalsh(wishart(p, 0))
        np.testing.assert_allclose(front[front.p == p].lambda_max, w[-1], rtol=1e-9)  # 10 digits in the CSV
