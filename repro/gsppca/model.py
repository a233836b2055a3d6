"""The noisy model (3) of Mattei et al. (2016): the density of one observation by Theorem 1 (corrected,
Eq. 4) and data drawn from the model as in Sec. 3."""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special
from sklearn.utils._param_validation import validate_params

from .._base import NONNEG_REAL, POSITIVE_INT, POSITIVE_REAL, RANDOM_STATE
from .._validation import (
    check_int,
    check_random_state,
    check_real,
)
from ._common import _support_mask

__all__ = ["make_globally_sparse", "theorem1_density"]


# --------------------------------------------------------------------------- Theorem 1
@validate_params(
    {
        "x": ["array-like"],
        "support": ["array-like"],
        "n_components": [POSITIVE_INT],
        "alpha": [POSITIVE_REAL],
        "sigma": [POSITIVE_REAL],
    },
    prefer_skip_nested_validation=True,
)
def theorem1_density(x, support, *, n_components, alpha, sigma) -> float:
    """Density of one observation under the noisy model (3), Theorem 1 (corrected), Eq. (4).

    ``p(x) = (2 pi sigma^2)^(-(p-q)/2) exp(-||x_vbar||^2 / (2 sigma^2)) (2 pi)^(-q/2) r^(1-q/2)
    int_0^inf u^(q/2) exp(-sigma^2 u^2 / 2) (1 + alpha u^2)^(-d/2) J_(q/2-1)(u r) du`` with ``r = ||x_v||``:
    a univariate oscillatory integral (``scipy.integrate.quad``), meant for small ``q``.

    Parameters
    ----------
    x : array_like, shape (p,)
        One observation.
    support : bool mask or int indices
        The active variables (``q`` of them).
    n_components : int
        ``d``.
    alpha : float > 0
        Variance of the loadings.
    sigma : float > 0
        Noise standard deviation (on every variable).

    Returns
    -------
    float
        The density ``p(x)``.

    See Also
    --------
    log_evidence : the noiseless limit (Theorem 2), in closed form.

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Theorem 1, Eq. (4) (corrected: see the module docstring).

    Examples
    --------
    As ``alpha -> 0`` the loadings vanish and ``x`` is the noise ``N(0, sigma^2 I)``:

    >>> import numpy as np
    >>> from scipy.stats import multivariate_normal
    >>> from repro import theorem1_density
    >>> x = np.array([0.3, -0.2, 0.1])
    >>> density = theorem1_density(x, [0, 1], n_components=2, alpha=1e-9, sigma=0.5)
    >>> bool(np.isclose(density, multivariate_normal(np.zeros(3), 0.25 * np.eye(3)).pdf(x), rtol=1e-6))
    True
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    if not np.isfinite(x).all():
        raise ValueError("x holds NaN or infinite values.")
    p = x.size
    mask = _support_mask(support, p)
    q = int(mask.sum())
    d = check_int(n_components, "n_components", low=1)
    alpha = check_real(alpha, "alpha", low=0.0, low_inclusive=False)
    sigma = check_real(sigma, "sigma", low=0.0, low_inclusive=False)
    r = float(np.linalg.norm(x[mask]))
    order = q / 2.0 - 1.0

    if r == 0.0:  # J_(q/2-1)(ur) (ur)^(1-q/2) -> 2^(1-q/2) / Gamma(q/2)

        def f(u):
            return u ** (q - 1) * np.exp(-0.5 * sigma**2 * u * u) * (1 + alpha * u * u) ** (-d / 2.0)

        scale = 2.0 ** (1 - q / 2.0) / math.gamma(q / 2.0)
    else:

        def f(u):
            return (
                u ** (q / 2.0)
                * np.exp(-0.5 * sigma**2 * u * u)
                * (1 + alpha * u * u) ** (-d / 2.0)
                * (special.jv(order, u * r))
            )

        scale = r ** (1.0 - q / 2.0)
    upper = math.sqrt(2.0 * 60.0) / sigma  # exp(-sigma^2 u^2 / 2) < e^-60 beyond
    val, _ = integrate.quad(f, 0.0, upper, limit=2000, epsabs=0.0, epsrel=1e-10)
    xo = x[~mask]
    inactive = (2 * math.pi * sigma**2) ** (-(p - q) / 2.0) * math.exp(-float(xo @ xo) / (2 * sigma**2))
    return inactive * (2 * math.pi) ** (-q / 2.0) * scale * val


# --------------------------------------------------------------------------- simulation
@validate_params(
    {
        "n_samples": [POSITIVE_INT],
        "n_features": [POSITIVE_INT],
        "n_components": [POSITIVE_INT],
        "n_selected": [POSITIVE_INT],
        "sigma": [NONNEG_REAL],
        "random_state": RANDOM_STATE,
    },
    prefer_skip_nested_validation=True,
)
def make_globally_sparse(n_samples, n_features, n_components, n_selected, *, sigma, random_state=None):
    """Data from model (3) as in Sec. 3: ``x = V W y + eps``, ``W`` and ``y`` standard Gaussian.

    The ``n_selected`` active variables are drawn uniformly at random; ``eps ~ N(0, sigma^2 I_p)`` on every
    variable. Draw order: ``W``, the support, ``Y``, the noise.

    Returns
    -------
    X : ndarray, shape (n_samples, n_features)
    v : ndarray of bool, shape (n_features,)
        The true support.
    """
    n = check_int(n_samples, "n_samples", low=1)
    p = check_int(n_features, "n_features", low=1)
    d = check_int(n_components, "n_components", low=1)
    q = check_int(n_selected, "n_selected", low=1, high=p)
    sigma = check_real(sigma, "sigma", low=0.0)
    rng = check_random_state(random_state)
    W = rng.standard_normal((p, d))
    v = np.zeros(p, dtype=bool)
    v[rng.choice(p, q, replace=False)] = True
    X = rng.standard_normal((n, d)) @ (W * v[:, None]).T + sigma * rng.standard_normal((n, p))
    return X, v
