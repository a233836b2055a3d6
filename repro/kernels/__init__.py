"""Numba kernels of the families not yet moved beside their methods (numba options: :mod:`repro._jit`)."""
