"""The bad-input matrix of issue 20, compact: nothing silently wrong at any finite scale.

Every estimator (default-constructed, and the set-ups the issue names) and every public function of
``repro``, ``repro.baselines`` and ``repro.metrics`` that takes data is run on the same small data
(two seeds) multiplied by 1e-300, 1e-150, 1e-100, 1e80, 1e300 and scaled to a largest entry of 1.7e308,
and on all-zero, constant, one-feature and two-sample data. Each case must either

* give the right answer: for the scale cases the answer of the unscaled data, scaled as the method
  is scale-equivariant (loadings unchanged up to sign, variances times ``s^2``); for every case unit-norm
  non-zero components within their cardinality (and non-negative where asked), finite values; or
* raise a ``ValueError`` whose message names an argument (``X``, ``v``, ``data``, ``n_components``, ...).

A case that runs past its time limit fails: ``TIME_LIMIT_S`` of the process's CPU time (so a loaded machine
does not stretch it), after a first call of the method on the unscaled data (``_warmed``) that compiles its
kernels under ``COMPILE_LIMIT_S``; a call blocked without using the CPU fails after ``WALL_FACTOR`` times
its limit on the clock. NSPCA's penalties are absolute (not scale-free), so its scale cases check the
properties, not equivariance.

"""

from __future__ import annotations

import faulthandler
import re
import signal
import sys
import time
import warnings

import numpy as np
import pytest

import repro
from repro import (
    EMPCA,
    GSPPCA,
    NSPCA,
    Covariance,
    EMSparsePCA,
    OptimalSparsePCA,
    SensiblePCA,
    SpannogramPCA,
    metrics,
)
from repro.baselines import (
    GSPCA,
    SSPCA,
    SPCAZou,
    ce_scores,
    cesr_select,
    gspca,
    gspca_path,
    pathspca,
    simple_thresholding,
    spca_zou_path,
    sspca_fit,
    sspca_path,
    svd_entropy,
    thresholding_path,
)

N, P = 40, 8
SEEDS = (0, 1)
SCALES = {
    "1e-300": 1e-300,
    "1e-150": 1e-150,
    "1e-100": 1e-100,
    "1e80": 1e80,
    "1e300": 1e300,
    "max1.7e308": None,
}
DEGENERATE = ("zeros", "constant", "one_feature", "two_samples")
TIME_LIMIT_S = 20.0  # CPU seconds of one case, its kernels compiled
COMPILE_LIMIT_S = 120.0  # CPU seconds of a method's first call, Numba compiling (or loading) its kernels
WALL_FACTOR = 10.0  # a call blocked (not computing) fails after this many times its CPU limit on the clock

#: Not scale-equivariant by definition: absolute penalties (NSPCA's alpha and beta, SPCA's ridge, SSPCA's
#: alpha, on the scale of X'X). Their scale cases check the properties; SPCA's equivariance with the
#: ridge scaled as s^2 is checked in test_spca_zou_equivariant_with_its_ridge.
NOT_EQUIVARIANT = {
    "NSPCA()",
    "nspca",
    "SPCAZou()",
    "SPCAZou(2, cardinality=3)",
    "spca_zou_path",
    "SSPCA(2, alpha=0.1)",  # SSPCA's alpha too
    "sspca_fit",
    "sspca_path",
}

#: Inputs that are not data (a vector v): a constant v is a valid input, not data without variance.
NOT_DATA = {"rank1_solver"}

#: Words a clear error names: the arguments of these functions and estimators.
ARGUMENTS = re.compile(
    r"\b(X|v|data|matrix|C|W|components|n_components|cardinality|cardinalities|rank|k|n_features|"
    r"max_cardinality|alpha|support|n_selected|eigenvalues)\b"
)


