"""The library-wide BLAS thread policy."""

import pytest
from threadpoolctl import threadpool_info

import repro
from repro._threads import blas_limit, blas_limited


def _blas_threads():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_limit_applies_inside_and_is_restored():
    before = _blas_threads()
    assert repro.get_blas_threads() == 1
    with blas_limit():
        assert all(n == 1 for n in _blas_threads())
    assert _blas_threads() == before

    @blas_limited
    def inner():
        return _blas_threads()

    assert all(n == 1 for n in inner())


def test_set_blas_threads_none_removes_limit_and_validates():
    try:
        repro.set_blas_threads(None)
        assert repro.get_blas_threads() is None
        with blas_limit():
            pass
        for bad in (0, 2.0, "2"):
            with pytest.raises(ValueError, match="'n' parameter of set_blas_threads"):
                repro.set_blas_threads(bad)
    finally:
        repro.set_blas_threads(1)
