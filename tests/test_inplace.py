"""In-place operations: values, version counters, the errors that keep gradients honest,
and correct gradients when a write is recorded (rebased histories, writes through views)."""
import numpy as np
import pytest

import minigrad as mg
from conftest import DEVICE, check, exact, leaf, leaf_of, rnd, to_np


# -- values and versions -----------------------------------------------------------------------

OPS = [
    ("add_", lambda t, o: t.add_(o), lambda a, o: a + o),
    ("add_alpha", lambda t, o: t.add_(o, alpha=2.5), lambda a, o: a + 2.5 * o),
    ("sub_", lambda t, o: t.sub_(o), lambda a, o: a - o),
    ("sub_alpha", lambda t, o: t.sub_(o, alpha=-3), lambda a, o: a + 3 * o),
    ("mul_", lambda t, o: t.mul_(o), lambda a, o: a * o),
    ("div_", lambda t, o: t.div_(o), lambda a, o: a / o),
    ("iadd", lambda t, o: t.__iadd__(o), lambda a, o: a + o),
    ("isub", lambda t, o: t.__isub__(o), lambda a, o: a - o),
    ("imul", lambda t, o: t.__imul__(o), lambda a, o: a * o),
    ("itruediv", lambda t, o: t.__itruediv__(o), lambda a, o: a / o),
    ("copy_", lambda t, o: t.copy_(o), lambda a, o: np.broadcast_to(o, a.shape)),
]


@pytest.mark.parametrize("name,op,ref", OPS, ids=[o[0] for o in OPS])
@pytest.mark.parametrize("other", ["tensor", "row", "scalar", "array"])
def test_values_and_version(name, op, ref, other):
    a = rnd((3, 4))
    o = {"tensor": rnd((3, 4), 1, low=0.5), "row": rnd((4,), 2, low=0.5), "scalar": 1.75,
         "array": rnd((3, 1), 3, low=0.5)}[other]
    t = mg.tensor(a.copy())  # mg.tensor keeps a NumPy array's memory: writes would reach `a`
    ver = t._storage.version
    arg = mg.tensor(o) if other in ("tensor", "row") else (mg.tensor(o).data if other == "array" else o)
    r = op(t, arg)
    assert r is t  # in place: the same tensor comes back
    np.testing.assert_allclose(to_np(t), ref(a, o), rtol=1e-12)
    assert t._storage.version == ver + 1


def test_augmented_assignment_keeps_the_object_and_storage():
    t = mg.arange(6.0)
    data, v = t.data, t[2:]
    ident = id(t)
    t += 1
    t -= 0.5
    t *= 2
    t /= 4
    assert id(t) == ident and t.data is data
    np.testing.assert_allclose(t.numpy(), (np.arange(6.0) + 0.5) * 2 / 4)
    np.testing.assert_allclose(v.numpy(), t.numpy()[2:])
    assert t._storage.version == 4


def test_zero_fill_clamp_copy():
    t = mg.tensor(rnd((3, 4)))
    t.clamp_(-0.5, 0.25)
    np.testing.assert_allclose(t.numpy(), np.clip(rnd((3, 4)), -0.5, 0.25))
    t.clamp_(min=0.0)
    assert t.numpy().min() >= 0
    t.clip_(max=0.1)
    assert t.numpy().max() <= 0.1
    t.fill_(2.5)
    assert (t.numpy() == 2.5).all()
    t.fill_(mg.tensor(4.0))
    assert (t.numpy() == 4.0).all()
    t.zero_()
    assert (t.numpy() == 0).all()
    t.copy_(mg.arange(4))  # broadcast and cast
    np.testing.assert_array_equal(t.numpy(), np.tile(np.arange(4.0), (3, 1)))
    assert t.dtype == mg.float64
    assert t._storage.version == 7
    with pytest.raises(ValueError, match="at least one"):
        t.clamp_()
    with pytest.raises(ValueError, match="does not broadcast"):
        t.copy_(mg.zeros(4, 3))
    with pytest.raises(ValueError, match="one-element"):
        t.fill_(mg.ones(2))


def test_setitem_values_and_version():
    t = mg.zeros(4, 5)
    t[1] = 1.0
    t[:, 2] = mg.arange(4.0)
    t[[0, 3], [4, 4]] = mg.tensor([7.0, 8.0])
    t[t > 7.5] = -1.0
    t[2, 1:3] = [5.0, 6.0]
    t[..., 0] = [0.0, 1.0, 2.0, 3.0]  # Python data lands on the tensor's device
    want = np.zeros((4, 5))
    want[1] = 1
    want[:, 2] = np.arange(4.0)
    want[[0, 3], [4, 4]] = [7, 8]
    want[want > 7.5] = -1
    want[2, 1:3] = [5, 6]
    want[..., 0] = np.arange(4.0)
    np.testing.assert_array_equal(t.numpy(), want)
    assert t._storage.version == 6
    with pytest.raises(ValueError, match="setitem"):
        t[0] = mg.ones(3)
    with pytest.raises(IndexError, match="setitem"):
        t[9] = 1.0


