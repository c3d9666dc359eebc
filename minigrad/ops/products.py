"""NumPy's products beyond matmul: dot (NumPy's N-D rule), vdot, inner, tensordot, kron, cross.
Each is built from einsum, matmul and elementwise ops, so their gradients (and higher ones) come
from those ops' rules."""
from __future__ import annotations

import numbers

import numpy as np

from ..creation import as_tensor
from ._registry import randn as _r, Sample, composite, named
from .einsum import _LETTERS, einsum
from .join import moveaxis
from .shape import reshape, stack


def _labels(n, start=0):
    return _LETTERS[start:start + n]


@composite("tensordot", numpy=(np.tensordot,), samples=lambda rng: [
    Sample(_r(rng, 2, 3, 4), _r(rng, 3, 4, 5)), Sample(_r(rng, 2, 3), _r(rng, 3, 2), 1),
    Sample(_r(rng, 2, 3, 4), _r(rng, 4, 2, 3), ([1, 2], [2, 0])), Sample(_r(rng, 2), _r(rng, 3), 0)],
    torch=lambda th, a, b, axes=2: th.tensordot(a, b, axes))
@named("tensordot")
def tensordot(a, b, axes=2):
    """Sum products over the last ``axes`` axes of ``a`` and the first of ``b`` (an int), or over
    the axes named in ``(a_axes, b_axes)``."""
    a, b = as_tensor(a, "tensordot"), as_tensor(b, "tensordot")
    if isinstance(axes, numbers.Integral):
        n = int(axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={n} does not fit shapes {a.shape} and {b.shape}")
        xa, xb = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        xa, xb = axes
        xa = [xa] if isinstance(xa, numbers.Integral) else list(xa)
        xb = [xb] if isinstance(xb, numbers.Integral) else list(xb)
        xa = [x % a.ndim for x in xa] if a.ndim else xa
        xb = [x % b.ndim for x in xb] if b.ndim else xb
    if len(xa) != len(xb) or any(a.shape[i] != b.shape[j] for i, j in zip(xa, xb, strict=True)):
        raise ValueError(f"tensordot: shape mismatch for sum: axes {xa} of {a.shape} and {xb} of {b.shape}")
    la = list(_labels(a.ndim))
    lb = list(_labels(b.ndim, a.ndim))
    for i, j in zip(xa, xb, strict=True):
        lb[j] = la[i]
    out = [c for k, c in enumerate(la) if k not in xa] + [c for k, c in enumerate(lb) if k not in xb]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b)


@composite("dot", method="dot", numpy=(np.dot,), samples=lambda rng: [
    Sample(_r(rng, 3), _r(rng, 3)), Sample(_r(rng, 2, 3), _r(rng, 3, 4)), Sample(_r(rng, 2, 3, 4), _r(rng, 5, 4, 2)),
    Sample(_r(rng, 2, 3), _r(rng, 3)), Sample(_r(rng, 2, 3), 1.5)])
@named("dot")
def dot(a, b):
    """NumPy's ``dot``: a product with a 0-d operand, the inner product of vectors, the matrix product
    of matrices, and for N-D the sum over the last axis of ``a`` and the second-to-last of ``b``
    (NumPy's rule, which differs from ``matmul``'s batching)."""
    a, b = as_tensor(a, "dot"), as_tensor(b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if b.ndim == 1:
        return tensordot(a, b, ([a.ndim - 1], [0]))
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 2]))


@composite("vdot", numpy=(np.vdot,), samples=lambda rng: [Sample(_r(rng, 3), _r(rng, 3)), Sample(_r(rng, 2, 3), _r(rng, 3, 2))])
@named("vdot")
def vdot(a, b):
    """The dot product of the flattened inputs (a 0-d result)."""
    a, b = as_tensor(a, "vdot"), as_tensor(b, "vdot")
    if a.size != b.size:
        raise ValueError(f"vdot: inputs of {a.size} and {b.size} elements")
    return (reshape(a, (-1,)) * reshape(b, (-1,))).sum()


@composite("inner", numpy=(np.inner,), samples=lambda rng: [Sample(_r(rng, 3), _r(rng, 3)), Sample(_r(rng, 2, 3), _r(rng, 4, 3)),
                                                           Sample(_r(rng, 2, 3), 2.0)],
           torch=lambda th, a, b: th.inner(a, b if isinstance(b, th.Tensor) else th.tensor(b, dtype=a.dtype)))
@named("inner")
def inner(a, b):
    """Sum products over the last axes (a product with a 0-d operand)."""
    a, b = as_tensor(a, "inner"), as_tensor(b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]))


@composite("kron", numpy=(np.kron,), samples=lambda rng: [Sample(_r(rng, 2, 3), _r(rng, 3, 2)), Sample(_r(rng, 3), _r(rng, 2, 2))],
           torch=lambda th, a, b: th.kron(a, b))
@named("kron")
def kron(a, b):
    """The Kronecker product: blocks of ``b`` scaled by each element of ``a``."""
    a, b = as_tensor(a, "kron"), as_tensor(b, "kron")
    nd = max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    x = reshape(a, tuple(v for s in sa for v in (s, 1)))
    y = reshape(b, tuple(v for s in sb for v in (1, s)))
    return reshape(x * y, tuple(p * q for p, q in zip(sa, sb, strict=True)))


@composite("cross", numpy=(np.cross,), samples=lambda rng: [Sample(_r(rng, 3), _r(rng, 3)), Sample(_r(rng, 4, 3), _r(rng, 3)),
                                                           Sample(_r(rng, 3, 2), _r(rng, 2, 3), axisa=0, axisb=-1)])
@named("cross")
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors along ``axisa``/``axisb`` (``axis`` sets all three), batched
    with broadcasting; the result's vector axis is ``axisc``."""
    a, b = as_tensor(a, "cross"), as_tensor(b, "cross")
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ValueError(f"cross: vectors must have 3 components here, got {a.shape[-1]} and {b.shape[-1]} "
                         "(NumPy 2 deprecates 2-component vectors)")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)
