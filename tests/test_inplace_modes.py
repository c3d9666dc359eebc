"""Second derivatives through every in-place write, in all four compositions of order 2, against
torch.func: reverse over reverse, forward over forward, reverse over forward (w.r.t. the primals
AND the tangents) and forward over reverse.

One program per in-place method (ops/writes.py: add_ sub_ mul_ div_ pow_ remainder_ fmod_
floor_divide_ clamp_/clip_ fill_ zero_ copy_ and ``t[idx] = v``), per augmented assignment (on a
tensor and on a slice) and per kind of write through a view (a view written, the base written with
views taken before, a plain buffer made to require grad by the write). Each program starts from a
clone or an intermediate, never writes a leaf, and uses both x and y so every derivative is
nontrivial. A program is written once, over a small namespace ``L`` (minigrad or torch), so both
libraries run the same code; where torch spells a write differently the difference is commented.

An ``autograd.Function`` that writes in place (``function_mark_dirty``) needs ``ctx.mark_dirty``:
where minigrad's FunctionCtx has none, its tests skip, saying so. The in-place unary methods
(``exp_``, ``log_``, ``sigmoid_``, ``relu_``, ``clamp_min_``, ``tril_``, ``triu_``...) have programs on a
tensor and on a view; the draws (``uniform_``...) have none: no derivative flows through them. The
in-place methods Tensor has are exactly ops/writes.py's (test_inplace_methods.py keeps that list honest).

Runs on the device conftest chooses (``MINIGRAD_DEVICE=fakecuda python -m pytest`` runs it on the
CPU stand-in of CUDA); torch always runs on the CPU. Test ids are ``<program>-<composition>``.
"""
import numpy as np
import pytest
from conftest import dev, rnd, to_np

import minigrad as mg
from minigrad.function import FunctionCtx

torch = pytest.importorskip("torch")
tfunc = pytest.importorskip("torch.func")

RTOL, ATOL = 1e-9, 1e-10
F64 = np.float64


# -- the two libraries behind one small namespace ----------------------------------------------------


class _MG:
    name = "minigrad"
    torch = False
    grad = staticmethod(mg.func.grad)
    jvp = staticmethod(mg.func.jvp)

    @staticmethod
    def tensor(a):
        """A constant (index, mask) on the device under test."""
        return mg.tensor(dev(np.asarray(a)))

    @staticmethod
    def zeros(*shape):
        return mg.zeros(*shape, dtype=F64)

    @staticmethod
    def arr(a):
        return mg.tensor(dev(np.asarray(a, dtype=F64)))

    @staticmethod
    def out(t):
        return to_np(t)


class _TH:
    name = "torch"
    torch = True
    grad = staticmethod(tfunc.grad)
    jvp = staticmethod(tfunc.jvp)

    @staticmethod
    def tensor(a):
        return torch.tensor(np.asarray(a))

    @staticmethod
    def zeros(*shape):
        return torch.zeros(*shape, dtype=torch.float64)

    @staticmethod
    def arr(a):
        return torch.tensor(np.asarray(a, dtype=F64))

    @staticmethod
    def out(t):
        return t.detach().numpy()


MASK = rnd((3, 4), seed=7) > 0                       # a fixed boolean mask of a (3, 4) tensor
ROWS = np.array([True, False, True])


# -- the programs: f(x, y, L) -> Tensor; x is (3, 4), y is (4,), both signs, off 0 ------------------
# (pow's base is x * x + 1: positive, log in its derivative)


def p_add_(x, y, L):
    a = x.clone()
    a.add_(y * x[1])
    return a * x


def p_add_alpha(x, y, L):
    a = x * y
    a.add_(x * x, alpha=2.5)
    return a * y


def p_sub_(x, y, L):
    a = x.clone()
    a.sub_(y * y)
    return a * x


def p_sub_alpha(x, y, L):
    a = x.clone()
    a.sub_(x * y, alpha=0.5)
    return a * x


def p_mul_(x, y, L):
    a = x.clone()
    a.mul_(y)
    return a * x


def p_mul_self(x, y, L):  # the operand is the tensor itself
    a = x * y
    a.mul_(a.clone() if L.torch else a)  # torch refuses a.mul_(a) in a graph (it saved a, then wrote it)
    return a * x


def p_div_(x, y, L):
    a = x * x
    a.div_(y)
    return a * y


