"""Input checks shared by every public function.

Each check returns a clean value (float64 arrays, ints, a ``np.random.Generator``) or raises a
``ValueError`` that names the argument and says how to fix it. Kernels never validate: the public
wrapper calls these first, then hands plain arrays to the kernel.

What every array input gets (:func:`check_array`, :func:`as_float`): complex values are refused (never cut
to their real part), scipy sparse matrices are refused with the reason and what to pass (the estimators
that fit them without a dense copy take them through :func:`check_sparse` instead), ``pd.NA``,
pandas nullable dtypes and the masked entries of a ``numpy.ma.MaskedArray`` read as NaN (a missing value
where the method takes them, refused with the reason where it does not), non-numeric entries raise
:class:`NonNumericError` (a ``TypeError`` and a ``ValueError``). Shape errors use scikit-learn's
wording, so its estimator checks pass.

Scale (:func:`check_scale`, :func:`unscale`; the decorator :func:`repro._rescale.rescaled`): the PCA
methods are scale-equivariant,
so data whose largest magnitude is outside ``[2^-256, 2^256]`` are fitted as ``X / s`` (``s`` a power of
two: exact) and the outputs scaled back; outputs float64 cannot hold (variances above 1.8e308 or below
the smallest normal 2.2e-308) are refused with that reason. Ordinarily scaled data are untouched.
NSPCA is not scale-invariant (its penalties are absolute) and is never rescaled.

This module is the bottom of the library: it imports nothing from :mod:`repro` (``tests/test_imports.py``
holds it there), so the data sources (:mod:`repro._chunked`) and :mod:`repro.linalg` sit above it.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_SKLEARN_DIR = os.path.dirname(os.path.abspath(sys.modules["sklearn"].__file__)) + os.sep

__all__ = [
    "ConvergenceWarning",
    "NonNumericError",
    "as_float",
    "check_array",
    "check_bool",
    "check_cardinalities",
    "check_cardinality",
    "check_covariance_args",
    "check_features",
    "check_has_variance",
    "check_int",
    "check_latent",
    "check_n_components",
    "check_n_features",
    "check_psd",
    "check_random_state",
    "check_real",
    "check_scale",
    "check_sparse",
    "check_symmetric",
    "check_vector",
    "is_dask",
    "is_sparse",
    "refuse_dask",
    "unscale",
    "warn_not_converged",
]


class NonNumericError(TypeError, ValueError):
    """Raised when an input cannot be converted to float64 (strings, dicts, ...).

    Both a ``TypeError`` (what scikit-learn's checks expect for non-numeric data) and a ``ValueError``
    (what every other input error of this library is), so either ``except`` clause catches it.
    """


# Data magnitudes outside [2^-_SAFE_EXP, 2^_SAFE_EXP] are rescaled by a power of two before fitting:
# squares and sums of squares of entries in this window are normal floats for any realistic size.
_SAFE_EXP = 256


def _as_float_array(X, name: str, *, allow_masked: bool = False) -> np.ndarray:
    """``X`` as a float64 ndarray, refusing complex, sparse and non-numeric input with the true reason.

    The masked entries of a ``numpy.ma.MaskedArray`` become NaN (a missing value) with ``allow_masked``,
    and are refused otherwise: ``np.asarray`` would drop the mask and fit the fill values as data.
    """
    if X is None:
        raise ValueError(f"{name} is None; pass a 2-D array of shape (n_samples, n_features).")
    refuse_dask(X, name)
    if isinstance(X, np.ma.MaskedArray):
        return _unmasked(X, name, allow_masked)
    if type(X).__name__ == "Covariance" and type(X).__module__.startswith("repro"):  # linalg is above
        raise ValueError(
            f"{name} is a repro.Covariance, which this method does not take; pass the data rows, or "
            f"{name}.dense() where the method takes a covariance matrix (precomputed=True)."
        )
    if _is_sparse(X):
        raise ValueError(
            f"{name} is a scipy sparse matrix ({type(X).__name__}), which this method does not take: it "
            f"reads the entries of a dense array (or a dense covariance) directly. Pass {name}.toarray() if "
            "it fits in memory, or fit EMPCA, SensiblePCA, EMSparsePCA, GSPPCA, NSPCA or SpannogramPCA, "
            f"which take sparse matrices without a dense copy (and repro.Covariance.from_data({name}) as "
            "the covariance operator)."
        )
    pd = sys.modules.get("pandas")  # pandas objects only exist if pandas was imported
    if pd is not None and isinstance(X, (pd.DataFrame, pd.Series)):
        dtypes = X.dtypes if isinstance(X, pd.DataFrame) else [X.dtype]
        if any(getattr(d, "kind", "") == "c" for d in dtypes):
            X = X.to_numpy()  # refused below, with the reason (a float cast would drop the imaginary part)
        else:
            try:  # nullable dtypes and pd.NA become NaN (a missing value where the method takes them)
                return X.to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError):
                X = X.to_numpy()  # object columns: the checks below give the reason
    if not isinstance(X, np.ndarray):
        X = np.asarray(X)
    _refuse_complex(X, name)
    if X.dtype == object and pd is not None:
        na = np.asarray(np.frompyfunc(lambda v: v is pd.NA, 1, 1)(X), dtype=bool)
        if na.any():
            X = X.copy()
            X[na] = np.nan
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise NonNumericError(
            f"{name} must be a numeric 2-D array; converting it to float64 failed: {exc}"
        ) from None


def _unmasked(X: np.ma.MaskedArray, name: str, allow_masked: bool) -> np.ndarray:
    """A masked array as float64 with NaN at its masked entries (refused without ``allow_masked``)."""
    mask = np.ma.getmaskarray(X)
    if mask.any() and not allow_masked:
        rows = np.nonzero(mask)[0] if mask.ndim == 2 else np.flatnonzero(mask)
        where = f" (rows {_head(rows)})" if mask.ndim == 2 else ""
        raise ValueError(
            f"{name} is a masked array with {int(mask.sum())} masked entries{where}, and this method does "
            f"not support missing values; pass {name}.filled(value) to use a value in their place, drop "
            "those rows, or use EMPCA, SensiblePCA or EMSparsePCA (they fit masked entries as missing)."
        )
    arr = _as_float_array(np.ma.getdata(X), name)
    if mask.any():
        arr = np.array(arr, dtype=np.float64, copy=True)  # never write into the caller's data
        arr[mask] = np.nan
    return arr


def as_float(x, name: str) -> np.ndarray:
    """``x`` as a float64 ndarray (any shape), refusing complex, sparse and non-numeric input by name."""
    return _as_float_array(x, name)


def is_dask(X) -> bool:
    """Whether ``X`` is a ``dask.array.Array`` (without importing Dask when it is not loaded)."""
    mod = type(X).__module__
    if not mod.startswith("dask"):
        return False
    import dask.array as da

    return isinstance(X, da.Array)


def _is_sparse(X) -> bool:
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(X)


def is_sparse(X) -> bool:
    """Whether ``X`` is a scipy sparse matrix or array (without importing scipy.sparse when it is not
    loaded)."""
    return _is_sparse(X)


def check_sparse(X, name: str = "X", *, min_samples: int = 1, min_features: int = 1):
    """``X``, a scipy sparse matrix, as a CSR or CSC matrix of float64 values, never densified.

    CSR and CSC are kept in their format (the products of the EM read either); every other format (COO,
    LIL, DOK, BSR, DIA) is converted to CSR once, duplicate entries of a COO summed as scipy does. Integer
    and boolean values are cast to float64 (a copy of the stored values only); float64 input is used as
    it is, not copied. Stored zeros are entries like any other (they change no product). The unstored
    entries are zeros, not missing values, so NaN among the stored values is refused (missing entries are
    supported in dense input only, as NaN); infinite values are refused; complex values too. Duplicate
    entries of a non-canonical CSR or CSC matrix are summed on a copy (what its products mean).

    Parameters
    ----------
    X : scipy sparse matrix or array, shape (n_samples, n_features)
    name : str
        The argument's name, used in error messages.
    min_samples, min_features : int
        Smallest accepted shape.

    Returns
    -------
    scipy.sparse.csr_matrix or csc_matrix (or the ``*_array`` forms)
        Float64 values, canonical format (sorted indices, no duplicates).
    """
    import scipy.sparse as sp

    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features); got a sparse array of shape {X.shape}")
    if X.format not in ("csr", "csc"):
        X = X.tocsr()
    kind = X.dtype.kind
    if kind == "c":
        raise ValueError(
            f"{name} is a sparse matrix of complex values. Complex data not supported: these methods are "
            f"defined for real data. Pass {name}.real if the imaginary part is round-off."
        )
    if kind not in "biuf":
        raise NonNumericError(f"{name} is a sparse matrix of dtype {X.dtype}; pass real numbers.")
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    if not X.has_canonical_format:  # duplicate entries summed, on a copy (never the caller's matrix)
        X = X.copy()
        X.sum_duplicates()
    n, p = X.shape
    if n < min_samples:
        raise ValueError(
            f"{name} has {n} sample(s) (shape={X.shape}) while a minimum of {min_samples} is required; "
            "pass more samples."
        )
    if p < min_features:
        raise ValueError(
            f"{name} has {p} feature(s) (shape={X.shape}) while a minimum of {min_features} is required; "
            "pass more features."
        )
    values = X.data
    if not _all_finite(values):
        coo = sp.coo_matrix(X)
        bad = ~np.isfinite(coo.data)
        rows, cols = coo.row[bad], coo.col[bad]
        if np.isnan(coo.data[bad]).any():
            raise ValueError(
                f"{name} is a sparse matrix with NaN among its stored values (rows {_head(rows)}, columns "
                f"{_head(cols)}). Missing values are supported in dense input only (NaN in a NumPy array; "
                "in a sparse matrix the entries not stored are zeros, not missing): impute the NaN (e.g. "
                f"set {name}.data[np.isnan({name}.data)] = 0 if they mean zero), or pass "
                f"{name}.toarray() to EMPCA, SensiblePCA or EMSparsePCA, which fit NaN as missing."
            )
        raise ValueError(
            f"{name} holds infinite values (rows {_head(rows)}, columns {_head(cols)}); "
            "remove or replace them before fitting."
        )
    return X


def _refuse_complex(X: np.ndarray, name: str) -> None:
    kind = X.dtype.kind
    if kind == "c" or (kind == "O" and any(isinstance(v, complex) for v in X.ravel().tolist())):
        raise ValueError(
            f"{name} holds complex values. Complex data not supported: these methods are defined for real "
            f"data. Pass {name}.real if the imaginary part is round-off, or np.hstack([{name}.real, "
            f"{name}.imag]) to treat both parts as features."
        )


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

    Complex input, scipy sparse matrices and non-numeric entries are refused with the reason (a
    :class:`NonNumericError`, also a ``TypeError``, for the last); ``pd.NA`` (pandas nullable dtypes or
    object arrays) counts as NaN.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
    name : str
        The argument's name, used in error messages.
    allow_nan : bool
        Whether NaN marks a missing value (and the masked entries of a ``numpy.ma.MaskedArray`` are
        missing, read as NaN; without it they are refused). Infinite values are always refused.
    min_samples, min_features : int
        Smallest accepted shape.
    copy : bool
        Always return a new array (the caller will modify it).
    """
    return _check_array(
        X, name, allow_nan=allow_nan, min_samples=min_samples, min_features=min_features, copy=copy
    )[0]


def _check_array(X, name, *, allow_nan, min_samples, min_features=1, copy=False) -> tuple[np.ndarray, bool]:
    """:func:`check_array`, and whether every entry is finite (``False``: NaN, with ``allow_nan``), which
    its one pass found out."""
    arr = _as_float_array(X, name, allow_masked=allow_nan)
    if copy and (arr is X or not arr.flags.owndata):  # e.g. a view of a DataFrame's block
        arr = arr.copy()
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features); got {arr.ndim}-D shape {arr.shape}. Reshape your "
            f"data: {name}.reshape(1, -1) for a single sample, {name}.reshape(-1, 1) for a single feature."
        )
    n, p = arr.shape
    if n < min_samples:
        raise ValueError(
            f"{name} has {n} sample(s) (shape={arr.shape}) while a minimum of {min_samples} is required; "
            "pass more samples."
        )
    if p < min_features:
        raise ValueError(
            f"{name} has {p} feature(s) (shape={arr.shape}) while a minimum of {min_features} is required; "
            "pass more features."
        )
    finite = _all_finite(arr)
    if not finite:
        finite_entries = np.isfinite(arr)
        nan = np.isnan(arr)
        inf = ~finite_entries & ~nan
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
    return np.ascontiguousarray(arr), finite


