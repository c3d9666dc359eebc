"""Elementwise ops: arithmetic with NumPy broadcasting, unary math, where, clip, comparisons.

Each op's forward (over backend arrays) sits beside its gradient rule (the array API: arrays
in first order, Tensors in higher order; docs/architecture.md). Binary
ops are registered with ``broadcast=True``: their rules return output-shaped gradients and
the engine sums each back to its input's shape (``sum_to``, the one inverse of
broadcasting). Masking rules (relu, clip, maximum, where) select with ``where``; they never
multiply by a mask, so a NaN or inf elsewhere cannot leak into a gradient.
"""
from __future__ import annotations

import numpy as np

from ..engine import run_op
from ..errors import named
from ..tensor import Tensor
from ._registry import Sample, composite, defop, public


def _r(rng, *shape, low=None, away=None):
    a = rng.standard_normal(shape)
    if low is not None:
        a = low + np.abs(a)
    if away is not None:  # keep values away from a non-differentiable point
        a = np.where(np.abs(a - away) < 0.1, a + 0.3, a)
    return np.asarray(a)


def _binary_samples(rng, low=None):
    return [Sample(_r(rng, 3, 4, low=low), _r(rng, 3, 4, low=low)),
            Sample(_r(rng, 2, 3, 4, low=low), _r(rng, 4, low=low)),
            Sample(_r(rng, 3, 1, low=low), _r(rng, 1, 4, low=low)),
            Sample(_r(rng, 3, low=low), 1.5)]


def _unary_samples(low=None, away=None):
    return lambda rng: [Sample(_r(rng, 3, 4, low=low, away=away)), Sample(_r(rng, 5, low=low, away=away)),
                        Sample(_r(rng, low=low, away=away))]


# -- arithmetic ---------------------------------------------------------------------------


def _add_rule(ctx, g):
    return g, g


ADD = defop("add", lambda xp, x, y: x + y, _add_rule, broadcast=True, ufunc="add", kind="elementwise",
            samples=_binary_samples, torch=lambda th, x, y: x + y)


@public(ADD, method="add", dunders=("__add__", "__radd__"), numpy=(np.add,))
def add(x, y):
    """x + y with NumPy broadcasting."""
    return run_op(ADD, x, y)


def _sub_rule(ctx, g):
    return g, (-g if ctx.parents[1] is not None else None)


SUB = defop("sub", lambda xp, x, y: x - y, _sub_rule, broadcast=True, ufunc="subtract", kind="elementwise",
            samples=_binary_samples, torch=lambda th, x, y: x - y)


@public(SUB, method="sub", dunders=("__sub__", "__rsub__"), numpy=(np.subtract,))
def sub(x, y):
    """x - y with NumPy broadcasting."""
    return run_op(SUB, x, y)


def _mul_rule(ctx, g):
    x, y = ctx.saved  # each saved only when the other input needs a gradient
    if x is y and x is not None and ctx.parents[0] is ctx.parents[1]:
        return ctx.xp.scaled_mul(g, x, c=2.0), None  # x * x: one gradient, 2 g x, not g x twice and their sum
    return (None if y is None else g * y), (None if x is None else g * x)


MUL = defop("mul", lambda xp, x, y: x * y, _mul_rule, save=(0, 1), cross=True, broadcast=True,
            ufunc="multiply", kind="elementwise", samples=_binary_samples, torch=lambda th, x, y: x * y)


@public(MUL, method="mul", dunders=("__mul__", "__rmul__"), numpy=(np.multiply,))
def mul(x, y):
    """x * y with NumPy broadcasting."""
    return run_op(MUL, x, y)


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
SCALED_MUL = defop("scaled_mul", _scaled_mul_fwd, _scaled_mul_rule, save=(0, 1), cross=True, broadcast=True,
                   kind="elementwise", torch=lambda th, x, y, c: c * x * y,
                   samples=lambda rng: [Sample(_r(rng, 3, 4), _r(rng, 3, 4), c=2.0),
                                        Sample(_r(rng, 3, 1), _r(rng, 1, 4), c=-0.5),
                                        Sample(_r(rng), _r(rng, 4), c=3.0)])


def _div_rule(ctx, g):
    x, y = ctx.saved
    gx = g / y
    return gx, (-gx * x / y if ctx.parents[1] is not None else None)


