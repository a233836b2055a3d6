"""The variational EM of Mattei et al. (2016) on the relaxed model (Eq. 7): Proposition 1 and Eqs. 10-14,
with the exact scale and rotation steps, and the ranking of the variables by ``u`` (Sec. 2.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import validate_params

from .._base import NONNEG_REAL, POSITIVE_INT, RANDOM_STATE
from .._sparse import CentredSparse, sparse_door
from .._threads import blas_limited
from .._validation import (
    check_has_variance,
    check_int,
    check_random_state,
    check_real,
    is_sparse,
    unscale,
    warn_not_converged,
)
from . import sparse as _sp
from ._common import _LOG_2PI, _check_d, _noise_sq, _rescale

__all__ = ["VEMResult", "gsppca_vem", "rank_variables", "rotation_step", "vem_init", "vem_iterations"]


# --------------------------------------------------------------------------- variational EM
@dataclass
class VEMResult:
    """Output of :func:`gsppca_vem` (Proposition 1, Eqs. 10-14).

    Attributes
    ----------
    u : ndarray, shape (p,)
        Relaxed selection weights in [0, 1].
    u_ratio : ndarray, shape (p,)
        ``b_k / a_k``, the unconstrained minimizer of which ``u`` is the clip (ranks ties of ``u``).
    M : ndarray, shape (p, d)
        Variational means ``m_k`` of the rows of ``W``.
    Mu : ndarray, shape (n, d)
        Variational means ``mu_i`` of the latent vectors.
    Sigma : ndarray, shape (d, d)
        The variational covariance of every latent vector.
    alpha, sigma2 : float
        The fitted loading variance and noise variance.
    free_energy : ndarray, shape (n_iter,)
        The free energy (Eq. 8) after every iteration; non-increasing.
    n_iter : int
        Iterations run.
    converged : bool
        Whether the relative decrease fell below ``tol`` before ``max_iter``.

    See Also
    --------
    gsppca_vem : the function that returns it (see there for an example).
    """

    u: np.ndarray
    u_ratio: np.ndarray
    M: np.ndarray
    Mu: np.ndarray
    Sigma: np.ndarray
    alpha: float
    sigma2: float
    free_energy: np.ndarray
    n_iter: int
    converged: bool


@validate_params(
    {"Xc": [np.ndarray], "d": [POSITIVE_INT], "rng": [np.random.Generator]},
    prefer_skip_nested_validation=True,
)
def vem_init(Xc: np.ndarray, d: int, rng: np.random.Generator):
    """The VEM's start on centred ``Xc``: PPCA maximum likelihood (Eq. 2) with a random rotation ``R``.

    Returns ``M = A (Lambda - sigma^2)^(1/2) R`` (``p x d``; ``R`` drawn from ``rng``) and ``sigma^2``.
    """
    n, p = Xc.shape
    if n <= p:
        vals, U = np.linalg.eigh(Xc @ Xc.T / n)
        vals, U = vals[::-1][:d], U[:, ::-1][:, :d]
        A = Xc.T @ U / np.sqrt(np.maximum(vals * n, 1e-300))
    else:
        vals, A = np.linalg.eigh(Xc.T @ Xc / n)
        vals, A = vals[::-1][:d], A[:, ::-1][:, :d]
    total = float(np.einsum("ij,ij->", Xc, Xc)) / n
    return _vem_start(vals, A, total, p, d, rng)


def _vem_init_scatter(n: int, S: np.ndarray, d: int, rng: np.random.Generator):
    """:func:`vem_init` from the scatter ``S = Xc'Xc`` of ``n`` rows (leading eigenvectors of ``S / n``)."""
    p = S.shape[0]
    vals, A = np.linalg.eigh(S / n)
    return _vem_start(vals[::-1][:d], A[:, ::-1][:, :d], float(np.trace(S)) / n, p, d, rng)


def _vem_start(vals, A, total, p, d, rng):
    """``M`` and ``sigma^2`` of :func:`vem_init` from the ``d`` leading eigenpairs of the covariance."""
    s2 = max(total - vals.sum(), 1e-12 * total) / (p - d)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    M = (A * np.sqrt(np.maximum(vals - s2, 1e-12 * total))) @ Q
    return M, s2


