"""Experiments: one module per figure or table of the five papers, plus benchmarks.

Run ``repro list`` to see them and ``repro run NAME`` (or ``python -m experiments run NAME``) to
regenerate one; ``repro run all`` regenerates everything and writes ``figures/CLAIMS.md``.
"""