DIV = defop("div", lambda xp, x, y: x / y, _div_rule, save=(0, 1), broadcast=True, ufunc="divide", kind="elementwise",
            samples=lambda rng: _binary_samples(rng, low=0.5), torch=lambda th, x, y: x / y)


@public(DIV, method=("div", "divide"), dunders=("__truediv__", "__rtruediv__"), numpy=(np.true_divide,))
def div(x, y):
    """x / y (true division) with NumPy broadcasting."""
    return run_op(DIV, x, y)


def _pow_rule(ctx, g):
    x, y = ctx.saved
    xp = ctx.xp
    gx = gy = None
    if ctx.parents[0] is not None:
        if not isinstance(y, (int, float)):  # d/dx x**y = y x**(y-1), and 0 where y == 0 (even at x == 0)
            gx = xp.where(y == 0, 0.0, g * y * x ** (y - 1))
        elif y == 0:
            gx = g * 0.0
        else:
            gx = xp.scaled_mul(g, x, c=2.0) if y == 2 else g * (y * x ** (y - 1))
    if ctx.parents[1] is not None and isinstance(x, (int, float)):  # a number to a tensor power
        gy = g * x ** y * float(np.log(x)) if x != 0 else g * 0.0
    elif ctx.parents[1] is not None:  # d/dy x**y = x**y log x, and 0 where x == 0 (PyTorch's convention)
        zero = x == 0
        gy = xp.where(zero, 0.0, g * x ** y * xp.log(xp.where(zero, 1.0, x)))
    return gx, gy


POW = defop("pow", lambda xp, x, y: x ** y, _pow_rule, save=(0, 1), broadcast=True,
            kind="elementwise", torch=lambda th, x, y: x ** y,
            samples=lambda rng: _binary_samples(rng, low=0.5) + [Sample(_r(rng, 3, 4), 2), Sample(_r(rng, 4), 3.0),
                                                                  Sample(_r(rng, 4), 0)])


@public(POW, method="pow", dunders=("__pow__", "__rpow__"), numpy=(np.power,))
def pow(x, y):  # noqa: A001 - the public name
    """x ** y with NumPy broadcasting (either may be a Python number)."""
    return run_op(POW, x, y)