def _scale_step(u: np.ndarray, e2: np.ndarray, alpha: float, d: int) -> np.ndarray:
    """Factors ``c_k`` of the exact free-energy step along ``(u_k c, m_k / c, S_k / c^2)`` (module docstring).

    ``e2``: ``tr(S_k + m_k m_k')``. The free energy moves by ``e2_k (c^-2 - 1) / (2 alpha) + d log c``,
    minimized at ``c^2 = e2_k / (alpha d)`` and capped by ``u_k c <= 1``; ``c = 1`` where ``u_k = 0``.
    """
    cap = np.full_like(u, np.inf)
    with np.errstate(over="ignore"):  # 1 / u for a subnormal u: no cap
        np.divide(1.0, u, out=cap, where=u > 0)
    c = np.minimum(np.sqrt(np.maximum(e2, 1e-300) / (alpha * d)), cap)
    return np.where(u > 0, c, 1.0)


@validate_params(
    {"B": [np.ndarray], "Cw": [np.ndarray], "alpha": [Real], "n": [Integral], "p": [Integral]},
    prefer_skip_nested_validation=True,
)
def rotation_step(B: np.ndarray, Cw: np.ndarray, alpha: float, n: int, p: int):
    """The exact free-energy step over ``y -> A y``, ``w_k -> A^-T w_k`` (every invertible ``A``), ``alpha``.

    ``B = n Sigma + Mu'Mu`` (``sum_i E[y_i y_i']``), ``Cw = sum_k (S_k + m_k m_k')``. With ``A = D V' B^-1/2``
    (``V``, ``gamma``: eigenvectors and eigenvalues of ``B^1/2 Cw B^1/2``) the free energy moves by
    ``sum_j [D_j^2 / 2 + gamma_j / (2 alpha D_j^2) + (p - n) log D_j] + const``, minimized at
    ``D_j^2 = (n - p + sqrt((p - n)^2 + 4 gamma_j / alpha)) / 2`` jointly with ``alpha = sum_j gamma_j /
    (D_j^2 p d)`` (a fixed point in ``alpha``); a left rotation of ``A`` changes nothing (module docstring).
    Returns ``A``, ``A^-1``, the new ``alpha`` and the change of the free energy.
    """
    d = B.shape[0]
    beta, Q = np.linalg.eigh(B)
    sb = np.sqrt(np.maximum(beta, 1e-300))
    Bh = (Q * sb) @ Q.T
    gam, V = np.linalg.eigh(Bh @ Cw @ Bh)
    gam = np.maximum(gam, 1e-300)
    a = alpha
    for _ in range(200):
        D2 = 0.5 * ((n - p) + np.sqrt((p - n) ** 2 + 4.0 * gam / a))
        a_new = float((gam / D2).sum()) / (p * d)
        done = abs(a_new - a) <= 1e-13 * a
        a = a_new
        if done:
            break
    D2 = 0.5 * ((n - p) + np.sqrt((p - n) ** 2 + 4.0 * gam / a))
    Ainv = (Bh @ V) / np.sqrt(D2)[None, :]
    A = (np.sqrt(D2)[:, None] * V.T) @ ((Q / sb) @ Q.T)
    dF = (
        0.5 * (float(D2.sum()) - float(np.trace(B)))
        + float((gam / D2).sum()) / (2.0 * a)
        - float(np.trace(Cw)) / (2.0 * alpha)
        + 0.5 * p * d * math.log(a / alpha)
        + 0.5 * (p - n) * (float(np.log(D2).sum()) - float(np.log(sb * sb).sum()))
    )
    return A, Ainv, a, dF


