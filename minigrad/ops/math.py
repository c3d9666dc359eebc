"""NumPy's remaining elementwise functions, one row each: the unary ufuncs (trigonometric,
hyperbolic, exponential, rounding...) and the binary ones (fmax, logaddexp, arctan2, hypot,
fmod, copysign, float_power), and NumPy's names for minigrad's own ops (``negative``,
``subtract``, ``power``...).

Forwards are ``xp.<name>``, so values and result dtypes are NumPy's. ``sign`` and the rounding
functions have a zero gradient: their results are recorded and require grad, as PyTorch's do.
"""
from __future__ import annotations

import math

import numpy as np

from .._xp import array_module
from ..engine import run_op
from ._registry import Sample, composite, defop, named, op_of, public, registry, row
from . import elementwise as _ew
from .elementwise import BINARY, UNARY, _binary_samples, _r, _unary_samples

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _zero_rule(ctx, g, **_):
    """A zero gradient (sign, floor, round...): a constant, so that no NaN or inf in g reaches it."""
    return (ctx.xp.zeros_like(g),)


def _uniform(lo, hi):
    return lambda rng: [Sample(rng.uniform(lo, hi, (3, 4))), Sample(rng.uniform(lo, hi, 5)),
                        Sample(np.asarray(rng.uniform(lo, hi)))]


def _away_from_ints(rng):
    def a(*shape):
        x = rng.standard_normal(shape) * 3
        return np.where(np.abs(x - np.round(x)) < 0.1, x + 0.25, x)  # floor/round are flat away from the steps
    return [Sample(a(3, 4)), Sample(a(5)), Sample(np.asarray(a()))]


def _numpy_of(target):
    """The NumPy functions that dispatch to ``target`` (a minigrad op's public function), taken from
    it: NumPy's own name for the op (``negative`` for ``neg``) takes them over."""
    of = registry()[op_of(target).name]
    fns, of.numpy = of.numpy, ()
    return fns


# -- unary -------------------------------------------------------------------------------------

@composite("negative", kind="elementwise", numpy=_numpy_of(_ew.neg), samples=_unary_samples(), complex=True)
@named("negative")
def negative(x):
    """-x, elementwise (NumPy's name for ``neg``)."""
    return _ew.neg(x)


@composite("absolute", kind="elementwise", numpy=_numpy_of(_ew.abs), samples=_unary_samples(away=0.0), complex=True)
@named("absolute")
def absolute(x):
    """|x|, elementwise (NumPy's name for ``abs``)."""
    return _ew.abs(x)
positive = row("positive", lambda xp, x: xp.positive(x), lambda ctx, g: (g,), family=UNARY, samples=_unary_samples(),
               torch=lambda th, x: th.positive(x).clone(), numpy=(np.positive,), complex=True)
fabs = row("fabs", lambda xp, x: xp.fabs(x), lambda ctx, g: (g * ctx.xp.sign(ctx.saved[0]),), family=UNARY, save=(0,),
           samples=_unary_samples(away=0.0), torch=lambda th, x: th.abs(x), numpy=(np.fabs,))
reciprocal = row("reciprocal", lambda xp, x: xp.reciprocal(x), lambda ctx, g: (-g * ctx.out * ctx.out,), family=UNARY,
                 save_out=True, samples=_unary_samples(low=0.3), numpy=(np.reciprocal,), complex="holomorphic")
square = row("square", lambda xp, x: xp.square(x), lambda ctx, g: (ctx.xp.scaled_mul(g, ctx.saved[0], c=2.0),),
             family=UNARY, save=(0,), samples=_unary_samples(), numpy=(np.square,), complex="holomorphic")
cbrt = row("cbrt", lambda xp, x: xp.cbrt(x), lambda ctx, g: (g / (ctx.out * ctx.out * 3.0),), family=UNARY,
           save_out=True, samples=_unary_samples(away=0.0), torch=lambda th, x: th.sign(x) * x.abs() ** (1 / 3),
           numpy=(np.cbrt,))
exp2 = row("exp2", lambda xp, x: xp.exp2(x), lambda ctx, g: (g * ctx.out * _LN2,), family=UNARY, save_out=True,
           samples=_unary_samples(), numpy=(np.exp2,), complex="holomorphic")
expm1 = row("expm1", lambda xp, x: xp.expm1(x), lambda ctx, g: (g * (ctx.out + 1.0),), family=UNARY, save_out=True,
            samples=_unary_samples(), numpy=(np.expm1,), complex="holomorphic")
log2 = row("log2", lambda xp, x: xp.log2(x), lambda ctx, g: (g / (ctx.saved[0] * _LN2),), family=UNARY, save=(0,),
           samples=_unary_samples(low=0.2), numpy=(np.log2,), complex="holomorphic")
log10 = row("log10", lambda xp, x: xp.log10(x), lambda ctx, g: (g / (ctx.saved[0] * _LN10),), family=UNARY, save=(0,),
            samples=_unary_samples(low=0.2), numpy=(np.log10,), complex="holomorphic")
