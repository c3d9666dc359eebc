"""Convolution and batch normalisation, functional form: ``conv1d``, ``conv2d``, ``conv_transpose2d``,
``batch_norm``.

Everything here is composed from minigrad's public operations, so it runs on every backend
(NumPy, CuPy) and gives derivatives of every order:

* ``conv1d`` / ``conv2d`` pad the input (``padding.py``'s op, whose gradient is a slice),
  take sliding windows of it (``mg.strided.windows``, a view whose gradient is an
  overlap-add), copy those windows once with the output positions innermost (the copy
  streams along rows) and contract them with the weight in ONE ``mg.einsum`` over
  (batch, group): one batched matmul forward and one each way backward.

PyTorch's shapes, argument names and semantics throughout::

    >>> x = mg.randn(8, 3, 32, 32)
    >>> w = mg.randn(16, 3, 3, 3)
    >>> F.conv2d(x, w, padding=1).shape
    (8, 16, 32, 32)
"""
from __future__ import annotations

import numbers

from ..grad_mode import no_grad
from ..ops import windows as _windows
from ..ops._registry import randn as _r, Sample, composite
from ..ops.einsum import einsum
from ..creation import as_tensor
from ._common import ntuple
from .padding import pad_widths

__all__ = ["conv1d", "conv2d", "batch_norm", "conv_transpose2d"]


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
    p = ntuple(padding, nd, "padding", op, minimum=0)
    return tuple((q, q) for q in p)


def _operands(x, weight, groups, nd, op, layout):
    """A convolution's input (batched: whether it was not) and weight as Tensors, their ranks and
    ``groups`` checked; ``layout`` names the weight's first two dims in messages."""
    x = as_tensor(x, op)
    weight = as_tensor(weight, op)
    if weight.ndim != nd + 2:
        raise ValueError(f"{op}: weight must be {nd + 2}-D ({layout}, *kernel), got shape {weight.shape}")
    unbatched = x.ndim == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    if x.ndim != nd + 2:
        raise ValueError(f"{op}: input must be {nd + 1}-D or {nd + 2}-D (N, C, *spatial), got shape {x.shape}")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    return x, weight, unbatched


