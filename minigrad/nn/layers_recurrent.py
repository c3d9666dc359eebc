"""The recurrent layers of ``mg.nn``: ``RNN``, ``LSTM``, ``GRU`` and their one-step cells ``RNNCell``,
``LSTMCell``, ``GRUCell``, with PyTorch's arguments, parameter names (``weight_ih_l0``, ``bias_hh_l1_reverse``...),
gate order (LSTM: i, f, g, o; GRU: r, z, n) and initialisation (every parameter ~ U(-1/sqrt(hidden),
1/sqrt(hidden))), so a ``state_dict`` moves between the two by name.

The cells, ``RNN`` and ``GRU`` are made of recorded ops (linear, sigmoid, tanh, stack, concatenate,
indexing) and a Python loop over the time steps: no backward rule of their own. ``LSTM`` runs each
layer and direction as one op, ``lstm_scan`` (PyTorch's LSTM is one fused kernel too): its forward
loops over the steps on arrays and returns every step's states and gates, and its rules read the gates
there and are written in the array API like every other (backpropagation through time, and its
forward-mode tangent), so gradients of any order in both modes.

>>> lstm = mg.nn.LSTM(4, 8, num_layers=2, batch_first=True)
>>> out, (h, c) = lstm(mg.randn(3, 5, 4))
>>> out.shape, h.shape
((3, 5, 8), (2, 3, 8))
"""
from __future__ import annotations

import math
import numbers
import warnings

from .. import creation as _creation
from ..engine import run_op
from ..ops._registry import Sample, defop
from ..ops.matmul import _linear_fwd, mixed_floats
from ..ops.shape import concatenate, stack
from ..tensor import Tensor
from . import functional as F
from . import init
from ._common import positive_int
from .module import Module, Parameter