@validate_params(
    {
        "X": [None, np.ndarray, CentredSparse],
        "M": [np.ndarray],
        "u": [np.ndarray],
        "alpha": [Real],
        "s2": [Real],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "scatter": [None, tuple],
        "checkpoints": [None, list],
        "fix_s2": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def vem_iterations(X, M, u, alpha, s2, max_iter, tol, *, scatter=None, checkpoints=None, fix_s2=False):
    """The VEM iterations (NumPy; the products with ``X`` dominate). Returns every piece of the state.

    From the start ``M, u, alpha, s2`` on centred ``X`` (:func:`vem_init`; :func:`gsppca_vem` starts with
    ``u = 1`` and ``alpha`` the mean of ``M * M``), at most ``max_iter`` iterations, stopped when the free
    energy falls by less than ``tol`` nats per entry. Returns ``(u, u_ratio, M, Mu, Sigma, alpha, s2,
    free_energy, converged)``.
    ``scatter``: ``(n, S)`` with ``S = X'X`` in place of ``X`` (``None`` then). The iterations use ``X``
    only through ``Mu = X G`` (``G = U M Sigma / sigma^2``), ``C = X' Mu`` and ``Mu' Mu``, that is through
    ``S G`` and ``G' S G``; ``Mu`` is then returned as ``G`` (``X G`` is the caller's to form).
    ``checkpoints``: a list to which ``(iteration, u, u_ratio)`` is appended after iterations 1, 2, 4, 8, ...
    ``fix_s2``: hold the noise variance at the given ``s2`` instead of re-estimating it (Eq. 13): a
    diagnostic (``experiments/bench_gsppca.py`` tests with it whether the noise re-estimated along the
    iterations is what changes the ranking); the free energy still never increases (one block fewer).
    """
    if scatter is None:
        n, p = X.shape
        xx = float(X.column_ss().sum()) if isinstance(X, CentredSparse) else float(np.einsum("ij,ij->", X, X))
    else:
        n, S_x = scatter
        p = S_x.shape[0]
        xx = float(np.trace(S_x))
    d = M.shape[1]
    const_e = 0.5 * d * (_LOG_2PI + 1.0)
    # E[w_k w_k'] summed with weights u_k^2, in the original coordinates; initially S_k = 0.
    uM = u[:, None] * M
    EWW = uM.T @ uM
    F = []
    converged = False
    ratio = u.copy()
    for _ in range(max_iter):
        # q(Y), Prop. 1: Sigma and mu_i (Eq. 10).
        Sigma = np.linalg.inv(np.eye(d) + EWW / s2)
        Sigma = 0.5 * (Sigma + Sigma.T)
        if scatter is None:
            Mu = X @ (u[:, None] * M) @ (Sigma / s2)
            B = n * Sigma + Mu.T @ Mu
            C = X.T @ Mu  # c_k = sum_i x_ik mu_i
        else:
            Mu = (u[:, None] * M) @ (Sigma / s2)  # G: the means mu_i are the rows of X G
            C = S_x @ Mu
            B = n * Sigma + Mu.T @ C
        # q(W), Prop. 1: all S_k from one eigendecomposition of B (Eq. 11).
        beta, Q = np.linalg.eigh(B)
        beta = np.clip(beta, 0.0, None)
        Ct = C @ Q
        S = 1.0 / (1.0 / alpha + (u * u)[:, None] * beta[None, :] / s2)  # eigenvalues of S_k, (p, d)
        Mt = (u / s2)[:, None] * S * Ct
        M = Mt @ Q.T
        # M-step (Eqs. 12-14, re-derived).
        b = np.einsum("kj,kj->k", Mt, Ct)
        E2 = S + Mt * Mt  # diagonal of Q'(S_k + m_k m_k')Q
        a = E2 @ beta
        ratio = np.where(a > 0, b / np.where(a > 0, a, 1.0), 0.0)
        u = np.clip(ratio, 0.0, 1.0)
        resid = xx - 2.0 * float(u @ b) + float((u * u) @ a)
        if not fix_s2:
            s2 = max(resid / (n * p), 1e-300)
        alpha = max(float(E2.sum()) / (p * d), 1e-300)
        # Parameter expansion along the scale ridge (u_k c, m_k / c, S_k / c^2): module docstring.
        c = _scale_step(u, E2.sum(axis=1), alpha, d)
        u, ratio = u * c, ratio * c
        Mt, S, E2 = Mt / c[:, None], S / (c * c)[:, None], E2 / (c * c)[:, None]
        M = Mt @ Q.T
        alpha = max(float(E2.sum()) / (p * d), 1e-300)
        # Free energy (Eq. 8) at the new parameters.
        _, logdet_sigma = np.linalg.slogdet(Sigma)
        f = (
            0.5 * n * p * math.log(2 * math.pi * s2)
            + resid / (2.0 * s2)
            + 0.5 * n * d * _LOG_2PI
            + 0.5 * float(np.trace(B))
            + 0.5 * p * d * math.log(2 * math.pi * alpha)
            + float(E2.sum()) / (2.0 * alpha)
            - n * (const_e + 0.5 * logdet_sigma)
            - p * const_e
            - 0.5 * float(np.log(S).sum())
        )
        F.append(f)
        # For the next q(Y): sum_k u_k^2 E[w_k w_k'] = Q (Mt'U^2 Mt + diag(sum_k u_k^2 s_kj)) Q'.
        uMt = u[:, None] * Mt
        EWW = Q @ (uMt.T @ uMt + np.diag((u * u) @ S)) @ Q.T
        EWW = 0.5 * (EWW + EWW.T)
        # Parameter expansion over the rotations and scales of the latent space (module docstring).
        A, Ainv, alpha, dF = rotation_step(B, (Q * S.sum(axis=0)) @ Q.T + M.T @ M, alpha, n, p)
        M = M @ Ainv
        Mu = Mu @ A.T
        Sigma = A @ Sigma @ A.T
        EWW = Ainv.T @ EWW @ Ainv
        EWW = 0.5 * (EWW + EWW.T)
        F[-1] += dF
        if checkpoints is not None and len(F) & (len(F) - 1) == 0:  # a power of two
            checkpoints.append((len(F), u.copy(), ratio.copy()))
        if len(F) > 1 and abs(F[-2] - F[-1]) <= tol * n * p:  # nats per entry: scale-free
            converged = True
            break
    return u, ratio, M, Mu, Sigma, alpha, s2, np.array(F), converged


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_components": [POSITIVE_INT],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "random_state": RANDOM_STATE,
    },
    prefer_skip_nested_validation=True,
)
@blas_limited
def gsppca_vem(X, n_components, *, max_iter=1000, tol=1e-7, random_state=None) -> VEMResult:
    """Variational EM for the relaxed model ``x = U W y + eps`` (Eq. 7; Prop. 1, Eqs. 10-14 re-derived).

    ``X`` is centred (and fitted as ``X / s`` when badly scaled, :func:`_rescale`: the results are
    scale-equivariant). Start: ``u = 1`` and the PPCA maximum-likelihood loadings (Eq. 2) with a random
    rotation ``R`` drawn from ``random_state``; ``alpha`` the mean squared loading. Stops when an iteration
    lowers the free energy by less than ``tol`` nats per entry of ``X`` (module docstring; a
    ConvergenceWarning at ``max_iter``).

    Parameters
    ----------
    X : array_like or scipy sparse matrix, shape (n_samples, n_features)
        The data (centred here; a sparse matrix implicitly, through the products of the centred operator,
        never densified: :mod:`repro.gsppca.sparse`).
    n_components : int
        ``d``, ``1 <= d < min(n_samples, n_features)``.
    max_iter : int, default 1000
        Maximum number of VEM iterations.
    tol : float, default 1e-6
        Relative decrease of the free energy at which the iterations stop.
    random_state : None, int or Generator
        Seed of the random rotation of the start.

    Returns
    -------
    VEMResult
        ``u`` (the relaxed selection weights), the variational parameters, ``alpha``, ``sigma2`` and the
        free energy of every iteration.

    See Also
    --------
    GSPPCA : the VEM, the evidence path and PCA on the selected variables.

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Eq. (7), Proposition 1 and Eqs. (8)-(14) (re-derived: see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> np.flatnonzero(v).tolist()
    [4, 6, 9, 10, 14]
    >>> from repro import gsppca_vem
    >>> res = gsppca_vem(X, 2, random_state=0)
    >>> res.converged, bool(np.all(np.diff(res.free_energy) <= 0))
    (True, True)
    >>> sorted(np.argsort(-res.u)[:5].tolist())  # the five largest weights: the active variables
    [4, 6, 9, 10, 14]
    """
    if is_sparse(X):
        return _gsppca_vem_sparse(X, n_components, max_iter, tol, random_state)
    X, sc, _, _ = _rescale(X)
    n, p = X.shape
    d = _check_d(n_components, n, p)
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_real(tol, "tol", low=0.0)
    rng = check_random_state(random_state)
    check_has_variance(X, "gsppca_vem")
    Xc = X - X.mean(axis=0)
    _noise_sq(Xc, d, "bc")  # refuse a zero noise estimate (data of rank <= d) before the VEM, as GSPPCA does
    return _unscale_vem(_run_vem(Xc, d, max_iter, tol, rng), sc, n, p)


