"""The FFT on Tensors (``mg.fft``, ``np.fft.<name>(t)``): three linear ops and their adjoints.

- ``fft_c2c``: ``fftn`` / ``ifftn`` over ``axes`` at sizes ``s`` (each input axis zero-padded or
  cropped to it first, as NumPy does), the result then fitted to ``fit`` sizes (padded or
  cropped; None: left at ``s``). Its adjoint is itself: the other direction, the dual ``norm``
  ("backward" and "forward" swap, "ortho" stays), fitted back to the input's sizes.
- ``fft_r2c``: ``rfftn`` (a real input; the last axis keeps its ``s//2 + 1`` non-negative
  frequencies). Its adjoint is the real part of the C2C adjoint of the half spectrum, which
  NumPy's ``s`` zero-pads to the full length.
- ``fft_c2r``: ``irfftn`` (a Hermitian half spectrum to a real signal). Its adjoint is the R2C
  transform with the dual norm, the bins that stand for two (a frequency and its conjugate)
  counted twice.

With PyTorch's convention for complex gradients (``z.grad = dL/dRe z + i dL/dIm z``) the gradient
of a linear map is its adjoint applied to the output's gradient, so each rule is one call of an op
here, and the forward-mode rules are the ops themselves on the tangents (``linear_jvp``).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..creation import as_tensor
from ..engine import run_op
from ..tensor import Tensor
from ._registry import Sample, composite, defop, linear_jvp, public
from .join import roll

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _fit(xp, y, axes, fit):
    """``y`` cropped or zero-padded (at the end) along ``axes`` to the sizes ``fit``."""
    if fit is None:
        return y
    crop = [slice(None)] * y.ndim
    pad = [(0, 0)] * y.ndim
    for a, n in zip(axes, fit, strict=True):
        if y.shape[a] > n:
            crop[a] = slice(0, n)
        elif y.shape[a] < n:
            pad[a] = (0, n - y.shape[a])
    y = y[tuple(crop)]
    return xp.pad(y, pad) if any(p != (0, 0) for p in pad) else y


def _c2c_fwd(xp, x, axes, s, norm, inverse, fit):
    f = xp.fft.ifftn if inverse else xp.fft.fftn
    return _fit(xp, f(x, s=s, axes=axes, norm=norm), axes, fit)


def _sizes(shape, axes):
    return tuple(shape[a] for a in axes)


def _c2c_rule(ctx, g, axes, s, norm, inverse, fit):
    m = _sizes(ctx.meta[0][0], axes)
    return (ctx.xp.run_op(C2C, g, axes=axes, s=s, norm=_DUAL[norm], inverse=not inverse, fit=m),)


def _r2c_fwd(xp, x, axes, s, norm, fit):
    return _fit(xp, xp.fft.rfftn(x, s=s, axes=axes, norm=norm), axes, fit)


def _r2c_rule(ctx, g, axes, s, norm, fit):
    m = _sizes(ctx.meta[0][0], axes)
    full = ctx.xp.run_op(C2C, g, axes=axes, s=s, norm=_DUAL[norm], inverse=True, fit=m)
    return (ctx.xp.real(full),)


def _c2r_fwd(xp, x, axes, s, norm):
    return xp.fft.irfftn(x, s=s, axes=axes, norm=norm)


def _c2r_rule(ctx, g, axes, s, norm):
    m = _sizes(ctx.meta[0][0], axes)
    half = ctx.xp.run_op(R2C, g, axes=axes, s=s, norm=_DUAL[norm], fit=m)
    return (ctx.xp.run_op(TWICE, half, axis=axes[-1], n=s[-1]),)


def _twice_fwd(xp, x, axis, n):
    """``x`` with the bins of a length-``n`` real signal's half spectrum along ``axis`` that stand for a
    frequency and its conjugate doubled (all but the zero frequency and, for even ``n``, Nyquist), and
    the bins past the half zeroed."""
    k = x.shape[axis]
    w = xp.zeros(k, dtype=x.real.dtype)
    w[:min(k, n // 2 + 1)] = 2.0
    w[0] = 1.0
    if n % 2 == 0 and n // 2 < k:
        w[n // 2] = 1.0
    return x * w.reshape((k,) + (1,) * (x.ndim - 1 - axis % x.ndim))


def _samples_c2c(rng):
    r = rng.standard_normal
    return [Sample(r((6,)), axes=(0,), s=(6,), norm="backward", inverse=False, fit=None),
            Sample(r((3, 5)), axes=(0, 1), s=(4, 7), norm="ortho", inverse=True, fit=None),
            Sample(r((2, 5)), axes=(1,), s=(3,), norm="forward", inverse=False, fit=(6,))]


def _samples_r2c(rng):
    r = rng.standard_normal
    return [Sample(r((7,)), axes=(0,), s=(7,), norm="backward", fit=None),
            Sample(r((3, 6)), axes=(0, 1), s=(3, 8), norm="ortho", fit=None),
            Sample(r((2, 5)), axes=(1,), s=(4,), norm="forward", fit=(2,))]


def _samples_c2r(rng):
    r = rng.standard_normal
    return [Sample(r((5,)), axes=(0,), s=(8,), norm="backward"),
            Sample(r((3, 4)), axes=(0, 1), s=(3, 7), norm="ortho"),
            Sample(r((2, 4)), axes=(1,), s=(6,), norm="forward")]


def _th_c2c(th, x, axes, s, norm, inverse, fit):
    y = (th.fft.ifftn if inverse else th.fft.fftn)(x, s=s, dim=axes, norm=norm).resolve_conj()
    return _th_fit(th, y, axes, fit)


def _th_fit(th, y, axes, fit):
    if fit is None:
        return y
    for a, n in zip(axes, fit, strict=True):
        if y.shape[a] > n:
            y = y.narrow(a, 0, n)
        elif y.shape[a] < n:
            shape = list(y.shape)
            shape[a] = n - y.shape[a]
            y = th.cat([y, th.zeros(shape, dtype=y.dtype)], dim=a)
    return y


C2C = defop("fft_c2c", _c2c_fwd, _c2c_rule, kind="other", jvp=linear_jvp(0), samples=_samples_c2c, torch=_th_c2c,
            complex=True,
            info=lambda axes, s, norm, inverse, fit: {"axes": axes, "s": s, "norm": norm, "inverse": inverse})
R2C = defop("fft_r2c", _r2c_fwd, _r2c_rule, kind="other", jvp=linear_jvp(0), samples=_samples_r2c,
            complex=True, complex_samples=lambda rng: [],  # a real input (its output is complex)
            torch=lambda th, x, axes, s, norm, fit: _th_fit(th, th.fft.rfftn(x, s=s, dim=axes, norm=norm), axes, fit),
            info=lambda axes, s, norm, fit: {"axes": axes, "s": s, "norm": norm})
TWICE = defop("fft_half_weights", _twice_fwd, lambda ctx, g, axis, n: (ctx.xp.run_op(TWICE, g, axis=axis, n=n),),
              kind="other", jvp=linear_jvp(0), info=lambda axis, n: {"axis": axis, "n": n}, complex=True,
              samples=lambda rng: [Sample(rng.standard_normal((3, 5)), axis=1, n=8),
                                   Sample(rng.standard_normal((4, 2)), axis=0, n=5)],
              torch=lambda th, x, axis, n: x * th.tensor(_np_twice(n, x.shape[axis]), dtype=x.dtype).reshape(
                  (-1,) + (1,) * (x.ndim - 1 - axis % x.ndim)))


def _np_twice(n, k):
    return _twice_fwd(np, np.ones(k), 0, n)


C2R = defop("fft_c2r", _c2r_fwd, _c2r_rule, kind="other", jvp=linear_jvp(0), samples=_samples_c2r, complex=True,
            torch=lambda th, x, axes, s, norm: th.fft.irfftn(x, s=s, dim=axes, norm=norm),
            info=lambda axes, s, norm: {"axes": axes, "s": s, "norm": norm})


# ---------------------------------------------------------------------------
# the public functions: torch.fft's signatures (n, dim, norm), NumPy's names taken too (axis, axes)
# ---------------------------------------------------------------------------

def _norm(norm, name):
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise ValueError(f"fft.{name}: norm must be None, 'backward', 'ortho' or 'forward', got {norm!r}")
    return norm


def _dims(x, dim, s, name, default_all=True):
    """The transformed axes (non-negative, distinct) and their sizes ``s`` (None: the input's)."""
    nd = x.ndim
    if dim is None:
        if s is not None:
            dim = tuple(range(nd - len(s), nd))
        else:
            dim = tuple(range(nd)) if default_all else (-1,)
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, numbers.Integral) or not -nd <= d < nd:
            raise ValueError(f"fft.{name}: dim {d!r} is out of range for an input of shape {x.shape}")
        out.append(int(d) % nd)
    if len(set(out)) != len(out):
        raise ValueError(f"fft.{name}: dims {dims} name an axis twice")
    if s is None:
        return tuple(out), None
    s = (s,) if isinstance(s, numbers.Integral) else tuple(s)
    if len(s) != len(out):
        raise ValueError(f"fft.{name}: s has {len(s)} sizes for {len(out)} dims")
    if any(isinstance(n, bool) or not isinstance(n, numbers.Integral) or (n < 1 and n != -1) for n in s):
        raise ValueError(f"fft.{name}: sizes must be positive ints (or -1: the input's), got {s}")
    return tuple(out), tuple(x.shape[d] if n == -1 else int(n) for d, n in zip(out, s, strict=True))