@pytest.mark.skipif(DEVICE == "cpu", reason="needs a device tensor")
def test_no_implicit_transfers_but_copy_(device):
    t = mg.zeros(3, device=device)
    for write in (lambda: t.add_(np.ones(3)), lambda: t.__setitem__(0, np.ones(())),
                  lambda: t.mul_(mg.ones(3, device="cpu"))):
        with pytest.raises(RuntimeError, match="same device"):
            write()
    t.copy_(np.arange(3.0))  # copy_ is the explicit transfer
    t.copy_(mg.arange(3.0, device="cpu") * 2)
    np.testing.assert_array_equal(to_np(t), [0, 2, 4])
    x = mg.tensor(np.ones(3), requires_grad=True, device="cpu")
    t.copy_(x * 3)
    t.sum().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_array_equal(x.grad.numpy(), [3, 3, 3])


def test_dtype_and_shape_rules_follow_numpy():
    i = mg.arange(4)
    i += 2          # int += int
    i *= 3
    np.testing.assert_array_equal(i.numpy(), (np.arange(4) + 2) * 3)
    with pytest.raises(TypeError, match="same_kind"):
        i += 0.5    # NumPy refuses to store a float result into an int array in place
    with pytest.raises(TypeError, match="same_kind"):
        i /= 2
    f = mg.zeros(3)
    f += mg.ones(3, dtype=mg.float64)  # float64 into float32: same kind, cast back
    assert f.dtype == mg.float32
    with pytest.raises(ValueError, match="never the tensor to a bigger shape"):
        f += mg.ones(2, 3)
    for write in (lambda: f.add_(mg.ones(4)), lambda: f.mul_(mg.ones(2)), lambda: f.div_(mg.ones(2, 3))):
        with pytest.raises(ValueError, match=r"^(add_|mul_|div_): the other operand of shape .* does not broadcast"):
            write()
    np.testing.assert_array_equal(f.numpy(), [1, 1, 1])  # nothing was written
    b = mg.zeros(3, dtype=mg.bool_)
    b[1] = True
    assert b.numpy().tolist() == [False, True, False]


# -- version counters protect saved tensors ---------------------------------------------------

def test_backward_refuses_a_saved_input_changed_in_place():
    x = leaf(3)
    y = x * 2
    z = (y * y).sum()   # mul saves y (version 0)
    y.add_(1)           # version 1
    with pytest.raises(RuntimeError, match=r"modified by an in-place operation: input 0 of op 'mul'.*version 0.*version 1"):
        z.backward()


def test_backward_refuses_a_saved_output_changed_in_place():
    x = leaf(3)
    y = x.exp()         # exp saves its output
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"its output of op 'exp'.*saved at version 0 and is now at version 1"):
        y.sum().backward()


def test_version_counter_is_shared_by_views():
    x = leaf((2, 3))
    y = x * 1
    z = (y.exp()).sum()  # saves exp's output, not y
    w = (y[0] * y[0]).sum()  # saves the view y[0]
    with mg.no_grad():
        y[1, 1] = 5.0   # a write anywhere in the storage bumps the one counter
    z.backward()        # exp's saved output is another storage: fine
    with pytest.raises(RuntimeError, match="input 0 of op 'mul'"):
        w.backward()


def test_write_under_no_grad_of_a_leaf_is_caught_by_backward():
    w = leaf(3)
    loss = (w * w).sum()
    with mg.no_grad():
        w.sub_(0.1)
    with pytest.raises(RuntimeError, match="version"):
        loss.backward()


# -- leaves ----------------------------------------------------------------------------------

@pytest.mark.parametrize("write", [
    lambda w: w.add_(1), lambda w: w.mul_(2), lambda w: w.zero_(), lambda w: w.fill_(1.0),
    lambda w: w.copy_(mg.ones(3)), lambda w: w.clamp_(0, 1), lambda w: w.__iadd__(1),
    lambda w: w.__setitem__(0, 1.0), lambda w: w.pow_(2), lambda w: w.__ipow__(2), lambda w: w.__ifloordiv__(2),
    lambda w: w.__imod__(2), lambda w: w.remainder_(2), lambda w: w.floor_divide_(2),
])
def test_leaf_requiring_grad_only_under_no_grad(write):
    w = leaf(3)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad.*no_grad"):
        write(w)
    assert w._storage.version == 0
    with mg.no_grad():
        write(w)
    assert w._storage.version == 1 and w.requires_grad and w.is_leaf


def test_view_of_a_leaf_requiring_grad():
    w = leaf((2, 3))
    with pytest.raises(RuntimeError, match="view of a leaf that requires grad"):
        w[0].zero_()
    with pytest.raises(RuntimeError, match="view of a leaf that requires grad"):
        w[0] += 1
    with pytest.raises(RuntimeError, match="view of a leaf that requires grad"):
        w.T[1] = 0.0
    with mg.no_grad():
        w[0] += 1
        w.T[1] = 0.0
    assert w.detach().numpy()[1, 1] == 0


def test_optimizer_style_update():
    w = leaf(4)
    for _ in range(3):
        loss = ((w - 1.0) ** 2).sum()
        loss.backward()
        with mg.no_grad():
            w -= 0.25 * w.grad
        w.grad = None
    np.testing.assert_allclose(w.detach().numpy(), 1 + (rnd(4) - 1) * 0.5 ** 3, rtol=1e-12)


