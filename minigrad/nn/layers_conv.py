"""Layers for convolutional nets: Conv1d, Conv2d, MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d,
AdaptiveAvgPool2d, BatchNorm1d, BatchNorm2d, ConvTranspose2d.

PyTorch's parameter names, shapes and default initialisation, so a ``state_dict`` moves
between the two by name::

    >>> conv = mg.nn.Conv2d(3, 16, 3, padding=1)
    >>> conv.weight.shape, conv.bias.shape
    ((16, 3, 3, 3), (16,))
"""
from __future__ import annotations

import math

import numpy as np

from .. import _state
from .. import creation as _creation
from ..tensor import Tensor
from . import init
from . import functional as F
from ._common import ntuple, positive_int
from .module import Module, Parameter

__all__ = [
    "Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d",
    "BatchNorm1d", "BatchNorm2d",
]


# -- convolution ------------------------------------------------------------------------------------


class _ConvNd(Module):
    _nd = 2
    _op = "Conv2d"
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__()
        nd, op = self._nd, self._op
        if padding_mode != "zeros":
            raise NotImplementedError(f"{op}: only padding_mode='zeros' is implemented, got {padding_mode!r}")
        in_channels, out_channels = positive_int(in_channels, op, "in_channels"), positive_int(out_channels, op, "out_channels")
        groups = positive_int(groups, op, "groups")
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{op}: in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible by "
                f"groups ({groups})"
            )
        self.in_channels = int(in_channels)
        self.out_channels = int(out_channels)
        self.kernel_size = ntuple(kernel_size, nd, "kernel_size", op)
        self.stride = ntuple(stride, nd, "stride", op)
        self.padding = padding if isinstance(padding, str) else ntuple(padding, nd, "padding", op, minimum=0)
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{op}: padding must be 'valid', 'same', an int or a tuple, got {padding!r}")
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
        self.dilation = ntuple(dilation, nd, "dilation", op)
        self.groups = int(groups)
        self.padding_mode = padding_mode
        if self._transposed:  # PyTorch's layout for the adjoint: (in, out / groups, *kernel)
            shape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        else:
            shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        self.weight = Parameter(_creation.empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_creation.empty(self.out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)) for the weight, U(+-1/sqrt(fan_in)) for the bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * int(np.prod(self.kernel_size))
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W): ``weight`` (out, in / groups, kH, kW), ``bias`` (out,).

    Arguments as PyTorch's ``nn.Conv2d`` (``padding_mode`` only ``"zeros"``); float32 unless
    ``dtype`` says otherwise.

    >>> mg.nn.Conv2d(1, 8, 3, padding=1)(mg.zeros(4, 1, 8, 8)).shape
    (4, 8, 8, 8)
    """

    _nd = 2
    _op = "Conv2d"

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L): ``weight`` (out, in / groups, k), ``bias`` (out,).

    >>> mg.nn.Conv1d(4, 8, 5, padding=2)(mg.zeros(2, 4, 30)).shape
    (2, 8, 30)
    """

    _nd = 1
    _op = "Conv1d"

    def forward(self, x):
        return F.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution over (N, C, H, W), PyTorch's ``nn.ConvTranspose2d``: ``weight``
    (in, out / groups, kH, kW), ``bias`` (out,), PyTorch's default initialisation (its fan-in is
    ``out / groups * kH * kW``). ``output_padding`` (or ``output_size=`` in the call) picks the
    output size among those a strided convolution maps back to the input's.

    >>> mg.nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)(mg.zeros(2, 8, 7, 7)).shape
    (2, 4, 14, 14)
    """

    _nd = 2
    _op = "ConvTranspose2d"
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"ConvTranspose2d: padding must be an int or a pair, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        self.output_padding = ntuple(output_padding, 2, "output_padding", "ConvTranspose2d", minimum=0)

    def forward(self, x, output_size=None):
        op = self.output_padding
        if output_size is not None:
            if not isinstance(x, Tensor):
                x = Tensor(x)
            size = tuple(int(v) for v in output_size)[-2:]
            base = tuple((x.shape[-2 + i] - 1) * self.stride[i] - 2 * self.padding[i]
                         + self.dilation[i] * (self.kernel_size[i] - 1) + 1 for i in range(2))
            op = tuple(s - b for s, b in zip(size, base, strict=True))
            if any(q < 0 or q >= max(st, d) for q, st, d in zip(op, self.stride, self.dilation, strict=True)):
                raise ValueError(f"ConvTranspose2d: output_size {tuple(output_size)} is not reachable from input "
                                 f"{x.shape} (the smallest output is {base}, output_padding {op} must be in "
                                 f"[0, max(stride, dilation)))")
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                                  self.dilation)

    def extra_repr(self):
        s = super().extra_repr()
        if self.output_padding != (0, 0):
            s += f", output_padding={self.output_padding}"
        return s


# -- pooling ----------------------------------------------------------------------------------------------


class MaxPool2d(Module):
    """Max over (kH, kW) windows; ``stride`` defaults to the kernel size (PyTorch's ``nn.MaxPool2d``).

    >>> mg.nn.MaxPool2d(2)(mg.zeros(1, 3, 8, 8)).shape
    (1, 3, 4, 4)
    """

    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, x):
        f = F.max_pool2d if self._nd == 2 else F.max_pool1d
        return f(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(MaxPool2d):
    """Max over windows of (N, C, L) (PyTorch's ``nn.MaxPool1d``)."""

    _nd = 1


class AvgPool2d(Module):
    """Mean over (kH, kW) windows (PyTorch's ``nn.AvgPool2d``).

    >>> mg.nn.AvgPool2d(2)(mg.ones(1, 3, 8, 8)).shape
    (1, 3, 4, 4)
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                             self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(Module):
    """Mean over windows of (N, C, L) (PyTorch's ``nn.AvgPool1d``)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, x):
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to ``output_size`` (an int or (oH, oW)), PyTorch's ``nn.AdaptiveAvgPool2d``."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


# -- batch normalisation ----------------------------------------------------------------------------------


class _BatchNorm(Module):
    _dims = (2, 3)
    _op = "BatchNorm1d"

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None):
        super().__init__()
        self.num_features = positive_int(num_features, self._op, "num_features")
        self.eps = float(eps)
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        c = self.num_features
        if affine:
            self.weight = Parameter(_creation.ones(c, dtype=dtype, device=device))
            self.bias = Parameter(_creation.zeros(c, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _creation.zeros(c, dtype=dtype, device=device))
            self.register_buffer("running_var", _creation.ones(c, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", _creation.zeros((), dtype=np.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, x):
        if not isinstance(x, Tensor):
            x = Tensor(x)
        if x.ndim not in self._dims:
            raise ValueError(f"{self._op}: expected {' or '.join(f'{d}-D' for d in self._dims)} input, got shape {x.shape}")
        if x.shape[1] != self.num_features:
            raise ValueError(f"{self._op}: expected {self.num_features} channels in dim 1, got input of shape {x.shape}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative average of every batch seen
                _state.refuse(f"{type(self).__name__}(momentum=None) in training (its cumulative average reads "
                              "num_batches_tracked's value)")
                momentum = 1.0 / float(self.num_batches_tracked.item())
        # PyTorch's rule: batch statistics in training or when no running ones are kept
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        rm = self.running_mean if not self.training or self.track_running_stats else None
        rv = self.running_var if not self.training or self.track_running_stats else None
        return F.batch_norm(x, rm, rv, self.weight, self.bias, use_batch, momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) over all but the channel dim, PyTorch's
    ``nn.BatchNorm1d``: ``weight`` (ones), ``bias`` (zeros), buffers ``running_mean``,
    ``running_var`` (unbiased, updated with ``momentum``; None for a cumulative average) and
    ``num_batches_tracked``. Training normalises with the batch's statistics, eval with the
    running ones.

    >>> bn = mg.nn.BatchNorm1d(3)
    >>> list(bn.state_dict())
    ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """

    _dims = (2, 3)
    _op = "BatchNorm1d"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) per channel, PyTorch's ``nn.BatchNorm2d`` (see BatchNorm1d)."""

    _dims = (4,)
    _op = "BatchNorm2d"