FLOORDIV = defop("floordiv", lambda xp, x, y: x // y, kind="elementwise", broadcast=True)


@public(FLOORDIV, method="floor_divide", dunders=("__floordiv__", "__rfloordiv__"), numpy=(np.floor_divide,))
def floordiv(x, y):
    """x // y (floor division; not differentiable: the result does not require grad)."""
    return run_op(FLOORDIV, x, y)


def _mod_rule(ctx, g):
    x, y = ctx.saved  # x % y = x - floor(x / y) y
    return g, (-g * (x // y) if ctx.parents[1] is not None else None)


MOD = defop("mod", lambda xp, x, y: x % y, _mod_rule, save=(0, 1), broadcast=True, kind="elementwise",
            torch=lambda th, x, y: th.remainder(x, y),
            samples=lambda rng: [Sample(_r(rng, 3, 4, low=0.3) * 3, _r(rng, 3, 4, low=0.7)),
                                 Sample(_r(rng, 4) * 3, 1.7)])


@public(MOD, method="remainder", dunders=("__mod__", "__rmod__"), numpy=(np.remainder,))
def mod(x, y):
    """x % y (Python's and NumPy's sign convention)."""
    return run_op(MOD, x, y)


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


FMOD = defop("fmod", lambda xp, x, y: xp.fmod(x, y), _fmod_rule, save=(0, 1), broadcast=True, kind="elementwise",
             ufunc="fmod", torch=lambda th, x, y: th.fmod(x, y), samples=_fmod_samples)


@public(FMOD, method="fmod", numpy=(np.fmod,))
def fmod(x, y):
    """C's remainder ``x - trunc(x / y) y``: the sign of ``x`` (``%`` takes the sign of ``y``).

    >>> mg.fmod(mg.tensor([-3.0, 3.0]), 2.0)    # [-1., 1.]; mg.mod gives [1., 1.]
    """
    return run_op(FMOD, x, y)


NEG = defop("neg", lambda xp, x: -x, lambda ctx, g: (-g,), kind="elementwise", ufunc="negative",
            samples=_unary_samples(), torch=lambda th, x: -x)


@public(NEG, method=("neg", "negative"), dunders=("__neg__",), numpy=(np.negative,))
def neg(x):
    """-x."""
    return run_op(NEG, x)


# -- unary math ------------------------------------------------------------------------------


def _unary(name, forward, rule, samples, torch_name=None, numpy=(), save=(), save_out=False, method=None):
    """Define, register and give a public face to a one-input math op (``mg.exp``, ``t.exp()``).
    A forward that is ``xp.<name>`` is named so (``Op.ufunc``): a replay calls it directly."""
    ufunc = name if numpy and numpy[0] is getattr(np, name, None) else None
    torch = torch_name if callable(torch_name) else lambda th, x: getattr(th, torch_name or name)(x)
    op = defop(name, forward, rule, save=save, save_out=save_out, kind="elementwise", samples=samples,
               torch=torch, ufunc=ufunc)

    def fn(x):
        return run_op(op, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(x), elementwise."
    return public(op, method=method or name, numpy=numpy)(fn)


exp = _unary("exp", lambda xp, x: xp.exp(x), lambda ctx, g: (g * ctx.out,), _unary_samples(),
             numpy=(np.exp,), save_out=True)
log = _unary("log", lambda xp, x: xp.log(x), lambda ctx, g: (g / ctx.saved[0],), _unary_samples(low=0.2),
             numpy=(np.log,), save=(0,))
log1p = _unary("log1p", lambda xp, x: xp.log1p(x), lambda ctx, g: (g / (ctx.saved[0] + 1),),
               _unary_samples(low=0.1), numpy=(np.log1p,), save=(0,))
sqrt = _unary("sqrt", lambda xp, x: xp.sqrt(x), lambda ctx, g: (g / (ctx.out * 2),), _unary_samples(low=0.2),
              numpy=(np.sqrt,), save_out=True)
sin = _unary("sin", lambda xp, x: xp.sin(x), lambda ctx, g: (g * ctx.xp.cos(ctx.saved[0]),), _unary_samples(),
             numpy=(np.sin,), save=(0,))
cos = _unary("cos", lambda xp, x: xp.cos(x), lambda ctx, g: (-g * ctx.xp.sin(ctx.saved[0]),), _unary_samples(),
             numpy=(np.cos,), save=(0,))


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
                      torch=lambda th, g, y: g * (1 - y * y))


tanh = _unary("tanh", lambda xp, x: xp.tanh(x), lambda ctx, g: (ctx.xp.tanh_backward(g, ctx.out),), _unary_samples(),
              numpy=(np.tanh,), save_out=True)


def _sigmoid_fwd(xp, x):
    return xp.tanh(x * 0.5) * 0.5 + 0.5  # stable for large |x|


def _sigmoid_rule(ctx, g):
    y = ctx.out
    return (g * y * (1 - y),)


sigmoid = _unary("sigmoid", _sigmoid_fwd, _sigmoid_rule, _unary_samples(), save_out=True)
relu = _unary("relu", lambda xp, x: xp.maximum(x, 0), lambda ctx, g: (ctx.xp.where(ctx.out > 0, g, 0.0),),
              _unary_samples(away=0.0), save_out=True)

SIGN = defop("sign", lambda xp, x: xp.sign(x), lambda ctx, g: (ctx.xp.zeros_like(g),), kind="elementwise",
             samples=_unary_samples(away=0.0), torch=lambda th, x: th.sign(x))


@public(SIGN, method="sign", numpy=(np.sign,))
def sign(x):
    """-1, 0 or 1 by the sign of x; a zero gradient (recorded, as PyTorch's)."""
    return run_op(SIGN, x)


abs = _unary("abs", lambda xp, x: xp.abs(x), lambda ctx, g: (g * ctx.xp.sign(ctx.saved[0]),), _unary_samples(away=0.0),  # noqa: A001
             numpy=(np.absolute,), save=(0,))

CLONE = defop("clone", lambda xp, x: x.copy() if hasattr(x, "copy") else xp.array(x),  # a Python number too
              lambda ctx, g: (g,), kind="elementwise",
              samples=_unary_samples(), torch=lambda th, x: x.clone())


@public(CLONE, method=("clone", "copy"), numpy=(np.copy,))
def clone(x):
    """A copy with its own storage; the gradient passes through."""
    return run_op(CLONE, x)


ASTYPE = defop("astype", lambda xp, x, dtype: x.astype(dtype), lambda ctx, g, dtype: (g,),  # the engine casts back
               kind="elementwise", samples=lambda rng: [Sample(_r(rng, 3, 4), dtype=np.float64)])


@public(ASTYPE, method="astype", export=False)
@named("astype")
def astype(x, dtype):
    """Cast to ``dtype``; differentiable between floating dtypes."""
    dtype = np.dtype(dtype)
    if x.data.dtype == dtype:
        return x
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


def _binary_op(name, fwd, rule, samples, torch, numpy, doc, save_out=False):
    ufunc = name if numpy and numpy[0] is getattr(np, name, None) else None
    op = defop(name, fwd, rule, save=(0, 1), save_out=save_out, broadcast=True, kind="elementwise",
               samples=samples, torch=torch, ufunc=ufunc)

    def fn(x, y):
        return run_op(op, x, y)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return public(op, method=name, numpy=numpy)(fn)


def _distinct_samples(rng):
    return [Sample(_r(rng, 3, 4), _r(rng, 3, 4) + 0.05), Sample(_r(rng, 2, 3), _r(rng, 3) + 0.05)]


maximum = _binary_op("maximum", lambda xp, x, y: xp.maximum(x, y), lambda ctx, g: _extremum_rule(ctx, g, True),
                     _distinct_samples, lambda th, x, y: th.maximum(x, y), (np.maximum,),
                     "Elementwise maximum with broadcasting; ties split the gradient evenly.")
minimum = _binary_op("minimum", lambda xp, x, y: xp.minimum(x, y), lambda ctx, g: _extremum_rule(ctx, g, False),
                     _distinct_samples, lambda th, x, y: th.minimum(x, y), (np.minimum,),
                     "Elementwise minimum with broadcasting; ties split the gradient evenly.")


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
                                   Sample(rng.random((3, 1)) > 0.5, _r(rng, 4), 2.0)])


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


def _compare(name, fwd, dunders, numpy, method):
    op = defop(name, fwd, kind="elementwise", broadcast=True)

    def fn(x, y):
        if y is None:
            return NotImplemented
        try:
            return run_op(op, x, y)
        except TypeError:
            return NotImplemented

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} (a bool tensor; not differentiable)."
    return public(op, method=method, dunders=dunders, numpy=numpy, export=name if method else False)(fn)