def test_detached_alias_of_a_leaf_writes_values():
    w = leaf(3)
    loss = (w * 3).sum()  # saves nothing that depends on w's value
    w.detach().zero_()
    assert (w.detach().numpy() == 0).all()
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3, 3, 3])


def test_buffer_written_with_values_that_require_grad():
    x = leaf(3)
    buf = mg.zeros(2, 3, dtype=mg.float64)
    assert buf.is_leaf and not buf.requires_grad
    buf[1] = x * 2
    assert buf.requires_grad and not buf.is_leaf and buf.grad_fn.op == "setitem"
    (buf * buf).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * x.detach().numpy())
    acc = mg.zeros((), dtype=mg.float64)
    acc += (x * x).sum()
    assert acc.requires_grad


def test_int_tensor_written_with_float_values_records_nothing():
    x = leaf(3)
    i = mg.zeros(3, dtype=mg.int64)
    i[:] = x * 10
    assert not i.requires_grad and i.is_leaf


# -- recorded writes: gradients stay correct ---------------------------------------------------

def test_rebase_each_op():
    x, w = leaf((3, 4)), leaf((3, 4), 1, low=0.5)
    check(lambda x, w: (x * 1).add_(w, alpha=2), x, w)
    check(lambda x, w: (x * 1).sub_(w[0]), x, w)
    check(lambda x, w: (x * 1).mul_(w), x, w)
    check(lambda x, w: (x * 1).div_(w), x, w)
    check(lambda x, w: (x * 1).mul_(2.5).div_(4.0).add_(1.0), x, w)
    check(lambda x: (x * 1).clamp_(-0.5, 0.5) * x, leaf((3, 4), 5))
    check(lambda x, w: (x * 1).zero_() + w, x, w)
    check(lambda x, w: (x * 2).copy_(w[1]) * x, x, w)
    check(lambda x, w: (x * 2).fill_(w[0, 0]) * x, x, w)


def test_augmented_assignment_in_a_graph():
    def f(x, w):
        y = x * 1
        y += w
        y *= w
        y -= x
        y /= w
        return y

    check(f, leaf((2, 3)), leaf((2, 3), 1, low=0.5))


def test_self_aliasing_operands():
    check(lambda x: (x * 1).mul_((x * 1)), leaf(4))

    def f(x):
        y = x * 1
        y.mul_(y)           # other is y itself: its old value is saved
        return y

    def g(x):
        y = x * 1
        y.div_(y[::-1])    # other is a view of the same storage
        return y

    def h(x):
        y = x + 1
        y[1:] = y[:-1]     # overlapping copy
        return y

    check(f, leaf(4))
    check(g, leaf(4, low=0.5))
    check(h, leaf(4))


def test_setitem_gradients():
    x, v = leaf((3, 4)), leaf(4, 1)
    check(lambda x, v: _set(x * 1, 1, v), x, v)
    check(lambda x, v: _set(x * 1, (slice(None), 2), v[:3]), x, v)
    check(lambda x, v: _set(x * 1, (np.array([0, 2]), np.array([1, 3])), v[:2]), x, v)
    check(lambda x, v: _set(x * 1, x.detach() > 0, 2.0) * x, x, v)
    check(lambda x, v: _set(x * 1, (Ellipsis, 0), v[0]), x, v)  # a value broadcast to a column


def _set(t, idx, value):
    t[idx] = value
    return t


def test_setitem_repeated_indices_the_last_write_wins_and_gets_the_gradient():
    x = leaf(4)
    v = leaf(3, 1)
    y = x * 1
    y[[0, 0, 2]] = v       # v[0] is overwritten by v[1] at position 0
    np.testing.assert_allclose(y.detach().numpy(), [v.detach().numpy()[1], x.detach().numpy()[1], v.detach().numpy()[2], x.detach().numpy()[3]])
    (y * mg.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), [0.0, 1.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0, 0.0, 4.0])
    check(lambda x, v: _set(x * 1, [3, 1, 3, 3], v[:4] if v.shape[0] >= 4 else mg.cat([v, v])[:4]), x, leaf(4, 2))


def test_write_through_a_view_in_a_graph():
    x, w = leaf((3, 4)), leaf((3, 4), 1)

    def row_iadd(x, w):
        h = x * 1
        h[0] += w[1]          # += on a view, then the assignment back
        return h * x

    def col_set(x, w):
        h = x * 2
        h[:, 1] = w[:, 0]
        return h

    def transposed(x, w):
        h = x * 1
        h.T[1:3].mul_(w.T[:2])  # a view of a view, non-contiguous
        return h * h

    def reshaped(x, w):
        h = (x * 1).reshape(12)
        h.view(4, 3)[1:].add_(w.reshape(4, 3)[1:] * 2)
        return h.reshape(3, 4) * w

    def into_plain_buffer(x, w):
        buf = mg.zeros(4, 4, dtype=mg.float64)
        buf.T[1:][:, :3] = x[:, :3] * w[:, :3]
        return buf * buf

    for f in (row_iadd, col_set, transposed, reshaped, into_plain_buffer):
        check(f, x, w)


