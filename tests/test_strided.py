"""The strided walk of a sum (minigrad/strided.py) and its drawing (visualize/strided_walk.py)."""
import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

ROOT = Path(__file__).resolve().parents[1]

SHAPES = [(5,), (1,), (0,), (2, 3), (3, 1), (1, 4), (2, 0, 3), (2, 3, 4), (1, 1, 1), (3, 1, 2),
          (2, 3, 2, 4), (2, 1, 3, 1, 2), (4, 3, 2, 1, 3)]


def _definition(shape, d):
    """The six numbers straight from the issue's formulas."""
    mprev = int(np.prod(shape[:d]))
    mnext = int(np.prod(shape[d + 1:]))
    n = shape[d]
    step, nstep = (n, mprev) if d == len(shape) - 1 else (1, mnext)
    shift, nshift = (mnext * n, mprev) if 0 < d < len(shape) - 1 else (0, 1)
    return (mnext, n, step, nstep, shift, nshift)


# -- the plan ----------------------------------------------------------------------------------------

def test_plan_matches_the_table():
    table = {0: (24, 2, 1, 24, 0, 1), 1: (8, 3, 1, 8, 24, 2), 2: (4, 2, 1, 4, 8, 6), 3: (1, 4, 4, 12, 0, 1)}
    for d, want in table.items():
        p = mg.strided.sum_plan((2, 3, 2, 4), d)
        assert tuple(p) == want
        assert (p.stride, p.nstride, p.step, p.nstep, p.shift, p.nshift) == want
        assert mg.strided.sum_plan((2, 3, 2, 4), d - 4) == p  # negative dims


@pytest.mark.parametrize("shape", SHAPES)
def test_plan_follows_the_formulas_and_walks_each_cell(shape):
    a = np.arange(int(np.prod(shape))).reshape(shape)
    for d in range(len(shape)):
        p = mg.strided.sum_plan(shape, d)
        assert tuple(p) == _definition(shape, d)
        ncell = int(np.prod(shape[:d] + shape[d + 1:]))
        assert p.size == ncell
        # cell c adds exactly the elements of output cell c (C order of the kept dims)
        cells = np.moveaxis(a, d, -1).reshape(ncell, shape[d])
        assert len(cells) == p.size
        for c in range(p.size):
            np.testing.assert_array_equal(p.window(c), cells[c])
        if shape[d]:
            np.testing.assert_array_equal(p.starts(), cells[:, 0])


def test_plan_errors():
    with pytest.raises(mg.AxisError, match="axis 4 is out of bounds for ndim 4"):
        mg.strided.sum_plan((2, 3, 2, 4), 4)
    with pytest.raises(mg.AxisError):
        mg.strided.sum_plan((), 0)
    with pytest.raises(TypeError):
        mg.strided.sum_plan((2, 3), 1.0)
    with pytest.raises(TypeError):
        mg.strided.sum_plan((2, -3), 0)


def test_contiguous_loops_are_the_plan():
    for shape in (s for s in SHAPES if 0 not in s):  # an empty walk has no loops worth comparing
        for d in range(len(shape)):
            p = mg.strided.sum_plan(shape, d)
            outer, window = mg.strided.loops(shape, d)
            assert window == (p.nstride, p.stride)
            # the plan's loops (nshift x shift, nstep x step) with trivial ones dropped and neighbours merged
            walk = [(c, s) for c, s in ((p.nshift, p.shift), (p.nstep, p.step)) if c != 1]
            if len(walk) == 2 and walk[0][0] and walk[1][0] and walk[0][1] == walk[1][0] * walk[1][1]:
                walk = [(walk[0][0] * walk[1][0], walk[1][1])]
            assert outer == walk, (shape, d)


# -- executing it ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
def test_sum_matches_numpy_every_dim(shape, dtype, device):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    buf = mg.tensor(a.reshape(-1), device=device).data
    for d in range(-len(shape), len(shape)):
        got = mg.strided.sum(buf, shape, d)
        assert mg.backend.array_module(got) is mg.backend.array_module(buf)  # the buffer's own module
        want = a.sum(d)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(to_np(got), want, rtol=1e-5)


