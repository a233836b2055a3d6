"""The runner: the ``repro`` command line and what every experiment shares.

Three layers, each importing only those below it: ``cli`` (the argparse front of ``repro`` / ``python -m
experiments``) calls ``engine`` (runs and redraws experiments, in parallel worker processes, and rebuilds the
ledger) and ``verify`` (``repro verify``: runs through the engine, then compares with a reference); both ask
``registry`` (which experiments exist, their names, titles and sources, read without importing them).
Below them: ``_common`` (configuration, the run/redraw protocol of one experiment), ``claims`` (claims,
verdicts and the ``figures/CLAIMS.md`` ledger), ``_atomic`` (atomic writes and folder locks), ``_preflight``
(dataset checks before anything is computed), ``_progress`` (progress lines), ``_describe`` (``--help`` text
read from the sources with ``ast``) and ``_runtimes`` (recorded run times). The experiments themselves are
the modules of :mod:`experiments`; only the standard library is imported at start, so ``repro --help`` and
``repro list`` load no numerical code.
"""
