"""
Non-negative sparse PCA with its certificate
============================================

Non-negative sparse components of face images pick out parts (eyes, mouth, cheeks). The spannogram of
Asteris et al. (2014) gives an upper bound on the best variance any ``k``-sparse non-negative component can
reach, whichever method found it, so :func:`repro.metrics.certified_fraction` turns any component into a
guaranteed fraction of the unknown optimum. Here it certifies the sparse EM (:class:`repro.EMSparsePCA`)
and the spannogram itself (:class:`repro.SpannogramPCA`).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from data_fetch import load_cbcl_faces
from repro import EMSparsePCA, SpannogramPCA, metrics

faces = load_cbcl_faces().X[::4] / 255.0
X = faces - faces.mean(axis=0)

# %%
# One component per cardinality, by both methods, and each one's certified fraction.
ks = [10, 20, 40, 80]
rows = []
for k in ks:
    em = EMSparsePCA(cardinality=k, nonneg=True, random_state=0).fit(X)
    sp = SpannogramPCA(cardinality=k, rank=2, n_samples=2000, random_state=0).fit(X)
    rows.append([metrics.certified_fraction(X, c.components_, k)[0] for c in (em, sp)])
rows = np.array(rows)
for k, (e, s) in zip(ks, rows, strict=True):
    print(f"k = {k:3d}: EM at least {e:.0%} of the optimum, spannogram at least {s:.0%}")

# %%
# The certificate is a lower bound on the quality: the true fraction lies between it and 1.
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(ks, rows[:, 0], "o-", label="EM sparse PCA (nn)")
ax.plot(ks, rows[:, 1], "s--", label="spannogram (d = 2)")
ax.fill_between(ks, rows.max(axis=1), 1, alpha=0.15, label="where the optimum lies")
ax.set(xscale="log", ylim=(0, 1.02), xlabel="cardinality k", ylabel="certified fraction of the optimum")
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# The non-negative 40-sparse component: a part of the face.
w = EMSparsePCA(cardinality=40, nonneg=True, random_state=0).fit(X).components_[0]
fig, ax = plt.subplots(figsize=(2.5, 2.5))
ax.imshow(w.reshape(19, 19), cmap="gray_r")
ax.set(title="k = 40, non-negative", xticks=[], yticks=[])
plt.show()
