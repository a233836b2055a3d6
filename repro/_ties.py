"""Tie rules: discrete choices (an ``argmax``, a sort, a top-``K``) that round-off must not decide.

A greedy or thresholding method chooses a variable by comparing computed values. When two values are equal
in exact arithmetic (every ``C_ii = 1`` of a correlation matrix, two identical columns) the computed ones
differ in their last bits, and which is larger depends on the BLAS kernel, the summation order and the
CPU: ``np.argmax`` then picks a variable by accident, and a greedy path can move by 30% (PathSPCA on Pit
Props k = 5, 2.619 on one machine, 3.406 on another). The rule here: values within
``rtol * scale`` of each other tie, and ties go to the **lowest index** (what ``np.argmax`` and a stable sort
do with exact ties). ``scale`` is the size of the quantity compared (by default the largest magnitude
among the values), so the tolerance means "equal up to round-off of this quantity", not "equal to
within 1e-12 of an element near zero".

:data:`TIE_RTOL` (1e-12) is about 4,500 ulps of the scale: far above the round-off of the products the
methods compare (a few ``n eps`` of the scale for ``n`` up to a few thousand), and far below any
difference a method's choice is meant to resolve. A choice still moves when a value sits within round-off
of the window's edge; that needs two values ``1e-12`` apart up to ``1e-15``, a coincidence no data of this
project has, where an exact tie is common.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TIE_RTOL", "argmax_tied", "order_tied", "tie_tol"]

#: Relative tolerance (of the compared quantity's scale) below which two values tie.
TIE_RTOL = 1e-12


def tie_tol(values, scale: float | None = None, rtol: float = TIE_RTOL) -> float:
    """The absolute tie tolerance: ``rtol * scale``, ``scale`` by default the largest finite magnitude."""
    if scale is None:
        v = np.abs(np.asarray(values, dtype=np.float64))
        v = v[np.isfinite(v)]
        scale = float(v.max()) if v.size else 0.0
    return rtol * float(scale)


def argmax_tied(values, *, scale: float | None = None, rtol: float = TIE_RTOL) -> int:
    """The lowest index whose value is within ``rtol * scale`` of the maximum.

    Parameters
    ----------
    values : array_like, 1-D
        Values; ``-inf`` marks an excluded entry. With a NaN, or no finite value, ``np.argmax`` decides.
    scale : float, optional
        The size of the quantity (default: the largest finite ``|value|``).
    rtol : float
        Relative tolerance, :data:`TIE_RTOL` by default.

    Examples
    --------
    >>> import numpy as np
    >>> from repro._ties import argmax_tied
    >>> d = np.array([1.0 - 2e-16, 1.0, 1.0 + 2e-16, 0.5])  # a correlation matrix's diagonal, round-off
    >>> int(np.argmax(d)), argmax_tied(d)
    (2, 0)
    """
    v = np.asarray(values, dtype=np.float64)
    m = v.max()
    if not np.isfinite(m):
        return int(np.argmax(v))
    tol = tie_tol(v, scale, rtol)
    return int(np.flatnonzero(v >= m - tol)[0])


def order_tied(values, *, scale: float | None = None, rtol: float = TIE_RTOL) -> np.ndarray:
    """Indices by decreasing value, values within ``rtol * scale`` of their neighbour by increasing index.

    The values sorted decreasingly are cut into groups wherever two neighbours differ by more than the
    tolerance; the groups keep their order and each is ordered by index. The first ``K`` entries are then
    the ``K`` largest values with ties at the ``K``-th place broken by index, whatever the last bits. (A
    run of values each within the tolerance of the next is one group, however far its ends are apart.)

    Examples
    --------
    >>> import numpy as np
    >>> from repro._ties import order_tied
    >>> v = np.array([0.5, 1.0, 0.2, 1.0 + 2.2e-16])
    >>> np.lexsort((np.arange(4), -v)).tolist(), order_tied(v).tolist()
    ([3, 1, 0, 2], [1, 3, 0, 2])
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    idx = np.arange(n)
    order = np.lexsort((idx, -v))
    if n < 2:
        return order
    tol = tie_tol(v, scale, rtol)
    sv = v[order]
    with np.errstate(invalid="ignore"):
        new = np.concatenate(([True], ~(sv[:-1] - sv[1:] <= tol)))  # a NaN or inf gap starts a group
    group = np.cumsum(new)
    return order[np.lexsort((order, group))]
