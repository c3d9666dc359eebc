"""Where arrays are made for tensors: ``Tensor(data, ...)`` itself (``init``, bound as
``Tensor.__init__``), the factories (zeros, ones, full, empty, arange, linspace, eye, *_like),
the random draws (rand, randn, dropout's mask...), a tensor's own copy of an array it may not
write, and ``as_tensor`` (a public function's input as a Tensor). A captured step (mg.compile)
makes each of these arrays again on each replay (``_state.array_step``), as each eager call does."""
from __future__ import annotations

import numbers

import numpy as np

from . import _batched
from . import _state
from . import backend as _be
from . import tensor as _tensor
from .tensor import Tensor, wrap as _wrap
from .tensor_methods import tangent_level

_rng = np.random.default_rng()


def init(self, data, dtype=None, requires_grad=False, device=None):
    """``Tensor(data, dtype=None, requires_grad=False, device=None)``: ``data`` (a Tensor, an array,
    a number, nested lists) as a backend array, without a copy where none is needed."""
    _tensor.fields(self, _state.array_step(_to_array, data, dtype, device))
    if requires_grad:
        self.requires_grad = True


def as_tensor(x, op: str) -> Tensor:
    """``x`` as a Tensor for the public function ``op`` (an array or a number becomes one); a sparse
    tensor is refused, naming ``op`` (sparse tensors have their own functions)."""
    if isinstance(x, Tensor):
        return x
    if hasattr(x, "_grad_target"):
        raise TypeError(f"{op}: got a sparse tensor; use mg.sparse's functions (mg.sparse.sum, "
                        "mg.sparse.matmul) or convert it with .to_dense() first")
    return Tensor(x)


def _to_array(data, dtype=None, device=None, op="tensor"):
    """User data as a backend array: Python floats default to the default dtype."""
    if isinstance(data, Tensor):
        arr = data.data
    elif isinstance(data, np.ndarray) or _be.is_cupy_array(data):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(e, Tensor) for e in _flat_items(data)):
            _refuse_graph_copy(data, op)
            data = _tensors_to_lists(data)
        try:
            arr = np.asarray(data)
        except ValueError as e:  # ragged nested lists
            raise ValueError(f"{op}: the data must be a rectangular nested list or an array; {e}") from None
        if dtype is None and arr.dtype == np.float64:
            arr = arr.astype(_tensor._default_dtype)
        elif dtype is None and arr.dtype == np.complex128:  # PyTorch's: complex64 beside float32
            arr = arr.astype(np.result_type(_tensor._default_dtype, np.complex64))
    if dtype is not None:
        dtype = np.dtype(dtype)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
    if arr.dtype.kind in "OUSVMm":  # objects, strings, raw bytes, dates: not numbers
        raise TypeError(f"{op}: cannot make a tensor from {type(data).__name__} data of dtype {arr.dtype}")
    dev = _be.parse_device(device) if device is not None else None
    if dev is not None:
        arr = _be.to_device(arr, dev)
    elif _be.get_default_device() != "cpu" and not _be.is_cupy_array(arr):
        arr = _be.to_device(arr, _be.get_default_device())
    return arr


def _flat_items(data):
    stack = [data]
    while stack:
        d = stack.pop()
        if isinstance(d, (list, tuple)):
            stack.extend(d)
        else:
            yield d


def _refuse_graph_copy(data, op):
    """A list of Tensors that require grad would be copied without its graph: refuse, say mg.stack."""
    for e in _flat_items(data):
        if isinstance(e, Tensor) and e.requires_grad:
            raise TypeError(
                f"{op}: the list holds a Tensor of shape {e.shape} that requires grad; copying it into a new "
                "tensor would drop its graph (no gradient would flow back). Use mg.stack([...]) to keep the "
                "graph, or detach the elements first ([t.detach() for t in ...]) for a constant"
            )
        if isinstance(e, Tensor) and tangent_level(e._tangents) is not None:
            raise TypeError(
                f"{op}: the list holds a Tensor of shape {e.shape} that carries a tangent (forward mode, dual "
                f"level {tangent_level(e._tangents)}); copying it into a new tensor would drop the tangent (a "
                "derivative silently zero). Use mg.stack([...]) to keep it, or forward_ad.unpack_dual(t).primal "
                "for a constant"
            )


