"""
Sparse count matrices, never densified
======================================

A count matrix (cells by genes, documents by words) is mostly zeros and comes as a ``scipy.sparse``
matrix. EMPCA and EMSparsePCA fit it as it is: the centring ``X - mean`` stays implicit in the products
of each iteration (``X W - 1 (mean' W)``), so no dense copy of ``X`` is made. Here a small single-cell-like
matrix in CSR is fitted, the result compared with the fit of its dense copy, and the sparse loadings of the
first component drawn.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

from repro import EMPCA, EMSparsePCA, metrics

rng = np.random.default_rng(0)
n, p = 3000, 400
cell_type = rng.integers(0, 3, n)
rates = rng.lognormal(-4.0, 1.0, (3, p))
rates[:, :30] *= 20.0 * rng.random((3, 30))  # each type's marker genes
counts = rng.poisson(rates[cell_type])  # dense here only to keep the example short
X = sp.csr_matrix(np.log1p(counts))
print(
    f"{X.shape}, {X.nnz / (n * p):.1%} non-zero, CSR {X.data.nbytes + X.indices.nbytes >> 10} KiB, "
    f"dense {n * p * 8 >> 10} KiB"
)

# %%
# The sparse fit equals the dense fit to round-off.
pca = EMPCA(n_components=3, random_state=0).fit(X)
dense = EMPCA(n_components=3, random_state=0).fit(X.toarray())
print(f"largest difference of the components: {np.abs(pca.components_ - dense.components_).max():.1e}")
scores = pca.transform(X)  # sparse rows in, dense scores out

# %%
# Ten genes per component, with a certificate of how close the first one is to the best 10 genes.
spca = EMSparsePCA(n_components=2, cardinality=10, random_state=0).fit(X)
frac = metrics.certified_fraction(X, spca.components_[0], 10, nonneg=False)[0]
print(f"genes of component 1: {np.flatnonzero(spca.components_[0]).tolist()}")
print(f"certified: at least {frac:.0%} of the best 10-gene component's variance")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
for t in range(3):
    axes[0].scatter(*scores[cell_type == t, :2].T, s=3, label=f"type {t}")
axes[0].set(xlabel="PC 1", ylabel="PC 2", title="EMPCA scores of the CSR matrix")
axes[0].legend(markerscale=4, fontsize=8)
axes[1].stem(spca.components_[0])
axes[1].set(xlabel="gene", ylabel="loading", title="EMSparsePCA, cardinality 10")
fig.tight_layout()
plt.show()
