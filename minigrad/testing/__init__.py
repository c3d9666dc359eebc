"""Test support shipped with the package: the CPU stand-in for CuPy (``fakecupy``, ``MINIGRAD_DEVICE=fakecuda``)."""
