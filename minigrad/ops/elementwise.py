"""Elementwise ops: arithmetic with NumPy broadcasting, unary math, where, clip.

Each forward sits beside its gradient rule. Rules undo broadcasting with
``unb`` (sum_to) and use operators or the dual helpers of ``_core``.
"""
from __future__ import annotations

import operator

import numpy as np

from ..tensor import Tensor, _wrap
from . import _core as C
from ._core import binary, unary, unb

# -- arithmetic ---------------------------------------------------------------


def _add_rule(ctx, g, saved):
    mx, my = ctx.meta
    gs = g.shape
    gx = None if mx is None else g if gs == mx[0] else C.sum_to(g, mx[0])
    gy = None if my is None else g if gs == my[0] else C.sum_to(g, my[0])
    return gx, gy


def add(x, y):
    """x + y with broadcasting."""
    return binary("add", operator.add, _add_rule, x, y)


def radd(x, y):
    return binary("add", operator.add, _add_rule, y, x)


def _sub_rule(ctx, g, saved):
    mx, my = ctx.meta
    return (None if mx is None else unb(g, mx[0]), None if my is None else unb(-g, my[0]))


def sub(x, y):
    """x - y with broadcasting."""
    return binary("sub", operator.sub, _sub_rule, x, y)


def rsub(x, y):
    return binary("sub", operator.sub, _sub_rule, y, x)


def _mul_rule(ctx, g, saved):
    x, y = saved
    mx, my = ctx.meta
    gx = gy = None
    if x is y and mx is not None and my is not None:  # one array on both sides: g * x serves both
        if ctx.parents[0] is ctx.parents[1] and not C.is_t(g) and g.ndim and g.size and not any(g.strides):
            # x * x under a sum: g is one value broadcast (a view), so 2 g x is one pass over x
            return y * (g[(0,) * g.ndim] * 2), None
        gx = g * y
        if ctx.parents[0] is not ctx.parents[1]:  # two Tensors over it: each gets g * x
            return gx, gx
        if C.is_t(gx):  # x * x: one gradient, 2 g x, sent once rather than g x twice and added
            return gx * 2, None
        gx *= 2
        return gx, None
    if mx is not None:
        gx = g * y
        if gx.shape != mx[0]:
            gx = C.sum_to(gx, mx[0])
    if my is not None:
        gy = g * x
        if gy.shape != my[0]:
            gy = C.sum_to(gy, my[0])
    return gx, gy


def mul(x, y):
    """x * y with broadcasting."""
    return binary("mul", operator.mul, _mul_rule, x, y, "cross")


def rmul(x, y):
    return binary("mul", operator.mul, _mul_rule, y, x, "cross")


def _div_rule(ctx, g, saved):
    x, y = saved
    mx, my = ctx.meta
    gx = None if mx is None else unb(g / y, mx[0])
    gy = None if my is None else unb(-g * x / (y * y), my[0])
    return gx, gy


def div(x, y):
    """x / y (true division) with broadcasting."""
    return binary("div", operator.truediv, _div_rule, x, y, "both")


def rdiv(x, y):
    return binary("div", operator.truediv, _div_rule, y, x, "both")


def _pow_rule(ctx, g, saved):
    x, y = saved
    mx, my = ctx.meta
    gx = gy = None
    if mx is not None:
        if isinstance(y, (int, float)):
            gx = g * y * x ** (y - 1) if y != 2 else g * 2 * x
        else:
            gx = g * y * x ** (y - 1)
        gx = unb(gx, mx[0])
    if my is not None:
        xd = C.data_of(x)
        xp = C.xp_of(xd)
        # d/dy x**y = x**y log x; 0 where x == 0 (PyTorch's convention)
        safe = xp.where(xd == 0, 1, xd) if hasattr(xd, "shape") else (1 if xd == 0 else xd)
        lg = C.log(safe) if not C.is_t(x) else C.log(C.where(xd == 0, 1.0, x))
        gy = unb(g * (x ** y) * lg, my[0])
    return gx, gy


def pow(x, y):
    """x ** y with broadcasting (either may be a Python scalar)."""
    return binary("pow", operator.pow, _pow_rule, x, y, "both")


def rpow(x, y):
    return binary("pow", operator.pow, _pow_rule, y, x, "both")


def _floordiv_rule(ctx, g, saved):
    return (None, None)  # piecewise constant: zero gradient wherever it exists


def floordiv(x, y):
    """x // y (not differentiable: the result does not require grad)."""
    return _nograd(binary("floordiv", operator.floordiv, _floordiv_rule, x, y))


def rfloordiv(x, y):
    return _nograd(binary("floordiv", operator.floordiv, _floordiv_rule, y, x))


