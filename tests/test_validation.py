"""Input checks: clean values out, ValueErrors that name the argument."""

import warnings

import numpy as np
import pytest

from repro._validation import (
    ConvergenceWarning,
    check_array,
    check_cardinalities,
    check_cardinality,
    check_int,
    check_n_components,
    check_random_state,
    check_real,
    check_symmetric,
    check_vector,
    warn_not_converged,
)


def test_check_array_returns_c_contiguous_float64():
    X = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    out = check_array(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, X)
    copy = check_array(out, copy=True)
    assert copy is not out


@pytest.mark.parametrize(
    "X, match",
    [
        (np.ones(3), "must be 2-D"),
        (np.ones((1, 2, 2)), "must be 2-D"),
        ([["a", "b"]], "numeric"),
        (np.array([[1.0, np.inf]]), r"infinite values \(rows 0, columns 1\)"),
        (np.array([[1.0, np.nan]]), r"NaN \(rows 0, columns 1\)"),
    ],
)
def test_check_array_errors(X, match):
    with pytest.raises(ValueError, match=match):
        check_array(X, "X")


def test_check_array_nan_allowed_and_shape_limits():
    X = np.array([[1.0, np.nan], [2.0, 3.0]])
    assert np.isnan(check_array(X, allow_nan=True)[0, 1])
    with pytest.raises(ValueError, match="Y has 2 sample"):
        check_array(X, "Y", allow_nan=True, min_samples=3)
    with pytest.raises(ValueError, match="None"):
        check_array(None)


def test_check_int_and_real():
    assert check_int(3.0, "k") == 3
    assert check_int(np.int64(4), "k", low=1, high=4) == 4
    for bad in (True, 2.5, "3"):
        with pytest.raises(ValueError, match="k must be an integer"):
            check_int(bad, "k")
    with pytest.raises(ValueError, match=r"k must be in \[1, 5\]; got 6"):
        check_int(6, "k", low=1, high=5)
    assert check_real(2, "alpha", low=0, low_inclusive=False) == 2.0
    with pytest.raises(ValueError, match="alpha must be in"):
        check_real(0.0, "alpha", low=0, low_inclusive=False)
    with pytest.raises(ValueError, match="finite"):
        check_real(np.nan, "alpha")


def test_check_cardinality_and_n_components():
    np.testing.assert_array_equal(check_cardinality(None, 5, 2), [5, 5])
    np.testing.assert_array_equal(check_cardinality(3, 5, 2), [3, 3])
    np.testing.assert_array_equal(check_cardinality([1, 4], 5, 2), [1, 4])
    with pytest.raises(ValueError, match=r"cardinality must be in \[1, 5\]"):
        check_cardinality(0, 5)
    with pytest.raises(ValueError, match=r"cardinality\[1\]"):
        check_cardinality([1, 9], 5, 2)
    with pytest.raises(ValueError, match="one per component"):
        check_cardinality([1, 2, 3], 5, 2)
    assert check_n_components(2, 10, 3) == 2
    with pytest.raises(ValueError, match="n_components"):
        check_n_components(4, 10, 3)


def test_check_cardinalities_path():
    np.testing.assert_array_equal(check_cardinalities(3, 5), [3])
    np.testing.assert_array_equal(check_cardinalities(range(1, 4), 5), [1, 2, 3])
    with pytest.raises(ValueError, match="empty"):
        check_cardinalities([], 5)
    with pytest.raises(ValueError, match=r"cardinalities must be in \[1, 5\]; got 6"):
        check_cardinalities([2, 6], 5)


def test_check_random_state():
    a = check_random_state(7).random(3)
    b = check_random_state(7).random(3)
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(1)
    assert check_random_state(g) is g
    assert isinstance(check_random_state(np.random.RandomState(0)), np.random.Generator)
    for bad in ("seed", -1, 1.5, True):
        with pytest.raises(ValueError, match="random_state"):
            check_random_state(bad)


def test_check_symmetric_and_vector():
    C = check_symmetric([[1.0, 2.0], [2.0 + 1e-12, 1.0]])
    np.testing.assert_array_equal(C, C.T)
    with pytest.raises(ValueError, match="square"):
        check_symmetric(np.ones((2, 3)))
    with pytest.raises(ValueError, match="w must have length 2"):
        check_vector([1.0, 2.0, 3.0], "w", 2)
    with pytest.raises(ValueError, match="NaN"):
        check_vector([np.nan], "w")


def test_warn_not_converged_is_a_convergence_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_not_converged("EMPCA", 10, 1e-6)
    assert caught and issubclass(caught[0].category, ConvergenceWarning)
    assert "max_iter" in str(caught[0].message)
    assert caught[0].filename == __file__  # attributed to the caller outside the package


def test_convergence_warning_points_at_user_code_through_decorators():
    from repro import SensiblePCA

    X = np.random.default_rng(0).standard_normal((30, 6))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SensiblePCA(n_components=2, max_iter=2, random_state=0).fit(X)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert conv and conv[0].filename == __file__