def _tensors_to_lists(data):
    if isinstance(data, Tensor):
        return _be.to_numpy(data.data)
    if isinstance(data, (list, tuple)):
        return [_tensors_to_lists(d) for d in data]
    return data


def own_copy(t):
    """Give ``t`` a writable array of its own, a copy of its values (copy-on-write before an
    in-place write into a read-only ``.grad`` or a broadcast array)."""
    _state.array_step(_own_copy, t)


def _own_copy(t):
    t.data = d = t.data.copy()
    return d


def manual_seed(seed: int) -> None:
    """Seed the generator behind rand/randn (and nn initialisation)."""
    global _rng
    _rng = np.random.default_rng(seed)


def _generator(seed):
    return _rng if seed is None else np.random.default_rng(seed)


def _shape(shape, op):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"{op}: shape entries must be ints, got {s!r}")
        if s < 0:
            raise ValueError(f"{op}: negative dimension {s} in shape {tuple(shape)}")
    return tuple(int(s) for s in shape)


def _finish(make, args, requires_grad, device):
    """The Tensor of ``make(*args)`` (a host array) on ``device``. A captured step (mg.compile)
    makes the array again on each replay, as each eager call does (random draws: fresh ones)."""
    t = _wrap(_state.array_step(_made, make, args, _be.parse_device(device)))
    if requires_grad:
        t.requires_grad = True
    return t


def _made(make, args, dev):
    arr = make(*args)
    return arr if dev == "cpu" else _batched.map_physical(arr, lambda a: _be.to_device(a, dev))


def _dt(dtype):
    return _tensor._default_dtype if dtype is None else np.dtype(dtype)


def _fill(op, shape, value, dtype, device, requires_grad):
    t = _wrap(_state.array_step(_full, shape, value, dtype, _be.parse_device(device)))
    if requires_grad:
        t.requires_grad = True
    return t


def _full(shape, value, dtype, dev):
    """``full`` made on its device directly (no host array copied over)."""
    if dev == "cpu":
        return np.full(shape, value, dtype=dtype)
    xp = _be.xp_for(dev)
    with xp.cuda.Device(int(dev.split(":")[1])):
        return xp.full(shape, value, dtype=dtype)


