"""
Sparse PCA of faces along a cardinality path
============================================

How much of the variance of face images can a component with only ``K`` non-zero pixels explain? The
sparse EM of Sigg & Buhmann (2008) answers it for a whole grid of ``K`` in one call,
:func:`repro.em_sparse_pca_path`, and simple thresholding of the first principal component
(:func:`repro.baselines.thresholding_path`) gives a baseline on the same grid.
"""

# %%
# A subset of the CBCL face images (19 x 19 pixels), centred.
import matplotlib.pyplot as plt
import numpy as np

from data_fetch import load_cbcl_faces
from repro import em_sparse_pca_path, leading_eigenpairs
from repro.baselines import thresholding_path

faces = load_cbcl_faces().X[::4]  # every fourth image: 608 x 361
X = faces - faces.mean(axis=0)
cardinalities = [5, 10, 20, 40, 80, 160, 361]

# %%
# The path: for each K the leading K-sparse component, with its weights made optimal on its support
# (``renormalize=True``), and the same for thresholding.
em = em_sparse_pca_path(X, cardinalities, renormalize=True, random_state=0)
th = thresholding_path(X, cardinalities)
lam1 = leading_eigenpairs(np.cov(X, rowvar=False), 1)[0][0]  # the variance of the unconstrained PC
print(em.to_frame()[["cardinality", "variance"]].round(1).to_string(index=False))

# %%
# Variance explained, as a fraction of the first principal component's, against ``K``.
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(em.cardinalities, em.variance_opt / lam1, "o-", label="EM sparse PCA")
ax.plot(th.cardinalities, th.variance_opt / lam1, "s--", label="thresholding")
ax.set(
    xscale="log", xlabel="cardinality K (non-zero pixels)", ylabel="variance / first PC's", title="CBCL faces"
)
ax.legend()
fig.tight_layout()

# %%
# The sparse components as images: few pixels, placed where the faces vary most.
fig, axes = plt.subplots(1, 4, figsize=(7, 2))
for ax, j in zip(axes, range(1, 5), strict=True):
    w = em.components_opt[j]
    ax.imshow(w.reshape(19, 19), cmap="RdBu_r", vmin=-abs(w).max(), vmax=abs(w).max())
    ax.set(title=f"K = {em.cardinalities[j]}", xticks=[], yticks=[])
fig.tight_layout()
plt.show()