def _input(x, name, real=False):
    x = as_tensor(x, f"fft.{name}")
    if x.ndim == 0:
        raise ValueError(f"fft.{name}: expected a tensor with at least 1 dim, got a 0-d one")
    if real and x.dtype.kind == "c":
        raise TypeError(f"fft.{name}: expected a real input, got dtype {x.dtype} (use fft.{name[1:]} for complex)")
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64 if x.dtype.kind in "iub" and x.dtype.itemsize > 4 else np.float32) \
            if x.dtype.kind in "iub" else x
    return x


def _c2c(x, s, dims, norm, inverse, name):
    x = _input(x, name)
    axes, s = _dims(x, dims, s, name)
    if s is None:
        s = _sizes(x.shape, axes)
    return run_op(C2C, x, axes=axes, s=s, norm=_norm(norm, name), inverse=inverse, fit=None)


def _r2c(x, s, dims, norm, name):
    x = _input(x, name, real=True)
    axes, s = _dims(x, dims, s, name)
    if s is None:
        s = _sizes(x.shape, axes)
    return run_op(R2C, x, axes=axes, s=s, norm=_norm(norm, name), fit=None)


def _c2r(x, s, dims, norm, name):
    x = as_tensor(x, f"fft.{name}")
    if x.ndim == 0:
        raise ValueError(f"fft.{name}: expected a tensor with at least 1 dim, got a 0-d one")
    axes, s = _dims(x, dims, s, name)
    if s is None:
        s = _sizes(x.shape, axes[:-1]) + (2 * (x.shape[axes[-1]] - 1),)
    if s[-1] < 1:
        raise ValueError(f"fft.{name}: the output length along dim {axes[-1]} is {s[-1]}; give n (or s)")
    return run_op(C2R, x, axes=axes, s=s, norm=_norm(norm, name))