def p_pow_tensor(x, y, L):
    a = x * x + 1.0
    a.pow_(y)
    return a * x


def p_pow_number(x, y, L):
    a = x * y
    a.pow_(3)
    return a * x


def p_remainder_(x, y, L):
    a = x * 3.0
    a.remainder_(y)
    return a * x * y


def p_fmod_(x, y, L):
    a = x * 3.0
    a.fmod_(y)
    return a * x * y


def p_floor_divide_(x, y, L):
    a = x * y * 3.0
    b = a + x  # the old value, used after the write (add saves nothing)
    if L.torch:  # torch's floor_divide_ has no derivative at all; floor division's is zero: div_(rounding_mode)
        a.div_(0.7, rounding_mode="floor")
    else:
        a.floor_divide_(0.7)
    return a * x + b * y


def p_clamp_(x, y, L):
    a = x * y
    a.clamp_(-0.6, 0.8)
    return a * x


def p_clamp_min(x, y, L):
    a = x * y
    a.clamp_(min=-0.3)
    return a * y


def p_clip_(x, y, L):
    a = x * y
    a.clip_(max=0.4)
    return a * x


def p_fill_number(x, y, L):
    a = x * y
    b = a + y  # the old value, used after the write (add saves nothing)
    a.fill_(0.5)
    return a * y + b * x


def p_fill_tensor(x, y, L):
    a = x.clone()
    v = (x[0] * y).sum()
    if not L.torch:  # minigrad takes a one-element tensor; torch's fill_ only a 0-d one
        v = v.reshape(1)
    a.fill_(v)
    return a * x * y


def p_zero_(x, y, L):
    a = x * y
    b = a - x  # the old value, used after the write (sub saves nothing)
    a.zero_()
    return a * x + b * y


def p_copy_(x, y, L):
    a = x.clone()
    a.copy_(x * y)
    return a * x


def p_copy_broadcast(x, y, L):
    a = x.clone()
    a.copy_(y * y)
    return a * x


def p_setitem_int(x, y, L):
    a = x.clone()
    a[1] = y * y
    return a * x


def p_setitem_element(x, y, L):
    a = x * y
    a[1, 2] = x[0, 0] * y[3]
    return a * x


def p_setitem_slice(x, y, L):
    a = x.clone()
    a[:, 1:3] = x[:, :2] * y[2:]
    return a * y


def p_setitem_advanced(x, y, L):
    a = x.clone()
    a[L.tensor([0, 2])] = y * x[1]
    return a * x


def p_setitem_mask(x, y, L):
    a = x.clone()
    m = L.tensor(MASK)
    a[m] = (x * y * y)[m]
    return a * x


def p_setitem_mask_scalar(x, y, L):
    a = x * y
    a[L.tensor(MASK)] = y[1] * x[2, 3]
    return a * x


def p_setitem_mask_rows(x, y, L):
    a = x.clone()
    a[L.tensor(ROWS)] = y * y
    return a * x


def p_setitem_repeated(x, y, L):
    a = x.clone()
    v = x * y * y
    if L.torch:  # torch leaves the winner of a repeated index undefined (and its rule sends the gradient
        # to every duplicate); minigrad keeps NumPy's last write, and only it gets the gradient:
        # rows [0, 2, 0] <- v[0], v[1], v[2] is rows [2, 0] <- v[1], v[2]
        a[L.tensor([2, 0])] = v[L.tensor([1, 2])]
    else:
        a[L.tensor([0, 2, 0])] = v
    return a * x


def p_iadd(x, y, L):
    a = x.clone()
    a += y * x
    return a * x


def p_isub(x, y, L):
    a = x * y
    a -= x * x
    return a * y


def p_imul(x, y, L):
    a = x.clone()
    a *= y
    return a * x


def p_itruediv(x, y, L):
    a = x * x
    a /= y
    return a * x


def p_ipow(x, y, L):
    a = x * x + 1.0
    a **= y
    return a * y


def p_imod(x, y, L):
    a = x * 3.0
    a %= y
    return a * x * y


def p_slice_iadd(x, y, L):
    a = x.clone()
    a[1:] += y
    return a * x


def p_slice_isub(x, y, L):
    a = x * y
    a[:, 1] -= x[:, 2] * y[0]
    return a * x