def _mod_rule(ctx, g, saved):
    x, y = saved
    mx, my = ctx.meta
    gx = None if mx is None else unb(g, mx[0])
    gy = None
    if my is not None:
        q = C.xp_of(C.data_of(x)).floor(C.data_of(x) / C.data_of(y))
        gy = unb(-g * q, my[0])
    return gx, gy


def mod(x, y):
    """x % y (Python/NumPy sign convention)."""
    return binary("mod", operator.mod, _mod_rule, x, y, "both")


def rmod(x, y):
    return binary("mod", operator.mod, _mod_rule, y, x, "both")


def _nograd(t):
    t._node = None
    t._rg = False
    return t


def _neg_rule(ctx, g, saved):
    return (-g,)


def neg(x):
    return unary("neg", operator.neg, _neg_rule, x)


# -- unary math ---------------------------------------------------------------


def _t(x):
    return x if isinstance(x, Tensor) else Tensor(x)


def _exp_rule(ctx, g, saved):
    return (g * saved[0],)


def exp(x):
    """e ** x, elementwise."""
    if x.__class__ is not Tensor:
        x = _t(x)
    d = x.data
    return unary("exp", np.exp if d.__class__ is np.ndarray else C.xp_of(d).exp, _exp_rule, x, 2)


def _log_rule(ctx, g, saved):
    return (g / saved[0],)


def log(x):
    """Natural logarithm, elementwise."""
    if x.__class__ is not Tensor:
        x = _t(x)
    d = x.data
    return unary("log", np.log if d.__class__ is np.ndarray else C.xp_of(d).log, _log_rule, x, 1)


def _sqrt_rule(ctx, g, saved):
    return (g / (2 * saved[0]),)


def sqrt(x):
    """Square root, elementwise."""
    if x.__class__ is not Tensor:
        x = _t(x)
    d = x.data
    return unary("sqrt", np.sqrt if d.__class__ is np.ndarray else C.xp_of(d).sqrt, _sqrt_rule, x, 2)


def _tanh_rule(ctx, g, saved):
    y = saved[0]
    return (g * (1 - y * y),)


def tanh(x):
    """Hyperbolic tangent, elementwise."""
    if x.__class__ is not Tensor:
        x = _t(x)
    d = x.data
    return unary("tanh", np.tanh if d.__class__ is np.ndarray else C.xp_of(d).tanh, _tanh_rule, x, 2)


def _sigmoid_fwd(x):
    xp = C.xp_of(x)
    return xp.tanh(x * 0.5) * 0.5 + 0.5  # stable for large |x|


def _sigmoid_rule(ctx, g, saved):
    y = saved[0]
    return (g * y * (1 - y),)


def sigmoid(x):
    """1 / (1 + e ** -x), elementwise (computed stably)."""
    return unary("sigmoid", _sigmoid_fwd, _sigmoid_rule, _t(x), 2)


def _relu_fwd(x):
    return C.xp_of(x).maximum(x, 0)


def _relu_rule(ctx, g, saved):
    return (g * (C.data_of(saved[0]) > 0),)


def relu(x):
    """max(x, 0), elementwise (gradient 0 at 0)."""
    return unary("relu", _relu_fwd, _relu_rule, _t(x), 2)


def _sin_rule(ctx, g, saved):
    return (g * C.cos(saved[0]),)


def sin(x):
    x = _t(x)
    return unary("sin", C.xp_of(x.data).sin, _sin_rule, x, 1)


def _cos_rule(ctx, g, saved):
    return (-g * C.sin(saved[0]),)


def cos(x):
    x = _t(x)
    return unary("cos", C.xp_of(x.data).cos, _cos_rule, x, 1)


def _abs_rule(ctx, g, saved):
    return (g * C.sign(saved[0]),)


def abs(x):  # noqa: A001 - the public name
    """|x|, elementwise (gradient 0 at 0)."""
    x = _t(x)
    return unary("abs", C.xp_of(x.data).abs, _abs_rule, x, 1)


def _identity_rule(ctx, g, saved):
    return (g,)


def clone(x):
    """A copy with its own storage; the gradient passes through."""
    return unary("clone", lambda a: a.copy(), _identity_rule, x)


def _astype_rule(ctx, g, saved):
    return (g,)  # the engine casts back to the input's dtype


def astype(x, dtype):
    """Cast to ``dtype``; differentiable between floating dtypes."""
    dtype = np.dtype(dtype)
    if x.data.dtype == dtype:
        return x
    out = unary("astype", lambda a: a.astype(dtype), _astype_rule, x)
    if dtype.kind not in "fc":
        _nograd(out)
    return out


# -- two-input elementwise ------------------------------------------------------