def zeros(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros: ``mg.zeros(2, 3)`` or ``mg.zeros((2, 3))``."""
    return _fill("zeros", _shape(shape, "zeros"), 0, _dt(dtype), device, requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones."""
    return _fill("ones", _shape(shape, "ones"), 1, _dt(dtype), device, requires_grad)


def empty(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor (zeros here: reading it is never undefined)."""
    return _fill("empty", _shape(shape, "empty"), 0, _dt(dtype), device, requires_grad)


def full(shape, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (dtype inferred from it when not given)."""
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    if dtype is None:
        dtype = np.bool_ if isinstance(fill_value, bool) else np.int64 if isinstance(fill_value, numbers.Integral) else None
    return _fill("full", _shape(tuple(shape), "full"), fill_value, _dt(dtype), device, requires_grad)


def zeros_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    return zeros(x.shape, dtype=x.dtype if dtype is None else dtype,
                 device=x.device if device is None else device, requires_grad=requires_grad)


def ones_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    return ones(x.shape, dtype=x.dtype if dtype is None else dtype,
                device=x.device if device is None else device, requires_grad=requires_grad)


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    return full(x.shape, fill_value, dtype=x.dtype if dtype is None else dtype,
                device=x.device if device is None else device, requires_grad=requires_grad)


def arange(start, stop=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Evenly spaced values in [start, stop): ints give int64, floats the default dtype."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if dtype is None:
        ints = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
        dtype = np.int64 if ints else _tensor._default_dtype
    return _finish(np.arange, (start, stop, step, np.dtype(dtype)), requires_grad, device)


def linspace(start, stop=None, num=50, dtype=None, device=None, requires_grad=False, *, end=None, steps=None) -> Tensor:
    """``num`` evenly spaced values from start to stop inclusive; PyTorch's spelling
    ``linspace(start, end, steps)`` (``end=``, ``steps=`` keywords) gives the same values."""
    if end is not None:
        if stop is not None:
            raise TypeError("linspace: got both stop and its alias end=; give one")
        stop = end
    if steps is not None:
        if num != 50:
            raise TypeError("linspace: got both num and its alias steps=; give one")
        num = steps
    if stop is None:
        raise TypeError("linspace: missing the end value (stop, or end=)")
    return _finish(np.linspace, (start, stop, num, True, False, _dt(dtype)), requires_grad, device)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False) -> Tensor:
    """PyTorch's ``logspace``: ``steps`` values ``base ** linspace(start, end, steps)``.

    >>> mg.logspace(0, 2, 3)
    tensor([  1.,  10., 100.])
    """
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ValueError(f"logspace: steps must be an int >= 0, got {steps!r}")
    return _finish(np.logspace, (start, end, int(steps), True, base, _dt(dtype)), requires_grad, device)


def _tri_indices(op, row, col, offset, dtype, device):
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{op}: {name} must be an int, got {v!r}")
    if row < 0 or col < 0:
        raise ValueError(f"{op}: row and col must be >= 0, got {row} and {col}")
    make = np.tril_indices if op == "tril_indices" else np.triu_indices
    return _finish(lambda: np.stack(make(int(row), int(offset), int(col))).astype(np.dtype(dtype)), (), False, device)


def triu_indices(row, col, offset=0, dtype=np.int64, device=None) -> Tensor:
    """PyTorch's ``triu_indices``: the (2, N) int64 row and column indices of the upper triangle
    (on and above diagonal ``offset``) of a row x col matrix, in row-major order.

    >>> mg.triu_indices(2, 2)
    tensor([[0, 0, 1],
            [0, 1, 1]])
    """
    return _tri_indices("triu_indices", row, col, offset, dtype, device)


def tril_indices(row, col, offset=0, dtype=np.int64, device=None) -> Tensor:
    """PyTorch's ``tril_indices``: the (2, N) int64 row and column indices of the lower triangle
    (on and below diagonal ``offset``) of a row x col matrix, in row-major order."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Identity matrix (n x m)."""
    return _finish(np.eye, (n, m, 0, _dt(dtype)), requires_grad, device)


def rand(*shape, dtype=None, device=None, requires_grad=False, seed=None) -> Tensor:
    """Uniform [0, 1) samples; ``seed=`` or ``mg.manual_seed`` for reproducibility."""
    shape = _shape(shape, "rand")
    dt = _dt(dtype)
    return _finish(_draw, ("random", shape, dt, seed), requires_grad, device)


def randn(*shape, dtype=None, device=None, requires_grad=False, seed=None) -> Tensor:
    """Standard normal samples; ``seed=`` or ``mg.manual_seed`` for reproducibility."""
    shape = _shape(shape, "randn")
    dt = _dt(dtype)
    return _finish(_draw, ("standard_normal", shape, dt, seed), requires_grad, device)


def randint(low, high=None, size=(), dtype=np.int64, device=None, seed=None) -> Tensor:
    """Random integers in [low, high), int64: ``randint(low, high, size)`` or PyTorch's
    ``randint(high, size)`` (a tuple second argument is the size: draws in [0, high)).

    ``seed=`` or ``mg.manual_seed`` for reproducibility.

    >>> mg.randint(5, (200,)).shape
    (200,)
    """
    if isinstance(high, (tuple, list)):  # PyTorch's randint(high, size)
        if size != ():
            raise TypeError(f"randint: got a size twice: randint({low!r}, {high!r}, size={size!r}); "
                            "write randint(high, size) or randint(low, high, size)")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    size = _shape(tuple(size), "randint") if isinstance(size, (tuple, list)) else _shape((size,), "randint")
    if not high > low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low}): draws come from [low, high)")
    return _finish(_integers, (low, high, size, dtype, seed), False, device)


