"""Issue 42: nn.RNN, nn.LSTM, nn.GRU and nn.RNNCell, nn.LSTMCell, nn.GRUCell against torch. Each model is
copied from torch's by load_state_dict and must give torch's outputs, final states and the gradients of
every parameter, of the input and of the initial states for a random upstream gradient (1e-10 in float64,
1e-5 in float32): num_layers 1 and 2, batch_first both ways, one and two directions, with and without
initial states, unbatched input; the cells likewise; an LSTM cell step gradchecked to second order in
both modes; state_dict keys, initialisation bounds, dropout and the argument errors."""
import itertools

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")

nn = mg.nn
TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=1e-5, atol=1e-5)}
KINDS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]
IN, HID, T, B = 3, 4, 5, 2


def _pair(name, kw, dtype="float64"):
    """A torch module and the minigrad one loaded from its state_dict, both in ``dtype``."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(IN, HID, **kw).to(getattr(torch, dtype))
    m = getattr(nn, name)(IN, HID, **kw, dtype=dtype)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    return m, tm


def _leaves(arrays):
    return ([mg.tensor(a, requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays])


def _flat(out):
    """The tensors of an output ((output, h), (output, (h, c)), h or (h, c)) in order."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _check(m, tm, x, states, dtype, lstm):
    """Run both, compare every output, backprop a random upstream gradient through all of them,
    compare the gradients of the parameters, the input and the given states."""
    tol = TOL[dtype]
    rng = np.random.default_rng(7)
    (mx, *ms), (tx, *ts) = _leaves([x, *states])
    hx, thx = (None, None) if not states else ((tuple(ms), tuple(ts)) if lstm else (ms[0], ts[0]))
    out, tout = _flat(m(mx, hx)), _flat(tm(tx, thx))
    assert len(out) == len(tout)
    loss, tloss = 0, 0
    for o, to in zip(out, tout, strict=True):
        assert o.shape == tuple(to.shape) and str(o.dtype) == dtype
        np.testing.assert_allclose(o.detach().numpy(), to.detach().numpy(), **tol)
        g = rng.standard_normal(tuple(to.shape)).astype(dtype)
        loss = loss + (o * mg.tensor(g)).sum()
        tloss = tloss + (to * torch.tensor(g)).sum()
    loss.backward()
    tloss.backward()
    tparams = dict(tm.named_parameters())
    for name, p in m.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), **tol, err_msg=name)
    for a, ta, what in zip([mx, *ms], [tx, *ts], ["input", "h_0", "c_0"][:1 + len(ms)], strict=True):
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), **tol, err_msg=what)


def _states(name, layers, dirs, batch, seed=3):
    rng = np.random.default_rng(seed)
    shape = (layers * dirs, batch, HID) if batch else (layers * dirs, HID)
    return [rng.standard_normal(shape) for _ in range(2 if name == "LSTM" else 1)]


