"""The op registry: every operation minigrad offers, by name, defined in one of three shapes:

- ``row(name, forward, rule, family=...)``: one line for an op of a common family (unary and
  binary elementwise ops, comparisons, reductions, casts, in-place arithmetic...): the family
  (``Family``) gives it its public function;
- ``defop`` (a forward over backend arrays beside its gradient rule) and ``@public`` on its
  public function (its Tensor method names, operators, the name under ``minigrad``, the NumPy
  functions that dispatch to it);
- ``@composite`` for a public function built from other ops (``mean``, ``flatten``...).

``minigrad.ops`` then binds Tensor's methods and operators from this table, ``minigrad``
exports from it, and the tests walk it: every differentiable entry declares ``samples``
and is gradchecked, gradgradchecked and compared with PyTorch from them.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import _batched
from ..engine import OPS, Op
from ..errors import NAMED_ERRORS, reraise
from ..forward_ad import derive, linear_jvp, multilinear_jvp  # noqa: F401 - derived forward-mode rules, named in op rows


# -- complex numbers: the rule a holomorphic op's complex Nodes record -------------------------------

def conj(a):
    """The complex conjugate of an array or a Tensor; a real one itself (no copy, no op recorded)."""
    return a.conj() if a.dtype.kind == "c" else a


def complex_twin(op):
    """``op.twin`` of a holomorphic op (``engine.Op``): what a Node with a complex output records, the
    same op with ``holomorphic(op.rule)``, or ``op.rule.complex_rule`` where the op's row places the
    conjugates itself (real Nodes keep the text itself). Made by ``defop``; ``op`` when there is none."""
    if op.complex != "holomorphic" or op.rule is None:
        return op
    t = op.twin
    if t is None:
        t = object.__new__(Op)
        for s in Op.__slots__:
            setattr(t, s, getattr(op, s))
        t.rule, t.twin = holomorphic(op.rule), None
        placed = getattr(op.rule, "complex_rule", None)  # the same rule with its conjugates placed by hand
        if placed is not None:                            # (fewer array calls than conj(rule(conj g)))
            placed.real_rule = op.rule
            t.rule = placed
        op.twin = t
    return t


def holomorphic(rule):
    """The gradient rule of a holomorphic op, from its text for real numbers. PyTorch's convention
    sends ``g conj(f'(z))`` back through ``z -> f(z)`` (docs/complex.md); a rule written as
    ``g f'(x)`` (``mul``: ``g y``) gives that as ``conj(rule(conj(g)))``, and is called as it
    stands when ``g`` is real. ``.real_rule`` is the text itself: its forward-mode rule
    (``forward_ad.elementwise_jvp``) is ``f'(z) t``, the text applied to the tangent."""
    def rule_on_complex(ctx, g, **params):
        if g.dtype.kind != "c":
            return rule(ctx, g, **params)
        return tuple(None if d is None else conj(d) for d in rule(ctx, g.conj(), **params))

    rule_on_complex.real_rule = rule
    return rule_on_complex



class Sample:
    """One set of inputs for an op's tests: ``Sample(*args, **kwargs)``.

    Floating NumPy arrays among ``args`` become leaf Tensors that require grad (float64,
    on the device under test); integer and bool arrays become constant Tensors; other
    values are passed as they are. ``nondiff``: positions of float arrays to keep constant.
    """

    __slots__ = ("args", "kwargs", "nondiff")

    def __init__(self, *args, nondiff=(), **kwargs):
        self.args = args
        self.kwargs = kwargs
        self.nondiff = tuple(nondiff)

    def __repr__(self):
        shapes = [getattr(a, "shape", a) for a in self.args]
        return f"Sample({shapes}, {self.kwargs})"


def randn(rng, *shape, low=None, away=None):
    """A sample array: standard normal values of ``shape`` (from ``low`` up, as ``low + |z|``, when
    given; nudged 0.3 away from ``away``, a point where the op is not differentiable)."""
    a = rng.standard_normal(shape)
    if low is not None:
        a = low + np.abs(a)
    if away is not None:
        a = np.where(np.abs(a - away) < 0.1, a + 0.3, a)
    return np.asarray(a)


def complex_sample(sample, rng, mixed=False):
    """Complex samples from a real one: each floating array that is differentiated gets an imaginary
    part (normal, scale 0.5: away from the branch cuts of the ops whose real samples keep away from
    them: the negative real axis for log and sqrt, |Re| > 1 for arcsin...). With ``mixed`` (the first two
    samples of an elementwise op), also the sample with its first such array left real (a real input of
    a complex computation: NumPy's promotion, and a real gradient)."""
    pos = [k for k, a in enumerate(sample.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
           and k not in sample.nondiff]
    if not pos:  # complex already (view_as_real's), or nothing to differentiate
        return [sample] if any(isinstance(a, np.ndarray) and a.dtype.kind == "c" for a in sample.args) else []
    args = list(sample.args)
    for k in pos:
        args[k] = np.asarray(args[k] + 0.5j * rng.standard_normal(args[k].shape))
    out = [Sample(*args, nondiff=sample.nondiff, **sample.kwargs)]
    if mixed and len(pos) > 1:
        args[pos[0]] = sample.args[pos[0]]
        out.append(Sample(*args, nondiff=sample.nondiff, **sample.kwargs))
    return out


class OnDevice:
    """A sample argument built for the device under test: ``OnDevice(lambda xp: ...)`` (an index
    structure that must live beside the arrays, such as a sparse grouping)."""

    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


class Entry:
    """An op's registry entry: what minigrad derives from it. ``op`` is the engine's record (its
    fields read through the entry too: ``.name``, ``.forward``, ``.rule``, ``.kind``...);
    ``samples(rng)`` the inputs its tests use; ``torch(th, *args, **kwargs)`` the same computation
    in PyTorch; and, once ``public`` gave it a face, ``frontend`` (the public function),
    ``method`` (Tensor method names), ``dunders`` (operators; a name starting ``__r`` gets the
    reflected call), ``export`` (the name under ``minigrad``), ``numpy`` (the NumPy functions
    that dispatch to it), ``inplace`` (Tensor method name -> the function of ops/writes.py that
    writes its result into the tensor: ``inplace_method``), ``doc``."""

    __slots__ = ("op", "samples", "torch", "frontend", "method", "dunders", "export", "numpy", "inplace", "doc",
                 "_complex_samples")

    def __init__(self, op, samples=None, torch=None, complex_samples=None):
        self.op, self.samples, self.torch = op, samples, torch
        self._complex_samples = complex_samples
        self.frontend, self.method, self.dunders, self.export, self.numpy, self.inplace, self.doc = \
            None, (), (), None, (), {}, None

    def __getattr__(self, name):  # the record's fields
        return getattr(object.__getattribute__(self, "op"), name)

    @property
    def differentiable(self) -> bool:
        return self.op.rule is not None

    def complex_samples(self, rng) -> list:
        """The samples of an op that takes complex numbers (``complex=`` True or "holomorphic"): the
        row's own (``complex_samples=``), else derived from its real ones (``complex_sample``); [] for
        an op that refuses complex numbers."""
        if not self.op.complex:
            return []
        if self._complex_samples is not None:
            return self._complex_samples(rng)
        out = []
        for k, s in enumerate(self.samples(rng) if self.samples is not None else ()):
            out += complex_sample(s, rng, mixed=k < 2 and self.op.kind == "elementwise")
        return out

    def __repr__(self):
        return f"<registry entry {self.op.name}>"


_REGISTRY: dict[str, Entry] = {}
_OP_OF: dict = {}  # public function -> its op


def defop(name, forward, rule=None, *, samples=None, torch=None, complex_samples=None, **options) -> Op:
    """Define and register a primitive op: the engine's record (``engine.Op``'s options), and its
    registry entry with the ``samples`` its tests use and its ``torch`` oracle. Returns the record.
    An elementwise op's forward-mode rule is derived from its gradient rule unless ``jvp`` is given
    (``forward_ad.derive``); any other differentiable op must give ``jvp``, or defop refuses it."""
    if name in _REGISTRY:
        raise ValueError(f"defop: an op named {name!r} is already registered")
    options["jvp"] = derive(options.get("jvp"), rule, options.get("kind", "other"))
    if options.get("batch") is None and options.get("kind") == "elementwise":
        options["batch"] = _batched.elementwise_op  # vmap: its forward on the physical arrays, aligned
    if rule is not None and options["jvp"] is None:
        raise TypeError(f"defop: op {name!r} has a gradient rule but no forward-mode rule, and only an elementwise "
                        "op's is derived: give jvp= (linear_jvp(i) for an op linear in input i, multilinear_jvp() for "
                        "one linear in each input, or a rule jvp(ctx, *tangents, **params)), or kind='elementwise'")
    op = OPS[name] = Op(name, forward, rule, **options)
    complex_twin(op)  # a holomorphic op's rule for complex outputs (Op.twin)
    _REGISTRY[name] = Entry(op, samples, torch, complex_samples)
    return op


def public(op, *, method=None, dunders=(), export=True, numpy=()):
    """Decorator: ``fn`` is the public function of ``op`` (an Op, or the name of a composite).

    ``method``: Tensor method name(s) bound to ``fn``; ``dunders``: operator names (a name
    starting ``__r`` calls ``fn(other, self)``); ``export``: also ``minigrad.<name>`` (True:
    the function's name); ``numpy``: NumPy functions or ufuncs that dispatch to ``fn``.
    """
    def deco(fn):
        entry = _REGISTRY[op.name]
        entry.frontend = fn
        entry.method = (method,) if isinstance(method, str) else tuple(method or ())
        entry.dunders = tuple(dunders)
        entry.export = fn.__name__ if export is True else (export or None)
        entry.numpy = tuple(numpy)
        entry.doc = fn.__doc__
        _OP_OF[fn] = op
        return fn

    return deco


def named(name):
    """Decorator for a public function: an error raised by the helpers and ops it calls (``item:``,
    ``permute:``, NumPy's or Python's own text) names ``name`` first, e.g. ``transpose: permute: ...``."""
    def deco(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except NAMED_ERRORS as e:
                reraise(e, name)

        return call

    return deco


def op_of(fn) -> Op:
    """The op whose public function is ``fn`` (``mg.mul`` -> the ``mul`` op)."""
    return _OP_OF[fn]


def inplace_op(of: Op, name: str) -> Op:
    """The op that writes ``of``'s result into a tensor under the name ``name`` (``mul_`` for
    ``mul``): ``of``'s forward, rules, samples and oracle, registered as an op of its own, so that
    the tape, the profile and the pictures say which write it was."""
    entry = _REGISTRY[of.name]
    return defop(name, of.forward, of.rule, samples=entry.samples, torch=entry.torch, kind="inplace", save=of.save,
                 save_for_others=of.save_for_others, save_out=of.save_out, aux=of.aux, broadcast=of.broadcast,
                 rule_on_arrays=of.rule_on_arrays, jvp=of.jvp, complex=of.complex,
                 complex_samples=entry._complex_samples)


def inplace_method(op, fn, *names) -> None:
    """``fn`` (a function of ops/writes.py) is ``op``'s in-place form, bound as Tensor's ``names``."""
    _REGISTRY[op.name].inplace.update(dict.fromkeys(names, fn))


def composite(name, *, samples=None, torch=None, kind="other", complex=False, complex_samples=None, **bind):  # noqa: A002
    """Decorator: register ``fn`` as a public function built from other ops (no rule of its own:
    its gradient comes from the ops it calls). ``complex=True``: it takes complex numbers (the ops
    it calls do), and the registry test runs it on complex samples too."""
    def deco(fn):
        op = defop(name, None, None, kind=kind, samples=samples, torch=torch, complex=complex,
                   complex_samples=complex_samples)
        op.kind = "composite" if kind == "other" else kind
        return public(op, **bind)(fn)

    return deco


class Family:
    """What the ops of a common family share, so that each of them is one ``row``.

    ``kind``: how pictures draw them; ``frontend(op, name, **extra)``: the public function a row
    gets (``extra``: the row's options named in ``reads``); ``doc``: its docstring when the row
    gives none (``{name}`` and ``{op}`` filled in; empty: the frontend's own); ``named``: errors
    raised under it name it (``errors.named``); ``ufunc`` and ``torch``: a row
    with a rule whose NumPy function is ``np.<name>`` says its forward is that ufunc (``Op.ufunc``),
    and one without ``torch=`` is compared with PyTorch's function of its name; ``inplace``: a row writes the
    result of an existing op (``of=``: its public function) into the tensor instead of defining
    an op. The other keywords are engine options the family's ops share (``broadcast=True``).
    """

    def __init__(self, kind, frontend, *, doc="", reads=(), named=False, ufunc=False, torch=False, inplace=False,
                 **options):
        self.kind, self.frontend, self.doc, self.reads, self.named = kind, frontend, doc, reads, named
        self.ufunc, self.torch, self.inplace, self.options = ufunc, torch, inplace, options


def row(name, forward=None, rule=None, *, family, doc=None, method=True, dunders=(), numpy=(), export=True,
        samples=None, torch=None, **options):
    """An op of a common ``family`` and its public function, in one line. ``forward``, ``rule``,
    ``samples``, ``torch`` and the engine options (``save=``, ``jvp=``...) are ``defop``'s, on top of
    the family's; ``method`` (True: the row's name), ``dunders``, ``numpy`` and ``export`` are
    ``public``'s. Returns the public function.

    >>> log1p = row("log1p", lambda xp, x: xp.log1p(x), lambda ctx, g: (g / (ctx.saved[0] + 1),),
    ...             family=UNARY, save=(0,), samples=_unary_samples(low=0.1), numpy=(np.log1p,))
    """
    extra = {k: options.pop(k) for k in family.reads if k in options}
    if family.inplace:
        op = inplace_op(op_of(extra.pop("of")), name)
    else:
        if rule is not None and family.ufunc and numpy and numpy[0] is getattr(np, name, None):
            options.setdefault("ufunc", name)  # forward(xp, *a) is xp.<name>(*a) (the registry test proves it)
        if rule is not None and family.torch and torch is None:
            torch = _torch_of(name)
        op = defop(name, forward, rule, kind=family.kind, samples=samples, torch=torch,
                   **{**family.options, **options})
    fn = family.frontend(op, name, **extra)
    fn.__name__ = fn.__qualname__ = name
    if doc or family.doc:
        fn.__doc__ = doc or family.doc.format(name=name, op=op.name)
    if family.named:
        fn = named(name)(fn)
    methods = (name,) if method is True else method
    if family.inplace:
        inplace_method(op, fn, *methods)
        return fn
    return public(op, method=methods, dunders=dunders, numpy=numpy, export=export)(fn)


def _torch_of(name):
    return lambda th, *args: getattr(th, name)(*args)


def registry() -> dict[str, Entry]:
    """Every registered op and public function, by name: ``.name``, ``.forward`` (over backend
    arrays; None for a composite), ``.rule`` (None when not differentiable), ``.samples``,
    ``.frontend`` (the public function), ``.method``, ``.dunders``, ``.export``, ``.numpy``.

    >>> mg.ops.registry()["exp"].rule is not None
    True
    """
    return dict(_REGISTRY)
