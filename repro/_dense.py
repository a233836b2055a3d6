"""Dense arrays beneath :mod:`repro.linalg`: centring and standardizing data, the two deflations of a
dense covariance matrix, and the canonical sign of eigenvectors.

:mod:`repro.linalg` imports these and is where users find them (:func:`center`, :func:`standardize`,
:func:`projection_deflate`, :func:`schur_deflate`, :func:`canonical_sign`); each public function is
checked at its call (scikit-learn's ``validate_params``), and the library's own callers (the covariance
operator's deflation and eigenpairs, the methods' loops) call its unchecked core (``_projection_deflate``,
``_schur_deflate``, ``_canonical_sign``). This module imports nothing of the library but
:mod:`repro._validation`.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params

from ._validation import _all_finite, check_array, check_symmetric, check_vector

__all__ = ["canonical_sign", "center", "projection_deflate", "schur_deflate", "standardize"]


# --------------------------------------------------------------------------- preprocessing
@validate_params({"X": ["array-like"], "name": [str]}, prefer_skip_nested_validation=True)
def center(X, name: str = "X") -> tuple[np.ndarray, np.ndarray]:
    """Subtract the column means.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
        The data, one sample per row.
    name : str, default "X"
        The argument's name in error messages.

    Returns
    -------
    Xc : ndarray, shape (n_samples, n_features)
        ``X`` minus its column means (a new array).
    mean : ndarray, shape (n_features,)
        The column means.

    See Also
    --------
    standardize

    Examples
    --------
    >>> from repro import center
    >>> Xc, mean = center([[1.0, 2.0], [3.0, 6.0]])
    >>> Xc.tolist(), mean.tolist()
    ([[-1.0, -2.0], [1.0, 2.0]], [2.0, 4.0])
    """
    X = check_array(X, name)
    s = _column_scales(X)  # the sum of entries near 1.8e308 overflows: the mean of X / s, times s
    mean = X.mean(axis=0) if s is None else (X / s).mean(axis=0) * s
    with np.errstate(over="ignore"):
        Xc = X - mean
    if not _all_finite(Xc):
        raise ValueError(
            f"{name} is too large for float64: its centred values overflow (max 1.8e308). Divide {name} by a "
            "constant c first (the centred data scale as c)."
        )
    return Xc, mean


@validate_params(
    {"X": ["array-like"], "ddof": [Interval(Integral, 0, None, closed="left")], "name": [str]},
    prefer_skip_nested_validation=True,
)
def standardize(X, *, ddof: int = 1, name: str = "X") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Center each column and divide it by its standard deviation (``ddof=1`` by default).

    A constant column has no scale to divide by; it is refused with the list of such columns rather
    than turned into NaN or silently dropped.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
        The data, one sample per row; at least ``ddof + 1`` rows.
    ddof : int, default 1
        Delta degrees of freedom of the standard deviation (``n - ddof`` in the denominator).
    name : str, default "X"
        The argument's name in error messages.

    Returns
    -------
    Z : ndarray, shape (n_samples, n_features)
        Standardized data: column means 0, column standard deviations 1.
    mean, scale : ndarray, shape (n_features,)
        The column means and standard deviations, so that ``X = Z * scale + mean``.

    Raises
    ------
    ValueError
        If a column is constant (it is named, with how to drop it).

    See Also
    --------
    center

    Notes
    -----
    Sigg & Buhmann (2008, Section 5) and Asteris et al. (2014, Section 5) standardize their data sets
    this way before the variance-versus-cardinality curves.

    Examples
    --------
    >>> import numpy as np
    >>> from repro import standardize
    >>> Z, mean, scale = standardize(np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]))
    >>> Z[:, 0].tolist(), mean.tolist(), scale.tolist()
    ([-1.0, 0.0, 1.0], [2.0, 20.0], [1.0, 10.0])
    """
    X = check_array(X, name, min_samples=ddof + 1)
    # Squares of entries beyond 1e154 overflow and below 1e-154 underflow: standardize X / s (s a power
    # of two per column, exact), which gives the same Z, and scale mean and scale back.
    s = _column_scales(X)
    Xs = X if s is None else X / s
    mean = Xs.mean(axis=0)
    Xc = Xs - mean
    scale = np.sqrt(np.einsum("ij,ij->j", Xc, Xc) / (X.shape[0] - ddof))
    # A column is constant when its spread is round-off relative to its magnitude.
    tiny = scale <= 1e-12 * np.maximum(1.0, np.abs(mean))
    if tiny.any():
        cols = np.flatnonzero(tiny)
        shown = ", ".join(map(str, cols[:10])) + (f", ... ({cols.size} in all)" if cols.size > 10 else "")
        raise ValueError(
            f"{name} has constant column(s) {shown}, which cannot be standardized; drop them first "
            f"(e.g. X[:, X.std(axis=0) > 0])."
        )
    Z = Xc / scale
    if s is None:
        return Z, mean, scale
    with np.errstate(over="ignore"):
        scale = scale * s
    if not _all_finite(scale):
        raise ValueError(
            f"{name} is too large for float64: the standard deviation of column(s) "
            f"{np.flatnonzero(~np.isfinite(scale))[:10].tolist()} overflows (max 1.8e308). Divide {name} "
            "by a constant c first (the standard deviations scale as c)."
        )
    return Z, mean * s, scale


