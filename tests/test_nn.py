"""nn: Module bookkeeping, layers against PyTorch, functional ops against finite differences
(float64), the stability of cross_entropy, and initialisation."""
import math

import numpy as np
import pytest

import minigrad as mg
from conftest import check, leaf, to_np

nn = mg.nn
F = mg.nn.functional


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


# -- Module bookkeeping ------------------------------------------------------------------------------


def test_parameters_are_registered_in_order():
    m = MLP()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert len(list(m.children())) == 3
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert m.num_parameters() == 3 * 4 + 4 + 4 * 2 + 2


def test_shared_parameter_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_setattr_rules():
    m = MLP()
    with pytest.raises(TypeError, match="nn.Parameter or None"):
        m.fc1.weight = mg.zeros(4, 3)
    m.fc1.bias = None  # allowed: an absent parameter
    assert [n for n, _ in m.named_parameters()] == ["fc1.weight", "fc2.weight", "fc2.bias"]

    class Bad(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        Bad()


def test_repr_lists_children():
    seq = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Dropout(0.1))
    r = repr(seq)
    assert r.startswith("Sequential(\n")
    assert "(0): Linear(in_features=64, out_features=128, bias=True)" in r
    assert "(1): Tanh()" in r and "(2): Dropout(p=0.1)" in r
    assert repr(nn.Parameter(mg.zeros(2))).startswith("Parameter containing:")


def test_sequential_indexing():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3
    assert isinstance(seq[-1], nn.Linear) and seq[-1].out_features == 1
    sub = seq[:2]
    assert isinstance(sub, nn.Sequential) and len(sub) == 2
    assert sub[0] is seq[0]
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and isinstance(seq[3], nn.Sigmoid)
    with pytest.raises(IndexError):
        seq[7]


def test_module_list():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]


def test_train_eval_propagate():
    seq = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    assert seq.eval() is seq
    assert all(not m.training for m in seq.modules())
    seq.train()
    assert all(m.training for m in seq.modules())


def test_zero_grad_sets_none():
    m = MLP()
    F.mse_loss(m(mg.randn(5, 3)), mg.zeros(5, 2)).backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_gradients_accumulate_and_grad_is_readonly():
    lin = nn.Linear(3, 2)
    x = mg.randn(4, 3)
    lin(x).sum().backward()
    g1 = lin.weight.grad.numpy().copy()
    lin(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), 2 * g1, rtol=1e-6)


# -- state dicts --------------------------------------------------------------------------------------