@pytest.mark.parametrize("name,kw", KINDS, ids=["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("layers,batch_first,bidirectional,with_states",
                         list(itertools.product([1, 2], [False, True], [False, True], [False, True])))
def test_sequence_layers_match_torch_float64(name, kw, layers, batch_first, bidirectional, with_states):
    m, tm = _pair(name, dict(kw, num_layers=layers, batch_first=batch_first, bidirectional=bidirectional))
    x = np.random.default_rng(1).standard_normal((B, T, IN) if batch_first else (T, B, IN))
    states = _states(name, layers, 2 if bidirectional else 1, B) if with_states else []
    _check(m, tm, x, states, "float64", name == "LSTM")


@pytest.mark.parametrize("name,kw", KINDS, ids=["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("with_states", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_unbatched_input_matches_torch(name, kw, with_states, bidirectional):
    m, tm = _pair(name, dict(kw, num_layers=2, bidirectional=bidirectional))
    x = np.random.default_rng(2).standard_normal((T, IN))
    states = _states(name, 2, 2 if bidirectional else 1, None) if with_states else []
    _check(m, tm, x, states, "float64", name == "LSTM")


@pytest.mark.parametrize("name,kw", KINDS, ids=["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_sequence_layers_match_torch_float32(name, kw, batch_first):
    m, tm = _pair(name, dict(kw, num_layers=2, batch_first=batch_first, bidirectional=True), dtype="float32")
    x = np.random.default_rng(1).standard_normal((B, T, IN) if batch_first else (T, B, IN)).astype("float32")
    states = [s.astype("float32") for s in _states(name, 2, 2, B)]
    _check(m, tm, x, states, "float32", name == "LSTM")


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_without_bias_matches_torch(name):
    m, tm = _pair(name, dict(num_layers=2, bias=False))
    assert not any("bias" in k for k in m.state_dict())
    _check(m, tm, np.random.default_rng(4).standard_normal((T, B, IN)), [], "float64", name == "LSTM")


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {}),
         ("LSTMCell", {"bias": False}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("name,kw", CELLS, ids=["rnn_tanh", "rnn_relu", "lstm", "gru", "lstm_nobias", "gru_nobias"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_states", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cells_match_torch(name, kw, batched, with_states, dtype):
    m, tm = _pair(name, kw, dtype=dtype)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((B, IN) if batched else (IN,)).astype(dtype)
    shape = (B, HID) if batched else (HID,)
    states = [rng.standard_normal(shape).astype(dtype) for _ in range(2 if name == "LSTMCell" else 1)]
    _check(m, tm, x, states if with_states else [], dtype, name == "LSTMCell")


def test_lstm_cell_step_gradchecks_to_second_order_in_both_modes():
    cell = nn.LSTMCell(2, 2, dtype="float64")
    rng = np.random.default_rng(0)
    x, h, c = (mg.tensor(rng.standard_normal((1, 2)), requires_grad=True) for _ in range(3))
    assert mg.gradcheck(lambda x, h, c: cell(x, (h, c)), [x, h, c], modes=("rev", "fwd"), order=2)


def test_gru_step_gradchecks_through_its_weights():
    """The step the layers and cells share, GRU's (its n gate the one with r inside), differentiated in its
    weights and state as well as its input."""
    from minigrad.nn.layers_recurrent import _step

    rng = np.random.default_rng(1)
    x, h = (mg.tensor(rng.standard_normal((1, 2)), requires_grad=True) for _ in range(2))
    w_ih, w_hh = (mg.tensor(rng.standard_normal((6, 2)) * 0.5, requires_grad=True) for _ in range(2))
    b_ih, b_hh = (mg.tensor(rng.standard_normal(6) * 0.5, requires_grad=True) for _ in range(2))

    def fn(x, h, w_ih, w_hh, b_ih, b_hh):
        return _step("GRU", mg.nn.functional.linear(x, w_ih, b_ih), h, None, w_hh, b_hh)[0]

    assert mg.gradcheck(fn, [x, h, w_ih, w_hh, b_ih, b_hh], modes=("rev", "fwd"), order=2)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_whole_layer_gradchecks_in_both_modes(name):
    """Two layers, both directions: the loop over steps, the reversed direction's order and the
    concatenation between layers carry derivatives in reverse and forward mode."""
    m = getattr(nn, name)(2, 2, num_layers=2, bidirectional=True, dtype="float64")
    rng = np.random.default_rng(2)
    x = mg.tensor(rng.standard_normal((3, 1, 2)), requires_grad=True)
    h = mg.tensor(rng.standard_normal((4, 1, 2)), requires_grad=True)
    hx = (lambda h: (h, h * 0.5)) if name == "LSTM" else (lambda h: h)
    assert mg.gradcheck(lambda x, h: _flat(m(x, hx(h))), [x, h], modes=("rev", "fwd"))


@pytest.mark.parametrize("name,kw", [("RNN", dict(num_layers=3, bidirectional=True)),
                                     ("LSTM", dict(num_layers=2, bidirectional=True, bias=False)),
                                     ("GRU", dict(num_layers=2)), ("RNNCell", {}), ("LSTMCell", {}),
                                     ("GRUCell", dict(bias=False))])
def test_state_dict_keys_and_shapes_equal_torch_s(name, kw):
    m, tm = getattr(nn, name)(IN, HID, **kw), getattr(torch.nn, name)(IN, HID, **kw)
    assert [(k, v.shape) for k, v in m.state_dict().items()] == [(k, tuple(v.shape))
                                                                 for k, v in tm.state_dict().items()]


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_init_is_uniform_within_one_over_sqrt_hidden(name):
    mg.manual_seed(0)
    m = getattr(nn, name)(3, 16)
    k = 1 / np.sqrt(16)
    for n, p in m.named_parameters():
        a = p.detach().numpy()
        assert a.dtype == np.float32 and np.all(np.abs(a) <= k), n
    every = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])  # >= 224 draws
    assert every.max() > 0.9 * k and every.min() < -0.9 * k and abs(every.mean()) < 0.1 * k


def test_dropout_between_layers_in_training_only():
    m, tm = _pair("LSTM", dict(num_layers=2, dropout=0.5))
    x = mg.tensor(np.random.default_rng(0).standard_normal((T, B, IN)))
    m.eval()
    tm.eval()
    np.testing.assert_allclose(m(x)[0].detach().numpy(), tm(torch.tensor(x.numpy()))[0].detach().numpy(),
                               **TOL["float64"])
    m.train()
    mg.manual_seed(1)
    a = m(x)[0].detach().numpy()
    mg.manual_seed(2)
    b = m(x)[0].detach().numpy()
    assert not np.allclose(a, b)  # the mask is drawn in training
    m1 = nn.GRU(IN, HID, num_layers=2, dropout=1.0)
    out, h = m1(x.astype("float32"))
    # p=1 zeroes layer 0's output entirely, so layer 1 sees only its biases: every batch row is the same
    np.testing.assert_allclose(out.detach().numpy()[:, 0], out.detach().numpy()[:, 1])


def test_dropout_with_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.RNN(IN, HID, dropout=0.2)


def test_argument_errors():
    with pytest.raises(NotImplementedError, match="proj_size"):
        nn.LSTM(IN, HID, proj_size=2)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(IN, HID, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(IN, HID, nonlinearity="gelu")
    with pytest.raises(ValueError, match="hidden_size"):
        nn.GRU(IN, 0)
    with pytest.raises(ValueError, match="dropout"):
        nn.LSTM(IN, HID, num_layers=2, dropout=1.5)
    lstm = nn.LSTM(IN, HID)
    with pytest.raises(ValueError, match="input_size"):
        lstm(mg.randn(T, B, IN + 1))
    with pytest.raises(ValueError, match="2-D"):
        lstm(mg.randn(IN))
    with pytest.raises(TypeError, match=r"\(h_0, c_0\)"):
        lstm(mg.randn(T, B, IN), mg.zeros(1, B, HID))
    with pytest.raises(ValueError, match="h_0 has shape"):
        nn.GRU(IN, HID)(mg.randn(T, B, IN), mg.zeros(2, B, HID))
    with pytest.raises(ValueError, match="c has shape"):
        nn.LSTMCell(IN, HID)(mg.randn(B, IN), (mg.zeros(B, HID), mg.zeros(B + 1, HID)))


def test_repr_names_the_arguments():
    assert repr(nn.LSTM(3, 4, num_layers=2, batch_first=True)) == "LSTM(3, 4, num_layers=2, batch_first=True)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity='relu')"
