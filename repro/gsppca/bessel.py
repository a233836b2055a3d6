"""The modified Bessel function of the second kind in log space, and the ratio ``K_(nu+1) / K_nu``: what the
evidence of Theorem 2 (Mattei et al. 2016) evaluates (kernel: :func:`repro.gsppca._kernels.kv_ratio_up`)."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
from scipy import special
from sklearn.utils._param_validation import validate_params

from ._common import _DEBYE_NU
from ._kernels import kv_ratio_up

__all__ = ["log_bessel_k"]


# --------------------------------------------------------------------------- Bessel K in log space
def _debye_u(t: np.ndarray) -> tuple[np.ndarray, ...]:
    t2 = t * t
    u1 = t * (3.0 - 5.0 * t2) / 24.0
    u2 = t2 * (81.0 - 462.0 * t2 + 385.0 * t2 * t2) / 1152.0
    u3 = t * t2 * (30375.0 + t2 * (-369603.0 + t2 * (765765.0 - 425425.0 * t2))) / 414720.0
    u4 = (
        t2
        * t2
        * (4465125.0 + t2 * (-94121676.0 + t2 * (349922430.0 + t2 * (-446185740.0 + 185910725.0 * t2))))
        / 39813120.0
    )
    return u1, u2, u3, u4


def _log_kv_debye(nu: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``log K_nu(z)``, uniform expansion ``K_nu(nu w) ~ sqrt(pi/(2nu)) e^(-nu eta) (1+w^2)^(-1/4) sum``."""
    w = z / nu
    s = np.sqrt(1.0 + w * w)
    eta = s + np.log(w / (1.0 + s))
    u1, u2, u3, u4 = _debye_u(1.0 / s)
    inv = 1.0 / nu
    series = 1.0 + inv * (-u1 + inv * (u2 + inv * (-u3 + inv * u4)))
    return 0.5 * np.log(np.pi / (2.0 * nu)) - nu * eta - 0.5 * np.log(s) + np.log(series)


@validate_params(
    {"nu": ["array-like", Real], "z": ["array-like", Real]},
    prefer_skip_nested_validation=True,
)
def log_bessel_k(nu, z) -> np.ndarray:
    """``log K_nu(z)``, the modified Bessel function of the second (third) kind, finite for large orders.

    ``scipy.special.kve`` (exponentially scaled) below order 50; the uniform asymptotic (Debye)
    expansion with four correction terms at order 50 and above, where ``kve`` overflows for moderate
    arguments; the small-argument limit ``log(Gamma(nu) 2^(nu-1) z^-nu)`` where ``kve`` overflows below
    order 50 (then ``z < 1e-5`` and the relative error is below ``z^2``).

    Parameters
    ----------
    nu : array_like
        Real order (``K_-nu = K_nu``).
    z : array_like
        Positive argument; broadcast with ``nu``.
    """
    nu, z = np.broadcast_arrays(np.abs(np.asarray(nu, dtype=np.float64)), np.asarray(z, dtype=np.float64))
    out = np.empty(nu.shape)
    big = nu >= _DEBYE_NU
    if big.any():
        out[big] = _log_kv_debye(nu[big], z[big])
    small = ~big
    if small.any():
        ns, zs = nu[small], z[small]
        with np.errstate(over="ignore", divide="ignore"):
            k = special.kve(ns, zs)
            val = np.log(k) - zs
        bad = ~np.isfinite(val)
        if bad.any():
            nb, zb = ns[bad], zs[bad]
            val[bad] = special.gammaln(nb) + (nb - 1.0) * math.log(2.0) - nb * np.log(zb)
        out[small] = val
    return out


def _kv_ratio(nu, z) -> np.ndarray:
    """``K_(nu+1)(z) / K_nu(z)`` (``z > 0``; broadcast). Integer and half-integer orders in ``[0, 50)``
    (:data:`_DEBYE_NU`) by the upward recurrence of :func:`repro.gsppca._kernels.kv_ratio_up` from
    ``K_1 / K_0`` (``scipy.special.k1e / k0e``) or ``1 + 1/z``; other orders through :func:`log_bessel_k`."""
    nu, z = np.broadcast_arrays(np.asarray(nu, dtype=np.float64), np.asarray(z, dtype=np.float64))
    R = np.empty(z.shape)
    twice = 2.0 * nu
    rec = (nu >= 0) & (nu < _DEBYE_NU) & (twice == np.round(twice)) & (z > 0) & np.isfinite(z)
    if rec.any():
        zr, nr = z[rec], nu[rec]
        half = nr != np.floor(nr)
        nu0 = np.where(half, 0.5, 0.0)
        r0 = np.empty(zr.shape)
        r0[half] = 1.0 + 1.0 / zr[half]
        zi = zr[~half]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            r0[~half] = special.k1e(zi) / special.k0e(zi)
        out = np.empty(zr.shape)
        kv_ratio_up(zr, r0, nu0, (nr - nu0).astype(np.int64), out)
        R[rec] = out
    if not rec.all():
        other = ~rec
        R[other] = np.exp(log_bessel_k(nu[other] + 1.0, z[other]) - log_bessel_k(nu[other], z[other]))
    return R
