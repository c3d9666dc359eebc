"""``mg.fft``: ``torch.fft``'s transforms on Tensors, differentiable in both modes (``np.fft.<name>(t)``
lands here too). The ops live in ``minigrad/ops/fft.py``."""
from __future__ import annotations

from .ops.fft import FUNCTIONS as _F, fftfreq, rfftfreq

fft, ifft, rfft, irfft = _F["fft"], _F["ifft"], _F["rfft"], _F["irfft"]
fft2, ifft2, rfft2, irfft2 = _F["fft2"], _F["ifft2"], _F["rfft2"], _F["irfft2"]
fftn, ifftn, rfftn, irfftn = _F["fftn"], _F["ifftn"], _F["rfftn"], _F["irfftn"]
fftshift, ifftshift = _F["fftshift"], _F["ifftshift"]

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
           "fftshift", "ifftshift", "fftfreq", "rfftfreq"]
