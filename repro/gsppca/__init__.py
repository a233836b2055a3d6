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

Files
-----
``estimator.py`` the door: :class:`GSPPCA` (Sec. 2.4); ``vem.py`` the variational EM (Prop. 1, Eqs. 10-14) and
the ranking; ``evidence.py`` Theorem 2 and the evidence path; ``model.py`` Theorem 1 and the simulation of
Sec. 3; ``bessel.py`` ``log K_nu`` and ``K_(nu+1) / K_nu``; ``_common.py`` the checks and tolerances they
share; ``_kernels.py`` the Numba kernel of the Bessel ratio.
"""

from ._common import EVIDENCE_TIE
from .bessel import log_bessel_k
from .estimator import GSPPCA
from .evidence import EvidencePath, evidence_path, log_density, log_evidence, row_log_density
from .model import make_globally_sparse, theorem1_density
from .vem import VEMResult, gsppca_vem, rank_variables, rotation_step, vem_init, vem_iterations

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
