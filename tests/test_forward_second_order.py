"""Second derivatives through the forward-mode rules of products, writes, padding, joins, windows
and sparse ops: forward over forward (two nested dual levels) and forward over reverse (mg.grad
inside a dual level), each against central differences of the first-order derivative."""
import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import strided
from minigrad.autograd import forward_ad as fwAD
from minigrad.engine import run_op

from conftest import dev

EPS = 1e-5
REG = mg.ops.registry()


def _jvp(fn, x, u):
    with fwAD.dual_level():
        return fwAD.unpack_dual(fn(fwAD.make_dual(x, u))).tangent


def _fwd_fwd(fn, x, u):
    with fwAD.dual_level():
        a = fwAD.make_dual(x, u)
        with fwAD.dual_level():
            t1 = fwAD.unpack_dual(fn(fwAD.make_dual(a, u))).tangent
        return fwAD.unpack_dual(t1).tangent


def _grad(fn, x, w):
    x = x.detach().requires_grad_()
    return mg.grad((fn(x) * w).sum(), x)[0]


def _fwd_rev(fn, x, u, w):
    x = x.detach().requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, u)
        (g,) = mg.grad((fn(d) * w).sum(), d)
        return fwAD.unpack_dual(g).tangent


def _sq(x):
    return x.reshape(3, 3)


def _setitem(x):
    y = x * 1.0
    y[mg.tensor(dev([0, 2, 0]))] = x[1:4] ** 3  # repeated indices: the last write wins
    y[7] = x[8] ** 2
    return y * x


def _view_write(x):
    y = x * 2.0
    v = y[1:4]
    v *= x[0:3]
    v += x[5:8] ** 2
    return y * y


def _fill_copy(x):
    y = x ** 2
    y[3:6].fill_(x[0] * x[1])
    y[0:2].copy_(x[4:6] ** 2)
    return y * x


def _copy_slices(x):
    keep = mg.tensor(dev(np.arange(9).reshape(3, 3) // 3 != 1))
    return run_op(REG["copy_slices"].op, _sq(x) ** 2, x[:3] ** 3, mg.tensor(dev(np.arange(3, 6))), keep) * _sq(x)


CASES = {
    "matmul": lambda x: _sq(x) @ _sq(x) + _sq(x) @ x[:3],
    "matmul_tn": lambda x: run_op(REG["matmul_tn"].op, _sq(x), _sq(x) ** 2),
    "linear": lambda x: F.linear(_sq(x), _sq(x), x[3:6] ** 2),
    "einsum": lambda x: mg.einsum("ij,jk,kl->il", _sq(x), _sq(x), _sq(x)) + mg.einsum("ii,ij->j", _sq(x), _sq(x) ** 2),
    "setitem": _setitem,
    "copy_slices": _copy_slices,
    "as_strided": lambda x: run_op(REG["as_strided"].op, _sq(x) ** 2, mg.tensor(dev([[1, 5], [1, 8]])), shape=(3, 3)),
    "pad": lambda x: F.pad(_sq(x) ** 2, (1, 2, 0, 1), value=3.0) ** 2,
    "concatenate_stack": lambda x: mg.stack([mg.concatenate([x * x, x]), mg.concatenate([x, x ** 3])]) ** 2,
    "windows": lambda x: strided.windows(x * x, 3, step=2).sum(-1) ** 2,
    "index_add": lambda x: mg.index_add((5,), mg.tensor(dev([0, 4, 0, 2, 1, 1, 3, 0, 2])), x * x) ** 2,
    "views": lambda x: (mg.broadcast_to(x[:3] ** 2, (3, 3)) * _sq(x)).T.reshape(9) * x,
    "max_pool2d": lambda x: F.max_pool2d((x ** 3).reshape(1, 1, 3, 3), 2, stride=1, padding=1) ** 2,
    "conv2d": lambda x: F.conv2d(_sq(x).reshape(1, 1, 3, 3) ** 2, _sq(x)[:2, :2].reshape(1, 1, 2, 2), padding=1),
    "sparse_matmul": lambda x: mg.sparse.coo_tensor(dev([[0, 1, 1, 2], [2, 0, 2, 1]]), x[:4] ** 2, shape=(3, 3)) @ _sq(x),
    "sparse_sum": lambda x: mg.sparse.sum(mg.sparse.coo_tensor(dev([[0, 1, 1, 0], [2, 0, 2, 2]]), x[:4] ** 2,
                                                                shape=(3, 3)), axis=1).to_dense() * x[:3],
    "view_write": _view_write,
    "fill_copy": _fill_copy,
}

@pytest.mark.parametrize("name", list(CASES))
def test_forward_over_forward(name):
    fn = CASES[name]
    rng = np.random.default_rng(1)
    x, u = mg.tensor(rng.standard_normal(9)), mg.tensor(rng.standard_normal(9))
    want = (_jvp(fn, x + EPS * u, u).numpy() - _jvp(fn, x - EPS * u, u).numpy()) / (2 * EPS)
    np.testing.assert_allclose(_fwd_fwd(fn, x, u).numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(CASES))
def test_forward_over_reverse(name):
    fn = CASES[name]
    rng = np.random.default_rng(2)
    x, u = mg.tensor(rng.standard_normal(9)), mg.tensor(rng.standard_normal(9))
    w = mg.tensor(rng.standard_normal(fn(x).shape))
    want = (_grad(fn, x + EPS * u, w).numpy() - _grad(fn, x - EPS * u, w).numpy()) / (2 * EPS)
    np.testing.assert_allclose(_fwd_rev(fn, x, u, w).numpy(), want, rtol=1e-5, atol=1e-6)
