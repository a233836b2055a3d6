"""The certified optimum of sparse PCA: ``max x'Cx`` over unit ``x`` with at most ``k`` non-zeros (and
``x >= 0`` when asked), found by branch and bound and proven by an upper bound (Berk & Bertsimas 2019;
Li & Xie 2024; the bounds and why each holds: :mod:`repro.optimal.estimator`).

The rooms, from the door down; each imports only rooms below it (the import graph is a DAG)::

    estimator  the door: optimal_sparse_pca, optimal_sparse_pca_wide,    -> wide, roots, search
               OptimalSparsePCA; checks X once (dnn_bound: its own door, in dnn)
    wide       the n x n side of wide data (n < p): screening, then the  -> roots, search
               search over the candidates
    roots      root heuristics: EMSparsePCA's support, the spannogram    -> dnn
               certificate, the DNN bound
    dnn        the doubly non-negative bound for x >= 0 (NumPy)
    search     branch and bound on a checked matrix; OptimalResult       -> perspective, l1_dual,
                                                                         _kernels
    perspective  the perspective (Boolean) bound from the l1 dual's U    -> l1_dual
               (NumPy)
    l1_dual    the l1 (DSPCA-dual) bound with its U optimized (NumPy)
    _kernels   Numba: the node bounds, the node loop, leaf values, greedy and swap supports

The search and everything below it trust their input: the door checks a user's matrix or data once, and
the deflated covariances of :class:`OptimalSparsePCA` and :class:`repro.EMSparsePCA`'s certificate go to
the search unchecked. Outside the package, ``roots``
and ``wide`` use :mod:`repro.em_sparse_pca` and :mod:`repro.spannogram`; EMSparsePCA's certificate
imports :mod:`repro.optimal.search` when it runs (not when it is imported), so the two families load in
one order.
"""

from .dnn import DNN_MAX_FEATURES, dnn_bound
from .estimator import OptimalResult, OptimalSparsePCA, optimal_sparse_pca, optimal_sparse_pca_wide

__all__ = [
    "DNN_MAX_FEATURES",
    "OptimalResult",
    "OptimalSparsePCA",
    "dnn_bound",
    "optimal_sparse_pca",
    "optimal_sparse_pca_wide",
]
