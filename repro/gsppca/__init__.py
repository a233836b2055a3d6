"""Globally sparse probabilistic PCA (Mattei, Bouveyron & Latouche 2016)."""

from .estimator import (
    EVIDENCE_TIE,
    GSPPCA,
    EvidencePath,
    VEMResult,
    evidence_path,
    gsppca_vem,
    log_bessel_k,
    log_density,
    log_evidence,
    make_globally_sparse,
    rank_variables,
    rotation_step,
    row_log_density,
    theorem1_density,
    vem_init,
    vem_iterations,
)

__all__ = [
    "EVIDENCE_TIE",
    "GSPPCA",
    "EvidencePath",
    "VEMResult",
    "evidence_path",
    "gsppca_vem",
    "log_bessel_k",
    "log_density",
    "log_evidence",
    "make_globally_sparse",
    "rank_variables",
    "rotation_step",
    "row_log_density",
    "theorem1_density",
    "vem_init",
    "vem_iterations",
]
