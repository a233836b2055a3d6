"""Globally sparse probabilistic PCA (Mattei, Bouveyron & Latouche 2016).

Model (Eq. 5): ``x = V W y + Vbar eps1 + V eps2`` with ``y ~ N(0, I_d)``, i.i.d. ``w_kj ~ N(0, alpha)``,
``V = diag(v)`` for a binary ``v`` with ``q = ||v||_0`` active variables, inactive noise
``eps1 ~ N(0, sigma1^2 I)`` and ``sigma2 -> 0`` on the active ones. The method (Sec. 2.3-2.4):

1. variational EM on the relaxed model ``x = U W y + eps`` (Eq. 7, ``u in [0, 1]^p``): :func:`gsppca_vem`;
2. the variables ranked by ``u``, the ``p`` nested models along that ranking, and the exact evidence of
   Theorem 2 (maximized in ``alpha``) over every ``q = 1..p`` in one pass: :func:`evidence_path`;
3. PCA on the variables of the model of largest evidence: :class:`GSPPCA`.

Theorem 2, derived again (and corrected)
----------------------------------------
Given ``y``, the active part ``x_v = W_v y`` is ``N(0, alpha s I_q)`` with ``s = ||y||^2 ~ chi^2_d``: a
Gaussian scale mixture. With ``int_0^inf s^(nu-1) exp(-a/s - b s) ds = 2 (a/b)^(nu/2) K_nu(2 sqrt(ab))``
(``nu = (d - q)/2``, ``a = r^2 / (2 alpha)``, ``b = 1/2``, ``r = ||x_v||``),

    p(x_v) = alpha^(-(q+d)/4) (2 pi)^(-q/2) 2^(1-d/2) / Gamma(d/2) * r^((d-q)/2) K_((q-d)/2)(r / sqrt(alpha)),

and the inactive variables add ``(2 pi sigma1^2)^(-(p-q)/2) exp(-||x_vbar||^2 / (2 sigma1^2))``. Compared
with the printed Eq. (6): the Bessel order is ``(q - d)/2`` (printed ``(p - d)/2``), the power of ``alpha``
is ``-(q + d)/4`` (printed ``-(p + d)/4``), and the exponential holds the *inactive* variables
``x_vbar`` (printed ``x_v``). The prefactors ``(2 pi)^(-p/2) 2^(1-d/2) / (Gamma(d/2) sigma1^(p-q))`` agree.
Tested against direct numerical integration over ``s`` and against ``mpmath.besselk`` (tests/test_gsppca.py).

Theorem 1 (Eq. 4, noisy model (3)): the characteristic function of ``N(0, sigma^2 I)`` is
``exp(-sigma^2 ||u||^2 / 2)``, so the integrand of Eq. (4) carries ``exp(-sigma^2 u^2 / 2)`` (printed
``exp(-sigma^2 u^2)``), and again the exponential prefactor holds ``x_vbar``. :func:`theorem1_density`
evaluates the corrected Hankel-transform integral; it is tested against Monte Carlo.

Variational EM (Proposition 1 and Eqs. 12-14, derived again from the free energy)
--------------------------------------------------------------------------------
With ``q(Y) q(W)``, ``Sigma = (I + sigma^-2 sum_k u_k^2 (S_k + m_k m_k'))^-1``,
``mu_i = sigma^-2 Sigma M' U x_i`` (printed ``1/sigma``), ``S_k = (I/alpha + u_k^2 sigma^-2 B)^-1`` with
``B = n Sigma + Mu' Mu`` (``Mu`` stacks the ``mu_i``; Prop. 1 swaps the names of the two stacked matrices),
``m_k = u_k sigma^-2 S_k c_k`` with ``c_k = sum_i x_ik mu_i`` (printed ``1/sigma``). Every ``S_k`` is a
function of the one matrix ``B``: one ``d x d`` eigendecomposition ``B = Q diag(beta) Q'`` per iteration
gives all of them, ``S_k = Q diag(1 / (1/alpha + u_k^2 beta / sigma^2)) Q'``. The M-step, with
``a_k = tr((S_k + m_k m_k') B)`` and ``b_k = m_k' c_k``:

* ``u_k = clip(b_k / a_k, 0, 1)``: the free energy in ``u_k`` is ``(u^2 a_k - 2 u b_k) / (2 sigma^2)``
  (Eq. 14 prints the linear term without its ``1/sigma^2``, which would give ``sigma^2 b_k / a_k``);
* ``sigma^2 = (||X||_F^2 - 2 sum_k u_k b_k + sum_k u_k^2 a_k) / (np)`` (Eq. 13 is printed for ``sigma``, with
  ``+ tr(X U M Mu')`` for ``- 2 tr(X U M Mu')`` and ``m_i`` for ``m_k``);
* ``alpha = sum_k tr(S_k + m_k m_k') / (dp)`` (Eq. 12).

Each step minimizes the free energy exactly in its block, so it never increases (``free_energy_``).

Why the plain VEM crawls: the scale and rotation steps
------------------------------------------------------
The free energy has two families of directions along which the alternating blocks (``q(Y)``, then
``q(W)``, then the parameters) move by tiny steps, the tinier the smaller the noise (the blocks are then
tightly coupled):

* **per-variable scale**: the likelihood sees ``u_k`` and ``w_k`` only through ``u_k w_k``, so
  ``(u_k c, m_k / c, S_k / c^2)`` leaves it unchanged (``u_k m_k``, ``u_k^2 (S_k + m_k m_k')``, hence
  ``a_k u_k^2``, ``b_k u_k`` and the residual) and moves the free energy only through the prior and the
  entropy of ``q(w_k)``, by ``e_k (c^-2 - 1) / (2 alpha) + d log c`` (``e_k = tr(S_k + m_k m_k')``);
* **latent rotation and scale**: ``y -> A y``, ``w_k -> A^-T w_k`` (any invertible ``A``) leaves every
  expectation of the likelihood unchanged (``m_k' mu_i`` and ``tr((S_k + m_k m_k')(Sigma + mu_i mu_i'))``)
  and moves only the priors and entropies of ``q(Y)`` and ``q(W)``: the mean-field ``q(Y) q(W)`` drifts
  along it slowly, as in variational Bayesian PCA (Luttinen & Ilin 2010).

At ``sigma = 0.1`` (Fig. 1) the plain VEM still lowered the free energy after 1000 iterations (the
weights ``u`` of the active variables drifting down while their ``||m_k||`` grew) and hit its cap in 20/20
replicates. After the M-step each iteration therefore takes the exact minimizer along both families
(parameter expansion: Liu, Rubin & Wu 1998; Qi & Jaakkola 2006 for variational Bayes): the per-variable
``c_k = min(sqrt(e_k / (alpha d)), 1 / u_k)`` (``c_k = 1`` where ``u_k = 0``), then ``A = D V' B^-1/2``
(:func:`rotation_step`, closed form up to a scalar fixed point in ``alpha``), each followed by the exact
``alpha``. Both are exact block minimizations, so the free energy still never increases, and the fixed
points are those of the plain VEM. Iterations to the stopping rule below (5 data sets each, the same
starts): Fig. 1 setting (``n = 50, p = 30, d = 5, sigma = 0.1``) plain 3044-7629, scale step only 423-894,
both 50-66; Fig. 2 setting (``n = 50, p = 150, d = 10, sigma = 0.05``) plain 5522-6229, scale only
2242-3038, both 104-174, each time at the lowest free energy of the three (by 0.3-1.1 and 3.9-5.1 nats
below the plain VEM's end point).

Which ranking: the evidence over the VEM's path
-----------------------------------------------
The exact evidence is the model-selection criterion (Sec. 2.4), and the VEM only proposes the nested
models; its fixed point is not an evidence maximizer. So by default (``GSPPCA(ranking="evidence")``, when the
evidence selects ``q``) the rankings after iterations 1, 2, 4, 8, ... and at the VEM's end are all scored by
the exact evidence of their best nested model and the best is kept (``ranking_iter_``, ``ranking_evidence_``):
the model is the one of largest evidence over the union of these nested families, one evidence path per
distinct ranking (about ``log2(n_iter)`` paths). ``ranking="vem"`` keeps the paper's single ranking of the
converged VEM. With a forced ``n_selected`` the paper's ranking is used in both cases: there the evidence
does not choose the model, and on MNIST back-image (Table 2, ``q`` forced) the evidence-best ranking is an
early one whose pixels lie off the digit (on-digit share 0.09 against 0.54 for the converged ranking, quick
run), so the evidence would pick a less interpretable support there.

Why the rankings differ, measured on Golub (``d = 30``, the bias-corrected noise; the claim
``gsppca-r-evidence`` of ``experiments/bench_gsppca.py`` recomputes every number below). The evidence of a
support depends on the data only through each row's squared norms on the active and on the inactive variables
(Theorem 2). Moving a unit of row ``i``'s squared norm into the support gains ``w_i = 1/(2 sigma1^2)`` plus
the derivative of the active log density: 10.98-12.10 nats over Golub's 38 rows, nearly constant, so at a
given ``q`` the evidence ranks supports by their sum of squares. The variance order's best model
(``q = 2846``) scores -97912.8; reordering by the ``w_i``-weighted sums of squares adds 0.34 nats. The VEM's
``u_k = b_k / a_k`` (its M-step) fits each variable to the latent means; after its first iteration from the
PPCA start it orders the variables as their variance in the leading ``d``-dimensional PCA subspace does
(Spearman 1.0000), close to the variance order (0.995); its best model scores -97981.8 (``q = 2866``), 266
nats above the best of GSPPCA.R's final ranking. Later iterations move off the variance order (0.966 at the
end, 470 iterations): the end's best model (``q = 2802``) leaves 27.6 more squared norm out than the variance
order's top 2802 (the first iteration's: 5.5), which the ``w_i`` turn into 313 nats below it (measured 314;
first iteration 57, measured 57): -98268.3, 20.4 below R's. The VEM's noise, re-estimated from 0.197 to 0.297
along the iterations, is not the cause: held at the evidence's 0.197 the VEM still ends at -98205.6. The
authors' VEM (GSPPCA.R, without the scale and rotation steps) does the same: its ranking at iteration 2 scores
-97991.0, 257 nats above its end at 200 iterations. At ``d = 1`` the VEM's end is kept (iteration 103 of 103)
and equals R's; there the variance order scores 4065 nats higher still. On both, no ranking the VEM proposes
is the evidence's optimum; the default keeps the best of those it proposes, and adds no other.

On a Dask array (``dask.distributed``): :meth:`GSPPCA.fit` (the VEM from the ``p x p`` scatter, the evidence
on the workers; see there).

Stopping rule: the VEM stops when an iteration lowers the free energy by less than ``tol`` nats per entry
of ``X`` (``tol n p``, default ``tol = 1e-7``). The relative change ``|dF| / |F|`` used before (and by
GSPPCA.R, at ``1e-5`` with at most 200 iterations) is not scale-free: scaling ``X`` by ``c`` shifts ``F`` by
``n p log c``, so the same data in other units stopped at another iteration with another ``u``.

References
----------
P.-A. Mattei, C. Bouveyron and P. Latouche. Globally sparse probabilistic PCA. AISTATS 2016.
J. Luttinen and A. Ilin. Transformations in variational Bayesian factor analysis to speed up learning.
Neurocomputing 73, 2010.
C. Liu, D. B. Rubin and Y. N. Wu. Parameter expansion to accelerate EM: the PX-EM algorithm. Biometrika 85(4),
1998.
Y. Qi and T. S. Jaakkola. Parameter expanded variational Bayesian methods. NIPS 2006.
N. M. Temme. Special functions: an introduction to the classical functions of mathematical physics.
Wiley, 1996 (uniform asymptotic expansion of K_nu, Sec. 9.7); DLMF 10.41.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import integrate, special
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._base import NONNEG_REAL, POSITIVE_INT, RANDOM_STATE, ProjectionMixin, RealInterval, dask_rows
from .._threads import blas_limited
from .._validation import (
    check_array,
    check_bool,
    check_features,
    check_has_variance,
    check_int,
    check_n_components,
    check_n_features,
    check_random_state,
    check_real,
    check_scale,
    is_dask,
    unscale,
    warn_not_converged,
)
from ._kernels import kv_ratio_up

__all__ = [
    "EVIDENCE_TIE",
    "GSPPCA",
    "EvidencePath",
    "VEMResult",
    "evidence_path",
    "gsppca_vem",
    "log_bessel_k",
    "log_density",
    "log_evidence",
    "make_globally_sparse",
    "rank_variables",
    "rotation_step",
    "row_log_density",
    "theorem1_density",
    "vem_init",
    "vem_iterations",
]

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


def _rescale(X, sigma1=None, alpha=None):
    """``X / s`` with ``s`` from :func:`repro._validation.check_scale` (1 for ordinarily scaled data).

    Every quantity here is scale-equivariant: on ``X / s`` a given ``sigma1`` is ``sigma1 / s`` and a given
    ``alpha`` (a variance) ``alpha / s^2``; a log density of ``X`` is that of ``X / s`` minus ``p log s`` per
    row. Returns ``X / s, s, sigma1, alpha``.
    """
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
    X = check_array(X, "X", min_samples=2)
    n, p = X.shape
    d = _check_d(n_components, n, p)
    Xc = X - X.mean(axis=0)
    return Xc, d, _noise_sq(Xc, d, sigma1)


# --------------------------------------------------------------------------- Theorem 2 in log space
def row_log_density(r2, out2, q, p, d, log_alpha, s2):
    """Per-row log density of Theorem 2 (corrected) of a model with ``q`` of ``p`` variables active.

    Parameters
    ----------
    r2, out2 : ndarray, shape (n_samples,)
        Squared norms of each row on the active and on the inactive variables.
    q, p, d : int
        Active variables, all variables, components.
    log_alpha : float
        ``log alpha``, the prior variance of the loadings.
    s2 : float
        ``sigma1^2``, the noise variance of the inactive variables.

    Returns
    -------
    ndarray, shape (n_samples,)
        ``log p(x_i)``; their sum is :func:`log_evidence` of the model.
    """
    nu = abs(q - d) / 2.0
    r = np.sqrt(r2)
    z = r * np.exp(-0.5 * log_alpha)
    const = (
        -(q + d) / 4.0 * log_alpha
        - 0.5 * p * _LOG_2PI
        + (1.0 - 0.5 * d) * math.log(2.0)
        - math.lgamma(0.5 * d)
        - 0.5 * (p - q) * np.log(s2)
    )
    return const - out2 / (2.0 * s2) + 0.25 * (d - q) * np.log(r2) + log_bessel_k(nu, z)


def _alpha_mle(r2: np.ndarray, q: np.ndarray, d: int) -> np.ndarray:
    """``log alpha`` maximizing the evidence of each column (model) of ``r2`` (n x m), all at once.

    With ``t = log alpha``, ``z_i = r_i e^(-t/2)``, ``nu = |q - d|/2`` and ``R = K_(nu+1)/K_nu``, the score is
    ``g(t) = (1/2) sum_i z_i R(z_i) - n max(q, d) / 2``. ``z R(z)`` increases in ``z`` (from ``2 nu`` to
    ``+inf``), so ``g`` decreases in ``t`` from ``+inf`` to ``-n min(q, d)/2 < 0``: the maximizer is its
    unique root. Newton's method on ``g``, with ``g'(t) = -(1/4) sum_i z_i (z_i R_i^2 - 2 nu R_i - z_i)``
    (from ``R' = R^2 - (2nu+1) R / z - 1``), safeguarded by the bracket that the signs of ``g`` build up
    (bisection when a step leaves it, steps capped at 2 in ``t``), started at the moment estimate
    ``E||x_v||^2 = alpha d q``. Only the columns not yet converged are evaluated.
    """
    n = r2.shape[0]
    nu_all = np.abs(q - d) / 2.0
    r_all = np.sqrt(r2)

    def sums(ta, active):
        return _newton_sums(r_all[:, active] * np.exp(-0.5 * ta)[None, :], nu_all[active])

    return _alpha_newton(sums, np.log(r2.mean(axis=0) / (d * q)), q, d, n)


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


def _newton_sums(z: np.ndarray, nu: np.ndarray):
    """Column sums of ``z R`` and ``z (z R^2 - 2 nu R - z)`` (``R = K_(nu+1)(z) / K_nu(z)``,
    :func:`_kv_ratio`): the score of :func:`_alpha_mle` and its derivative, summed over the rows of ``z``
    (one row per observation)."""
    nub = np.broadcast_to(nu, z.shape)
    R = _kv_ratio(nub, z)
    return (z * R).sum(axis=0), (z * (z * R * R - 2.0 * nub * R - z)).sum(axis=0)


def _alpha_newton(sums, t0: np.ndarray, q: np.ndarray, d: int, n: int) -> np.ndarray:
    """The safeguarded Newton iterations of :func:`_alpha_mle` from ``t0``, vectorized over the models.

    ``sums(t, active)`` returns the two row sums of :func:`_newton_sums` at ``log alpha = t`` for the models
    (columns) ``active``: from the rows in memory, or from one distributed pass over them
    (:func:`_dask_evidence_path`).
    """
    m = t0.size
    target_all = 0.5 * n * np.maximum(q, d)
    t = np.array(t0, dtype=np.float64)
    lo = np.full(m, -np.inf)
    hi = np.full(m, np.inf)
    active = np.arange(m)
    for _ in range(_MAX_ROOT_ITER):
        if active.size == 0:
            break
        ta = t[active]
        zr, zz = sums(ta, active)
        g = 0.5 * zr - target_all[active]
        dg = -0.25 * zz
        pos = g > 0
        lo[active] = np.where(pos, ta, lo[active])
        hi[active] = np.where(pos, hi[active], ta)
        step = np.where(dg < 0, -g / np.where(dg < 0, dg, -1.0), np.where(pos, 2.0, -2.0))
        step = np.clip(step, -2.0, 2.0)
        new = ta + step
        la, ha = lo[active], hi[active]
        outside = (new <= la) | (new >= ha)
        both = np.isfinite(la) & np.isfinite(ha)
        new = np.where(outside & both, 0.5 * (la + ha), new)
        new = np.where(outside & ~both, np.where(pos, ta + 2.0, ta - 2.0), new)
        t[active] = new
        done = (np.abs(new - ta) <= _ROOT_TOL * np.maximum(1.0, np.abs(ta))) | (g == 0)
        active = active[~done]
    return t


def log_density(X, support, *, n_components, alpha, sigma1) -> np.ndarray:
    """Log density of each row of ``X`` under Theorem 2 (corrected; see the module docstring).

    The rows are used as given (no centring): this is the density of the noiseless model, Eq. (6).

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
    support : bool mask of length n_features, or int indices
        The active variables ``v``.
    n_components : int
        ``d``, the latent dimension.
    alpha, sigma1 : float > 0
        Prior variance of the loadings and noise standard deviation of the inactive variables.

    Returns
    -------
    ndarray, shape (n_samples,)
    """
    X = check_array(X, "X")
    p = X.shape[1]
    d = check_int(n_components, "n_components", low=1)
    mask = _support_mask(support, p)
    alpha = check_real(alpha, "alpha", low=0.0, low_inclusive=False)
    s2 = check_real(sigma1, "sigma1", low=0.0, low_inclusive=False) ** 2
    r2 = np.einsum("ij,ij->i", X[:, mask], X[:, mask])
    if np.any(r2 == 0):
        raise ValueError("X has a row that is zero on the support: the noiseless density is degenerate.")
    out2 = np.einsum("ij,ij->i", X[:, ~mask], X[:, ~mask])
    return row_log_density(r2, out2, int(mask.sum()), p, d, math.log(alpha), s2)


@blas_limited
def log_evidence(X, support, *, n_components, alpha=None, sigma1="bc", return_params=False):
    """Exact log evidence ``sum_i log p(x_i | v, alpha, sigma1)`` of Theorem 2 (corrected), Eq. (6).

    Computed in log space with scaled Bessel functions and the uniform asymptotic expansion at large
    orders (:func:`log_bessel_k`), so it stays finite for ``p``, ``q`` in the thousands. ``X`` is centred.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
        The data (centred here).
    support : bool mask or int indices
        The active variables (``q = |support|`` in ``1..n_features``).
    n_components : int
        ``d``, ``1 <= d < min(n_samples, n_features)``.
    alpha : float > 0, optional
        Default: the maximizer of the evidence (a univariate root of its score in ``log alpha``).
    sigma1 : float > 0, "bc" or "ml"
        The noise standard deviation of the inactive variables, or its estimate from the spectrum of
        ``Xc'Xc / n``: ``"ml"`` the PPCA maximum-likelihood estimate (the paper's Sec. 2.2), ``"bc"``
        (default; ``None`` means ``"bc"``) its bias-corrected version, the default of the authors'
        GSPPCA.R (:func:`_sigma1_sq`).
    return_params : bool
        Also return ``(alpha, sigma1)`` as used.

    Returns
    -------
    float, or (float, float, float)
        The log evidence; with ``return_params``, also ``alpha`` and ``sigma1``.

    See Also
    --------
    evidence_path : every nested model along a ranking, in one pass.
    theorem1_density : the noisy model's density (Theorem 1).

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Theorem 2, Eq. (6) (corrected: see the module docstring).

    Examples
    --------
    The true support has a larger evidence than the same support less or plus a variable:

    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> np.flatnonzero(v).tolist()
    [4, 6, 9, 10, 14]
    >>> from repro import log_evidence
    >>> true = log_evidence(X, v, n_components=2)
    >>> less = log_evidence(X, [4, 6, 9, 10], n_components=2)
    >>> more = log_evidence(X, [4, 6, 9, 10, 14, 0], n_components=2)
    >>> bool(true > less), bool(true > more)
    (True, True)
    """
    return_params = check_bool(return_params, "return_params")
    X, sc, sigma1, alpha = _rescale(X, sigma1, alpha)
    Xc, d, s2 = _prepare(X, n_components, sigma1)
    n, p = Xc.shape
    mask = _support_mask(support, p)
    q = int(mask.sum())
    r2 = np.einsum("ij,ij->i", Xc[:, mask], Xc[:, mask])
    if np.any(r2 == 0):
        raise ValueError(
            "X (centred) has a row that is zero on the support: the noiseless evidence is degenerate there; "
            "add variables to the support."
        )
    out2 = np.einsum("ij,ij->i", Xc[:, ~mask], Xc[:, ~mask])
    if alpha is None:
        log_alpha = float(_alpha_mle(r2[:, None], np.array([float(q)]), d)[0])
    else:
        log_alpha = math.log(check_real(alpha, "alpha", low=0.0, low_inclusive=False))
    value = float(row_log_density(r2, out2, q, p, d, log_alpha, s2).sum()) - n * p * math.log(sc)
    if return_params:
        alpha_x = float(unscale(math.exp(log_alpha), sc, 2, "prior variance alpha", underflow=False))
        return value, alpha_x, float(unscale(math.sqrt(s2), sc, 1, "noise standard deviation"))
    return value


@dataclass
class EvidencePath:
    """Exact log evidence of the nested models ``order[:q]``, ``q = 1..p``.

    Attributes
    ----------
    order : ndarray of int, shape (p,)
        The ranking of the variables, most relevant first.
    log_evidence : ndarray, shape (p,)
        Entry ``q - 1`` for the model of the first ``q`` variables (``-inf`` where degenerate: a row zero
        on the support).
    alpha : ndarray, shape (p,)
        The maximizing ``alpha`` of each model.
    sigma1 : float
        The inactive noise standard deviation used by every model.

    See Also
    --------
    evidence_path : the function that returns it (see there for an example).
    """

    order: np.ndarray
    log_evidence: np.ndarray
    alpha: np.ndarray
    sigma1: float

    @property
    def best_q(self) -> int:
        return int(np.argmax(self.log_evidence)) + 1


@blas_limited
def evidence_path(X, order, *, n_components, sigma1="bc") -> EvidencePath:
    """Log evidence (``alpha`` maximized) of every nested model along ``order``, in one pass.

    The squared norms of the active and inactive parts of every row for every ``q`` come from one
    cumulative sum along ``order``; the ``p`` univariate maximizations in ``alpha`` are solved together,
    vectorized over ``q`` (blocks of columns), each from its moment estimate.

    Parameters
    ----------
    X : array_like, shape (n_samples, n_features)
        The data (centred here).
    order : int array, a permutation of ``0..n_features-1``
        The ranking of the variables, most relevant first.
    n_components : int
        ``d``, ``1 <= d < min(n_samples, n_features)``.
    sigma1 : float > 0, "bc" or "ml"
        As in :func:`log_evidence`.

    Returns
    -------
    EvidencePath
        ``log_evidence[q - 1]`` and ``alpha[q - 1]`` for the model of the first ``q`` variables of
        ``order``; ``best_q`` the ``q`` of largest evidence.

    See Also
    --------
    log_evidence : one model.
    GSPPCA : ranks the variables by the VEM and selects ``best_q`` of them.

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Section 2.4 (the path of nested models) and Theorem 2.

    Examples
    --------
    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> np.flatnonzero(v).tolist()
    [4, 6, 9, 10, 14]
    >>> from repro import evidence_path, log_evidence
    >>> order = np.r_[np.flatnonzero(v), np.flatnonzero(~v)]  # the true variables first
    >>> path = evidence_path(X, order, n_components=2)
    >>> path.best_q
    5
    >>> bool(np.isclose(path.log_evidence[4], log_evidence(X, v, n_components=2)))
    True
    """
    X, sc, sigma1, _ = _rescale(X, sigma1)
    Xc, d, s2 = _prepare(X, n_components, sigma1)
    n, p = Xc.shape
    order = np.asarray(order)
    if (
        order.shape != (p,)
        or not np.issubdtype(order.dtype, np.integer)
        or np.unique(order).size != p
        or (order.min() < 0 or order.max() >= p)
    ):
        raise ValueError(f"order must be a permutation of 0..{p - 1} (an int array of length {p}).")
    r2_all, out2_all = _cum_norms(Xc[:, order])
    logev = np.full(p, -np.inf)
    log_alpha = np.full(p, np.nan)
    block = max(1, _BLOCK // n)
    for start in range(0, p, block):
        sl = slice(start, min(p, start + block))
        r2 = r2_all[:, sl]
        ok = np.all(r2 > 0, axis=0)
        if not ok.any():
            continue
        qs = np.arange(sl.start, sl.stop, dtype=np.float64) + 1.0
        r2, out2, qs = r2[:, ok], out2_all[:, sl][:, ok], qs[ok]
        t = _alpha_mle(r2, qs, d)
        cols = np.arange(sl.start, sl.stop)[ok]
        log_alpha[cols] = t
        logev[cols] = n * _path_const(t, qs, p, d, s2) + _path_rows(r2, out2, t, qs, d, s2).sum(axis=0)
    return EvidencePath(
        order=order.astype(np.int64),
        log_evidence=logev - n * p * math.log(sc),
        alpha=unscale(np.exp(log_alpha), sc, 2, "prior variances alpha", underflow=False),
        sigma1=float(unscale(math.sqrt(s2), sc, 1, "noise standard deviation")),
    )


def _cum_norms(Xo: np.ndarray):
    """Squared norms of every row on the first ``q`` columns of ``Xo`` and on the others, ``q = 1..p``."""
    sq = Xo**2
    r2 = np.cumsum(sq, axis=1)
    out2 = np.zeros_like(r2)
    out2[:, :-1] = np.cumsum(sq[:, ::-1], axis=1)[:, ::-1][:, 1:]  # no cancellation near q = p
    return r2, out2


def _path_const(t, qs, p, d, s2):
    """The row-independent part of the log density of the models of sizes ``qs`` at ``log alpha = t``."""
    return (
        -(qs + d) / 4.0 * t
        - 0.5 * p * _LOG_2PI
        + (1.0 - 0.5 * d) * math.log(2.0)
        - math.lgamma(0.5 * d)
        - 0.5 * (p - qs) * math.log(s2)
    )


def _path_rows(r2, out2, t, qs, d, s2):
    """The row-dependent part of the log density (rows by models), the rest of :func:`_path_const`."""
    nu = np.abs(qs - d) / 2.0
    z = np.sqrt(r2) * np.exp(-0.5 * t)[None, :]
    return -out2 / (2.0 * s2) + 0.25 * (d - qs)[None, :] * np.log(r2) + log_bessel_k(nu[None, :], z)


# --------------------------------------------------------------------------- the path on dask.distributed
def _min_parts(parts):
    """The reduction of a ``"min"`` pass: the chunks' tuples of ``p``-vectors, elementwise minima."""
    return [np.minimum.reduce(np.asarray(vs, dtype=np.float64)) for vs in zip(*parts, strict=True)]


