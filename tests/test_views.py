"""Views and storage: memory shared exactly where NumPy shares it, strides in elements,
storage offsets, contiguity, and writes through a view seen by every view of the storage."""
import numpy as np
import pytest

import minigrad as mg
from conftest import to_np


def shares(a, b):
    """Whether two tensors' arrays share memory (NumPy, CuPy and the stand-in all answer this)."""
    return bool(mg.backend.array_module(a.data).may_share_memory(a.data, b.data))


def host_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


# -- strides, offsets, contiguity ----------------------------------------------------------------

def test_the_issue_examples():
    t = mg.arange(12).reshape(3, 4)
    assert t.stride() == (4, 1)
    assert t.T.stride() == (1, 4)
    assert t[1, :].storage_offset() == 4
    assert t.stride(0) == 4 and t.stride(-1) == 1
    assert t.is_contiguous() and not t.T.is_contiguous()


VIEWS = {
    "row": lambda t: t[1],
    "col": lambda t: t[:, 2],
    "step": lambda t: t[1:, ::2],
    "neg": lambda t: t[::-1, 1:3],
    "T": lambda t: t.T,
    "transpose01": lambda t: t.transpose(0, 1),
    "swapaxes": lambda t: t.swapaxes(0, 1),
    "permute3": lambda t: t.reshape(3, 2, 2).permute(2, 0, 1),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "none": lambda t: t[None, :, None],
    "ellipsis": lambda t: t[..., 1],
    "reshape": lambda t: t.reshape(2, 6),
    "view": lambda t: t.view(6, 2),
    "flatten": lambda t: t.flatten(),
    "expand": lambda t: t[:1].expand(5, 4),
    "broadcast_to": lambda t: t[0].broadcast_to((3, 2, 4)),
    "scalar": lambda t: t[2, 3],
}
NP_VIEWS = {
    "row": lambda a: a[1],
    "col": lambda a: a[:, 2],
    "step": lambda a: a[1:, ::2],
    "neg": lambda a: a[::-1, 1:3],
    "T": lambda a: a.T,
    "transpose01": lambda a: a.swapaxes(0, 1),
    "swapaxes": lambda a: a.swapaxes(0, 1),
    "permute3": lambda a: a.reshape(3, 2, 2).transpose(2, 0, 1),
    "unsqueeze": lambda a: a[:, None],
    "none": lambda a: a[None, :, None],
    "ellipsis": lambda a: a[..., 1],
    "reshape": lambda a: a.reshape(2, 6),
    "view": lambda a: a.reshape(6, 2),
    "flatten": lambda a: a.reshape(-1),
    "expand": lambda a: np.broadcast_to(a[:1], (5, 4)),
    "broadcast_to": lambda a: np.broadcast_to(a[0], (3, 2, 4)),
    "scalar": lambda a: a[2, 3, ...],
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_views_share_storage_like_numpy(name, device):
    base_np = np.arange(12.0).reshape(3, 4)
    t = mg.tensor(base_np, device=device)
    v = VIEWS[name](t)
    want = NP_VIEWS[name](base_np)
    np.testing.assert_array_equal(to_np(v), want)
    assert shares(v, t)
    # size-1 dims have no meaningful stride (NumPy and PyTorch fill in different numbers)
    assert [s for s, n in zip(v.stride(), v.shape, strict=True) if n != 1] == [s for s, n in zip(host_strides(want), want.shape, strict=True) if n != 1]
    assert v.storage_offset() == (want.__array_interface__["data"][0] - base_np.__array_interface__["data"][0]) // 8
    assert v.is_contiguous() == bool(want.flags.c_contiguous)
    assert v._storage is t._storage  # one version counter per storage
    assert v._base is t  # the root tensor owning the storage


def test_storage_offset_through_chains_of_views():
    t = mg.arange(60).reshape(3, 4, 5)
    v = t[1][2:][:, 1:]
    assert v.storage_offset() == 20 + 10 + 1
    assert v.stride() == (5, 1)
    assert t.permute(2, 0, 1)[3, 1].storage_offset() == 23
    assert v._base is t._base  # the root: the arange that reshape viewed


@pytest.mark.parametrize("make", [
    lambda t: t.T.reshape(12),
    lambda t: t[:, 1:3].reshape(6),
    lambda t: t.T.flatten(),
    lambda t: t[[0, 2]],
    lambda t: t[t > 3],
    lambda t: t.T.contiguous(),
    lambda t: t.clone(),
    lambda t: t + 0,
])
def test_copies_do_not_share(make):
    t = mg.arange(12.0).reshape(3, 4)
    c = make(t)
    assert not shares(c, t)
    assert c._storage is not t._storage and c._base is None


def test_view_raises_where_reshape_copies():
    t = mg.arange(12.0).reshape(3, 4).T
    with pytest.raises(RuntimeError, match=r"view: shape \(12,\) is not compatible with the strides \(1, 4\)"):
        t.view(12)
    r = t.reshape(12)
    assert not shares(r, t)
    np.testing.assert_array_equal(r.numpy(), np.arange(12.0).reshape(3, 4).T.reshape(12))
    # where the layout allows, view works on a non-contiguous tensor too
    v = mg.arange(24.0).reshape(4, 6)[:, :4].view(4, 2, 2)
    assert v.stride() == (6, 2, 1)


def test_contiguous():
    t = mg.arange(12.0).reshape(3, 4)
    assert t.contiguous() is t
    c = t.T.contiguous()
    assert c.is_contiguous() and c.stride() == (3, 1) and not shares(c, t)
    np.testing.assert_array_equal(c.numpy(), t.numpy().T)
    x = mg.tensor(np.ones((3, 4)), requires_grad=True)
    x.T.contiguous().sum().backward()  # differentiable
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4)))