NONCONTIG = [
    lambda a: a.T,
    lambda a: a[::2],
    lambda a: a[..., ::-1],
    lambda a: a.transpose(2, 0, 1)[1:, :, ::2],
    lambda a: np.moveaxis(a, 0, -1)[::-1, 1:],
    lambda a: a[:, 1:2, :],
    lambda a: a[1:, ::-2, 1:3],
]


@pytest.mark.parametrize("view", NONCONTIG)
def test_sum_walks_non_contiguous_views(view, device):
    base = np.arange(3 * 4 * 5, dtype=np.float64).reshape(3, 4, 5) ** 1.5
    v = view(base)
    strides = tuple(s // 8 for s in v.strides)
    offset = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 8
    buf = mg.tensor(base.reshape(-1), device=device).data
    for d in range(v.ndim):
        got = mg.strided.sum(buf, v.shape, d, strides=strides, offset=offset)
        np.testing.assert_allclose(to_np(got), v.sum(d), rtol=1e-12)


def test_layout_of_tensors_walks_them_in_place(device):
    t = mg.arange(60, device=device).reshape(3, 4, 5)
    views = [t, t.T, t[1], t[:, 1:, ::2], t.permute(2, 0, 1)[::-1], t[..., 2], t.reshape(12, 5)[3:9]]
    for v in views:
        buf, shape, strides, off = mg.strided.layout(v)
        assert shape == v.shape and strides == v.stride() and off == v.storage_offset()
        assert buf.ndim == 1 and buf.shape[0] == 60
        for d in range(v.ndim):
            np.testing.assert_array_equal(to_np(mg.strided.sum(buf, shape, d, strides, off)), to_np(v.sum(d)))


def test_layout_of_arrays_outside_one_block():
    a = np.arange(100.0)[::3][::-1][2:]  # root is contiguous: the buffer is the whole root
    buf, shape, strides, off = mg.strided.layout(a)
    assert (shape, strides, off, buf.shape) == ((32,), (-3,), 93, (100,))
    np.testing.assert_allclose(mg.strided.sum(buf, shape, 0, strides, off), a.sum())
    # a root that is itself strided: the buffer spans exactly what the array reaches
    root = np.lib.stride_tricks.as_strided(np.arange(50.0), (4, 5), (80, 8))
    v = root[::-1, 1:]
    buf, shape, strides, off = mg.strided.layout(v)
    for d in range(2):
        np.testing.assert_allclose(mg.strided.sum(buf, shape, d, strides, off), v.sum(d))


def test_sum_takes_tensors_and_flattens_contiguous_buffers():
    t = mg.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(to_np(mg.strided.sum(t, (2, 3, 4), 1)), t.numpy().sum(1))
    np.testing.assert_allclose(to_np(mg.strided.sum(t.data, (4, 6), 0)), t.numpy().reshape(4, 6).sum(0))
    with pytest.raises(ValueError, match="flat buffer"):
        mg.strided.sum(t.data.T, (24,), 0)


def test_sum_refuses_walks_outside_the_buffer():
    buf = np.arange(10.0)
    with pytest.raises(ValueError, match="outside the buffer"):
        mg.strided.sum(buf, (3, 4), 0)
    with pytest.raises(ValueError, match="outside the buffer"):
        mg.strided.sum(buf, (2, 5), 1, strides=(5, 1), offset=1)
    with pytest.raises(ValueError, match="outside the buffer"):
        mg.strided.sum(buf, (3,), 0, strides=(-1,), offset=1)
    with pytest.raises(ValueError, match="strides"):
        mg.strided.sum(buf, (2, 5), 1, strides=(5,))
    with pytest.raises(mg.AxisError):
        mg.strided.sum(buf, (2, 5), 2)
    assert mg.strided.sum(np.zeros(0), (0, 3), 1).shape == (0,)


def test_sum_is_one_vectorised_walk_not_a_python_loop():
    # a million elements in every dim arrangement: a per-element Python loop would take seconds
    import time

    a = np.random.default_rng(0).standard_normal((64, 128, 128))
    t0 = time.perf_counter()
    for d in range(3):
        np.testing.assert_allclose(mg.strided.sum(a.reshape(-1), a.shape, d), a.sum(d), rtol=1e-9, atol=1e-9)
    assert time.perf_counter() - t0 < 5.0


def test_random_shapes_and_strided_views():
    rng = np.random.default_rng(7)
    for _ in range(60):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(n) for n in rng.integers(1, 5, nd))
        base = rng.standard_normal(tuple(n * 2 for n in shape))
        sl = tuple(slice(int(rng.integers(0, 2)), None, int(rng.choice([1, 2, -1]))) for _ in shape)
        v = base[sl]
        v = v.transpose(tuple(rng.permutation(v.ndim)))
        buf, shp, st, off = mg.strided.layout(v)
        for d in range(v.ndim):
            np.testing.assert_allclose(mg.strided.sum(buf, shp, d, st, off), v.sum(d), rtol=1e-10, atol=1e-12)


