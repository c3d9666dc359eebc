"""NumPy's products beyond matmul: dot (NumPy's N-D rule), vdot, inner, tensordot, kron, cross.
Each is built from einsum, matmul and elementwise ops, so their gradients (and higher ones) come
from those ops' rules."""
from __future__ import annotations

import numbers

import numpy as np

from ..creation import as_tensor
from ._registry import randn as _r, Sample, composite, named
from .einsum import _LETTERS, einsum
from .elementwise import where
from .indexing import index_add
from .join import moveaxis
from .shape import broadcast_to, reshape, stack


def _labels(n, start=0):
    return _LETTERS[start:start + n]


@composite("tensordot", numpy=(np.tensordot,), samples=lambda rng: [
    Sample(_r(rng, 2, 3, 4), _r(rng, 3, 4, 5)), Sample(_r(rng, 2, 3), _r(rng, 3, 2), 1),
    Sample(_r(rng, 2, 3, 4), _r(rng, 4, 2, 3), ([1, 2], [2, 0])), Sample(_r(rng, 2), _r(rng, 3), 0)],
    torch=lambda th, a, b, axes=2: th.tensordot(a, b, axes), complex=True)
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
    Sample(_r(rng, 2, 3), _r(rng, 3)), Sample(_r(rng, 2, 3), 1.5)], complex=True)
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


@composite("vdot", numpy=(np.vdot,), samples=lambda rng: [Sample(_r(rng, 3), _r(rng, 3)), Sample(_r(rng, 2, 3), _r(rng, 3, 2))], complex=True)
@named("vdot")
def vdot(a, b):
    """The dot product of the flattened inputs (a 0-d result), the first conjugated (NumPy's)."""
    from .complex_ops import conj

    a, b = as_tensor(a, "vdot"), as_tensor(b, "vdot")
    if a.size != b.size:
        raise ValueError(f"vdot: inputs of {a.size} and {b.size} elements")
    return (conj(reshape(a, (-1,))) * reshape(b, (-1,))).sum()


@composite("inner", numpy=(np.inner,), samples=lambda rng: [Sample(_r(rng, 3), _r(rng, 3)), Sample(_r(rng, 2, 3), _r(rng, 4, 3)),
                                                           Sample(_r(rng, 2, 3), 2.0)],
           torch=lambda th, a, b: th.inner(a, b if isinstance(b, th.Tensor) else th.tensor(b, dtype=a.dtype)), complex=True)
@named("inner")
def inner(a, b):
    """Sum products over the last axes (a product with a 0-d operand)."""
    a, b = as_tensor(a, "inner"), as_tensor(b, "inner")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]))


@composite("kron", numpy=(np.kron,), method="kron", samples=lambda rng: [Sample(_r(rng, 2, 3), _r(rng, 3, 2)), Sample(_r(rng, 3), _r(rng, 2, 2))],
           torch=lambda th, a, b: th.kron(a, b), complex=True)
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


# -- PyTorch's norm and cdist: vector p-norms whose gradient at 0 is 0, as PyTorch's is ---------------


def _pnorm(x, p, axes, keepdim, op):
    """The p-norm of ``x`` over ``axes`` (a tuple) as PyTorch's ``vector_norm`` computes it; at a zero
    vector the 2-norm and the general p-norm give the gradient 0 (PyTorch's subgradient), not NaN."""
    if isinstance(p, str):
        raise ValueError(f"{op}: p={p!r} is not a vector norm order here (a number, inf or -inf)")
    p = float(p)
    if p == np.inf:
        return abs(x).max(axis=axes, keepdims=keepdim)
    if p == -np.inf:
        return abs(x).min(axis=axes, keepdims=keepdim)
    if p == 0:
        return (x != 0).astype(x.dtype).sum(axis=axes, keepdims=keepdim)
    if p == 1:
        return abs(x).sum(axis=axes, keepdims=keepdim)
    s = (x * x).sum(axis=axes, keepdims=keepdim) if p == 2 else (abs(x) ** p).sum(axis=axes, keepdims=keepdim)
    zero = s == 0
    safe = where(zero, 1.0, s)  # no inf slope at 0: the selected 0 carries no gradient
    return where(zero, 0.0, safe ** 0.5 if p == 2 else safe ** (1.0 / p))


