"""Which columns of a result CSV are timing columns: measurements, not results.

One rule for the two places that must agree on it: ``repro verify`` does not compare these columns
(:mod:`.verify`), and ``results.sha256`` leaves them out of each CSV's digest (:mod:`._atomic`), so that
two runs with the same numbers have the same record. Standard library only, and no import of the
runner's other modules (both of those import this one).
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "CURVES",
    "DECLARED",
    "DIAGNOSTIC",
    "EXACT",
    "FLOAT",
    "TEXT",
    "TIMING",
    "TIMING_NAME",
    "Curve",
    "declared_rule",
    "is_timing",
]

#: A timing column by its name: seconds, wall time, speed-ups, resident memory.
TIMING_NAME = re.compile(r"seconds|(^|_)s$|speedup|rss|wall")
TIMING, EXACT, TEXT, FLOAT = "timing", "exact", "text", "float"
#: A result that the paper's method itself decides by round-off: written, kept in the digest, reported by
#: ``repro verify`` as not compared (with the reason of its :data:`DECLARED` entry), never a moved number.
DIAGNOSTIC = "diagnostic"

#: Per experiment, the columns whose rule is not the default: ``"timing"`` (not compared), ``"diagnostic"``
#: (not compared: decided by round-off), ``"exact"``, or ``(rtol, atol)``. Only where the default is
#: wrong; every entry says why.
DECLARED: dict[str, dict[str, object]] = {
    # speed ratios of measured times, and how many calls or repeats a timing loop made in its budget
    # nnz_below / nnz_above: NSPCA's bisection on beta for a cardinality it misses (found=False) ends at
    # a jump of the support size, within a beta gap of 8e-6; the sizes seen either side are decided by the
    # summation order of its sweeps (BLAS kernel, CPU): 52 and 77 at K = 90 under two OpenBLAS kernels
    "asteris2014_fig4": {
        "ratio": TIMING,
        "calls_alg3": TIMING,
        "calls_em": TIMING,
        "nnz_below": DIAGNOSTIC,
        "nnz_above": DIAGNOSTIC,
    },
    # NSPCA stops when a sweep's relative gain falls below 1e-8; on another BLAS kernel the test is
    # crossed one sweep apart (270 or 271 at alpha 2e7, beta 4e6), which moves the last sweep's largest
    # coordinate move by about 1% and the objective by about 1e-8: one sweep, 5%, and the default rtol
    "zass2006_fig3": {"n_iter": (0.0, 1.0), "max_coord_move": (0.05, 1e-8), "objective": (1e-5, 1e-8)},
    # the worker memory limit follows the host's memory (a cluster set up by the test has its own)
    "bench_dask_cluster": {"ratio": TIMING, "memory_limit": TIMING},
    "bench_em_pca": {"ratio": TIMING, "ratio_samples": TIMING, "repeats": TIMING},
    "bench_em_scale": {
        "ratio": TIMING,
        "ratio_samples": TIMING,
        "repeats": TIMING,
        "cov_form_iterations": TIMING,  # time to form the covariance / time of one iteration
    },
    "bench_em_sparse_pca": {"ratio": TIMING, "repeats": TIMING, "ratio_block": TIMING, "samples": TIMING},
    "bench_gsppca": {"ratio": TIMING},
    # tracemalloc's peak (a measurement); the sparse-vs-dense differences and the subspace angles are
    # round-off of converged fits (about 1e-14 and 1e-6), compared to an absolute tolerance well below
    # their goals (1e-8, 1e-4); EMPCA's iteration count may move by one under another BLAS kernel
    "bench_sparse": {
        "ratio_samples": TIMING,
        "peak_mb": TIMING,
        "load_1min": TIMING,  # the machine's load average when the distributed part started
        "max_component_diff": (0.0, 1e-10),
        "max_variance_rel_diff": (0.0, 1e-10),
        "sin_to_arpack": (0.0, 1e-5),
        "sin_to_covariance_eigh": (0.0, 1e-5),
        "n_iter": (0.0, 2.0),
    },
    "bench_nspca": {"ratio": TIMING, "ratio_pca": TIMING},
    # KNNImputer (scikit-learn's, a reference) breaks ties between equal nan-Euclidean distances of CBCL's
    # quantized pixels by the round-off of its distance sums, which the BLAS kernel decides: one quick row's
    # RMSE moved by 1.6e-4 relative under OpenBLAS SkylakeX with NumPy at its baseline; 1e-3 stays far
    # below what the goals read (RMSE ratios against 1.01, coverage in points)
    "bench_imputer": {"rmse": (1e-3, 1e-8), "nrmse": (1e-3, 1e-8)},
    # the frontier's searches stop at a time limit: where the clock stopped them decides these
    "bench_optimal": dict.fromkeys(
        [f"timed_{c}" for c in ("value", "upper_bound", "gap", "proven", "status", "nodes", "root_bound")],
        TIMING,
    ),
    "bench_spannogram": {
        "ratio": TIMING,
        "fig_ratio": TIMING,
        "ratio_per_k": TIMING,
        "ratio_one_k": TIMING,
        "calls": TIMING,
        "curve_over_one_k": TIMING,
        "n_samples": TIMING,
    },
    "roweis1997_fig2": {"timing_only": TIMING},
    # tracemalloc's peak counts the Python objects alive at the time, so it depends on what the process
    # imported and cached before: 79-83 bytes of 0.3-1.2 MB between two `repro run`s, but 7% of one row
    # between a pytest process and a `repro run` on the same code. A measurement, not compared
    "roweis1997_claims": {"peak_bytes": TIMING},
}


class Curve(NamedTuple):
    """Rows of a result CSV that draw one curve each, compared as curves (:data:`CURVES`).

    The rows where column ``kind`` equals ``value`` are points ``(x, y)`` of curves, one per value of the
    ``keys`` columns, in the order drawn. Two runs' curves agree when their areas (trapezoid rule) are within
    ``area_atol`` and their ``y`` interpolated at ``grid`` equally spaced ``x`` in ``[0, 1]`` within
    ``curve_atol`` everywhere; how many points a curve has is not compared (a point collinear with its
    neighbours, dropped or not by round-off, changes neither).
    """

    kind: str
    value: str
    keys: tuple[str, ...]
    x: str
    y: str
    area_atol: float
    curve_atol: float
    grid: int = 1001


#: Per experiment, the rows that are points of curves. Tolerances scaled to the quantity: an ROC lies in
#: the unit square, its AUC in [0, 1]. An AUC within 1e-4 (ten times finer than the three digits papers
#: report it with) and a curve within 5e-3 of the axis (two pixels of the figure's 3-inch axes at 150 dpi)
#: are the same curve. Round-off in a classifier's scores can rank a test image past a neighbour: a step of
#: 1/1429 of the true-positive axis (1/2548 of the false-positive one) at Fig. 4's 3,977 test images, so
#: a few such swaps stay inside; a changed classifier or feature extractor does not.
CURVES: dict[str, Curve] = {
    "zass2006_fig4": Curve(
        "kind", "roc", ("label", "method", "alpha", "beta", "split"), "fpr", "tpr", 1e-4, 5e-3
    ),
}


def declared_rule(experiment: str, column: str) -> object | None:
    """The rule :data:`DECLARED` or the name gives ``column`` of ``experiment`` (None: neither decides).

    Examples
    --------
    >>> declared_rule("bench_em_pca", "ratio"), declared_rule("x", "seconds"), declared_rule("x", "k")
    ('timing', 'timing', None)
    """
    declared = DECLARED.get(experiment, {}).get(column)
    if declared is not None:
        return declared
    return TIMING if TIMING_NAME.search(column) else None


def is_timing(experiment: str, column: str) -> bool:
    """Whether ``column`` of ``experiment`` is a timing column (not compared, not in the digest)."""
    return declared_rule(experiment, column) == TIMING