def check_n_features(estimator, X, name: str = "X", *, sparse: bool = False, **check_array_kwargs):
    """``X`` for a method of a fitted estimator: its columns checked as scikit-learn checks them, its
    values converted by :func:`check_array` (keywords passed on), or with ``sparse=True`` a scipy sparse
    ``X`` by :func:`check_sparse` (kept sparse).

    The column names of a DataFrame against ``feature_names_in_`` first (renamed, reordered, missing or
    unseen columns are refused naming them, as scikit-learn's own estimators do), then the conversion,
    then the number of columns against ``n_features_in_`` (scikit-learn's ``_check_feature_names`` and
    ``_check_n_features``, the two halves of ``validate_data(..., skip_check_array=True, reset=False)``,
    around the project's own conversion).
    """
    from sklearn.utils.validation import _check_feature_names, _check_n_features

    _check_feature_names(estimator, X, reset=False)
    if sparse and _is_sparse(X):
        arr = check_sparse(X, name)
    else:
        arr = check_array(X, name, **check_array_kwargs)
    _check_n_features(estimator, arr, reset=False)
    return arr


def check_features(estimator, raw) -> None:
    """Record ``n_features_in_`` and, for a DataFrame with string column names, ``feature_names_in_``
    (scikit-learn's ``validate_data(..., skip_check_array=True, reset=True)``); for a ``fit``.

    The project's own conversion (:func:`check_array`, Dask and missing values) still validates the
    values; this only records the columns, so that :func:`check_n_features` can check them later.
    """
    from sklearn.utils.validation import validate_data

    if hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_  # a refit on data without names forgets the old names
    validate_data(estimator, raw, skip_check_array=True, reset=True)


