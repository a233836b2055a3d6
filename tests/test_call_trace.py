"""Following X from ``EMSparsePCA.fit`` down to its kernels: the files of ``repro/`` it enters, and how often
it comes back to a file it has left. The design keeps this path short (at most 8 files, no file re-entered
more than 40 times), so a reader can follow a fit in a few modules."""

from __future__ import annotations

import collections
import os
import sys

import numpy as np

import repro
from repro import EMSparsePCA

ROOT = os.path.dirname(repro.__file__)
MAX_FILES = 8
MAX_REENTRIES = 40


def _trace(fn) -> list[str]:
    """The ``repro/`` files of the Python calls ``fn`` makes, consecutive repeats merged."""
    seq: list[str] = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(ROOT):
            rel = os.path.relpath(frame.f_code.co_filename, ROOT)
            if not seq or seq[-1] != rel:
                seq.append(rel)

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seq


def test_a_sparse_em_fit_stays_in_a_few_files():
    X = np.random.default_rng(0).standard_normal((200, 50))
    fit = lambda: EMSparsePCA(n_components=3, cardinality=10, random_state=0).fit(X)  # noqa: E731
    fit()  # compiled and imported before the trace
    seq = _trace(fit)
    files = list(dict.fromkeys(seq))
    reentries = collections.Counter(seq) - collections.Counter(files)
    assert "em_sparse_pca/_kernels.py" in files  # the trace reaches the kernels
    assert len(files) <= MAX_FILES, files
    assert max(reentries.values(), default=0) <= MAX_REENTRIES, reentries.most_common(3)
