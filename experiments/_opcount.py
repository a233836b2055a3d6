"""Counted floating-point operations of the passes repro's EM solvers make over the data.

A cost order ("O(knp) per iteration", "O(np^2)") is a statement about operations. Roweis (1997) measured it
with MATLAB's ``flops``, a counter of the operations the code executed; the times this repository also
measures move with whatever else runs on the machine (a shared L3 cache and memory bus, a host that stalls
the virtual machine), so that two runs of the same code on two machines of one kind gave time slopes on
both sides of a band edge. The counts here do not depend on the machine's load.

:func:`count_data_passes` replaces, for the duration of a ``with`` block, the methods through which the
EM solvers read in-memory data (:class:`repro.sources.DenseSource`: its construction, ``products``,
``gram``, ``rank1``, ``covariance32``) by wrappers that add the floating-point operations of each call, from
the shapes it is called with, before running it unchanged. Convention (MATLAB's): 2 flops per multiply-add,
1 per addition, subtraction or division; a product of an ``a x b`` and a ``b x c`` matrix is ``2abc``; a
symmetric product ``Y'Y`` computed by ``syrk`` (one triangle) ``n p (p + 1)``; centring a block on the fly
``n p`` (the fused rank-one kernel centres each entry twice, once per product, by its loop trip counts).
What is counted is the work on the ``n x p`` data, i.e. every operation whose count involves ``n``;
the solvers' work on ``p x k`` and ``k x k`` matrices between passes (QR, Cholesky, the rank-one m-step, all
``O(p k^2 + k^3)``, independent of ``n``) is not, and is smaller than a pass's ``4npk`` by a factor of
order ``k / n``. The solvers reach the data only through these methods, so an implementation that formed
the covariance (``covariance32``) or made extra passes would be counted as doing so.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass, field

from repro import sources

__all__ = ["OpCount", "count_data_passes"]


@dataclass
class OpCount:
    """Flops counted inside :func:`count_data_passes`, in total and per method of the data source.

    Examples
    --------
    >>> c = OpCount()
    >>> c.add("rank1", 10.0)
    >>> c.flops, c.calls["rank1"]
    (10.0, 1)
    """

    flops: float = 0.0
    by_method: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)

    def add(self, method: str, flops: float) -> None:
        """Add the ``flops`` of one call of ``method``."""
        self.flops += float(flops)
        self.by_method[method] = self.by_method.get(method, 0.0) + float(flops)
        self.calls[method] = self.calls.get(method, 0) + 1


def _centring(src) -> float:
    """Flops of centring the rows on the fly in a pass (blocked arrays only; a copy is centred once)."""
    return float(src.n * src.p) if src.blocked else 0.0


def _cost_init(src, X, name="X"):
    n, p = X.shape
    # column means (n p additions, p divisions), the centred copy or none, |Y|_F^2 (one multiply-add per
    # entry); a blocked array centres each block again for |Y|_F^2
    return n * p + p + n * p + 2.0 * n * p


def _cost_products(src, Q, single=False):
    n, p, k = src.n, src.p, Q.shape[1]
    return 2.0 * n * p * k + 2.0 * n * p * k + 2.0 * n * k * k + _centring(src)  # U = YQ, Y'U, U'U


def _cost_gram(src, Q):
    n, p, k = src.n, src.p, Q.shape[1]
    return 2.0 * n * p * k + 2.0 * n * k * k + _centring(src)  # U = YQ, U'U


def _cost_rank1(src, q, u, a):
    n, p = src.n, src.p
    if src.blocked and src.X.flags.c_contiguous:
        # the fused kernel repro._linalg_kernels.centred_rank1_pass, by its loop trip counts: per entry
        # (x - mean) q and (x - mean) u, a subtraction and a multiply-add each; per row u'u
        return 6.0 * n * p + 2.0 * n
    return 2.0 * n * p + 2.0 * n * p + 2.0 * n + _centring(src)  # u = Yq, a = Y'u, u'u


def _cost_covariance32(src):
    n, p = src.n, src.p
    return n * p * (p + 1.0) + n * p  # syrk (one triangle) and the centring of every block


_COSTS = {
    "__init__": _cost_init,
    "products": _cost_products,
    "gram": _cost_gram,
    "rank1": _cost_rank1,
    "covariance32": _cost_covariance32,
}


@contextmanager
def count_data_passes():
    """Count the flops of every call through which repro's EM solvers read in-memory data.

    Yields an :class:`OpCount` that the calls made inside the block add to (module docstring: what is
    counted and how). The methods are restored on exit, also after an exception. Not thread-safe: count
    in one thread, outside timed code (the wrappers are cheap, but they are Python calls).

    Examples
    --------
    Roweis' EM with k = 1 on complete data: per iteration one pass of ``4np + 2n`` flops.

    >>> import numpy as np
    >>> import warnings
    >>> from repro import em_pca
    >>> X = np.random.default_rng(0).standard_normal((100, 8))
    >>> with count_data_passes() as c, warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     _ = em_pca(X, 1, max_iter=5, tol=0.0, random_state=0)
    >>> c.calls["rank1"], c.by_method["rank1"] == 6 * (4 * 100 * 8 + 2 * 100)
    (6, True)
    """
    counter = OpCount()
    cls = sources.DenseSource
    saved = {name: cls.__dict__[name] for name in _COSTS}

    def wrap(name, method, cost):
        @functools.wraps(method)
        def counted(self, *args, **kwargs):
            if name == "__init__":
                out = method(self, *args, **kwargs)  # the shapes are known after construction
                counter.add(name, cost(self, *args, **kwargs))
                return out
            counter.add(name, cost(self, *args, **kwargs))
            return method(self, *args, **kwargs)

        return counted

    try:
        for name, method in saved.items():
            setattr(cls, name, wrap(name, method, _COSTS[name]))
        yield counter
    finally:
        for name, method in saved.items():
            setattr(cls, name, method)