def test_state_dict_roundtrip_in_place():
    a, b = MLP(), MLP()
    w_before = b.fc1.weight
    b.load_state_dict(a.state_dict())
    assert b.fc1.weight is w_before  # parameters keep their identity
    for (ka, pa), (kb, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert ka == kb
        np.testing.assert_array_equal(to_np(pa), to_np(pb))


def test_state_dict_shares_storage_and_detaches():
    m = MLP()
    sd = m.state_dict()
    assert not sd["fc1.weight"].requires_grad
    assert sd["fc1.weight"].data is m.fc1.weight.data


def test_load_state_dict_strict_errors():
    m = MLP()
    sd = dict(m.state_dict())
    del sd["fc2.bias"]
    sd["extra.weight"] = mg.zeros(1)
    with pytest.raises(nn.StateDictError) as ei:
        m.load_state_dict(sd)
    msg = str(ei.value)
    assert "missing key(s): 'fc2.bias'" in msg and "unexpected key(s): 'extra.weight'" in msg
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc2.bias"] and res.unexpected_keys == ["extra.weight"]


def test_load_state_dict_wrong_shape_is_an_error_and_writes_nothing():
    m = MLP()
    before = to_np(m.fc1.bias).copy()
    sd = dict(m.state_dict())
    sd = {k: v.numpy() * 0 for k, v in sd.items()}
    sd["fc1.weight"] = np.zeros((3, 4), dtype=np.float32)
    with pytest.raises(nn.StateDictError, match=r"fc1.weight: shape \(3, 4\) in the state dict, \(4, 3\) in the model"):
        m.load_state_dict(sd, strict=False)
    np.testing.assert_array_equal(to_np(m.fc1.bias), before)


def test_load_state_dict_casts_to_parameter_dtype():
    m = nn.Linear(2, 2)
    m.load_state_dict({"weight": np.ones((2, 2)), "bias": np.zeros(2)})  # float64 values
    assert m.weight.dtype == np.float32
    np.testing.assert_array_equal(to_np(m.weight), np.ones((2, 2), np.float32))


def test_buffers_in_state_dict():
    class WithBuffer(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("running", mg.zeros(3))
            self.register_buffer("scratch", mg.zeros(2), persistent=False)

    m = WithBuffer()
    assert list(m.state_dict()) == ["running"]
    assert len(list(m.buffers())) == 2


def test_to_dtype_keeps_identity():
    m = MLP()
    w = m.fc1.weight
    m.double()
    assert m.fc1.weight is w and w.dtype == np.float64
    m.float()
    assert w.dtype == np.float32
    with pytest.raises(TypeError):
        m.to(dtype=np.int64)


# -- Linear -------------------------------------------------------------------------------------------


def test_linear_default_init_float32_and_bounds():
    mg.manual_seed(0)
    lin = nn.Linear(64, 128)
    assert lin.weight.shape == (128, 64) and lin.bias.shape == (128,)
    assert lin.weight.dtype == np.float32 and lin.bias.dtype == np.float32
    bound = 1 / math.sqrt(64)
    w = to_np(lin.weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(to_np(lin.bias)).max() <= bound
    out = lin(mg.randn(5, 64))
    assert out.dtype == np.float32


def test_linear_init_reproducible_with_manual_seed():
    mg.manual_seed(3)
    a = nn.Linear(4, 4)
    mg.manual_seed(3)
    b = nn.Linear(4, 4)
    np.testing.assert_array_equal(to_np(a.weight), to_np(b.weight))


def test_linear_no_bias_and_batched_input():
    lin = nn.Linear(3, 2, bias=False)
    assert lin.bias is None and len(list(lin.parameters())) == 1
    x = mg.randn(4, 5, 3)
    y = lin(x)
    assert y.shape == (4, 5, 2)
    np.testing.assert_allclose(to_np(y), to_np(x) @ to_np(lin.weight).T, rtol=1e-5, atol=1e-6)


def test_linear_shape_error():
    with pytest.raises(ValueError, match=r"linear: input of shape \(2, 4\) does not match weight of shape \(2, 3\)"):
        nn.Linear(3, 2)(mg.zeros(2, 4))


@pytest.mark.parametrize("xshape", [(3,), (4, 3), (2, 4, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_gradcheck(xshape, bias):
    x = leaf(xshape, 0)
    w = leaf((2, 3), 1)
    if bias:
        b = leaf((2,), 2)
        check(lambda x, w, b: F.linear(x, w, b), x, w, b)
    else:
        check(lambda x, w: F.linear(x, w), x, w)


def test_linear_input_without_grad_skips_its_gradient():
    x = mg.tensor(np.ones((2, 3)))
    w = leaf((4, 3))
    F.linear(x, w).sum().backward()
    assert x.grad is None and w.grad is not None


def test_mlp_matches_torch():
    torch = pytest.importorskip("torch")
    mg.manual_seed(0)
    m = MLP().double()
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    with torch.no_grad():
        for (_, p), tp in zip(m.named_parameters(), tm.parameters(), strict=True):
            tp.copy_(torch.from_numpy(to_np(p)))
    x = np.random.default_rng(1).standard_normal((6, 3))
    y = np.array([0, 1, 1, 0, 1, 0])
    loss = F.cross_entropy(m(mg.tensor(x)), y)
    loss.backward()
    tl = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y))
    tl.backward()
    assert abs(loss.item() - tl.item()) < 1e-12
    for p, tp in zip(m.parameters(), tm.parameters(), strict=True):
        np.testing.assert_allclose(to_np(p.grad), tp.grad.numpy(), rtol=1e-10, atol=1e-12)


# -- activations, softmax ------------------------------------------------------------------------------


@pytest.mark.parametrize("layer, ref", [
    (nn.ReLU(), lambda a: np.maximum(a, 0)),
    (nn.Tanh(), np.tanh),
    (nn.Sigmoid(), lambda a: 1 / (1 + np.exp(-a))),
    (nn.Identity(), lambda a: a),
])
def test_activation_values(layer, ref):
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    out = layer(mg.tensor(a))
    np.testing.assert_allclose(to_np(out), ref(a), rtol=1e-5, atol=1e-6)
    assert out.dtype == np.float32


def test_softmax_log_softmax_gradcheck():
    x = leaf((3, 5))
    check(lambda x: F.softmax(x, dim=1), x)
    check(lambda x: F.log_softmax(x, dim=0), x)


def test_flatten():
    assert nn.Flatten()(mg.zeros(2, 3, 4)).shape == (2, 12)


# -- cross entropy --------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_gradcheck(reduction):
    x = leaf((4, 5))
    t = np.array([0, 4, 2, 2])
    check(lambda x: F.cross_entropy(x, t, reduction=reduction), x)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("classes", [4, 20])  # few classes take a transposed path (ops/reduce.shift_by_max)
def test_cross_entropy_matches_torch(reduction, classes):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, classes)) * 3
    t = rng.integers(0, classes, 6)
    xm = mg.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out = F.cross_entropy(xm, mg.tensor(t), reduction=reduction)
    ref = torch.nn.functional.cross_entropy(xt, torch.from_numpy(t), reduction=reduction)
    np.testing.assert_allclose(to_np(out), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    w = rng.standard_normal(out.shape)
    out.backward(mg.tensor(w))
    ref.backward(torch.from_numpy(w))
    np.testing.assert_allclose(to_np(xm.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_stable_for_huge_logits(dtype):
    x = mg.tensor(np.array([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 999.0]], dtype=dtype), requires_grad=True)
    t = [1, 2]
    loss = F.cross_entropy(x, t, reduction="none")
    expected = np.array([2000.0, 1.0 + math.log1p(math.exp(-1.0))])
    np.testing.assert_allclose(to_np(loss), expected, rtol=1e-6)
    loss.sum().backward()
    g = to_np(x.grad)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g.sum(axis=1), 0, atol=1e-6)
    assert loss.dtype == dtype and x.grad.dtype == dtype


def test_cross_entropy_mean_at_huge_logits_is_finite():
    x = mg.tensor([[1000.0, -1000.0]], requires_grad=True)
    loss = F.cross_entropy(x, [0])
    assert loss.item() == 0.0
    loss.backward()
    assert np.isfinite(to_np(x.grad)).all()


def test_cross_entropy_keeps_float32():
    x = mg.randn(8, 10, requires_grad=True)
    loss = F.cross_entropy(x, np.arange(8) % 10)
    assert loss.dtype == np.float32
    loss.backward()
    assert x.grad.dtype == np.float32


def test_cross_entropy_shapes_and_errors():
    x = leaf((3, 4))
    with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
        F.cross_entropy(x, [0, 1, 4])
    with pytest.raises(TypeError, match="integer class indices"):
        F.cross_entropy(x, np.zeros(3))
    with pytest.raises(ValueError, match=r"needs a target of shape \(3,\)"):
        F.cross_entropy(x, [0, 1])
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(x, [0, 1, 2], reduction="avg")
    # one sample
    single = F.cross_entropy(mg.tensor([0.0, 0.0]), 1)
    assert abs(single.item() - math.log(2)) < 1e-6
    # (N, C, L): the class dim is 1, as in PyTorch
    xs = leaf((2, 3, 4))
    ts = np.array([[0, 1, 2, 0], [2, 2, 1, 0]])
    assert F.cross_entropy(xs, ts, reduction="none").shape == (2, 4)
    check(lambda v: F.cross_entropy(v, ts), xs, gg=False)


def test_nll_loss_matches_cross_entropy():
    x = leaf((4, 3))
    t = [0, 2, 1, 1]
    a = F.nll_loss(F.log_softmax(x, dim=1), t)
    b = F.cross_entropy(x, t)
    assert abs(a.item() - b.item()) < 1e-12


# -- other losses ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    x, y = leaf((3, 2), 0), leaf((3, 2), 1)
    check(lambda x, y: F.mse_loss(x, y, reduction=reduction), x, y)
    d = to_np(x) - to_np(y)
    ref = {"mean": (d * d).mean(), "sum": (d * d).sum(), "none": d * d}[reduction]
    np.testing.assert_allclose(to_np(F.mse_loss(x, y, reduction=reduction)), ref)
    with pytest.raises(ValueError, match="differ"):
        F.mse_loss(x, mg.zeros(3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits(reduction):
    x = leaf((3, 4), 0, scale=3)
    y = mg.tensor(np.random.default_rng(1).random((3, 4)), requires_grad=True)
    check(lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction=reduction), x, y)


def test_bce_with_logits_matches_torch_and_is_stable():
    torch = pytest.importorskip("torch")
    x = np.array([-1000.0, -30.0, -1.0, 0.0, 2.0, 40.0, 1000.0])
    y = np.array([0.0, 1.0, 0.5, 1.0, 0.0, 1.0, 0.0])
    out = F.binary_cross_entropy_with_logits(mg.tensor(x), mg.tensor(y), reduction="none")
    ref = torch.nn.functional.binary_cross_entropy_with_logits(torch.from_numpy(x), torch.from_numpy(y), reduction="none")
    np.testing.assert_allclose(to_np(out), ref.numpy(), rtol=1e-12)


# -- Dropout, Embedding, LayerNorm -------------------------------------------------------------------------


def test_dropout_train_and_eval():
    mg.manual_seed(0)
    d = nn.Dropout(0.25)
    x = mg.ones(200, 50)
    y = to_np(d(x))
    kept = y != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert d(x).dtype == np.float32
    d.eval()
    assert d(x) is x
    assert to_np(nn.Dropout(1.0)(x)).max() == 0
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_dropout_gradient_follows_mask():
    mg.manual_seed(1)
    x = mg.ones(10, 10, requires_grad=True)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), to_np(y))


def test_embedding_lookup_and_repeated_indices():
    emb = nn.Embedding(5, 3)
    assert emb.weight.dtype == np.float32
    idx = np.array([[0, 2], [2, 4]])
    out = emb(idx)
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(to_np(out[0, 1]), to_np(emb.weight)[2])
    out.sum().backward()
    np.testing.assert_array_equal(to_np(emb.weight.grad)[:, 0], [1, 0, 2, 0, 1])
    with pytest.raises(IndexError, match="out of range for 5 embeddings"):
        emb(np.array([5]))
    with pytest.raises(TypeError, match="integers"):
        emb(np.array([0.5]))


def test_layer_norm_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4))
    ln = nn.LayerNorm(4).double()
    ln.load_state_dict({"weight": rng.standard_normal(4), "bias": rng.standard_normal(4)})
    tln = torch.nn.LayerNorm(4).double()
    with torch.no_grad():
        tln.weight.copy_(torch.from_numpy(to_np(ln.weight)))
        tln.bias.copy_(torch.from_numpy(to_np(ln.bias)))
    np.testing.assert_allclose(to_np(ln(mg.tensor(x))), tln(torch.from_numpy(x)).detach().numpy(), rtol=1e-10, atol=1e-12)


