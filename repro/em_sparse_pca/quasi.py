"""Quasi-orthogonal components (Sigg & Buhmann 2008, Sec. 4, Eq. 20): the M-step QP with the penalty
``alpha w'VV'w``, solved exactly through its (l+1)-dimensional dual by a semismooth Newton method
(:func:`penalized_mstep`), and the EM run with it (:func:`_em_quasi`).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import validate_params

from .._base import NONNEG_REAL, POSITIVE_INT
from ._common import _Run
from ._kernels import COLLAPSED, MAX_ITER


@validate_params(
    {
        "b": ["array-like"],
        "V": ["array-like"],
        "rho": [NONNEG_REAL],
        "l1_bound": [None, NONNEG_REAL],
        "nonneg": ["boolean"],
        "allowed": [None, "array-like"],
        "mu0": [None, "array-like"],
        "lam0": [None, Real],
        "tol": [NONNEG_REAL],
        "max_iter": [POSITIVE_INT],
    },
    prefer_skip_nested_validation=True,
)
def penalized_mstep(
    b,
    V,
    rho: float,
    *,
    l1_bound: float | None = None,
    nonneg: bool = False,
    allowed=None,
    mu0=None,
    lam0: float | None = None,
    tol: float = 1e-13,
    max_iter: int = 100,
):
    """Solve the quasi-orthogonal M-step QP (Sigg & Buhmann 2008, Eqs. 14, 17, 20) exactly.

    ``min_w  ||w||^2 - 2 b'w + rho ||V'w||^2``  subject to ``w >= 0`` (if ``nonneg``),
    ``||w||_1 <= l1_bound`` (if given) and ``w_i = 0`` off ``allowed``.

    This is Eq. 12 divided by ``h`` (so ``b = f/h = w*``, ``rho = alpha/h``) plus the penalty of Eq. 20:
    convex, with the non-isotropic Hessian ``2 (I + rho VV')``. It is solved through its dual in the
    ``l + 1`` multipliers ``(mu, lambda)`` of ``u = V'w`` and the l1 bound:
    ``w(mu, lambda) = T_lambda(b - V mu)`` (``T`` the soft threshold, or ``(.-lambda)_+`` if ``nonneg``)
    minimizes the Lagrangian, and the convex, piecewise-quadratic dual function
    ``phi = 1/2 ||w||^2 + ||mu||^2 / (2 rho) + lambda B`` is minimized over ``lambda >= 0`` by a projected
    semismooth Newton method with Armijo backtracking (exact once the active set settles).

    Parameters
    ----------
    b : ndarray, shape (D,)
    V : ndarray, shape (D, l)
        Earlier components as columns.
    rho : float > 0
    l1_bound : float or None
    nonneg : bool
    allowed : bool ndarray, shape (D,), optional
    mu0, lam0 : warm start of the multipliers.

    Returns
    -------
    w : ndarray, shape (D,)
        The minimizer (not normalized).
    mu : ndarray, shape (l,)
    lam : float
    """
    b = np.asarray(b, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64).reshape(b.shape[0], -1)
    D, l = V.shape
    allowed = np.ones(D, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    use_lam = l1_bound is not None and np.isfinite(l1_bound)
    B = float(l1_bound) if use_lam else 0.0
    mu = np.zeros(l) if mu0 is None else np.array(mu0, dtype=np.float64)
    lam = max(float(lam0), 0.0) if (use_lam and lam0 is not None) else 0.0
    inv_rho = 1.0 / rho
    scale = 1.0 + float(np.abs(b).max(initial=0.0))

    def primal(mu, lam):
        r = b - V @ mu
        if nonneg:
            a = r - lam
            s = np.ones(D)
        else:
            a = np.abs(r) - lam
            s = np.sign(r)
        act = (a > 0) & allowed
        w = np.where(act, s * a, 0.0)
        return w, act, s

    def phi(mu, lam, w):
        return 0.5 * float(w @ w) + 0.5 * inv_rho * float(mu @ mu) + (lam * B if use_lam else 0.0)

    w, act, s = primal(mu, lam)
    f = phi(mu, lam, w)
    for _ in range(max_iter):
        g_mu = inv_rho * mu - V.T @ w
        g_lam = B - float(np.abs(w).sum()) if use_lam else 0.0
        free_lam = use_lam and not (lam <= 0.0 and g_lam >= 0.0)
        pg = np.abs(g_mu).max(initial=0.0)
        if free_lam:
            pg = max(pg, abs(g_lam))
        if pg <= tol * scale:
            break
        VA = V[act]
        H = VA.T @ VA + inv_rho * np.eye(l)
        if free_lam:
            sA = s[act]
            Hf = np.empty((l + 1, l + 1))
            Hf[:l, :l] = H
            Hf[:l, l] = Hf[l, :l] = VA.T @ sA
            Hf[l, l] = act.sum() + 1e-12 * scale
            d = -np.linalg.solve(Hf, np.append(g_mu, g_lam))
            d_mu, d_lam = d[:l], d[l]
        else:
            d_mu, d_lam = -np.linalg.solve(H, g_mu), 0.0
        t = 1.0
        while True:
            mu_n = mu + t * d_mu
            lam_n = max(lam + t * d_lam, 0.0) if use_lam else 0.0
            w_n, act_n, s_n = primal(mu_n, lam_n)
            f_n = phi(mu_n, lam_n, w_n)
            decrease = float(g_mu @ (mu_n - mu)) + (g_lam * (lam_n - lam) if use_lam else 0.0)
            if f_n <= f + 1e-4 * decrease + 1e-15 * abs(f) or t < 1e-10:
                break
            t *= 0.5
        moved = max(np.abs(mu_n - mu).max(initial=0.0), abs(lam_n - lam))
        mu, lam, w, act, s, f = mu_n, lam_n, w_n, act_n, s_n, f_n
        if moved <= 1e-16 * scale:
            break
    return w, mu, lam


def _alg2_l1_bound(b: np.ndarray, K: int, nonneg: bool, allowed: np.ndarray) -> float:
    """The l1 bound that Algorithm 2 sets implicitly: ``sum_{i<=K} (s_i - s_(K+1))`` (Eq. 14)."""
    v = b[allowed]
    v = v[v > 0] if nonneg else np.abs(v)
    if K >= v.size:
        return float(v.sum())
    part = -np.partition(-v, K)  # part[K] is the (K+1)-th largest, part[:K] the K largest
    return float(np.sum(part[:K] - part[K]))


def _em_quasi(op, w0, K, nonneg, excluded, V, rho, tol, max_iter) -> _Run:
    """EM with the penalized M-step of Eq. 20 (Python loop around :func:`penalized_mstep`).

    With a cardinality ``K`` the QP gets the l1 bound Algorithm 2 would set; since the Hessian is not
    isotropic its solution can have more than ``K`` non-zeros, and then only the ``K`` largest are kept.
    """
    D = w0.shape[0]
    allowed = ~excluded
    w = w0.copy()
    mu = lam = None
    hist = []
    status = MAX_ITER
    n_iter = max_iter
    for t in range(max_iter):
        F, H = op.products(w[None, :])
        h = float(H[0])
        hist.append(h)
        if not h > 0:
            return _Run(np.zeros(D), 0.0, t, COLLAPSED, np.array(hist), t)
        b = F[0] / h  # Eq. 13
        bound = _alg2_l1_bound(b, K, nonneg, allowed) if K < D else None
        wn, mu, lam = penalized_mstep(
            b, V, rho, l1_bound=bound, nonneg=nonneg, allowed=allowed, mu0=mu, lam0=lam
        )
        if K < D and np.count_nonzero(wn) > K:
            keep = np.argpartition(-np.abs(wn), K)[:K]
            tmp = np.zeros(D)
            tmp[keep] = wn[keep]
            wn = tmp
        nrm = np.linalg.norm(wn)
        if nrm == 0:
            return _Run(np.zeros(D), 0.0, t + 1, COLLAPSED, np.array(hist), t + 1)
        wn /= nrm
        c = abs(float(wn @ w))
        w = wn
        if c > 1.0 - tol:
            status, n_iter = 0, t + 1
            break
    h = float(op.products(w[None, :])[1][0])
    hist.append(h)
    return _Run(w, h, n_iter, status, np.array(hist), n_iter)
