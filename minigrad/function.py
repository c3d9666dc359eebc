"""User-defined ops, PyTorch's habit: subclass ``mg.autograd.Function`` with static ``forward(ctx,
*args)`` and ``backward(ctx, *grads)``, call ``.apply``. A Function runs through the same
``engine.run_op`` as every built-in op: one Node, named after the class."""
from __future__ import annotations

from . import _state
from . import backend as _be
from .engine import Op, report, run_op
from .ops.inplace import COPY_, write
from .ops.meta import zeros_like
from .tensor import Tensor, wrap

_OUTPUT = object()  # marks a saved output: kept as (marker, index), never as the Tensor (no cycle)


class FunctionCtx:
    """What ``forward`` and ``backward`` of an ``autograd.Function`` share."""

    def __init__(self):
        self._saved = ()
        self._node = None
        self._outs = None
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        """Save tensors for backward (their versions are checked before use)."""
        self._saved = tensors

    @property
    def saved_tensors(self):
        out = []
        for s in self._saved:
            if type(s) is tuple and len(s) == 2 and s[0] is _OUTPUT:
                w = wrap(self._outs[s[1]])
                if self._node is not None and _state.get().grad:
                    w._node, w._output_index, w._requires_grad = self._node, s[1], True
                out.append(w)
            else:
                out.append(s)
        return tuple(out)

    def save_for_forward(self, *tensors):
        """Save tensors for ``jvp`` (PyTorch's name; ``saved_tensors`` reads them)."""
        self._saved = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def mark_dirty(self, *tensors):
        """Say that ``forward`` wrote these inputs in place and returns them (PyTorch's name): after
        ``apply`` each is the Function's output, with its history and tangents, as after any
        in-place write (its views see it; a leaf that requires grad is refused)."""
        self._dirty = tensors


def _forward(xp, *datas, cls, ctx, args, kwargs):
    """Run ``cls.forward`` unrecorded and unobserved (a profile shows the Function as one op;
    a capture, mg.compile, records the ops inside it instead of the Function)."""
    token = _state.without_observers(False, fw=False)
    try:
        res = cls.forward(ctx, *args, **kwargs)
    finally:
        _state.reset(token)
    outs = (res,) if not isinstance(res, (tuple, list)) else tuple(res)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{cls.__name__}.forward must return Tensors, got {type(o).__name__}")
    ctx._returned = outs
    ctx._single = not isinstance(res, (tuple, list))
    return outs[0].data if ctx._single else tuple(o.data for o in outs)


def _as_gradient(r, like, dtype):
    """A raw array or list a backward returned, as a Tensor of ``dtype`` on the gradients' device (a
    host array for a device input is an error naming both devices)."""
    if hasattr(r, "shape"):
        _be.array_module(r, like.data)
    return Tensor(r, dtype=dtype, device=like.device)


def _rule(node, g, cls, ctx, args, kwargs):
    gs = list(g) if node.n_out > 1 else [g]
    for k, gk in enumerate(gs):
        if gk is None:
            ref = next(x for x in gs if x is not None)
            shape, dtype = ctx._out_meta[k]
            gs[k] = zeros_like(ref, dtype=dtype, shape=shape)
    ctx._node = node
    try:
        res = cls.backward(ctx, *gs)
    finally:
        ctx._node = None
    res = (res,) if not isinstance(res, (tuple, list)) else tuple(res)
    if len(res) != len(node.parents):
        raise RuntimeError(f"{node.op}.backward returned {len(res)} gradients, but forward took "
                           f"{len(node.parents)} inputs")
    out = []
    for r, p, m in zip(res, node.parents, node.meta, strict=True):
        if p is None or r is None:
            out.append(None)
            continue
        if not isinstance(r, Tensor):
            r = _as_gradient(r, gs[0], m[1])
        if r.shape != m[0]:
            raise RuntimeError(f"{node.op}.backward returned a gradient of shape {r.shape} for an input of "
                               f"shape {m[0]}")
        out.append(r)
    return tuple(out)


def _jvp(jctx, *tangents, cls, ctx, args, kwargs):
    """Forward mode through a Function: its static ``jvp(ctx, *tangents)``, handed a tangent per
    input (zeros for a Tensor without one, None for a non-Tensor), returning one per output."""
    ts = []
    for a, t in zip(args, tangents, strict=False):
        if t is None and isinstance(a, Tensor) and a.dtype.kind == "f":
            t = zeros_like(a)
        ts.append(t if isinstance(a, Tensor) else None)
    res = cls.jvp(ctx, *ts)
    return res if isinstance(jctx.out, tuple) else res[0] if isinstance(res, (tuple, list)) else res


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``.apply``.

    >>> class Square(mg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> y = Square.apply(mg.tensor([3.0], requires_grad=True))
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("autograd.Function subclasses must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("autograd.Function subclasses must define backward(ctx, *grads)")

    @classmethod
    def _op(cls):
        op = cls.__dict__.get("_minigrad_op")
        if op is None:
            op = Op(cls.__name__, _forward, _rule, n_out=None, kind="function", rule_on_arrays=False,
                    jvp=_jvp if callable(getattr(cls, "jvp", None)) else None)
            cls._minigrad_op = op
        return op

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        res = run_op(cls._op(), *_positional(args), cls=cls, ctx=ctx, args=args, kwargs=kwargs)
        outs = (res,) if isinstance(res, Tensor) else tuple(res)
        ctx._outs = tuple(o.data for o in outs)
        ctx._out_meta = tuple((o.shape, o.dtype) for o in outs)
        node = next((o._node for o in outs if o._node is not None), None)
        returned = ctx._returned
        saved = []
        for s in ctx._saved:
            k = next((k for k, o in enumerate(returned) if s is o), None)
            saved.append((_OUTPUT, k) if k is not None else s)
        ctx._saved = tuple(saved)
        del ctx._returned
        if node is not None:
            node.saved = tuple(s for s in saved if isinstance(s, Tensor))  # counted, and released after backward
            node.saved_versions += tuple((s._storage, s._storage.version, f"saved tensor {i}") for i, s in enumerate(saved)
                               if isinstance(s, Tensor))
            observers = _state.get().observers
            if observers:  # the engine leaves a Function's Node to be reported here, complete
                run_args = _positional(args)
                report(node, run_args, [a.data if isinstance(a, Tensor) else a for a in run_args], observers)
            nd = getattr(ctx, "_non_diff", ())
            for k, o in enumerate(outs):
                if any(r is returned[k] for r in nd):
                    o._node, o._requires_grad = None, False
        if getattr(ctx, "_dirty", ()):
            outs = _written(cls, ctx._dirty, args, returned, outs)
        return outs[0] if ctx._single else outs


def _written(cls, dirty, args, returned, outs):
    """The outputs, each input that ``forward`` marked dirty standing for its own: the input is
    overwritten with the output by an in-place write (``copy_``), which records it where needed."""
    outs = list(outs)
    for d in dirty:
        k = next((k for k, r in enumerate(returned) if r is d), None)
        if k is None or not any(a is d for a in args):
            raise RuntimeError(f"{cls.__name__}: mark_dirty() names a tensor that forward did not both take as an "
                               "input and return; return each tensor it writes in place")
        write(d, COPY_, "copy_", (outs[k],), check=False)
        outs[k] = d
    return tuple(outs)


def _positional(args):
    """The arguments run_op sees: Tensors as they are, anything else as a constant placeholder."""
    return tuple(a if isinstance(a, Tensor) else 0 for a in args)