def _path_chunk(Xb, _cache, mean, order, what, *args):
    """Per-model sums over the rows of one chunk: the cumulative squared norms of its centred rows along
    ``order`` (:func:`_cum_norms`) reduced to their column minima (``what="min"``), the two Newton sums at
    ``log alpha = t`` for the models ``cols`` (``"newton"``, :func:`_newton_sums`), or the row parts of the
    log evidence (``"evidence"``, :func:`_path_rows`)."""
    Xo = (np.asarray(Xb, dtype=np.float64) - mean)[:, order]
    r2, out2 = _cum_norms(Xo)
    if what == "min":
        return (r2.min(axis=0) if r2.shape[0] else np.full(order.size, np.inf),)
    t, cols, d = args[:3]
    qs = cols + 1.0
    if what == "newton":
        return _newton_sums(np.sqrt(r2[:, cols]) * np.exp(-0.5 * t)[None, :], np.abs(qs - d) / 2.0)
    return (_path_rows(r2[:, cols], out2[:, cols], t, qs, d, args[3]).sum(axis=0),)


def _dask_evidence_path(src, n, mean, diag, order, d, s2) -> EvidencePath:
    """:func:`evidence_path` of the data of ``src`` (a :class:`repro._chunked.DaskSource`, centred by
    ``mean``) on the workers: passes of :meth:`~repro._chunked.DaskSource.map_reduce`.

    One pass for the models that are degenerate (a row zero on the support), one per safeguarded Newton
    iteration of :func:`_alpha_newton` (the models still moving; started, as in memory, at the moment
    estimate, from ``diag``: the diagonal of ``Xc'Xc``), one for the log evidence; each pass returns
    ``p``-vectors per row chunk.
    """
    p = order.size
    (rmin,) = src.map_reduce(_path_chunk, _min_parts, mean, order, "min")
    cols = np.flatnonzero(rmin > 0)
    logev = np.full(p, -np.inf)
    log_alpha = np.full(p, np.nan)
    if cols.size:
        qs = cols + 1.0
        t0 = np.log(np.cumsum(diag[order])[cols] / n / (d * qs))

        def sums(ta, active):
            return src.map_sum(_path_chunk, mean, order, "newton", ta, cols[active], d)

        t = _alpha_newton(sums, t0, qs, d, n)
        (rows,) = src.map_sum(_path_chunk, mean, order, "evidence", t, cols, d, s2)
        logev[cols] = n * _path_const(t, qs, p, d, s2) + rows
        log_alpha[cols] = t
    return EvidencePath(
        order=order.astype(np.int64), log_evidence=logev, alpha=np.exp(log_alpha), sigma1=math.sqrt(s2)
    )