_NO = object()


def _pick(name, dim, axis, default):
    if axis is not _NO and dim is not _NO:
        raise TypeError(f"fft.{name}: got both dim= and axis= (the same argument in PyTorch's and NumPy's spelling)")
    if dim is not _NO:
        return dim
    return default if axis is _NO else axis


_KIND = {"c2c": _c2c, "r2c": _r2c, "c2r": _c2r}
_DOC = {
    1: "along one dim: ``torch.fft.{name}(input, n=None, dim=-1, norm=None)`` (NumPy's ``axis=`` too). ``n`` "
       "zero-pads or crops the input along ``dim``",
    2: "over two dims: ``torch.fft.{name}(input, s=None, dim=(-2, -1), norm=None)`` (NumPy's ``axes=`` too). ``s`` "
       "zero-pads or crops the input along each dim",
    0: "over several dims: ``torch.fft.{name}(input, s=None, dim=None, norm=None)`` (NumPy's ``axes=`` too): all "
       "dims, or the last ``len(s)``. ``s`` zero-pads or crops the input along each dim",
}
_WHAT = {"fft": "The discrete Fourier transform", "ifft": "The inverse discrete Fourier transform",
         "rfft": "The discrete Fourier transform of a real signal (the non-negative frequencies)",
         "irfft": "The real signal of a Hermitian half spectrum (the inverse of rfft; its length n defaults to "
                  "2 * (input length - 1))"}


