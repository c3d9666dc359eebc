"""vmap over every op in the registry, from its own samples: ``vmap(op)`` of a batch of three
samples equals ``op`` of each, stacked. Each sample runs with the batch axis first and in the
middle, with one operand batched and then all of them, and under ``vjp`` and ``jvp`` (the
batched pass of a rule and of a forward-mode rule), on the CPU and under fakecuda. An op that
falls back to running once per element is named in ``FALLBACK`` with the reason."""
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn  # noqa: F401 - modules that register ops of their own
import minigrad.sparse  # noqa: F401
import minigrad.strided  # noqa: F401
from minigrad.engine import run_op
from minigrad.ops._registry import OnDevice

REG = mg.ops.registry()
B = 3

# ops whose forward runs once per batch element under vmap, and why
FALLBACK: dict = {}
# cases that torch.func.vmap refuses too, where vmap raises: op -> (the cases, the error's text, why)
REFUSED = {
    "masked_select": ({"all", "middle"}, "batched boolean mask", "with the mask batched, each element selects its own number "
                      "of values: a data-dependent shape"),
    "view": ({"middle"}, "not compatible with the strides", "an element of a batch in the middle is not contiguous "
             "in memory: the view would need a copy (torch.func.vmap raises the same)"),
    "view_as": ({"middle"}, "not compatible with the strides", "as view"),
}
# ops whose batching is still wrong or falls back unlisted (being fixed: this set only shrinks)
NOT_YET: set = set()


def _samples(op):
    """Per sample: B draws of it (the same shapes and non-array arguments, other values)."""
    draws = [op.samples(np.random.default_rng(s)) for s in range(B)]
    out = []
    for k, s0 in enumerate(draws[0]):
        group = [d[k] for d in draws]
        if not all(_same_kind(s0, s) for s in group):
            continue
        out.append(group)
    return out


def _same_kind(a, b):
    if len(a.args) != len(b.args) or set(a.kwargs) != set(b.kwargs):
        return False
    for x, y in zip(a.args, b.args, strict=True):
        if isinstance(x, np.ndarray) != isinstance(y, np.ndarray):
            return False
        if isinstance(x, np.ndarray):
            if x.shape != y.shape or x.dtype.kind != y.dtype.kind:
                return False
        elif type(x) is not type(y) or (not isinstance(x, OnDevice) and repr(x) != repr(y)):
            return False
    return all(repr(a.kwargs[k]) == repr(b.kwargs[k]) or isinstance(a.kwargs[k], OnDevice) for k in a.kwargs)


def _arr(a, device):
    return mg.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a, device=device)


def _kwargs(sample, device):
    out = {}
    for k, v in sample.kwargs.items():
        if isinstance(v, OnDevice):
            v = v.make(mg.backend.xp_for(device))
        elif isinstance(v, np.ndarray) and v.dtype.kind in "biu":
            v = mg.backend.to_device(v, device)
        elif isinstance(v, tuple) and any(isinstance(e, np.ndarray) for e in v):
            v = tuple(mg.backend.to_device(e, device) if isinstance(e, np.ndarray) else e for e in v)
        out[k] = v
    return out


def _fn(op, kwargs):
    if op.forward is not None:
        return lambda *xs: run_op(op, *xs, **kwargs)
    return lambda *xs: op.frontend(*xs, **kwargs)


def _np(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().numpy() if isinstance(o, mg.Tensor) else np.asarray(o) for o in outs]


