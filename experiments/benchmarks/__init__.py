"""The benchmarks: the project's own goals, apart from the reproduction.

Each module measures the library against a reference timed in the same run (BLAS products on the same
data, scikit-learn, SciPy, a plain NumPy version, the authors' code where installed) and declares
``GOALS``: the goal, the ratio with its within-run interval, met or missed (``repro bench NAME`` writes
``<out>/goals/bench_NAME.csv`` and ``<out>/BENCHMARKS.md``). A module that also checks a published
sentence or number on what it measures declares those rows as ``CLAIMS``: they go to the claims ledger.
The runner calls a module here ``bench_<module>`` (``bench_em_pca`` is :mod:`experiments.benchmarks.em_pca`).
"""