def _frontend(name, base, kind, inverse, ndims):
    run = _KIND[kind]
    extra = (inverse,) if kind == "c2c" else ()

    if ndims == 1:
        def fn(input, n=None, dim=_NO, norm=None, *, axis=_NO):  # noqa: A002 - PyTorch's name
            return run(input, None if n is None else (n,), _pick(name, dim, axis, -1), norm, *extra, name)
    else:
        default = (-2, -1) if ndims == 2 else None

        def fn(input, s=None, dim=_NO, norm=None, *, axes=_NO):  # noqa: A002
            return run(input, s, _pick(name, dim, axes, default), norm, *extra, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{_WHAT[base]} {_DOC[ndims].format(name=name)}; ``norm`` is 'backward' (the default: no "
                  "scaling forward, 1/n inverse), 'ortho' or 'forward'. Differentiable in both modes, with "
                  "PyTorch's complex convention (docs/complex.md).")
    return fn


def _samples(kind, ndims, inverse):
    def make(rng):
        r = rng.standard_normal
        if kind == "c2r":
            if ndims == 1:
                return [Sample(r((5,))), Sample(r((2, 4)), 6, 0, "ortho"), Sample(r((4,)), 5, norm="forward")]
            return [Sample(r((3, 4))), Sample(r((2, 3, 4)), (3, 6), norm="ortho")]
        if ndims == 1:
            return [Sample(r((6,))), Sample(r((2, 5)), 7, 0, "ortho"), Sample(r((5,)), 3, norm="forward")]
        return [Sample(r((3, 4))), Sample(r((2, 3, 4)), (4, 5), norm="ortho")]
    return make


def _torch(name, ndims):
    def t(th, x, *args, **kwargs):
        return getattr(th.fft, name)(x, *args, **kwargs).resolve_conj()  # ifft's may carry torch's lazy conj
    return t


_TABLE = [  # name, base, kind, inverse, dims (1, 2, or 0 for n)
    ("fft", "fft", "c2c", False, 1), ("ifft", "ifft", "c2c", True, 1), ("rfft", "rfft", "r2c", False, 1),
    ("irfft", "irfft", "c2r", False, 1), ("fft2", "fft", "c2c", False, 2), ("ifft2", "ifft", "c2c", True, 2),
    ("rfft2", "rfft", "r2c", False, 2), ("irfft2", "irfft", "c2r", False, 2), ("fftn", "fft", "c2c", False, 0),
    ("ifftn", "ifft", "c2c", True, 0), ("rfftn", "rfft", "r2c", False, 0), ("irfftn", "irfft", "c2r", False, 0),
]
FUNCTIONS = {}
for _name, _base, _kind, _inv, _nd in _TABLE:
    FUNCTIONS[_name] = composite(_name, samples=_samples(_kind, _nd, _inv), torch=_torch(_name, _nd), export=False,
                                 complex=True, complex_samples=(lambda rng: []) if _kind == "r2c" else None,
                                 numpy=(getattr(np.fft, _name),))(_frontend(_name, _base, _kind, _inv, _nd))


def _shift(name, sign):
    def fn(input, dim=_NO, *, axes=_NO):  # noqa: A002
        x = as_tensor(input, f"fft.{name}")
        d = _pick(name, dim, axes, None)
        dims = tuple(range(x.ndim)) if d is None else ((d,) if isinstance(d, numbers.Integral) else tuple(d))
        shifts = tuple(sign * (x.shape[k] // 2) for k in dims)
        return roll(x, shifts=shifts, dims=dims) if dims else x

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (("The zero frequency moved to the centre" if sign > 0 else "fftshift undone") +
                  f": ``torch.fft.{name}(input, dim=None)`` (NumPy's ``axes=`` too), a roll by half of each dim.")
    return fn


for _name, _sign in (("fftshift", 1), ("ifftshift", -1)):
    FUNCTIONS[_name] = composite(_name, samples=lambda rng: [Sample(rng.standard_normal((4, 5))),
                                                             Sample(rng.standard_normal((3, 6)), 1)],
                                 torch=_torch(_name, 0), export=False, complex=True,
                                 numpy=(getattr(np.fft, _name),))(_shift(_name, _sign))


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The sample frequencies of an ``n``-point FFT with spacing ``d``: ``torch.fft.fftfreq``."""
    from ..creation import tensor
    return tensor(np.fft.fftfreq(n, d), dtype=dtype or _default_float(), device=device, requires_grad=requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point rfft with spacing ``d``: ``torch.fft.rfftfreq``."""
    from ..creation import tensor
    return tensor(np.fft.rfftfreq(n, d), dtype=dtype or _default_float(), device=device, requires_grad=requires_grad)


def _default_float():
    from ..tensor import get_default_dtype
    return get_default_dtype()
