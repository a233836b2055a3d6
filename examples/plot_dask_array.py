"""
Fitting a Dask array
====================

The EM methods touch the data only through two products per iteration, so they run on a chunked
``dask.array`` with one pass over the chunks per EM iteration: the array is never gathered into memory.
The same call takes a ``numpy.memmap``, Zarr or HDF5 data wrapped by ``dask.array.from_array``. Here the
fit of a chunked array is compared with the fit of the same data in memory.
"""

# %%
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

from repro import EMPCA, EMSparsePCA

rng = np.random.default_rng(0)
X = rng.standard_normal((20000, 3)) @ rng.standard_normal((3, 40)) + 0.5 * rng.standard_normal((20000, 40))
Xd = da.from_array(X, chunks=(2500, 40))  # 8 chunks of rows
print(Xd)

# %%
# The same estimator, the same seed: the chunked fit finds the same subspace.
mem = EMPCA(n_components=3, random_state=0).fit(X)
chunked = EMPCA(n_components=3, random_state=0).fit(Xd)
s = np.linalg.svd(mem.components_ @ chunked.components_.T, compute_uv=False)
print(f"cosines of the principal angles between the two fits: {np.round(s, 10)}")

# %%
# Sparse components too; ``transform`` reads the chunks once more and returns the scores.
sp = EMSparsePCA(n_components=2, cardinality=10, random_state=0).fit(Xd)
Z = sp.transform(Xd)
print(type(Z).__name__, Z.shape)

fig, ax = plt.subplots(figsize=(5, 3))
ax.stem(sp.components_[0])
ax.set(xlabel="feature", ylabel="loading", title="first 10-sparse component of the Dask array")
fig.tight_layout()
plt.show()
