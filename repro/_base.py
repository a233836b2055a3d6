"""What the sparse-PCA estimators share beyond scikit-learn's base classes."""

from __future__ import annotations

from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._validation import check_array

__all__ = ["ProjectionMixin"]


class ProjectionMixin(TransformerMixin):
    """``transform`` as the projection on the fitted loadings: ``(X - mean_) @ components_.T``.

    For estimators whose ``fit`` sets ``components_`` (rows), ``mean_`` and ``n_features_in_``.
    """

    def transform(self, X):
        """Project ``X`` on the loadings: ``(X - mean_) @ components_.T``, shape (n_samples, n_components)."""
        check_is_fitted(self, "components_")
        X = check_array(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features; the model was fitted on {self.n_features_in_}.")
        return (X - self.mean_) @ self.components_.T
