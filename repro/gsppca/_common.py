"""What the GSPPCA modules share: the tolerances, the checks of a support and of ``n_components``, the noise
estimate ``sigma1`` of the inactive variables (Mattei et al. 2016, Sec. 2.4) and the rescaling of ``X``."""

from __future__ import annotations

import math

import numpy as np

from .._validation import (
    check_array,
    check_n_components,
    check_real,
    check_scale,
)

__all__ = ["EVIDENCE_TIE"]


#: Relative difference below which two rankings' best log-evidences tie (:meth:`GSPPCA._choose_ranking`).
#: The steps of the algorithm (:func:`vem_init`, :func:`vem_iterations`, :func:`rotation_step`,
#: :func:`row_log_density`, :func:`rank_variables`) are public so that a benchmark can time them and a
#: reader can run them one by one; they trust their input (the doors are :class:`GSPPCA`, :func:`gsppca_vem`).
EVIDENCE_TIE = 1e-12
_DEBYE_NU = 50.0  # orders at or above use the uniform asymptotic expansion (relative error < 1e-9)
_LOG_2PI = math.log(2.0 * math.pi)
_ROOT_TOL = 1e-10  # on log(alpha)
_MAX_ROOT_ITER = 200
_BLOCK = 1 << 20  # entries of the n x q work arrays of the evidence path


# --------------------------------------------------------------------------- validation helpers
def _support_mask(support, p: int) -> np.ndarray:
    if support is None:
        raise ValueError("support is None; pass a boolean mask of length n_features or an index array.")
    arr = np.asarray(support)
    if arr.dtype == bool:
        if arr.shape != (p,):
            raise ValueError(f"support is a boolean mask of shape {arr.shape}; expected ({p},).")
        mask = arr.copy()
    else:
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"support must be a boolean mask or integer indices; got dtype {arr.dtype}.")
        idx = arr.ravel().astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= p):
            raise ValueError(f"support indices must lie in 0..{p - 1}; got {idx.min()}..{idx.max()}.")
        if np.unique(idx).size != idx.size:
            raise ValueError("support holds repeated indices; pass each selected variable once.")
        mask = np.zeros(p, dtype=bool)
        mask[idx] = True
    q = int(mask.sum())
    if not 1 <= q <= p:
        raise ValueError(f"support selects {q} variables; q must be in 1..{p} (select at least one).")
    return mask


def _check_d(n_components, n: int, p: int) -> int:
    high = min(n, p) - 1
    if high < 1:
        raise ValueError(f"X of shape ({n}, {p}) is too small: n_components must be < min(n, p).")
    return check_n_components(
        n_components, n, p, high=high, why="GSPPCA needs n_components < min(n_samples, n_features)"
    )


NOISE_ESTIMATES = ("bc", "ml")
RANKINGS = ("evidence", "vem")


def _sigma1_sq(Xc: np.ndarray, d: int, noise: str = "bc") -> float:
    """Estimate of the noise variance ``sigma1^2`` from the spectrum of ``Xc'Xc / n``.

    ``"ml"``: the PPCA maximum-likelihood estimate (Tipping & Bishop 1999; Sec. 2.2), the mean of the
    ``p - d`` smallest eigenvalues ``l_j`` (zeros included when ``n < p``). ``"bc"``: its bias-corrected
    version for ``p / n`` not small (Passemier, Li & Yao 2017), the default of the authors' GSPPCA.R
    (``sdPPCA(method = "BC")``): with ``c = p / n``, ``s = `` the ML estimate and, for the ``d`` largest
    ``l_j``, ``a_j = (sqrt+((s (c + 1) - l_j)^2 - 4 c s^2) - s (c + 1) + l_j) / 2`` (``sqrt+`` of a
    negative number is 0), ``b = sqrt(c / 2) (d + s sum_j 1 / a_j)`` and
    ``sigma1^2 = s + b s sqrt(2 c) / (p - d)``.
    """
    n, p = Xc.shape
    G = Xc @ Xc.T if n <= p else Xc.T @ Xc
    vals = np.clip(np.linalg.eigvalsh(G / n), 0.0, None)
    total = float(np.einsum("ij,ij->", Xc, Xc)) / n
    return _sigma1_sq_spectrum(vals, total, n, p, d, noise)


