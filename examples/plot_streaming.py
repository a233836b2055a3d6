"""
Principal components of a stream
================================

``partial_fit`` merges batches of rows into the running mean and scatter (Chan et al.'s pairwise rule),
so rows can arrive in any order and the memory does not grow with them. Up to 4096 features the scatter
is exact and the streamed fit equals the batch fit; here the explained variances after each batch
converge to those of the whole data set.
"""

# %%
# Rows of a spiked model, arriving in 40 batches of 250.
import matplotlib.pyplot as plt
import numpy as np

from repro import EMPCA

rng = np.random.default_rng(0)
scale = np.r_[[6.0, 4.0, 3.0], np.ones(47)]
X = rng.standard_normal((10_000, 50)) * scale + 20.0

stream = EMPCA(n_components=3)
seen, variances = [], []
for batch in np.array_split(X, 40):
    stream.partial_fit(batch)
    seen.append(stream.n_samples_seen_)
    variances.append(stream.explained_variance_)

batch_fit = EMPCA(n_components=3, tol=1e-12, random_state=0).fit(X)
print("streamed:", stream.explained_variance_.round(4))
print("batch:   ", batch_fit.explained_variance_.round(4))
print("largest difference of the components:", np.abs(stream.components_ - batch_fit.components_).max())

# %%
# The estimates after each batch, against the batch fit of all the rows (dashed).
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(seen, variances)
for v in batch_fit.explained_variance_:
    ax.axhline(v, ls="--", c="0.5", lw=0.8)
ax.set(xlabel="rows seen", ylabel="explained variance")
fig.tight_layout()
plt.show()