def test_views_taken_before_a_write_are_re_derived():
    def f(x):
        h = x * 3
        a = h[0]           # taken before the write
        before = a * 1     # used before: sees the old values
        h.mul_(2)
        return before + a * 5 + h.sum(0)  # used after: a is re-derived from h's new history

    check(f, leaf((3, 4)))
    x = leaf((3, 4))
    h = x * 3
    a = h[0]
    h.mul_(2)
    (a * 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[6] * 4, [0] * 4, [0] * 4])


def test_broadcast_views_taken_before_a_write_are_re_derived():
    def f(x, w):
        y = x * 1
        e = y.expand(3, 4)    # zero strides: each element of y appears three times
        y.mul_(w[0])
        return e * w

    check(f, leaf(4), leaf((3, 4), 1))


def test_views_taken_before_the_storage_required_grad():
    def halves(x, w):
        out = mg.zeros(2, 6, dtype=mg.float64)
        left, right = out[:, :3], out[:, 3:]  # plain views: out does not require grad yet
        left[:] = x * 2                       # out requires grad from here on
        right[:] = x * w                      # right was given a history by that write
        return (left * right) + out[:, 1:4] * out[:, 2:5]

    check(halves, leaf((2, 3)), leaf((2, 3), 1))

    x = leaf(2)
    buf = mg.zeros(3, dtype=mg.float64)
    with mg.no_grad():
        tail = buf[1:]                        # taken under no_grad, of a plain tensor
    d = buf.detach()
    buf[1:] = x * 3
    assert tail.requires_grad and not d.requires_grad
    (tail * tail).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 18 * x.detach().numpy())


def test_plain_views_are_remembered_weakly():
    t = mg.zeros(10)
    keep = [t[i] for i in range(3)]
    for i in range(1000):
        t[i % 10 :]  # a view, dropped at once
    assert len(t._storage.views) < 100 and t._storage.version == 0
    x = leaf(10)
    t.copy_(x)
    assert all(k.requires_grad for k in keep)


def test_detached_alias_of_a_graph_tensor_cannot_be_written_with_grad():
    x = leaf(3)
    y = x * 2
    with pytest.raises(RuntimeError, match="not part of that graph"):
        y.detach().mul_(5)
    with mg.no_grad():
        v = y[1:]
    with pytest.raises(RuntimeError, match="not part of that graph"):
        v.zero_()
    with mg.no_grad():
        y.detach().add_(1)   # the user asked for it
    np.testing.assert_allclose(y.detach().numpy(), 2 * x.detach().numpy() + 1)


def test_retain_grad_follows_the_rebase():
    x = leaf(3)
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 2 * y.detach().numpy())


def test_grad_fn_and_tape_show_the_writes():
    x = leaf((2, 3))
    y = x * 1
    y.add_(1)
    y[0] = 0.0
    y.T[0].mul_(2)
    assert y.grad_fn.op == "copy_slices" and y.grad_fn.info["op"] == "mul_"
    ops = [n.op for n in mg.autograd.tape(y)]
    assert ops[:3] == ["mul", "add_", "setitem"] and ops[-1] == "copy_slices"


def test_copy_to_and_from_other_dtypes_is_differentiable():
    x = leaf(3)
    y = mg.zeros(2, 3, dtype=mg.float32)
    y.copy_(x * 2)
    assert y.dtype == mg.float32 and y.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4, 4, 4])
    assert x.grad.dtype == mg.float64


def test_second_order_through_writes():
    def f(x):
        y = x * 1
        y.mul_(x)
        y[1] = y[0].clone() * x[2]  # (y[0] * x[2] would save the view y[0], which the write changes)
        return y * x

    check(f, leaf(3))


# -- memory that must not be written -------------------------------------------------------------

def test_broadcast_views_cannot_be_written():
    t = mg.zeros(4)
    e = t.expand(3, 4)
    for write in (lambda e: e.add_(1), lambda e: e.__setitem__((0, 0), 1.0), lambda e: e.zero_()):
        with pytest.raises(RuntimeError, match="broadcast .expanded. tensor.*share one memory location"):
            write(e)
    assert (t.numpy() == 0).all() and t._storage.version == 0
    with pytest.raises(RuntimeError, match="broadcast"):
        t[None].broadcast_to((2, 4)).mul_(2)
    c = e.clone()
    c.add_(1)  # a clone is fine
    assert (c.numpy() == 1).all()


def test_grad_is_copied_on_write():
    x = leaf(3)
    (x * 2).sum().backward()
    g = x.grad
    g.mul_(0.5)   # .grad arrays are read-only views: the tensor gets its own copy
    np.testing.assert_allclose(x.grad.numpy(), [1, 1, 1])
    x.grad.zero_()
    assert (x.grad.numpy() == 0).all()
    x.grad += 1.0
    np.testing.assert_allclose(x.grad.numpy(), [1, 1, 1])


@pytest.mark.skipif(DEVICE != "cpu", reason="CuPy arrays have no read-only flag: a shared .grad is not detectable")
def test_writing_one_grad_leaves_a_grad_that_shares_its_array_alone():
    a, b = leaf(3), leaf(3, 1)
    (a + b).sum().backward()  # add sends the same gradient array to both
    a.grad.zero_()
    np.testing.assert_array_equal(a.grad.numpy(), [0, 0, 0])
    np.testing.assert_array_equal(b.grad.numpy(), [1, 1, 1])
    s = leaf((2, 3))
    s.sum().backward()        # sum's gradient is a broadcast (read-only, zero strides)
    s.grad[0] = 5.0
    np.testing.assert_array_equal(s.grad.numpy(), [[5, 5, 5], [1, 1, 1]])


