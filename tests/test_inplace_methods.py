"""Every in-place method of Tensor writes into the tensor: the same object and storage, its version
bumped, the values of its out-of-place op and of NumPy, the gradients of the out-of-place op, and a
RuntimeError on a leaf that requires grad while gradients are recorded (ops/inplace.py states the
rules). The table below must name every in-place method Tensor has: a new one fails the first test
until it is listed here."""
import inspect

import numpy as np
import pytest
from conftest import dev, rnd, to_np

import minigrad as mg
from minigrad.ops import registry, writes

# Python's augmented assignments; those Tensor defines must write in place (a missing one falls back
# to the out-of-place operator, rebinding the name, as Python does)
AUGMENTED = ("__iadd__", "__isub__", "__imul__", "__imatmul__", "__itruediv__", "__ifloordiv__", "__imod__",
             "__ipow__", "__ilshift__", "__irshift__", "__iand__", "__ixor__", "__ior__")
NOT_WRITES = {"requires_grad_"}  # sets a flag, writes no values

SIGNED = rnd((3, 4), away=(0.0,))          # both signs, off zero
POSITIVE = rnd((3, 4), low=0.5)            # a base for pow: log(x) in its gradient
ROW = np.array([2.0, -3.0, 1.5, 0.75])     # the other operand: broadcasts over the rows
EXPONENT = np.array([2.0, 3.0, 1.0, 2.0])
ROW1 = np.arange(3)[:, None] == 1          # the positions of t[1]


def _set_row(a, b):
    a = a.copy()
    a[1] = b
    return a


SCATTER_IDX = np.array([[2, 0, 1, 1], [2, 0, 0, 1]])  # scatter_add_ along dim 0: rows repeat, and sum
SCATTER_SRC = np.array([[1.0, -2.0, 0.5, 3.0], [-1.5, 2.5, 0.25, -0.75]])


def _scatter_add(a, b):
    a = a.copy()
    np.add.at(a, (SCATTER_IDX, np.arange(4)[None, :].repeat(2, 0)), b)
    return a