def _norm_samples(rng):
    x = _r(rng, 3, 4)
    return [Sample(x), Sample(x, 2, 1), Sample(x, 3, (0, 1), True), Sample(x, 1, 0), Sample(x, float("inf"), 1),
            Sample(x, "fro", (0, 1)), Sample(_r(rng, 2, 3, 4), 2.5, -1, keepdim=True)]


@composite("norm_torch", export="norm", method="norm", samples=_norm_samples,
           torch=lambda th, x, p="fro", dim=None, keepdim=False: th.norm(x, p, dim, keepdim))
@named("norm")
def norm_torch(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002 - PyTorch's names
    """PyTorch's ``torch.norm`` / ``t.norm``: ``p`` 'fro' (the 2-norm of the entries), 'nuc', or a
    number, inf or -inf (the vector p-norm of the entries over ``dim``: every entry when None, an int
    or a tuple of dims). The gradient at a zero vector is 0, as PyTorch's. NumPy's norm (ord=, axis=)
    is ``mg.linalg.norm``."""
    x = as_tensor(input, "norm")
    if dtype is not None:
        x = x.astype(dtype)
    if x.dtype.kind != "f" and x.dtype.kind != "c":
        raise TypeError(f"norm: expected a floating input, got {x.dtype}")
    axes = tuple(range(x.ndim)) if dim is None else ((dim,) if isinstance(dim, numbers.Integral) else tuple(dim))
    if p == "nuc":
        from .linalg import norm as _np_norm
        if len(axes) != 2:
            raise ValueError(f"norm: p='nuc' needs two dims, got dim={dim!r}")
        return _np_norm(x, "nuc", axes, keepdim)
    if p == "fro":
        p = 2
    if isinstance(p, str):
        raise ValueError(f"norm: unknown p={p!r} (give 'fro', 'nuc' or a number)")
    return _pnorm(x, p, axes, keepdim, "norm")


@composite("cdist", samples=lambda rng: [Sample(_r(rng, 3, 4), _r(rng, 5, 4)), Sample(_r(rng, 2, 3, 2), _r(rng, 2, 4, 2), 1.0),
                                        Sample(_r(rng, 3, 2), _r(rng, 2, 2), 3.0), Sample(_r(rng, 3, 2), _r(rng, 2, 2), float("inf"))],
           torch=lambda th, a, b, p=2.0: th.linalg.vector_norm(a[..., :, None, :] - b[..., None, :, :], p, -1))
# (the oracle spells out cdist: torch.cdist has no forward-mode rule; tests/test_torch_products.py compares with it)
@named("cdist")
def cdist(x1, x2, p=2.0, compute_mode=None):
    """PyTorch's ``cdist``: the p-norm distance between each row of ``x1`` (..., P, M) and each row
    of ``x2`` (..., R, M), shape (..., P, R), batch dims broadcast. At zero distance the gradient is
    0, as PyTorch's."""
    a, b = as_tensor(x1, "cdist"), as_tensor(x2, "cdist")
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"cdist: expected x1 (..., P, M) and x2 (..., R, M) with the same M, got shapes "
                         f"{a.shape} and {b.shape}")
    if isinstance(p, str) or p < 0:
        raise ValueError(f"cdist: p must be a number >= 0, got {p!r}")
    d = reshape(a, a.shape[:-1] + (1, a.shape[-1])) - reshape(b, b.shape[:-2] + (1,) + b.shape[-2:])
    return _pnorm(d, p, (-1,), False, "cdist")


# -- PyTorch's ways of making tensors from tensors ----------------------------------------------------------


def _tensors(tensors, op):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return [as_tensor(t, op) for t in tensors]


@composite("broadcast_tensors", samples=lambda rng: [Sample(_r(rng, 3, 1), _r(rng, 4)), Sample(_r(rng, 2, 1, 3), _r(rng, 4, 1), _r(rng, 3))],
           torch=lambda th, *ts: th.broadcast_tensors(*ts))
@named("broadcast_tensors")
def broadcast_tensors(*tensors):
    """PyTorch's ``broadcast_tensors``: each input broadcast to their common shape (a tuple)."""
    ts = _tensors(tensors, "broadcast_tensors")
    try:
        shape = np.broadcast_shapes(*(t.shape for t in ts))
    except ValueError:
        raise ValueError(f"broadcast_tensors: shapes {[t.shape for t in ts]} do not broadcast") from None
    return tuple(broadcast_to(t, shape) for t in ts)