__all__ = ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _step(mode, gi, h, c, w_hh, b_hh):
    """One time step: ``gi`` is ``x @ w_ih.T + b_ih`` (batch, gates * hidden), ``h`` and ``c`` the state.
    Returns the new (h, c) (``c`` is None but for the LSTM)."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c.tanh(), c
    if mode == "GRU":
        ir, iz, in_ = gi.chunk(3, -1)
        hr, hz, hn = gh.chunk(3, -1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (pre.tanh() if mode == "RNN_TANH" else F.relu(pre)), None


# -- lstm_scan: one LSTM layer in one direction as one op ---------------------------------------------


def _lstm_scan_fwd(xp, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None):
    """Every step's states and gates, ``(6, T, B, H)``: h, c, i, f, g, o (the gates activated) of input ``x``
    (T, B, in) from the state ``h0``, ``c0`` (B, H). The gates are outputs so that the rules read them
    (a recomputation would cost two products as large as the forward's). The input's projection is one
    product; each step is one product and one tanh for the four gates (each sigmoid as minigrad's own,
    ``tanh(a / 2) / 2 + 1 / 2``: the halving is folded into the weights, exactly). It writes in place only
    into arrays made from the step's own values, and stacks the steps at the end, so that vmap batches it."""
    hid = w_hh.shape[1]
    half = xp.concatenate([xp.full(2 * hid, 0.5, dtype=w_hh.dtype), xp.ones(hid, dtype=w_hh.dtype),
                           xp.full(hid, 0.5, dtype=w_hh.dtype)])  # g's pre-activation goes to tanh as it is
    gi = _linear_fwd(xp, x, w_ih, None if b_ih is None else b_ih + b_hh)  # (T, B, 4H), fresh: halved in place
    gi *= half
    w_half = w_hh * half[:, None]
    hid2, hid3 = 2 * hid, 3 * hid
    h, c = h0, c0
    hs, cs, ig, fg, gg, og = [], [], [], [], [], []
    for t in range(gi.shape[0]):  # in place only into a fresh array that holds the step's batch (vmap's rule)
        a = xp.matmul(h, w_half.T) + gi[t]
        xp.tanh(a, out=a)
        s = a * 0.5
        s += 0.5  # i, f and o (s's g columns are not read)
        i, f, g, o = s[:, :hid], s[:, hid:hid2], a[:, hid2:hid3], s[:, hid3:]
        c = f * c
        c += i * g
        h = xp.tanh(c)
        h *= o
        hs.append(h)
        cs.append(c)
        ig.append(i)
        fg.append(f)
        gg.append(g)
        og.append(o)
    y = xp.stack(hs + cs + ig + fg + gg + og)
    return y.reshape((6, len(hs)) + y.shape[1:])


def _lstm_scan_rule(ctx, gy):
    """Backpropagation through time, with the gates read from the output: the one sequential part is a
    product with ``w_hh`` per step; the weights' gradients are one product each over all the steps."""
    xp, p = ctx.xp, ctx.parents
    x, h0, c0, w_ih, w_hh, *b = ctx.saved
    y = ctx.out
    steps, batch, n_in = x.shape
    hid = w_hh.shape[1]
    hs, cs, i, f, g, o = (y[k] for k in range(6))
    hprev = xp.concatenate([h0.reshape((1,) + tuple(h0.shape)), hs[:-1]], axis=0)
    cprev = xp.concatenate([c0.reshape((1,) + tuple(c0.shape)), cs[:-1]], axis=0)
    tc = xp.tanh(cs)
    k = o * (1 - tc * tc)  # d h_t / d c_t
    slopes = xp.concatenate([i * (1 - i), f * (1 - f), 1 - g * g, o * (1 - o)], axis=-1)
    # each step's pre-activation gradient: [dc, dc, dc, dh] * m_t, and the gates' own gradients through their slopes
    m = xp.concatenate([g, cprev, i, tc], axis=-1) * slopes
    own = xp.concatenate([gy[2], gy[3], gy[4], gy[5]], axis=-1) * slopes
    dh = dc = None
    das = [None] * steps
    for t in range(steps - 1, -1, -1):
        dh = gy[0, t] if dh is None else gy[0, t] + dh
        dc = gy[1, t] + dh * k[t] if dc is None else gy[1, t] + dc + dh * k[t]
        das[t] = da = xp.concatenate([dc, dc, dc, dh], axis=-1) * m[t] + own[t]
        dc = dc * f[t]
        dh = xp.matmul(da, w_hh)
    da = xp.stack(das).reshape((steps * batch, 4 * hid))
    gx = xp.matmul(da, w_ih).reshape((steps, batch, n_in)) if p[0] is not None else None
    gw_ih = xp.matmul_tn(da, x.reshape((steps * batch, n_in))) if p[3] is not None else None
    gw_hh = xp.matmul_tn(da, hprev.reshape((steps * batch, hid))) if p[4] is not None else None
    gb = da.sum(axis=0) if b and (p[5] is not None or p[6] is not None) else None
    return (gx, dh if p[1] is not None else None, dc if p[2] is not None else None, gw_ih, gw_hh) + \
        ((gb, gb) if b else ())


def _lstm_scan_jvp(ctx, tx, th0, tc0, tw_ih, tw_hh, tb_ih=None, tb_hh=None):
    """The tangent of the states and gates, step by step: each step's pre-activation tangent is the part
    that does not go through the recurrence (every step at once) plus the previous hidden state's tangent
    times ``w_hh``."""
    xp = ctx.xp
    x, h0, c0, w_ih, w_hh, *b = ctx.args
    y = ctx.out
    hid = w_hh.shape[1]
    hs, cs, i, f, g, o = (y[k] for k in range(6))
    hprev = xp.concatenate([h0.reshape((1,) + tuple(h0.shape)), hs[:-1]], axis=0)
    cprev = xp.concatenate([c0.reshape((1,) + tuple(c0.shape)), cs[:-1]], axis=0)
    tc = xp.tanh(cs)
    k = o * (1 - tc * tc)
    slopes = xp.concatenate([i * (1 - i), f * (1 - f), 1 - g * g, o * (1 - o)], axis=-1)
    pa = None  # the input's, the weights' and the biases' part, every step at once
    for v in (None if tx is None else xp.linear(tx, w_ih), None if tw_ih is None else xp.linear(x, tw_ih),
              None if tw_hh is None else xp.linear(hprev, tw_hh), tb_ih, tb_hh):
        if v is not None:
            pa = v if pa is None else pa + v
    if pa is not None and pa.ndim == 1:  # the biases' alone
        pa = xp.broadcast_to(pa, x.shape[:2] + pa.shape)
    dh = xp.zeros_like(h0) if th0 is None else th0
    dc = xp.zeros_like(c0) if tc0 is None else tc0
    out = []
    for t in range(x.shape[0]):
        da = xp.matmul(dh, w_hh.T)
        if pa is not None:
            da = da + pa[t]
        da = da * slopes[t]  # the gates' tangents
        di, df, dg, do = (da[..., j * hid:(j + 1) * hid] for j in range(4))
        dc = df * cprev[t] + f[t] * dc + di * g[t] + i[t] * dg
        dh = do * tc[t] + k[t] * dc
        out.append(xp.stack([dh, dc, di, df, dg, do]))
    return xp.stack(out, axis=1)


def _lstm_scan_torch(th, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None):
    h, c, steps = h0, c0, []
    for xt in x:
        a = xt @ w_ih.T + h @ w_hh.T
        if b_ih is not None:
            a = a + b_ih + b_hh
        i, f, g, o = a.chunk(4, -1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
        steps.append(th.stack([h, c, i, f, g, o]))
    return th.stack(steps, 1)


def _lstm_scan_samples(rng):
    def r(*shape):
        return rng.standard_normal(shape) * 0.7

    return [Sample(r(3, 2, 3), r(2, 2), r(2, 2), r(8, 3), r(8, 2), r(8), r(8)),
            Sample(r(2, 1, 2), r(1, 3), r(1, 3), r(12, 2), r(12, 3))]


LSTM_SCAN = defop("lstm_scan", _lstm_scan_fwd, _lstm_scan_rule, save=(0, ...), save_out=True, kind="other",
                  jvp=_lstm_scan_jvp, torch=_lstm_scan_torch, samples=_lstm_scan_samples)


def _mode(name, nonlinearity):
    if name != "RNN":
        return name
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
    return "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


def _check_state(layer, t, shape, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"{layer}: {what} must be a Tensor, got {type(t).__name__}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{layer}: {what} has shape {tuple(t.shape)}, expected {tuple(shape)}")


class _RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrence shared by RNN, LSTM and GRU."""

    _name = "RNN"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 nonlinearity: str = "tanh", dtype=None, device=None):
        super().__init__()
        name = self._name
        self.mode = _mode(name, nonlinearity)
        self.nonlinearity = nonlinearity
        self.input_size = positive_int(input_size, name, "input_size")
        self.hidden_size = positive_int(hidden_size, name, "hidden_size")
        self.num_layers = positive_int(num_layers, name, "num_layers")
        if proj_size:
            raise NotImplementedError(f"{name}: proj_size is not supported by minigrad (PyTorch's LSTM projections); "
                                      "use proj_size=0 and a Linear on the output")
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0 <= dropout <= 1:
            raise ValueError(f"{name}: dropout must be a number in [0, 1], got {dropout!r}")
        if dropout > 0 and self.num_layers == 1:
            warnings.warn(f"{name}: dropout={dropout} does nothing with num_layers=1 (it is applied between layers, "
                          "to every layer's output but the last)", UserWarning, stacklevel=2)
        self.bias = bool(bias)
        self.batch_first = bool(batch_first)
        self.dropout = float(dropout)
        self.bidirectional = bool(bidirectional)
        self.proj_size = 0
        gate = _GATES[self.mode] * self.hidden_size
        dirs = 2 if self.bidirectional else 1
        for layer in range(self.num_layers):
            n_in = self.input_size if layer == 0 else self.hidden_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gate, n_in)), ("weight_hh", (gate, self.hidden_size))]
                shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))] if self.bias else []
                for pname, pshape in shapes:
                    self.register_parameter(pname + sfx,
                                            Parameter(_creation.empty(*pshape, dtype=dtype, device=device)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        k = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -k, k)

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        g = lambda n: getattr(self, n + sfx) if self.bias or n.startswith("weight") else None  # noqa: E731
        return g("weight_ih"), g("weight_hh"), g("bias_ih"), g("bias_hh")

    def forward(self, input, hx=None):
        name, lstm = self._name, self.mode == "LSTM"
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: input must be 2-D (unbatched: seq, feature) or 3-D, got shape "
                             f"{tuple(input.shape)}")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input has {input.shape[-1]} features, expected input_size={self.input_size}")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        steps, batch = x.shape[0], x.shape[1]
        dirs = 2 if self.bidirectional else 1
        shape = (self.num_layers * dirs, batch, self.hidden_size) if batched else (self.num_layers * dirs,
                                                                                    self.hidden_size)
        if hx is None:
            zeros = _creation.zeros(self.num_layers * dirs, batch, self.hidden_size, dtype=x.dtype, device=x.device)
            h0, c0 = zeros, zeros
        else:
            if lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError(f"{name}: hx must be a tuple (h_0, c_0)")
                h0, c0 = hx
                _check_state(name, h0, shape, "h_0")
                _check_state(name, c0, shape, "c_0")
            else:
                h0, c0 = hx, None
                _check_state(name, h0, shape, "h_0")
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if lstm else None
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                k = layer * dirs + d
                if lstm:  # one op for the layer's steps: its states and gates (6, T, B, H)
                    if x.dtype != w_ih.dtype:
                        raise mixed_floats(name, x.dtype, w_ih.dtype, "the weights")
                    ws = (w_ih, w_hh) if b_ih is None else (w_ih, w_hh, b_ih, b_hh)
                    y = run_op(LSTM_SCAN, x.flip(0) if d else x, h0[k], c0[k], *ws)[:2]  # h and c
                    outs.append(y[0].flip(0) if d else y[0])
                    hs.append(y[0, -1])
                    cs.append(y[1, -1])
                    continue
                gi = F.linear(x, w_ih, b_ih)  # every step's input projection at once
                h, c = h0[k], None
                seq = [None] * steps
                for t in (range(steps - 1, -1, -1) if d else range(steps)):
                    h, c = _step(self.mode, gi[t], h, c, w_hh, b_hh)
                    seq[t] = h
                outs.append(stack(seq, 0))
                hs.append(h)
                cs.append(c)
            x = outs[0] if dirs == 1 else concatenate(outs, axis=-1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        out = x
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        h_n = stack(hs, 0)
        c_n = stack(cs, 0) if lstm else None
        if not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if lstm else None
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity='relu'"
        for arg, default in (("bias", True), ("batch_first", False), ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, arg) != default:
                s += f", {arg}={getattr(self, arg)}"
        return s


class RNN(_RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh)`` (``nonlinearity='relu'``: relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``; ``rnn(input, h_0=None)`` -> ``(output, h_n)``.
    """

    _name = "RNN"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype=None, device=None):
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         nonlinearity=nonlinearity, dtype=dtype, device=device)