def _conv(x, weight, bias, stride, padding, dilation, groups, nd, op):
    x, weight, unbatched = _operands(x, weight, groups, nd, op, "out, in/groups")
    n, c = x.shape[:2]
    o, cg = weight.shape[:2]
    ks = tuple(weight.shape[2:])
    if c % groups or o % groups or cg * groups != c:
        raise ValueError(
            f"{op}: input of shape {x.shape} (channels {c}) and weight of shape {weight.shape} do not fit "
            f"groups={groups}: expected weight (out, {c}/{groups}, *kernel) with out divisible by {groups}"
        )
    if bias is not None:
        bias = as_tensor(bias, op)
        if tuple(bias.shape) != (o,):
            raise ValueError(f"{op}: bias must have shape ({o},), got {bias.shape}")
    stride = ntuple(stride, nd, "stride", op)
    dilation = ntuple(dilation, nd, "dilation", op)
    widths = _conv_padding(padding, ks, stride, dilation, nd, op)
    spatial = x.shape[2:]
    for i in range(nd):
        if spatial[i] + sum(widths[i]) < dilation[i] * (ks[i] - 1) + 1:
            raise ValueError(
                f"{op}: the padded input {tuple(s + sum(w) for s, w in zip(spatial, widths, strict=True))} is "
                f"smaller than the dilated kernel {tuple(d * (k - 1) + 1 for k, d in zip(ks, dilation, strict=True))}"
            )
    xp_ = pad_widths(x, ((0, 0), (0, 0)) + widths)
    v = _windows.windows(xp_, ks, axes=tuple(range(2, 2 + nd)), step=stride, dilation=dilation)
    outs = tuple(v.shape[2:2 + nd])
    g = groups
    v = v.reshape((n, g, cg) + outs + ks)                      # a view: the channel dim splits
    kn = " ".join(f"k{a}" for a in _LETTERS[-nd:])
    on = " ".join(f"o{a}" for a in _LETTERS[-nd:])
    # (n, g, c, kernel..., out...): the copy walks the output positions innermost and the
    # einsum is one (out/g, c kernel) x (c kernel, out) matmul per sample and group
    perm = (0, 1, 2) + tuple(3 + nd + i for i in range(nd)) + tuple(3 + i for i in range(nd))
    cols = v.permute(perm).contiguous()
    w = weight.reshape((g, o // g, cg) + ks).expand((n, g, o // g, cg) + ks)  # a stride-0 batch dim
    out = einsum(cols, w, f"n g c {kn} {on}, n g f c {kn} -> n g f {on}")
    out = out.reshape((n, o) + outs)
    if bias is not None:
        out = out + bias.reshape((1, o) + (1,) * nd)
    return out.squeeze(0) if unbatched else out


@composite("conv2d", export=False,
           samples=lambda rng: [Sample(_r(rng, 1, 2, 5, 5), _r(rng, 3, 2, 3, 3), _r(rng, 3)),
                                Sample(_r(rng, 1, 4, 6, 5), _r(rng, 4, 2, 2, 3), stride=2, padding=1,
                                       dilation=(1, 2), groups=2)])
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


@composite("conv1d", samples=lambda rng: [Sample(_r(rng, 2, 2, 7), _r(rng, 3, 2, 3), padding="same")], export=False)
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """1-D cross-correlation, PyTorch's ``F.conv1d``: x (N, C, L), weight (O, C / groups, k).

    Same arguments as ``conv2d`` with one spatial dim; returns (N, O, oL).

    >>> F.conv1d(mg.ones(2, 3, 10), mg.ones(5, 3, 3), padding="same").shape
    (2, 5, 10)
    """
    return _conv(x, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


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
    x = as_tensor(x, "batch_norm")
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
            with no_grad():
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


# -- transposed convolution ------------------------------------------------------------------------------


def _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, nd, op):
    """The adjoint of ``_conv``: the input spread out with ``stride - 1`` zeros between its entries,
    padded by ``dilation (k - 1) - padding`` each side (``output_padding`` more on the high side;
    a negative width crops), then convolved at stride 1 with the flipped weight whose in and out
    channels swap within each group."""
    x, weight, unbatched = _operands(x, weight, groups, nd, op, "in, out/groups")
    g = int(groups)
    n, c = x.shape[:2]
    ci, og = weight.shape[:2]
    ks = tuple(weight.shape[2:])
    if ci != c or c % g:
        raise ValueError(
            f"{op}: input of shape {x.shape} (channels {c}) and weight of shape {weight.shape} do not fit "
            f"groups={g}: expected weight ({c}, out/{g}, *kernel) with {c} divisible by {g}"
        )
    o = og * g
    if bias is not None:
        bias = as_tensor(bias, op)
        if tuple(bias.shape) != (o,):
            raise ValueError(f"{op}: bias must have shape ({o},), got {bias.shape}")
    stride = ntuple(stride, nd, "stride", op)
    dilation = ntuple(dilation, nd, "dilation", op)
    padding = ntuple(padding, nd, "padding", op, minimum=0)
    output_padding = ntuple(output_padding, nd, "output_padding", op, minimum=0)
    for i in range(nd):
        if output_padding[i] >= max(stride[i], dilation[i]):
            raise ValueError(f"{op}: output_padding {output_padding} must be smaller than stride {stride} or "
                             f"dilation {dilation}")
    spatial = tuple(x.shape[2:])
    outs = tuple((s - 1) * st - 2 * p + d * (k - 1) + q + 1
                 for s, st, p, d, k, q in zip(spatial, stride, padding, dilation, ks, output_padding, strict=True))
    if any(v < 1 for v in outs):
        raise ValueError(f"{op}: the output size {outs} for input {x.shape} is too small")
    if any(st > 1 for st in stride):
        # (n, c, h, 1, w, 1) padded to (n, c, h, s, w, s) with zeros, read as (n, c, h s, w s)
        inter = [n, c]
        widths = [(0, 0), (0, 0)]
        for s, st in zip(spatial, stride, strict=True):
            inter += [s, 1]
            widths += [(0, 0), (0, st - 1)]
        x = pad_widths(x.reshape(tuple(inter)), tuple(widths))
        x = x.reshape((n, c) + tuple(s * st for s, st in zip(spatial, stride, strict=True)))
    # the spread input holds s (h - 1) + 1 entries and st - 1 trailing zeros already
    lo = tuple(d * (k - 1) - p for d, k, p in zip(dilation, ks, padding, strict=True))
    hi = tuple(lo_ + q - (st - 1) for lo_, q, st in zip(lo, output_padding, stride, strict=True))
    crop = tuple(slice(max(-a, 0), x.shape[2 + i] - max(-b, 0)) for i, (a, b) in enumerate(zip(lo, hi, strict=True)))
    if any(a < 0 or b < 0 for a, b in zip(lo, hi, strict=True)):
        x = x[(slice(None), slice(None)) + crop]
    x = pad_widths(x, ((0, 0), (0, 0)) + tuple((max(a, 0), max(b, 0)) for a, b in zip(lo, hi, strict=True)))
    # (c, o/g, k...) -> (g, c/g, o/g, k...) -> (g, o/g, c/g, k...) -> (o, c/g, k...), flipped in space
    w = weight.reshape((g, c // g, og) + ks).swapaxes(1, 2).reshape((o, c // g) + ks)
    w = w.flip(tuple(range(2, 2 + nd)))
    out = _conv(x, w, bias, 1, 0, dilation, g, nd, op)
    return out.squeeze(0) if unbatched else out


def _torch_conv_transpose2d(th, x, w, b=None, **kw):
    return th.nn.functional.conv_transpose2d(x, w, b, **kw)


@composite("conv_transpose2d", export=False, torch=_torch_conv_transpose2d,
           samples=lambda rng: [Sample(_r(rng, 1, 2, 3, 3), _r(rng, 2, 3, 2, 2), _r(rng, 3)),
                                Sample(_r(rng, 1, 4, 3, 2), _r(rng, 4, 1, 3, 2), stride=(2, 3), padding=1,
                                       output_padding=(1, 0), groups=2, dilation=(1, 2))])
def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """2-D transposed convolution, PyTorch's ``F.conv_transpose2d``: the adjoint (the gradient
    with respect to the input) of ``conv2d`` with the same weight, stride, padding and dilation.

    Args:
        x: (N, C, H, W) (or unbatched (C, H, W)).
        weight: (C, O / groups, kH, kW) (PyTorch's layout: in channels first).
        bias: (O,) or None.
        stride, padding, dilation: an int or a pair, as the ``conv2d`` this is the adjoint of.
        output_padding: extra rows / columns on the high side of the output (smaller than the
            stride or the dilation): picks one of the input sizes a strided ``conv2d`` maps to
            the same output size.
        groups: split the channels into this many independent convolutions.

    Returns:
        (N, O, oH, oW) with ``oH = (H - 1) sH - 2 pH + dH (kH - 1) + opH + 1`` (likewise oW).

    >>> F.conv_transpose2d(mg.ones(1, 4, 5, 5), mg.ones(4, 3, 3, 3), stride=2).shape
    (1, 3, 11, 11)
    """
    return _conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d")