def test_broadcast_views_have_zero_strides():
    t = mg.arange(4.0)
    e = t.expand(3, 4)
    assert e.stride() == (0, 1) and shares(e, t)
    assert t[:, None].expand(4, 5).stride() == (1, 0)


def test_detach_shares_storage_and_version():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    assert shares(d, x) and d._storage is x._storage and not d.requires_grad


# -- writes through views -------------------------------------------------------------------------

def test_write_through_a_view_is_seen_by_base_and_other_views(device):
    t = mg.zeros(3, 4, device=device)
    row, col, tt = t[1], t[:, 2], t.T
    flat = t.reshape(12)
    with mg.no_grad():
        row.fill_(1.0)
        col[0] = 5.0
        tt[3, 2] = 7.0
        flat[11] += 2.0
    want = np.zeros((3, 4))
    want[1] = 1
    want[0, 2] = 5
    want[2, 3] = 7
    want[2, 3] += 2
    np.testing.assert_array_equal(to_np(t), want)
    np.testing.assert_array_equal(to_np(row), want[1])
    np.testing.assert_array_equal(to_np(col), want[:, 2])
    np.testing.assert_array_equal(to_np(tt), want.T)
    np.testing.assert_array_equal(to_np(flat), want.reshape(12))
    # each write bumped the storage's one counter; `flat[11] += 2` is two writes (+= on the view, then
    # the assignment back), as in PyTorch
    assert t._storage.version == 5


def test_write_into_base_is_seen_by_views():
    t = mg.arange(6.0).reshape(2, 3)
    v = t[:, 1:]
    t.mul_(10)
    np.testing.assert_array_equal(v.numpy(), [[10, 20], [40, 50]])
    t[0] = -1.0
    np.testing.assert_array_equal(v.numpy(), [[-1, -1], [40, 50]])


def test_writes_outside_no_grad_on_plain_tensors():
    # tensors that do not require grad may be written anywhere: there is no graph to protect
    t = mg.arange(6.0).reshape(2, 3)
    t.T[0] += 100
    np.testing.assert_array_equal(t.numpy()[:, 0], [100, 103])


def test_view_of_a_view_writes_the_root():
    t = mg.zeros(4, 4)
    v = t[1:3][:, ::2].T
    v[1, 0] = 9.0
    assert t.numpy()[1, 2] == 9.0
    assert v._base is t


def test_stride_helpers_for_int_and_bool_tensors():
    b = mg.arange(12).reshape(3, 4) > 5
    assert b.stride() == (4, 1) and b.T.stride() == (1, 4)
    assert b[1:, 1:].storage_offset() == 5


AUGMENTED = ["+=", "-=", "*=", "/=", "**=", "//=", "%="]


@pytest.mark.parametrize("op", AUGMENTED)
@pytest.mark.parametrize("view", ["row", "col", "step", "neg", "T", "permute3", "reshape", "none"])
def test_augmented_assignment_on_a_view_writes_the_base_like_numpy(op, view, device):
    """Every augmented assignment writes in place, as NumPy's does: the base and the other views see it."""
    a = np.arange(1.0, 13.0).reshape(3, 4)
    t = mg.tensor(a.copy(), device=device)
    other = t.T  # another view of the same storage
    va, vt = NP_VIEWS[view](a), VIEWS[view](t)
    exec(f"va {op} 1.5", {}, {"va": va})  # noqa: S102 - a fixed operator from the list above
    ident = id(vt)
    ns = {"vt": vt}
    exec(f"vt {op} 1.5", {}, ns)  # noqa: S102
    assert id(ns["vt"]) == ident  # the same tensor object, not a new one bound to the name
    np.testing.assert_allclose(to_np(t), a, rtol=1e-12)
    np.testing.assert_allclose(to_np(other), a.T, rtol=1e-12)
    assert t._version == 1
