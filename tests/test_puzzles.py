"""The Tensor Puzzles (examples/puzzles.py): each checked against NumPy, each built only from
the allowed pieces, and the differentiable ones gradchecked."""
import ast
import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from conftest import check, leaf, to_np

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("puzzles", ROOT / "examples" / "puzzles.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


P = _load()
NAMES = [f.__name__ for f in P.PUZZLES]


def T(a):
    return mg.tensor(np.asarray(a))


def _compress(g, v, i):
    out = np.zeros(i)
    out[: g.sum()] = v[g]
    return out


def _pad_to(a, i, j):
    return np.pad(a, (0, max(j - i, 0)))[:j]


# name -> (make NumPy inputs from a generator and a size n, NumPy reference)
CASES = {
    "ones": (lambda r, n: (n,), lambda i: np.ones(i)),
    "sum": (lambda r, n: (r.standard_normal(n),), lambda a: np.sum(a, keepdims=True)),
    "outer": (lambda r, n: (r.standard_normal(n), r.standard_normal(n + 2)), np.outer),
    "diag": (lambda r, n: (r.standard_normal((n, n)),), np.diag),
    "eye": (lambda r, n: (n,), np.eye),
    "triu": (lambda r, n: (n,), lambda j: np.triu(np.ones((j, j)))),
    "cumsum": (lambda r, n: (r.standard_normal(n),), np.cumsum),
    "diff": (lambda r, n: (r.standard_normal(n), n), lambda a, i: np.diff(a, prepend=0)),
    "vstack": (lambda r, n: (r.standard_normal(n), r.standard_normal(n)), lambda a, b: np.vstack([a, b])),
    "roll": (lambda r, n: (r.standard_normal(n), n), lambda a, i: np.roll(a, -1)),
    "flip": (lambda r, n: (r.standard_normal(n), n), lambda a, i: np.flip(a)),
    "compress": (lambda r, n: (r.random(n) < 0.5, r.standard_normal(n), n), _compress),
    "pad_to": (lambda r, n: (r.standard_normal(n), n, int(r.integers(1, 2 * n + 1))), _pad_to),
    "sequence_mask": (lambda r, n: (r.standard_normal((n, 4)), r.integers(0, 6, n)),
                      lambda v, ln: np.where(np.arange(v.shape[1]) < ln[:, None], v, 0)),
    "bincount": (lambda r, n: (r.integers(0, 5, n), 6), lambda a, j: np.bincount(a, minlength=j)),
    "scatter_add": (lambda r, n: (r.standard_normal(n), r.integers(0, 4, n), 5),
                    lambda v, ln, j: np.bincount(ln, weights=v, minlength=j)),
    "flatten": (lambda r, n: (r.standard_normal((n, 3)), n, 3), lambda a, i, j: a.reshape(-1)),
    "linspace": (lambda r, n: (float(r.standard_normal()), float(r.standard_normal() + 3), n), np.linspace),
    "heaviside": (lambda r, n: (np.where(r.random(n) < 0.3, 0.0, r.standard_normal(n)), r.standard_normal(n)),
                  np.heaviside),
    "repeat": (lambda r, n: (r.standard_normal(n), 3), lambda a, d: np.tile(a, (d, 1))),
    "bucketize": (lambda r, n: (r.standard_normal(n) * 2, np.sort(r.standard_normal(4))),
                  lambda v, b: np.searchsorted(b, v, side="right")),
}


def test_all_twenty_one():
    assert NAMES == list(CASES) and len(NAMES) == 21


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("seed", [0, 1])
def test_puzzle_matches_numpy(name, n, seed):
    make, ref = CASES[name]
    args = make(np.random.default_rng(seed), n)
    got = getattr(P, name)(*(T(a) if isinstance(a, np.ndarray) else a for a in args))
    assert isinstance(got, mg.Tensor)
    want = ref(*args)
    got = to_np(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_bucketize_ties_and_ends():
    b = np.array([-1.0, 0.0, 0.0, 2.0])
    v = np.array([-5.0, -1.0, 0.0, 1.0, 2.0, 9.0])
    np.testing.assert_array_equal(to_np(P.bucketize(T(v), T(b))), np.searchsorted(b, v, side="right"))


def test_puzzles_agree_with_their_loop_specs():
    assert P.main(["3"]) == 0


# -- only the allowed pieces ----------------------------------------------------------------------

ALLOWED_CALLS = {"arange", "where"} | set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_one_line_of_allowed_pieces(name):
    fn = getattr(P, name)
    tree = ast.parse(inspect.getsource(fn))
    (fdef,) = tree.body
    body = [s for s in fdef.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    assert len(body) == 1 and isinstance(body[0], ast.Return), "one expression"
    for node in ast.walk(body[0]):
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name) and node.func.id in ALLOWED_CALLS, ast.dump(node.func)
        if isinstance(node, ast.Attribute):
            assert node.attr == "shape", node.attr
        assert not isinstance(node, (ast.Lambda, ast.comprehension, ast.IfExp, ast.BoolOp)), ast.dump(node)


# -- gradients ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,fn,inputs", [
    ("outer", lambda a, b: P.outer(a, b), lambda: (leaf(4), leaf(3, 1))),
    ("diag", lambda a: P.diag(a), lambda: (leaf((4, 4)),)),
    ("cumsum", lambda a: P.cumsum(a), lambda: (leaf(5),)),
    ("flip", lambda a: P.flip(a, 5), lambda: (leaf(5),)),
    ("roll", lambda a: P.roll(a, 5), lambda: (leaf(5),)),
    ("repeat", lambda a: P.repeat(a, 3), lambda: (leaf(4),)),
    ("pad_to longer", lambda a: P.pad_to(a, 4, 6), lambda: (leaf(4),)),
    ("pad_to shorter", lambda a: P.pad_to(a, 4, 2), lambda: (leaf(4),)),
    ("diff", lambda a: P.diff(a, 5), lambda: (leaf(5),)),
    ("vstack", lambda a, b: P.vstack(a, b), lambda: (leaf(3), leaf(3, 1))),
    ("flatten", lambda a: P.flatten(a, 3, 4), lambda: (leaf((3, 4)),)),
    ("scatter_add", lambda v: P.scatter_add(v, mg.tensor([0, 2, 2, 1]), 4), lambda: (leaf(4),)),
    ("sequence_mask", lambda v: P.sequence_mask(v, mg.tensor([1, 3, 0])), lambda: (leaf((3, 4)),)),
])
def test_gradcheck(name, fn, inputs):
    check(fn, *inputs())


