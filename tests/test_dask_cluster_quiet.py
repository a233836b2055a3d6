"""bench_dask_cluster's own clusters log nothing: no memory, port or kill warning from ``distributed``."""

from __future__ import annotations

import socket
import warnings

import pytest

distributed = pytest.importorskip("distributed")


def test_quick_run_on_its_own_clusters_logs_no_distributed_warning(capfd, tmp_path):
    from experiments.benchmarks import dask_cluster
    from experiments.runner._common import Config

    with pytest.raises(ValueError):  # no client open (the other modules' close with them): the benchmark
        distributed.Client.current()  # starts its own clusters, as a run does
    held = socket.socket()  # distributed's default HTTP port taken, as by another cluster on the machine
    try:
        held.bind(("127.0.0.1", 8787))
        held.listen()
    except OSError:
        pass  # taken already
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = dask_cluster.compute(Config(quick=True, out=tmp_path))
    finally:
        held.close()
    assert set(df.part) == {"pass", "tall"}
    err = capfd.readouterr().err  # the workers' stderr too: they write to the inherited descriptor
    logged = [line for line in err.splitlines() if "distributed." in line and "WARNING" in line]
    assert not logged, "\n".join(logged)
    ours = [w for w in caught if "distributed" in w.filename or "Port" in str(w.message)]
    assert not ours, [str(w.message) for w in ours]