def _column_scales(X: np.ndarray) -> np.ndarray | None:
    """Per column, the power of two :func:`repro._validation.check_scale` would divide it by; ``None``
    when every column lies in the safe window ``[2^-256, 2^256]`` (or is zero), the usual case."""
    if not X.size:
        return None
    top = np.maximum(X.max(axis=0), -X.min(axis=0))
    inside = (top == 0) | ((top >= 2.0**-256) & (top <= 2.0**256))
    if inside.all():
        return None
    exponent = np.clip(np.frexp(top)[1], -1074, 1023)
    return np.where(inside, 1.0, np.ldexp(1.0, exponent))


# --------------------------------------------------------------------------- deflation (dense)
@validate_params({"C": ["array-like"], "w": ["array-like"]}, prefer_skip_nested_validation=True)
def projection_deflate(C, w) -> np.ndarray:
    """``(I - ww') C (I - ww')`` for unit ``w`` (Sigg & Buhmann 2008, Eq. 18; Mackey 2008, Eq. 2).

    Costs O(D^2): expanded as ``C - w (Cw)' - (Cw) w' + (w'Cw) w w'``.

    Parameters
    ----------
    C : array_like, shape (n_features, n_features)
        Symmetric matrix.
    w : array_like, shape (n_features,)
        Unit-norm direction to project out.

    Returns
    -------
    ndarray, shape (n_features, n_features)
        The deflated matrix; ``w`` is in its null space.

    See Also
    --------
    schur_deflate, repro.linalg.Covariance.deflate

    References
    ----------
    Sigg, C. D. & Buhmann, J. M. (2008). Expectation-maximization for sparse and non-negative PCA.
    ICML, Eq. 18. Mackey, L. (2008). Deflation methods for sparse PCA. NIPS 21, Eq. 2.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.linalg import projection_deflate
    >>> C = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> w = np.array([1.0, 1.0]) / np.sqrt(2.0)
    >>> print(np.round(projection_deflate(C, w), 6))
    [[ 0.5 -0.5]
     [-0.5  0.5]]
    """
    C = check_symmetric(C)
    return _projection_deflate(C, check_vector(w, "w", C.shape[0]))


def _projection_deflate(C: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`projection_deflate` of a symmetric float64 ``C`` and a float64 ``w``, unchecked: the
    library's own deflations (:meth:`repro.linalg.Covariance.deflate`, the methods' loops)."""
    Cw = C @ w
    wCw = float(w @ Cw)
    return C - np.outer(w, Cw) - np.outer(Cw, w) + wCw * np.outer(w, w)


@validate_params({"C": ["array-like"], "w": ["array-like"]}, prefer_skip_nested_validation=True)
def schur_deflate(C, w) -> np.ndarray:
    """``C - C w w' C / (w' C w)`` (Mackey 2008, Schur complement deflation).

    Leaves ``C`` positive semi-definite and ``C w = 0`` for any ``w``, not only eigenvectors.

    Parameters
    ----------
    C : array_like, shape (n_features, n_features)
        Symmetric positive semi-definite matrix.
    w : array_like, shape (n_features,)
        The direction whose explained variance is removed (any norm).

    Returns
    -------
    ndarray, shape (n_features, n_features)
        The deflated matrix (a copy of ``C`` when ``w' C w <= 0``).

    See Also
    --------
    projection_deflate

    References
    ----------
    Mackey, L. (2008). Deflation methods for sparse PCA. NIPS 21, Section 2.3 (Schur complement
    deflation).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.linalg import schur_deflate
    >>> C = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> w = np.array([1.0, 0.0])  # not an eigenvector
    >>> D = schur_deflate(C, w)
    >>> print(np.round(D, 6))
    [[0.  0. ]
     [0.  1.5]]
    >>> bool(np.allclose(D @ w, 0.0))
    True
    """
    C = check_symmetric(C)
    return _schur_deflate(C, check_vector(w, "w", C.shape[0]))


def _schur_deflate(C: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`schur_deflate` of a symmetric float64 ``C`` and a float64 ``w``, unchecked (as
    :func:`_projection_deflate`)."""
    Cw = C @ w
    wCw = float(w @ Cw)
    if wCw <= 0:
        return C.copy()
    return C - np.outer(Cw, Cw) / wCw


# --------------------------------------------------------------------------- eigenvector signs
@validate_params({"V": ["array-like"]}, prefer_skip_nested_validation=True)
def canonical_sign(V: np.ndarray) -> np.ndarray:
    """Flip each column (or a single vector) so its largest-magnitude entry is positive.

    Eigenvectors are defined up to sign; this makes results reproducible and comparable.

    Parameters
    ----------
    V : array_like, shape (n_features, k) or (n_features,)
        Vectors as columns, or one vector.

    Returns
    -------
    ndarray
        A float64 copy of ``V`` with each column's largest-magnitude entry positive (the first
        one on ties; a zero column is kept).

    Examples
    --------
    >>> from repro.linalg import canonical_sign
    >>> canonical_sign([0.2, -0.9, 0.1]).tolist()
    [-0.2, 0.9, -0.1]
    """
    V = np.array(V, dtype=np.float64)
    if V.ndim == 1:
        i = int(np.argmax(np.abs(V)))
        return -V if V[i] < 0 else V
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


#: :func:`canonical_sign` unchecked, for the library's own eigenvectors and loadings.
_canonical_sign = canonical_sign.__wrapped__
