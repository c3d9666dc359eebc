"""The dtype casts Tensor methods name after a dtype (``x.float()``, ``x.double()``, ``x.long()``,
``x.int()``, ``x.short()``, ``x.half()``, ``x.bool()``):
rows of one family, each ``astype`` to its dtype, no op of their own; and PyTorch's ``type_as``
(``astype`` to another tensor's dtype)."""
from __future__ import annotations

import numpy as np

from ._registry import Family, Sample, composite, named, randn, row


def _cast_fn(op, name, dtype):
    def cast(x, *args, **kwargs):
        if args or kwargs:  # Python's own arity error would name ``_cast_fn.<locals>.cast``
            got = [type(a).__name__ for a in args] + [f"{k}=" for k in kwargs]
            raise TypeError(f"{name}: takes no arguments (it casts to {np.dtype(dtype).name}; "
                            f"use astype(dtype) for another dtype), got {', '.join(got)}")
        return x.astype(dtype)

    cast.__doc__ = f"Cast to {np.dtype(dtype).name} (``astype``)."
    return cast


CAST = Family("cast", _cast_fn, reads=("dtype",))  # Tensor's methods named after a dtype: astype, no op of their own

float_ = row("float", family=CAST, dtype=np.float32, export=False)
double = row("double", family=CAST, dtype=np.float64, export=False)
long = row("long", family=CAST, dtype=np.int64, export=False)
int_ = row("int", family=CAST, dtype=np.int32, export=False)  # PyTorch's int is 32-bit
short = row("short", family=CAST, dtype=np.int16, export=False)
half = row("half", family=CAST, dtype=np.float16, export=False)
bool_ = row("bool", family=CAST, dtype=np.bool_, export=False)


def _dtype_of(other, op):
    dt = getattr(other, "dtype", None)
    if dt is None:
        raise TypeError(f"{op}: other must be a Tensor (or an array), got {type(other).__name__}")
    return dt


@composite("type_as", method="type_as", kind="cast", torch=lambda th, x, other: x.type_as(other),
           samples=lambda rng: [Sample(randn(rng, 2, 3), randn(rng, 4), nondiff=(1,))])
@named("type_as")
def type_as(input, other):  # noqa: A002 - PyTorch's name
    """PyTorch's ``type_as``: cast to ``other``'s dtype (``astype(other.dtype)``; the gradient is
    cast back)."""
    if not hasattr(input, "astype"):
        raise TypeError(f"type_as: input must be a Tensor, got {type(input).__name__}")
    return input.astype(_dtype_of(other, "type_as"))
