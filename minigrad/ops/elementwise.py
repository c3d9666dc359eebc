"""Elementwise ops: arithmetic with NumPy broadcasting, unary math, where, clip, comparisons.

Each op's forward (over backend arrays) sits beside its gradient rule (the array API: arrays
in first order, Tensors in higher order; docs/architecture.md), most of them one ``row`` of a
family below (``UNARY``, ``BINARY``, ``COMPARE``). Binary ops are registered with
``broadcast=True``: their rules return output-shaped gradients and the engine sums each back
to its input's shape (``sum_to``, the one inverse of broadcasting). Masking rules (relu, clip,
maximum, where) select with ``where``; they never multiply by a mask, so a NaN or inf
elsewhere cannot leak into a gradient.
"""
from __future__ import annotations

import cmath

import numpy as np

from ..engine import run_op
from ..errors import ComplexNotSupported
from ..tensor import Tensor
from ._registry import randn as _r, Family, Sample, composite, conj, defop, named, public, row


def _binary_samples(rng, low=None):
    return [Sample(_r(rng, 3, 4, low=low), _r(rng, 3, 4, low=low)),
            Sample(_r(rng, 2, 3, 4, low=low), _r(rng, 4, low=low)),
            Sample(_r(rng, 3, 1, low=low), _r(rng, 1, 4, low=low)),
            Sample(_r(rng, 3, low=low), 1.5)]


def _unary_samples(low=None, away=None):
    return lambda rng: [Sample(_r(rng, 3, 4, low=low, away=away)), Sample(_r(rng, 5, low=low, away=away)),
                        Sample(_r(rng, low=low, away=away))]


# -- the families: the public function each row gets ------------------------------------------


def _unary_fn(op, name):
    def fn(x):
        return run_op(op, x)
    return fn


def _binary_fn(op, name):
    def fn(x, y):
        return run_op(op, x, y)
    return fn


def _compare_fn(op, name):
    def fn(x, y):  # an operator: NotImplemented for what it cannot compare (``t == None`` is False)
        if y is None:
            return NotImplemented
        try:
            return run_op(op, x, y)
        except ComplexNotSupported:  # an ordering of complex numbers: the op's own error, not Python's
            raise
        except TypeError:
            return NotImplemented
    return fn


UNARY = Family("elementwise", _unary_fn, doc="{name}(x), elementwise.", ufunc=True, torch=True)
BINARY = Family("elementwise", _binary_fn, ufunc=True, broadcast=True, save=(0, 1))
COMPARE = Family("elementwise", _compare_fn, doc="Elementwise {name} (a bool tensor; not differentiable).",
                 broadcast=True)


# -- arithmetic ---------------------------------------------------------------------------


def _add_rule(ctx, g):
    return g, g


add = row("add", lambda xp, x, y: x + y, _add_rule, family=BINARY, save=(), samples=_binary_samples,
          torch=lambda th, x, y: x + y, dunders=("__add__", "__radd__"), numpy=(np.add,),
          doc="x + y with NumPy broadcasting.", complex=True)


def _sub_rule(ctx, g):
    return g, (-g if ctx.parents[1] is not None else None)


sub = row("sub", lambda xp, x, y: x - y, _sub_rule, family=BINARY, save=(), ufunc="subtract",
          samples=_binary_samples, torch=lambda th, x, y: x - y, dunders=("__sub__", "__rsub__"),
          numpy=(np.subtract,), doc="x - y with NumPy broadcasting.", complex=True)


def _mul_rule(ctx, g):
    x, y = ctx.saved  # each saved only when the other input needs a gradient
    if x is y and x is not None and ctx.parents[0] is ctx.parents[1]:
        return ctx.xp.scaled_mul(g, x, c=2.0), None  # x * x: one gradient, 2 g x, not g x twice and their sum
    return (None if y is None else g * y), (None if x is None else g * x)


def _mul_complex_rule(ctx, g):
    """``_mul_rule`` for a complex output, its conjugates placed (_registry.complex_twin): g conj(y), g conj(x)."""
    x, y = ctx.saved
    if x is y and x is not None and ctx.parents[0] is ctx.parents[1]:
        return ctx.xp.scaled_mul(g, conj(x), c=2.0), None
    return (None if y is None else g * _cj(y)), (None if x is None else g * _cj(x))


