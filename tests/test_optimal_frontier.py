"""bench_optimal's unstructured frontier: the Wishart instances, and goal checks that can fail.

Each goal check is run on frames built to make it met, missed, too close to call or not measured at its
full limit; the numbers are chosen away from every threshold (the 15% band around the goal's limit), so
no case hinges on round-off.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from experiments.benchmarks import _frontier
from experiments.benchmarks import optimal as bench_optimal
from experiments.runner import claims as ledger


def test_wishart_is_the_stated_formula_exactly_symmetric():
    p, seed = 7, 3
    A = np.random.default_rng(seed).standard_normal((2 * p, p))
    C = _frontier.wishart(p, seed)
    assert np.array_equal(C, C.T)
    np.testing.assert_allclose(C, A.T @ A / (2 * p), rtol=1e-14, atol=0)
    # the covariance of n = 2p draws of N(0, I): its diagonal is a mean of 2p squares of each column
    np.testing.assert_allclose(np.diag(C), np.sum(A * A, axis=0) / (2 * p), rtol=1e-14)
    assert not np.array_equal(C, _frontier.wishart(p, seed + 1))


def test_instances_full_and_quick():
    full = _frontier.instances(False, 0, lambda: np.eye(274))
    assert [(n, C.shape[0], ks) for n, C, ks in full] == [
        ("wishart", 200, (5, 10, 20)),
        ("wishart", 500, (5, 10, 20)),
        ("wishart", 1000, (5, 10, 20)),
        ("wishart", 2000, (5, 10, 20)),
        ("arrhythmia", 274, (15, 20)),
    ]
    quick = _frontier.instances(True, 0, lambda: pytest.fail("--quick loads no Arrhythmia"))
    assert [(n, C.shape[0], ks) for n, C, ks in quick] == [("wishart", 30, (5, 10)), ("wishart", 40, (5,))]


def _row(instance="wishart", p=200, k=5, *, proven=False, gap=0.1, seconds=30.0, limit=30.0):
    return {
        "part": "frontier",
        "instance": instance,
        "p": p,
        "k": k,
        "time_limit": limit,
        "timed_proven": proven,
        "timed_gap": 1e-6 if proven else gap,
        "timed_nodes": 1000,
        "seconds": seconds,
        "eigh_seconds": 0.01,
    }


def _verdict(check, *rows) -> str:
    df = pd.DataFrame([{"part": "benchmark", "instance": "pitprops", "p": 13, "k": 5}, *rows])
    out = check(df)
    assert out.verdict != ledger.ERROR
    return out.verdict


PROOF = _frontier.budget_check("wishart", 200, (5,), 60.0)
GAP = _frontier.budget_check("wishart", 200, (10,), 600.0, 0.02)


@pytest.mark.parametrize(
    "row, verdict",
    [
        (_row(proven=True, seconds=40.0, limit=69.0), ledger.REPRODUCED),  # under 60 / 1.15 = 52 s
        (_row(proven=True, seconds=60.0, limit=69.0), ledger.TOO_CLOSE),  # inside the band
        (_row(proven=False, seconds=69.5, limit=69.0), ledger.NOT_REPRODUCED),  # a limit past the band
        (_row(proven=False, seconds=30.4, limit=30.0), ledger.UNTESTABLE),  # its limit not run
        (_row(proven=True, seconds=80.0, limit=100.0), ledger.NOT_REPRODUCED),  # proven, too late
        (_row(p=500, proven=True, seconds=1.0, limit=69.0), ledger.UNTESTABLE),  # another instance
    ],
)
def test_proof_goal(row, verdict):
    assert _verdict(PROOF, row) == verdict


@pytest.mark.parametrize(
    "row, verdict",
    [
        (_row(k=10, gap=0.015, seconds=30.4), ledger.REPRODUCED),
        (_row(k=10, gap=0.03, seconds=30.4), ledger.UNTESTABLE),  # 30 s is not the goal's 600 s
        (_row(k=10, gap=0.03, seconds=700.5, limit=700.0), ledger.NOT_REPRODUCED),
        (_row(k=10, gap=0.015, seconds=700.5, limit=700.0), ledger.NOT_REPRODUCED),  # reached too late
        (_row(k=10, gap=0.015, seconds=600.0, limit=600.0), ledger.TOO_CLOSE),
        (_row(k=10, proven=True, seconds=10.0), ledger.REPRODUCED),
    ],
)
def test_gap_goal(row, verdict):
    assert _verdict(GAP, row) == verdict


def test_goal_of_two_k():
    check = _frontier.budget_check("arrhythmia", 274, (15, 20), 600.0)
    met = _row("arrhythmia", 274, 15, proven=True, seconds=5.0)
    missed = _row("arrhythmia", 274, 20, seconds=700.2, limit=700.0)
    short = _row("arrhythmia", 274, 20, seconds=30.2)
    assert _verdict(check, met, {**met, "k": 20}) == ledger.REPRODUCED
    assert _verdict(check, met, missed) == ledger.PARTIAL
    assert _verdict(check, {**missed, "k": 15}, missed) == ledger.NOT_REPRODUCED
    assert _verdict(check, met, short) == ledger.UNTESTABLE
    assert _verdict(check, met) == ledger.UNTESTABLE  # k = 20 not run


def test_goals_on_a_csv_without_the_frontier():
    """A run of the benchmark before the frontier existed (no ``timed_*`` columns): not run, no error."""
    df = pd.DataFrame([{"part": "benchmark", "instance": "pitprops", "p": 13, "k": 5}])
    for goal in bench_optimal.GOALS:
        if goal.id != "communities-nodes":
            out = goal.check(df)
            assert out.verdict == ledger.UNTESTABLE and out.reproduced == "not run"


def test_the_frontier_columns_are_declared_timing_and_the_instance_compared():
    from experiments.runner.verify import column_rule

    for c in ("timed_value", "timed_upper_bound", "timed_gap", "timed_proven", "timed_status", "timed_nodes"):
        assert column_rule("bench_optimal", c) == "timing"
    for c in ("seconds", "eigh_seconds"):
        assert column_rule("bench_optimal", c) == "timing"
    for c in ("lambda_max", "max_diag", "time_limit", "value", "nodes"):
        assert column_rule("bench_optimal", c) != "timing"
