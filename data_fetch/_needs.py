"""Which registry files each loader reads (standard library only, so a runner can plan without parsing).

:data:`LOADER_FILES` maps a loader's name to the registry names it fetches. Optional files with a
documented fallback (the MNIST-variation zips) are not listed: what is listed is what the loader cannot
do without. :func:`files_for` resolves a mix of loader names and registry names.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["LOADER_FILES", "files_for"]

_MNIST_TRAIN = ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz")
_MNIST_TEST = ("mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz")

#: Section 8: Berk & Bertsimas's files and Li & Xie's matrices (``NAME_txt``), read by load_spca_optimal.
SPCA_OPTIMAL_BB_FILES = ("pitprops.csv", "miniBoone.jld", "communities.jld", "arrhythmia.jld")
SPCA_OPTIMAL_LI_XIE = (
    "pitprops", "housing", "keggdirected", "pol", "wdbc", "dermatology", "spambase", "digits", "buzz", "song",
    "gas", "Eisen1", "Eisen2",
)  # fmt: skip

LOADER_FILES: dict[str, tuple[str, ...]] = {
    "load_cbcl_faces": ("cbcl_faces/CBCL_Face.mat",),
    "load_cbcl_training": ("cbcl_faces/training.pkl",),
    "load_leukemia_armstrong": (
        "leukemia_armstrong_mll/MLL.names",
        "leukemia_armstrong_mll/MLL_train.data",
        "leukemia_armstrong_mll/MLL_test.data",
    ),
    "load_leukemia_golub": ("leukemia_golub/golub.RData",),
    "load_lrs": ("uci_lrs/lrs.data", "uci_lrs/lrs.names"),
    "load_pitprops": ("pitprops/pitprops.RData",),
    "load_spca_optimal": tuple(f"spca_optimal_berk_bertsimas/{f}" for f in SPCA_OPTIMAL_BB_FILES)
    + tuple(f"spca_optimal_li_xie/{n}_txt" for n in SPCA_OPTIMAL_LI_XIE),
    "load_spca_optimal_results": tuple(f"spca_optimal_li_xie/results_table{t}.csv" for t in (2, 8, 9, 10)),
    # load_mnist(split): both splits, since the split is an argument
    "load_mnist": _MNIST_TRAIN + _MNIST_TEST,
    "mnist_uint8": _MNIST_TRAIN + _MNIST_TEST,
    # the original zips are optional; without them the variation is recreated from the MNIST train split
    "load_mnist_variation": _MNIST_TRAIN,
}


def files_for(items: Iterable[str]) -> list[str]:
    """Registry names for loader names and registry names (kept as given), in order, without repeats.

    Raises
    ------
    ValueError
        An item that is neither a known loader nor a registry-style name (``folder/file``).
    """
    out: list[str] = []
    for item in items:
        if item in LOADER_FILES:
            names = LOADER_FILES[item]
        elif "/" in item:
            names = (item,)
        else:
            raise ValueError(
                f"data item {item!r} is neither a loader ({', '.join(LOADER_FILES)}) nor a registry name "
                "('folder/file' as in data_fetch/registry.txt)."
            )
        out += [n for n in names if n not in out]
    return out