def _cj(v):
    """The conjugate of a saved operand: an array or Tensor (_registry.conj), or a Python number."""
    return conj(v) if hasattr(v, "dtype") else v.conjugate()


_mul_rule.complex_rule = _mul_complex_rule

mul = row("mul", lambda xp, x, y: x * y, _mul_rule, family=BINARY, save_for_others=True, ufunc="multiply",
          samples=_binary_samples, torch=lambda th, x, y: x * y, dunders=("__mul__", "__rmul__"),
          numpy=(np.multiply,), doc="x * y with NumPy broadcasting.", complex="holomorphic")


def _scaled_mul_fwd(xp, x, y, c):
    """``c x y`` into one fresh array. A gradient that is one value broadcast (a sum's, a mean's)
    has no strides: then it is ``y (c x0)``, one pass over ``y`` (the same bits: c is a power of
    two where the rules use it)."""
    if x.shape == y.shape and x.ndim and x.size:
        for a, b in ((x, y), (y, x)):
            if not any(a.strides):
                return b * (c * a[(0,) * a.ndim])
    out = x * y
    out *= c  # fresh: scaled in place, no second temporary (a NumPy scalar is rebound instead)
    return out


def _scaled_mul_rule(ctx, gg, c):
    x, y = ctx.saved
    xp = ctx.xp
    return (None if y is None else xp.scaled_mul(gg, y, c=c)), (None if x is None else xp.scaled_mul(gg, x, c=c))


# c * x * y as one op (rules call ctx.xp.scaled_mul): the gradient of x * x and of x ** 2 (2 g x), one
# array where two temporaries were
SCALED_MUL = defop("scaled_mul", _scaled_mul_fwd, _scaled_mul_rule, save=(0, 1), save_for_others=True, broadcast=True,
                   kind="elementwise", torch=lambda th, x, y, c: c * x * y,
                   samples=lambda rng: [Sample(_r(rng, 3, 4), _r(rng, 3, 4), c=2.0),
                                        Sample(_r(rng, 3, 1), _r(rng, 1, 4), c=-0.5),
                                        Sample(_r(rng), _r(rng, 4), c=3.0)], complex="holomorphic")


def _div_rule(ctx, g):
    x, y = ctx.saved
    gx = g / y
    return gx, (-gx * x / y if ctx.parents[1] is not None else None)


div = row("div", lambda xp, x, y: x / y, _div_rule, family=BINARY, ufunc="divide",
          samples=lambda rng: _binary_samples(rng, low=0.5), torch=lambda th, x, y: x / y, method=("div", "divide"),
          dunders=("__truediv__", "__rtruediv__"), numpy=(np.true_divide,),
          doc="x / y (true division) with NumPy broadcasting.", complex="holomorphic")


def _pow_rule(ctx, g):
    x, y = ctx.saved
    xp = ctx.xp
    gx = gy = None
    if ctx.parents[0] is not None:
        if not isinstance(y, (int, float, complex)):  # d/dx x**y = y x**(y-1), and 0 where y == 0 (even at x == 0)
            gx = xp.where(y == 0, 0.0, g * y * x ** (y - 1))
        elif y == 0:
            gx = g * 0.0
        else:
            gx = xp.scaled_mul(g, x, c=2.0) if y == 2 else g * (y * x ** (y - 1))
    if ctx.parents[1] is not None and isinstance(x, (int, float, complex)):  # a number to a tensor power
        gy = g * x ** y * (cmath.log(x) if isinstance(x, complex) else float(np.log(x))) if x != 0 else g * 0.0
    elif ctx.parents[1] is not None:  # d/dy x**y = x**y log x, and 0 where x == 0 (PyTorch's convention)
        zero = x == 0
        gy = xp.where(zero, 0.0, g * x ** y * xp.log(xp.where(zero, 1.0, x)))
    return gx, gy


pow = row("pow", lambda xp, x, y: x ** y, _pow_rule, family=BINARY, ufunc=None,  # noqa: A001
          torch=lambda th, x, y: x ** y,
          samples=lambda rng: _binary_samples(rng, low=0.5) + [Sample(_r(rng, 3, 4), 2), Sample(_r(rng, 4), 3.0),
                                                                Sample(_r(rng, 4), 0)],
          dunders=("__pow__", "__rpow__"), numpy=(np.power,),
          doc="x ** y with NumPy broadcasting (either may be a Python number).", complex="holomorphic")
