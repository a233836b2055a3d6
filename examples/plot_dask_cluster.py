"""
Fitting on a dask.distributed cluster
=====================================

Every estimator fits a ``dask.array`` on a ``dask.distributed`` cluster without pulling the data into the
client: the EM methods run one distributed pass per iteration and bring back only small sums, the
covariance methods (NSPCA, the spannogram) form the ``p x p`` covariance in one distributed pass. Here a
``LocalCluster`` of two worker processes stands in for a real cluster (dask-jobqueue on a batch system,
dask-kubernetes, ...): the code after the ``Client`` line is the same on any of them.

The data are made on the workers chunk by chunk (on a real cluster: ``da.from_zarr``, ``da.from_array``
of an HDF5 dataset, ...) and kept in the workers' memory with ``persist``, the usual way to iterate. The
same estimators with the same seeds are fitted on the cluster and in memory (the in-memory copy is made
only to compare; the fits on the Dask array never gather it), and ``transform`` of the Dask array is a
Dask array, computed on the workers when asked for. The code sits in ``main()`` because worker processes
import the script again: a cluster must be started only under ``if __name__ == "__main__"``.
"""

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from repro import EMPCA, NSPCA, EMSparsePCA


def main():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    rng = da.random.default_rng(0)
    W = da.from_array(np.random.default_rng(1).standard_normal((3, 30)))
    X = rng.standard_normal((40000, 3), chunks=(5000, 3)) @ W
    X = (X + 0.5 * rng.standard_normal((40000, 30), chunks=(5000, 30))).persist()
    print(X)

    X_mem = X.compute()  # only to compare
    for make in (
        lambda: EMPCA(n_components=3, random_state=0),
        lambda: EMSparsePCA(n_components=2, cardinality=8, random_state=0),
        lambda: NSPCA(n_components=2, alpha=1e7, beta=1e3, random_state=0),
    ):
        on_cluster, in_memory = make().fit(X), make().fit(X_mem)
        diff = np.abs(on_cluster.components_ - in_memory.components_).max()
        print(f"{type(on_cluster).__name__}: largest difference of the loadings {diff:.1e}")

    pca = EMPCA(n_components=3, random_state=0).fit(X)
    Z = pca.transform(X)  # lazy
    print(type(Z).__name__, Z.shape)
    scores = Z[:2000].compute()
    client.close()
    cluster.close()

    fig, ax = plt.subplots(figsize=(4, 3.5))
    ax.plot(scores[:, 0], scores[:, 1], ".", ms=2)
    ax.set(xlabel="component 1", ylabel="component 2", title="scores computed on the cluster")
    fig.tight_layout()
    plt.show()


if __name__ == "__main__":
    main()