def _data(seed: int) -> np.ndarray:
    """Centred-ish data with a clearly separated spectrum (so the answers are stable to round-off)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, P)) @ np.diag(np.geomspace(3.0, 0.3, P))


def _case(X: np.ndarray, case: str) -> tuple[np.ndarray, float | None]:
    """The data of a case and its scale factor (None when the case is not a rescaling)."""
    if case in SCALES:
        s = SCALES[case] if SCALES[case] is not None else 1.7e308 / np.abs(X).max()
        return X * s, s
    if case == "zeros":
        return np.zeros_like(X), None
    if case == "constant":
        return np.full_like(X, 3.0), None
    if case == "one_feature":
        return X[:, :1].copy(), None
    if case == "two_samples":
        return X[:2].copy(), None
    raise AssertionError(case)


class _Timeout(Exception):
    pass


def _run(fn, *args, limit: float = TIME_LIMIT_S):
    """``fn(*args)`` under ``limit`` seconds of the process's CPU time (SIGPROF) and ``WALL_FACTOR`` times
    that on the clock (SIGALRM), both for Python code; a traceback dump and exit as the backstop for a
    compiled loop that never returns to the interpreter."""
    wall = WALL_FACTOR * limit

    def cpu_alarm(signum, frame):
        raise _Timeout(f"ran past {limit} s of CPU time")

    def wall_alarm(signum, frame):
        raise _Timeout(f"ran past {wall} s on the clock")

    old_prof = signal.signal(signal.SIGPROF, cpu_alarm)
    old_alarm = signal.signal(signal.SIGALRM, wall_alarm)
    signal.setitimer(signal.ITIMER_PROF, limit)
    signal.setitimer(signal.ITIMER_REAL, wall)
    faulthandler.dump_traceback_later(2 * wall, exit=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args)
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, old_alarm)
        signal.signal(signal.SIGPROF, old_prof)


# --------------------------------------------------------------------------- what is checked
# Each entry maps data to named outputs: (value, power, kind). ``power``: the output scales as s**power
# (None: not compared across scales). ``kind``: "rows" (unit-norm non-zero loadings, rows compared up
# to sign), "free_rows" (non-zero rows of any norm), "vector" (one unit-norm loading), "value" (finite
# numbers); then tags "sparse<k>" (rows of at most k non-zeros) and "nonneg" (rows of one sign).


def _est(est, *extra):
    def fit(X):
        e = est.fit(X)
        out = {"components_": (e.components_, 0, ("rows", *extra))}
        if hasattr(e, "explained_variance_"):
            out["explained_variance_"] = (e.explained_variance_, 2, ("value",))
        if hasattr(e, "upper_bound_"):
            out["upper_bound_"] = (e.upper_bound_, 2, ("value",))
        return out

    return fit


def _sparse_weighted(est, *extra):
    """``est.fit`` on the CSR form of the data with sample weights 1, 2, 3, 1, ...: the weighted centring
    implicit (the same answers at every scale, or a refusal naming X)."""
    import scipy.sparse as sp

    def fit(X):
        e = est.fit(sp.csr_matrix(X), sample_weight=1.0 + np.arange(X.shape[0]) % 3)
        return {
            "components_": (e.components_, 0, ("rows", *extra)),
            "explained_variance_": (e.explained_variance_, 2, ("value",)),
        }

    return fit


def _streamed(make, sparse, *extra):
    """``partial_fit`` over three batches (CSR ones where ``sparse``). A stream that cannot be fitted yet
    (fewer than ``n_components + 1`` rows, or no variance: the one-noise-dimension model needs one more
    row) stays unfitted rather than wrong; that is checked, then reported as the refusal it is."""
    import scipy.sparse as sp

    def fit(X):
        e = make()
        for b in np.array_split(np.arange(X.shape[0]), 3):
            if b.size:
                e.partial_fit(sp.csr_matrix(X[b]) if sparse else X[b])
        if not hasattr(e, "components_"):
            k = e.n_components + (1 if isinstance(e, SensiblePCA) else 0)
            assert X.shape[0] < k + 1 or not np.ptp(X, axis=0).any(), "a stream with variance left unfitted"
            raise ValueError("X: too few rows or no variance for n_components yet (the stream is unfitted)")
        return {
            "components_": (e.components_, 0, ("rows", *extra)),
            "explained_variance_": (e.explained_variance_, 2, ("value",)),
        }

    return fit


def _path(fn, k_kind):
    def run(X):
        p = fn(X)
        return {"components": (p.components, 0, ("rows", k_kind)), "variance": (p.variance, 2, ("value",))}

    return run


def _named(fn, names, powers, kinds):
    """Outputs of ``fn`` (a tuple) named, with their scaling powers and kinds."""

    def run(X):
        return {n: (a, p, k) for n, a, p, k in zip(names, fn(X), powers, kinds, strict=True)}

    return run


def _pair(fn, kind=("vector",)):
    def run(X):
        w, v = fn(X)
        return {"w": (w, 0, kind), "value": (v, 2, ("value",))}

    return run


ESTIMATORS = {
    "EMPCA()": _est(EMPCA(random_state=0)),
    "EMPCA(2)": _est(EMPCA(2, random_state=0)),
    "SensiblePCA()": _est(SensiblePCA(random_state=0)),
    "EMSparsePCA()": _est(EMSparsePCA(random_state=0)),
    "EMSparsePCA(2, cardinality=3)": _est(EMSparsePCA(2, cardinality=3, random_state=0), "sparse3"),
    "EMSparsePCA(2, cardinality=3, nonneg=True)": _est(
        EMSparsePCA(2, cardinality=3, nonneg=True, random_state=0), "sparse3", "nonneg"
    ),
    "NSPCA()": _est(NSPCA(random_state=0, max_iter=300), "nonneg"),
    "SpannogramPCA()": _est(SpannogramPCA(n_samples=500, random_state=0), "nonneg"),
    "SpannogramPCA(cardinality=3)": _est(SpannogramPCA(cardinality=3, random_state=0), "sparse3", "nonneg"),
    "SpannogramPCA(2, cardinality=3, nonneg=False)": _est(
        SpannogramPCA(2, cardinality=3, nonneg=False, n_samples=500, random_state=0), "sparse3"
    ),
    "GSPCA()": _est(GSPCA()),
    "GSPCA(2, cardinality=3)": _est(GSPCA(2, cardinality=3), "sparse3"),
    "SPCAZou()": _est(SPCAZou()),
    "SPCAZou(2, cardinality=3)": _est(SPCAZou(2, cardinality=3), "sparse3"),
    "GSPPCA(1)": _est(GSPPCA(1, random_state=0)),
    "SSPCA(2, alpha=0.1)": _est(SSPCA(2, alpha=0.1, random_state=0, max_iter=100)),
    "OptimalSparsePCA(2, cardinality=3)": _est(OptimalSparsePCA(2, cardinality=3), "sparse3"),
    "OptimalSparsePCA(cardinality=3, nonneg=True)": _est(
        OptimalSparsePCA(cardinality=3, nonneg=True), "sparse3", "nonneg"
    ),
    "EMPCA(2).fit(csr, sample_weight)": _sparse_weighted(EMPCA(2, random_state=0)),
    "SensiblePCA().fit(csr, sample_weight)": _sparse_weighted(SensiblePCA(random_state=0)),
    "EMSparsePCA(2, cardinality=3).fit(csr, sample_weight)": _sparse_weighted(
        EMSparsePCA(2, cardinality=3, random_state=0), "sparse3"
    ),
    "EMPCA(2).partial_fit(batches)": _streamed(lambda: EMPCA(2), False),
    "EMPCA(2).partial_fit(csr batches)": _streamed(lambda: EMPCA(2), True),
    "SensiblePCA().partial_fit(csr batches)": _streamed(lambda: SensiblePCA(), True),
    "EMSparsePCA(2, cardinality=3).partial_fit(csr batches)": _streamed(
        lambda: EMSparsePCA(2, cardinality=3, random_state=0), True, "sparse3"
    ),
}


def _sspca_fit(X):
    V = sspca_fit(X, 2, 0.1, max_iter=100)[1]
    return {"V": (np.asarray(V).T, 0, ("value",))}


def _sspca_path(X):
    res = sspca_path(X, 2, [0.1, 1.0], max_iter=100)
    return {f"V[{i}]": (np.asarray(V, dtype=float), None, ("value",)) for i, (_, V) in enumerate(res)}


FUNCTIONS = {
    "center": lambda X: {
        "Xc": (repro.center(X)[0], 1, ("value",)),
        "mean": (repro.center(X)[1], 1, ("value",)),
    },
    "standardize": _named(repro.standardize, ("Z", "mean", "scale"), (0, 1, 1), [("value",)] * 3),
    "Covariance.eigh": _named(
        lambda X: Covariance.from_data(X).eigh(2), ("values", "vectors"), (2, None), [("value",)] * 2
    ),
    "leading_eigenpairs": lambda X: {
        "values": (repro.leading_eigenpairs(Covariance.from_data(X), 2)[0], 2, ("value",))
    },
    "em_pca": lambda X: {"W": (repro.em_pca(X, 2, random_state=0).components, 0, ("rows",))},
    "em_pca_blocks": lambda X: {
        "W": (
            repro.em_pca_blocks(
                lambda: iter([X[: len(X) // 2], X[len(X) // 2 :]]), 2, random_state=0
            ).components,
            0,
            ("rows",),
        )
    },
    "sensible_pca": lambda X: {"W": (repro.sensible_pca(X, 2, random_state=0).components, 0, ("rows",))},
    "ppca_closed_form": lambda X: {"noise": (repro.ppca_closed_form(X, 2)[1], 2, ("value",))},
    "em_sparse_pca": _named(
        lambda X: repro.em_sparse_pca(X, 2, cardinality=3, random_state=0),
        ("W", "variance"),
        (0, 2),
        (("rows", "sparse3"), ("value",)),
    ),
    "em_sparse_pca_path": _path(lambda X: repro.em_sparse_pca_path(X, [1, 3, 5], random_state=0), "sparse5"),
    "nspca": lambda X: {
        "U": (repro.nspca(X, 2, alpha=1.0, random_state=0, max_iter=300).U.T, None, ("free_rows", "nonneg"))
    },
    "spannogram_path": _path(
        lambda X: repro.spannogram_path(X, [1, 3, 5], n_samples=500, random_state=0), "sparse5"
    ),
    "spannogram_exact": _pair(lambda X: repro.spannogram_exact(X, 3), ("vector", "sparse3", "nonneg")),
    "spannogram_bound": lambda X: {
        "bound": (repro.spannogram_bound(X, [1, 3], n_samples=500), 2, ("value",))
    },
    "rank1_solver": _pair(lambda X: repro.rank1_solver(X[:, 0], 3), ("vector", "sparse3", "nonneg")),
    "gspca": lambda X: {"W": (gspca(X, 3, 2).components, 0, ("rows", "sparse3"))},
    "gspca_path": lambda X: {"variance": (gspca_path(X, 4).variance, 2, ("value",))},
    "pathspca": _path(lambda X: pathspca(X, [1, 3, 5]), "sparse5"),
    "simple_thresholding": _pair(lambda X: simple_thresholding(X, 3), ("vector", "sparse3")),
    "thresholding_path": _path(lambda X: thresholding_path(X, [1, 3, 5]), "sparse5"),
    "spca_zou_path": _path(lambda X: spca_zou_path(X, [1, 3]), "sparse3"),
    "svd_entropy": lambda X: {"E": (svd_entropy(X), 0, ("value",))},
    "ce_scores": lambda X: {"ce": (ce_scores(X), 0, ("value",))},
    "cesr_select": lambda X: {"sel": (np.sort(cesr_select(X, 3)), 0, ("value",))},
    "metrics.explained_variance": lambda X: {
        "v": (metrics.explained_variance(Covariance.from_data(X), np.eye(X.shape[1])[:1]), 2, ("value",))
    },
    "metrics.adjusted_variance": lambda X: {
        "v": (metrics.adjusted_variance(Covariance.from_data(X), np.eye(X.shape[1])[:1]), 2, ("value",))
    },
    "metrics.certified_fraction": lambda X: {
        "f": (metrics.certified_fraction(X, np.eye(X.shape[1])[:1], 1, n_samples=500), 0, ("value",))
    },
    "gsppca_vem": lambda X: {"W": (np.asarray(repro.gsppca_vem(X, 1, random_state=0).M).T, None, ("value",))},
    "log_evidence": lambda X: {
        "e": (repro.log_evidence(X, np.arange(min(3, X.shape[1])), n_components=1), None, ("value",))
    },
    "evidence_path": lambda X: {
        "e": (
            np.asarray(repro.evidence_path(X, np.arange(X.shape[1]), n_components=1).log_evidence),
            None,
            ("value",),
        )
    },
    "sspca_fit": _sspca_fit,
    "sspca_path": _sspca_path,
    "optimal_sparse_pca": lambda X: {
        "x": (repro.optimal_sparse_pca(X, 3).component, 0, ("vector", "sparse3")),
        "value": (repro.optimal_sparse_pca(X, 3).value, 2, ("value",)),
        "upper_bound": (repro.optimal_sparse_pca(X, 3).upper_bound, 2, ("value",)),
    },
}

CALLS = {**ESTIMATORS, **FUNCTIONS}


def _check_properties(name: str, out: dict) -> None:
    for key, (value, _, kind) in out.items():
        arr = np.asarray(value, dtype=float)
        assert np.all(np.isfinite(arr)), f"{name}: {key} is not finite: {arr}"
        rows = np.atleast_2d(arr)
        if kind[0] in ("rows", "vector", "free_rows"):
            norms = np.linalg.norm(rows, axis=1)
            assert np.all(norms > 1e-3), f"{name}: a zero component in {key} (norms {norms})"
            if kind[0] != "free_rows":  # NSPCA's U: near-orthonormal only through its penalty
                np.testing.assert_allclose(norms, 1.0, atol=1e-6, err_msg=f"{name}: {key} not unit norm")
        for tag in kind[1:]:
            if tag.startswith("sparse"):
                assert np.all(np.count_nonzero(rows, axis=1) <= int(tag[6:])), f"{name}: {key} too dense"
            if tag == "nonneg":
                assert np.all((rows.min(axis=1) >= 0) | (rows.max(axis=1) <= 0)), f"{name}: {key} mixes signs"


def _same_up_to_sign(a: np.ndarray, b: np.ndarray) -> bool:
    A, B = np.atleast_2d(a), np.atleast_2d(b)
    signs = np.where(np.sum(A * B, axis=1) < 0, -1.0, 1.0)[:, None]
    return bool(np.allclose(A * signs, B, atol=1e-6))


def _check_equivariance(name: str, out: dict, base: dict, s: float) -> None:
    for key, (value, power, kind) in out.items():
        if power is None or key not in base:
            continue
        ref = np.asarray(base[key][0], dtype=float)
        got = np.asarray(value, dtype=float)
        if kind[0] in ("rows", "vector") or (power == 0 and key in ("vectors",)):
            assert _same_up_to_sign(got, ref), f"{name}: {key} differs from the unscaled fit"
            continue
        if key == "vectors":
            continue
        # the expected value ref * s**power, compared as got / s**power (s**power itself may overflow)
        scaled = got
        for _ in range(power):
            scaled = scaled / s
        np.testing.assert_allclose(
            scaled,
            ref,
            rtol=1e-6,
            atol=1e-9 * float(np.max(np.abs(ref), initial=0.0)),
            err_msg=f"{name}: {key} is not the unscaled answer times s^{power}",
        )


_BASE: dict = {}
_WARMED: set = set()


def _base(name: str, seed: int, limit: float = TIME_LIMIT_S):
    """The unscaled answer (None when the method refuses the unscaled data, which the test then says)."""
    if (name, seed) not in _BASE:
        _BASE[name, seed] = _run(CALLS[name], _data(seed), limit=limit)
    return _BASE[name, seed]


def _warmed(name: str) -> None:
    """The method's first call, on the unscaled data of the first seed, under ``COMPILE_LIMIT_S``: Numba
    compiles (or loads) its kernels here, so a case's ``TIME_LIMIT_S`` times its own computation. A hang
    fails here; any other outcome is left to the cases (which run the same call themselves)."""
    if name in _WARMED:
        return
    _WARMED.add(name)
    try:
        _base(name, SEEDS[0], limit=COMPILE_LIMIT_S)
    except _Timeout as exc:
        pytest.fail(f"{name} on the unscaled data (compiling included): {exc}")
    except Exception:  # judged by the cases themselves
        pass


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", [*SCALES, *DEGENERATE])
@pytest.mark.parametrize("name", list(CALLS))
def test_matrix(name, case, seed, request):
    _warmed(name)
    X, s = _case(_data(seed), case)
    try:
        out = _run(CALLS[name], X)
    except ValueError as exc:  # a clear error: it names the argument
        assert ARGUMENTS.search(str(exc)), f"{name} on {case}: the error names no argument: {exc}"
        return
    except _Timeout as exc:
        pytest.fail(f"{name} on {case}: {exc}")
    except Exception as exc:  # an obscure error
        pytest.fail(f"{name} on {case}: {type(exc).__name__}: {exc}")
    _check_properties(name, out)
    if case in ("zeros", "constant") and name not in NOT_DATA:
        assert not any(k[0] in ("rows", "vector") for _, _, k in out.values()), (
            f"{name} returned components for data with no variance, without a word"
        )
    if s is not None and name not in NOT_EQUIVARIANT:
        _check_equivariance(name, out, _base(name, seed), s)


def test_time_limits_catch_a_hang(monkeypatch):
    """The guard of every case: a loop that computes forever stops at the CPU limit, one that waits
    forever at the wall limit, and a call within both returns its value."""

    def spin():
        while True:
            pass

    with pytest.raises(_Timeout, match="CPU time"):
        _run(spin, limit=0.2)
    monkeypatch.setattr(sys.modules[__name__], "WALL_FACTOR", 2.0)
    with pytest.raises(_Timeout, match="on the clock"):
        _run(time.sleep, 60, limit=0.1)
    assert _run(sum, [1, 2], limit=0.1) == 3


@pytest.mark.parametrize("case", ["1e-150", "1e-100", "1e80"])
def test_spca_zou_equivariant_with_its_ridge(case):
    """SPCA (Zou et al.) on ``X s`` with ridge ``r`` is SPCA on ``X`` with ridge ``r / s^2``."""
    X, s = _case(_data(0), case)
    got = _run(SPCAZou(2, cardinality=3).fit, X)
    ref = SPCAZou(2, cardinality=3, ridge=1e-6 / s**2).fit(_data(0))
    assert _same_up_to_sign(got.components_, ref.components_)
    np.testing.assert_allclose(got.explained_variance_ / s**2, ref.explained_variance_, rtol=1e-6)


# --------------------------------------------------------------------------- the issue's reproducers
def _issue_data(shape=(60, 10), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def test_issue20_spannogram_at_1e80_is_not_a_zero_component():
    X = _issue_data()
    ref = SpannogramPCA(cardinality=3, random_state=0).fit(X)
    got = SpannogramPCA(cardinality=3, random_state=0).fit(X * 1e80)
    assert list(got.n_nonzero_) == [3]  # was [0]: an all-zero component with variance 0
    assert _same_up_to_sign(got.components_, ref.components_)
    np.testing.assert_allclose(got.explained_variance_ / 1e160, ref.explained_variance_, rtol=1e-9)
    np.testing.assert_allclose(got.upper_bound_ / 1e160, ref.upper_bound_, rtol=1e-9)


@pytest.mark.parametrize("scale", [1e-100, 1e-150])
def test_issue20_spannogram_at_tiny_scales_is_the_same_component(scale):
    X = _issue_data()
    ref = repro.spannogram_path(X, [3], random_state=0)
    got = repro.spannogram_path(X * scale, [3], random_state=0)  # was 5.45 s^2 instead of 8.99 s^2
    np.testing.assert_allclose(got.variance / scale**2, ref.variance, rtol=1e-9)
    x0, v0 = repro.spannogram_exact(X, 3)
    x, v = repro.spannogram_exact(X * scale, 3)  # was 8.60 instead of 8.89
    assert _same_up_to_sign(x, x0)
    assert v / scale**2 == pytest.approx(v0, rel=1e-9)


def test_issue20_spannogram_deflation_running_out_of_features():
    X = _issue_data()
    with pytest.raises(ValueError, match="n_components=2 is too many"):  # was a second component of zeros
        SpannogramPCA(2, cardinality=10, nonneg=False).fit(X)
    for shape in ((67, 5), (55, 9)):
        for seed in range(4):  # was zero components for some seeds, "X is too small" for others
            Y = _issue_data(shape, seed)
            for k in range(1, shape[1] + 1):
                try:
                    est = SpannogramPCA(3, cardinality=k, nonneg=False, n_samples=300, random_state=seed).fit(
                        Y
                    )
                except ValueError as exc:
                    assert "n_components=3 is too many" in str(exc)
                    continue
                np.testing.assert_allclose(np.linalg.norm(est.components_, axis=1), 1.0)
                assert not (np.count_nonzero(est.components_, axis=0) > 1).any()  # disjoint supports


@pytest.mark.parametrize("data", ["zeros", "constant", "1e-300"])
def test_issue20_spannogram_refuses_data_without_usable_variance(data):
    X = {"zeros": np.zeros((60, 10)), "constant": np.full((60, 10), 3.0), "1e-300": _issue_data() * 1e-300}[
        data
    ]
    with pytest.raises(ValueError, match=r"no variance|too small"):
        SpannogramPCA(cardinality=3).fit(X)


def test_issue20_scale_for_does_not_overflow():
    X = _issue_data() * 1e307
    X[0, 0] = 1.7e308
    with pytest.raises(ValueError, match="too large for float64"):  # was OverflowError (34, ...)
        EMPCA(2).fit(X)
    Y = _issue_data()
    Y[:, 0] *= 1.7e308 / np.abs(Y[:, 0]).max()  # one huge column: the others keep their precision
    Z, _mean, _scale = repro.standardize(Y)
    ref = repro.standardize(_issue_data())[0][:, 1:]
    np.testing.assert_allclose(Z[:, 1:], ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_issue20_standardize_center_rank1_solver_overflow():
    X = _issue_data()
    Z, mean, scale = repro.standardize(X * 1e300)  # was std = inf
    Z0, _mean0, scale0 = repro.standardize(X)
    np.testing.assert_allclose(Z, Z0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(scale / 1e300, scale0, rtol=1e-12)
    _Xc, mean = repro.center((X + 3) * 1e307)  # was mean = inf
    np.testing.assert_allclose(mean / 1e307, (X + 3).mean(axis=0), rtol=1e-12)
    v = X[:, 0]
    with pytest.raises(ValueError, match="v is too large"):  # ||v_I||^2 = 1e600: was inf
        repro.rank1_solver(v * 1e300, 3)
    x, value = repro.rank1_solver(v * 1e150, 3)
    x0, value0 = repro.rank1_solver(v, 3)
    np.testing.assert_array_equal(x, x0)
    assert value / 1e300 == pytest.approx(value0, rel=1e-12)


def test_issue20_covariance_eigh_at_extreme_scales():
    X = _issue_data((12, 30))  # wide: through the Gram matrix
    for Y in (X, _issue_data()):
        v0, U0 = Covariance.from_data(Y).eigh(3)
        v, U = Covariance.from_data(Y * 1e150).eigh(3)
        np.testing.assert_allclose(v / 1e300, v0, rtol=1e-12)
        np.testing.assert_allclose(U, U0, atol=1e-10)
        with pytest.raises(ValueError, match="too large for float64"):  # was SciPy's infs-or-NaNs error
            Covariance.from_data(Y * 1e300).eigh(3)


def test_issue20_bound_is_an_upper_bound_in_floating_point():
    """Rank-2 data, where the exact sweep's bound is tight: it stays above the brute-force optimum
    (without the rounding margin, 66 of 2076 such cases were below it by up to 9e-16 relative)."""
    import itertools

    def optimum(A, k):  # max over supports of an eigenvalue with a one-signed eigenvector
        best = 0.0
        for r in range(1, k + 1):
            for T in itertools.combinations(range(A.shape[0]), r):
                w, U = np.linalg.eigh(A[np.ix_(T, T)])
                for j in range(r - 1, -1, -1):
                    if (U[:, j] > 0).all() or (U[:, j] < 0).all():
                        best = max(best, w[j])
                        break
        return best

    below = 0
    for seed in range(12):
        X = np.random.default_rng(seed).standard_normal((3, 9))
        A = np.cov(X.T)
        for k in (2, 4):
            bound = repro.spannogram_bound(X, k, rank=2, net="exact")
            below += bound < optimum(A, k)
    assert below == 0


@pytest.mark.parametrize("scale", [1e-150, 1e80, 1e150])
def test_issue20_blocks_are_read_rescaled(scale):
    """em_pca_blocks / sensible_pca_blocks on blocks outside [2^-256, 2^256] (was LinAlgError at 1e300):
    the blocks are read divided by a power of two and the results scaled back."""
    from repro.em_pca import sensible_pca_blocks

    X = _data(0)
    ref = repro.em_pca_blocks([X[:20], X[20:]], 2, random_state=0)
    got = repro.em_pca_blocks(lambda: iter([X[:20] * scale, X[20:] * scale]), 2, random_state=0)
    assert _same_up_to_sign(got.components, ref.components)
    np.testing.assert_allclose(got.explained_variance / scale**2, ref.explained_variance, rtol=1e-9)
    np.testing.assert_allclose(got.mean / scale, ref.mean, rtol=1e-9, atol=1e-15)
    s0 = sensible_pca_blocks([X[:20], X[20:]], 2, random_state=0)
    s1 = sensible_pca_blocks([X[:20] * scale, X[20:] * scale], 2, random_state=0)
    assert s1.noise_variance / scale**2 == pytest.approx(s0.noise_variance, rel=1e-9)
    assert s1.log_likelihood == pytest.approx(s0.log_likelihood - X.size * np.log(scale), rel=1e-9)
    with pytest.raises(ValueError, match="too large for float64"):
        repro.em_pca_blocks([X * 1e300], 2, random_state=0)


# --------------------------------------------------------------------------- issue 35: the new surfaces
# DataFrames with column names (reordered, renamed, missing), matrices given as covariances (indefinite,
# asymmetric, non-finite), the command line's values and the result files, on seeds beyond those above.
# Every case: the right answer, or a ValueError (the command line: exit status 2 in one line, a result
# file: a ResultFileError naming it); never a silent wrong result, never a traceback.
SEEDS_35 = (2, 3)


def _named_frame(seed: int):
    import pandas as pd

    return pd.DataFrame(_data(seed), columns=[f"f{i}" for i in range(P)])


@pytest.mark.filterwarnings("ignore::UserWarning")  # scikit-learn's "X does not have valid feature names"
@pytest.mark.parametrize("seed", SEEDS_35)
@pytest.mark.parametrize("name", ["EMPCA", "SensiblePCA", "EMSparsePCA", "NSPCA", "SpannogramPCA", "GSPPCA",
                                  "GSPCA", "SPCAZou", "SSPCA"])  # fmt: skip
def test_matrix_dataframe_columns(name, seed):
    from test_issue35_reproducers import ESTIMATORS as FACTORIES

    D = _named_frame(seed)
    est = _run(FACTORIES[name]().fit, D)
    assert list(est.feature_names_in_) == list(D.columns)
    np.testing.assert_allclose(est.transform(D), est.transform(D.to_numpy()))
    perm = np.random.default_rng(seed).permutation(P)
    while (perm == np.arange(P)).all():
        perm = np.roll(perm, 1)
    for bad in (
        D.iloc[:, perm],  # reordered
        D.rename(columns={"f0": "g0"}),  # renamed
        D.iloc[:, :-1],  # one missing
        D.assign(extra=1.0),  # one unseen
    ):
        with pytest.raises(ValueError, match="feature names should match"):
            est.transform(bad)
        with pytest.raises(ValueError, match="feature names should match"):
            est.score(bad)
    unnamed = _run(FACTORIES[name]().fit, D.set_axis(range(P), axis=1))  # non-string names: none recorded
    assert not hasattr(unnamed, "feature_names_in_") and unnamed.n_features_in_ == P


def _indefinite(seed: int, kind: str) -> np.ndarray:
    C = np.cov(_data(seed), rowvar=False)
    if kind == "negated":
        return -C
    if kind == "one_negative":  # one eigenvalue -1e-3 of the largest: far beyond round-off
        w, V = np.linalg.eigh(C)
        w[0] = -1e-3 * w[-1]
        return (V * w) @ V.T
    if kind == "asymmetric":
        C = C.copy()
        C[0, 1] += 0.1 * C[0, 0]
        return C
    if kind == "nan":
        C = C.copy()
        C[1, 1] = np.nan
        return C
    raise AssertionError(kind)


COVARIANCE_CALLS = {
    "Covariance(matrix=)": lambda C: Covariance(matrix=C).eigh(2)[0],
    "Covariance.from_matrix": lambda C: Covariance.from_matrix(C).eigh(2)[0],
    "leading_eigenpairs": lambda C: repro.leading_eigenpairs(C, 2)[0],
    "metrics.explained_variance": lambda C: metrics.explained_variance(C, np.eye(P)[:2]),
    "metrics.adjusted_variance": lambda C: metrics.adjusted_variance(C, np.eye(P)[:2]),
    "gspca(precomputed)": lambda C: np.einsum(
        "ij,jk,ik->i", (W := gspca(C, 3, 2, precomputed=True).components), C, W
    ),
    "gspca_path(precomputed)": lambda C: gspca_path(C, 4, precomputed=True).variance,
    "nspca(precomputed)": lambda C: repro.nspca(C, 1, alpha=1.0, precomputed=True, max_iter=100).objective,
    "spannogram_bound": lambda C: repro.spannogram_bound(Covariance.from_matrix(C), [1, 3], n_samples=300),
    "pathspca": lambda C: pathspca(Covariance.from_matrix(C), [1, 3]).variance,
    "EMSparsePCA(Covariance)": lambda C: (
        EMSparsePCA(cardinality=3, random_state=0)
        .fit(Covariance.from_matrix(C, n_samples=N))
        .explained_variance_
    ),
}


@pytest.mark.parametrize("seed", SEEDS_35)
@pytest.mark.parametrize("kind", ["psd", "negated", "one_negative", "asymmetric", "nan"])
@pytest.mark.parametrize("name", list(COVARIANCE_CALLS))
def test_matrix_covariance_inputs(name, kind, seed):
    C = np.cov(_data(seed), rowvar=False) if kind == "psd" else _indefinite(seed, kind)
    try:
        out = np.asarray(_run(COVARIANCE_CALLS[name], C), dtype=float)
    except ValueError as exc:
        assert kind != "psd", f"{name} refused a covariance: {exc}"
        assert re.search(r"positive semi-definite|symmetric|NaN|infinite", str(exc)), f"{name}: {exc}"
        assert ARGUMENTS.search(str(exc)), f"{name} on {kind}: the error names no argument: {exc}"
        return
    except Exception as exc:  # an obscure error
        pytest.fail(f"{name} on {kind}: {type(exc).__name__}: {exc}")
    assert kind == "psd", f"{name} accepted a {kind} matrix and returned {out}"
    assert np.all(np.isfinite(out)) and np.all(out >= -1e-12 * np.trace(C)), f"{name}: {out}"


def _cli_cases(seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    junk = "".join(rng.choice(list("ab/. -\\:*"), size=12))
    return [
        ["run", "sigg2008_prop32", "--quick", "--seed", str(-int(rng.integers(1, 10**6)))],
        ["run", "sigg2008_prop32", "--quick", "--seed", str(2**32 + int(rng.integers(0, 10**6)))],
        ["run", "sigg2008_prop32", "--quick", "--seed", f"{rng.random():.3f}"],
        ["run", "s" * int(rng.integers(101, 5000)), "--quick"],
        ["run", f"x{junk}", "--quick"],
        ["redraw", f"../{junk}"],
        ["run", "os.path", "--quick"],
        ["run", "experiments.runner.claims", "--quick"],
        ["run", "sigg2008_prop32", "--jobs", str(-int(rng.integers(0, 5)))],
    ]


@pytest.mark.parametrize("seed", SEEDS_35)
def test_matrix_command_line(seed, tmp_path, capsys):
    from experiments.runner import cli

    out = tmp_path / "out"
    for args in _cli_cases(seed):
        try:
            rc = cli.main([*args, "--out", str(out)])
        except SystemExit as exc:  # argparse
            rc = exc.code
        err = capsys.readouterr().err
        assert rc == 2, (args, rc, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (args, err)
        assert not out.exists() or not any(out.glob("*.csv")), args  # nothing computed


@pytest.mark.parametrize("seed", SEEDS_35)
def test_matrix_result_files(seed, tmp_path):
    import pandas as pd

    from experiments.runner import _common

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"method": rng.choice(["a", "b,c", 'q"t'], 40), "x": rng.standard_normal(40)})
    path = _common.write_csv(df, tmp_path / "toy.csv")
    whole = path.read_bytes()
    pd.testing.assert_frame_equal(_common.read_result(tmp_path, "toy"), pd.read_csv(path))
    cuts = sorted(set(rng.integers(0, len(whole), 25).tolist()) | {len(whole) - 1})
    ends = [i + 1 for i, b in enumerate(whole) if b == ord("\n")][1:-1]  # row boundaries
    variants = [whole[:c] for c in cuts] + [whole[:e] for e in ends[:: max(1, len(ends) // 8)]]
    flips = rng.integers(0, len(whole), 10)
    variants += [whole[:i] + bytes([whole[i] ^ 0x20]) + whole[i + 1 :] for i in flips]
    variants += [b"x,y\n1,2\n", whole.replace(b"\n", b"\r\n")]
    for content in variants:
        if content == whole:
            continue
        path.write_bytes(content)
        with pytest.raises(_common.ResultFileError, match=re.escape(str(path))):
            _common.read_result(tmp_path, "toy")


# --------------------------------------------------------------------------- scipy.sparse input
# Every call that takes a sparse matrix, on the cases above given as CSR and on the cases only sparse input
# has (NaN among the stored values, stored zeros, duplicate entries, an integer dtype, empty rows and
# columns): the answer of the same call on the dense array, or the refusal it gives (both a ValueError that
# names an argument); NaN among the stored values is refused whatever the dense call does with NaN.
SPARSE_CALLS = {
    **{
        name: CALLS[name]
        for name in (
            "EMPCA(2)",
            "SensiblePCA()",
            "EMSparsePCA(2, cardinality=3)",
            "GSPPCA(1)",
            "em_pca",
            "sensible_pca",
            "em_sparse_pca",
            "em_sparse_pca_path",
            "log_evidence",
            "evidence_path",
            "metrics.certified_fraction",
            "NSPCA()",
            "nspca",
            "SpannogramPCA(cardinality=3)",
            "SpannogramPCA(2, cardinality=3, nonneg=False)",
            "spannogram_path",
            "spannogram_exact",
            "spannogram_bound",
        )
    },
    # the VEM's loadings are defined up to a rotation of the latent space: compare its weights u
    "gsppca_vem": lambda X: {"u": (repro.gsppca_vem(X, 1, random_state=0).u, None, ("value",))},
}
SPARSE_ONLY = ("nan_stored", "stored_zeros", "duplicates", "int64", "empty_rows", "empty_columns")


def _sparse_case(seed: int, case: str):
    """``(sparse matrix, its dense twin)`` of a case (the twin None for NaN among the stored values), on
    the data of ``_data`` with half its entries zero."""
    import scipy.sparse as sp

    X = _data(seed)
    X[np.random.default_rng(seed + 10).random(X.shape) < 0.5] = 0.0
    if case in SCALES or case in DEGENERATE:
        D, _ = _case(X, case)
        return sp.csr_matrix(D), D
    coo = sp.coo_matrix(X)
    if case == "nan_stored":
        S = sp.csr_matrix(X)
        S.data[2] = np.nan
        return S, None
    if case == "stored_zeros":
        return sp.csr_matrix((np.r_[coo.data, 0.0, 0.0], (np.r_[coo.row, 0, 7], np.r_[coo.col, 1, 3]))), X
    if case == "duplicates":
        rows, cols = np.r_[coo.row, coo.row], np.r_[coo.col, coo.col]
        return sp.coo_matrix((np.r_[coo.data, coo.data] / 2, (rows, cols)), shape=X.shape), X
    if case == "int64":
        D = np.rint(4 * X)
        return sp.csr_matrix(D.astype(np.int64)), D
    D = X.copy()
    if case == "empty_rows":
        D[[3, 17]] = 0.0
    elif case == "empty_columns":
        D[:, [2, 5]] = 0.0
    else:
        raise AssertionError(case)
    return sp.csr_matrix(D), D


def _outcome(name: str, X):
    try:
        return _run(SPARSE_CALLS[name], X), None
    except ValueError as exc:
        return None, exc


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", [*SCALES, *DEGENERATE, *SPARSE_ONLY])
@pytest.mark.parametrize("name", list(SPARSE_CALLS))
def test_sparse_matrix(name, case, seed):
    S, D = _sparse_case(seed, case)
    got, err = _outcome(name, S)
    if err is not None:
        assert ARGUMENTS.search(str(err)), f"{name} on sparse {case}: the error names no argument: {err}"
    if D is None:
        assert err is not None and "NaN among its stored values" in str(err), f"{name} took NaN: {err}"
        return
    ref, ref_err = _outcome(name, D)
    if ref_err is not None or err is not None:
        assert (ref_err is None) == (err is None), f"{name} on {case}: dense {ref_err!r}, sparse {err!r}"
        return
    _check_properties(name, got)
    for key, (value, _, kind) in got.items():
        want = np.asarray(ref[key][0], dtype=float)
        if kind[0] in ("rows", "vector"):
            assert _same_up_to_sign(np.asarray(value, dtype=float), want), f"{name} on {case}: {key} differs"
            continue
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(value), finite, err_msg=f"{name} on {case}: {key}")
        np.testing.assert_allclose(
            np.asarray(value, dtype=float)[finite],
            want[finite],
            rtol=1e-6,
            atol=1e-9 * float(np.max(np.abs(want[finite]), initial=0.0)),
            err_msg=f"{name} on sparse {case}: {key} differs from the dense answer",
        )