floordiv = row("floordiv", lambda xp, x, y: x // y, family=BINARY, save=(), method="floor_divide",
               dunders=("__floordiv__", "__rfloordiv__"), numpy=(np.floor_divide,),
               doc="x // y (floor division; not differentiable: the result does not require grad).")


def _mod_rule(ctx, g):
    x, y = ctx.saved  # x % y = x - floor(x / y) y
    return g, (-g * (x // y) if ctx.parents[1] is not None else None)


mod = row("mod", lambda xp, x, y: x % y, _mod_rule, family=BINARY, ufunc=None,
          torch=lambda th, x, y: th.remainder(x, y),
          samples=lambda rng: [Sample(_r(rng, 3, 4, low=0.3) * 3, _r(rng, 3, 4, low=0.7)), Sample(_r(rng, 4) * 3, 1.7)],
          method="remainder", dunders=("__mod__", "__rmod__"), numpy=(np.remainder,),
          doc="x % y (Python's and NumPy's sign convention).")


def _fmod_rule(ctx, g):
    x, y = ctx.saved  # fmod(x, y) = x - trunc(x / y) y
    if ctx.parents[1] is None:
        return g, None
    xp = ctx.xp
    trunc = xp.sign(x) * xp.sign(y) * (xp.abs(x) // xp.abs(y))  # trunc(x / y), as exact as floor division
    return g, -g * trunc


def _fmod_samples(rng):
    def x_over(y, *shape):  # x / y of both signs, away from the integers where fmod jumps
        return (rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.8, shape)) * y

    y = np.sign(rng.standard_normal(4)) * _r(rng, 4, low=0.7)
    y2 = np.sign(rng.standard_normal((3, 4))) * _r(rng, 3, 4, low=0.7)
    return [Sample(x_over(y2, 3, 4), y2), Sample(x_over(y, 2, 4), y), Sample(x_over(-1.7, 4), -1.7)]


fmod = row("fmod", lambda xp, x, y: xp.fmod(x, y), _fmod_rule, family=BINARY, torch=lambda th, x, y: th.fmod(x, y),
           samples=_fmod_samples, numpy=(np.fmod,),
           doc="""C's remainder ``x - trunc(x / y) y``: the sign of ``x`` (``%`` takes the sign of ``y``).

    >>> mg.fmod(mg.tensor([-3.0, 3.0]), 2.0)    # [-1., 1.]; mg.mod gives [1., 1.]
    """)
neg = row("neg", lambda xp, x: -x, lambda ctx, g: (-g,), family=UNARY, ufunc="negative", samples=_unary_samples(),
          torch=lambda th, x: -x, method=("neg", "negative"), dunders=("__neg__",), numpy=(np.negative,), doc="-x.", complex=True)


# -- unary math ------------------------------------------------------------------------------



exp = row("exp", lambda xp, x: xp.exp(x), lambda ctx, g: (g * ctx.out,), family=UNARY, save_out=True,
          samples=_unary_samples(), numpy=(np.exp,), complex="holomorphic")
log = row("log", lambda xp, x: xp.log(x), lambda ctx, g: (g / ctx.saved[0],), family=UNARY, save=(0,),
          samples=_unary_samples(low=0.2), numpy=(np.log,), complex="holomorphic")
log1p = row("log1p", lambda xp, x: xp.log1p(x), lambda ctx, g: (g / (ctx.saved[0] + 1),), family=UNARY, save=(0,),
            samples=_unary_samples(low=0.1), numpy=(np.log1p,), complex="holomorphic")
sqrt = row("sqrt", lambda xp, x: xp.sqrt(x), lambda ctx, g: (g / (ctx.out * 2),), family=UNARY, save_out=True,
           samples=_unary_samples(low=0.2), numpy=(np.sqrt,), complex="holomorphic")
sin = row("sin", lambda xp, x: xp.sin(x), lambda ctx, g: (g * ctx.xp.cos(ctx.saved[0]),), family=UNARY, save=(0,),
          samples=_unary_samples(), numpy=(np.sin,), complex="holomorphic")
cos = row("cos", lambda xp, x: xp.cos(x), lambda ctx, g: (-g * ctx.xp.sin(ctx.saved[0]),), family=UNARY, save=(0,),
          samples=_unary_samples(), numpy=(np.cos,), complex="holomorphic")


def _tanh_backward_rule(ctx, gg):
    g, y = ctx.saved  # tanh_backward(g, y) = g (1 - y^2)
    gg_g = ctx.xp.tanh_backward(gg, y) if ctx.parents[0] is not None else None
    return gg_g, (gg * g * y * -2.0 if ctx.parents[1] is not None else None)


def _tanh_backward_fwd(xp, g, y):
    d = y * y
    if d.__class__ is not np.ndarray or d.shape != getattr(g, "shape", None):
        return (1 - d) * g
    xp.subtract(1, d, out=d)  # one temporary: (1 - y y) g, in place
    d *= g
    return d


# the gradient of tanh given its output y, g (1 - y^2), as an op of its own: tanh's first-order rule
# is one array pass (ctx.xp.tanh_backward) and its second order is still a rule
TANH_BACKWARD = defop("tanh_backward", _tanh_backward_fwd, _tanh_backward_rule, save=(0, 1),
                      kind="elementwise",
                      samples=lambda rng: [Sample(_r(rng, 3, 4), np.tanh(_r(rng, 3, 4)))],
                      torch=lambda th, g, y: g * (1 - y * y), complex="holomorphic")


def _tanh_rule(ctx, g):
    return (ctx.xp.tanh_backward(g, ctx.out),)


# a complex output's: g (1 - conj(y)²), one conjugate (_registry.complex_twin)
_tanh_rule.complex_rule = lambda ctx, g: (ctx.xp.tanh_backward(g, conj(ctx.out)),)

tanh = row("tanh", lambda xp, x: xp.tanh(x), _tanh_rule, family=UNARY,
           save_out=True, samples=_unary_samples(), numpy=(np.tanh,), complex="holomorphic")


def _sigmoid_fwd(xp, x):
    return xp.tanh(x * 0.5) * 0.5 + 0.5  # stable for large |x|


def _sigmoid_rule(ctx, g):
    y = ctx.out
    return (g * y * (1 - y),)


sigmoid = row("sigmoid", _sigmoid_fwd, _sigmoid_rule, family=UNARY, save_out=True, samples=_unary_samples(), complex="holomorphic")
relu = row("relu", lambda xp, x: xp.maximum(x, 0), lambda ctx, g: (ctx.xp.where(ctx.out > 0, g, 0.0),), family=UNARY,
           save_out=True, samples=_unary_samples(away=0.0))

sign = row("sign", lambda xp, x: xp.sign(x), lambda ctx, g: (ctx.xp.zeros_like(g),), family=UNARY,
           samples=_unary_samples(away=0.0), numpy=(np.sign,),
           doc="-1, 0 or 1 by the sign of x; a zero gradient (recorded, as PyTorch's).")


def sgn(xp, x):
    """``x / |x|``, and 0 at 0: ``sign`` of a real ``x`` (PyTorch's ``sgn``)."""
    if x.dtype.kind != "c":
        return xp.sign(x)
    a = xp.abs(x)
    zero = a == 0
    return xp.where(zero, 0.0, x / xp.where(zero, 1.0, a))


def _abs_jvp(ctx, t):
    x, xp = ctx.args[0], ctx.xp  # d|z| = Re(conj(sgn z) dz); t sign(x) for a real x
    d = conj(sgn(xp, x)) * t
    return xp.real(d) if x.dtype.kind == "c" else d


# the gradient g sgn(x) serves both: for a complex x it is |z|'s d/dRe + i d/dIm, and 0 at 0 (PyTorch's)
abs = row("abs", lambda xp, x: xp.abs(x), lambda ctx, g: (g * sgn(ctx.xp, ctx.saved[0]),), family=UNARY, save=(0,),
          samples=_unary_samples(away=0.0), numpy=(np.absolute,), complex=True, jvp=_abs_jvp)

clone = row("clone", lambda xp, x: x.copy() if hasattr(x, "copy") else xp.array(x),  # a Python number too
            lambda ctx, g: (g,), family=UNARY, samples=_unary_samples(), torch=lambda th, x: x.clone(),
            method=("clone", "copy"), numpy=(np.copy,), doc="A copy with its own storage; the gradient passes through.", complex=True)


ASTYPE = defop("astype", lambda xp, x, dtype: x.astype(dtype), lambda ctx, g, dtype: (g,),  # the engine casts back
               kind="elementwise", samples=lambda rng: [Sample(_r(rng, 3, 4), dtype=np.float64)], complex=True,
               complex_samples=lambda rng: [Sample(_r(rng, 3, 4) + 1j * _r(rng, 3, 4), dtype=np.complex128),
                                            Sample(_r(rng, 3, 4), dtype=np.complex128)])


@public(ASTYPE, method="astype", export=False)
@named("astype")
def astype(x, dtype):
    """Cast to ``dtype``; differentiable between floating and complex dtypes. A complex tensor is
    cast to a complex dtype only (``.real`` takes the real part: a cast would drop the imaginary one)."""
    dtype = np.dtype(dtype)
    if x.data.dtype == dtype:
        return x
    if x.data.dtype.kind == "c" and dtype.kind != "c":
        raise TypeError(f"astype: casting {x.data.dtype} to {dtype} would drop the imaginary part; take .real "
                        "(or .abs()) first")
    return run_op(ASTYPE, x, dtype=dtype)


# -- two-input selection ----------------------------------------------------------------------


def _extremum_rule(ctx, g, bigger):
    x, y = ctx.saved
    where = ctx.xp.where
    tie = x == y
    half = g * 0.5
    wins_x = (x > y) if bigger else (x < y)
    gx = where(wins_x, g, where(tie, half, 0.0)) if ctx.parents[0] is not None else None
    gy = where(wins_x | tie, where(tie, half, 0.0), g) if ctx.parents[1] is not None else None
    return gx, gy



def _distinct_samples(rng):
    return [Sample(_r(rng, 3, 4), _r(rng, 3, 4) + 0.05), Sample(_r(rng, 2, 3), _r(rng, 3) + 0.05)]


maximum = row("maximum", lambda xp, x, y: xp.maximum(x, y), lambda ctx, g: _extremum_rule(ctx, g, True), family=BINARY,
              samples=_distinct_samples, torch=lambda th, x, y: th.maximum(x, y), numpy=(np.maximum,),
              doc="Elementwise maximum with broadcasting; ties split the gradient evenly.")
minimum = row("minimum", lambda xp, x, y: xp.minimum(x, y), lambda ctx, g: _extremum_rule(ctx, g, False), family=BINARY,
              samples=_distinct_samples, torch=lambda th, x, y: th.minimum(x, y), numpy=(np.minimum,),
              doc="Elementwise minimum with broadcasting; ties split the gradient evenly.")


def _where_fwd(xp, c, x, y):
    if hasattr(c, "dtype") and c.dtype != bool:
        c = c.astype(bool)
    return xp.where(c, x, y)


def _where_rule(ctx, g):
    (c,) = ctx.saved
    where = ctx.xp.where
    gx = where(c, g, 0.0) if ctx.parents[1] is not None else None
    gy = where(c, 0.0, g) if ctx.parents[2] is not None else None
    return None, gx, gy


WHERE = defop("where", _where_fwd, _where_rule, save=(0,), broadcast=True, kind="elementwise",
              torch=lambda th, c, x, y: th.where(c, x, y),
              samples=lambda rng: [Sample(rng.random((3, 4)) > 0.5, _r(rng, 3, 4), _r(rng, 3, 4)),
                                   Sample(rng.random((3, 1)) > 0.5, _r(rng, 4), 2.0)], complex=True)


@public(WHERE, numpy=(np.where,))
def where(cond, x, y):
    """Elementwise ``x`` where ``cond`` else ``y``, with broadcasting.

    >>> mg.where(x > 0, x, 0.0)
    """
    if isinstance(cond, Tensor) and cond.dtype != bool:
        cond = cond != 0  # its own mask: the caller may write cond in place afterwards
    try:
        return run_op(WHERE, cond, x, y)
    except ValueError as e:
        if "broadcast" not in str(e):
            raise
        shapes = [getattr(getattr(a, "data", a), "shape", "scalar") for a in (cond, x, y)]
        raise ValueError(f"where: cond, x and y could not be broadcast together: shapes {shapes[0]}, "
                         f"{shapes[1]} and {shapes[2]}") from None


def _clip_rule(ctx, g, lo, hi):
    (x,) = ctx.saved
    inside = None
    if lo is not None:
        inside = x >= lo
    if hi is not None:
        inside = (x <= hi) if inside is None else inside & (x <= hi)
    return (ctx.xp.where(inside, g, 0.0),)


CLIP = defop("clip", lambda xp, x, lo, hi: xp.clip(x, lo, hi), _clip_rule, save=(0,), kind="elementwise",
             torch=lambda th, x, lo=None, hi=None: th.clamp(x, lo, hi),
             samples=lambda rng: [Sample(_r(rng, 3, 4, away=0.5), lo=-0.5, hi=0.5),
                                  Sample(_r(rng, 5, away=0.0), lo=0.0, hi=None)])


def _bound(b, name):
    if b is None or isinstance(b, Tensor):
        return b
    if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, float, np.number)):
        raise TypeError(f"clip: {name} must be a number, a Tensor or None, got {type(b).__name__} {b!r}")
    return float(b) if isinstance(b, np.floating) else b


