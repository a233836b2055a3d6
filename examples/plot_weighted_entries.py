"""
Inverse-variance weights per entry
==================================

Spectra, sensor arrays and survey tables come with an uncertainty for every entry. Weighting each
entry by its inverse variance, :class:`repro.EMPCA` (``fit(X, weights=W)``) fits the rank-k model that
minimizes ``sum_ij w_ij (x_ij - mean_j - z_i'c_j)^2``; a weight of 0 marks a missing entry. Here the
noise level varies forty-fold between entries, and the weighted fit lands about three times closer to
the true subspace than the unweighted fit of the same data.
"""

# %%
# Smooth "spectra" of rank 3 on 80 wavelengths; each entry has its own noise level, and 10% of the
# entries are missing (weight 0).
import matplotlib.pyplot as plt
import numpy as np

from repro import EMPCA

rng = np.random.default_rng(0)
t = np.linspace(0, 1, 80)
basis = np.array([np.sin((j + 1) * np.pi * t) for j in range(3)])
clean = 5 + (rng.standard_normal((300, 3)) * [3.0, 2.0, 1.0]) @ basis
sigma = rng.uniform(0.05, 2.0, clean.shape)
X = clean + sigma * rng.standard_normal(clean.shape)
W = 1 / sigma**2
W[rng.random(X.shape) < 0.1] = 0.0


def largest_angle(A, B):
    """Largest principal angle (degrees) between the row spans of A and B."""
    s = np.linalg.svd(np.linalg.qr(A.T)[0].T @ np.linalg.qr(B.T)[0], compute_uv=False)
    return np.degrees(np.arccos(np.clip(s.min(), -1, 1)))


# %%
# The weighted fit against plain EM-PCA (the missing entries as NaN, every other entry counted alike).
weighted = EMPCA(3).fit(X, weights=W)
plain = EMPCA(3, random_state=0).fit(np.where(W > 0, X, np.nan))
for name, est in (("weighted", weighted), ("unweighted", plain)):
    print(f"{name}: largest angle to the true subspace {largest_angle(est.components_, basis):.2f} degrees")

fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), sharey=True)
for ax, (name, est) in zip(axes, (("weighted", weighted), ("unweighted", plain)), strict=True):
    ax.plot(t, est.components_.T)
    ax.set(title=f"{name} components", xlabel="wavelength (a.u.)")
fig.tight_layout()
plt.show()