def _sigma1_sq_spectrum(vals: np.ndarray, total: float, n: int, p: int, d: int, noise: str) -> float:
    """:func:`_sigma1_sq` from the eigenvalues ``vals`` (ascending) of the covariance, of trace ``total``."""
    rest = total - float(vals[-d:].sum())
    s2 = max(rest, 0.0) / (p - d)
    if not s2 > 1e-300 or s2 <= 1e-12 * total / p:
        raise ValueError(
            f"the estimate of sigma1 is zero: X has (numerical) rank <= n_components={d}, so the p - d "
            "smallest eigenvalues of its covariance vanish; lower n_components or pass sigma1 explicitly."
        )
    if noise == "ml":
        return s2
    c = p / n
    top = vals[::-1][:d]
    disc = (s2 * (c + 1.0) - top) ** 2 - 4.0 * c * s2 * s2
    a = 0.5 * (np.sqrt(np.maximum(disc, 0.0)) - s2 * (c + 1.0) + top)
    with np.errstate(divide="ignore"):
        inv = np.where(a > 0, 1.0 / np.where(a > 0, a, 1.0), np.inf)
    b = math.sqrt(c / 2.0) * (d + s2 * float(inv.sum()))
    out = s2 + b * s2 * math.sqrt(2.0 * c) / (p - d)
    if not np.isfinite(out):
        raise ValueError(
            f"the bias-corrected noise estimate is undefined here (a leading eigenvalue of X's covariance "
            f"is at the noise level, so n_components={d} is too large for X); lower n_components or pass "
            "sigma1='ml'."
        )
    return out


def _noise_sq(Xc, d: int, sigma1, *, scatter=None) -> float:
    """``sigma1^2`` from ``sigma1``: a positive float, or the name of an estimate (:func:`_sigma1_sq`).

    ``scatter``: ``(n, Xc'Xc)`` in place of ``Xc`` (``None`` then), the spectrum taken from the scatter.
    """
    if sigma1 is None or isinstance(sigma1, str):
        noise = "bc" if sigma1 is None else sigma1
        if noise not in NOISE_ESTIMATES:
            raise ValueError(
                f"sigma1 must be a positive float, 'bc' (bias-corrected, the authors' default) or 'ml' "
                f"(maximum likelihood); got {sigma1!r}."
            )
        if scatter is not None:
            n, A = scatter
            vals = np.clip(np.linalg.eigvalsh(A / n), 0.0, None)
            return _sigma1_sq_spectrum(vals, float(np.trace(A)) / n, n, A.shape[0], d, noise)
        return _sigma1_sq(Xc, d, noise)
    return check_real(sigma1, "sigma1", low=0.0, low_inclusive=False) ** 2


def _rescale(X, sigma1=None, alpha=None, *, check_input=True):
    """``X / s`` with ``s`` from :func:`repro._validation.check_scale` (1 for ordinarily scaled data).

    Every quantity here is scale-equivariant: on ``X / s`` a given ``sigma1`` is ``sigma1 / s`` and a given
    ``alpha`` (a variance) ``alpha / s^2``; a log density of ``X`` is that of ``X / s`` minus ``p log s`` per
    row. Returns ``X / s, s, sigma1, alpha``. ``check_input=False``: ``X`` passed ``check_array`` already.
    """
    if check_input:
        X = check_array(X, "X", min_samples=2)
    s = check_scale(X)
    if s == 1.0:
        return X, s, sigma1, alpha
    if sigma1 is not None and not isinstance(sigma1, str):
        sigma1 = check_real(sigma1, "sigma1", low=0.0, low_inclusive=False) / s
    if alpha is not None:
        alpha = check_real(alpha, "alpha", low=0.0, low_inclusive=False) / (s * s)
    return X / s, s, sigma1, alpha


def _prepare(X, n_components, sigma1):
    """Centred ``X`` (checked by :func:`_rescale`), ``d`` and the noise variance ``sigma1^2``."""
    n, p = X.shape
    d = _check_d(n_components, n, p)
    Xc = X - X.mean(axis=0)
    return Xc, d, _noise_sq(Xc, d, sigma1)
