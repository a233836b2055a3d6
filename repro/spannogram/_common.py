"""What the spannogram's modules share: the covariance ``A`` scaled into the safe range of float64, the checks
of ``rank``, ``net`` and ``failure_probability``, and ``V = U_d L_d^(1/2)`` of Algorithm 1, lines 1-2 (Asteris
et al. 2014)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._sparse import sparse_door
from .._validation import (
    check_array,
    check_has_variance,
    check_int,
    check_psd,
    check_real,
    check_scale,
    is_dask,
    is_sparse,
    unscale,
)
from ..linalg import Covariance

_NETS = ("random", "grid", "exact")
_MAX_EXACT_CANDIDATES = 2_000_000  # intersection points Algorithm 2 may visit for rank >= 3
_MAX_PATH_ENTRIES = 50_000_000  # components stored by a path (400 MB)


# --------------------------------------------------------------------------- input
def _as_cov(X: Covariance, name: str = "X") -> Covariance:
    """A given :class:`Covariance`, its matrix checked PSD where that was not done yet."""
    if X.data is None and not getattr(X, "_psd_checked", False):  # derived ones: not yet checked
        check_psd(X.matrix, name)
    return X


@dataclass
class _Scaled:
    """A covariance ``A / f`` scaled into the safe range of float64, and how to undo it on a variance.

    ``A = f * A_scaled`` with ``f = s ** power``: ``s`` a power of two (exact), ``power`` 2 when the data
    were divided by ``s``, 1 when a given matrix was. Loadings are unchanged by the scaling.
    """

    cov: Covariance
    s: float = 1.0
    power: int = 2
    name: str = "X"

    def variances(self, values):
        """Variances of the scaled problem as variances of ``A``; refuses what float64 cannot hold."""
        return unscale(values, self.s, self.power, "variances", self.name, underflow=False)


def _scaled_cov(X, name: str = "X", method: str = "the spannogram", *, check_input: bool = True) -> _Scaled:
    """The covariance of ``X / s`` (``s`` a power of two) when ``X`` lies outside ``[2^-256, 2^256]``.

    Squares of entries near 1e-160 underflow and near 1e160 overflow, so the eigenpairs, the rank-1
    values and the bound of unscaled data were wrong there (an all-zero component at 1e80, a worse one at
    1e-100); the spannogram is scale-equivariant (loadings unchanged, variances times ``s^2``), so it runs
    on the scaled data and the variances are scaled back (refused when float64 cannot hold them). Data or
    a covariance with no variance at all are refused: every unit vector is then optimal, with value 0.
    ``check_input=False``: the array ``X`` passed ``check_array`` already (the one check of a public call).
    """
    if is_dask(X):  # one distributed pass forms the p x p covariance; X stays on the workers
        from .._chunked import _dask_covariance

        n, _, A = _dask_covariance(X, name)
        X = Covariance._derived(A / (n - 1), n_samples=n)
    s0 = 1.0
    if is_sparse(X):  # checked as arrays are (no variance refused, X / s0), its operator through X itself
        X, s0 = sparse_door(X, method, name)
        X = Covariance._from_sparse(X)
    if isinstance(X, Covariance):
        cov, s, power = _as_cov(X, name).rescaled()
        if not np.any(cov.diag() > 0):
            raise ValueError(
                f"{name} has no variance (a zero covariance), so {method} has no component to find."
            )
        return _Scaled(cov, s * s0, power, name)  # s0 != 1 only for data (power 2): (s s0)^2 in all
    if check_input:
        X = check_array(X, name, min_samples=2)
    check_has_variance(X, method, name)
    s = check_scale(X, name)
    cov = Covariance._from_valid(X / s if s != 1.0 else X, name=name)  # X / s: finite float64 too
    if not np.any(cov.diag() > 0):  # constant up to round-off of the mean
        raise ValueError(
            f"{name} has no variance (every column is constant), so {method} has no component to find."
        )
    return _Scaled(cov, s, 2, name)


def _check_rank(rank, cov: Covariance) -> int:
    """``d`` in ``1..rank(A)`` at most: ``n_samples - 1`` (centred data) and ``n_features``."""
    n_s = cov.data.shape[0] if cov.data is not None else cov.n_features + 1
    high = min(n_s - 1, cov.n_features)
    if high < 1:
        raise ValueError("X is too small: the spannogram needs at least 2 samples.")
    return check_int(rank, "rank", low=1, high=high)


@dataclass
class _LowRank:
    V: np.ndarray  # (n, d), A_d = V V'
    values: np.ndarray  # lambda_1..lambda_d
    lam_next: float  # lambda_{d+1} (0 when A has rank <= d)
    resid_diag: np.ndarray  # diag(A - A_d) >= 0
    diag: np.ndarray  # diag(A)
    n_rows: int = 0  # rows of the data behind A (0 for a given matrix): for the rounding margin


def _low_rank(cov: Covariance, d: int, support=None) -> _LowRank:
    """``V = U_d L_d^(1/2)`` (Alg. 1, lines 1-2) and what the bound needs, optionally on a feature subset."""
    if support is not None:
        if cov.data is not None:
            cov = Covariance(data=np.ascontiguousarray(cov.data[:, support]), n_samples=cov.n_samples)
        else:
            cov = Covariance._derived(cov.matrix[np.ix_(support, support)], n_samples=cov.n_samples)
    n_max = cov.n_features if cov.data is None else min(cov.n_features, cov.data.shape[0])
    for want in range(
        min(d + 1, n_max), 0, -1
    ):  # the data may have rank <= d: lambda_{d+1} = 0, and fewer columns
        try:
            vals, U = cov.eigh(want)
            break
        except ValueError:  # want exceeds the numerical rank of the data (Gram route)
            continue
    else:
        vals, U = np.zeros(0), np.zeros((cov.n_features, 0))
    vals = np.clip(vals, 0.0, None)
    lam_next = float(vals[d]) if vals.size > d else 0.0
    dd = min(d, vals.size)
    V = np.ascontiguousarray(U[:, :dd] * np.sqrt(vals[:dd]))
    if V.shape[1] < d:
        V = np.ascontiguousarray(np.hstack([V, np.zeros((V.shape[0], d - V.shape[1]))]))
    diag = cov.diag()
    resid = np.clip(diag - np.einsum("ij,ij->i", V, V), 0.0, None)
    return _LowRank(V, vals[:dd], lam_next, resid, diag, 0 if cov.data is None else cov.data.shape[0])


def _check_net(net):
    if net not in _NETS:
        raise ValueError(f"net must be one of {_NETS}; got {net!r}.")
    return net


def _check_fp(p):
    if p is None:
        return None
    return check_real(p, "failure_probability", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