def randperm(n: int, dtype=np.int64, device=None, seed=None) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64), PyTorch's ``randperm``; ``seed=`` or
    ``mg.manual_seed`` for reproducibility.

    >>> sorted(mg.randperm(4).tolist())
    [0, 1, 2, 3]
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"randperm: n must be an int >= 0, got {n!r}")
    return _finish(_permutation, (int(n), dtype, seed), False, device)


def rand_like(x, dtype=None, device=None, requires_grad=False, seed=None) -> Tensor:
    """Uniform [0, 1) samples shaped like ``x`` (its dtype and device unless given).

    >>> mg.rand_like(mg.zeros(2, 3)).shape
    (2, 3)
    """
    return rand(x.shape, dtype=_like_dtype(x, dtype, "rand_like"), device=x.device if device is None else device,
                requires_grad=requires_grad, seed=seed)


def randn_like(x, dtype=None, device=None, requires_grad=False, seed=None) -> Tensor:
    """Standard normal samples shaped like ``x`` (its dtype and device unless given).

    >>> mg.randn_like(mg.zeros(2, 3)).shape
    (2, 3)
    """
    return randn(x.shape, dtype=_like_dtype(x, dtype, "randn_like"), device=x.device if device is None else device,
                 requires_grad=requires_grad, seed=seed)


def dropout_mask(shape, p, dtype, device):
    """Keep (scaled by 1 / (1 - p)) or drop each element, from ``mg.manual_seed``'s generator: the
    mask of ``F.dropout`` (a random draw, so a captured step draws a fresh one on each replay)."""
    return _state.array_step(_dropout_mask, tuple(shape), p, np.dtype(dtype), device)


def _dropout_mask(shape, p, dtype, device):
    keep = _batched.draw(lambda s: _rng.random(s, dtype=np.float32), shape, "dropout") >= p
    mask = keep.astype(dtype)
    mask *= 1.0 / (1.0 - p)
    return mask if device == "cpu" else _batched.map_physical(mask, lambda a: _be.to_device(a, device))


def _like_dtype(x, dtype, op):
    d = np.dtype(x.dtype if dtype is None else dtype)
    if d.kind != "f":
        raise TypeError(f"{op}: draws are floating-point; got dtype {d} (give dtype=mg.float32 for an integer x)")
    return d


def _permutation(n, dtype, seed):
    _batched.check_random("mg.randperm")  # one permutation, shared by the batch elements
    return _generator(seed).permutation(n).astype(dtype, copy=False)


def _draw(kind, shape, dt, seed):
    """Float64 draws from the generator (``mg.manual_seed``'s, read when called), cast to ``dt``."""
    g = _generator(seed)
    return _batched.draw(lambda s: getattr(g, kind)(s, dtype=np.float64).astype(dt, copy=False), shape, f"mg.{_DRAWS[kind]}")


_DRAWS = {"random": "rand", "standard_normal": "randn"}


def _integers(low, high, size, dtype, seed):
    g = _generator(seed)
    return _batched.draw(lambda s: np.asarray(g.integers(low, high, size=s, dtype=dtype)),
                         (size,) if isinstance(size, int) else tuple(size), "mg.randint")


