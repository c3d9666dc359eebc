"""``mg.linalg``: NumPy's ``np.linalg`` on Tensors, differentiable (``np.linalg.<name>(t)`` lands
here too). The ops live in ``minigrad/ops/linalg.py``."""
from __future__ import annotations

from .ops.linalg import (
    EighResult, QRResult, SlogdetResult, SVDResult, cholesky, det, eigh, eigvalsh, inv, lstsq, matrix_power, norm,
    pinv, qr, slogdet, solve, svd, svdvals,
)

__all__ = ["cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_power", "norm", "pinv", "qr", "slogdet",
           "solve", "svd", "svdvals", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]