tan = row("tan", lambda xp, x: xp.tan(x), lambda ctx, g: (g * (ctx.out * ctx.out + 1.0),), family=UNARY, save_out=True,
          samples=_uniform(-1.2, 1.2), numpy=(np.tan,), complex="holomorphic")
arcsin = row("arcsin", lambda xp, x: xp.arcsin(x), lambda ctx, g: (g / ctx.xp.sqrt(1.0 - ctx.saved[0] * ctx.saved[0]),),
             family=UNARY, save=(0,), samples=_uniform(-0.9, 0.9), numpy=(np.arcsin,), complex="holomorphic")
arccos = row("arccos", lambda xp, x: xp.arccos(x),
             lambda ctx, g: (-g / ctx.xp.sqrt(1.0 - ctx.saved[0] * ctx.saved[0]),), family=UNARY, save=(0,),
             samples=_uniform(-0.9, 0.9), numpy=(np.arccos,), complex="holomorphic")
arctan = row("arctan", lambda xp, x: xp.arctan(x), lambda ctx, g: (g / (ctx.saved[0] * ctx.saved[0] + 1.0),),
             family=UNARY, save=(0,), samples=_unary_samples(), numpy=(np.arctan,), complex="holomorphic")
sinh = row("sinh", lambda xp, x: xp.sinh(x), lambda ctx, g: (g * ctx.xp.cosh(ctx.saved[0]),), family=UNARY, save=(0,),
           samples=_unary_samples(), numpy=(np.sinh,), complex="holomorphic")
cosh = row("cosh", lambda xp, x: xp.cosh(x), lambda ctx, g: (g * ctx.xp.sinh(ctx.saved[0]),), family=UNARY, save=(0,),
           samples=_unary_samples(), numpy=(np.cosh,), complex="holomorphic")
arcsinh = row("arcsinh", lambda xp, x: xp.arcsinh(x),
              lambda ctx, g: (g / ctx.xp.sqrt(ctx.saved[0] * ctx.saved[0] + 1.0),), family=UNARY, save=(0,),
              samples=_unary_samples(), numpy=(np.arcsinh,), complex="holomorphic")
arccosh = row("arccosh", lambda xp, x: xp.arccosh(x),
              lambda ctx, g: (g / (ctx.xp.sqrt(ctx.saved[0] - 1.0) * ctx.xp.sqrt(ctx.saved[0] + 1.0)),), family=UNARY,
              save=(0,),
              samples=_unary_samples(low=1.2), numpy=(np.arccosh,), complex="holomorphic")
arctanh = row("arctanh", lambda xp, x: xp.arctanh(x), lambda ctx, g: (g / (1.0 - ctx.saved[0] * ctx.saved[0]),),
              family=UNARY, save=(0,), samples=_uniform(-0.9, 0.9), numpy=(np.arctanh,), complex="holomorphic")
deg2rad = row("deg2rad", lambda xp, x: xp.deg2rad(x), lambda ctx, g: (g * (math.pi / 180),), family=UNARY,
              samples=_unary_samples(), numpy=(np.deg2rad,))
rad2deg = row("rad2deg", lambda xp, x: xp.rad2deg(x), lambda ctx, g: (g * (180 / math.pi),), family=UNARY,
              samples=_unary_samples(), numpy=(np.rad2deg,))
radians = row("radians", lambda xp, x: xp.radians(x), lambda ctx, g: (g * (math.pi / 180),), family=UNARY,
              samples=_unary_samples(), torch=lambda th, x: th.deg2rad(x), numpy=(np.radians,))
degrees = row("degrees", lambda xp, x: xp.degrees(x), lambda ctx, g: (g * (180 / math.pi),), family=UNARY,
              samples=_unary_samples(), torch=lambda th, x: th.rad2deg(x), numpy=(np.degrees,))


def _sinc_rule(ctx, g):
    (x,) = ctx.saved  # d/dx sin(pi x)/(pi x) = (cos(pi x) - sinc(x)) / x, and 0 at x == 0
    xp = ctx.xp
    zero = x == 0
    safe = xp.where(zero, 1.0, x)
    return (xp.where(zero, 0.0, g * (xp.cos(safe * math.pi) - ctx.out) / safe),)


SINC = defop("sinc", lambda xp, x: xp.sinc(x), _sinc_rule, save=(0,), save_out=True, kind="elementwise",
             samples=_unary_samples(away=0.0), torch=lambda th, x: th.sinc(x), complex="holomorphic")


@public(SINC, numpy=(np.sinc,))
def sinc(x):
    """sin(pi x) / (pi x), and 1 at 0 (NumPy's normalised sinc), elementwise."""
    return run_op(SINC, x)


# the rounding functions: a zero gradient (recorded, as PyTorch's), values and dtypes as NumPy's
floor = row("floor", lambda xp, x: xp.floor(x), _zero_rule, family=UNARY, samples=_away_from_ints, method="floor",
            numpy=(np.floor,))
ceil = row("ceil", lambda xp, x: xp.ceil(x), _zero_rule, family=UNARY, samples=_away_from_ints, method="ceil",
           numpy=(np.ceil,))