def test_layer_norm_gradcheck():
    x, w, b = leaf((2, 5), 0), leaf((5,), 1), leaf((5,), 2)
    check(lambda x, w, b: F.layer_norm(x, 5, w, b), x, w, b, gg=False)


# -- init ----------------------------------------------------------------------------------------------


def test_init_functions_keep_dtype_and_bump_version():
    t = nn.Parameter(mg.zeros(64, 32))
    v = t._storage.version
    nn.init.xavier_uniform_(t)
    assert t.dtype == np.float32 and t._storage.version == v + 1
    a = math.sqrt(6 / (64 + 32))
    assert np.abs(to_np(t)).max() <= a
    nn.init.kaiming_normal_(t, nonlinearity="relu")
    assert abs(to_np(t).std() - math.sqrt(2 / 32)) < 0.02
    nn.init.constant_(t, 0.5)
    assert (to_np(t) == 0.5).all()
    nn.init.zeros_(t)
    assert (to_np(t) == 0).all()


def test_calculate_gain_table():
    assert nn.init.calculate_gain("tanh") == 5 / 3
    assert nn.init.calculate_gain("relu") == math.sqrt(2)
    assert nn.init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(2 / 6)
    with pytest.raises(ValueError):
        nn.init.calculate_gain("swish")


def test_parameter_basics():
    p = nn.Parameter(mg.zeros(2, 2))
    assert isinstance(p, mg.Tensor) and p.requires_grad and p.is_leaf
    q = nn.Parameter(mg.zeros(2), requires_grad=False)
    assert not q.requires_grad
    y = p * 2
    assert type(y) is mg.Tensor


