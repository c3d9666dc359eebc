"""Complex numbers' own ops: ``conj``, ``real``, ``imag``, ``angle``, ``view_as_real``,
``view_as_complex``, ``complex(real, imag)`` and ``polar(abs, angle)``, with PyTorch's names and
NumPy's dispatch (``np.conj(t)``, ``np.real(t)``, ``np.angle(t)``).

None of them is holomorphic, so each writes its gradient rule with its conjugates in place
(``complex=True``) and its forward-mode rule: all but ``angle`` are linear over the reals, so their
tangent is the op itself on the tangent (``linear_jvp``). PyTorch's convention throughout
(docs/complex.md): the gradient of a real loss ``L`` with respect to ``z`` is
``dL/dRe z + i dL/dIm z``; a real input's gradient is the real part of what its rule returns (the
engine takes it, backward.py's ``_send``).
"""
from __future__ import annotations

import numpy as np

from .. import _batched
from ..creation import as_tensor
from ..engine import run_op
from ._registry import Sample, composite, conj as _conj, defop, linear_jvp, named, public
from .elementwise import _r


def _complex_samples(rng, *shape):
    return np.asarray(_r(rng, *shape) + 1j * _r(rng, *shape))


def _both(rng):
    """Complex and real inputs: an op of complex numbers is also defined on real ones (NumPy's)."""
    return [Sample(_complex_samples(rng, 3, 4)), Sample(_complex_samples(rng, 5)), Sample(_r(rng, 3, 4))]


def _pair_samples(rng):
    return [Sample(_r(rng, 3, 4, 2)), Sample(_r(rng, 2))]


def _copy(a):
    return a.copy()  # NumPy's real and imag of a complex array are views into it: the result owns its memory


# -- conj, real, imag ------------------------------------------------------------------------

CONJ = defop("conj", lambda xp, x: xp.conj(x), lambda ctx, g: (_conj(g),), kind="elementwise", complex=True,
             jvp=linear_jvp(0), samples=_both, torch=lambda th, x: th.conj_physical(x))


@public(CONJ, method=("conj", "conjugate"), export=("conj"), numpy=(np.conjugate,))
@named("conj")
def conj(x):
    """The complex conjugate (a real tensor: itself, as PyTorch's); the gradient is ``conj(g)``.

    >>> mg.conj(mg.tensor([1 + 2j]))         # [1.-2.j]
    """
    x = as_tensor(x, "conj")
    return x if x.dtype.kind != "c" else run_op(CONJ, x)


REAL = defop("real", lambda xp, x: _copy(xp.real(x)), lambda ctx, g: (g,), kind="elementwise", complex=True,
             jvp=linear_jvp(0), samples=_both, torch=lambda th, x: th.real(x) if x.is_complex() else x.clone())
# d Im(z) = Im(dz): the gradient i g (a real input's, its real part, is 0)
IMAG = defop("imag", lambda xp, x: _copy(xp.imag(x)), lambda ctx, g: (g * 1j,), kind="elementwise", complex=True,
             jvp=linear_jvp(0), samples=lambda rng: _both(rng)[:2], torch=lambda th, x: th.imag(x))


@public(REAL, numpy=(np.real,))
@named("real")
def real(x):
    """The real part (a new tensor; a real tensor: itself, as PyTorch's and NumPy's). Also ``t.real``.

    >>> mg.real(mg.tensor([1 + 2j]))         # [1.]
    """
    x = as_tensor(x, "real")
    return x if x.dtype.kind != "c" else run_op(REAL, x)


@public(IMAG, numpy=(np.imag,))
@named("imag")
def imag(x):
    """The imaginary part (a new tensor; of a real tensor, zeros, as NumPy's). Also ``t.imag``.

    >>> mg.imag(mg.tensor([1 + 2j]))         # [2.]
    """
    return run_op(IMAG, as_tensor(x, "imag"))


# -- angle -----------------------------------------------------------------------------------


def _abs2(x):
    return x.real * x.real + x.imag * x.imag if x.dtype.kind == "c" else x * x


def _angle_rule(ctx, g):
    # angle(x + iy) = atan2(y, x): d/dx + i d/dy = (-y + ix) / |z|² = i z / |z|²; 0 at 0 (PyTorch's);
    # a real input's gradient, the real part, is 0
    (x,) = ctx.saved
    xp = ctx.xp
    r2 = _abs2(x)
    zero = r2 == 0
    return (xp.where(zero, 0.0, g / xp.where(zero, 1.0, r2) * (x * 1j)),)


def _angle_jvp(ctx, t):
    x, xp = ctx.args[0], ctx.xp
    r2 = _abs2(x)
    zero = r2 == 0
    return xp.where(zero, 0.0, xp.imag(_conj(x) * t) / xp.where(zero, 1.0, r2))  # Im(conj(z) dz) / |z|²


ANGLE = defop("angle", lambda xp, x: xp.angle(x), _angle_rule, save=(0,), kind="elementwise", complex=True,
              jvp=_angle_jvp, torch=lambda th, x: th.angle(x),
              samples=lambda rng: [Sample(_complex_samples(rng, 3, 4)), Sample(_complex_samples(rng, 5)),
                                   Sample(_r(rng, 3, 4, away=0.0))])


@public(ANGLE, method="angle", numpy=(np.angle,))
@named("angle")
def angle(x, deg=False):
    """The argument of each element, in (-pi, pi] (0 or pi for real ones); the gradient is 0 at 0
    (PyTorch's). ``deg=True`` (NumPy's): in degrees."""
    out = run_op(ANGLE, as_tensor(x, "angle"))
    return out * (180 / np.pi) if deg else out