trunc = row("trunc", lambda xp, x: xp.trunc(x), _zero_rule, family=UNARY, samples=_away_from_ints, method="trunc",
            numpy=(np.trunc,))
rint = row("rint", lambda xp, x: xp.rint(x), _zero_rule, family=UNARY, samples=_away_from_ints,
           torch=lambda th, x: th.round(x), numpy=(np.rint,))

ROUND = defop("round", lambda xp, x, decimals=0: xp.round(x, decimals), _zero_rule, kind="elementwise",
              samples=lambda rng: _away_from_ints(rng) + [Sample(_away_from_ints(rng)[0].args[0] / 10, decimals=1)],
              torch=lambda th, x, decimals=0: th.round(x, decimals=decimals))


@public(ROUND, method="round", numpy=(np.round, np.around))
def round(x, decimals=0):  # noqa: A001 - NumPy's name
    """Round half to even to ``decimals`` places (NumPy's ``round``); a zero gradient."""
    return run_op(ROUND, x, decimals=decimals)


# -- binary ------------------------------------------------------------------------------------

@composite("subtract", kind="elementwise", numpy=_numpy_of(_ew.sub), samples=_binary_samples, complex=True)
@named("subtract")
def subtract(x, y):
    """x - y with broadcasting (NumPy's name for ``sub``)."""
    return _ew.sub(x, y)


@composite("multiply", kind="elementwise", numpy=_numpy_of(_ew.mul), samples=_binary_samples, complex=True)
@named("multiply")
def multiply(x, y):
    """x * y with broadcasting (NumPy's name for ``mul``)."""
    return _ew.mul(x, y)


@composite("divide", kind="elementwise", numpy=_numpy_of(_ew.div), samples=lambda rng: _binary_samples(rng, low=0.5), complex=True)
@named("divide")
def divide(x, y):
    """x / y, true division (NumPy's name for ``div``; also ``mg.true_divide``)."""
    return _ew.div(x, y)


@composite("true_divide", kind="elementwise", samples=lambda rng: _binary_samples(rng, low=0.5), complex=True)
@named("true_divide")
def true_divide(x, y):
    """x / y, true division (NumPy's name for ``div``; ``np.true_divide`` is ``np.divide``)."""
    return _ew.div(x, y)


@composite("power", kind="elementwise", numpy=_numpy_of(_ew.pow), samples=lambda rng: _binary_samples(rng, low=0.5), complex=True)
@named("power")
def power(x, y):
    """x ** y with broadcasting (NumPy's name for ``pow``)."""
    return _ew.pow(x, y)


@composite("remainder", kind="elementwise", numpy=_numpy_of(_ew.mod),
           samples=lambda rng: [Sample(_r(rng, 3, 4, low=0.3) * 3, _r(rng, 3, 4, low=0.7))])
@named("remainder")
def remainder(x, y):
    """x % y, NumPy's sign convention (NumPy's name for ``mod``)."""
    return _ew.mod(x, y)


FLOAT_POWER = defop("float_power", lambda xp, x, y: xp.float_power(x, y), _ew._pow_rule, save=(0, 1), broadcast=True,
                    kind="elementwise", ufunc="float_power", torch=lambda th, x, y: th.float_power(x, y),
                    samples=lambda rng: _binary_samples(rng, low=0.5) + [Sample(_r(rng, 3, 4), 2)], complex="holomorphic")


@public(FLOAT_POWER, numpy=(np.float_power,))
def float_power(x, y):
    """x ** y computed in float64 (NumPy's ``float_power``: the result is float64)."""
    return run_op(FLOAT_POWER, x, y)


def _th(name):
    """The torch oracle of a binary function whose torch form wants two tensors."""
    return lambda th, x, y: getattr(th, name)(x, y if isinstance(y, th.Tensor) else th.tensor(y, dtype=x.dtype))


def _fextremum_rule(ctx, g, bigger):
    x, y = ctx.saved  # as maximum / minimum, and a NaN loses: the other operand takes the gradient
    xp = ctx.xp
    tie = x == y
    half = g * 0.5
    wins_x = ((x > y) if bigger else (x < y)) | (xp.isnan(y) & ~xp.isnan(x))
    wins_y = ((y > x) if bigger else (y < x)) | (xp.isnan(x) & ~xp.isnan(y))
    gx = xp.where(wins_x, g, xp.where(tie, half, 0.0)) if ctx.parents[0] is not None else None
    gy = xp.where(wins_y, g, xp.where(tie, half, 0.0)) if ctx.parents[1] is not None else None
    return gx, gy


def _distinct(rng):
    return [Sample(_r(rng, 3, 4), _r(rng, 3, 4) + 0.05), Sample(_r(rng, 2, 3), _r(rng, 3) + 0.05)]


fmax = row("fmax", lambda xp, x, y: xp.fmax(x, y), lambda ctx, g: _fextremum_rule(ctx, g, True), family=BINARY,
           samples=_distinct, torch=_th("fmax"), numpy=(np.fmax,),
           doc="Elementwise maximum ignoring NaN; ties split the gradient evenly.")