# -- more gradchecks: every differentiable layer and functional op, float64 -------------------------------


@pytest.mark.parametrize("layer", [nn.Tanh(), nn.Sigmoid(), nn.ReLU()], ids=["Tanh", "Sigmoid", "ReLU"])
def test_activation_modules_gradcheck(layer):
    # 0.1 away from ReLU's kink, where finite differences are meaningless
    a = np.random.default_rng(0).standard_normal((3, 4))
    a[np.abs(a) < 0.1] += 0.3
    check(layer, mg.tensor(a, requires_grad=True))


def test_tanh_is_the_fused_rule_and_matches_mg_tanh():
    x = leaf((4, 5))
    assert [n.op for n in mg.autograd.tape(nn.Tanh()(x))] == ["tanh"]
    np.testing.assert_allclose(to_np(F.tanh(x)), np.tanh(to_np(x)), rtol=1e-15)
    (g1,) = mg.grad(F.tanh(x).sum(), x)
    (g2,) = mg.grad(mg.tanh(x).sum(), x)
    np.testing.assert_allclose(to_np(g1), to_np(g2), rtol=1e-14)
    assert F.tanh is mg.tanh and F.relu is mg.relu and F.sigmoid is mg.sigmoid  # one function each


def test_embedding_gradcheck():
    w = leaf((5, 3))
    idx = np.array([[0, 2, 2], [4, 1, 0]])
    check(lambda w: F.embedding(idx, w), w)


