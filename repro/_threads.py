"""BLAS thread policy, in one place.

The iterative methods here spend their time in matrix-vector products (memory bound) and in many small
eigenproblems (K x K, N x N). For those, BLAS threads add synchronisation and, on a loaded machine,
busy-waiting: measured on a 2-core machine under load, one thread was 2-100x faster than two for a 72 x 72
``eigh`` and 10-25x faster for the NSPCA sweep. The public functions of those methods therefore run
with BLAS limited to :func:`get_blas_threads` threads (1 by default); :func:`set_blas_threads` changes
it for the whole library (``None`` removes the limit, e.g. for very large dense data on an idle machine).
"""

from __future__ import annotations

import contextlib
import functools
from numbers import Integral

from sklearn.utils._param_validation import Interval, validate_params
from threadpoolctl import ThreadpoolController

__all__ = ["blas_limit", "blas_limited", "get_blas_threads", "set_blas_threads"]

_BLAS_THREADS: int | None = 1


@validate_params(
    {"n": [Interval(Integral, 1, None, closed="left"), None]}, prefer_skip_nested_validation=True
)
def set_blas_threads(n: int | None) -> None:
    """Set the BLAS threads the library's iterative methods use (``None``: no limit).

    Parameters
    ----------
    n : int >= 1 or None
        Threads per BLAS call inside the library's public functions; ``None`` lets BLAS use its own
        setting (e.g. for very large dense data on an idle machine).

    Returns
    -------
    None

    See Also
    --------
    get_blas_threads

    Notes
    -----
    The default, 1, was measured faster on a 2-core machine under load: 2-100x for a 72 x 72
    ``eigh`` and 10-25x for the NSPCA sweep (module docstring). The setting is process-wide.

    Examples
    --------
    >>> from repro import get_blas_threads, set_blas_threads
    >>> previous = get_blas_threads()
    >>> set_blas_threads(2)
    >>> get_blas_threads()
    2
    >>> set_blas_threads(previous)
    """
    global _BLAS_THREADS
    _BLAS_THREADS = None if n is None else int(n)


@validate_params({}, prefer_skip_nested_validation=True)
def get_blas_threads() -> int | None:
    """The current limit (``None``: no limit).

    Returns
    -------
    int or None
        The BLAS threads the library's iterative methods use; 1 unless :func:`set_blas_threads` changed it.

    See Also
    --------
    set_blas_threads

    Examples
    --------
    >>> from repro import get_blas_threads
    >>> get_blas_threads()
    1
    """
    return _BLAS_THREADS


@functools.lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    return ThreadpoolController()


def blas_limit():
    """Context manager applying the library's BLAS thread limit (restored on exit)."""
    if _BLAS_THREADS is None:
        return contextlib.nullcontext()
    return _controller().limit(limits=_BLAS_THREADS, user_api="blas")


def blas_limited(func):
    """Decorator: run ``func`` under :func:`blas_limit`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with blas_limit():
            return func(*args, **kwargs)

    return wrapper