fmin = row("fmin", lambda xp, x, y: xp.fmin(x, y), lambda ctx, g: _fextremum_rule(ctx, g, False), family=BINARY,
           samples=_distinct, torch=_th("fmin"), numpy=(np.fmin,),
           doc="Elementwise minimum ignoring NaN; ties split the gradient evenly.")


def _logaddexp_rule(ctx, g, base2=False):
    x, y = ctx.saved
    xp, out = ctx.xp, ctx.out
    f = xp.exp2 if base2 else xp.exp
    return (g * f(x - out) if ctx.parents[0] is not None else None,
            g * f(y - out) if ctx.parents[1] is not None else None)


logaddexp = row("logaddexp", lambda xp, x, y: xp.logaddexp(x, y), _logaddexp_rule, family=BINARY, save_out=True,
                samples=_binary_samples, torch=_th("logaddexp"), numpy=(np.logaddexp,),
                doc="log(exp(x) + exp(y)), computed stably.")
logaddexp2 = row("logaddexp2", lambda xp, x, y: xp.logaddexp2(x, y), lambda ctx, g: _logaddexp_rule(ctx, g, True),
                 family=BINARY, save_out=True, samples=_binary_samples, torch=_th("logaddexp2"), numpy=(np.logaddexp2,),
                 doc="log2(2**x + 2**y), computed stably.")


def _arctan2_rule(ctx, g):
    y, x = ctx.saved  # arctan2(y, x): d/dy = x / (x² + y²), d/dx = -y / (x² + y²)
    r2 = g / (x * x + y * y)
    return (r2 * x if ctx.parents[0] is not None else None, -r2 * y if ctx.parents[1] is not None else None)


arctan2 = row("arctan2", lambda xp, x, y: xp.arctan2(x, y), _arctan2_rule, family=BINARY,
              samples=lambda rng: _binary_samples(rng, low=0.3), torch=_th("arctan2"), numpy=(np.arctan2,),
              doc="The angle of the point (x2, x1): arctan(x1 / x2) in the right quadrant.")


def _hypot_rule(ctx, g):
    x, y = ctx.saved
    q = g / ctx.out
    return (q * x if ctx.parents[0] is not None else None, q * y if ctx.parents[1] is not None else None)


hypot = row("hypot", lambda xp, x, y: xp.hypot(x, y), _hypot_rule, family=BINARY, save_out=True,
            samples=lambda rng: _binary_samples(rng, low=0.3), torch=_th("hypot"), numpy=(np.hypot,),
            doc="sqrt(x² + y²), elementwise.")


def _copysign_rule(ctx, g):
    x, _ = ctx.saved
    xp = ctx.xp
    return (g * xp.sign(x) * xp.sign(ctx.out) if ctx.parents[0] is not None else None,
            xp.zeros_like(g) if ctx.parents[1] is not None else None)


copysign = row("copysign", lambda xp, x, y: xp.copysign(x, y), _copysign_rule, family=BINARY, save_out=True,
               samples=lambda rng: [Sample(_r(rng, 3, 4, away=0.0), _r(rng, 3, 4, away=0.0)),
                                    Sample(_r(rng, 4, away=0.0), -1.0)],
               torch=_th("copysign"), numpy=(np.copysign,), doc="|x| with the sign of y; the gradient in y is 0.")



# -- predicates (bool results, not differentiable; rules use isnan) -------------------------------


isnan = row("isnan", lambda xp, x: xp.isnan(x), family=UNARY, method="isnan", numpy=(np.isnan,),
            doc="Where x is NaN (a bool tensor).", complex=True)
isinf = row("isinf", lambda xp, x: xp.isinf(x), family=UNARY, method="isinf", numpy=(np.isinf,),
            doc="Where x is +inf or -inf (a bool tensor).", complex=True)
isfinite = row("isfinite", lambda xp, x: xp.isfinite(x), family=UNARY, method="isfinite", numpy=(np.isfinite,),
               doc="Where x is neither NaN nor infinite (a bool tensor).", complex=True)
signbit = row("signbit", lambda xp, x: xp.signbit(x), family=UNARY, method=(), numpy=(np.signbit,),
              doc="Where the sign bit is set (-0.0 included; a bool tensor).")


