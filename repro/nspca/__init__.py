"""nspca"""

from .estimator import (
    NSPCA,
    CardinalityNotReached,
    NSPCACardinalityResult,
    NSPCAMinAngleResult,
    NSPCAResult,
    nspca,
    nspca_for_cardinality,
    nspca_for_min_angle,
    nspca_objective,
)

__all__ = [
    "NSPCA",
    "CardinalityNotReached",
    "NSPCACardinalityResult",
    "NSPCAMinAngleResult",
    "NSPCAResult",
    "nspca",
    "nspca_for_cardinality",
    "nspca_for_min_angle",
    "nspca_objective",
]