def test_dropout_gradcheck_with_a_fixed_mask():
    def fn(x):
        mg.manual_seed(5)  # the same mask on every call
        return F.dropout(x, 0.3)

    check(fn, leaf((4, 6)))


def test_layer_norm_gradgradcheck():
    x, w, b = leaf((2, 5), 0), leaf((5,), 1), leaf((5,), 2)
    assert mg.gradgradcheck(lambda x, w, b: F.layer_norm(x, 5, w, b), (x, w, b))
    ln = nn.LayerNorm((2, 3)).double()
    check(ln, leaf((4, 2, 3)), gg=False)


def test_bce_with_logits_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((3, 4)) * 4, rng.random((3, 4))
    xm, ym = mg.tensor(x, requires_grad=True), mg.tensor(y, requires_grad=True)
    xt, yt = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    F.binary_cross_entropy_with_logits(xm, ym).backward()
    torch.nn.functional.binary_cross_entropy_with_logits(xt, yt).backward()
    np.testing.assert_allclose(to_np(xm.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(to_np(ym.grad), yt.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_softmax_log_softmax_match_torch_at_huge_logits():
    torch = pytest.importorskip("torch")
    x = np.array([[1000.0, -1000.0, 0.0, 999.0], [-1000.0, -1000.0, -999.0, -1000.0]])
    for ours, theirs in ((F.softmax, torch.softmax), (F.log_softmax, torch.log_softmax)):
        xm = mg.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        out, ref = ours(xm, dim=1), theirs(xt, dim=1)
        np.testing.assert_allclose(to_np(out), ref.detach().numpy(), rtol=1e-12, atol=1e-300)
        w = np.arange(8.0).reshape(2, 4)
        out.backward(mg.tensor(w))
        ref.backward(torch.tensor(w))
        assert np.isfinite(to_np(xm.grad)).all()
        np.testing.assert_allclose(to_np(xm.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_cross_entropy_class_dim_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 3))
    t = rng.integers(0, 5, (2, 3))
    for reduction in ("mean", "sum", "none"):
        xm = mg.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        out = F.cross_entropy(xm, t, reduction=reduction)
        ref = torch.nn.functional.cross_entropy(xt, torch.from_numpy(t), reduction=reduction)
        np.testing.assert_allclose(to_np(out), ref.detach().numpy(), rtol=1e-12)
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(to_np(xm.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-15)


# -- PyTorch interchange: the same names, layouts and defaults ------------------------------------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(7, 4)
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.LayerNorm(8), nn.Dropout(0.2), nn.Linear(8, 3, bias=False))
        self.head = nn.Linear(3, 2)


def _build_torch_net(torch):
    m = torch.nn.Module()
    m.emb = torch.nn.Embedding(7, 4)
    m.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.LayerNorm(8), torch.nn.Dropout(0.2),
                                 torch.nn.Linear(8, 3, bias=False))
    m.head = torch.nn.Linear(3, 2)
    return m


def test_state_dict_keys_and_shapes_match_torch_and_load_from_it():
    torch = pytest.importorskip("torch")
    ours, theirs = Net(), _build_torch_net(torch)
    tsd = theirs.state_dict()
    sd = ours.state_dict()
    assert list(sd) == list(tsd)
    assert [tuple(v.shape) for v in sd.values()] == [tuple(v.shape) for v in tsd.values()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    ours.load_state_dict({k: v.numpy() for k, v in tsd.items()})
    ours.eval()
    theirs.eval()
    idx = np.array([[1, 6, 0], [3, 3, 2]])
    h = ours.emb(idx)
    out = ours.head(ours.body(h))
    ref = theirs.head(theirs.body(theirs.emb(torch.from_numpy(idx))))
    np.testing.assert_allclose(to_np(out), ref.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.Linear(8, 3, bias=False))
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Tanh(), torch.nn.Sigmoid(),
                                 torch.nn.Linear(8, 3, bias=False))
    assert repr(ours) == repr(theirs)
    assert repr(nn.Embedding(10, 3)) == repr(torch.nn.Embedding(10, 3))


def test_default_initialisations_follow_torch():
    mg.manual_seed(0)
    lin = nn.Linear(300, 200)
    bound = 1 / math.sqrt(300)  # kaiming_uniform_(a=sqrt(5)) on (out, in) and U(±1/sqrt(in)) for the bias
    for t in (lin.weight, lin.bias):
        a = to_np(t)
        assert np.abs(a).max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.05 * bound
    emb = to_np(nn.Embedding(500, 40).weight)  # N(0, 1)
    assert abs(emb.mean()) < 0.02 and abs(emb.std() - 1) < 0.02
    ln = nn.LayerNorm(6)
    assert (to_np(ln.weight) == 1).all() and (to_np(ln.bias) == 0).all()
    w = nn.Parameter(mg.zeros(400, 300))
    nn.init.xavier_normal_(w)
    assert abs(to_np(w).std() - math.sqrt(2 / 700)) < 0.02 * math.sqrt(2 / 700)
    nn.init.kaiming_uniform_(w, nonlinearity="relu")
    assert np.abs(to_np(w)).max() <= math.sqrt(2) * math.sqrt(3 / 300)


def test_load_state_dict_error_lists_every_problem_and_module_name():
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    sd = {"0.weight": np.zeros((3, 2)), "0.bias": np.zeros(4), "1.weight": np.zeros((1, 3)), "2.bias": np.zeros(1)}
    with pytest.raises(nn.StateDictError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert "Sequential" in msg
    assert "missing key(s): '1.bias'" in msg and "unexpected key(s): '2.bias'" in msg
    assert "0.bias: shape (4,) in the state dict, (3,) in the model" in msg


# -- a batch of the wrong dtype --------------------------------------------------------------------

def test_a_float64_batch_into_a_float32_linear_names_both_dtypes():
    layer = mg.nn.Linear(3, 2)
    with pytest.raises(TypeError, match="linear: input dtype float64 differs from the weight's float32"):
        layer(mg.tensor(np.ones((4, 3))))
    assert layer(mg.ones(4, 3)).dtype == np.float32
