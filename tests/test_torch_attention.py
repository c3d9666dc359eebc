"""Issue 42: PyTorch's attention layers (MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,
TransformerDecoderLayer, TransformerDecoder, Transformer) against torch in float64: each minigrad module
takes torch's parameters by load_state_dict (eval mode, dropout 0) and must give torch's outputs, attention
weights, and the gradients of the inputs and of every parameter for a random upstream gradient; the
state_dict keys are torch's; a tiny MultiheadAttention is gradchecked to second order in both modes."""
import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

nn = mg.nn
TOL = dict(rtol=1e-10, atol=1e-10)


def _pair(make):
    """(minigrad module, torch module) built by ``make(namespace)``, float64, torch's parameters copied in."""
    torch.manual_seed(0)
    tm = make(torch.nn).double().eval()
    m = make(nn).double().eval()
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    assert list(m.state_dict()) == list(tm.state_dict())
    return m, tm


def _r(*shape, seed=1):
    return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).standard_normal(shape)


def _check(m, tm, arrays, call, seed=0):
    """``call(module, *leaves)`` in both: every output (None must match None), then the
    gradients of the inputs and every parameter for a random upstream gradient of the outputs."""
    xs = [mg.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = call(m, *xs), call(tm, *ts)
    if not isinstance(out, tuple):
        out, tout = (out,), (tout,)
    rng = np.random.default_rng(seed)
    loss, tloss = 0.0, 0.0
    for o, to in zip(out, tout, strict=True):
        if to is None:
            assert o is None
            continue
        assert tuple(o.shape) == tuple(to.shape)
        np.testing.assert_allclose(o.detach().numpy(), to.detach().numpy(), **TOL)
        g = rng.standard_normal(tuple(to.shape))
        loss = loss + (o * mg.tensor(g)).sum()
        tloss = tloss + (to * torch.tensor(g)).sum()
    loss.backward()
    tloss.backward()
    for i, (x, t) in enumerate(zip(xs, ts, strict=True)):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **TOL, err_msg=f"input {i}")
    tparams = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), **TOL, err_msg=name)


# -- MultiheadAttention ---------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_mha_self_and_cross_attention(batch_first, bias):
    m, tm = _pair(lambda ns: ns.MultiheadAttention(8, 2, bias=bias, batch_first=batch_first))
    L, S, N = 4, 5, 3
    q = _r(N, L, 8) if batch_first else _r(L, N, 8)
    kv = _r(N, S, 8, seed=2) if batch_first else _r(S, N, 8, seed=2)
    _check(m, tm, [q, kv, kv * 0.5], lambda mod, a, b, c: mod(a, b, c))


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_kdim_vdim(batch_first):
    m, tm = _pair(lambda ns: ns.MultiheadAttention(6, 3, kdim=4, vdim=5, batch_first=batch_first))
    shape = (lambda n, s, e: (n, s, e)) if batch_first else (lambda n, s, e: (s, n, e))
    _check(m, tm, [_r(*shape(2, 3, 6)), _r(*shape(2, 4, 4)), _r(*shape(2, 4, 5))],
           lambda mod, a, b, c: mod(a, b, c))


@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_need_weights_and_average(need_weights, average, batch_first):
    m, tm = _pair(lambda ns: ns.MultiheadAttention(8, 4, batch_first=batch_first))
    x = _r(3, 4, 8)
    _check(m, tm, [x], lambda mod, a: mod(a, a, a, need_weights=need_weights, average_attn_weights=average))


def _masks():
    L = S = 4
    causal_bool = np.triu(np.ones((L, S), dtype=bool), k=1)
    float_mask = np.random.default_rng(5).standard_normal((L, S))
    float_mask[0, 3] = -np.inf
    per_head = np.random.default_rng(6).random((3 * 2, L, S)) > 0.7
    per_head[..., 0] = False  # every row keeps a key
    kpm = np.zeros((3, S), dtype=bool)
    kpm[0, 3] = kpm[2, 1:3] = True
    kpm_float = np.where(kpm, -1e9, 0.0) + 0.1 * np.random.default_rng(7).standard_normal((3, S))
    return {"causal_bool": dict(attn_mask=causal_bool), "float": dict(attn_mask=float_mask),
            "per_head_bool": dict(attn_mask=per_head), "kpm": dict(key_padding_mask=kpm),
            "kpm_float": dict(key_padding_mask=kpm_float),
            "both": dict(attn_mask=causal_bool, key_padding_mask=kpm),
            "is_causal": dict(attn_mask=causal_bool, is_causal=True)}