# (method, what it is called with, the out-of-place op, NumPy, the data, the other operand)
CASES = [
    ("add_", lambda t, o: t.add_(o), lambda t, o: t + o, lambda a, b: a + b, SIGNED, ROW),
    ("add_", lambda t, o: t.add_(o, alpha=2.0), lambda t, o: t + 2.0 * o, lambda a, b: a + 2.0 * b, SIGNED, ROW),
    ("sub_", lambda t, o: t.sub_(o), lambda t, o: t - o, lambda a, b: a - b, SIGNED, ROW),
    ("sub_", lambda t, o: t.sub_(o, alpha=0.5), lambda t, o: t - 0.5 * o, lambda a, b: a - 0.5 * b, SIGNED, ROW),
    ("mul_", lambda t, o: t.mul_(o), mg.mul, np.multiply, SIGNED, ROW),
    ("div_", lambda t, o: t.div_(o), mg.div, np.true_divide, SIGNED, ROW),
    ("pow_", lambda t, o: t.pow_(o), mg.pow, np.power, POSITIVE, EXPONENT),
    ("floor_divide_", lambda t, o: t.floor_divide_(o), mg.floordiv, np.floor_divide, SIGNED, ROW),
    ("remainder_", lambda t, o: t.remainder_(o), mg.mod, np.remainder, SIGNED * 3, ROW),
    ("fmod_", lambda t, o: t.fmod_(o), mg.fmod, np.fmod, SIGNED * 3, ROW),
    ("fmod_", lambda t, o: t.fmod_(o), mg.fmod, np.fmod, SIGNED * 3, -0.7),
    ("clamp_", lambda t, o: t.clamp_(-0.5, 1.0), lambda t, o: mg.clip(t, -0.5, 1.0),
     lambda a, b: np.clip(a, -0.5, 1.0), rnd((3, 4), away=(-0.5, 1.0)), None),
    ("clip_", lambda t, o: t.clip_(max=0.25), lambda t, o: mg.clip(t, max=0.25),
     lambda a, b: np.minimum(a, 0.25), rnd((3, 4), away=(0.25,)), None),
    ("fill_", lambda t, o: t.fill_(2.5), lambda t, o: mg.full_like(t, 2.5), lambda a, b: np.full_like(a, 2.5),
     SIGNED, None),
    ("zero_", lambda t, o: t.zero_(), mg.zeros_like, lambda a, b: np.zeros_like(a), SIGNED, None),
    ("copy_", lambda t, o: t.copy_(o), lambda t, o: mg.broadcast_to(o, t.shape),
     lambda a, b: np.broadcast_to(b, a.shape), SIGNED, ROW),
    # the unary ones (issue 42): the op's result written in place
    ("exp_", lambda t, o: t.exp_(), lambda t, o: mg.exp(t), lambda a, b: np.exp(a), SIGNED, None),
    ("log_", lambda t, o: t.log_(), lambda t, o: mg.log(t), lambda a, b: np.log(a), POSITIVE, None),
    ("sqrt_", lambda t, o: t.sqrt_(), lambda t, o: mg.sqrt(t), lambda a, b: np.sqrt(a), POSITIVE, None),
    ("abs_", lambda t, o: t.abs_(), lambda t, o: mg.abs(t), lambda a, b: np.abs(a), SIGNED, None),
    ("neg_", lambda t, o: t.neg_(), lambda t, o: mg.neg(t), lambda a, b: -a, SIGNED, None),
    ("sigmoid_", lambda t, o: t.sigmoid_(), lambda t, o: mg.sigmoid(t), lambda a, b: 1 / (1 + np.exp(-a)),
     SIGNED, None),
    ("tanh_", lambda t, o: t.tanh_(), lambda t, o: mg.tanh(t), lambda a, b: np.tanh(a), SIGNED, None),
    ("relu_", lambda t, o: t.relu_(), lambda t, o: mg.relu(t), lambda a, b: np.maximum(a, 0), SIGNED, None),
    ("sin_", lambda t, o: t.sin_(), lambda t, o: mg.sin(t), lambda a, b: np.sin(a), SIGNED, None),
    ("cos_", lambda t, o: t.cos_(), lambda t, o: mg.cos(t), lambda a, b: np.cos(a), SIGNED, None),
    ("floor_", lambda t, o: t.floor_(), lambda t, o: mg.floor(t), lambda a, b: np.floor(a), SIGNED * 3, None),
    ("ceil_", lambda t, o: t.ceil_(), lambda t, o: mg.ceil(t), lambda a, b: np.ceil(a), SIGNED * 3, None),
    ("round_", lambda t, o: t.round_(), lambda t, o: mg.round(t), lambda a, b: np.round(a), SIGNED * 3, None),
    ("round_", lambda t, o: t.round_(decimals=1), lambda t, o: mg.round(t, 1), lambda a, b: np.round(a, 1),
     SIGNED * 3, None),
    ("reciprocal_", lambda t, o: t.reciprocal_(), lambda t, o: mg.reciprocal(t), lambda a, b: 1 / a, SIGNED, None),
    ("square_", lambda t, o: t.square_(), lambda t, o: mg.square(t), lambda a, b: a * a, SIGNED, None),
    ("clamp_min_", lambda t, o: t.clamp_min_(0.25), lambda t, o: mg.clip(t, min=0.25),
     lambda a, b: np.maximum(a, 0.25), rnd((3, 4), away=(0.25,)), None),
    ("clamp_max_", lambda t, o: t.clamp_max_(-0.25), lambda t, o: mg.clip(t, max=-0.25),
     lambda a, b: np.minimum(a, -0.25), rnd((3, 4), away=(-0.25,)), None),
    ("tril_", lambda t, o: t.tril_(), lambda t, o: mg.tril(t), lambda a, b: np.tril(a), SIGNED, None),
    ("triu_", lambda t, o: t.triu_(1), lambda t, o: mg.triu(t, 1), lambda a, b: np.triu(a, 1), SIGNED, None),
    ("scatter_add_", lambda t, o: t.scatter_add_(0, mg.tensor(SCATTER_IDX), o),
     lambda t, o: mg.scatter_add(t, 0, mg.tensor(SCATTER_IDX), o), _scatter_add, SIGNED, SCATTER_SRC),
    # the draws, at parameters that make them constant (their randomness: tests/test_torch_inplace.py)
    ("uniform_", lambda t, o: t.uniform_(2.0, 2.0), lambda t, o: mg.full_like(t, 2.0),
     lambda a, b: np.full_like(a, 2.0), SIGNED, None),
    ("normal_", lambda t, o: t.normal_(1.5, 0.0), lambda t, o: mg.full_like(t, 1.5),
     lambda a, b: np.full_like(a, 1.5), SIGNED, None),
    ("bernoulli_", lambda t, o: t.bernoulli_(1.0), mg.ones_like, lambda a, b: np.ones_like(a), SIGNED, None),
    ("__iadd__", lambda t, o: t.__iadd__(o), mg.add, np.add, SIGNED, ROW),
    ("__isub__", lambda t, o: t.__isub__(o), mg.sub, np.subtract, SIGNED, ROW),
    ("__imul__", lambda t, o: t.__imul__(o), mg.mul, np.multiply, SIGNED, 1.5),
    ("__itruediv__", lambda t, o: t.__itruediv__(o), mg.div, np.true_divide, SIGNED, ROW),
    ("__ipow__", lambda t, o: t.__ipow__(o), mg.pow, np.power, POSITIVE, 3.0),
    ("__ifloordiv__", lambda t, o: t.__ifloordiv__(o), mg.floordiv, np.floor_divide, SIGNED, 0.75),
    ("__imod__", lambda t, o: t.__imod__(o), mg.mod, np.remainder, SIGNED * 3, ROW),
    ("__setitem__", lambda t, o: t.__setitem__(1, o), lambda t, o: mg.where(dev(ROW1), o, t), _set_row, SIGNED, ROW),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]