_NOTES = {
    "positive": "+x (a copy); gradient 1.",
    "fabs": "|x| as a float; gradient sign(x), 0 at 0.",
    "reciprocal": "1 / x (NumPy's: integer division for integers); gradient -1/x².",
    "square": "x²; gradient 2x.",
    "cbrt": "The real cube root; gradient 1 / (3 cbrt(x)²), infinite at 0.",
    "exp2": "2**x; gradient 2**x log 2.",
    "expm1": "exp(x) - 1, accurate for small x; gradient exp(x).",
    "log2": "Base-2 logarithm; gradient 1 / (x log 2).",
    "log10": "Base-10 logarithm; gradient 1 / (x log 10).",
    "tan": "tan(x); gradient 1 + tan²(x).",
    "arcsin": "arcsin(x) on [-1, 1]; gradient 1/sqrt(1 - x²), infinite at ±1.",
    "arccos": "arccos(x) on [-1, 1]; gradient -1/sqrt(1 - x²), infinite at ±1.",
    "arctan": "arctan(x); gradient 1/(1 + x²).",
    "sinh": "sinh(x); gradient cosh(x).",
    "cosh": "cosh(x); gradient sinh(x).",
    "arcsinh": "arcsinh(x); gradient 1/sqrt(x² + 1).",
    "arccosh": "arccosh(x) for x >= 1; gradient 1/sqrt(x² - 1), infinite at 1.",
    "arctanh": "arctanh(x) on (-1, 1); gradient 1/(1 - x²).",
    "deg2rad": "Degrees to radians; gradient pi/180.",
    "rad2deg": "Radians to degrees; gradient 180/pi.",
    "radians": "Degrees to radians (``deg2rad``); gradient pi/180.",
    "degrees": "Radians to degrees (``rad2deg``); gradient 180/pi.",
    "floor": "The largest integer <= x (NumPy's dtype); a zero gradient (recorded, as PyTorch's).",
    "ceil": "The smallest integer >= x; a zero gradient.",
    "trunc": "x rounded toward zero; a zero gradient.",
    "rint": "x rounded half to even; a zero gradient.",
}
for _name, _note in _NOTES.items():
    globals()[_name].__doc__ = registry()[_name].doc = _note


# -- erf, erfc, erfinv (no SciPy: Cody's rational approximations, every step an array op) ----------

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


_SMALL = 0.46875


def _cody(x, xp):
    """Cody's pieces of float64 ``x``: ``(y, erf(y) for y <= 0.46875, erfc(y) for y > 0.46875)``, ``y = |x|``."""
    y = xp.abs(x)
    ysq = y * y  # |x| <= 0.46875: erf(y) = y P(y^2) / Q(y^2)
    num = _ERF_A[4] * ysq
    den = ysq
    for i in range(3):
        num = (num + _ERF_A[i]) * ysq
        den = (den + _ERF_B[i]) * ysq
    small = y * (num + _ERF_A[3]) / (den + _ERF_B[3])
    num = _ERF_C[8] * y  # 0.46875 < |x| <= 4: erfc(y) = exp(-y^2) P(y) / Q(y)
    den = y
    for i in range(7):
        num = (num + _ERF_C[i]) * y
        den = (den + _ERF_D[i]) * y
    mid = (num + _ERF_C[7]) / (den + _ERF_D[7])
    yl = xp.maximum(y, 4.0)  # |x| > 4: erfc(y) = exp(-y^2) / y (1 / sqrt(pi) + P(1/y^2) / (y^2 Q(1/y^2)))
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
    return y, small, scale * xp.where(y <= 4.0, mid, large)


def _as64(x):
    return x.astype(np.float64) if x.dtype != np.float64 else x


def _fdtype(x):
    """The result dtype of a special function of ``x`` (PyTorch's names): its own when floating, else the
    default float dtype (``mg.get_default_dtype()``), as PyTorch's for an integer tensor."""
    from ..tensor import get_default_dtype

    return x.dtype if x.dtype.kind == "f" else np.dtype(get_default_dtype())


def _erfc_cody(x):
    """erfc(x) elementwise on a NumPy/CuPy float array, to a few ulps in float64 (Cody's three ranges)."""
    xp = array_module(x)
    x64 = _as64(x)
    y, small, tail = _cody(x64, xp)
    pos = xp.where(y <= _SMALL, 1.0 - small, tail)  # erfc(|x|)
    return xp.where(x64 < 0, 2.0 - pos, pos).astype(_fdtype(x), copy=False)


def _erf_cody(x):
    """erf(x) elementwise (Cody's: y P/Q near 0, 1 - erfc(|x|) beyond, with x's sign)."""
    xp = array_module(x)
    x64 = _as64(x)
    y, small, tail = _cody(x64, xp)
    out = xp.where(y <= _SMALL, small, 1.0 - tail)
    return xp.where(x64 < 0, -out, out).astype(_fdtype(x), copy=False)


_TWO_OVER_SQRTPI = 2.0 / math.sqrt(math.pi)


def _erfinv_fwd(xp, x):
    """erfinv: Giles' single-precision approximation ("Approximating the erfinv function", 2010), then
    Newton steps on erf (erfc near ±1, where 1 - |x| is exact and erf has no digits left)."""
    x64 = _as64(x)
    z = xp.abs(x64)
    inside = z < 1.0
    zc = xp.where(inside, z, 0.0)
    w = -xp.log((1.0 - zc) * (1.0 + zc))
    wa = w - 2.5
    pa = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        pa = c + pa * wa
    wb = xp.sqrt(w) - 3.0
    pb = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        pb = c + pb * wb
    y = xp.where(w < 5.0, pa, pb) * zc
    near_one = zc > 0.5
    for _ in range(3):  # quadratic convergence: float64 to a few ulps
        _, small, tail = _cody(y, xp)
        erf_y = xp.where(y <= _SMALL, small, 1.0 - tail)
        slope = _TWO_OVER_SQRTPI * xp.exp(-y * y)  # erf'(y)
        # near 1, Newton on log erfc(y) = log(1 - z) (nearly linear there, where erfc itself is exponential)
        safe = xp.where(near_one, tail, 1.0)
        step_one = (xp.log(safe) - xp.log(xp.where(near_one, 1.0 - zc, 1.0))) * safe / slope
        y = y - xp.where(near_one, -step_one, (erf_y - zc) / slope)
    y = xp.where(inside, y, xp.where(z == 1.0, np.inf, np.nan))
    return xp.where(x64 < 0, -y, y).astype(_fdtype(x), copy=False)