def _minmax_rule(ctx, g, saved):
    x, y = saved
    xd, yd = C.data_of(x), C.data_of(y)
    mx, my = ctx.meta
    big = ctx.attrs  # True for maximum
    wins = (xd > yd) if big else (xd < yd)
    tie = (xd == yd) * 0.5
    wx = wins + tie
    gx = None if mx is None else unb(g * wx, mx[0])
    gy = None if my is None else unb(g * (1 - wx), my[0])
    return gx, gy


def maximum(x, y):
    """Elementwise maximum with broadcasting; ties split the gradient evenly."""
    out = binary("maximum", lambda a, b: C.xp_of(a if hasattr(a, "shape") else b).maximum(a, b), _minmax_rule, x, y, "both")
    if out._node is not None:
        out._node.attrs = True
    return out


def minimum(x, y):
    """Elementwise minimum with broadcasting; ties split the gradient evenly."""
    out = binary("minimum", lambda a, b: C.xp_of(a if hasattr(a, "shape") else b).minimum(a, b), _minmax_rule, x, y, "both")
    if out._node is not None:
        out._node.attrs = False
    return out


def _where_rule(ctx, g, saved):
    (c,) = saved
    mx, my = ctx.meta[1], ctx.meta[2]
    gx = None if mx is None else unb(C.where(c, g, 0.0), mx[0])
    gy = None if my is None else unb(C.where(c, 0.0, g), my[0])
    return None, gx, gy


def where(cond, x, y):
    """Elementwise ``x`` where ``cond`` else ``y``, with broadcasting.

    >>> mg.where(x > 0, x, 0.0)
    """
    c = cond.data if isinstance(cond, Tensor) else C.const(cond, "where")
    xd = x.data if isinstance(x, Tensor) else C.const(x, "where")
    yd = y.data if isinstance(y, Tensor) else C.const(y, "where")
    xp = C.xp_all("where", c, xd, yd)
    if hasattr(c, "dtype") and c.dtype != bool:
        c = c.astype(bool)
    try:
        out = C.timed("where", xp.where, c, xd, yd)
    except ValueError:
        raise ValueError(
            f"where: cond, x and y could not be broadcast together: shapes {C._shape_of(c)}, "
            f"{C._shape_of(xd)} and {C._shape_of(yd)}"
        ) from None
    # a bool cond Tensor is saved itself, so that writing it in place before backward is refused
    # rather than routing the gradient by the new mask
    keep = cond if isinstance(cond, Tensor) and c is cond.data else c
    return C.record("where", _where_rule, out, (cond, x, y), saved=(keep,))


def _clip_rule(ctx, g, saved):
    (x,) = saved
    lo, hi = ctx.attrs
    xd = C.data_of(x)
    m = True
    if lo is not None:
        m = xd >= lo
    if hi is not None:
        m = m & (xd <= hi)
    return (g * m,)


def clip(x, min=None, max=None):  # noqa: A002 - NumPy/PyTorch names
    """Clamp into [min, max] (either may be None); gradient 1 inside, bounds included."""
    x = _t(x)
    if min is None and max is None:
        raise ValueError("clip: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    xp = C.xp_of(x.data)
    return unary("clip", lambda a: xp.clip(a, min, max), _clip_rule, x, 1, attrs=(min, max))


clamp = clip


# -- comparisons and logic (no gradient) ----------------------------------------


def _cmp(name, f):
    def op(x, y):
        xd = x.data if isinstance(x, Tensor) else C.const(x, name)
        if y is None:
            return NotImplemented
        try:
            yd = y.data if isinstance(y, Tensor) else C.const(y, name)
        except TypeError:
            return NotImplemented
        if type(xd) is not type(yd):
            C.check_same_device(name, xd, yd)
        try:
            return _wrap(C.as_array_out(f(xd, yd)))
        except ValueError as e:
            if "broadcast" in str(e):
                raise ValueError(
                    f"{name}: operands could not be broadcast together: shapes {C._shape_of(xd)} and {C._shape_of(yd)}"
                ) from None
            raise

    op.__name__ = name
    return op


lt = _cmp("lt", operator.lt)
le = _cmp("le", operator.le)
gt = _cmp("gt", operator.gt)
ge = _cmp("ge", operator.ge)
eq = _cmp("eq", operator.eq)
ne = _cmp("ne", operator.ne)
logical_and = _cmp("and", operator.and_)
logical_or = _cmp("or", operator.or_)
logical_xor = _cmp("xor", operator.xor)


def logical_not(x):
    d = x.data
    return _wrap(C.as_array_out(~d if d.dtype.kind in "biu" else C.xp_of(d).logical_not(d)))


def isclose(x, y, rtol=1e-5, atol=1e-8):
    xd, yd = C.data_of(x), C.data_of(y)
    return _wrap(C.xp_of(xd).isclose(xd, yd, rtol=rtol, atol=atol))


def allclose(x, y, rtol=1e-5, atol=1e-8) -> bool:
    return bool(isclose(x, y, rtol, atol).data.all())