@pytest.mark.skipif(DEVICE != "cpu", reason="read-only memory is a NumPy notion")
def test_views_of_read_only_memory_cannot_be_written():
    x = leaf((2, 3))
    (x * 2).sum().backward()
    with pytest.raises(RuntimeError, match="read-only memory"):
        x.grad[0].zero_()
    ro = np.ones(3)
    ro.flags.writeable = False
    t = mg.Tensor(ro)
    t.add_(1)  # not a view: copy-on-write, the user's array is untouched
    np.testing.assert_array_equal(ro, [1, 1, 1])
    np.testing.assert_array_equal(t.numpy(), [2, 2, 2])


# -- an oracle: the same programs in PyTorch ------------------------------------------------------

PROGRAMS = {
    "chain": lambda x, w, L: (x * 2).mul_(w).add_(x, alpha=3).div_(w + 3),
    "setitem": lambda x, w, L: _prog_setitem(x, w),
    "view_iadd": lambda x, w, L: _prog_view(x, w),
    "stale_view": lambda x, w, L: _prog_stale(x, w),
    "clamp_copy": lambda x, w, L: _prog_clamp(x, w),
}


def _prog_setitem(x, w):
    y = x * 1
    y[1] = w[0] * 5
    y[0, 1:] += w[1, :2]
    return y * y


def _prog_view(x, w):
    h = x * 1
    h.T[1].mul_(w[0])
    z = h[1:]
    z += w[:2]
    z.mul_(2)
    return h * x + z.sum()


def _prog_stale(x, w):
    h = x * 3
    a = h[0]
    b = a * 1
    h.mul_(w)
    return b + a * 3 + h.sum()


def _prog_clamp(x, w):
    y = x + 0
    y.clamp_(-0.5, 0.5)
    y.copy_((y * 2) * w)  # (y * w would save y, which copy_ changes: an error, in PyTorch too)
    return y


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_against_pytorch(name):
    torch = pytest.importorskip("torch")
    a, b = rnd((3, 3)), rnd((3, 3), 1)
    xs = [mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)]
    ts = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    out_m, out_t = PROGRAMS[name](*xs, mg), PROGRAMS[name](*ts, torch)
    g = rnd(tuple(out_t.shape), 2)
    out_m.backward(mg.tensor(g))
    out_t.backward(torch.tensor(g))
    np.testing.assert_allclose(to_np(out_m), out_t.detach().numpy(), rtol=1e-12)
    for x, t in zip(xs, ts, strict=True):
        np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-10, atol=1e-12)


# -- random programs of views and writes, against PyTorch -----------------------------------------

_VIEWS = ["[1]", "[:, 1]", "[1:, :2]", ".T", "[0:2]", ".T[1:]", "[::2]", ".reshape(12)[2:8]", "[:, 1:3]"]
_WRITES = ["add_", "sub_", "mul_", "div_", "clamp_", "zero_", "fill_", "copy_", "set", "iadd", "pow", "rem"]


def _operand(src, t, X, W):
    if src == "c":
        return 0.7
    o = X if src == "X" else W
    return o[: t.shape[-1]] if t.ndim == 1 else o[: t.shape[0], : t.shape[1]]


def _run_program(lib, prog, a, b):
    X, W = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
    env = {"h": X * 1.5}
    used = []
    for step in prog:
        if step[0] == "view":
            env[step[1]] = eval("h" + step[2], {"h": env["h"]})  # noqa: S307 - fixed strings above
        elif step[0] == "use":
            used.append(eval(step[2], {"t": env[step[1]]}))  # noqa: S307
        else:
            _, target, op, src = step
            t = env[target]
            o = _operand(src, t, X, W)
            if op in ("add_", "sub_", "mul_"):
                getattr(t, op)(o)
            elif op == "div_":
                t.div_(o if src == "c" else o * o + 1)
            elif op == "clamp_":
                t.clamp_(-1, 1)
            elif op == "zero_":
                t.zero_()
            elif op == "fill_":
                t.fill_(0.3)
            elif op == "copy_":
                t.copy_(o if src != "c" else t * 0 + o)
            elif op == "set":
                t[0] = o[0] if src != "c" else o
            elif op == "pow":
                t **= 2
            elif op == "rem":
                t %= (o.abs() + 0.5) if src != "c" else o
            else:
                t += o
    out = (env["h"] ** 2).sum() + sum((u * u).sum() * 0.1 for u in used)
    out.backward()
    gw = W.grad.numpy() if W.grad is not None else np.zeros_like(b)
    return float(out.item()), X.grad.numpy(), gw


def _random_program(rng):
    prog, names = [], ["h"]
    for _ in range(int(rng.integers(1, 7))):
        r = rng.random()
        if r < 0.3:
            names.append(f"v{len(names)}")
            prog.append(("view", names[-1], str(rng.choice(_VIEWS))))
        elif r < 0.8:
            prog.append(("write", str(rng.choice(names)), str(rng.choice(_WRITES)), str(rng.choice(["W", "X", "c"]))))
        else:
            prog.append(("use", str(rng.choice(names)), str(rng.choice(["t.exp()", "t * 2", "t.tanh()", "t.sum()"]))))
    return prog