erf = row("erf", lambda xp, x: _erf_cody(x),
          lambda ctx, g: (g * ctx.xp.exp(-ctx.saved[0] * ctx.saved[0]) * _TWO_OVER_SQRTPI,), family=UNARY, save=(0,),
          samples=lambda rng: [Sample(_r(rng, 3, 4) * 2), Sample(_r(rng, 5) * 0.3), Sample(_r(rng))],
          doc="The error function erf(x) = 2/sqrt(pi) int_0^x exp(-t²) dt (no SciPy needed); gradient "
              "2/sqrt(pi) exp(-x²).")
erfc = row("erfc", lambda xp, x: _erfc_cody(x),
           lambda ctx, g: (g * ctx.xp.exp(-ctx.saved[0] * ctx.saved[0]) * -_TWO_OVER_SQRTPI,), family=UNARY, save=(0,),
           samples=lambda rng: [Sample(_r(rng, 3, 4) * 2), Sample(_r(rng, 5) * 0.3), Sample(_r(rng))],
           doc="1 - erf(x), accurate where erf(x) is near 1; gradient -2/sqrt(pi) exp(-x²).")
erfinv = row("erfinv", _erfinv_fwd, lambda ctx, g: (g * ctx.xp.exp(ctx.out * ctx.out) * (1.0 / _TWO_OVER_SQRTPI),),
             family=UNARY, save_out=True, samples=_uniform(-0.95, 0.95),
             doc="The inverse of erf on (-1, 1) (±inf at ±1, NaN beyond); gradient sqrt(pi)/2 exp(erfinv(x)²).")


# -- lgamma, digamma, polygamma (no SciPy: reflection below 1/2, the recurrence up to 12, then the
# asymptotic series; every step an array op, so NumPy and CuPy alike) -------------------------------

_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330)
_ASYM = 12.0  # the series from here on (12 + n for polygamma n), to an ulp or two in float64


def _abs_sinpi(xp, x):
    return xp.abs(xp.sin(math.pi * (x - xp.round(x))))  # |sin(pi x)| without pi x's rounding: 0 at the integers


def _cotpi(xp, x):
    r = x - xp.round(x)
    return xp.cos(math.pi * r) / xp.sin(math.pi * r)


def _shift(xp, x, until, each):
    """``x`` moved up by whole steps to ``until`` or beyond (``x >= 0.5``), and the sum of ``each(s)`` over
    the values it passed."""
    acc = xp.zeros_like(x)
    for _ in range(int(math.ceil(until - 0.5))):
        low = x < until
        acc = acc + xp.where(low, each(x), 0.0)
        x = xp.where(low, x + 1.0, x)
    return x, acc


def _lgamma_fwd(xp, x):
    """log |Gamma(x)|: Stirling's series beyond 12, the recurrence below, the reflection below 1/2."""
    x64 = _as64(x)
    refl = x64 < 0.5
    z = xp.where(refl, 1.0 - x64, x64)
    s, logs = _shift(xp, z, _ASYM, xp.log)
    inv, inv2 = 1.0 / s, 1.0 / (s * s)
    series = 0.0
    for k in range(8, 0, -1):  # sum B_2k / (2k (2k - 1) s^(2k - 1)), by Horner in 1/s^2
        series = series * inv2 + _B2K[k - 1] / (2 * k * (2 * k - 1))
    out = (s - 0.5) * xp.log(s) - s + 0.5 * math.log(2 * math.pi) + series * inv - logs
    out = xp.where(refl, math.log(math.pi) - xp.log(_abs_sinpi(xp, xp.where(refl, x64, 0.5))) - out, out)
    out = xp.where((x64 == 1.0) | (x64 == 2.0), 0.0, out)  # exactly, as PyTorch's
    return xp.where(xp.isinf(x64), np.inf, out).astype(_fdtype(x), copy=False)


def _cot_derivative(n):
    """The coefficients (lowest first) of the polynomial Q_n with d^n/dx^n cot(pi x) = Q_n(cot(pi x))."""
    q = np.polynomial.Polynomial([0.0, 1.0])
    for _ in range(n):
        q = q.deriv() * np.polynomial.Polynomial([-math.pi, 0.0, -math.pi])  # (cot)' = -pi (1 + cot^2)
    return q.coef