class LSTM(_RNNBase):
    """Long short-term memory: gates i, f, g, o (in that order in ``weight_ih_l0``'s rows);
    ``c_t = f c_{t-1} + i g``, ``h_t = o tanh(c_t)``. ``lstm(input, (h_0, c_0)=None)`` ->
    ``(output, (h_n, c_n))``. ``proj_size`` is refused (not supported)."""

    _name = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 dtype=None, device=None):
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, proj_size,
                         dtype=dtype, device=device)


class GRU(_RNNBase):
    """Gated recurrent unit: gates r, z, n; ``n = tanh(W_in x + b_in + r (W_hn h + b_hn))``,
    ``h_t = (1 - z) n + z h_{t-1}``. ``gru(input, h_0=None)`` -> ``(output, h_n)``."""

    _name = "GRU"

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 dtype=None, device=None):
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         dtype=dtype, device=device)


class _CellBase(Module):
    """The one-step cell shared by RNNCell, LSTMCell and GRUCell."""

    _name = "RNNCell"

    def __init__(self, input_size, hidden_size, bias, mode, dtype=None, device=None):
        super().__init__()
        name = self._name
        self.mode = mode
        self.input_size = positive_int(input_size, name, "input_size")
        self.hidden_size = positive_int(hidden_size, name, "hidden_size")
        self.bias = bool(bias)
        gate = _GATES[mode] * self.hidden_size
        self.weight_ih = Parameter(_creation.empty(gate, self.input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(_creation.empty(gate, self.hidden_size, dtype=dtype, device=device))
        if self.bias:
            self.bias_ih = Parameter(_creation.empty(gate, dtype=dtype, device=device))
            self.bias_hh = Parameter(_creation.empty(gate, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every parameter ~ U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        k = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -k, k)

    def _run(self, input, hx):
        name, lstm = self._name, self.mode == "LSTM"
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: input must be 1-D (unbatched) or 2-D (batch, feature), got shape "
                             f"{tuple(input.shape)}")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input has {input.shape[-1]} features, expected input_size={self.input_size}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        shape = (x.shape[0], self.hidden_size) if batched else (self.hidden_size,)
        if hx is None:
            h = _creation.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            c = h
        else:
            if lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError(f"{name}: hx must be a tuple (h, c)")
                h, c = hx
                _check_state(name, c, shape, "c")
            else:
                h, c = hx, None
            _check_state(name, h, shape, "h")
            if not batched:
                h = h.unsqueeze(0)
                c = c.unsqueeze(0) if lstm else None
        h, c = _step(self.mode, F.linear(x, self.weight_ih, self.bias_ih), h, c if lstm else None,
                     self.weight_hh, self.bias_hh)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if lstm else None
        return (h, c) if lstm else h

    def forward(self, input, hx=None):
        return self._run(input, hx)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity='relu'"
        return s


class RNNCell(_CellBase):
    """One step of ``RNN``: ``h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (or relu).
    ``cell(input, h=None)`` -> ``h'``; input (batch, input_size) or (input_size,)."""

    _name = "RNNCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 dtype=None, device=None):
        super().__init__(input_size, hidden_size, bias, _mode("RNN", nonlinearity), dtype, device)
        self.nonlinearity = nonlinearity


class LSTMCell(_CellBase):
    """One step of ``LSTM``: ``cell(input, (h, c)=None)`` -> ``(h', c')``; gates i, f, g, o."""

    _name = "LSTMCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=None, device=None):
        super().__init__(input_size, hidden_size, bias, "LSTM", dtype, device)


class GRUCell(_CellBase):
    """One step of ``GRU``: ``cell(input, h=None)`` -> ``h'``; gates r, z, n."""

    _name = "GRUCell"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, dtype=None, device=None):
        super().__init__(input_size, hidden_size, bias, "GRU", dtype, device)
