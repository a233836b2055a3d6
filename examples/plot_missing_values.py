"""
EM-PCA with missing values
==========================

Roweis (1997) treats missing entries as hidden variables of the EM: each E-step fills them in under the
current subspace, so every observed entry is used and no row is dropped. Here entries of low-rank data
are removed at random and the subspace :class:`repro.EMPCA` recovers is compared with the true one.
"""

# %%
# Data of rank 3 in 50 dimensions plus a little noise.
import matplotlib.pyplot as plt
import numpy as np

from repro import EMPCA

rng = np.random.default_rng(0)
basis = np.linalg.qr(rng.standard_normal((50, 3)))[0]
X = rng.standard_normal((400, 3)) * [5.0, 3.0, 2.0] @ basis.T + 0.1 * rng.standard_normal((400, 50))


def largest_angle(U, V):
    """Largest principal angle (degrees) between the spans of the columns of U and V."""
    s = np.linalg.svd(np.linalg.qr(U)[0].T @ np.linalg.qr(V)[0], compute_uv=False)
    return np.degrees(np.arccos(np.clip(s.min(), -1, 1)))


# %%
# Remove a growing share of the entries (NaN) and fit; the angle to the true subspace stays small until
# most of the data are gone.
shares = [0.0, 0.2, 0.4, 0.6, 0.8]
angles = []
for share in shares:
    Xm = X.copy()
    Xm[rng.random(X.shape) < share] = np.nan
    pca = EMPCA(n_components=3, random_state=0).fit(Xm)
    angles.append(largest_angle(pca.components_.T, basis))
    print(f"{share:.0%} missing: largest angle {angles[-1]:.2f} degrees, {pca.n_iter_} iterations")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot([100 * s for s in shares], angles, "o-")
ax.set(xlabel="entries missing (%)", ylabel="largest angle to the true subspace (deg)")
fig.tight_layout()
plt.show()
