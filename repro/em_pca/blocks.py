"""Running the EM PCA family on a data source: in memory, row blocks (:func:`em_pca_blocks`,
:func:`sensible_pca_blocks`) or Dask.

Every iteration is one pass over the rows followed by O(pk^2) work (Roweis 1997, Sec. 3 and 4), so the
same loops run on any source of :mod:`repro._chunked`. :func:`_em_pca_on` and :func:`_sensible_pca_on`
check the arguments, draw the start, dispatch to the loop (complete, rank-one, missing values; EM or
accelerated) and build the result; the sources hold validated data.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.utils._param_validation import validate_params

from .. import _shortcuts
from .._chunked import BlockSource, DenseSource
from .._dense import _canonical_sign
from .._threads import blas_limited
from .._validation import check_random_state, warn_not_converged
from ._common import (
    EM_PCA_PARAMS,
    SENSIBLE_PCA_PARAMS,
    EMPCAResult,
    SensiblePCAResult,
    _check_callback,
    _check_common,
    _check_oversamples,
    _initial_C,
    _rotate,
    _unscale_empca,
    _unscale_spca,
)
from .missing import _em_missing, _spca_missing_loop
from .sensible import (
    _SPCA_ALGORITHMS,
    _noise_floor,
    _spca_em_loop,
    _spca_fast_loop,
    _spca_init,
    _spca_result_from_C,
    _warn_low_rank,
)
from .solvers import _em_complete, _em_rank1


@validate_params({"blocks": "no_validation", **EM_PCA_PARAMS}, prefer_skip_nested_validation=True)
@blas_limited
def em_pca_blocks(
    blocks,
    n_components: int = 1,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
    random_state=None,
    init=None,
    callback: Callable | None = None,
    n_oversamples: int | str = "auto",
) -> EMPCAResult:
    """:func:`em_pca` for data larger than memory, read as row blocks once per EM iteration.

    Parameters
    ----------
    blocks : callable or re-iterable
        ``blocks()`` returns a fresh iterable of 2-D arrays (rows of the data, same number of columns),
        e.g. ``lambda: (X[i:i + 10000] for i in range(0, n, 10000))`` on a ``np.memmap``; or a list/tuple of
        arrays. NaN entries are missing values (the e-step per block, as for a Dask array).
    n_components, max_iter, tol, random_state, init, callback, n_oversamples
        As in :func:`em_pca`.

    Returns
    -------
    EMPCAResult
        The batch answer to round-off: each iteration accumulates ``A = sum_b Y_b'(Y_b Q)`` and
        ``G = sum_b (Y_b Q)'(Y_b Q)`` over the blocks, then the same ``O(pk^2)`` update. Memory
        ``O(kp + block)``; one extra pass for the mean.

    See Also
    --------
    em_pca : data in memory or a Dask array.

    References
    ----------
    S. Roweis. EM algorithms for PCA and SPCA. NIPS 10, 1997, Sec. 3 (the EM needs only the products with
    the data, one pass per iteration).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 30)) * np.linspace(3, 1, 30)
    >>> from repro import em_pca, em_pca_blocks
    >>> blocks = [X[:100], X[100:]]  # or a callable returning fresh blocks, e.g. from a np.memmap
    >>> res = em_pca_blocks(blocks, 2, random_state=0)
    >>> bool(np.allclose(res.explained_variance, em_pca(X, 2, random_state=0).explained_variance))
    True
    """
    source = BlockSource(blocks)
    res = _em_pca_on(source, n_components, max_iter, tol, random_state, init, callback, n_oversamples)
    # blocks outside [2^-256, 2^256] were read divided by a power of two: the results of X, or refused
    return res if source.scale == 1.0 else _unscale_empca(res, source.scale, (source.n, source.p))


def _em_setup(n, p, n_components, max_iter, tol, random_state, init, callback, n_oversamples, missing=False):
    """Check the EM PCA arguments and draw the start; returns ``(k, max_iter, tol, C0)``."""
    k, max_iter, tol = _check_common(n_components, max_iter, tol, n, p)
    _check_callback(callback)
    s = _check_oversamples(n_oversamples, k, n, p, missing)
    return k, max_iter, tol, _initial_C(init, p, k, check_random_state(random_state), s)


def _em_pca_on(source, n_components, max_iter, tol, random_state, init, callback, n_oversamples):
    """EM PCA on data held by a source (in memory, row blocks, Dask); returns an EMPCAResult."""
    n, p = source.n, source.p
    k, max_iter, tol, C0 = _em_setup(
        n, p, n_components, max_iter, tol, random_state, init, callback, n_oversamples, source.missing
    )
    if source.missing:
        Q, G, mean, total, n_iter, converged, hist = _em_missing(source, C0, max_iter, tol, callback)
        return _em_finish(Q, G, n, total, mean, n_iter, converged, hist, tol)
    if isinstance(source, DenseSource) and C0.shape[1] == 1 and _shortcuts.enabled:  # k = 1: the fused kernel
        Q, G, n_iter, converged, hist = _em_rank1(source, C0[:, 0], max_iter, tol, callback)
    else:
        Q, G, n_iter, converged, hist = _em_complete(source, C0, max_iter, tol, callback, k)
    return _em_finish(Q, G, n, source.ss, source.mean, n_iter, converged, hist, tol)


def _em_finish(Q, G, n, total, mean, n_iter, converged, hist, tol) -> EMPCAResult:
    if not converged:
        warn_not_converged("EMPCA", n_iter, tol, "EM PCA converges at rate lambda_{k+1}/lambda_k.")
    W, ev = _rotate(Q, G, n)
    return EMPCAResult(W, ev, total / (n - 1), mean, n_iter, converged, hist)


@validate_params({"blocks": "no_validation", **SENSIBLE_PCA_PARAMS}, prefer_skip_nested_validation=True)
@blas_limited
def sensible_pca_blocks(
    blocks,
    n_components: int = 1,
    *,
    algorithm: str = "accelerated",
    max_iter: int = 5000,
    tol: float = 1e-8,
    random_state=None,
    init=None,
    callback: Callable | None = None,
) -> SensiblePCAResult:
    """:func:`sensible_pca` over row blocks read once per iteration (see :func:`em_pca_blocks`)."""
    source = BlockSource(blocks)
    res = _sensible_pca_on(source, n_components, algorithm, max_iter, tol, random_state, init, callback)
    return res if source.scale == 1.0 else _unscale_spca(res, source.scale, (source.n, source.p))


def _sensible_pca_on(source, n_components, algorithm, max_iter, tol, random_state, init, callback):
    """The sensible-PCA EM on a data source (in memory, row blocks, Dask): checks, start, loop, result."""
    n, p = source.n, source.p
    k, max_iter, tol = _check_common(n_components, max_iter, tol, n, p, spca=True)
    if algorithm not in _SPCA_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {_SPCA_ALGORITHMS}; got {algorithm!r}.")
    _check_callback(callback)
    floor = _noise_floor(source.ss / n)
    rng = check_random_state(random_state)
    C0, eps0 = _spca_init(init, p, k, source.ss, n, rng)
    if source.missing:
        C, eps, ll, mean, n_iter, converged, clamped, hist = _spca_missing_loop(
            source, C0, eps0, max_iter, tol, callback, floor
        )
        res = _spca_result_from_C(C, eps, ll, mean, n_iter, converged, hist)
    elif algorithm == "em":
        C, eps, ll, n_iter, converged, clamped, hist = _spca_em_loop(
            source, C0, eps0, max_iter, tol, callback, floor
        )
        res = _spca_result_from_C(C, eps, ll, source.mean, n_iter, converged, hist)
    else:
        W, d2, eps, ll, n_iter, converged, clamped, hist = _spca_fast_loop(
            source, C0, k, max_iter, tol, callback, floor
        )
        W = _canonical_sign(W)
        res = SensiblePCAResult(
            np.ascontiguousarray(W.T),
            W * np.sqrt(d2),
            d2 + eps,
            float(eps),
            source.mean,
            float(ll),
            n_iter,
            converged,
            hist,
        )
    if clamped:
        _warn_low_rank(k, res.noise_variance, floor)
    if not converged:
        warn_not_converged(
            "SensiblePCA",
            n_iter,
            tol,
            ""
            if algorithm != "em"
            else "Roweis' EM is slow when the noise is small; "
            "algorithm='accelerated' reaches the same fixed point in far fewer iterations.",
        )
    return res
