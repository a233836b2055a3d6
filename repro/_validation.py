"""Input checks shared by every public function.

Each check returns a clean value (float64 arrays, ints, a ``np.random.Generator``) or raises a
``ValueError`` that names the argument and says how to fix it. Kernels never validate: the public
wrapper calls these first, then hands plain arrays to the kernel.
"""

from __future__ import annotations

import numbers
import os
import sys
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

__all__ = [
    "ConvergenceWarning",
    "check_array",
    "check_cardinalities",
    "check_cardinality",
    "check_int",
    "check_n_components",
    "check_random_state",
    "check_real",
    "check_symmetric",
    "check_vector",
    "warn_not_converged",
]


def check_array(
    X,
    name: str = "X",
    *,
    allow_nan: bool = False,
    min_samples: int = 1,
    min_features: int = 1,
    copy: bool = False,
) -> np.ndarray:
    """Return ``X`` as a C-contiguous float64 2-D array, or raise a ValueError naming ``name``.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
    name : str
        The argument's name, used in error messages.
    allow_nan : bool
        Whether NaN marks a missing value. Infinite values are always refused.
    min_samples, min_features : int
        Smallest accepted shape.
    copy : bool
        Always return a new array (the caller will modify it).
    """
    if X is None:
        raise ValueError(f"{name} is None; pass a 2-D array of shape (n_samples, n_features).")
    try:
        arr = np.array(X, dtype=np.float64, copy=copy, order="C") if copy else np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a numeric 2-D array; converting it to float64 failed: {exc}"
        ) from None
    if arr.ndim != 2:
        hint = " Reshape a single sample with X.reshape(1, -1) or a single feature with X.reshape(-1, 1)."
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features); got {arr.ndim}-D shape {arr.shape}.{hint}"
        )
    n, p = arr.shape
    if n < min_samples:
        raise ValueError(f"{name} has {n} sample(s); at least {min_samples} are needed.")
    if p < min_features:
        raise ValueError(f"{name} has {p} feature(s); at least {min_features} are needed.")
    finite = np.isfinite(arr)
    if not finite.all():
        nan = np.isnan(arr)
        inf = ~finite & ~nan
        if inf.any():
            rows, cols = np.nonzero(inf)
            raise ValueError(
                f"{name} holds infinite values (rows {_head(rows)}, columns {_head(cols)}); "
                "remove or replace them before fitting."
            )
        if not allow_nan:
            rows, cols = np.nonzero(nan)
            raise ValueError(
                f"{name} holds NaN (rows {_head(rows)}, columns {_head(cols)}) and this method does not "
                "support missing values; impute them, drop those rows, or use EMPCA (its fit handles NaN as "
                "missing entries)."
            )
    return np.ascontiguousarray(arr)


def check_vector(v, name: str, size: int | None = None) -> np.ndarray:
    """Return ``v`` as a finite float64 1-D array (of length ``size`` when given)."""
    arr = np.asarray(v, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}.")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must have length {size}; got {arr.shape[0]}.")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds NaN or infinite values.")
    return np.ascontiguousarray(arr)


def check_symmetric(C, name: str = "C", *, tol: float = 1e-8) -> np.ndarray:
    """Return ``C`` as a finite symmetric float64 square matrix (symmetrized to round-off)."""
    arr = check_array(C, name)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square (n_features, n_features) matrix; got shape {arr.shape}.")
    scale = max(1.0, float(np.max(np.abs(arr))))
    if np.max(np.abs(arr - arr.T)) > tol * scale:
        raise ValueError(f"{name} must be symmetric; pass (C + C.T) / 2 if the asymmetry is round-off.")
    return np.ascontiguousarray((arr + arr.T) / 2.0)


def check_int(value, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int in ``[low, high]``, refusing bools and non-integral numbers."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer() and not isinstance(value, bool):
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer; got {value!r}.")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be in {_range(low, high)}; got {value}.")
    return value


def check_real(
    value,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Return ``value`` as a finite float within the given bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number; got {value!r}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value}.")
    bad_low = low is not None and (value < low if low_inclusive else value <= low)
    bad_high = high is not None and (value > high if high_inclusive else value >= high)
    if bad_low or bad_high:
        lo = "" if low is None else ("[" if low_inclusive else "(") + f"{low}"
        hi = "" if high is None else f"{high}" + ("]" if high_inclusive else ")")
        raise ValueError(f"{name} must be in {lo or '(-inf'}, {hi or 'inf)'}; got {value}.")
    return value


def check_n_components(n_components, n_samples: int, n_features: int, name: str = "n_components") -> int:
    """Return ``n_components`` checked against ``1..min(n_samples, n_features)``."""
    high = min(n_samples, n_features)
    return check_int(n_components, name, low=1, high=high)


def check_cardinality(cardinality, n_features: int, n_components: int = 1) -> np.ndarray:
    """Return one cardinality per component as an int64 array, each in ``1..n_features``.

    ``None`` means no sparsity constraint (cardinality = n_features).
    """
    if cardinality is None:
        return np.full(n_components, n_features, dtype=np.int64)
    if np.ndim(cardinality) == 0:
        k = check_int(cardinality, "cardinality", low=1, high=n_features)
        return np.full(n_components, k, dtype=np.int64)
    ks = list(cardinality)
    if len(ks) != n_components:
        raise ValueError(
            f"cardinality has {len(ks)} entries but n_components is {n_components}; pass one int for all "
            "components or one per component."
        )
    return np.array(
        [check_int(k, f"cardinality[{i}]", low=1, high=n_features) for i, k in enumerate(ks)], dtype=np.int64
    )


def check_cardinalities(cardinalities, n_features: int) -> np.ndarray:
    """Return a cardinality path (one int or a sequence) as a non-empty int64 array, each in 1..n_features."""
    ks = np.array(
        [check_int(k, "cardinalities", low=1, high=n_features) for k in np.atleast_1d(cardinalities)],
        dtype=np.int64,
    )
    if ks.size == 0:
        raise ValueError("cardinalities is empty; pass at least one cardinality.")
    return ks


def check_random_state(random_state) -> np.random.Generator:
    """Turn ``None``, an int, a ``SeedSequence`` or a ``Generator`` into a ``np.random.Generator``.

    A legacy ``np.random.RandomState`` is accepted and used to seed a new Generator, so that
    scikit-learn style code keeps working; the global NumPy state is never used.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, bool):
            raise ValueError(
                f"random_state must be None, an int or a np.random.Generator; got {random_state!r}."
            )
        if isinstance(random_state, numbers.Integral) and random_state < 0:
            raise ValueError(f"random_state must be a non-negative int; got {random_state}.")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise ValueError(f"random_state must be None, an int or a np.random.Generator; got {random_state!r}.")


def warn_not_converged(method: str, n_iter: int, tol: float, detail: str = "") -> None:
    """Emit the ConvergenceWarning every iterative method uses when it stops at ``max_iter``."""
    msg = f"{method} did not converge in {n_iter} iterations (tol={tol:g}); raise max_iter or loosen tol."
    if detail:
        msg = f"{msg} {detail}"
    # Point the warning at the user's line: the first frame outside this package.
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(msg, ConvergenceWarning, stacklevel=level)


def _head(idx: np.ndarray, n: int = 5) -> str:
    uniq = np.unique(idx)
    text = ", ".join(str(int(i)) for i in uniq[:n])
    return text + (f", ... ({uniq.size} in all)" if uniq.size > n else "")


def _range(low, high) -> str:
    return f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