@public(CLIP, method=("clip", "clamp"), export=("clip"), numpy=(np.clip,))
@named("clip")
def clip(x, min=None, max=None):  # noqa: A002 - NumPy/PyTorch names
    """Clamp into [min, max] (either may be None); gradient 1 inside, bounds included."""
    lo, hi = _bound(min, "min"), _bound(max, "max")
    if lo is None and hi is None:
        raise ValueError("clip: at least one of min and max must be given")
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):
        out = x
        if lo is not None:
            out = maximum(out, lo)
        if hi is not None:
            out = minimum(out, hi)
        return out
    return run_op(CLIP, x, lo=lo, hi=hi)


clamp = clip


# -- comparisons and logic (not differentiable) ---------------------------------------------------



lt = row("lt", lambda xp, x, y: x < y, family=COMPARE, method=("lt", "less"), dunders=("__lt__",), numpy=(np.less,))
le = row("le", lambda xp, x, y: x <= y, family=COMPARE, method=("le", "less_equal"), dunders=("__le__",),
         numpy=(np.less_equal,))
gt = row("gt", lambda xp, x, y: x > y, family=COMPARE, method=("gt", "greater"), dunders=("__gt__",),
         numpy=(np.greater,))
ge = row("ge", lambda xp, x, y: x >= y, family=COMPARE, method=("ge", "greater_equal"), dunders=("__ge__",),
         numpy=(np.greater_equal,))
