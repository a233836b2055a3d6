"""The methods the papers compare against.

* :mod:`.thresholding`: simple thresholding of the first PC (Cadima & Jolliffe 1995).
* :mod:`.pathspca`: PathSPCA, the approximate greedy path (d'Aspremont, Bach & El Ghaoui 2008).
* :mod:`.spca_zou`: SPCA by alternating elastic net (Zou, Hastie & Tibshirani 2006).
* :mod:`.gspca`: greedy sparse PCA with forward and backward search (Moghaddam, Weiss & Avidan 2006);
  its Numba kernels in ``_gspca_kernels.py`` beside it.
* :mod:`.sspca`: structured sparse PCA with one global support (Jenatton, Obozinski & Bach 2010); its
  Numba kernel in ``_sspca_kernels.py`` beside it.
* :mod:`.cesr`: CE + SR, SVD-entropy feature filtering (Varshavsky et al. 2006).

Every public function validates its parameters with scikit-learn's ``validate_params`` and its data once
(``_common.py``); the estimators declare ``_parameter_constraints``. NMF, the linear SVM and ROC curves
come from scikit-learn directly.
"""

from .cesr import ce_scores, cesr_select, svd_entropy
from .gspca import GSPCA, GSPCAPath, GSPCAResult, gspca, gspca_path
from .pathspca import pathspca
from .spca_zou import SPCAZou, larsen_k, spca_zou, spca_zou_path
from .sspca import SSPCA, group_soft_threshold, sspca_fit, sspca_objective, sspca_path
from .thresholding import simple_thresholding, thresholding_path

__all__ = [
    "GSPCA",
    "SSPCA",
    "GSPCAPath",
    "GSPCAResult",
    "SPCAZou",
    "ce_scores",
    "cesr_select",
    "group_soft_threshold",
    "gspca",
    "gspca_path",
    "larsen_k",
    "pathspca",
    "simple_thresholding",
    "spca_zou",
    "spca_zou_path",
    "sspca_fit",
    "sspca_objective",
    "sspca_path",
    "svd_entropy",
    "thresholding_path",
]