def check_latent(Z, n_components: int, name: str = "Z") -> np.ndarray:
    """Return latent coordinates ``Z`` (n_samples, n_components) for ``inverse_transform``."""
    Z = check_array(Z, name)
    if Z.shape[1] != n_components:
        raise ValueError(
            f"{name} has {Z.shape[1]} columns but the model has {n_components} components; pass {name} of "
            f"shape (n_samples, {n_components}), e.g. the output of transform."
        )
    return Z


def _max_abs(X: np.ndarray) -> float:
    """``max |X|`` over the non-NaN entries (0 when there are none) without an ``|X|`` temporary."""
    top = max(float(X.max()), -float(X.min()))
    if top != top:  # NaN present: the NaN-aware (slower) reductions
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all NaN
            top = max(float(np.nanmax(X)), -float(np.nanmin(X)))
    return top if top == top else 0.0


def check_scale(X: np.ndarray, name: str = "X") -> float:
    """Power-of-two factor ``s`` to divide ``X`` by before fitting (1.0 for ordinarily scaled data).

    Every method here is scale-equivariant in its data (loadings unchanged, variances times ``s^2``),
    but products and sums of squares of entries near 1e-160 underflow and near 1e160 overflow, which
    gives wrong results or misleading errors. When the largest magnitude of ``X`` (NaN ignored) is
    outside ``[2^-256, 2^256]`` the caller fits ``X / s`` with ``s`` the power of two nearest that
    magnitude (dividing by a power of two is exact) and multiplies the outputs back.
    """
    if not X.size:
        return 1.0
    return _scale_for(_max_abs(X))