def _gsppca_vem_sparse(X, n_components, max_iter, tol, random_state) -> VEMResult:
    """:func:`gsppca_vem` of a scipy sparse ``X``: the same checks, the start from the ``d`` leading
    eigenpairs of the scatter, the iterations through the centred operator (:mod:`.sparse`)."""
    Xs, sc = sparse_door(X, "gsppca_vem")
    n, p = Xs.shape
    d = _check_d(n_components, n, p)
    max_iter = check_int(max_iter, "max_iter", low=1)
    tol = check_real(tol, "tol", low=0.0)
    rng = check_random_state(random_state)
    F, _, m2 = _sp.centred(Xs)
    vals, A = _sp.top_spectrum(F, d)
    total = float(m2.sum()) / n
    _sp.noise_sq(vals, total, n, p, d, "bc")  # refuse a zero noise estimate, as for dense data
    res = _run_vem(F, d, max_iter, tol, rng, start=_vem_start(vals, A, total, p, d, rng))
    return _unscale_vem(res, sc, n, p)


def _run_vem(Xc, d, max_iter, tol, rng, *, scatter=None, checkpoints=None, start=None) -> VEMResult:
    """Start and iterate the VEM on centred ``Xc``, or on ``scatter = (n, Xc'Xc)``.

    The start is :func:`vem_init` (or ``start``, its ``(M, sigma^2)`` already drawn from ``rng``), the
    iterations :func:`vem_iterations`.
    """
    if start is not None:
        M, s2 = start
        p = M.shape[0]
    elif scatter is None:
        M, s2 = vem_init(Xc, d, rng)
        p = Xc.shape[1]
    else:
        M, s2 = _vem_init_scatter(*scatter, d, rng)
        p = scatter[1].shape[0]
    alpha = float(np.mean(M * M))
    u, ratio, M, Mu, Sigma, alpha, s2, F, converged = vem_iterations(
        Xc, M, np.ones(p), alpha, s2, max_iter, tol, scatter=scatter, checkpoints=checkpoints
    )
    if not converged:
        warn_not_converged("gsppca_vem", max_iter, tol)
    return VEMResult(
        u=u,
        u_ratio=ratio,
        M=M,
        Mu=Mu,
        Sigma=Sigma,
        alpha=alpha,
        sigma2=s2,
        free_energy=F,
        n_iter=len(F),
        converged=converged,
    )