def _floats(out):
    """The floating Tensors among an op's outputs (what vjp and jvp differentiate), one or a tuple."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    fl = tuple(o for o in outs if isinstance(o, mg.Tensor) and o.dtype.kind == "f")
    return fl[0] if len(fl) == 1 else fl


def _tensors(out):
    """An op's Tensor outputs (vmap returns Tensors: a Python value among them, lstsq's rank, is left out)."""
    if isinstance(out, (tuple, list)):
        kept = tuple(o for o in out if isinstance(o, mg.Tensor))
        return kept[0] if len(kept) == 1 else kept
    return out


def _moded(fn, mode, n_args, floats):
    """``fn`` of the op's arguments as a function of (arguments, extras): its values; under "vjp" the
    gradients of its floating outputs for the cotangents given as extras; under "jvp" the tangent of
    those outputs for the tangents (one per floating argument) given as extras."""
    if mode == "values":
        return lambda *a: _tensors(fn(*a))

    def of(args):
        def g(*fx):
            a = list(args)
            for k, v in zip(floats, fx, strict=True):
                a[k] = v
            return _floats(fn(*a))
        return g, [args[k] for k in floats]

    if mode == "vjp":
        def f(*a):
            g, primals = of(a[:n_args])
            cts = a[n_args:]
            return mg.func.vjp(g, *primals)[1](cts[0] if len(cts) == 1 else cts)
        return f

    def f(*a):
        g, primals = of(a[:n_args])
        return mg.func.jvp(g, tuple(primals), tuple(a[n_args:]))[1]
    return f


NOT_DIFFERENTIABLE = (TypeError, RuntimeError, NotImplementedError)


def _check(name, op, group, device, which, dim_of, mode="values"):
    """vmap of the op over ``which`` array positions, each batched at ``dim_of(ndim)``; under "vjp"
    and "jvp" with a batched cotangent or tangents too (``which`` empty: only they are batched,
    a Jacobian's rows or columns in one pass)."""
    s0 = group[0]
    kwargs = _kwargs(s0, device)
    fn = _fn(op, kwargs)
    arrays = [k for k, a in enumerate(s0.args) if isinstance(a, np.ndarray)]
    batched = [k for k in arrays if k in which]
    floats = [k for k in arrays if s0.args[k].dtype.kind == "f"]
    if mode != "values" and not floats:
        return
    if mode == "values" and not batched:
        return
    n = len(s0.args)
    per = []  # each element's arguments
    for s in group:
        per.append([_arr(s.args[k], device) if k in batched else (_arr(s0.args[k], device) if k in arrays else s0.args[k])
                    for k in range(n)])
    extras = [[] for _ in group]  # each element's cotangents or tangents
    if mode == "vjp":
        outs = _floats(fn(*per[0]))
        outs = outs if isinstance(outs, tuple) else (outs,)
        if not outs:
            return
        for b, e in enumerate(extras):
            rng = np.random.default_rng(100 + b)
            e.extend(mg.tensor(rng.standard_normal(tuple(o.shape)).astype(o.dtype), device=device) for o in outs)
    elif mode == "jvp":
        for b, e in enumerate(extras):
            rng = np.random.default_rng(200 + b)
            e.extend(mg.tensor(rng.standard_normal(s0.args[k].shape), device=device) for k in floats)
    f = _moded(fn, mode, n, floats)
    try:
        want = [_np(f(*a, *e)) for a, e in zip(per, extras, strict=True)]
    except NOT_DIFFERENTIABLE:
        if mode == "values":
            raise
        return  # the op has no gradient (or forward-mode) rule for these arguments: nothing to batch
    args, dims = [], []
    for k, a in enumerate(s0.args):
        if k in batched:
            stacked = np.stack([s.args[k] for s in group])
            d = dim_of(stacked.ndim)
            args.append(_arr(np.moveaxis(stacked, 0, d), device))
            dims.append(d)
        else:
            args.append(_arr(a, device) if k in arrays else a)
            dims.append(None)
    for j in range(len(extras[0])):
        args.append(mg.stack([e[j] for e in extras]))
        dims.append(0)
    got = _np(mg.func.vmap(f, in_dims=tuple(dims))(*args))
    assert len(got) == len(want[0]), f"{name} ({mode}): {len(got)} outputs, {len(want[0])} per element"
    for j, g in enumerate(got):
        w = np.stack([w[j] for w in want])
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{name} ({mode}): output {j}, batched {batched}")


def _diff(op):
    return op.samples is not None


NAMES = sorted(name for name, op in REG.items() if _diff(op))


@pytest.mark.parametrize("name", NAMES)
def test_vmap_equals_stacking_each_element(name, device, request):
    if name in NOT_YET:
        request.applymarker(pytest.mark.xfail(strict=True, reason="batching rule not written yet"))
    op = REG[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for group in _samples(op):
            arrays = [k for k, a in enumerate(group[0].args) if isinstance(a, np.ndarray)]
            cases = [("all", set(arrays), lambda nd: 0, "values"), ("first", set(arrays[:1]), lambda nd: 0, "values"),
                     ("middle", set(arrays), lambda nd: nd // 2, "values")]
            for mode in ("vjp", "jvp"):
                cases += [("all", set(arrays), lambda nd: 0, mode), ("shared", set(), lambda nd: 0, mode)]
            for case, which, dim_of, mode in cases:
                if case in REFUSED.get(name, ((),))[0]:
                    if mode != "values":
                        continue  # refused already with its values (and the elements' outputs may differ in shape)
                    with pytest.raises(RuntimeError, match=REFUSED[name][1]):
                        _check(name, op, group, device, which, dim_of, mode)
                else:
                    _check(name, op, group, device, which, dim_of, mode)
    fell = [str(w.message) for w in caught if "no batching rule" in str(w.message)]
    if name in FALLBACK:
        assert fell, f"{name} is listed in FALLBACK but now batches: remove it"
    else:
        assert not fell, f"{name} falls back to a loop: {fell[0]}"


# -- ops without samples: their values, batched, from a small table of inputs -----------------------

def _f(rng, *shape):
    return rng.standard_normal(shape)


def _i(rng, *shape):
    return rng.integers(0, 5, shape)


def _b(rng, *shape):
    return rng.random(shape) < 0.5


def _ties(rng, *shape):
    return rng.integers(-2, 3, shape).astype(np.float64)  # ties and zeros: comparisons both ways


# name -> (the op's call on Tensors, the inputs drawn per element); non-differentiable: values only
NO_SAMPLES = {
    "all": (lambda x: REG["all"].frontend(x, axis=1), lambda r: [_b(r, 3, 4)]),
    "any": (lambda x: REG["any"].frontend(x, axis=0), lambda r: [_b(r, 3, 4)]),
    "argmax": (lambda x: mg.argmax(x, axis=1), lambda r: [_ties(r, 3, 4)]),
    "argmin": (lambda x: mg.argmin(x), lambda r: [_ties(r, 3, 4)]),
    "argsort": (lambda x: mg.argsort(x, axis=0), lambda r: [_ties(r, 3, 4)]),
    "bincount": (lambda x, w: mg.bincount(x, w, minlength=6), lambda r: [_i(r, 7), _f(r, 7)]),
    "bool": (lambda x: x.bool(), lambda r: [_ties(r, 3)]),
    "double": (lambda x: x.double(), lambda r: [_f(r, 3)]),
    "float": (lambda x: x.float(), lambda r: [_f(r, 3)]),
    "half": (lambda x: x.half(), lambda r: [_f(r, 3)]),
    "int": (lambda x: x.int(), lambda r: [_ties(r, 3)]),
    "long": (lambda x: x.long(), lambda r: [_ties(r, 3)]),
    "short": (lambda x: x.short(), lambda r: [_ties(r, 3)]),
    "cpu": (lambda x: x.cpu(), lambda r: [_f(r, 2, 3)]),
    "detach": (lambda x: x.detach(), lambda r: [_f(r, 2, 3)]),
    "empty_like": (lambda x: mg.empty_like(x) * 0 + 1, lambda r: [_f(r, 2, 3)]),
    "full_like": (lambda x: mg.full_like(x, 2.5), lambda r: [_f(r, 2, 3)]),
    "ones_like": (lambda x: mg.ones_like(x), lambda r: [_f(r, 2, 3)]),
    "zeros_like": (lambda x: mg.zeros_like(x), lambda r: [_f(r, 2, 3)]),
    "new_full": (lambda x: x.new_full((2,), 3.0) + x.sum(), lambda r: [_f(r, 2, 3)]),
    "new_ones": (lambda x: x.new_ones((2, 2)) * x[0, 0], lambda r: [_f(r, 2, 3)]),
    "new_zeros": (lambda x: x.new_zeros((3,)) + x[1], lambda r: [_f(r, 2, 3)]),
    "new_tensor": (lambda x: x.new_tensor([1.0, 2.0, 3.0]) * x[0], lambda r: [_f(r, 2, 3)]),
    "eq": (lambda x, y: mg.eq(x, y), lambda r: [_ties(r, 3, 4), _ties(r, 4)]),
    "ne": (lambda x, y: mg.ne(x, y), lambda r: [_ties(r, 3, 4), _ties(r, 4)]),
    "lt": (lambda x, y: mg.lt(x, y), lambda r: [_ties(r, 3, 4), _ties(r, 4)]),
    "le": (lambda x, y: mg.le(x, y), lambda r: [_ties(r, 3, 4), _ties(r, 4)]),
    "gt": (lambda x, y: mg.gt(x, y), lambda r: [_ties(r, 3, 4), _ties(r, 4)]),
    "ge": (lambda x, y: mg.ge(x, y), lambda r: [_ties(r, 3, 4), _ties(r, 4)]),
    "floordiv": (lambda x, y: REG["floordiv"].frontend(x, y), lambda r: [_f(r, 3, 4), _f(r, 4) + 3]),
    "isclose": (lambda x, y: mg.isclose(x, y, atol=0.5), lambda r: [_f(r, 3, 4), _f(r, 3, 4)]),
    "isfinite": (lambda x: mg.isfinite(mg.log(x)), lambda r: [_ties(r, 3, 4)]),
    "isinf": (lambda x: mg.isinf(mg.log(x)), lambda r: [_ties(r, 3, 4)]),
    "isnan": (lambda x: mg.isnan(mg.log(x)), lambda r: [_ties(r, 3, 4)]),
    "signbit": (lambda x: mg.signbit(x), lambda r: [_ties(r, 3, 4)]),
    "logical_and": (lambda x, y: REG["logical_and"].frontend(x, y), lambda r: [_b(r, 3, 4), _b(r, 4)]),
    "logical_or": (lambda x, y: REG["logical_or"].frontend(x, y), lambda r: [_b(r, 3, 4), _b(r, 4)]),
    "logical_xor": (lambda x, y: REG["logical_xor"].frontend(x, y), lambda r: [_b(r, 3, 4), _b(r, 4)]),
    "logical_not": (lambda x: REG["logical_not"].frontend(x), lambda r: [_b(r, 3, 4)]),
    "searchsorted": (lambda s, v: mg.searchsorted(s, v), lambda r: [np.sort(_ties(r, 5)), _ties(r, 2, 3)]),
    "zero_": (lambda x: x.clone().zero_(), lambda r: [_f(r, 2, 3)]),
    "assign": (lambda x, y: _assigned(x, y), lambda r: [_f(r, 2, 3), _f(r, 3)]),
    "cum_index": (lambda x: run_op(REG["cum_index"].op, x, axis=1, largest=True), lambda r: [_ties(r, 3, 4)]),
    "zero_index": (lambda x: run_op(REG["zero_index"].op, x), lambda r: [_f(r, 3, 4)]),
    "det_sign": (lambda x: run_op(REG["det_sign"].op, x), lambda r: [_f(r, 3, 3)]),
    "window_argmax": (lambda x: mg.nn.functional.max_pool2d(x, 2, return_indices=True)[1], lambda r: [_f(r, 1, 4, 4)]),
    "flat_positions": (lambda x: mg.nn.functional.max_pool1d(x, 2, stride=1, return_indices=True)[1],
                       lambda r: [_f(r, 1, 2, 5)]),
}


def _assigned(x, y):
    z = x.clone()
    z[...] = y  # the assign op: a batched value written into a batched tensor
    return z


# ops without samples that vmap does not batch, and why
NOT_BATCHED = {
    "allclose": "returns a Python bool (one value for the whole batch: data-dependent control flow)",
    "is_tensor": "returns a Python bool about its argument's type, not a Tensor",
    "ndim": "returns a Python int (one element's ndim), not a Tensor",
    "shape": "returns a Python tuple (one element's shape), not a Tensor",
    "size": "returns a Python int or tuple (one element's), not a Tensor",
    "result_type": "returns a dtype, not a Tensor",
    "clip_grad_norm_": "its check of the gradients' total norm reads one Python value (nn.utils, outside vmap)",
    "cuda": "a device move: tested with cpu (the same op); the host has no second device to move to",
    "multinomial": "a random draw: tested with vmap(randomness=...) in tests/test_func.py",
    "unique": "data-dependent output shape (each element has its own count of unique values); torch.func.vmap "
              "refuses it too",
    "to_sparse_coo": "returns a sparse tensor (vmap's outputs are dense Tensors, as torch.func.vmap's)",
    "to_sparse_csr": "returns a sparse tensor (vmap's outputs are dense Tensors, as torch.func.vmap's)",
}


def test_every_op_without_samples_is_batched_or_listed():
    missing = sorted(n for n, o in REG.items() if o.samples is None and n not in NO_SAMPLES and n not in NOT_BATCHED)
    assert not missing, f"ops without samples that vmap's test does not batch: {missing}"


@pytest.mark.parametrize("name", sorted(NO_SAMPLES))
def test_vmap_of_op_without_samples(name, device):
    fn, draw = NO_SAMPLES[name]
    draws = [draw(np.random.default_rng(s)) for s in range(B)]
    n = len(draws[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for which, dim_of in (([*range(n)], lambda nd: 0), ([0], lambda nd: 0), ([*range(n)], lambda nd: nd // 2)):
            want = []
            for d in draws:
                args = [_arr(d[k] if k in which else draws[0][k], device) for k in range(n)]
                want.append(_np(fn(*args)))
            args, dims = [], []
            for k in range(n):
                if k in which:
                    stacked = np.stack([d[k] for d in draws])
                    dd = dim_of(stacked.ndim)
                    args.append(_arr(np.moveaxis(stacked, 0, dd), device))
                    dims.append(dd)
                else:
                    args.append(_arr(draws[0][k], device))
                    dims.append(None)
            got = _np(mg.func.vmap(fn, in_dims=tuple(dims))(*args))
            for j, g in enumerate(got):
                w = np.stack([w[j] for w in want])
                assert g.dtype == w.dtype, f"{name}: output {j} is {g.dtype}, per element {w.dtype}"
                np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{name}: output {j}, batched {which}")
    fell = [str(w.message) for w in caught if "no batching rule" in str(w.message)]
    assert not fell, f"{name} falls back to a loop: {fell[0]}"