def _scale_for(top: float) -> float:
    """The power of two for data of largest magnitude ``top`` (1.0 inside the safe window or not finite)."""
    if not (0.0 < top < np.inf) or 2.0**-_SAFE_EXP <= top <= 2.0**_SAFE_EXP:
        return 1.0
    # math.frexp is exact (no log2 rounding); the exponent is capped at 1023 (2^1024 overflows: data with
    # max|X| >= 2^1023.5 = 1.34e308 would round up to it) and floored at -1074 (the smallest subnormal)
    exponent = min(max(math.frexp(top)[1], -1074), 1023)
    return math.ldexp(1.0, exponent)


def unscale(value, s: float, power: int, what: str, name: str = "X", *, underflow: bool = True):
    """``value * s**power`` (an output of a fit on ``X / s``), refusing an overflow with the true reason.

    With ``underflow=False`` a non-zero value that falls below the smallest normal float64 (2.2e-308:
    0, or subnormal with fewer than 16 significant digits) is refused as well; that is for the variances,
    which every later use (ratios, the SensiblePCA density) needs to full precision.
    """
    if s == 1.0:
        return value
    out = np.asarray(value, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        for _ in range(power):  # s**power itself may overflow while the product does not
            out = out * s
    if not np.all(np.isfinite(out) | ~np.isfinite(value)):
        raise ValueError(
            f"{name} is too large for float64: its {what} (about {float(np.nanmax(np.abs(value))):.3g} x "
            f"{s:.3g}^{power}) overflow float64 (max 1.8e308). Divide {name} by a constant c before fitting "
            f"(these results scale as c^{power})."
        )
    if not underflow and np.any((np.abs(out) < np.finfo(np.float64).tiny) & (np.asarray(value) != 0)):
        raise ValueError(
            f"{name} is too small for float64: its {what} (about {float(np.nanmax(np.abs(value))):.3g} x "
            f"{s:.3g}^{power}) underflow below the smallest normal float64 (2.2e-308), where precision is "
            f"lost. Multiply {name} by a constant c before fitting (these results scale as c^{power})."
        )
    return out


def check_has_variance(X: np.ndarray, method: str, name: str = "X") -> None:
    """Refuse data whose columns are all constant (e.g. all zeros): no direction has any variance.

    NaN entries are ignored (a column of NaN is left to the method's own check).
    """
    if X.shape[0] < 2 or not X.size:  # too few samples: the caller's shape check says so
        return
    if np.any(X[1] != X[0]) and not np.isnan(X[:2]).any():
        return  # two different rows: some column varies (the usual case, decided in O(n_features))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        constant = np.nanmin(X, axis=0) == np.nanmax(X, axis=0)
    if bool(np.all(constant)):
        raise ValueError(
            f"{name} has no variance (every column is constant, e.g. all zeros), so {method} has no "
            "component to find; check the data."
        )


def _all_finite(arr: np.ndarray) -> bool:
    """Whether every entry is finite: one sum (no temporary array), the full test only if it is not."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = arr.sum()
    return bool(np.isfinite(total)) or bool(np.isfinite(arr).all())


def _asymmetry(M: np.ndarray, block: int = 512) -> float:
    """``max |M - M'|`` in row blocks (no ``p x p`` temporary)."""
    worst = 0.0
    for i in range(0, M.shape[0], block):
        worst = max(worst, float(np.max(np.abs(M[i : i + block] - M[:, i : i + block].T))))
    return worst


def check_covariance_args(data, matrix, *, psd: bool = True):
    """Validate the parts of a directly built :class:`repro.linalg.Covariance`; returns ``(data, matrix)``.

    ``data`` must be a finite 2-D float array (``C = data' data``); ``matrix`` a finite symmetric square
    matrix, positive semi-definite (:func:`check_psd`) unless ``psd=False`` (a matrix the library derived
    from a checked one: a deflation, a principal submatrix, a Gram matrix).
    The arrays are used as they are when already float64 (no copy).
    """
    if (data is None) == (matrix is None):
        raise ValueError("Covariance needs exactly one of data= or matrix=; use from_data or from_matrix.")
    if data is not None:
        arr = _as_float_array(data, "data")
        if arr.ndim != 2:
            raise ValueError(f"data must be 2-D (n_samples, n_features); got shape {arr.shape}.")
        if not _all_finite(arr):
            raise ValueError("data holds NaN or infinite values; a covariance factor must be finite.")
        return arr, None
    arr = _as_float_array(matrix, "matrix")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"matrix must be a square (n_features, n_features) array; got shape {arr.shape}.")
    if not _all_finite(arr):
        raise ValueError("matrix holds NaN or infinite values.")
    if arr.size and _asymmetry(arr) > 1e-8 * max(1.0, _max_abs(arr)):
        raise ValueError(
            "matrix must be symmetric; use Covariance.from_matrix((C + C.T) / 2) if the asymmetry is "
            "round-off."
        )
    if psd:
        check_psd(arr, "matrix")
    return None, arr


