"""nn.utils: gradient clipping and flat parameter vectors, against PyTorch's torch.nn.utils."""
import math

import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

nn = mg.nn
U = mg.nn.utils


def _pair(seed=0, scale=1.0):
    """The same three parameters with the same gradients, in minigrad and (when installed) torch."""
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    vals = [rng.standard_normal(s) for s in shapes]
    grads = [rng.standard_normal(s) * scale for s in shapes]
    ps = []
    for v, g in zip(vals, grads, strict=True):
        p = nn.Parameter(mg.tensor(v))
        p.grad = mg.tensor(g)
        ps.append(p)
    return ps, vals, grads


def _torch_pair(vals, grads):
    torch = pytest.importorskip("torch")
    ts = []
    for v, g in zip(vals, grads, strict=True):
        t = torch.nn.Parameter(torch.tensor(v))
        t.grad = torch.tensor(g)
        ts.append(t)
    return torch, ts


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ps, vals, grads = _pair()
    torch, ts = _torch_pair(vals, grads)
    total = U.clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(ts, max_norm, norm_type=norm_type)
    assert isinstance(total, mg.Tensor)
    np.testing.assert_allclose(to_np(total), ttotal.numpy(), rtol=1e-12)
    for p, t in zip(ps, ts, strict=True):
        np.testing.assert_allclose(to_np(p.grad), t.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_clip_grad_norm_basics():
    p = nn.Parameter(mg.zeros(2, dtype="float64"))
    p.grad = mg.tensor([3.0, 4.0], dtype="float64")
    q = nn.Parameter(mg.zeros(3))  # no grad: skipped
    assert U.clip_grad_norm_([p, q], 1.0).item() == pytest.approx(5.0)
    np.testing.assert_allclose(to_np(p.grad), [0.6, 0.8], rtol=1e-6)
    assert U.clip_grad_norm_(p, 10.0).item() == pytest.approx(1.0, rel=1e-6)  # one Tensor works too
    np.testing.assert_allclose(to_np(p.grad), [0.6, 0.8], rtol=1e-6)  # under the limit: unchanged
    assert U.clip_grad_norm_([q], 1.0).item() == 0.0
    p.grad = mg.tensor([math.inf, 1.0], dtype="float64")
    with pytest.raises(RuntimeError, match="error_if_nonfinite"):
        U.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_clip_grad_norm_of_a_model():
    m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    x = mg.tensor(np.random.default_rng(1).standard_normal((16, 4)), dtype=mg.float32)
    (m(x) ** 2).sum().backward()
    before = math.sqrt(sum(float((to_np(p.grad) ** 2).sum()) for p in m.parameters()))
    total = U.clip_grad_norm_(m.parameters(), 0.1)
    assert total.item() == pytest.approx(before, rel=1e-5)
    after = math.sqrt(sum(float((to_np(p.grad) ** 2).sum()) for p in m.parameters()))
    assert after == pytest.approx(0.1, rel=1e-4)


def test_clip_grad_value_matches_torch():
    ps, vals, grads = _pair(1, scale=2.0)
    torch, ts = _torch_pair(vals, grads)
    assert U.clip_grad_value_(ps, 0.7) is None
    torch.nn.utils.clip_grad_value_(ts, 0.7)
    for p, t in zip(ps, ts, strict=True):
        np.testing.assert_array_equal(to_np(p.grad), t.grad.numpy())
        assert np.abs(to_np(p.grad)).max() <= 0.7


def test_parameters_to_vector_and_back():
    ps, vals, _ = _pair(2)
    v = U.parameters_to_vector(ps)
    assert v.shape == (12 + 4 + 8,)
    np.testing.assert_array_equal(to_np(v), np.concatenate([a.ravel() for a in vals]))
    # differentiable, as torch's is
    for p in ps:
        p.grad = None
    (v * v).sum().backward()
    np.testing.assert_allclose(to_np(ps[0].grad), 2 * vals[0])
    new = mg.tensor(np.arange(24.0))
    U.vector_to_parameters(new, ps)
    assert to_np(ps[1]).tolist() == [12.0, 13.0, 14.0, 15.0]
    assert ps[2].shape == (2, 2, 2) and to_np(ps[2])[1, 1, 1] == 23.0
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in ps)
    with pytest.raises(ValueError, match="hold 24 values"):
        U.vector_to_parameters(mg.zeros(5), ps)
    with pytest.raises(TypeError, match="Tensor"):
        U.vector_to_parameters(np.zeros(24), ps)


def test_vector_round_trip_matches_torch():
    torch = pytest.importorskip("torch")
    lin, tlin = nn.Linear(3, 2, dtype=np.float64), torch.nn.Linear(3, 2, dtype=torch.float64)
    tv = torch.nn.utils.parameters_to_vector(tlin.parameters())
    U.vector_to_parameters(mg.tensor(tv.detach().numpy()), lin.parameters())
    for k, v in tlin.state_dict().items():
        np.testing.assert_array_equal(to_np(lin.state_dict()[k]), v.numpy())
    np.testing.assert_array_equal(to_np(U.parameters_to_vector(lin.parameters())), tv.detach().numpy())
