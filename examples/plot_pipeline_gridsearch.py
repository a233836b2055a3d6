"""
Sparse PCA in a scikit-learn Pipeline with GridSearchCV
=======================================================

The estimators are scikit-learn transformers (``clone``, ``get_params``, pipelines), so the cardinality of
sparse components is a hyper-parameter like any other. Here :class:`repro.EMSparsePCA` reduces the 8 x 8
digit images of scikit-learn to a few sparse components before a logistic regression, and
``GridSearchCV`` chooses the number of non-zero pixels per component by cross-validation: the grid
shows what each level of sparsity costs in accuracy.
"""

# %%
import matplotlib.pyplot as plt
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from repro import EMSparsePCA

X, y = load_digits(return_X_y=True)
X, y = X[::3], y[::3]  # 599 images, to keep the example short

pipe = make_pipeline(
    StandardScaler(), EMSparsePCA(n_components=8, random_state=0), LogisticRegression(max_iter=2000)
)
search = GridSearchCV(pipe, {"emsparsepca__cardinality": [4, 8, 16, 64]}, cv=3)
search.fit(X, y)
print(
    f"best cardinality: {search.best_params_['emsparsepca__cardinality']}, accuracy {search.best_score_:.3f}"
)

# %%
# Cross-validated accuracy against the number of non-zero pixels per component (64 = dense PCA).
res = pd.DataFrame(search.cv_results_)
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.errorbar(
    res["param_emsparsepca__cardinality"].astype(int),
    res["mean_test_score"],
    yerr=res["std_test_score"],
    marker="o",
)
ax.set(xscale="log", xlabel="cardinality per component", ylabel="accuracy (3-fold CV)")
fig.tight_layout()
plt.show()