def p_slice_imul(x, y, L):
    a = x.clone()
    a[0] *= y
    return a * x


def p_slice_itruediv(x, y, L):
    a = x * x
    if L.torch:  # as slice_ipow: torch refuses its own a[1:, ::2] /= y[::2] under rev over fwd
        a[1:, ::2].div_(y[::2])
    else:
        a[1:, ::2] /= y[::2]
    return a * y


def p_slice_ipow(x, y, L):
    a = x * x + 1.0
    if L.torch:  # torch's a[1:] **= y is pow_ on the view, then a[1:] = the view itself: that second write
        # bumps the version of what pow_ saved, and torch refuses the backward. The same function:
        a[1:].pow_(y)
    else:
        a[1:] **= y
    return a * x


def p_view_row_mul_(x, y, L):
    a = x.clone()
    a[0].mul_(y)
    return a * x


def p_view_col_zero_(x, y, L):
    a = x * y
    a[:, 1].zero_()
    return a * x


def p_view_T_setitem(x, y, L):
    a = x.clone()
    a.T[0] = y[:3] * x[:, 1]
    return a * y


def p_view_T_add_(x, y, L):
    a = x * y
    a.T.add_(y.reshape(4, 1) * x.T)
    return a * x


def p_view_reshape_fill_(x, y, L):
    a = x * y
    a.reshape(4, 3)[1].fill_(x[2, 3] * y[0])
    return a * x


def p_view_reshape_fill_number(x, y, L):
    a = x * y
    a.reshape(4, 3)[2].fill_(0.25)
    return a * x


def p_view_chain_mul_(x, y, L):  # a view of a view
    a = x.clone()
    a[1:][:, ::2].mul_(y[1::2])
    return a * y


def p_view_row_iadd_both(x, y, L):  # the view and its base both used after the write
    a = x.clone()
    row = a[1]
    row += y * x[0]
    return a * x + row * y


def p_view_before_base_write(x, y, L):  # a view taken before its base is written, read after
    a = x.clone()
    v = a[0]
    a.mul_(y)
    return v * a


def p_view_two_then_base(x, y, L):  # two views, one written, then the base, both read after
    a = x * y
    r0, r2 = a[0], a[2]
    r0.add_(x[1])
    a.mul_(x)
    return r0 * r2 * a


def p_buffer_no_grad(x, y, L):  # the write makes a plain buffer require grad
    buf = L.zeros(3, 4)
    buf[1] = x[1] * y
    return buf * x


def p_buffer_view_before(x, y, L):  # views of the plain buffer taken before the write carry it
    buf = L.zeros(3, 4)
    left, right = buf[:, :2], buf[:, 2:]
    left.copy_(x[:, :2] * y[:2])
    if L.torch:  # torch refuses the second write (into a view of a leaf taken before buf got a history)
        right = buf[:, 2:]
    right.copy_(x[:, 2:] * x[:, 2:])
    return buf * y


def p_vanishing(x, y, L):  # the tangent of the written regions must vanish
    a = x * y
    a[0].zero_()
    a[2].fill_(1.5)
    return a * y


class _AddSquareInPlace(mg.autograd.Function):
    """``a += y * y`` written by a Function's forward, which says so with ``ctx.mark_dirty`` (PyTorch's
    way); y is saved as the input it is, so its history reaches the rules (second order)."""

    @staticmethod
    def forward(ctx, a, y):
        a.add_(y * y)
        ctx.save_for_backward(y)
        ctx.mark_dirty(a)
        return a

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g, (2.0 * y * g).sum(0)

    @staticmethod
    def jvp(ctx, ta, ty):
        (y,) = ctx.saved_tensors
        return ta + 2.0 * y * ty


HAS_MARK_DIRTY = hasattr(FunctionCtx, "mark_dirty")


def p_function_mark_dirty(x, y, L):
    a = x * y
    if L.torch:  # the oracle is the same function, by torch's own in-place op
        a.add_(y * y)
    else:
        _AddSquareInPlace.apply(a, y)
    return a * x


def p_exp_(x, y, L):
    a = x * y
    a.exp_()
    return a * x


def p_log_(x, y, L):
    a = x * x + y * y
    a.log_()
    return a * y


def p_sigmoid_(x, y, L):
    a = x.clone()
    a.sigmoid_()
    return a * y + x