# --------------------------------------------------------------------------- Theorem 1
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
        xx = float(np.einsum("ij,ij->", X, X))
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
    X : array_like, shape (n_samples, n_features)
        The data (centred here).
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


def _run_vem(Xc, d, max_iter, tol, rng, *, scatter=None, checkpoints=None) -> VEMResult:
    """Start and iterate the VEM on centred ``Xc``, or on ``scatter = (n, Xc'Xc)``.

    The start is :func:`vem_init`, the iterations :func:`vem_iterations`.
    """
    if scatter is None:
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


# --------------------------------------------------------------------------- estimator
class GSPPCA(ProjectionMixin, BaseEstimator):
    """Globally sparse probabilistic PCA (Mattei, Bouveyron & Latouche 2016, Sec. 2.4).

    VEM on the relaxed model, ranking of the variables by ``u``, the exact evidence (Theorem 2, corrected;
    ``alpha`` maximized per model, ``sigma1`` a PPCA noise estimate) over the ``p`` nested models, then
    PCA on the selected variables. ``score`` is the mean log-likelihood under the fitted model.

    Parameters
    ----------
    n_components : int, default 1
        ``d``, ``1 <= d < min(n_samples, n_features)`` (the authors' Golub example uses 1 and 30).
    n_selected : "evidence" or int
        ``"evidence"``: the model of largest evidence; an int forces ``q``.
    sigma1 : "bc", "ml" or float > 0, default "bc"
        The noise of the inactive variables in the evidence: ``"bc"`` the bias-corrected PPCA estimate
        (Passemier, Li & Yao 2017), the default of the authors' GSPPCA.R; ``"ml"`` the PPCA
        maximum-likelihood estimate of the paper's Sec. 2.2; or a given value (:func:`_sigma1_sq`).
    max_iter, tol : int, float
        VEM stopping rule: at most ``max_iter`` iterations, until one lowers the free energy by less than
        ``tol`` nats per entry of ``X`` (module docstring).
    ranking : "evidence" or "vem", default "evidence"
        The ranking of the variables whose nested models the evidence compares. ``"evidence"``: of the VEM's
        rankings after iterations 1, 2, 4, 8, ... and at its end, the one whose best model has the largest
        exact evidence (module docstring, "Which ranking"); ``"vem"``: the ranking at the VEM's end (the
        paper's Sec. 2.4). With an int ``n_selected`` both use the VEM's final ranking.
    random_state : None, int or Generator
        The random rotation of the VEM's PPCA start.

    Attributes
    ----------
    support_ : ndarray of bool, shape (n_features,)
        The selected variables: the first ``n_selected_`` of ``ranking_``.
    n_selected_ : int
        ``q``, the number of selected variables (of largest evidence, or as forced by ``n_selected``).
    u_ : ndarray, shape (n_features,)
        The VEM's relaxed selection weights in ``[0, 1]`` (Eq. 7), one per variable.
    ranking_ : ndarray of int, shape (n_features,)
        The variables by decreasing ``u`` of the VEM at iteration ``ranking_iter_`` (ties by the unclipped
        ratio ``b/a``, then by index); ``u_`` is the VEM's final ``u``.
    ranking_iter_ : int
        The VEM iteration whose ranking was kept (``n_iter_`` with ``ranking="vem"``).
    ranking_evidence_ : ndarray, shape (n_rankings, 2)
        For each distinct ranking evaluated, its VEM iteration and the log evidence of its best model.
    evidence_path_ : ndarray, shape (n_features,)
        Log evidence of the model of the first ``q`` ranked variables, at index ``q - 1``.
    alpha_path_ : ndarray, shape (n_features,)
        The evidence-maximizing loading variance ``alpha`` of each of those models.
    sigma1_ : float
        The inactive noise standard deviation used by the evidence: the estimate named by ``sigma1``
        (:func:`_sigma1_sq`; by default the bias-corrected one) or the given value.
    free_energy_ : ndarray
        Free energy after each VEM iteration (non-increasing).
    n_iter_ : int
        VEM iterations run.
    vem_ : VEMResult
        Everything the VEM returned (see :func:`gsppca_vem`).
    components_ : ndarray, shape (``min(n_components, n_selected_)``, n_features)
        Principal axes of ``X[:, support_]`` (unit rows, zero outside the support).
    explained_variance_ : ndarray
        Their variances (ddof=1).
    mean_ : ndarray, shape (n_features,)
        Column means of the training data (subtracted by ``transform``).
    n_features_in_ : int
        Number of features seen by ``fit``.
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Column names of ``X`` when ``fit`` got a DataFrame with string column names (only then);
        ``transform`` and ``score`` then refuse a DataFrame whose columns differ or are reordered.

    See Also
    --------
    gsppca_vem, evidence_path, log_evidence
    repro.baselines.SSPCA : the structured sparse PCA baseline of the paper.

    References
    ----------
    Mattei, P.-A., Bouveyron, C. & Latouche, P. (2016). Globally sparse probabilistic PCA. AISTATS,
    Sections 2.3-2.4 (Eqs. 5-7, Theorem 2, Proposition 1).

    Examples
    --------
    >>> import numpy as np
    >>> from repro.gsppca import make_globally_sparse
    >>> X, v = make_globally_sparse(100, 20, 2, 5, sigma=0.1, random_state=0)  # 5 of 20 variables active
    >>> np.flatnonzero(v).tolist()
    [4, 6, 9, 10, 14]
    >>> from repro import GSPPCA
    >>> est = GSPPCA(n_components=2, random_state=0).fit(X)
    >>> est.n_selected_, np.flatnonzero(est.support_).tolist()
    (5, [4, 6, 9, 10, 14])
    >>> int(np.argmax(est.evidence_path_)) + 1 == est.n_selected_
    True
    >>> est.components_.shape, est.transform(X).shape
    ((2, 20), (100, 2))
    >>> bool(est.ranking_evidence_[:, 1].max() == est.evidence_path_.max())  # the kept ranking's best model
    True
    >>> GSPPCA(n_components=2, ranking="vem", random_state=0).fit(X).ranking_iter_ == est.n_iter_
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_components": [POSITIVE_INT],
        "n_selected": [StrOptions({"evidence"}), POSITIVE_INT],
        "sigma1": [StrOptions(set(NOISE_ESTIMATES)), RealInterval(0, None, closed="neither")],
        "max_iter": [POSITIVE_INT],
        "tol": [NONNEG_REAL],
        "ranking": [StrOptions(set(RANKINGS))],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        n_components=1,
        *,
        n_selected="evidence",
        sigma1="bc",
        max_iter=1000,
        tol=1e-7,
        ranking="evidence",
        random_state=None,
    ):
        self.n_components = n_components
        self.n_selected = n_selected
        self.sigma1 = sigma1
        self.max_iter = max_iter
        self.tol = tol
        self.ranking = ranking
        self.random_state = random_state

    @blas_limited
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit on ``X`` (n_samples, n_features), which is centred; returns self.

        Badly scaled data (largest magnitude outside ``[2^-256, 2^256]``) are fitted as ``X / s`` and the
        results multiplied back (:func:`_rescale`); data with no variance are refused.

        A ``dask.array`` is fitted where it lies (on a ``dask.distributed`` cluster, persisted or not),
        never gathered. The VEM uses the data only through the ``p x p`` scatter ``Xc'Xc`` (module
        docstring: ``Mu = X G``, ``C = X' Mu = S G``, ``Mu' Mu = G' S G``), formed in one distributed pass
        (:func:`repro._chunked.dask_covariance`, after one pass for the largest magnitude); the exact
        evidence of every nested model of a ranking is a sum over the rows of a non-linear function of
        their norms, so it is evaluated on the workers (:func:`_dask_evidence_path`): one pass for the
        degenerate models, one per Newton iteration in ``log alpha`` (all ``p`` models at once; each row
        chunk returns, per model, the two row sums of the Newton step) and one for the evidence values.
        What stays on the workers: ``X`` and, per task, the cumulative squared norms of one row chunk
        (``rows x p``). What the client holds: the ``p x p`` scatter, ``p``-vectors and the ``p x d``
        loadings (refused with a ValueError above :data:`repro._chunked.CLIENT_LIMIT_BYTES`); the
        latent means ``vem_.Mu`` stay a lazy Dask array (``(X - mean_) G``). The answer is the in-memory
        one up to round-off (sums in another order), and the VEM's cost per iteration is ``O(p^2 d)``
        instead of ``O(n p d)``: meant for tall data.

        Parameters
        ----------
        X : array_like or dask.array.Array, shape (n_samples, n_features)
            Training data.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        self
            The fitted estimator.
        """
        check_features(self, X)
        if is_dask(X):
            return self._fit_dask(X)
        X = check_array(X, "X", min_samples=2)
        n, p = X.shape
        forced = self._check_params(p)
        d = _check_d(self.n_components, n, p)
        check_has_variance(X, "GSPPCA")
        Xs, sc, sigma1, _ = _rescale(X, self.sigma1)
        mean = Xs.mean(axis=0)
        Xc = Xs - mean
        _noise_sq(Xc, d, sigma1)  # refuse a zero noise estimate or a bad sigma1 before the VEM runs
        cps = [] if self.ranking == "evidence" and forced is None else None
        res = _run_vem(Xc, d, self.max_iter, self.tol, check_random_state(self.random_state), checkpoints=cps)

        def path_of(order):
            return evidence_path(Xc, order, n_components=d, sigma1=sigma1)

        order, path = self._choose_ranking(res, cps, path_of)
        support = np.zeros(p, dtype=bool)
        support[order[: forced or path.best_q]] = True
        k = min(d, int(support.sum()), n - 1)
        _, sv, Vt = np.linalg.svd(Xc[:, support], full_matrices=False)
        return self._store(res, order, path, support, Vt[:k], sv[:k] ** 2, mean, sc, n, p)

    def _check_params(self, p):
        """The checks that depend on the data (the others are ``_parameter_constraints``'); the forced ``q``
        or None."""
        if p < 2:
            raise ValueError(
                "X has 1 feature(s); GSPPCA selects variables among at least 2 (n_components < n_features)."
            )
        if isinstance(self.n_selected, str):  # "evidence", the only string the constraints let through
            return None
        return check_int(self.n_selected, "n_selected", low=1, high=p)

    def _choose_ranking(self, res, checkpoints, path_of):
        """The ranking (and its evidence path) whose best model has the largest exact evidence among the VEM's
        rankings at its checkpoints and at its end (``checkpoints`` a list: ``ranking="evidence"`` and the
        evidence selects ``q``), or the ranking at the VEM's end (``checkpoints`` None). Ties go to the
        later iteration, and evidences within :data:`EVIDENCE_TIE` (relative) of each other tie: rankings
        that order the same best set of variables differently give that set's evidence summed in
        another order (1e-15 apart on Fig. 1's data). Each distinct ranking is evaluated once (at the
        latest iteration that gave it)."""
        cands = [(it, rank_variables(u, r)) for it, u, r in checkpoints or ()]
        cands.append((res.n_iter, rank_variables(res.u, res.u_ratio)))
        best, seen, record = None, set(), []
        for it, order in reversed(cands):  # a ranking met again earlier counts at its latest iteration
            key = order.tobytes()
            if key in seen:
                continue
            seen.add(key)
            path = path_of(order)
            value = float(path.log_evidence.max())
            record.append((it, value))
            if best is None or value > best[0] + EVIDENCE_TIE * max(1.0, abs(best[0])):
                best = (value, it, order, path)
        self.ranking_iter_ = int(best[1])
        self.ranking_evidence_ = np.array(record[::-1], dtype=np.float64)
        return best[2], best[3]

    def _store(self, res, order, path, support, V, sq, mean, sc, n, p):
        """Set the fitted attributes (``V``, ``sq``: the leading right singular vectors and squared singular
        values of the selected centred columns) from a fit on ``X / sc``; returns self."""
        comps = np.zeros((V.shape[0], p))
        flip = np.sign(V[np.arange(V.shape[0]), np.argmax(np.abs(V), axis=1)])
        comps[:, support] = V * flip[:, None]
        self.components_ = comps
        self.explained_variance_ = unscale(sq / (n - 1), sc, 2, "variances", underflow=False)
        self.support_ = support
        self.n_selected_ = int(support.sum())
        self.u_ = res.u
        self.ranking_ = order
        self.evidence_path_ = path.log_evidence - n * p * math.log(sc)
        self.ranking_evidence_[:, 1] -= n * p * math.log(sc)
        self.alpha_path_ = unscale(path.alpha, sc, 2, "prior variances alpha", underflow=False)
        self.sigma1_ = float(unscale(path.sigma1, sc, 1, "noise standard deviation"))
        self.vem_ = _unscale_vem(res, sc, n, p)
        self.free_energy_ = self.vem_.free_energy
        self.n_iter_ = res.n_iter
        self.mean_ = unscale(mean, sc, 1, "means")
        self.n_features_in_ = p
        return self

    def _fit_dask(self, X):
        """:meth:`fit` of a Dask array, on the workers (see there)."""
        import dask
        import dask.array as da

        from .._chunked import DaskSource, check_dask_array, dask_covariance
        from .._validation import _scale_for

        check_dask_array(X, "X")
        p = int(X.shape[1])
        forced = self._check_params(p)
        (top,) = dask.compute(da.abs(X).max())  # the largest magnitude (one pass, a scalar comes back)
        sc = _scale_for(float(top))
        Xs = X / sc if sc != 1.0 else X
        n, mean, S = dask_covariance(Xs, "X", min_samples=2)
        d = _check_d(self.n_components, n, p)
        if not float(np.trace(S)) > 0.0:
            raise ValueError(
                "X has no variance (every column is constant, e.g. all zeros), so GSPPCA has no component "
                "to find; check the data."
            )
        sigma1 = self.sigma1
        if sigma1 is not None and not isinstance(sigma1, str):
            sigma1 = check_real(sigma1, "sigma1", low=0.0, low_inclusive=False) / sc
        s2 = _noise_sq(None, d, sigma1, scatter=(n, S))
        cps = [] if self.ranking == "evidence" and forced is None else None
        rng = check_random_state(self.random_state)
        res = _run_vem(None, d, self.max_iter, self.tol, rng, scatter=(n, S), checkpoints=cps)
        res.Mu = (Xs - mean) @ res.Mu  # the latent means, lazy: X G (vem_iterations)
        src = DaskSource(Xs, first_pass=False)
        diag = np.diag(S).copy()

        def path_of(order):
            return _dask_evidence_path(src, n, mean, diag, order, d, s2)

        order, path = self._choose_ranking(res, cps, path_of)
        support = np.zeros(p, dtype=bool)
        support[order[: forced or path.best_q]] = True
        k = min(d, int(support.sum()), n - 1)
        vals, vecs = np.linalg.eigh(S[np.ix_(support, support)])
        V = vecs[:, ::-1][:, :k].T
        return self._store(res, order, path, support, V, np.clip(vals[::-1][:k], 0.0, None), mean, sc, n, p)

    def score_samples(self, X):
        """Log density of each row of ``X`` under the fitted model (Theorem 2, corrected).

        The model of largest evidence: the selected variables ``support_``, ``alpha`` its maximizing
        ``alpha_path_[n_selected_ - 1]``, the noise ``sigma1_`` on the other variables, rows centred by
        ``mean_``. Badly scaled data are evaluated as ``(X - mean_) / s`` (minus ``p log s`` per row).

        Parameters
        ----------
        X : array_like or dask.array.Array, shape (n_samples, n_features)
            Data with the training data's features.

        Returns
        -------
        ndarray or dask.array.Array, shape (n_samples,)
            The log density of each row (lazy, chunk by chunk where the data are, for Dask input).
        """
        check_is_fitted(self, "support_")
        lazy = dask_rows(X, self.score_samples)
        if lazy is not None:
            return lazy
        X = check_n_features(self, X)
        Xc = X - self.mean_
        s = check_scale(Xc)
        alpha = float(self.alpha_path_[self.n_selected_ - 1]) / s / s
        out = log_density(
            Xc / s, self.support_, n_components=self.n_components, alpha=alpha, sigma1=self.sigma1_ / s
        )
        return out - self.n_features_in_ * math.log(s)

    def score(self, X, y=None):
        """Mean log-likelihood of the rows of ``X`` under the fitted model (:meth:`score_samples`).

        Parameters
        ----------
        X : array_like, shape (n_samples, n_features)
            Data with the training data's features.
        y : None
            Ignored (scikit-learn convention).

        Returns
        -------
        float or dask.array.Array
            The mean of :meth:`score_samples` (higher is better); a lazy 0-d Dask array for Dask input.
        """
        out = self.score_samples(X)
        return out.mean() if is_dask(out) else float(np.mean(out))
