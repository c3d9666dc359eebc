"""``mg.linalg``: NumPy's ``np.linalg`` on Tensors, differentiable (``np.linalg.<name>(t)`` lands
here too). The ops live in ``minigrad/ops/linalg.py``."""
from __future__ import annotations

from .ops.linalg import (
    EigResult, EighResult, QRResult, SlogdetResult, SVDResult, cholesky, det, eig, eigh, eigvals, eigvalsh, inv, lstsq,
    matrix_power, norm, pinv, qr, slogdet, solve, svd, svdvals,
)

__all__ = ["cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matrix_power", "norm", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]