#: A matrix given as a covariance may have eigenvalues down to ``-PSD_RTOL * max|diag| * n_features``
#: (round-off of a product ``X'X``); below that it is refused as not positive semi-definite.
PSD_RTOL = 1e-10


def check_psd(M: np.ndarray, name: str = "C") -> None:
    """Refuse a symmetric matrix ``M`` given as a covariance whose smallest eigenvalue is below
    ``-tol``, ``tol = PSD_RTOL * max|diag(M)| * n_features`` (:data:`PSD_RTOL`): a covariance is positive
    semi-definite, and a negative eigenvalue would give negative variances.

    First a Cholesky factorization of ``M + tol I`` (a third of the flops of the eigenvalue's
    tridiagonalization): it succeeds, and ``M`` is accepted, when the smallest eigenvalue is above ``-tol``
    up to the factorization's round-off (``p eps ||M||``, under 1% of ``tol`` up to 4 10^5 features).
    Where it fails, the smallest eigenvalue (one LAPACK call) decides by the rule itself.
    """
    import scipy.linalg

    if not M.size:
        return
    top = float(np.max(np.abs(np.diag(M))))
    tol = PSD_RTOL * max(top, 1e-300) * M.shape[0]
    shifted = M + tol * np.eye(M.shape[0])
    try:
        scipy.linalg.cholesky(shifted, lower=True, overwrite_a=True, check_finite=False)
        return
    except np.linalg.LinAlgError:
        pass
    lo = float(scipy.linalg.eigh(M, eigvals_only=True, subset_by_index=[0, 0])[0])
    if lo < -tol:
        raise ValueError(
            f"{name} is not positive semi-definite (smallest eigenvalue {lo:.3g}, below the round-off "
            f"tolerance {PSD_RTOL:g} x max|diag| x n_features); a covariance must be. Pass a covariance "
            "(e.g. Covariance.from_data(data) or np.cov(data, rowvar=False)) or clip the negative "
            "eigenvalues."
        )