def _polygamma_fwd(xp, x, n):
    """The n-th derivative of digamma: the asymptotic series beyond 12 + n, the recurrence
    psi_n(x) = psi_n(x + 1) - (-1)^n n! / x^(n+1) below, and the reflection
    psi_n(x) = (-1)^n psi_n(1 - x) - pi d^n/dx^n cot(pi x) below 1/2."""
    x64 = _as64(x)
    refl = x64 < 0.5
    z = xp.where(refl, 1.0 - x64, x64)
    fact = math.factorial(n)
    s, acc = _shift(xp, z, _ASYM + n, lambda v: 1.0 / v ** (n + 1))
    inv, inv2 = 1.0 / s, 1.0 / (s * s)
    if n == 0:
        series = 0.0
        for k in range(8, 0, -1):  # log s - 1/(2s) - sum B_2k / (2k s^2k)
            series = series * inv2 + _B2K[k - 1] / (2 * k)
        out = xp.log(s) - 0.5 * inv - series * inv2
    else:
        series = 0.0
        for k in range(10, 0, -1):  # sum B_2k (2k + n - 1)! / ((2k)! s^(2k + n))
            series = series * inv2 + _B2K[k - 1] * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        out = (math.factorial(n - 1) + 0.5 * fact * inv + series * inv2) * inv ** n * (-1) ** (n + 1)
    out = out - (-1) ** n * fact * acc
    c = _cotpi(xp, xp.where(refl, x64, 0.5))
    cot_n = 0.0
    for coef in _cot_derivative(n)[::-1]:
        cot_n = cot_n * c + coef
    out = xp.where(refl, (-1) ** n * out - math.pi * cot_n, out)
    pole = (x64 <= 0) & (x64 == xp.floor(x64))
    if n == 0:  # PyTorch's: -inf at 0, NaN at the negative integers, inf at inf
        out = xp.where(pole, xp.where(x64 == 0, -np.inf, np.nan), out)
        out = xp.where(x64 == np.inf, np.inf, out)
    else:  # PyTorch's sign of infinity at every pole
        out = xp.where(pole, (-1) ** (n + 1) * np.inf, out)
    return out.astype(_fdtype(x), copy=False)


def _polygamma_rule(ctx, g, n):
    return (g * ctx.xp.polygamma(ctx.saved[0], n=n + 1),)


def _gamma_samples(rng):
    return [Sample(rng.uniform(0.2, 15.0, (3, 4))), Sample(-rng.integers(0, 3, 5) - rng.uniform(0.15, 0.85, 5)),
            Sample(np.asarray(rng.uniform(1.0, 30.0)))]


def _shifted_torch(th, x, n):
    """PyTorch's polygamma(n, x), moved to x + 10 by the exact recurrence: its trigamma (and so digamma's
    gradient) is good to ~5e-10 only below 10 (minigrad's is checked against mpmath in tests/test_torch_math.py)."""
    return th.polygamma(n, x + 10) - (-1) ** n * math.factorial(n) * sum((x + k) ** -(n + 1) for k in range(10))


lgamma = row("lgamma", _lgamma_fwd, lambda ctx, g: (g * ctx.xp.polygamma(ctx.saved[0], n=0),), family=UNARY,
             save=(0,), samples=_gamma_samples,
             doc="log |Gamma(x)| (PyTorch's ``lgamma``; inf at the poles; no SciPy needed); gradient digamma(x).")

POLYGAMMA = defop("polygamma", _polygamma_fwd, _polygamma_rule, save=(0,), kind="elementwise",
                  torch=_shifted_torch,
                  samples=lambda rng: [Sample(s.args[0], n=n) for n in (0, 1, 3) for s in _gamma_samples(rng)[:2]])


@public(POLYGAMMA, method="polygamma")
@named("polygamma")
def polygamma(n, input):  # noqa: A002 - PyTorch's names and order
    """PyTorch's ``polygamma(n, input)``: the n-th derivative of digamma (n = 0: digamma itself); its
    gradient is polygamma(n + 1). No SciPy needed. The method is PyTorch's too: ``t.polygamma(n)``."""
    from ..tensor import Tensor

    if isinstance(n, Tensor) and not isinstance(input, Tensor):  # the method, t.polygamma(n)
        n, input = input, n
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise TypeError(f"polygamma: n must be a non-negative int, got {type(n).__name__} {n!r}")
    from ..creation import as_tensor

    return run_op(POLYGAMMA, as_tensor(input, "polygamma"), n=int(n))


@composite("digamma", kind="elementwise", method="digamma", samples=_gamma_samples,
           torch=lambda th, x: _shifted_torch(th, x, 0))
@named("digamma")
def digamma(input):  # noqa: A002
    """PyTorch's ``digamma``: d/dx lgamma(x) (-inf at 0, NaN at the negative integers, as PyTorch's);
    gradient polygamma(1, x)."""
    return polygamma(0, input)


# -- PyTorch's math names (composites of the ops above, or one row) ------------------------------

def _rsqrt_fwd(xp, x):
    return 1.0 / xp.sqrt(x if x.dtype.kind in "fc" else x.astype(_fdtype(x)))  # an integer tensor: PyTorch's float dtype


rsqrt = row("rsqrt", _rsqrt_fwd, lambda ctx, g: (g * ctx.out * ctx.out * ctx.out * -0.5,), family=UNARY,
            save_out=True, samples=_unary_samples(low=0.2),
            doc="PyTorch's ``rsqrt``: 1 / sqrt(x); gradient -1/2 x^(-3/2).", complex="holomorphic")