# -- the core behaviours the puzzles lean on --------------------------------------------------------

def test_bool_and_int_tensors_behave_as_numpy():
    a = np.arange(6) - 2
    t = T(a)
    m = t > 0
    cases = [
        (m, a > 0), (1 * m, 1 * (a > 0)), (m * 1, (a > 0) * 1), (m + 0, (a > 0) + 0), (~m, ~(a > 0)),
        (m & (t < 3), (a > 0) & (a < 3)), (m | (t == -2), (a > 0) | (a == -2)),
        (t // 4, a // 4), (t % 4, a % 4), (-7 // t[3:], -7 // a[3:]), (7 % t[3:], 7 % a[3:]),
        (t / 2, a / 2), (2 ** t[2:], 2 ** a[2:]), (-t, -a),
        (mg.where(m, 1, 0), np.where(a > 0, 1, 0)), (mg.where(m, t, 0.5), np.where(a > 0, a, 0.5)),
        (mg.where(m[:, None], t == t[:, None], 0), np.where((a > 0)[:, None], a == a[:, None], 0)),
        (t[m], a[a > 0]), (t[T([0, 5, -1])], a[[0, 5, -1]]), (t[None, :, None], a[None, :, None]),
        (m @ m, (a > 0) @ (a > 0)), (t @ (1 * (t[:, None] >= t)), a @ (1 * (a[:, None] >= a))),
    ]
    for got, want in cases:
        want = np.asarray(want)
        got_np = to_np(got)
        assert got_np.dtype == want.dtype, (got_np.dtype, want.dtype)
        np.testing.assert_array_equal(got_np, want)