@composite("meshgrid", samples=lambda rng: [Sample(_r(rng, 3), _r(rng, 4)), Sample(_r(rng, 2), _r(rng, 3), _r(rng, 4), indexing="xy"),
                                           Sample(_r(rng, 3), _r(rng, 2), indexing="ij")],
           torch=lambda th, *ts, indexing="ij": th.meshgrid(*ts, indexing=indexing))
@named("meshgrid")
def meshgrid(*tensors, indexing="ij"):
    """PyTorch's ``meshgrid``: coordinate grids of 0-D or 1-D inputs, ``indexing`` 'ij' (PyTorch's
    default: the i-th result varies along dim i) or 'xy' (the first two dims swapped). ``np.meshgrid``
    stays NumPy's ('xy' by default)."""
    ts = _tensors(tensors, "meshgrid")
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if any(t.ndim > 1 for t in ts):
        raise ValueError(f"meshgrid: expects 0-D or 1-D tensors, got shapes {[t.shape for t in ts]}")
    ts = [reshape(t, (-1,)) for t in ts]
    shape = tuple(t.shape[0] for t in ts)
    out = [broadcast_to(reshape(t, tuple(-1 if j == i else 1 for j in range(len(ts)))), shape) for i, t in enumerate(ts)]
    if indexing == "xy" and len(ts) >= 2:  # 'ij''s grids with their first two dims swapped
        out = [moveaxis(o, 0, 1) for o in out]
    return tuple(out)


@composite("cartesian_prod", samples=lambda rng: [Sample(_r(rng, 3), _r(rng, 2)), Sample(_r(rng, 2), _r(rng, 2), _r(rng, 3)), Sample(_r(rng, 3))],
           torch=lambda th, *ts: th.cartesian_prod(*ts))
@named("cartesian_prod")
def cartesian_prod(*tensors):
    """PyTorch's ``cartesian_prod``: every combination of the elements of 1-D inputs, in order, as
    rows of a (N, k) tensor (one input: that tensor)."""
    ts = _tensors(tensors, "cartesian_prod")
    if not ts or any(t.ndim != 1 for t in ts):
        raise ValueError(f"cartesian_prod: expects one or more 1-D tensors, got shapes {[t.shape for t in ts]}")
    if len(ts) == 1:
        return ts[0] * 1 if ts[0].requires_grad else ts[0]
    return stack([reshape(g, (-1,)) for g in meshgrid(*ts, indexing="ij")], axis=1)


@composite("block_diag", samples=lambda rng: [Sample(_r(rng, 2, 3), _r(rng, 1, 2)), Sample(_r(rng, 2), _r(rng, 2, 2), 1.5),
                                             Sample(_r(rng, 2, 2))],
           torch=lambda th, *ts: th.block_diag(*(t if isinstance(t, th.Tensor) else th.tensor(t, dtype=th.float64) for t in ts)))
@named("block_diag")
def block_diag(*tensors):
    """PyTorch's ``block_diag``: the inputs (0-D as 1x1, 1-D as a row, 2-D as they are) on the
    diagonal of one matrix, zeros elsewhere; the dtype is the inputs' promoted dtype."""
    ts = [as_tensor(t, "block_diag") for t in tensors]
    if not ts:
        raise ValueError("block_diag: needs at least one tensor")
    if any(t.ndim > 2 for t in ts):
        raise ValueError(f"block_diag: inputs must have at most 2 dims, got shapes {[t.shape for t in ts]}")
    dt = np.result_type(*(t.dtype for t in ts))
    ts = [reshape(t, (1, -1) if t.ndim == 1 else (1, 1) if t.ndim == 0 else t.shape) for t in ts]
    ts = [t if t.dtype == dt else t.astype(dt) for t in ts]
    rows, cols = sum(t.shape[0] for t in ts), sum(t.shape[1] for t in ts)
    out, r0, c0 = None, 0, 0
    for t in ts:
        r, c = t.shape
        part = index_add((rows, cols), (np.arange(r)[:, None] + r0, np.arange(c)[None, :] + c0), t)
        out = part if out is None else out + part
        r0, c0 = r0 + r, c0 + c
    return out if out.dtype == dt else out.astype(dt)