@pytest.mark.parametrize("which", list(_masks()))
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_masks(which, need_weights, batch_first):
    m, tm = _pair(lambda ns: ns.MultiheadAttention(8, 2, batch_first=batch_first))
    masks = _masks()[which]
    x = _r(3, 4, 8) if batch_first else _r(4, 3, 8)

    def call(mod, a):
        lib = torch if isinstance(a, torch.Tensor) else mg
        kw = {k: (v if isinstance(v, bool) else lib.tensor(v)) for k, v in masks.items()}
        return mod(a, a, a, need_weights=need_weights, **kw)

    _check(m, tm, [x], call)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_unbatched(need_weights):
    m, tm = _pair(lambda ns: ns.MultiheadAttention(8, 2))
    kpm = np.array([False, False, True, False, False])
    _check(m, tm, [_r(4, 8), _r(5, 8, seed=3)],
           lambda mod, a, b: mod(a, b, b, need_weights=need_weights,
                                 key_padding_mask=(torch if isinstance(a, torch.Tensor) else mg).tensor(kpm)))


def test_mha_init_and_errors():
    mg.manual_seed(0)
    m = nn.MultiheadAttention(16, 4)
    assert float(np.abs(m.in_proj_bias.detach().numpy()).max()) == 0.0
    assert float(np.abs(m.out_proj.bias.detach().numpy()).max()) == 0.0
    bound = np.sqrt(6.0 / (16 + 48))  # xavier_uniform_ of the (48, 16) in_proj_weight
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(m.out_proj.weight.detach().numpy()).max() <= 1 / np.sqrt(16)  # Linear's init
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(10, 4)
    x = mg.ones(3, 2, 16)
    with pytest.raises(ValueError, match="is_causal"):
        m(x, x, x, is_causal=True)
    with pytest.raises(ValueError, match="attn_mask"):
        m(x, x, x, attn_mask=mg.zeros(2, 3))


def test_mha_dropout_only_in_training():
    m = nn.MultiheadAttention(8, 2, dropout=0.5).double()
    x = mg.tensor(_r(4, 3, 8))
    m.eval()
    a, b = m(x, x, x)[0], m(x, x, x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    mg.manual_seed(1)
    c, w = m(x, x, x)
    assert not np.allclose(c.detach().numpy(), a.detach().numpy())
    w = w.detach().numpy()  # the dropped-out weights (PyTorch's): averaged over heads, some zero
    assert not np.allclose(w, m.eval()(x, x, x)[1].detach().numpy())
    assert not m.training


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_gradcheck_order_2(need_weights):
    m = nn.MultiheadAttention(4, 2, batch_first=True).double()
    rng = np.random.default_rng(3)
    q = mg.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    kv = mg.tensor(rng.standard_normal((2, 2, 4)), requires_grad=True)
    mask = mg.tensor(np.array([[False, True], [False, False], [True, False]]))

    def f(a, b):
        out, w = m(a, b, b, attn_mask=mask, need_weights=need_weights)
        return out if w is None else out.sum() + (w * w).sum()

    assert mg.gradcheck(f, (q, kv), modes=("rev", "fwd"), order=2)


# -- the Transformer layers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer(norm_first, batch_first, activation):
    m, tm = _pair(lambda ns: ns.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0,
                                                        activation=activation, batch_first=batch_first,
                                                        norm_first=norm_first))
    x = _r(3, 4, 8)
    _check(m, tm, [x], lambda mod, a: mod(a))


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_masks(batch_first):
    m, tm = _pair(lambda ns: ns.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0,
                                                        batch_first=batch_first))
    kpm = np.zeros((3, 4), dtype=bool)
    kpm[1, 2:] = True
    causal = np.triu(np.ones((4, 4), dtype=bool), k=1)

    def call(mod, a):
        lib = torch if isinstance(a, torch.Tensor) else mg
        return mod(a, src_mask=lib.tensor(causal), src_key_padding_mask=lib.tensor(kpm), is_causal=True)

    _check(m, tm, [_r(3, 4, 8) if batch_first else _r(4, 3, 8)], call)


def test_encoder_layer_callable_activation():
    m, tm = _pair(lambda ns: ns.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0,
                                                        activation=ns.functional.silu))
    _check(m, tm, [_r(4, 3, 8)], lambda mod, a: mod(a))


@pytest.mark.parametrize("with_norm", [False, True])
def test_encoder(with_norm):
    def make(ns):
        layer = ns.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0, batch_first=True)
        norm = ns.LayerNorm(8) if with_norm else None
        kw = {"enable_nested_tensor": False} if ns is torch.nn else {}
        return ns.TransformerEncoder(layer, 2, norm=norm, **kw)

    m, tm = _pair(make)
    assert "layers.1.self_attn.in_proj_weight" in m.state_dict()
    kpm = np.zeros((3, 4), dtype=bool)
    kpm[0, 3] = True

    def call(mod, a):
        lib = torch if isinstance(a, torch.Tensor) else mg
        return mod(a, src_key_padding_mask=lib.tensor(kpm))

    _check(m, tm, [_r(3, 4, 8)], call)