def test_random_programs_of_views_and_writes_against_pytorch():
    """Every program either gives PyTorch's values and gradients, or raises where PyTorch raises
    (a saved tensor changed in place): never a silently different gradient."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2024)
    a, b = rnd((3, 4)), rnd((4, 4), 1)
    errors = 0
    for _ in range(200):
        prog = _random_program(rng)
        res = {}
        for name, lib in (("mg", mg), ("torch", torch)):
            try:
                res[name] = _run_program(lib, prog, a, b)
            except (RuntimeError, ValueError) as e:  # a changed saved tensor; shapes that do not fit
                res[name] = e
        m, t = res["mg"], res["torch"]
        if isinstance(m, Exception) or isinstance(t, Exception):
            assert isinstance(m, Exception) and isinstance(t, Exception), (prog, m, t)
            errors += 1
            continue
        np.testing.assert_allclose(m[0], t[0], rtol=1e-10, err_msg=str(prog))
        np.testing.assert_allclose(m[1], t[1], rtol=1e-9, atol=1e-10, err_msg=str(prog))
        np.testing.assert_allclose(m[2], t[2], rtol=1e-9, atol=1e-10, err_msg=str(prog))
    assert 0 < errors < 100  # both kinds of program were exercised


def test_errors_name_the_op_that_was_called():
    x = leaf((3,))
    for name, write in [("zero_", lambda t: t.zero_()), ("fill_", lambda t: t.fill_(1.0)),
                        ("clamp_", lambda t: t.clamp_(0, 1)), ("setitem", lambda t: t.__setitem__(0, 1.0))]:
        with pytest.raises(RuntimeError, match=f"^{name}: a leaf tensor that requires grad"):
            write(x)
    y = x * 1
    y.zero_()
    assert y.grad_fn.op == "zero_"


def test_in_place_ops_report_to_the_profile():
    x = leaf((4, 3))
    with mg.autograd.profile() as p:
        y = x * 1
        y.mul_(x)                 # saves the old y and x for backward
        y[0] = 0.0
        y.add_(1.0)
        with mg.no_grad():
            z = mg.zeros(3)
            z.fill_(2.0)
            z += 1
        y.sum().backward()
    s = p.stats
    for op in ("mul_", "setitem"):
        assert s[op].calls == 1 and s[op].backward_calls == 1 and s[op].forward_s > 0, s[op]
    assert s["mul_"].saved_bytes >= 2 * x.data.nbytes
    assert (s["add_"].calls, s["add_"].backward_calls) == (2, 1)  # z += 1 under no_grad records nothing
    assert (s["fill_"].calls, s["fill_"].backward_calls) == (1, 0)


# -- **=, //=, %= are in place too (pow_, floor_divide_, remainder_) ----------------------------------

@pytest.mark.parametrize("name,write,ref", [
    ("ipow", lambda t: t.__ipow__(2), lambda a: a ** 2),
    ("pow_tensor", lambda t: t.pow_(mg.tensor([1.0, 2.0, 0.5, 3.0])), lambda a: a ** np.array([1.0, 2.0, 0.5, 3.0])),
    ("ifloordiv", lambda t: t.__ifloordiv__(0.75), lambda a: a // 0.75),
    ("floor_divide_", lambda t: t.floor_divide_(mg.tensor([2.0, 3.0, 1.5, 4.0])), lambda a: a // [2.0, 3.0, 1.5, 4.0]),
    ("imod", lambda t: t.__imod__(0.75), lambda a: a % 0.75),
    ("remainder_", lambda t: t.remainder_(mg.tensor([2.0, -3.0, 1.5, 4.0])), lambda a: a % np.array([2.0, -3.0, 1.5, 4.0])),
])
def test_pow_floordiv_mod_write_in_place(name, write, ref, device):
    a = rnd((3, 4), low=0.25)
    t = mg.tensor(a, device=device)
    v, tt = t[1:], t.T
    data, ident, ver = t.data, id(t), t._version
    r = write(t)
    assert r is t and id(t) == ident and t.data is data  # the same object and storage
    np.testing.assert_allclose(to_np(t), ref(a), rtol=1e-12)
    np.testing.assert_allclose(to_np(v), ref(a)[1:], rtol=1e-12)  # views see the write
    np.testing.assert_allclose(to_np(tt), ref(a).T, rtol=1e-12)
    assert t._version == ver + 1 == v._version


def test_augmented_pow_floordiv_mod_keep_the_object():
    t = mg.arange(6.0)
    ident, v = id(t), t[2:]
    t **= 2
    t //= 3
    t %= 4
    assert id(t) == ident and t._version == 3
    np.testing.assert_array_equal(v.numpy(), ((np.arange(6.0) ** 2 // 3) % 4)[2:])


def test_pow_floordiv_mod_dtype_rules_and_errors():
    i = mg.arange(5)
    i **= 2
    i //= 3
    i %= 2
    np.testing.assert_array_equal(i.numpy(), (np.arange(5) ** 2 // 3) % 2)
    assert i.dtype == mg.int64
    with pytest.raises(TypeError, match="^remainder_: .*same_kind"):
        i %= 2.5
    with pytest.raises(TypeError, match="^pow_: .*same_kind"):
        i **= 0.5
    with pytest.raises(ValueError, match=r"^pow_: Integers to negative integer powers.*int64"):
        i **= -1
    f = mg.zeros(3)
    with pytest.raises(ValueError, match="^floor_divide_: the other operand of shape .* does not broadcast"):
        f //= mg.ones(2, 3)
    assert f._version == 0


def test_pow_and_mod_gradients():
    x, w = leaf((3, 4), low=0.5), leaf((3, 4), 1, low=0.5)
    check(lambda x: (x * 1).pow_(3), x)
    check(lambda x, w: (x * 1).pow_(w), x, w)                  # tensor exponent: d/dw x ** w = x ** w log x
    check(lambda x, w: (x * 1).pow_(w[0]), x, w)               # a broadcast exponent: its gradient is summed back
    check(lambda x, w: _ipow_view(x, w), x, w)                 # **= through a transposed view
    check(lambda x, w: (x * 3).remainder_(w + 0.1), x, w, gg=False)  # (gradgrad: floor() has none to give)
    check(lambda x: _imod(x * 3, 0.7), x)

    def pow_self(x):
        y = x * 1
        y.pow_(y)          # the exponent is the tensor itself: its old value is saved
        return y

    check(pow_self, x)


def _ipow_view(x, w):
    h = x * 1
    v = h.T[1:3]
    v **= w.T[:2]
    return h * x


def _imod(t, d):
    t %= d
    return t


def test_floor_divide_has_a_zero_gradient():
    x = leaf((2, 3), low=0.5)
    y = x * 3
    y //= 0.5
    assert y.grad_fn.op == "floor_divide_"
    (y * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (x.detach().numpy() * 3) // 0.5)  # only through the product
    w = leaf(3, 1, low=1.0)
    z = x * 1
    z.floor_divide_(w)  # not differentiable in the divisor either (as x // w): w gets nothing
    (z * 1.0).sum().backward()
    assert w.grad is None


def test_version_is_public_and_shared_by_views():
    t = mg.zeros(3, 4)
    v = t[1]
    assert t._version == v._version == 0
    v += 1
    t[0, 0] = 2.0
    assert t._version == v._version == 2
    c = t.clone()
    assert c._version == 0


def test_pow_mod_against_pytorch():
    torch = pytest.importorskip("torch")
    a, b = rnd((3, 4), low=0.5), rnd((3, 4), 1)

    def prog(lib, x, w):
        y = x * 1
        y **= 2
        z = y * 1
        z.pow_(w[0])
        h = x * 3
        h %= w.abs() + 0.7
        v = x * 2
        v.T[1] **= 3
        return (z * 1.5).sum() + (h * h).sum() + (v * v).sum()

    res = []
    for lib in (mg, torch):
        x, w = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        out = prog(lib, x, w)
        out.backward()
        res.append((out.item(), to_np(x.grad) if lib is mg else x.grad.numpy(), to_np(w.grad) if lib is mg else w.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-10)
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-10, atol=1e-12)


# -- index tensors are saved with their versions: a changed index is refused, never a wrong gradient -------

def test_getitem_refuses_an_index_tensor_changed_in_place():
    x = leaf(4)
    for make in (lambda: mg.tensor([0, 1]), lambda: x.detach() > 0):
        idx = make()
        y = x[idx] * 1.0
        with mg.no_grad():
            idx[0] = idx[1]
        with pytest.raises(RuntimeError, match=r"input 1 of op 'getitem'.*saved at version 0 and is now at version 1"):
            y.sum().backward()
    idx = mg.tensor([2, 0])
    y = x[idx, None]
    y.sum().backward()  # unchanged: fine
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 1, 0])


def test_setitem_and_index_add_refuse_an_index_tensor_changed_in_place():
    x, v = leaf(4), leaf(2, 1)
    h = x * 1
    i = mg.tensor([0, 1])
    h[i] = v * 2
    i[0] = 3
    with pytest.raises(RuntimeError, match=r"input 1 of op 'setitem'.*version 0 and is now at version 1"):
        h.sum().backward()
    j = mg.tensor([0, 2])
    s = mg.index_add((4,), j, v * 1)
    j += 1
    with pytest.raises(RuntimeError, match=r"input 1 of op 'index_add'.*version 0 and is now at version 1"):
        s.sum().backward()


def test_index_add_errors_name_the_op():
    with pytest.raises(IndexError, match=r"^index_add: index 5 is out of bounds.*shape \(3,\)\)$"):
        mg.index_add((3,), [5], mg.ones(1))
    with pytest.raises(ValueError, match=r"^index_add: values of shape \(3,\) do not fit"):
        mg.index_add((3,), [0, 1], mg.ones(3))


# -- what a recorded write keeps for backward is counted, and released by backward ----------------------

def test_saved_bytes_of_writes_count_positions_and_masks():
    x, w = leaf((30, 40)), leaf(40, 1)
    h = x * 1
    h[0].add_(w)                     # through a view: copy_slices keeps the view's positions and a mask
    n = h.grad_fn
    assert n.op == "copy_slices"
    assert n.saved_bytes >= 40 * 8 + 30 * 40  # int64 positions of the row, a bool mask of the base
    g = h * 1
    g[mg.tensor([1, 2, 1])] = w[:3, None].expand(3, 40) * 1   # advanced: mask, index, winners
    s = g.grad_fn
    assert s.op == "setitem" and s.saved_bytes >= 30 * 40 + 3 * 8
    rows = str(mg.autograd.tape(g))
    assert "copy_slices" in rows and "setitem" in rows
    g.sum().backward()
    assert n.freed and n.saved == () and s.saved == ()
    assert "freed" in str(mg.autograd.tape(g))


# -- index and mask arguments saved by ops other than indexing --------------------------------

def test_where_refuses_a_condition_changed_before_backward():
    x = mg.tensor(rnd((4,)), requires_grad=True)
    cond = mg.tensor(np.array([True, False, True, False]))
    y = mg.where(cond, x, 0.0)
    cond[0] = False
    with pytest.raises(RuntimeError, match=r"input 0 of op 'where'.*version 0 and is now at version 1"):
        y.sum().backward()


def test_where_with_a_non_bool_condition_keeps_its_own_mask():
    x = mg.tensor(rnd((3,)), requires_grad=True)
    cond = mg.tensor(np.array([1, 0, 2]))
    y = mg.where(cond, x, 0.0)
    cond.zero_()                            # the mask was cast (copied) at the call: unaffected
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [1.0, 0.0, 1.0])


@pytest.mark.parametrize("shape", [(4, 3), (3,), (2, 3, 2)])
def test_cross_entropy_refuses_a_target_changed_before_backward(shape):
    x = mg.tensor(rnd(shape), requires_grad=True)
    tshape = {2: (4,), 1: (), 3: (2, 2)}[len(shape)]
    target = mg.tensor(np.zeros(tshape, dtype=np.int64))
    loss = mg.nn.functional.cross_entropy(x, target)
    target.fill_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()


def test_embedding_refuses_indices_changed_before_backward():
    w = mg.tensor(rnd((5, 2)), requires_grad=True)
    idx = mg.tensor(np.array([0, 2, 2]))
    out = mg.nn.functional.embedding(idx, w)
    idx[1] = 4
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        out.sum().backward()
    idx = mg.tensor(np.array([0, 2, 2]))
    out = mg.nn.Embedding(5, 2)(idx)
    out.sum().backward()                    # unchanged indices: fine, and repeats accumulate


# -- a view written through its base since it was taken: as the root of backward, with retain_grad() ---

def _stale_view():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1.0
    v = b[:]
    return x, b, v


def test_stale_view_as_backward_root_reads_the_write():
    x, b, v = _stale_view()
    b.mul_(2.0)
    v.backward(mg.ones(3))
    exact(x.grad, [2, 2, 2])


def test_stale_view_as_grad_output_reads_the_write():
    x, b, v = _stale_view()
    b.mul_(2.0)
    (gx,) = mg.grad(v, x, mg.ones(3))
    exact(gx, [2, 2, 2])


def test_stale_view_keeps_retain_grad_taken_before_the_write():
    # the engine re-derives the view's history at the root (engine.edge -> inplace.refresh_view);
    # retain_grad() taken on the old history must follow it (ops/inplace.py:view_history)
    x, b, v = _stale_view()
    v.retain_grad()
    b.mul_(2.0)
    v.backward(mg.ones(3))
    exact(x.grad, [2, 2, 2])
    assert v.grad is not None
    exact(v.grad, [1, 1, 1])


def test_stale_view_inside_the_graph_keeps_retain_grad():
    x, b, v = _stale_view()
    v.retain_grad()
    b.mul_(2.0)
    (v * mg.tensor([1.0, 2.0, 3.0])).sum().backward()
    exact(x.grad, [2, 4, 6])
    exact(v.grad, [1, 2, 3])


# -- setitem: overwritten positions select the upstream gradient away; a bad value shape -----------

def test_setitem_overwritten_positions_select_a_nan_upstream_gradient_away():
    y = leaf_of([1.0, 2.0, 3.0])
    b = y * 1.0
    b[1] = 5.0
    b.backward(mg.tensor([1.0, np.nan, 1.0], dtype=mg.float64))
    exact(y.grad, [1, 0, 1])
    # and an inf in the upstream gradient of an overwritten advanced-index position
    z = leaf_of([1.0, 2.0, 3.0, 4.0])
    c = z * 1.0
    c[mg.tensor([0, 2])] = mg.tensor([7.0, 8.0], dtype=mg.float64)
    c.backward(mg.tensor([np.inf, 1.0, -np.inf, 1.0], dtype=mg.float64))
    exact(z.grad, [0, 1, 0, 1])


def test_recorded_setitem_with_a_bad_value_shape_starts_with_setitem():
    x = mg.ones((3, 4), requires_grad=True)
    b = x * 1.0

    def bad():
        b[0] = mg.ones(2, requires_grad=True)

    with pytest.raises(ValueError) as info:
        bad()
    assert str(info.value).startswith("setitem:"), str(info.value)
    # a value of shape (1,) broadcasts over the row (as in NumPy); its gradient sums back
    v = mg.ones(1, requires_grad=True)
    b[0] = v
    b.backward(mg.ones((3, 4)))
    exact(v.grad, [4])
    exact(x.grad, [[0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]])