# -- the drawing -------------------------------------------------------------------------------------

def _walk_module():
    spec = importlib.util.spec_from_file_location("strided_walk", ROOT / "visualize" / "strided_walk.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_drawing_shows_windows_jumps_and_shifts(capsys):
    walk = _walk_module()
    assert walk.main(["2", "3", "2", "4", "--dim", "1", "--max-cells", "10"]) == 0
    out = capsys.readouterr().out
    assert "stride=8 nstride=3 | step=1 nstep=8 | shift=24 nshift=2" in out
    assert "cell   0: [0] -(+8)-> [8] -(+8)-> [16]" in out
    assert "+step 1" in out and "+shift 24" in out
    assert "cell   8: [24] -(+8)-> [32] -(+8)-> [40]" in out
    assert "o.......+.......+" in out
    assert "agrees with numpy's sum: True" in out


def test_drawing_every_dim_and_non_contiguous(capsys):
    walk = _walk_module()
    assert walk.main(["3", "4"]) == 0
    out = capsys.readouterr().out
    assert "sum over dim 0" in out and "sum over dim 1" in out
    assert walk.main(["4", "3", "--dim", "0", "--strides", "1", "4", "--offset", "1"]) == 0
    out = capsys.readouterr().out
    assert "non-contiguous" in out and "cell   0: [1] -(+1)-> [2]" in out
    assert "agrees with numpy's sum: True" in out


def test_drawing_windows_agree_with_the_plan():
    walk = _walk_module()
    for shape, d in itertools.product([(2, 3, 2, 4), (5,), (3, 1, 2)], range(4)):
        if d >= len(shape):
            continue
        w = walk.windows(shape, d)
        a = np.arange(int(np.prod(shape))).reshape(shape)
        np.testing.assert_array_equal(w, np.moveaxis(a, d, -1).reshape(-1, shape[d]))


def test_drawing_a_picture(tmp_path):
    pytest.importorskip("matplotlib")
    walk = _walk_module()
    assert walk.main(["2", "3", "4", "--dim", "1", "--png", "--out", str(tmp_path)]) == 0
    pngs = list(tmp_path.glob("strided_walk_2x3x4_dim1.png"))
    assert pngs and pngs[0].stat().st_size > 1000
    assert "stride=4 nstride=3" in (tmp_path / "strided_walk_2x3x4.txt").read_text()


# -- property: any shape, any dim, any strided view --------------------------------------------------

def test_property_plan_and_walk_match_numpy():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @st.composite
    def views(draw):
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=5)))
        base = np.arange(int(np.prod([2 * n + 1 for n in shape])), dtype=np.float64).reshape(
            tuple(2 * n + 1 for n in shape))
        sl = tuple(slice(draw(st.integers(0, 1)), None, draw(st.sampled_from([1, 2, -1, -2]))) for _ in shape)
        v = base[sl]
        v = v.transpose(draw(st.permutations(range(v.ndim))))
        return v, draw(st.integers(-v.ndim, v.ndim - 1))

    @hypothesis.settings(max_examples=200, deadline=None)
    @hypothesis.given(views())
    def check(case):
        v, d = case
        buf, shape, strides, off = mg.strided.layout(v)
        np.testing.assert_array_equal(mg.strided.sum(buf, shape, d, strides, off), v.sum(d))
        c = np.ascontiguousarray(v)
        p = mg.strided.sum_plan(c.shape, d)
        assert tuple(p) == _definition(c.shape, d % c.ndim)
        np.testing.assert_array_equal(mg.strided.sum(c.reshape(-1), c.shape, d), c.sum(d))

    check()
