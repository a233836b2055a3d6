"""The EM families' doors: scikit-learn's parameter validation on every public function and estimator, and
the path of ``X`` through ``EMSparsePCA.fit`` down to its kernels."""

import importlib
import os
import sys

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

import repro
from repro.em_pca import (
    EMPCA,
    SensiblePCA,
    em_pca,
    em_pca_blocks,
    ppca_closed_form,
    sensible_pca,
    sensible_pca_blocks,
    subspace_sin,
)
from repro.em_sparse_pca import (
    EMSparsePCA,
    em_sparse_pca,
    em_sparse_pca_path,
    penalized_mstep,
    renormalize_on_support,
)

X = np.random.default_rng(0).standard_normal((40, 6))
W = np.linalg.qr(np.random.default_rng(1).standard_normal((6, 2)))[0]

#: (function, a call with one argument outside its constraints, the argument's name)
BAD_CALLS = [
    (em_pca, lambda: em_pca(X, n_components="two"), "n_components"),
    (sensible_pca, lambda: sensible_pca(X, 1, algorithm="newton"), "algorithm"),
    (ppca_closed_form, lambda: ppca_closed_form(X, 0), "n_components"),
    (em_pca_blocks, lambda: em_pca_blocks([X], 1, tol=-1.0), "tol"),
    (sensible_pca_blocks, lambda: sensible_pca_blocks([X], 1, max_iter=0), "max_iter"),
    (subspace_sin, lambda: subspace_sin(W, 1.0), "B"),
    (em_sparse_pca, lambda: em_sparse_pca("X", 1), "X"),
    (em_sparse_pca, lambda: em_sparse_pca(X, 1, cardinality=2, nonneg="no"), "nonneg"),
    (em_sparse_pca_path, lambda: em_sparse_pca_path(X, [2], operator="gram"), "operator"),
    (penalized_mstep, lambda: penalized_mstep(X[0], W, -1.0), "rho"),
    (renormalize_on_support, lambda: renormalize_on_support(X, "w"), "w"),
]


def _public(module):
    return [getattr(module, name) for name in module.__all__]


def test_every_public_function_of_both_families_is_checked_here():
    functions = {
        f
        for module in map(importlib.import_module, ("repro.em_pca", "repro.em_sparse_pca"))
        for f in _public(module)
        if callable(f) and not isinstance(f, type)
    }
    assert functions == {f for f, _, _ in BAD_CALLS}


@pytest.mark.parametrize("function, call, argument", BAD_CALLS, ids=lambda v: getattr(v, "__name__", None))
def test_public_functions_refuse_a_parameter_outside_its_constraints(function, call, argument):
    with pytest.raises(InvalidParameterError, match=f"'{argument}' parameter of {function.__name__}"):
        call()


@pytest.mark.parametrize("cls", [EMPCA, SensiblePCA, EMSparsePCA])
def test_every_estimator_parameter_has_a_constraint(cls):
    assert set(cls._parameter_constraints) == set(cls().get_params())


def test_the_callback_sees_every_iteration_and_changes_no_result():
    calls = []
    kw = dict(cardinality=3, n_restarts=1, init="random", renormalize=False, random_state=0, certify=False)
    plain = EMSparsePCA(1, **kw).fit(X)
    seen = EMSparsePCA(1, callback=lambda t, W: calls.append((t, W.copy())), **kw).fit(X)
    assert [t for t, _ in calls] == list(range(1, plain.n_iter_[0] + 1))  # once per iteration
    np.testing.assert_allclose(calls[-1][1][0], seen.components_[0], rtol=0, atol=1e-12)  # the iterates
    assert (calls[0][1] != 0).sum() == 3
    np.testing.assert_allclose(seen.components_, plain.components_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(seen.explained_variance_, plain.explained_variance_, rtol=1e-12)


def _trace_fit():
    """The files of ``repro/`` that one small ``EMSparsePCA.fit`` (defaults, certify included) passes
    through, in the order the calls and returns move between them (runs of one file collapsed)."""
    root = os.path.dirname(repro.__file__)
    Xs = np.random.default_rng(0).standard_normal((60, 12)) @ np.diag(np.linspace(3, 0.5, 12))
    EMSparsePCA(1, cardinality=3, random_state=0).fit(Xs)  # imports and compilation outside the trace
    seq = []

    def profile(frame, event, arg):
        f = frame.f_code.co_filename
        if event in ("call", "return") and f.startswith(root):
            rel = os.path.relpath(f, root)
            if not seq or seq[-1] != rel:
                seq.append(rel)

    est = EMSparsePCA(1, cardinality=3, random_state=0)
    sys.setprofile(profile)
    try:
        est.fit(Xs)
    finally:
        sys.setprofile(None)
    return seq


def test_the_path_of_x_through_em_sparse_pca_fit():
    """Measured 14 files (2 of them the certified optimum's, 3 the shared validation and threads), and at
    most 20 returns to one file (linalg.py). The goal is 8 files: this bound only keeps it from growing."""
    seq = _trace_fit()
    returns = {f: seq.count(f) - 1 for f in set(seq)}
    assert "em_sparse_pca/_kernels.py" in returns  # down to the kernels
    assert len(returns) <= 14, sorted(returns)
    assert max(returns.values()) <= 40, returns
