"""The methods the papers compare against.

* :mod:`.thresholding`: simple thresholding of the first PC (Cadima & Jolliffe 1995).
* :mod:`.pathspca`: PathSPCA, the approximate greedy path (d'Aspremont, Bach & El Ghaoui 2008).
* :mod:`.spca_zou`: SPCA by alternating elastic net (Zou, Hastie & Tibshirani 2006).
* :mod:`.gspca`: greedy sparse PCA with forward and backward search (Moghaddam, Weiss & Avidan 2006).
* :mod:`.cesr`: CE + SR, SVD-entropy feature filtering (Varshavsky et al. 2006).

NMF, the linear SVM and ROC curves come from scikit-learn directly.
"""

from .cesr import ce_scores, cesr_select, svd_entropy
from .gspca import GSPCA, GSPCAPath, GSPCAResult, gspca, gspca_path
from .pathspca import pathspca
from .spca_zou import SPCAZou, larsen_k, spca_zou, spca_zou_path
from .thresholding import simple_thresholding, thresholding_path

__all__ = [
    "GSPCA",
    "GSPCAPath",
    "GSPCAResult",
    "SPCAZou",
    "ce_scores",
    "cesr_select",
    "gspca",
    "gspca_path",
    "larsen_k",
    "pathspca",
    "simple_thresholding",
    "spca_zou",
    "spca_zou_path",
    "svd_entropy",
    "thresholding_path",
]

from .sspca import SSPCA, group_soft_threshold, sspca_fit, sspca_objective, sspca_path

__all__ += ["SSPCA", "group_soft_threshold", "sspca_fit", "sspca_objective", "sspca_path"]