@composite("atan2", kind="elementwise", method="atan2", samples=lambda rng: _binary_samples(rng, low=0.3),
           torch=_th("atan2"))
@named("atan2")
def atan2(input, other):  # noqa: A002 - PyTorch's names
    """PyTorch's name for ``arctan2(input, other)``: the angle of the point (other, input)."""
    return arctan2(input, other)


def _logit_torch(th, x, eps=None):
    return th.logit(x, eps)


@composite("logit", kind="elementwise", method="logit", torch=_logit_torch,
           samples=lambda rng: [Sample(rng.uniform(0.05, 0.95, (3, 4))), Sample(rng.uniform(0.05, 0.95, 5)),
                                Sample(np.array([0.02, 0.3, 0.5, 0.97, 0.8]), eps=0.1)])
@named("logit")
def logit(input, eps=None):  # noqa: A002
    """PyTorch's ``logit``: log(x / (1 - x)); with ``eps``, x is clamped to [eps, 1 - eps] first (its
    gradient 0 outside, as PyTorch's)."""
    from ..creation import as_tensor

    x = as_tensor(input, "logit")
    if x.dtype.kind != "f":
        x = x.astype(_fdtype(x))  # PyTorch's: an integer tensor's logit in the default float dtype
    if eps is not None:
        x = _ew.clip(x, float(eps), 1.0 - float(eps))
    return _ew.log(x / (1.0 - x))


def _lerp_torch(th, x, end, weight):
    return th.lerp(x, end, weight if isinstance(weight, th.Tensor) else float(weight))


@composite("lerp", kind="elementwise", method="lerp", torch=_lerp_torch,
           samples=lambda rng: [Sample(_r(rng, 3, 4), _r(rng, 3, 4), 0.3),
                                Sample(_r(rng, 3, 4), _r(rng, 4), _r(rng, 3, 1)),
                                Sample(_r(rng, 4), _r(rng, 4), _r(rng, 4))], complex=True)
@named("lerp")
def lerp(input, end, weight):  # noqa: A002
    """PyTorch's ``lerp``: input + weight (end - input), weight a number or a tensor (broadcast)."""
    return input + weight * (end - input)


def _addc_samples(rng, low=None):
    return [Sample(_r(rng, 3, 4), _r(rng, 3, 4), _r(rng, 3, 4, low=low)),
            Sample(_r(rng, 3, 4), _r(rng, 4), _r(rng, 3, 1, low=low), value=-0.5),
            Sample(_r(rng, 4), _r(rng, 2, 4), _r(rng, 4, low=low), value=2)]


def _value(value, op):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{op}: value must be a number, got {type(value).__name__} {value!r}")
    return value


@composite("addcmul", kind="elementwise", method="addcmul", samples=_addc_samples,
           torch=lambda th, x, a, b, value=1: th.addcmul(x, a, b, value=value), complex=True)
@named("addcmul")
def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """PyTorch's ``addcmul``: input + value * tensor1 * tensor2 (broadcast)."""
    value = _value(value, "addcmul")
    return input + (tensor1 * tensor2 if value == 1 else value * tensor1 * tensor2)


@composite("addcdiv", kind="elementwise", method="addcdiv", samples=lambda rng: _addc_samples(rng, low=0.5),
           torch=lambda th, x, a, b, value=1: th.addcdiv(x, a, b, value=value), complex=True)
@named("addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """PyTorch's ``addcdiv``: input + value * tensor1 / tensor2 (broadcast)."""
    value = _value(value, "addcdiv")
    return input + (tensor1 / tensor2 if value == 1 else value * tensor1 / tensor2)


def _nan_to_num_samples(rng):
    x = _r(rng, 3, 4)
    x[0, 1], x[1, 2], x[2, 3] = np.nan, np.inf, -np.inf
    only_nan = np.where(np.isinf(x), 0.5, x)  # the default posinf (the largest float) would overflow the test's sums
    return [Sample(only_nan), Sample(x, nan=1.5, posinf=9.0, neginf=-9.0), Sample(_r(rng, 5), 0.0, 2.0)]


@composite("nan_to_num", kind="elementwise", method="nan_to_num", samples=_nan_to_num_samples,
           torch=lambda th, x, nan=0.0, posinf=None, neginf=None: th.nan_to_num(x, nan, posinf, neginf))
@named("nan_to_num")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """PyTorch's ``nan_to_num``: NaN -> ``nan``, +inf -> ``posinf`` (default the dtype's largest), -inf ->
    ``neginf`` (its smallest); the gradient is 1 at finite elements and 0 at replaced ones."""
    from ..creation import as_tensor

    x = as_tensor(input, "nan_to_num")
    if x.dtype.kind != "f":
        return x.clone()
    fi = np.finfo(x.dtype)
    hi = float(fi.max) if posinf is None else float(posinf)
    lo = float(fi.min) if neginf is None else float(neginf)
    out = _ew.where(isnan(x), float(nan), x)
    out = _ew.where(x == np.inf, hi, out)
    return _ew.where(x == -np.inf, lo, out)