def _unscale_vem(res: VEMResult, sc: float, n: int, p: int) -> VEMResult:
    """The VEMResult of ``X / sc`` as that of ``X`` (loadings times ``sc``, variances times ``sc^2``)."""
    if sc == 1.0:
        return res
    return VEMResult(
        u=res.u,
        u_ratio=res.u_ratio,
        M=unscale(res.M, sc, 1, "loadings"),
        Mu=res.Mu,
        Sigma=res.Sigma,
        alpha=float(unscale(res.alpha, sc, 2, "variances", underflow=False)),  # not 0: refused, as GSPPCA
        sigma2=float(unscale(res.sigma2, sc, 2, "variances", underflow=False)),
        free_energy=res.free_energy + n * p * math.log(sc),
        n_iter=res.n_iter,
        converged=res.converged,
    )


@validate_params(
    {"u": ["array-like"], "ratio": ["array-like"]},
    prefer_skip_nested_validation=True,
)
def rank_variables(u: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """The VEM's ranking: variables by decreasing ``u``, ties (e.g. several ``u = 1``) by decreasing
    ``ratio`` (``b/a``, :attr:`VEMResult.u_ratio`), then by index.

    Examples
    --------
    >>> import numpy as np
    >>> rank_variables(np.array([0.5, 1.0, 1.0]), np.array([0.1, 2.0, 3.0])).tolist()
    [2, 1, 0]
    """
    return np.lexsort((np.arange(u.size), -ratio, -u))
