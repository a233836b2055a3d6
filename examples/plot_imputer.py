"""
Imputation with uncertainty
===========================

:class:`repro.PPCAImputer` fills missing entries with their posterior mean under sensible PCA (Roweis 1997,
Sec. 4) and gives each fill a posterior standard deviation. Here a third of the entries of low-rank data
are hidden, filled, and the fills are drawn against the true values with their 90% intervals.
"""

# %%
# Data of rank 3 in 20 dimensions plus noise of standard deviation 0.3; 30% of the entries hidden.
import matplotlib.pyplot as plt
import numpy as np

from repro import PPCAImputer

rng = np.random.default_rng(0)
X = rng.standard_normal((400, 3)) @ rng.standard_normal((3, 20)) + 0.3 * rng.standard_normal((400, 20))
hidden = rng.random(X.shape) < 0.3
Xm = np.where(hidden, np.nan, X)

# %%
# Fit on the holed data, fill, and read the intervals.
imp = PPCAImputer(n_components=3, random_state=0).fit(Xm)
filled, sd = imp.transform(Xm), imp.posterior_std(Xm)
err = (filled - X)[hidden]
inside = np.abs(err) <= 1.645 * sd[hidden]
print(f"RMSE {np.sqrt(np.mean(err**2)):.3f}, mean posterior sd {sd[hidden].mean():.3f}")
print(f"90% intervals cover {inside.mean():.1%} of the hidden entries ({imp.n_iter_} EM iterations)")

# %%
# The first 60 hidden entries: the truth, the fill and its 90% interval.
truth, fill, width = X[hidden][:60], filled[hidden][:60], 1.645 * sd[hidden][:60]
at = np.arange(60)
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.errorbar(at, fill, yerr=width, fmt="o", ms=3, color="tab:blue", label="fill, 90% interval")
ax.plot(at, truth, "x", color="black", label="hidden value")
ax.set(xlabel="hidden entry", ylabel="value")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