def p_tanh_(x, y, L):
    a = x * y
    a.tanh_()
    return a * x


def p_relu_(x, y, L):
    a = x * y
    a.relu_()
    return a * x


def p_square_(x, y, L):
    a = x + y
    a.square_()
    return a * y


def p_clamp_min_(x, y, L):
    a = x * y
    a.clamp_min_(-0.3)
    return a * y


def p_clamp_max_(x, y, L):
    a = x * y
    a.clamp_max_(0.4)
    return a * x


def p_tril_(x, y, L):
    a = x * y
    a.tril_()
    return a * x + y


def p_triu_diagonal(x, y, L):
    a = x.clone()
    a.triu_(1)
    return a * y


def p_scatter_add_(x, y, L):  # repeated indices sum; src is read from the graph too
    a = x * y
    a.scatter_add_(0, L.tensor([[2, 0, 1, 1], [2, 0, 0, 1]]), x[:2] * y)
    return a * x


def p_view_row_exp_(x, y, L):  # a row of the tensor written, the whole read
    a = x.clone()
    a[1].exp_()
    return a * y


def p_view_row_sigmoid_(x, y, L):
    a = x * y
    a[0].sigmoid_()
    return a * x


def p_view_row_relu_(x, y, L):
    a = x * y
    a[2].relu_()
    return a * x


def p_view_row_clamp_min_(x, y, L):
    a = x * y
    a[1].clamp_min_(-0.2)
    return a * y


def p_view_tril_(x, y, L):  # tril_ needs two dims: a block of rows
    a = x * y
    a[1:].tril_()
    return a * x


def p_view_T_triu_(x, y, L):
    a = x.clone()
    a.T.triu_(-1)
    return a * y


def p_control_no_write(x, y, L):  # no write at all: the four compositions themselves, as a baseline
    a = x * y + y * x[1]
    return a * x


PROGRAMS = {f.__name__[2:]: f for f in [
    p_control_no_write,
    p_add_, p_add_alpha, p_sub_, p_sub_alpha, p_mul_, p_mul_self, p_div_, p_pow_tensor, p_pow_number,
    p_remainder_, p_fmod_, p_floor_divide_, p_clamp_, p_clamp_min, p_clip_, p_fill_number, p_fill_tensor,
    p_zero_, p_copy_, p_copy_broadcast,
    p_setitem_int, p_setitem_element, p_setitem_slice, p_setitem_advanced, p_setitem_mask,
    p_setitem_mask_scalar, p_setitem_mask_rows, p_setitem_repeated,
    p_iadd, p_isub, p_imul, p_itruediv, p_ipow, p_imod,
    p_slice_iadd, p_slice_isub, p_slice_imul, p_slice_itruediv, p_slice_ipow,
    p_view_row_mul_, p_view_col_zero_, p_view_T_setitem, p_view_T_add_, p_view_reshape_fill_,
    p_view_reshape_fill_number, p_view_chain_mul_, p_view_row_iadd_both, p_view_before_base_write,
    p_view_two_then_base, p_buffer_no_grad, p_buffer_view_before, p_vanishing, p_function_mark_dirty,
    p_exp_, p_log_, p_sigmoid_, p_tanh_, p_relu_, p_square_, p_clamp_min_, p_clamp_max_, p_tril_, p_triu_diagonal,
    p_scatter_add_,
    p_view_row_exp_, p_view_row_sigmoid_, p_view_row_relu_, p_view_row_clamp_min_, p_view_tril_, p_view_T_triu_,
]}


# -- the data: x, y, the weights w, the directions u and v ----------------------------------------------

def _data(name):
    s = sum(map(ord, name))  # one seed per program, stable across runs
    return {
        "x": rnd((3, 4), seed=s, away=(0.0,)),
        "y": rnd((4,), seed=s + 1, away=(0.0,)),
        "w": rnd((3, 4), seed=s + 2),
        "ux": rnd((3, 4), seed=s + 3), "uy": rnd((4,), seed=s + 4),
        "vx": rnd((3, 4), seed=s + 5), "vy": rnd((4,), seed=s + 6),
    }


# -- the four compositions, written once over L ---------------------------------------------------


def _loss(f, L, w):
    return lambda x, y: (f(x, y, L) * w).sum()