lt = _compare("lt", lambda xp, x, y: x < y, ("__lt__",), (np.less,), ("lt", "less"))
le = _compare("le", lambda xp, x, y: x <= y, ("__le__",), (np.less_equal,), ("le", "less_equal"))
gt = _compare("gt", lambda xp, x, y: x > y, ("__gt__",), (np.greater,), ("gt", "greater"))
ge = _compare("ge", lambda xp, x, y: x >= y, ("__ge__",), (np.greater_equal,), ("ge", "greater_equal"))
eq = _compare("eq", lambda xp, x, y: x == y, ("__eq__",), (np.equal,), ("eq", "equal"))
ne = _compare("ne", lambda xp, x, y: x != y, ("__ne__",), (np.not_equal,), ("ne", "not_equal"))
logical_and = _compare("logical_and", lambda xp, x, y: x & y, ("__and__", "__rand__"), (np.logical_and,), ())
logical_or = _compare("logical_or", lambda xp, x, y: x | y, ("__or__", "__ror__"), (np.logical_or,), ())
logical_xor = _compare("logical_xor", lambda xp, x, y: x ^ y, ("__xor__", "__rxor__"), (np.logical_xor,), ())

NOT = defop("logical_not", lambda xp, x: ~x if getattr(x, "dtype", np.dtype(float)).kind in "biu"
            else xp.logical_not(x), kind="elementwise")


@public(NOT, dunders=("__invert__",), numpy=(np.logical_not,))
def logical_not(x):
    """Elementwise not (``~x``)."""
    return run_op(NOT, x)


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