# the op name a write records and its errors give
OP_NAME = {"clip_": "clamp_", "__setitem__": "setitem", "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
           "__itruediv__": "div_", "__ipow__": "pow_", "__ifloordiv__": "floor_divide_", "__imod__": "remainder_"}


def _inplace_methods():
    """Every in-place method Tensor has: trailing ``_``, augmented assignments, the registry's in-place
    names and the functions of ops/writes.py (``setitem`` is ``__setitem__``)."""
    names = {n for n in dir(mg.Tensor) if n.endswith("_") and not n.startswith("_")} - NOT_WRITES
    names |= {n for n in AUGMENTED if hasattr(mg.Tensor, n)}
    names |= {n for op in registry().values() for n in op.inplace}
    for n, f in vars(writes).items():
        if inspect.isfunction(f) and f.__module__ == writes.__name__ and not n.startswith("_"):
            names.add("__setitem__" if n == "setitem" else n)
    return names


def test_every_inplace_method_is_tested_and_bound_to_a_write():
    methods = _inplace_methods()
    assert methods - {c[0] for c in CASES} == set(), "in-place methods missing from CASES"
    for name in methods:  # fmod_ was once bound to the out-of-place mod
        fn = getattr(mg.Tensor, name)
        assert fn.__module__ == writes.__name__, f"Tensor.{name} is {fn.__module__}.{fn.__name__}, not a write"


def _operand(b, **kw):
    return b if b is None or np.isscalar(b) else mg.tensor(b, **kw)


@pytest.mark.parametrize("name,call,oop,ref,a,b", CASES, ids=IDS)
def test_writes_into_the_tensor_and_matches_its_op_and_numpy(name, call, oop, ref, a, b):
    t = mg.tensor(a)
    view = t[1:]
    data, ver = t.data, t._version
    r = call(t, _operand(b))
    assert r is t
    assert t.data is data, "the tensor's array was replaced, not written"
    assert t._version == ver + 1 == view._version
    expected = ref(a, b)
    np.testing.assert_allclose(to_np(t), expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(to_np(view), expected[1:], rtol=1e-12, atol=1e-15)  # the storage holds it
    np.testing.assert_allclose(to_np(t), to_np(oop(mg.tensor(a), _operand(b))), rtol=1e-12, atol=1e-15)


def _grads(fn, a, b):
    x, o = mg.tensor(a, requires_grad=True), _operand(b, requires_grad=True)
    w = mg.tensor(np.random.default_rng(1).standard_normal(a.shape))
    out = fn(x * 1.0, o)
    if out.requires_grad:  # not where the op is not differentiable (floor_divide, fill, zeros, ...)
        (out * w).sum().backward()
    return [np.zeros(v.shape) if v.grad is None else to_np(v.grad) for v in (x, o) if isinstance(v, mg.Tensor)]


@pytest.mark.parametrize("name,call,oop,ref,a,b", CASES, ids=IDS)
def test_gradients_through_the_write_are_its_ops(name, call, oop, ref, a, b):
    def written(y, o):
        call(y, o)
        return y

    for g, want in zip(_grads(written, a, b), _grads(oop, a, b), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name,call,oop,ref,a,b", CASES, ids=IDS)
def test_a_leaf_that_requires_grad_refuses_the_write(name, call, oop, ref, a, b):
    w = mg.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"^{OP_NAME.get(name, name)}: a leaf tensor that requires grad"):
        call(w, _operand(b))
    assert w._version == 0
    np.testing.assert_array_equal(to_np(w), a)
    with mg.no_grad():  # as optimizers write
        call(w, _operand(b))
    np.testing.assert_allclose(to_np(w), ref(a, b), rtol=1e-12, atol=1e-15)
