"""Convolution, pooling, batch normalisation and smooth activations, functional form.

Everything here is composed from minigrad's public operations, so it runs on every backend
(NumPy, CuPy) and gives derivatives of every order:

* ``conv1d`` / ``conv2d`` pad the input (``pad``, a Function whose gradient is a slice),
  take sliding windows of it (``mg.strided.windows``, a view whose gradient is an
  overlap-add), copy those windows once with the output positions innermost (the copy
  streams along rows) and contract them with the weight in ONE ``mg.einsum`` over
  (batch, group): one batched matmul forward and one each way backward.
* ``max_pool2d`` picks each window's first maximum (PyTorch's tie rule) by ``argmax`` and
  gathers it with advanced indexing, so the gradient goes to exactly one element per window.
* ``gelu`` (exact) is ``x * Phi(x)`` with ``Phi`` the normal CDF: a Function computed from a
  Cody rational approximation of ``erfc`` (accurate to a few ulps in float64), whose
  gradient ``exp(-x^2 / 2) / sqrt(2 pi)`` is made of ordinary ops.

PyTorch's shapes, argument names and semantics throughout::

    >>> x = mg.randn(8, 3, 32, 32)
    >>> w = mg.randn(16, 3, 3, 3)
    >>> F.conv2d(x, w, padding=1).shape
    (8, 16, 32, 32)
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import autograd as _ag
from .. import backend as _be
from .. import strided as _strided
from ..ops._registry import Sample, composite
from ..tensor import Tensor

__all__ = [
    "pad", "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
    "adaptive_avg_pool2d", "gelu", "silu", "batch_norm",
]


def _t(x, op):
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "_sparse_values_for_grad"):
        raise TypeError(f"{op}: got a sparse tensor; convert it with .to_dense() first")
    return Tensor(x)


def _ntuple(v, n, name, op, minimum=1):
    """An int or a sequence of ``n`` ints, as a tuple of ``n`` ints >= ``minimum``."""
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        v = (int(v),) * n
    try:
        v = tuple(v)
    except TypeError:
        raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {v!r}") from None
    if len(v) != n or any(isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral) for s in v):
        raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {v!r}")
    if any(s < minimum for s in v):
        raise ValueError(f"{op}: {name} must be >= {minimum}, got {v!r}")
    return tuple(int(s) for s in v)


# -- padding --------------------------------------------------------------------------------------


class _Pad(_ag.Function):
    """Constant padding; its gradient is the slice of the interior (a view)."""

    @staticmethod
    def forward(ctx, x, widths, value):
        xd = x.data
        xp = _be.array_module(xd)
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(xd.shape, widths, strict=True))
        out = xp.full(shape, value, dtype=xd.dtype)
        inner = tuple(slice(lo, lo + n) for n, (lo, _) in zip(xd.shape, widths, strict=True))
        out[inner] = xd
        ctx.inner = inner
        return Tensor(out, device=x.device)

    @staticmethod
    def backward(ctx, g):
        return g[ctx.inner], None, None


def pad(x, pad, mode: str = "constant", value: float = 0.0):  # noqa: A002 - PyTorch's name
    """Pad ``x`` with a constant, PyTorch's ``F.pad`` convention.

    Args:
        x: a Tensor.
        pad: ``(left, right)`` pairs starting from the LAST dim: ``(l, r)`` pads the last dim,
            ``(l, r, t, b)`` the last two, and so on. Entries must be >= 0.
        mode: only ``"constant"``.
        value: the fill value.

    Returns:
        a new Tensor; its gradient is the interior of the incoming one.

    >>> F.pad(mg.ones(2, 3), (1, 1)).shape
    (2, 5)
    """
    x = _t(x, "pad")
    if mode != "constant":
        raise NotImplementedError(f"pad: only mode='constant' is implemented, got {mode!r}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad: {pad} must hold (left, right) pairs for at most {x.ndim} dims (input shape {x.shape})")
    if any(p < 0 for p in pad):
        raise ValueError(f"pad: negative padding {pad} is not supported")
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    return _pad(x, tuple(widths), value)


def _pad(x, widths, value=0.0):
    if all(lo == 0 and hi == 0 for lo, hi in widths):
        return x
    return _Pad.apply(x, tuple(widths), value)


# -- convolution ------------------------------------------------------------------------------------

_LETTERS = ("h", "w")


def _conv_padding(padding, ks, stride, dilation, nd, op):
    """(lo, hi) per spatial dim."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions (stride {stride})")
            out = []
            for k, d in zip(ks, dilation, strict=True):
                total = d * (k - 1)
                out.append((total // 2, total - total // 2))  # the odd one on the right, as PyTorch
            return tuple(out)
        raise ValueError(f"{op}: padding must be 'valid', 'same', an int or a tuple of ints, got {padding!r}")
    p = _ntuple(padding, nd, "padding", op, minimum=0)
    return tuple((q, q) for q in p)


def _conv(x, weight, bias, stride, padding, dilation, groups, nd, op):
    x = _t(x, op)
    weight = _t(weight, op)
    if weight.ndim != nd + 2:
        raise ValueError(f"{op}: weight must be {nd + 2}-D (out, in/groups, *kernel), got shape {weight.shape}")
    unbatched = x.ndim == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    if x.ndim != nd + 2:
        raise ValueError(f"{op}: input must be {nd + 1}-D or {nd + 2}-D (N, C, *spatial), got shape {x.shape}")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    n, c = x.shape[:2]
    o, cg = weight.shape[:2]
    ks = tuple(weight.shape[2:])
    if c % groups or o % groups or cg * groups != c:
        raise ValueError(
            f"{op}: input of shape {x.shape} (channels {c}) and weight of shape {weight.shape} do not fit "
            f"groups={groups}: expected weight (out, {c}/{groups}, *kernel) with out divisible by {groups}"
        )
    if bias is not None:
        bias = _t(bias, op)
        if tuple(bias.shape) != (o,):
            raise ValueError(f"{op}: bias must have shape ({o},), got {bias.shape}")
    stride = _ntuple(stride, nd, "stride", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    widths = _conv_padding(padding, ks, stride, dilation, nd, op)
    spatial = x.shape[2:]
    for i in range(nd):
        if spatial[i] + sum(widths[i]) < dilation[i] * (ks[i] - 1) + 1:
            raise ValueError(
                f"{op}: the padded input {tuple(s + sum(w) for s, w in zip(spatial, widths, strict=True))} is "
                f"smaller than the dilated kernel {tuple(d * (k - 1) + 1 for k, d in zip(ks, dilation, strict=True))}"
            )
    xp_ = _pad(x, ((0, 0), (0, 0)) + widths)
    v = _strided.windows(xp_, ks, axes=tuple(range(2, 2 + nd)), step=stride, dilation=dilation)
    outs = tuple(v.shape[2:2 + nd])
    g = groups
    v = v.reshape((n, g, cg) + outs + ks)                      # a view: the channel dim splits
    kn = " ".join(f"k{a}" for a in _LETTERS[-nd:])
    on = " ".join(f"o{a}" for a in _LETTERS[-nd:])
    import minigrad as _mg  # the einsum entry point is resolved lazily by the package

    # (n, g, c, kernel..., out...): the copy walks the output positions innermost and the
    # einsum is one (out/g, c kernel) x (c kernel, out) matmul per sample and group
    perm = (0, 1, 2) + tuple(3 + nd + i for i in range(nd)) + tuple(3 + i for i in range(nd))
    cols = v.permute(perm).contiguous()
    w = weight.reshape((g, o // g, cg) + ks).expand((n, g, o // g, cg) + ks)  # a stride-0 batch dim
    out = _mg.einsum(cols, w, f"n g c {kn} {on}, n g f c {kn} -> n g f {on}")
    out = out.reshape((n, o) + outs)
    if bias is not None:
        out = out + bias.reshape((1, o) + (1,) * nd)
    return out.squeeze(0) if unbatched else out


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """2-D cross-correlation, PyTorch's ``F.conv2d``.

    Args:
        x: (N, C, H, W) (or unbatched (C, H, W)).
        weight: (O, C / groups, kH, kW).
        bias: (O,) or None.
        stride, dilation: an int or (sH, sW).
        padding: an int, (pH, pW), ``"valid"`` (0) or ``"same"`` (output size = input size;
            stride 1 only; an odd total puts the extra zero on the right, as PyTorch).
        groups: split the channels into this many independent convolutions.

    Returns:
        (N, O, oH, oW) with ``oH = (H + 2 pH - dH (kH - 1) - 1) // sH + 1`` (likewise oW).

    >>> F.conv2d(mg.ones(1, 2, 5, 5), mg.ones(4, 1, 3, 3), groups=2).shape
    (1, 4, 3, 3)
    """
    return _conv(x, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """1-D cross-correlation, PyTorch's ``F.conv1d``: x (N, C, L), weight (O, C / groups, k).

    Same arguments as ``conv2d`` with one spatial dim; returns (N, O, oL).

    >>> F.conv1d(mg.ones(2, 3, 10), mg.ones(5, 3, 3), padding="same").shape
    (2, 5, 10)
    """
    return _conv(x, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


# -- pooling ------------------------------------------------------------------------------------------


def _pool_args(x, kernel_size, stride, padding, dilation, nd, op, ceil_mode):
    x = _t(x, op)
    if x.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{op}: input must be {nd + 1}-D or {nd + 2}-D (N, C, *spatial), got shape {x.shape}")
    if ceil_mode:
        raise NotImplementedError(f"{op}: ceil_mode=True is not implemented")
    ks = _ntuple(kernel_size, nd, "kernel_size", op)
    stride = ks if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0) else \
        _ntuple(stride, nd, "stride", op)
    pads = _ntuple(padding, nd, "padding", op, minimum=0)
    dilation = _ntuple(dilation, nd, "dilation", op)
    for p, k in zip(pads, ks, strict=True):
        if p > k // 2:
            raise ValueError(f"{op}: padding {pads} must be at most half the kernel size {ks}")
    return x, ks, stride, pads, dilation


def _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, op):
    x, ks, stride, pads, dilation = _pool_args(x, kernel_size, stride, padding, dilation, nd, op, ceil_mode)
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: input must be floating-point, got {x.dtype}")
    spatial = tuple(range(x.ndim - nd, x.ndim))
    widths = ((0, 0),) * (x.ndim - nd) + tuple((p, p) for p in pads)
    xpad = _pad(x, widths, -math.inf)
    # which element of each window is the (first) maximum: found without recording
    v = _strided.windows(xpad.detach(), ks, axes=spatial, step=stride, dilation=dilation).data
    xp = _be.array_module(v)
    lead = v.shape[:x.ndim]
    k = int(np.prod(ks))
    first = v.reshape(lead + (k,)).argmax(axis=-1)            # (..., out...) flat index in the window
    index = []
    for ax in range(x.ndim):
        if ax < x.ndim - nd:
            shape = [1] * x.ndim
            shape[ax] = lead[ax]
            index.append(xp.arange(lead[ax]).reshape(shape))
        else:
            j = ax - (x.ndim - nd)
            inner = int(np.prod(ks[j + 1:]))
            kj = (first // inner) % ks[j]                      # this dim's offset inside the window
            shape = [1] * x.ndim
            shape[ax] = lead[ax]
            index.append(xp.arange(lead[ax]).reshape(shape) * stride[j] + kj * dilation[j])
    out = xpad[tuple(index)]                                   # the gradient reaches that one element
    if not return_indices:
        return out
    # PyTorch's indices: flat positions in the unpadded input's spatial dims
    flat = xp.zeros(out.shape, dtype=np.int64)
    for j in range(nd):
        ax = x.ndim - nd + j
        flat = flat * x.shape[ax] + (index[ax] - pads[j])
    return out, Tensor(flat, device=x.device)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """2-D max pooling, PyTorch's ``F.max_pool2d`` (x (N, C, H, W) or (C, H, W)).

    Args:
        kernel_size: an int or (kH, kW).
        stride: an int or a pair; None (default) means the kernel size.
        padding: implicit -inf on both sides, at most half the kernel.
        dilation: spacing between a window's elements.
        return_indices: also return, per output, the flat index in H * W of the chosen input.

    Ties send the whole gradient to the first maximum of the window in row-major order, as
    PyTorch does (never split). A NaN in a window makes that output NaN.

    >>> F.max_pool2d(mg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """1-D max pooling, PyTorch's ``F.max_pool1d`` (x (N, C, L) or (C, L)); see ``max_pool2d``."""
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, op):
    x, ks, stride, pads, _ = _pool_args(x, kernel_size, stride, padding, 1, nd, op, ceil_mode)
    spatial = tuple(range(x.ndim - nd, x.ndim))
    widths = ((0, 0),) * (x.ndim - nd) + tuple((p, p) for p in pads)
    v = _strided.windows(_pad(x, widths), ks, axes=spatial, step=stride)
    s = v.sum(axis=tuple(range(x.ndim, x.ndim + nd)))
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError(f"{op}: divisor_override must not be zero")
        return s / float(divisor_override)
    if count_include_pad or not any(pads):
        return s / float(np.prod(ks))
    # the number of real (unpadded) elements in each window, per output position
    ones = np.pad(np.ones(x.shape[x.ndim - nd:]), tuple((p, p) for p in pads))
    counts = np.lib.stride_tricks.sliding_window_view(ones, ks)[tuple(slice(None, None, st) for st in stride)]
    counts = counts.sum(axis=tuple(range(nd, 2 * nd))).astype(x.dtype)
    return s / Tensor(counts, device=x.device)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override=None):
    """2-D average pooling, PyTorch's ``F.avg_pool2d`` (x (N, C, H, W) or (C, H, W)).

    Args:
        kernel_size: an int or (kH, kW). stride: None (default) means the kernel size.
        padding: zeros on both sides, at most half the kernel.
        count_include_pad: divide by the whole window (default) or by its unpadded part.
        divisor_override: divide by this instead.

    >>> F.avg_pool2d(mg.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                     "avg_pool2d")


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
    """1-D average pooling, PyTorch's ``F.avg_pool1d`` (x (N, C, L) or (C, L)); see ``avg_pool2d``."""
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def adaptive_avg_pool2d(x, output_size):
    """Average pooling to a given output size, PyTorch's ``F.adaptive_avg_pool2d``.

    Args:
        x: (N, C, H, W) or (C, H, W).
        output_size: an int or (oH, oW); None in a pair keeps that input size.

    Output cell ``i`` of a dim averages input ``floor(i * H / oH)`` to ``ceil((i + 1) * H / oH)``.
    Output size 1 is the global average; sizes that divide the input are an ``avg_pool2d``.

    >>> F.adaptive_avg_pool2d(mg.ones(2, 3, 5, 7), 1).shape
    (2, 3, 1, 1)
    """
    x = _t(x, "adaptive_avg_pool2d")
    if x.ndim not in (3, 4):
        raise ValueError(f"adaptive_avg_pool2d: input must be 3-D or 4-D, got shape {x.shape}")
    if isinstance(output_size, numbers.Integral) or output_size is None:
        output_size = (output_size, output_size)
    h, w = x.shape[-2:]
    oh, ow = (h if output_size[0] is None else int(output_size[0]), w if output_size[1] is None else int(output_size[1]))
    if oh < 1 or ow < 1:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be positive, got {output_size!r}")
    if (oh, ow) == (1, 1):
        return x.mean(axis=(-2, -1), keepdims=True)
    if h % oh == 0 and w % ow == 0:
        return avg_pool2d(x, (h // oh, w // ow))
    rows = []
    for i in range(oh):
        r0, r1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        cells = []
        for j in range(ow):
            c0, c1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            cells.append(x[..., r0:r1, c0:c1].mean(axis=(-2, -1)))
        rows.append(_stack(cells, -1))
    return _stack(rows, -2)


def _stack(ts, axis):
    import minigrad as _mg

    return _mg.stack(ts, axis=axis)


# -- activations ----------------------------------------------------------------------------------------

# W. J. Cody's rational approximations of erf / erfc (Math. Comp. 23, 1969; netlib specfun CALERF)
_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02, 3.20937758913846947e03,
          1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03, 2.84423683343917062e03)
_ERF_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01, 2.98635138197400131e02,
          8.81952221241769090e02, 1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03,
          2.15311535474403846e-8)
_ERF_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02, 1.62138957456669019e03,
          3.29079923573345963e03, 4.36261909014324716e03, 3.43936767414372164e03, 1.23033935480374942e03)
_ERF_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1, 1.60837851487422766e-2,
          6.58749161529837803e-4, 1.63153871373020978e-2)
_ERF_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1, 6.05183413124413191e-2,
          2.33520497626869185e-3)
_SQRPI = 5.6418958354775628695e-1  # 1 / sqrt(pi)


def _erfc_array(x):
    """erfc(x) elementwise on a NumPy/CuPy float array: SciPy's (or CuPy's) where installed,
    else Cody's approximation (``_erfc_cody``), which agrees with them to a few ulps."""
    xp = _be.array_module(x)
    try:
        if xp is np:
            from scipy.special import erfc  # noqa: PLC0415 - optional

            return erfc(x)
        if getattr(xp, "__name__", "") == "cupy":  # not the CPU stand-in
            from cupyx.scipy.special import erfc  # noqa: PLC0415 - optional

            return erfc(x)
    except ImportError:
        pass
    return _erfc_cody(x)


def _erfc_cody(x):
    """erfc(x) elementwise, to a few ulps in float64: Cody's three ranges, every op an array op."""
    xp = _be.array_module(x)
    x64 = x.astype(np.float64)
    y = xp.abs(x64)
    # |x| <= 0.46875: erf(y) = y P(y^2) / Q(y^2)
    ysq = y * y
    num = _ERF_A[4] * ysq
    den = ysq
    for i in range(3):
        num = (num + _ERF_A[i]) * ysq
        den = (den + _ERF_B[i]) * ysq
    small = 1.0 - y * (num + _ERF_A[3]) / (den + _ERF_B[3])
    # 0.46875 < |x| <= 4: erfc(y) = exp(-y^2) P(y) / Q(y)
    num = _ERF_C[8] * y
    den = y
    for i in range(7):
        num = (num + _ERF_C[i]) * y
        den = (den + _ERF_D[i]) * y
    mid = (num + _ERF_C[7]) / (den + _ERF_D[7])
    # |x| > 4: erfc(y) = exp(-y^2) / y (1 / sqrt(pi) + P(1/y^2) / (y^2 Q(1/y^2)))
    yl = xp.maximum(y, 4.0)
    isq = 1.0 / (yl * yl)
    num = _ERF_P[5] * isq
    den = isq
    for i in range(4):
        num = (num + _ERF_P[i]) * isq
        den = (den + _ERF_Q[i]) * isq
    large = (_SQRPI - isq * (num + _ERF_P[4]) / (den + _ERF_Q[4])) / yl
    # exp(-y^2) as exp(-t^2) exp(-(y - t)(y + t)) with t = y rounded down to 1/16: no lost digits
    t = xp.floor(y * 16.0) / 16.0
    scale = xp.exp(-t * t) * xp.exp(-(y - t) * (y + t))
    tail = scale * xp.where(y <= 4.0, mid, large)
    pos = xp.where(y <= 0.46875, small, tail)               # erfc(|x|)
    out = xp.where(x64 < 0, 2.0 - pos, pos)
    return out.astype(x.dtype, copy=False)


class _NormalCDF(_ag.Function):
    """Phi(x) = erfc(-x / sqrt 2) / 2; its gradient exp(-x^2 / 2) / sqrt(2 pi) is made of recorded ops."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Tensor(0.5 * _erfc_array(x.data * -(1.0 / math.sqrt(2.0))), device=x.device)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ((x * x) * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))


def gelu(x, approximate: str = "none"):
    """Gaussian error linear unit, PyTorch's ``F.gelu``.

    ``approximate="none"``: ``x * Phi(x)`` with the exact normal CDF (an erf accurate to a
    few ulps in float64); ``"tanh"``: ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``.
    Differentiable to any order.

    >>> round(F.gelu(mg.tensor([1.0], dtype="float64")).item(), 6)
    0.841345
    """
    x = _t(x, "gelu")
    if approximate == "none":
        return x * _NormalCDF.apply(x)
    if approximate == "tanh":
        inner = (x + 0.044715 * (x * x * x)) * math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + inner.tanh())
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(x):
    """``x * sigmoid(x)`` (swish), PyTorch's ``F.silu``."""
    x = _t(x, "silu")
    return x * x.sigmoid()


# -- batch normalisation --------------------------------------------------------------------------------


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """Batch normalisation over every dim but the channel dim 1, PyTorch's ``F.batch_norm``.

    Args:
        x: (N, C) or (N, C, *spatial).
        running_mean, running_var: (C,) Tensors or None. In training they are updated in place
            (``(1 - momentum) * old + momentum * batch``, the variance unbiased); in eval they
            normalise.
        weight, bias: (C,) scale and shift, or None.
        training: use the batch's statistics (biased variance) and update the running ones.
        momentum: the running average's weight of the new batch.
        eps: added to the variance.

    >>> F.batch_norm(mg.randn(8, 3), None, None, training=True).shape
    (8, 3)
    """
    x = _t(x, "batch_norm")
    if x.ndim < 2:
        raise ValueError(f"batch_norm: input must be at least 2-D (N, C, ...), got shape {x.shape}")
    c = x.shape[1]
    axes = (0,) + tuple(range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise ValueError(f"batch_norm: {name} must have shape ({c},) for input of shape {x.shape}, got {t.shape}")
    if training:
        count = x.size // c
        if count <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got input of shape {x.shape}"
            )
        mean = x.mean(axis=axes, keepdims=True)
        d = x - mean
        var = (d * d).mean(axis=axes, keepdims=True)
        y = d / (var + eps).sqrt()
        if running_mean is not None or running_var is not None:
            with _ag.no_grad():
                m = float(momentum)
                if running_mean is not None:
                    new = running_mean * (1.0 - m) + mean.detach().reshape(c).astype(running_mean.dtype) * m
                    running_mean.copy_(new)
                if running_var is not None:
                    unbiased = var.detach().reshape(c) * (count / (count - 1))
                    new = running_var * (1.0 - m) + unbiased.astype(running_var.dtype) * m
                    running_var.copy_(new)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: eval mode (training=False) needs running_mean and running_var")
        y = (x - running_mean.reshape(bshape)) / (running_var.reshape(bshape) + eps).sqrt()
    if weight is not None:
        y = y * weight.reshape(bshape)
    if bias is not None:
        y = y + bias.reshape(bshape)
    return y


def _softmax_dim(ndim):
    """PyTorch's legacy choice of dim for ``Softmax(dim=None)``."""
    warnings.warn("Softmax: implicit dim is deprecated; pass dim= (PyTorch's legacy rule is used)",
                  UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


# -- their registry entries: built from registered ops (pad, windows, einsum...), so each is a
# composite; the registry test gradchecks and gradgradchecks them from these samples ---------------

def _r(rng, *shape):
    return rng.standard_normal(shape)


def _distinct(rng, *shape):  # pooling samples without ties (max has a kink at a tie)
    n = 1
    for s in shape:
        n *= s
    return rng.permutation(n).reshape(shape) * 0.1 + 0.01


_ENTRIES = [
    ("conv2d", conv2d, lambda rng: [Sample(_r(rng, 1, 2, 5, 5), _r(rng, 3, 2, 3, 3), _r(rng, 3)),
                                    Sample(_r(rng, 1, 4, 6, 5), _r(rng, 4, 2, 2, 3), stride=2, padding=1,
                                           dilation=(1, 2), groups=2)]),
    ("conv1d", conv1d, lambda rng: [Sample(_r(rng, 2, 2, 7), _r(rng, 3, 2, 3), padding="same")]),
    ("pad", pad, lambda rng: [Sample(_r(rng, 2, 3), (1, 2))]),
    ("max_pool2d", max_pool2d, lambda rng: [Sample(_distinct(rng, 1, 2, 4, 4), 2),
                                            Sample(_distinct(rng, 1, 1, 5, 5), 3, stride=2, padding=1)]),
    ("max_pool1d", max_pool1d, lambda rng: [Sample(_distinct(rng, 1, 2, 6), 2)]),
    ("avg_pool2d", avg_pool2d, lambda rng: [Sample(_r(rng, 1, 2, 4, 4), 2), Sample(_r(rng, 1, 1, 5, 5), 3, stride=2)]),
    ("avg_pool1d", avg_pool1d, lambda rng: [Sample(_r(rng, 1, 2, 6), 3)]),
    ("adaptive_avg_pool2d", adaptive_avg_pool2d, lambda rng: [Sample(_r(rng, 2, 3, 4, 4), 1)]),
    ("gelu", gelu, lambda rng: [Sample(_r(rng, 3, 4)), Sample(_r(rng, 5), approximate="tanh")]),
    ("silu", silu, lambda rng: [Sample(_r(rng, 3, 4))]),
]
for _name, _fn, _samples in _ENTRIES:
    composite(_name, samples=_samples, export=False)(_fn)
del _name, _fn, _samples
