"""minigrad: a small autograd engine over NumPy (CuPy on the GPU).

>>> import minigrad as mg
>>> x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])

The functions below ``# ops`` come from the op registry (``mg.ops.registry()``).
"""
from __future__ import annotations

import numpy as _np

from . import autograd, func, ops
from .backend import get_default_device, set_default_device
from .creation import (
    arange, empty, eye, from_dlpack, from_numpy, full, full_like, linspace, logspace, manual_seed, ones, ones_like, rand, rand_like,
    randint, randn, randn_like, randperm, tensor, tril_indices, triu_indices, zeros, zeros_like,
)
from .backward import grad
from .anomaly import AnomalyError
from .capture import CompileError
from .errors import AxisError, MinigradError
from .gradcheck import GradcheckError
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .tensor import Tensor, get_default_dtype, set_default_dtype
from .threads import get_num_threads, set_num_threads
from .compile import compile  # noqa: A004 - mg.compile, as torch.compile

# ops: every public function the registry marks for export (mg.exp, mg.sum, mg.einsum, ...)
globals().update(ops.exports())
cat = concatenate  # noqa: F821 - exported from the registry above
clamp = clip  # noqa: F821

float16 = _np.float16
float32 = _np.float32
float64 = _np.float64
complex64 = _np.complex64
complex128 = _np.complex128
int8 = _np.int8
int16 = _np.int16
int32 = _np.int32
int64 = _np.int64
uint8 = _np.uint8
bool_ = _np.bool_
# PyTorch's dtype names (mg.arange(3, dtype=mg.long)): the same NumPy types. They are set last and
# are not in __all__, so neither this module's code nor ``from minigrad import *`` loses the builtins.
long = _np.int64
int = _np.int32  # noqa: A001
short = _np.int16
half = _np.float16
float = _np.float32  # noqa: A001
double = _np.float64
cfloat = _np.complex64
cdouble = _np.complex128
bool = _np.bool_  # noqa: A001

__version__ = "0.1.0"

__all__ = sorted(
    ["Tensor", "tensor", "zeros", "ones", "full", "full_like", "empty", "arange", "linspace", "logspace", "triu_indices", "tril_indices", "eye", "zeros_like",
     "ones_like", "rand", "randn", "randint", "rand_like", "randn_like", "randperm", "inference_mode", "from_numpy", "from_dlpack", "manual_seed", "set_default_dtype", "get_default_dtype",
     "set_default_device", "get_default_device", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
     "grad", "gradcheck", "gradgradcheck", "compile", "CompileError", "AnomalyError", "AxisError", "GradcheckError", "MinigradError", "set_num_threads",
     "get_num_threads", "autograd", "func", "ops", "cat", "clamp", "dot", "save", "load", "nn", "optim", "sparse", "viz",
     "strided", "io", "utils", "linalg", "fft", "distributions"] + list(ops.exports()))


def __getattr__(name):
    # subpackages that pull in more code load on first use
    import importlib

    if name in ("nn", "optim", "sparse", "viz", "strided", "io", "profile", "utils", "linalg", "fft", "distributions"):
        mod = importlib.import_module(f".{name}", __name__)
        globals()[name] = mod
        return mod
    if name in ("save", "load", "UnsafeFileError"):
        from . import io

        return getattr(io, name)
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")