def rev_over_rev(f, L, d):
    """grad of <grad(<f, w>)(x, y), (vx, vy)> w.r.t. (x, y)."""
    g = L.grad(_loss(f, L, d["w"]), argnums=(0, 1))

    def inner(x, y):
        gx, gy = g(x, y)
        return (gx * d["vx"]).sum() + (gy * d["vy"]).sum()

    return dict(zip(("d/dx", "d/dy"), L.grad(inner, argnums=(0, 1))(d["x"], d["y"]), strict=True))


def fwd_over_fwd(f, L, d):
    """jvp in direction (vx, vy) of (x, y) -> jvp(f, (x, y), (ux, uy))[1]."""
    def tangent(x, y):
        return L.jvp(lambda x, y: f(x, y, L), (x, y), (d["ux"], d["uy"]))[1]

    return {"d2f[u,v]": L.jvp(tangent, (d["x"], d["y"]), (d["vx"], d["vy"]))[1]}


def rev_over_fwd(f, L, d):
    """grad of <jvp(f, (x, y), (ux, uy))[1], w> w.r.t. x, y, ux and uy."""
    def inner(x, y, ux, uy):
        return (L.jvp(lambda x, y: f(x, y, L), (x, y), (ux, uy))[1] * d["w"]).sum()

    gs = L.grad(inner, argnums=(0, 1, 2, 3))(d["x"], d["y"], d["ux"], d["uy"])
    return dict(zip(("d/dx", "d/dy", "d/dux", "d/duy"), gs, strict=True))


def fwd_over_rev(f, L, d):
    """jvp in direction (vx, vy) of grad(<f, w>) (as hvp does)."""
    g = L.grad(_loss(f, L, d["w"]), argnums=(0, 1))
    return dict(zip(("H[v]_x", "H[v]_y"), L.jvp(g, (d["x"], d["y"]), (d["vx"], d["vy"]))[1], strict=True))


def first_order(f, L, d):
    """The program's value, its gradient and its jvp: that the two spellings are one function."""
    x, y = d["x"], d["y"]
    gx, gy = L.grad(_loss(f, L, d["w"]), argnums=(0, 1))(x, y)
    out, t = L.jvp(lambda x, y: f(x, y, L), (x, y), (d["ux"], d["uy"]))
    return {"value": out, "grad_x": gx, "grad_y": gy, "jvp": t}


COMPOSITIONS = {f.__name__: f for f in (rev_over_rev, fwd_over_fwd, rev_over_fwd, fwd_over_rev)}


def _run(comp, name, L):
    d = {k: L.arr(v) for k, v in _data(name).items()}
    return {k: L.out(v) for k, v in comp(PROGRAMS[name], L, d).items()}


def _compare(comp, name):
    if name == "function_mark_dirty" and not HAS_MARK_DIRTY:
        pytest.skip("minigrad's autograd.Function has no ctx.mark_dirty: in-place Functions are not supported")
    want = _run(comp, name, _TH)
    got = _run(comp, name, _MG)
    assert got.keys() == want.keys()
    bad = []
    for k in want:
        g, w = np.asarray(got[k], dtype=F64), np.asarray(want[k], dtype=F64)
        if g.shape != w.shape:
            bad.append(f"{k}: shape {g.shape}, torch {w.shape}")
            continue
        try:
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
        except AssertionError:
            err = np.abs(g - w)
            worst = np.unravel_index(np.argmax(err), err.shape) if err.ndim else ()
            bad.append(f"{k}: max abs err {err.max():.3g} at {tuple(int(i) for i in worst)} "
                       f"(minigrad {g[worst]:.6g}, torch {w[worst]:.6g}; "
                       f"{int((~np.isclose(g, w, rtol=RTOL, atol=ATOL)).sum())}/{g.size} differ)")
    assert not bad, f"{name} {comp.__name__}: " + "; ".join(bad)


@pytest.mark.parametrize("comp", list(COMPOSITIONS), ids=str)
@pytest.mark.parametrize("name", list(PROGRAMS), ids=str)
def test_order2_matches_torch_func(name, comp, device):
    _compare(COMPOSITIONS[comp], name)


@pytest.mark.parametrize("name", list(PROGRAMS), ids=str)
def test_first_order_matches_torch_func(name, device):
    """Value, gradient and tangent: the torch spelling is the same function (and order 1 holds)."""
    _compare(first_order, name)
