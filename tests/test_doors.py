"""The doors of the spannogram, NSPCA and GSPPCA: scikit-learn's parameter validation on every public
function and estimator, X checked once per public call, and the public steps equal to the kernels they wrap.
"""

from __future__ import annotations

import importlib
import inspect
import sys

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import InvalidParameterError

import repro

# ``repro.nspca`` is the function (``repro/__init__`` binds it): the packages are imported by name
spannogram_pkg, nspca_pkg, gsppca_pkg = (
    importlib.import_module(f"repro.{m}") for m in ("spannogram", "nspca", "gsppca")
)
PACKAGES = (spannogram_pkg, nspca_pkg, gsppca_pkg)
PUBLIC = [(pkg.__name__, name) for pkg in PACKAGES for name in pkg.__all__]


def _obj(module, name):
    return getattr(sys.modules[module], name)


@pytest.mark.parametrize(("module", "name"), PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_every_public_name_is_validated_by_scikit_learn(module, name):
    """A function carries ``validate_params`` with a constraint for each of its parameters; an estimator
    ``_parameter_constraints`` for each of its ``get_params``."""
    obj = _obj(module, name)
    if inspect.isclass(obj):
        if issubclass(obj, BaseEstimator):
            assert set(obj._parameter_constraints) == set(obj().get_params())
        return
    if not callable(obj):
        return  # a constant (EVIDENCE_TIE)
    constraints = getattr(obj, "_skl_parameter_constraints", None)
    assert constraints is not None, f"{module}.{name} has no validate_params"
    assert set(constraints) == set(inspect.signature(obj).parameters)


BAD = {
    "spannogram_path": lambda X: repro.spannogram_path(X, [2], net="nets"),
    "spannogram_bound": lambda X: repro.spannogram_bound(X, 2, spectral_only="yes"),
    "spannogram_exact": lambda X: repro.spannogram_exact(X, 2, rank=0),
    "rank1_solver": lambda X: repro.rank1_solver(X[0], 2, nonneg=1),
    "rho_d": lambda X: repro.rho_d([2.0, 1.0], 1, 1.5),
    "nspca": lambda X: repro.nspca(X, 1, alpha=-1.0),
    "nspca_objective": lambda X: repro.nspca_objective(X, np.ones(8), alpha=1.0, beta=-1.0),
    "nspca_for_cardinality": lambda X: repro.nspca_for_cardinality(X, 3, alpha=1.0, n_restarts=0),
    "nspca_for_min_angle": lambda X: repro.nspca_for_min_angle(X, 2, 30.0, ratio=1.0),
    "gsppca_vem": lambda X: repro.gsppca_vem(X, 1, tol=-1.0),
    "log_evidence": lambda X: repro.log_evidence(X, [0, 1], n_components=1, sigma1="mle"),
    "evidence_path": lambda X: repro.evidence_path(X, np.arange(8), n_components=0),
    "make_globally_sparse": lambda X: gsppca_pkg.make_globally_sparse(10, 5, 1, 2, sigma=-1.0),
}
NAMED = {
    "spannogram_path": "net",
    "spannogram_bound": "spectral_only",
    "spannogram_exact": "rank",
    "rank1_solver": "nonneg",
    "rho_d": "rank",
    "nspca": "alpha",
    "nspca_objective": "beta",
    "nspca_for_cardinality": "n_restarts",
    "nspca_for_min_angle": "ratio",
    "gsppca_vem": "tol",
    "log_evidence": "sigma1",
    "evidence_path": "n_components",
    "make_globally_sparse": "sigma",
}


@pytest.mark.parametrize("call", list(BAD))
def test_a_bad_parameter_is_refused_by_name(call):
    X = np.random.default_rng(0).standard_normal((20, 8))
    with pytest.raises(InvalidParameterError, match=f"'{NAMED[call]}' parameter of {call.split('.')[-1]}"):
        BAD[call](X)


# --------------------------------------------------------------------------- X checked once per public call
def _fits():
    from repro import (
        GSPPCA,
        NSPCA,
        SpannogramPCA,
        evidence_path,
        gsppca_vem,
        log_evidence,
        nspca,
        nspca_for_cardinality,
        nspca_for_min_angle,
        nspca_objective,
        spannogram_bound,
        spannogram_exact,
        spannogram_path,
    )
    from repro.gsppca import log_density

    return {
        "SpannogramPCA.fit": lambda X: SpannogramPCA(2, cardinality=3, n_samples=200, random_state=0).fit(X),
        "spannogram_path": lambda X: spannogram_path(X, [2, 3], n_samples=200, random_state=0),
        "spannogram_bound": lambda X: spannogram_bound(X, [2, 3], n_samples=200),
        "spannogram_exact": lambda X: spannogram_exact(X, 3),
        "NSPCA.fit": lambda X: NSPCA(2, alpha=10.0, random_state=0).fit(X),
        "nspca": lambda X: nspca(X, 2, alpha=10.0, random_state=0),
        "nspca_objective": lambda X: nspca_objective(X, np.ones((8, 1)), alpha=1.0),
        "nspca_for_cardinality": lambda X: nspca_for_cardinality(
            X, 4, alpha=10.0, n_restarts=1, exact=False, random_state=0
        ),
        "nspca_for_min_angle": lambda X: nspca_for_min_angle(X, 2, 80.0, random_state=0, strict=False),
        "GSPPCA.fit": lambda X: GSPPCA(1, random_state=0).fit(X),
        "gsppca_vem": lambda X: gsppca_vem(X, 1, random_state=0),
        "log_evidence": lambda X: log_evidence(X, np.arange(4), n_components=1),
        "evidence_path": lambda X: evidence_path(X, np.arange(8), n_components=1),
        "log_density": lambda X: log_density(X, np.arange(4), n_components=1, alpha=1.0, sigma1=1.0),
    }


@pytest.mark.parametrize("kind", ["float64", "list"])
@pytest.mark.parametrize("call", list(_fits()))
def test_x_is_validated_once_per_public_call(monkeypatch, call, kind):
    import warnings

    from test_imports import _count_checks

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 8)) @ rng.standard_normal((8, 8))
    calls = _count_checks(monkeypatch, X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a search that stops short warns; the count is what is tested
        _fits()[call](X.tolist() if kind == "list" else X)
    assert len(calls) == 1, f"{call} checked X {len(calls)} times"


# --------------------------------------------------------------------------- the public steps
def test_all_k_pass_is_the_kernel_on_given_samples():
    """``all_k_pass`` gives what the NumPy twin of the kernel gives on the same samples (every k)."""
    import naive

    rng = np.random.default_rng(3)
    V = rng.standard_normal((12, 3))
    C = rng.standard_normal((40, 3))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    value, rank1, sample, sign = spannogram_pkg.all_k_pass(V, C, 12)
    ref = [np.full(12, -np.inf), np.zeros(12), np.zeros(12, dtype=np.int64), np.ones(12, dtype=np.int64)]
    naive.allk_pass(V, C, 12, True, *ref)
    np.testing.assert_allclose(value, ref[0], rtol=1e-12)
    np.testing.assert_allclose(rank1, ref[1], rtol=1e-12)
    # the sample attaining a value: ties between samples that pick the same support follow round-off
    for k, (i, g) in enumerate(zip(sample, sign, strict=True), start=1):
        a = g * (V @ C[i])
        top = np.argsort(-a, kind="stable")[:k]
        top = top[a[top] > 0]
        x = np.zeros(12)
        x[top] = a[top] / np.linalg.norm(a[top])
        assert np.isclose(np.sum((V.T @ x) ** 2), value[k - 1], rtol=1e-12)


def test_rank2_sweep_is_the_exact_optimum_of_a_rank2_matrix():
    """On ``A = V V'`` of rank 2 with non-negative entries the optimum of every ``k`` is the largest
    ``lambda_max(A[S, S])`` over supports ``|S| = k`` (Perron-Frobenius); brute force over all supports."""
    from itertools import combinations

    W = np.abs(np.random.default_rng(0).standard_normal((7, 2)))
    A = W @ W.T
    vals, U = np.linalg.eigh(A)
    V = U[:, -2:] * np.sqrt(np.clip(vals[-2:], 0, None))
    values, _ = spannogram_pkg.rank2_sweep(V, 7)
    best = [
        max(np.linalg.eigvalsh(A[np.ix_(S, S)])[-1] for S in combinations(range(7), k)) for k in range(1, 8)
    ]
    np.testing.assert_allclose(values, best, rtol=1e-10)


def test_nspca_sweep_is_the_naive_sweep():
    """One public sweep equals the plain-NumPy sweep of Algorithm 1 (``tests/naive.py``) to round-off."""
    import naive

    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 9))
    A = np.ascontiguousarray(X.T @ X)
    U0 = rng.random((9, 3))
    U = U0.copy()
    AU, G = A @ U, U.T @ U
    nspca_pkg.nspca_sweep(A, U, AU, G, alpha=50.0, beta=0.5)
    Ur = U0.copy()
    naive.nspca_sweep(A, Ur, A @ Ur, Ur.T @ Ur, 50.0, 0.5, 32)
    assert np.any(Ur != U0)  # the sweep moved entries
    np.testing.assert_allclose(U, Ur, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(AU, A @ U, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(G, U.T @ U, rtol=1e-10, atol=1e-12)