eq = row("eq", lambda xp, x, y: x == y, family=COMPARE, method=("eq", "equal"), dunders=("__eq__",), numpy=(np.equal,), complex=True)
ne = row("ne", lambda xp, x, y: x != y, family=COMPARE, method=("ne", "not_equal"), dunders=("__ne__",),
         numpy=(np.not_equal,), complex=True)
logical_and = row("logical_and", lambda xp, x, y: x & y, family=COMPARE, method=(), dunders=("__and__", "__rand__"),
                  numpy=(np.logical_and,), export=False)
logical_or = row("logical_or", lambda xp, x, y: x | y, family=COMPARE, method=(), dunders=("__or__", "__ror__"),
                 numpy=(np.logical_or,), export=False)
logical_xor = row("logical_xor", lambda xp, x, y: x ^ y, family=COMPARE, method=(), dunders=("__xor__", "__rxor__"),
                  numpy=(np.logical_xor,), export=False)

logical_not = row("logical_not", lambda xp, x: ~x if getattr(x, "dtype", np.dtype(float)).kind in "biu"
                  else xp.logical_not(x), family=UNARY, method=(), dunders=("__invert__",),
                  numpy=(np.logical_not,), doc="Elementwise not (``~x``).")


@composite("isclose", kind="compare")
@named("isclose")
def isclose(x, y, rtol=1e-5, atol=1e-8):
    """Elementwise |x - y| <= atol + rtol |y| (a bool tensor)."""
    return abs(x - y) <= abs(y) * rtol + atol


@composite("allclose", kind="compare")
@named("allclose")
def allclose(x, y, rtol=1e-5, atol=1e-8) -> bool:
    """Whether every element is close (``isclose``)."""
    return bool(isclose(x, y, rtol, atol).data.all())

