"""Numba kernel of the ratio of modified Bessel functions of the second kind at integer and half-integer
orders, by their three-term recurrence.

``kv_ratio_up``
    ``R_nu(z) = K_(nu+1)(z) / K_nu(z)`` from its value at the lowest order of the same kind (``R_0 = K_1 /
    K_0``, or ``R_(1/2) = 1 + 1/z``, exact) by ``K_(nu+1) = K_(nu-1) + (2 nu / z) K_nu``, that is
    ``R_nu = 1 / R_(nu-1) + 2 nu / z``. ``K`` is the dominant solution of the recurrence as the order
    rises, so the recurrence is stable upwards: with ``R >= 1`` (``K_nu`` increases with ``nu >= 0``) an
    error in ``R_(nu-1)`` enters ``R_nu`` damped by ``1 / R_(nu-1)^2 <= 1``, and ``m`` steps keep a relative
    error of about ``m`` roundings. GSPPCA's evidence (Mattei et al. 2016) needs these ratios at the orders
    ``|q - d| / 2`` for every model ``q`` and observation, a few thousand per Newton step; ``kve`` computed
    them through both ``K_nu`` and ``K_(nu+1)`` at about 100 times the cost.
"""

from __future__ import annotations

from .._jit import njit

__all__ = ["kv_ratio_up"]


@njit
def kv_ratio_up(z, r0, nu0, steps, out):
    """``out[i] = R_(nu0[i] + steps[i])(z[i])`` from ``r0[i] = R_(nu0[i])(z[i])`` (1-D arrays; ``nu0`` 0 or
    1/2) by ``steps[i]`` upward steps of ``R_nu = 1 / R_(nu-1) + 2 nu / z``."""
    for i in range(z.shape[0]):
        r = r0[i]
        zi = z[i]
        nu = nu0[i]
        for _ in range(steps[i]):
            nu += 1.0
            r = 1.0 / r + 2.0 * nu / zi
        out[i] = r
