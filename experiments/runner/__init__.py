"""The runner: the ``repro`` command line and what every experiment shares.

``cli`` (the ``repro`` / ``python -m experiments`` command), ``_common`` (configuration, the run/redraw
driver of one experiment), ``claims`` (claims, verdicts and the ``figures/CLAIMS.md`` ledger), ``_atomic``
(atomic writes and folder locks), ``_preflight`` (dataset checks before anything is computed), ``_progress``
(progress lines), ``_describe`` (``--help`` text read from the sources with ``ast``) and ``_runtimes``
(recorded run times). The experiments themselves are the modules of :mod:`experiments`; only the standard
library is imported here, so ``repro --help`` and ``repro list`` load no numerical code.
"""