def tensor(data, dtype=None, requires_grad=False, device=None) -> Tensor:
    """A new Tensor from data (lists, scalars, NumPy/CuPy arrays, Tensors).

    Python floats and lists of floats become the default dtype (float32); a NumPy
    or CuPy array keeps its dtype. The data is always copied, as ``torch.tensor`` does,
    so in-place writes never reach the caller's array (``mg.from_numpy`` shares memory).
    Only floating tensors may require grad.

    >>> mg.tensor([[1.0, 2.0]], requires_grad=True).shape
    (1, 2)
    """
    if isinstance(data, Tensor) or (hasattr(data, "copy") and hasattr(data, "shape") and not isinstance(data, np.generic)):
        data = _state.array_step(_copy, data)  # a captured step (mg.compile) copies again on each replay
    return Tensor(data, dtype=dtype, requires_grad=requires_grad, device=device)


def _copy(data):
    """A copy of an array, or of a Tensor's array (read when called: a parameter's current one)."""
    return (data.data if isinstance(data, Tensor) else data).copy()


def from_numpy(a, requires_grad=False) -> Tensor:
    """A Tensor sharing memory with the NumPy (or CuPy) array ``a`` (no copy).

    >>> a = np.zeros(3); t = mg.from_numpy(a); t.data is a
    True
    """
    if not hasattr(a, "shape") or not hasattr(a, "dtype"):
        raise TypeError(f"from_numpy: expected a NumPy or CuPy array, got {type(a).__name__}")
    return Tensor(a, requires_grad=requires_grad)


# DLPack device types (dlpack.h): where the producer's memory lives
_DL_HOST = (1, 3, 11)      # kDLCPU, kDLCUDAHost (pinned), kDLROCMHost: NumPy can read it
_DL_CUDA = (2, 10, 13)     # kDLCUDA, kDLROCM, kDLCUDAManaged: CuPy can read it


def from_dlpack(obj, requires_grad=False) -> Tensor:
    """A Tensor over the memory of ``obj`` (a PyTorch / JAX / CuPy / NumPy array, a minigrad
    Tensor: anything with ``__dlpack__`` and ``__dlpack_device__``), without a copy.

    Host memory becomes a CPU tensor (``np.from_dlpack``), CUDA memory a ``cuda:N`` tensor
    (``cupy.from_dlpack``). Writes through either side show in the other. A minigrad tensor
    that requires grad hands over its detached data: the result is a new leaf.

    >>> import torch  # doctest: skip
    >>> t = mg.from_dlpack(torch.arange(3.0))  # doctest: skip
    """
    if isinstance(obj, Tensor):
        obj = obj.detach()
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is None or not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ and __dlpack_device__ "
                        f"(a PyTorch, JAX, CuPy or NumPy array), got {type(obj).__name__}")
    kind, index = (int(v) for v in dev())
    if kind in _DL_HOST:
        arr = np.from_dlpack(obj)
    elif kind in _DL_CUDA:
        xp = _be.xp_for(f"cuda:{index}")
        take = getattr(xp, "from_dlpack", None)
        if take is None:
            raise TypeError(f"from_dlpack: the CUDA backend ({xp.__name__}) has no from_dlpack")
        with xp.cuda.Device(index):
            arr = take(obj)
    else:
        raise TypeError(f"from_dlpack: DLPack device type {kind} (device {index}) is neither host "
                        "memory nor CUDA; minigrad holds CPU (NumPy) and CUDA (CuPy) arrays only")
    return _finish_dlpack(arr, requires_grad)


def _finish_dlpack(arr, requires_grad):
    t = _wrap(arr)
    if requires_grad:
        t.requires_grad = True
    return t


# -- sampling into an existing tensor (ops/writes.py's uniform_, normal_, bernoulli_) and multinomial --------
# Each is a draw from ``mg.manual_seed``'s generator made through ``_state.array_step``, so a captured
# step (mg.compile) draws again on each replay, as each eager call does.


def sample_like(t, kind, a, b):
    """A constant Tensor of draws shaped like ``t`` (its dtype where floating, its device):
    ``kind`` "uniform" (in [a, b)), "normal" (mean a, std b) or "bernoulli" (1 with probability
    ``a``, a number or a Tensor that broadcasts to ``t``; float64 0/1, cast by the write)."""
    dt = np.dtype(t.dtype) if kind != "bernoulli" else np.dtype(np.float64)
    return _wrap(_state.array_step(_sample, kind, tuple(t.shape), a, b, dt, t.device))


