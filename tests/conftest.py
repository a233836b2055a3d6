"""Shared pytest configuration.

Data files
----------
Mark a test that reads dataset files with ``@pytest.mark.data("mnist/train-images-idx3-ubyte.gz", ...)``
(registry names; no names = every required registry file). Then:

* ``REPRO_DATA_MIRROR`` set: the test never skips; a missing or corrupt file makes it fail.
* unset: the test skips with the reason unless the user's cache (``REPRO_DATA_DIR`` or
  ``pooch.os_cache("repro")``) holds the files, in which case that cache serves, read-only, as the mirror.

For the whole session ``REPRO_DATA_DIR`` points to a temporary folder (tests never write to the user's
cache nor to the mirror; parsed-array caches live there for the session) and ``REPRO_OFFLINE=1`` (tests
never touch the network).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_MIRROR_ENV = "REPRO_DATA_MIRROR"
_CACHE_ENV = "REPRO_DATA_DIR"
# The user's configuration, captured before the session fixture redirects the cache.
_USER_MIRROR = os.environ.get(_MIRROR_ENV, "").strip()
_USER_CACHE = os.environ.get(_CACHE_ENV, "").strip()


def _user_cache() -> Path:
    if _USER_CACHE:
        return Path(_USER_CACHE).expanduser()
    import pooch

    return Path(pooch.os_cache("repro"))


@pytest.fixture(scope="session", autouse=True)
def _data_environment(tmp_path_factory):
    """Session-wide: a temporary writable cache, no downloads; without a mirror, the user's cache serves."""
    mp = pytest.MonkeyPatch()
    mp.setenv(_CACHE_ENV, str(tmp_path_factory.mktemp("repro-data-cache")))
    mp.setenv("REPRO_OFFLINE", "1")
    if not _USER_MIRROR and _user_cache().is_dir():
        mp.setenv(_MIRROR_ENV, str(_user_cache()))
    yield
    mp.undo()


_CLUSTER: dict = {"cluster": None, "last": None}  # the session's LocalCluster; the last test that uses it


@pytest.fixture(scope="session")
def dask_cluster():
    """One ``dask.distributed`` ``LocalCluster`` for the session: two worker processes, one thread each, no
    dashboard, loopback only. Starting and stopping the workers is the cost, so the modules that need a
    cluster (tests/test_distributed.py, tests/test_gsppca_distributed.py) share it, each with its own
    ``Client`` (closing a client releases its data on the workers); no client is open between them, so the
    other tests' Dask arrays keep their default scheduler. It is closed right after the last test that uses
    it (``pytest_runtest_teardown``), so no scheduler thread or worker outlives the tests that need them."""
    distributed = pytest.importorskip("distributed")
    _CLUSTER["cluster"] = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1"
    )
    try:
        yield _CLUSTER["cluster"]
    finally:
        _close_cluster()


def _close_cluster() -> None:
    cluster, _CLUSTER["cluster"] = _CLUSTER["cluster"], None
    if cluster is not None:
        cluster.close()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the modules that use the cluster run one after the other, from where the first of them stands (an
    # idle cluster's workers and scheduler cost about 5 s of CPU a minute between them); the last test of
    # them closes it: after it, their module-scoped Clients are closed too
    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    uses = {module(item) for item in items if "dask_cluster" in getattr(item, "fixturenames", ())}
    if uses:
        first = next(i for i, item in enumerate(items) if module(item) in uses)
        rest = [item for item in items[first:] if module(item) not in uses]
        items[first:] = [item for item in items[first:] if module(item) in uses] + rest
    last = [item.nodeid for item in items if module(item) in uses]
    _CLUSTER["last"] = last[-1] if last else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    yield  # after the item's fixtures (the module's Client) are torn down
    if item.nodeid == _CLUSTER["last"]:
        _close_cluster()


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("data")
    if marker is None or _USER_MIRROR:  # a configured mirror never skips: missing files must fail
        return
    names = list(marker.args)
    if not names:
        from data_fetch import registry

        names = [name for name, entry in registry().items() if not entry.optional]
    missing = [name for name in names if not (_user_cache() / name).is_file()]
    if missing:
        pytest.skip(
            f"dataset {', '.join(missing)} not available: set {_MIRROR_ENV}=../shared/data (a folder laid "
            f"out like data_fetch/registry.txt) or run `repro data --fetch` online."
        )