def refuse_dask(X, name: str = "X") -> None:
    """Refuse a ``dask.array`` where the data are needed in memory, instead of gathering it silently
    (``np.asarray`` would compute the whole array and copy it onto the client). Every method that fits a
    Dask array where it lies dispatches on :func:`is_dask` before converting its input, so the conversion
    (:func:`check_array`, :func:`as_float`) refuses the others: the baselines and the functions."""
    if is_dask(X):
        raise ValueError(
            f"{name} is a dask.array, which this method does not fit where it lies, and it does not gather "
            f"one silently. Pass {name}.compute() if it fits in memory, or use an estimator that fits Dask "
            "arrays where they lie (EMPCA, SensiblePCA, EMSparsePCA, NSPCA, SpannogramPCA, GSPPCA)."
        )


def check_vector(v, name: str, size: int | None = None) -> np.ndarray:
    """Return ``v`` as a finite float64 1-D array (of length ``size`` when given)."""
    arr = _as_float_array(v, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}.")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must have length {size}; got {arr.shape[0]}.")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds NaN or infinite values.")
    return np.ascontiguousarray(arr)


def check_symmetric(C, name: str = "C", *, tol: float = 1e-8, psd: bool = False) -> np.ndarray:
    """Return ``C`` as a finite symmetric float64 square matrix (symmetrized to round-off); with ``psd``
    also positive semi-definite (:func:`check_psd`: a matrix given as a covariance)."""
    arr = check_array(C, name)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square (n_features, n_features) matrix; got shape {arr.shape}.")
    scale = max(1.0, float(np.max(np.abs(arr))))
    if np.max(np.abs(arr - arr.T)) > tol * scale:
        raise ValueError(f"{name} must be symmetric; pass (C + C.T) / 2 if the asymmetry is round-off.")
    out = np.ascontiguousarray((arr + arr.T) / 2.0)
    if psd:
        check_psd(out, name)
    return out