# -- the real pairs: view_as_real, view_as_complex, complex, polar -------------------------------


def _pairs(xp, x):
    out = xp.empty(x.shape + (2,), dtype=x.real.dtype)
    out[..., 0] = x.real
    out[..., 1] = x.imag
    return out


def _from_pairs(xp, re, im):
    shape = np.broadcast_shapes(re.shape, im.shape)
    out = xp.empty(shape, dtype=np.result_type(re.dtype, im.dtype, np.complex64))
    out.real = re  # exact: no arithmetic on the parts (1j * inf would be nan)
    out.imag = im
    return out


# vmap: each works on the last axis, so the forward on the physical array (the batch axis first) batches
VIEW_AS_REAL = defop("view_as_real", _pairs, lambda ctx, g: (ctx.xp.view_as_complex(g),), kind="view", complex=True,
                     jvp=linear_jvp(0), torch=lambda th, x: th.view_as_real(x), batch=_batched.elementwise_op,
                     samples=lambda rng: [Sample(_complex_samples(rng, 3, 4)), Sample(_complex_samples(rng))])
VIEW_AS_COMPLEX = defop("view_as_complex", lambda xp, x: _from_pairs(xp, x[..., 0], x[..., 1]),
                        lambda ctx, g: (ctx.xp.view_as_real(g),), kind="view", complex=True, jvp=linear_jvp(0),
                        batch=_batched.elementwise_op,
                        torch=lambda th, x: th.view_as_complex(x), samples=_pair_samples, complex_samples=_pair_samples)


@public(VIEW_AS_REAL, export=True)
@named("view_as_real")
def view_as_real(x):
    """A complex tensor as real pairs: shape ``x.shape + (2,)``, ``[..., 0]`` the real parts and
    ``[..., 1]`` the imaginary ones (PyTorch's; here a copy, not a view).

    >>> mg.view_as_real(mg.tensor([1 + 2j]))   # [[1., 2.]]
    """
    x = as_tensor(x, "view_as_real")
    if x.dtype.kind != "c":
        raise TypeError(f"view_as_real: expected a complex tensor, got dtype {x.dtype} (shape {x.shape})")
    return run_op(VIEW_AS_REAL, x)


@public(VIEW_AS_COMPLEX, export=True)
@named("view_as_complex")
def view_as_complex(x):
    """Real pairs as a complex tensor: the last dim (of size 2) holds the real and imaginary parts
    (PyTorch's; here a copy). float32 pairs give complex64, float64 ones complex128."""
    x = as_tensor(x, "view_as_complex")
    if x.dtype.kind != "f" or x.ndim == 0 or x.shape[-1] != 2:
        raise ValueError(f"view_as_complex: expected a floating tensor whose last dim has size 2, got dtype "
                         f"{x.dtype} and shape {x.shape}")
    return run_op(VIEW_AS_COMPLEX, x)


def _parts_samples(rng):
    return [Sample(_r(rng, 3, 4), _r(rng, 3, 4)), Sample(_r(rng, 3, 1), _r(rng, 4))]


def _polar_samples(rng):
    return [Sample(_r(rng, 3, 4, low=0.1), _r(rng, 3, 4)), Sample(_r(rng, 4, low=0.1), _r(rng, 4))]


# (complex, view_as_complex and polar take real numbers: their complex samples are their real ones,
# whose results are complex)
COMPLEX = defop("complex", _from_pairs, lambda ctx, g: (ctx.xp.real(g), ctx.xp.imag(g)), broadcast=True,
                kind="elementwise", complex=True, jvp=linear_jvp(), torch=lambda th, x, y: th.complex(x, y),
                samples=_parts_samples, complex_samples=_parts_samples)


def _real_part(t, name, what):
    t = as_tensor(t, name)
    if t.dtype.kind != "f":
        raise TypeError(f"{name}: {what} must be a floating tensor, got dtype {t.dtype} (shape {t.shape})")
    return t


@public(COMPLEX, export=True)
@named("complex")
def complex(real, imag):  # noqa: A001 - PyTorch's name
    """``real + i imag`` from two floating tensors of one dtype (PyTorch's ``torch.complex``),
    broadcast; float32 gives complex64, float64 complex128.

    >>> mg.complex(mg.tensor([1.0]), mg.tensor([2.0]))   # [1.+2.j]
    """
    re, im = _real_part(real, "complex", "real"), _real_part(imag, "complex", "imag")
    if re.dtype != im.dtype:
        raise TypeError(f"complex: real and imag must have one dtype, got {re.dtype} and {im.dtype}")
    return run_op(COMPLEX, re, im)


@composite("polar", complex=True, torch=lambda th, a, t: th.polar(a, t), samples=_polar_samples,
           complex_samples=_polar_samples)
@named("polar")
def polar(abs, angle):  # noqa: A002 - PyTorch's names
    """``abs (cos angle + i sin angle)`` (PyTorch's ``torch.polar``), from two floating tensors.

    >>> mg.polar(mg.tensor([2.0]), mg.tensor([0.0]))   # [2.+0.j]
    """
    from .elementwise import cos, mul, sin

    r, theta = _real_part(abs, "polar", "abs"), _real_part(angle, "polar", "angle")
    return complex(mul(r, cos(theta)), mul(r, sin(theta)))