def _sample(kind, shape, a, b, dt, dev):
    _batched.check_random(f"a {kind} draw")  # one draw, shared by the batch elements
    if kind == "uniform":
        arr = _rng.uniform(a, b, shape).astype(dt, copy=False)
        if b > a:  # float32 may round a draw up to b: keep [a, b)
            arr = np.minimum(arr, np.nextafter(dt.type(b), dt.type(a)))
    elif kind == "normal":
        arr = _rng.normal(a, b, shape).astype(dt, copy=False)
    else:
        p = _be.to_numpy(a.data) if isinstance(a, Tensor) else a
        if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
            raise ValueError("bernoulli_: p must hold probabilities in [0, 1]")
        arr = (_rng.random(shape) < p).astype(dt)
    arr = np.asarray(arr)
    return arr if dev == "cpu" else _be.to_device(arr, dev)


def multinomial(input, num_samples, replacement=False) -> Tensor:  # noqa: A002 - PyTorch's name
    """Indices drawn from the categories of ``input``'s rows (1-D: one weight vector; 2-D: one per
    row; non-negative weights, not necessarily summing to 1), as PyTorch's ``multinomial``: int64 of
    shape ``(num_samples,)`` or ``(rows, num_samples)``, not differentiable. Without replacement each
    category is drawn at most once (``num_samples`` must not exceed a row's non-zero weights), in
    the order drawn. From ``mg.manual_seed``'s generator.

    >>> mg.multinomial(mg.tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
    [1, 1]
    """
    op = "multinomial"
    x = as_tensor(input, op)
    if x.ndim not in (1, 2):
        raise ValueError(f"{op}: input must be a 1-D or 2-D tensor of weights, got shape {x.shape}")
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: input must be floating-point weights, got dtype {x.dtype}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral) or num_samples <= 0:
        raise ValueError(f"{op}: num_samples must be a positive int, got {num_samples!r}")
    n = x.shape[-1]
    if n == 0:
        raise ValueError(f"{op}: input has no categories (shape {x.shape})")
    if not replacement and num_samples > n:
        raise ValueError(f"{op}: cannot draw {num_samples} samples without replacement from {n} "
                         "categories (pass replacement=True)")
    _batched.check_random("mg.multinomial")
    return _wrap(_state.array_step(_multinomial, x, int(num_samples), bool(replacement)))


def _multinomial(x, k, replacement):
    w = _be.to_numpy(x.data).astype(np.float64).reshape(-1, x.shape[-1])
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("multinomial: weights must be finite and non-negative")
    nonzero = (w > 0).sum(axis=1)
    if np.any(nonzero == 0):
        raise ValueError("multinomial: every row of weights must have a positive sum")
    if not replacement and np.any(nonzero < k):
        raise ValueError(f"multinomial: cannot draw {k} samples without replacement from a row with only "
                         f"{int(nonzero.min())} non-zero weights (pass replacement=True)")
    out = np.empty((w.shape[0], k), dtype=np.int64)
    for i, row in enumerate(w):
        if replacement:  # inverse CDF: a category of zero weight is never hit
            cdf = np.cumsum(row)
            idx = np.searchsorted(cdf, _rng.random(k) * cdf[-1], side="right")
            out[i] = np.minimum(idx, np.flatnonzero(row)[-1])
        else:  # the smallest of Exp(1) / w: sequential draws without replacement, in the order drawn
            with np.errstate(divide="ignore"):
                keys = _rng.standard_exponential(row.shape[0]) / row
            out[i] = np.argsort(keys, kind="stable")[:k]
    out = out.reshape(x.shape[:-1] + (k,))
    dev = x.device
    return out if dev == "cpu" else _be.to_device(out, dev)
