"""minigrad: a small autograd engine over NumPy (CuPy on the GPU).

>>> import minigrad as mg
>>> x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])
"""
from __future__ import annotations

import numpy as _np

from . import autograd
from .autograd import enable_grad, grad, is_grad_enabled, no_grad
from .backend import get_default_device, set_default_device
from .creation import (
    arange, empty, eye, from_numpy, full, full_like, linspace, manual_seed, ones, ones_like, rand, randint,
    randn, tensor, zeros, zeros_like,
)
from .errors import AxisError, GradcheckError, MinigradError
from .gradcheck import gradcheck, gradgradcheck
from .ops.elementwise import (
    abs, allclose, clamp, clip, cos, exp, isclose, log, maximum, minimum, relu, sigmoid, sin, sqrt,
    tanh, where,
)
from .ops.linalg import dot, matmul, outer
from .ops.reduce import (
    argmax, argmin, logsumexp, log_softmax, max, mean, min, softmax, std, sum, var,
)
from .ops.shape import (
    broadcast_to, cat, concatenate, expand, flatten, index_add, permute, reshape, squeeze, stack,
    sum_to, swapaxes, transpose, unsqueeze,
)
from .tensor import Tensor, get_default_dtype, set_default_dtype
from .threads import get_num_threads, set_num_threads

float16 = _np.float16
float32 = _np.float32
float64 = _np.float64
int8 = _np.int8
int16 = _np.int16
int32 = _np.int32
int64 = _np.int64
uint8 = _np.uint8
bool_ = _np.bool_

__version__ = "0.1.0"


def __getattr__(name):
    # subpackages that pull in more code load on first use
    import importlib

    if name in ("nn", "optim", "sparse", "viz", "strided", "einsum_mod", "io"):
        mod = importlib.import_module(f".{name}", __name__)
        globals()[name] = mod
        return mod
    if name in ("save", "load", "UnsafeFileError"):
        from . import io

        return getattr(io, name)
    if name == "einsum":
        from .ops.einsum import einsum

        return einsum
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")
