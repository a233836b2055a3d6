"""EM for sparse and non-negative PCA (Sigg & Buhmann 2008).

The first principal component maximizes ``w'Cw`` subject to ``||w||_2 = 1``. Sigg & Buhmann take EM for
probabilistic PCA in the zero-noise limit with a one-dimensional subspace (Algorithm 1),

    E-step  y = X w / (w'w)                                   (Sec. 3)
    M-step  w* = X'y / (y'y) = f / h                          (Eq. 13)

and add the constraints at the M-step, which is the isotropic QP ``min h w'w - 2 f'w`` (Eq. 12):

* cardinality ``||w||_0 <= K``: the l1-constrained QP (Eq. 14) with the bound set implicitly by ``K``;
  its solution (Algorithm 2) is the soft threshold of ``w*`` at the (K+1)-th largest magnitude,
  ``w_i = sign(w*_i) (|w*_i| - s_(K+1))_+`` -- found here by selection in O(D), not by sorting;
* non-negativity ``w >= 0`` (Eq. 17): negative entries of ``w*`` set to zero, then the same threshold
  among the positive entries (the (K+1)-th largest positive value);

followed by ``w <- w / ||w||_2``, until ``|w(t+1)' w(t)| > 1 - tol``. Only ``f = X'X w`` (up to a positive
factor) enters the M-step, so the iteration needs the covariance as an operator: through the data (``X w``
then ``X'y``, ``2ND`` flops) or through the ``D x D`` covariance formed once (``D^2`` flops), chosen by the
cost model of :func:`repro.linalg.choose_operator` (``operator="auto"``; the covariance on CBCL faces,
2429 x 361, the data on leukemia, 72 x 12582); the iterates agree to round-off. The restarts of a component
run together (:func:`_em_block`): through the ``D x D`` covariance or through the data (screened, below,
or not), each restart runs to its end inside one Numba kernel call per block
(:func:`repro.em_sparse_pca._kernels.em_rows_matrix` / ``em_rows_data``), so Python is entered once per
block, not once per iteration; other operators (missing values, Dask arrays) make one operator call
per iteration for every active restart, then one O(D) kernel per restart.
A tie at the threshold (``s_K = s_(K+1)``, e.g. duplicated features) is broken by index so exactly ``K``
loadings stay non-zero (Algorithm 2 as printed would zero the K-th).

Through the data with few samples (``16 <= N < D``, e.g. leukemia) and a sparse iterate (``4K < D``) an
iteration is screened (:class:`_Screen`, :func:`repro.em_sparse_pca._kernels.em_update_screened`):
``X w`` goes through the support (``N K`` flops), and of ``f = X'y`` only the entries that a bound cannot
rule out of the top ``K + 1`` are computed. The bound compares with the last full product ``f0 = X'y0``:
``f_j - f0_j = a_j'(y - y0)``, split exactly into its part in the span of the 8 leading eigenvectors of
``X X'`` (kept from the principal-component start) and a Cauchy-Schwarz bound on the rest. The M-step is
then exactly Algorithm 2 on the full ``f`` (the same threshold and kept entries; values to round-off);
when the bound leaves more than ``D / 16`` candidates, or a tie sits at the threshold, the iteration does
the full product, which renews the reference. On leukemia 4 to 9 iterations in 10 are screened.

The default start is the first principal component (both signs when non-negative) plus random starts, 5 in
all; with ``renormalize=True`` the restart kept is the best after renormalization. Missing values (NaN) are
handled by Roweis' generalized E-step in the zero-noise limit (:class:`_ObservedData`), and a ``dask.array``
is read in chunks, one or more passes per EM iteration (the starts, the components and the renormalization
each add passes), or once to form the covariance, through :class:`repro._chunked.DaskSource`
(the data layer shared with :mod:`repro.em_pca`, with the same input policy and errors).

Several components (Section 4): projection deflation ``X <- X (I - ww')`` (Eq. 18); for non-negative
components, orthogonality forces disjoint supports (Eq. 19: features used before are excluded); or
quasi-orthogonality by the penalty ``alpha w'VV'w`` added to the M-step QP (Eq. 20), a convex QP with a
non-isotropic Hessian, solved exactly through its (l+1)-dimensional dual by a semismooth Newton method,
with ``alpha`` tuned to the smallest value that meets a minimum angle to the earlier components.

``renormalize=True`` is the paper's "emPCAopt": the optimal weights on the found support (leading
eigenvector of the covariance restricted to it; for non-negative PCA the non-negative EM restricted to it,
run on the support's own operator, ``N x K`` columns or the ``K x K`` block:
:meth:`repro.linalg.Covariance.restrict`). ``renormalize="refine"``, the estimator's default, adds
truncated-power steps (:func:`.algorithm._refined`): one from every start, then from the best of
those and emPCAopt's result, each kept only when it raises ``w'Cw``; they leave supports that are fixed
points of the soft-thresholded EM but not the best at their size.

Notes
-----
Proposition 3.2 (the reconstruction error never increases) holds when the previous iterate is feasible for
the next M-step's l1 bound, ``||w(t)||_1 <= B(t)``. With the cardinality constraint ``B(t)`` is set
implicitly by ``K`` anew at every iteration and that premise can fail, and then the error can increase
(observed on random data; see the tests). With non-negativity alone (a cone) or no constraint it is monotone.
``history_`` exposes the error of every iterate so this can be checked.

References
----------
C. D. Sigg and J. M. Buhmann. Expectation-maximization for sparse and non-negative PCA. ICML 2008.
S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1998.
B. Moghaddam, Y. Weiss and S. Avidan. Spectral bounds for sparse PCA: exact and greedy algorithms.
NIPS 18, 2006 (variational renormalization).
"""

# The public names, and (``X as X``) others used by the baselines and tests; private names are imported
# from the module that defines them.
from ._common import DEFAULT_STARTS as DEFAULT_STARTS
from .algorithm import renormalize_on_support
from .estimator import CardinalityPath, EMSparsePCA, em_sparse_pca, em_sparse_pca_path
from .operators import fit_function_form as fit_function_form
from .quasi import penalized_mstep

__all__ = [
    "CardinalityPath",
    "EMSparsePCA",
    "em_sparse_pca",
    "em_sparse_pca_path",
    "penalized_mstep",
    "renormalize_on_support",
]