def test_encoder_layers_are_copies():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=12)
    enc = nn.TransformerEncoder(layer, 3)
    ws = [enc.layers[i].linear1.weight for i in range(3)]
    assert len({id(w) for w in ws}) == 3 and all(w is not layer.linear1.weight for w in ws)
    np.testing.assert_array_equal(ws[0].detach().numpy(), ws[2].detach().numpy())
    assert len(list(enc.parameters())) == 3 * len(list(layer.parameters()))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer(norm_first, batch_first):
    m, tm = _pair(lambda ns: ns.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, activation="gelu",
                                                        batch_first=batch_first, norm_first=norm_first))
    tgt = _r(3, 4, 8) if batch_first else _r(4, 3, 8)
    mem = _r(3, 5, 8, seed=4) if batch_first else _r(5, 3, 8, seed=4)
    causal = np.triu(np.ones((4, 4), dtype=bool), k=1)
    mkpm = np.zeros((3, 5), dtype=bool)
    mkpm[2, 4] = True

    def call(mod, a, b):
        lib = torch if isinstance(a, torch.Tensor) else mg
        return mod(a, b, tgt_mask=lib.tensor(causal), memory_key_padding_mask=lib.tensor(mkpm), tgt_is_causal=True)

    _check(m, tm, [tgt, mem], call)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")  # torch's note on its fast path
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer(batch_first):
    m, tm = _pair(lambda ns: ns.Transformer(8, 2, 2, 2, dim_feedforward=12, dropout=0.0, batch_first=batch_first))
    src = _r(3, 5, 8) if batch_first else _r(5, 3, 8)
    tgt = _r(3, 4, 8, seed=4) if batch_first else _r(4, 3, 8, seed=4)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=mg.float64)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    np.testing.assert_array_equal(mask.numpy(), tmask.numpy())

    def call(mod, a, b):
        return mod(a, b, tgt_mask=tmask if isinstance(a, torch.Tensor) else mask)

    _check(m, tm, [src, tgt], call)


def test_transformer_init():
    mg.manual_seed(0)
    t = nn.Transformer(8, 2, 1, 1, dim_feedforward=12)
    w = t.encoder.layers[0].linear1.weight.detach().numpy()  # xavier_uniform_ over every matrix
    bound = np.sqrt(6.0 / (8 + 12))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert t.generate_square_subsequent_mask(3).dtype == mg.float32


def test_masks_as_arrays_and_lists():
    m, tm = _pair(lambda ns: ns.MultiheadAttention(8, 2))
    causal = np.triu(np.ones((4, 4), dtype=bool), k=1)
    kpm = [[False, False, False, True], [False] * 4, [False, True, False, False]]

    def call(mod, a):
        if isinstance(a, torch.Tensor):
            return mod(a, a, a, attn_mask=torch.tensor(causal), key_padding_mask=torch.tensor(kpm))
        return mod(a, a, a, attn_mask=causal, key_padding_mask=kpm)

    _check(m, tm, [_r(4, 3, 8)], call)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_unbatched(norm_first):
    m, tm = _pair(lambda ns: ns.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0, norm_first=norm_first))
    _check(m, tm, [_r(5, 8)], lambda mod, a: mod(a))


def test_encoder_layer_dropout_only_in_training():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.5).double()
    x = mg.tensor(_r(4, 3, 8))
    mg.manual_seed(0)
    a = layer(x).detach().numpy()
    mg.manual_seed(1)
    b = layer(x).detach().numpy()
    assert not np.allclose(a, b)
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


@pytest.mark.parametrize("bias_kv,zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_add_bias_kv_and_zero_attn(bias_kv, zero_attn, need_weights, batch_first):
    m, tm = _pair(lambda ns: ns.MultiheadAttention(8, 2, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                                                   batch_first=batch_first))
    assert ("bias_k" in m.state_dict()) == bias_kv
    causal = np.triu(np.ones((4, 4), dtype=bool), k=1)
    kpm = np.zeros((3, 4), dtype=bool)
    kpm[1, 0] = True

    def call(mod, a):
        lib = torch if isinstance(a, torch.Tensor) else mg
        return mod(a, a, a, attn_mask=lib.tensor(causal), key_padding_mask=lib.tensor(kpm),
                   need_weights=need_weights, average_attn_weights=False)

    _check(m, tm, [_r(3, 4, 8) if batch_first else _r(4, 3, 8)], call)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_gradcheck_order_2(norm_first):
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0, activation="gelu",
                                       norm_first=norm_first).double().eval()
    x = mg.tensor(np.random.default_rng(0).standard_normal((3, 2, 4)), requires_grad=True)
    causal = mg.tensor(np.triu(np.ones((3, 3), dtype=bool), k=1))
    assert mg.gradcheck(lambda a: layer(a, src_mask=causal, is_causal=True), (x,), modes=("rev", "fwd"), order=2)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_transformer_unbatched_and_shape_errors():
    m, tm = _pair(lambda ns: ns.Transformer(8, 2, 1, 1, dim_feedforward=12, dropout=0.0))
    _check(m, tm, [_r(5, 8), _r(4, 8, seed=3)], lambda mod, a, b: mod(a, b))
    with pytest.raises(ValueError, match="batch sizes"):
        m(mg.ones(5, 2, 8, dtype=mg.float64), mg.ones(4, 3, 8, dtype=mg.float64))
    with pytest.raises(ValueError, match="d_model"):
        m(mg.ones(5, 2, 6, dtype=mg.float64), mg.ones(4, 2, 6, dtype=mg.float64))
