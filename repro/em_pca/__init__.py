"""EM algorithms for PCA and for sensible PCA (SPCA) of Roweis (1997).

Conventions
-----------
Data are ``(n_samples, n_features)`` = ``(n, p)``: one sample per row, i.e. Roweis' ``p x n`` matrix ``Y``
transposed. The paper's ``C`` (``p x k``) is kept as is; its latent states ``X`` (``k x n`` in the paper) are
rows here, ``Z = X'`` (``n x k``). With ``Y`` centred:

EM PCA (zero-noise limit, Sec. 3)
    e-step ``X = (C'C)^-1 C'Y``, m-step ``C_new = Y X'(XX')^-1``. With ``C = QR`` (thin QR) and one pass over
    the data computing ``U = Y Q``, ``A = Y'U`` and ``G = U'U`` the two steps are ``Z = U R^-T`` and
    ``C_new = A G^-1 R`` (substitute ``Z`` into the m-step). Each iteration costs two products
    (``O(knp)``) plus ``O(pk^2)``; the ``p x p`` covariance is never formed. The same pass gives the
    Rayleigh-Ritz values ``eig(G)/(n-1)`` (the eigenvalue guesses of Fig. 1) and the reconstruction error
    ``(|Y|^2 - tr G)/n``. After convergence the subspace is rotated to ordered eigenvectors: with
    ``G = V diag(g) V'``, ``components_ = (Q V)'`` and ``explained_variance_ = g/(n-1)`` (the remark after the
    algorithm in Sec. 3), eigenvalues of the sample covariance with ``ddof=1`` as in scikit-learn.

    Convergence: the sine of the largest principal angle between the subspaces of successive ``C``,
    ``|(I - Q_new Q_new')Q|_2``, below ``tol``. EM PCA is subspace iteration on the sample covariance
    (Roweis Sec. 5), so it converges at rate ``lambda_{k+1}/lambda_k`` per iteration.

Missing values (Sec. 3.2)
    NaN marks a missing entry. The model is ``y = mu + C x`` and the EM minimizes
    ``J(mu, C, X, Y_missing) = |Y* - 1 mu' - Z C'|_F^2`` by exact block-coordinate descent:

    * generalized e-step, per row: ``x* = argmin |C_O x - (y_O - mu_O)|`` over its observed coordinates O,
      and the missing coordinates filled with ``y*_m = mu_m + C_m x*`` (zero residual there). This is the
      paper's "unique pair (x*, y*) minimizing |C x* - y*|"; kernel
      :func:`repro.em_pca._kernels.missing_estep` (one k x k solve per row).
    * m-step on the completed data ``Y*``, jointly in ``C`` and ``mu`` (``mu`` is the coefficient of a
      constant latent 1): ``C_new = Yc*' Zc (Zc'Zc)^-1`` with ``Yc*``, ``Zc`` the column-centred completed
      data and latents, and ``mu_new = mean(Y*) - C_new mean(Z)``.

    ``mu`` starts at the column means over observed entries and the missing entries at those means.
    ``J`` (= the squared error over observed entries after each e-step, ``history_["reconstruction_error"]``)
    never increases. With nothing missing, the iterates of ``span C`` are exactly those of the complete-data
    algorithm. ``mean_`` is the column mean of the final completed data, and ``components_`` /
    ``explained_variance_`` diagonalize the completed data's covariance inside the fitted subspace.
    Missing values are not imputed before fitting: the fills are re-estimated by every e-step.
    Caveat: ``J`` has no noise model, so with weak low-rank structure and many missing entries its
    infimum can be approached with fills (and the completed-data variance) growing without bound while the
    observed error keeps decreasing: the known overfitting of unregularized PCA with missing values (Ilin &
    Raiko 2010). The EM then does not converge and warns; with clear structure it converges in tens of
    iterations (see ``experiments/roweis1997_missing_data.py``).

Sensible PCA (Sec. 4)
    ``y = mu + C x + v``, ``v ~ N(0, eps I)``. e-step ``beta = C'(CC' + eps I)^-1 = M^-1 C'`` with
    ``M = C'C + eps I`` (the matrix inversion lemma of footnote 6, so no p x p matrix),
    ``mu_x = beta Y``, ``Sigma_x = n eps M^-1 + mu_x mu_x'`` (``n(I - beta C) = n eps M^-1``); m-step
    ``C_new = Y mu_x' Sigma_x^-1`` and ``eps_new = tr(YY' - C_new mu_x Y')/(n p)`` (the OCR'd text prints
    ``/n^2``; dividing by ``n p`` is the maximum-likelihood update of Tipping & Bishop 1999, Eq. 28,
    simplified with the new ``C``). In the one-pass form ``U = Y C``, ``A = Y'U``, ``G = U'U``:
    ``Y mu_x' = A M^-1`` and ``mu_x mu_x' = M^-1 G M^-1``.
    Its fixed point is the closed-form maximum-likelihood PPCA (:func:`ppca_closed_form`): with
    ``l_1 >= ... >= l_p`` the eigenvalues of the sample covariance normalized by ``n`` (ML, ``ddof=0``),
    ``eps = mean(l_{k+1..p})`` and ``C = U_k (L_k - eps I)^{1/2} R``. All SensiblePCA variances are ML
    (``ddof=0``).

    The EM as printed converges slowly in the column scales and ``eps`` (rate ``1 - 2 eps (l_j - eps)/l_j^2``)
    and not at all as ``eps -> 0``; a stopping rule on the step size then stops far from the fixed point.
    Hence (``algorithm="accelerated"``, the default): after the e-step and m-step, whose new ``C`` spans
    ``S C``, the likelihood is maximized exactly over the scales and ``eps`` within that span (the closed
    form on the k x k Ritz problem: an ECM step, the likelihood still never decreases); ``algorithm="em"``
    keeps the paper's iteration. Both stop on the distance to the fixed point (the residual of the
    stationarity equations ``S C = C (C'C + eps I)`` and ``eps = (tr S - tr C'C)/p``, plus for the
    accelerated form the Ritz residual and the Aitken-extrapolated change of ``eps``), not on the last step.
    When the centred data lie in k or fewer dimensions the ML ``eps`` is 0 and the likelihood unbounded:
    ``eps`` is kept at the floor ``1e-13 tr(S)`` and a :class:`LowRankWarning` says so; data with zero
    variance are refused. With missing values, the e-step is the Gaussian posterior of ``x`` given the
    observed coordinates of each row and the m-step solves for ``(c_j, mu_j)`` per column over the rows
    observing it (the exact EM of the noisy model; with nothing missing it is the paper's EM, iterate by
    iterate).

Data larger than memory: every iteration is one pass over the rows followed by O(pk^2) work, so the same
iteration runs on any data source of :mod:`repro._chunked` (the one data layer, shared with
:mod:`repro.em_sparse_pca`): an in-memory array (centred once into a copy up to 64 MiB, walked by centred
row blocks of 4 MiB above, so a large array is never copied), row blocks (:meth:`EMPCA.fit_blocks` /
:func:`em_pca_blocks`) or a Dask array passed to ``fit`` (one task per row chunk and iteration: e-step and
the sums ``Y'YQ``, ``Q'Y'YQ`` or their missing-value versions, then a small reduction), after one pass for
the mean, in ``O(kp + chunk)`` memory per worker. ``transform`` and ``score`` of a Dask array read it chunk
by chunk too.

EM PCA at k > 1 (default): the oversampled block EM with a Rayleigh-Ritz step (``n_oversamples="auto"``,
k + min(k, 10) columns): the top k Ritz vectors converge at rate ``lambda_{k+s+1}/lambda_k`` instead of
Roweis' ``lambda_{k+1}/lambda_k``. ``n_oversamples=0`` is Roweis' iteration (the paper's figures use k = 1,
where it is the default). The oversampled iteration adds momentum (Xu et al. 2018):
``Q_{t+1} R_{t+1} = Y'Y Q_t - beta Q_{t-1} R_t^-1`` with ``2 sqrt(beta)`` the smallest Ritz value of the block
(at most half the k-th), a three-term polynomial filter that damps every direction below that cut alike, so
the top k converge at rate ``c/(l_k + sqrt(l_k^2 - c^2))`` (0.27 at most; 0.27 instead of 0.48 for
``l_j = 1/j``, k = 10); its fixed point is the same invariant subspace. On an array walked by row blocks
(larger than 64 MiB) its early passes multiply in float32, and its last two in float64, so the result is
exact to ``tol`` (``_em_complete`` in ``repro/em_pca/solvers.py``). Where the float32 passes still to come,
predicted from the rate of the last changes, would cost more than 1.2 times forming ``Y'Y`` in float32 (one
``syrk``, about ``p / (8 (k + s))`` passes' worth; offered for ``p <= n / 4`` and ``p <= 4096``), the EM
forms it and runs its float32 iterations on that ``p x p`` matrix instead (same iterations, each for
``p^2 (k + s)`` multiply-adds instead of a pass over the data): at 50000 x 1000, ``l_j = j^-1/2`` and
k = 10, 4.4 s to 2.5 s, same iterations and accuracy. The float32 products divide the data by a power of two
when ``||Y||_F^2`` is outside ``[2^-60, 2^100]``, so no finite scale overflows or underflows.

References
----------
S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997 (pp. 626-632).
M. E. Tipping and C. M. Bishop. Probabilistic principal component analysis. JRSS B 61(3), 1999.
X.-L. Meng and D. B. Rubin. Maximum likelihood estimation via the ECM algorithm. Biometrika 80(2), 1993.
A. Ilin and T. Raiko. Practical approaches to principal component analysis in the presence of missing
values. JMLR 11, 2010.
P. Xu, B. He, C. De Sa, I. Mitliagkas and C. Re. Accelerated stochastic power iteration. AISTATS 2018.
"""

# The public names (private ones are imported from the module that defines them).
from .._chunked import DenseSource as DenseSource
from ._common import EMPCAResult, SensiblePCAResult, subspace_sin
from .blocks import em_pca_blocks, sensible_pca_blocks
from .estimators import EMPCA, SensiblePCA, em_pca, ppca_closed_form, sensible_pca
from .sensible import LowRankWarning

__all__ = [
    "EMPCA",
    "EMPCAResult",
    "LowRankWarning",
    "SensiblePCA",
    "SensiblePCAResult",
    "em_pca",
    "em_pca_blocks",
    "ppca_closed_form",
    "sensible_pca",
    "sensible_pca_blocks",
    "subspace_sin",
]