def check_bool(value, name: str) -> bool:
    """Return ``value`` as a bool: ``True``, ``False`` or a NumPy bool, nothing else.

    ``bool(value)`` would take any object: ``nonneg="no"`` (a non-empty string) would be true and run the
    constrained method without a word, ``1`` or ``None`` would pass as a flag. scikit-learn's
    ``"boolean"`` parameter constraint refuses the same values in the estimators.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be True or False; got {value!r} ({type(value).__name__}).")


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


def check_n_components(
    n_components,
    n_samples: int | None,
    n_features: int,
    name: str = "n_components",
    *,
    high: int | None = None,
    why: str | None = None,
    shape: tuple | None = None,
) -> int:
    """The one rule for ``n_components``: an integer from 1 to ``min(n_samples, n_features)``, or to
    ``high`` where the method gives fewer (``why`` says why), refused in one wording everywhere.

    ``n_samples`` is None for a given covariance matrix (then the bound is ``n_features``). ``shape``: the
    shape of the user's ``X`` to name in the message, where the bound comes from something derived from
    it (a rank, a training fold); by default ``(n_samples, n_features)``.
    """
    k = check_int(n_components, name, low=1)
    limit = (n_features if n_samples is None else min(n_samples, n_features)) if high is None else high
    if k > limit:
        if shape is not None:
            shape = f"({', '.join(str(d) for d in shape)})"
        elif n_samples is not None:
            shape = f"({n_samples}, {n_features})"
        else:
            shape = f"({n_features}, {n_features})"
        what = "a covariance of shape" if n_samples is None else "X of shape"
        reason = why or "min(n_samples, n_features)"
        raise ValueError(
            f"{name}={k} is too large for {what} {shape}: it must be at most {max(limit, 0)} ({reason}); "
            f"lower {name} or pass more data."
        )
    return k


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
    # Point the warning at the user's line: the first frame outside this package and outside
    # scikit-learn (whose _fit_context wraps every fit).
    frame, level = sys._getframe(0), 1
    while frame is not None and frame.f_code.co_filename.startswith((_PACKAGE_DIR, _SKLEARN_DIR)):
        frame, level = frame.f_back, level + 1
    warnings.warn(msg, ConvergenceWarning, stacklevel=level)


def _head(idx: np.ndarray, n: int = 5) -> str:
    uniq = np.unique(idx)
    text = ", ".join(str(int(i)) for i in uniq[:n])
    return text + (f", ... ({uniq.size} in all)" if uniq.size > n else "")


def _range(low, high) -> str:
    return f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
